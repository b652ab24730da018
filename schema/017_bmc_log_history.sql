-- SPDX-License-Identifier: Apache-2.0
-- kiln schema 17: BMC log entries as history (issue 15). What a BMC's log held when kiln first
-- read it (or after it was cleared) is history: stored with the BMC's own time, no event;
-- entries that arrive later are events carrying both times. All SQL that reads or writes
-- bmc_log and bmc_log_state is in server/store/store_bmc_log.c.
CREATE TABLE bmc_log (
	node_id   INTEGER NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
	entry_key TEXT    NOT NULL,  -- "sel:<id>:<BMC time>": an id reused after a clear differs
	bmc_time  INTEGER NOT NULL,  -- the entry's time on the BMC's clock (0: none)
	seen      INTEGER NOT NULL,  -- when kiln first read it
	severity  INTEGER NOT NULL,
	message   TEXT    NOT NULL,
	history   INTEGER NOT NULL,  -- 1: on the BMC before kiln looked (no event)
	PRIMARY KEY (node_id, entry_key)
) WITHOUT ROWID;
CREATE INDEX bmc_log_by_seen ON bmc_log (seen);

-- One row per node whose log was read: what the last read saw, to tell a cleared log.
CREATE TABLE bmc_log_state (
	node_id   INTEGER PRIMARY KEY REFERENCES nodes (id) ON DELETE CASCADE,
	baselined INTEGER NOT NULL,  -- when the entries on the BMC were last taken as history
	count     INTEGER NOT NULL,  -- entries on the BMC at the last read (-1: not known)
	newest    INTEGER NOT NULL   -- the newest entry's BMC time at the last read (0: none)
) WITHOUT ROWID;

-- A BMC log entry's event: the BMC's own time beside the event's (when kiln saw it).
ALTER TABLE events ADD COLUMN bmc_time INTEGER;
