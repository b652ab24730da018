-- SPDX-License-Identifier: Apache-2.0
-- kiln schema 3: what the poller reads from the BMCs, the maintenance flag and the health cache.
-- Times are unix seconds. All SQL that reads or writes these tables is in server/store/store_fleet.c.

-- One row per node the poller has tried: the latest power reading, the BMC's reachability and
-- the sensors, each with its time; the SEL cursor; the health last computed.
CREATE TABLE node_bmc_state (
	node_id           INTEGER PRIMARY KEY REFERENCES nodes (id) ON DELETE CASCADE,
	power             TEXT    NOT NULL DEFAULT 'unknown' CHECK (power IN ('on', 'off', 'unknown')),
	power_time        INTEGER NOT NULL DEFAULT 0,  -- when the power state was last read (0: never)
	power_changed     INTEGER NOT NULL DEFAULT 0,  -- when the power state last changed
	power_error       TEXT,                        -- the last failed reading's message
	reachable         INTEGER NOT NULL DEFAULT 1,  -- 0 after failures, 1 once it answers
	failures          INTEGER NOT NULL DEFAULT 0,  -- consecutive failed requests
	down_since        INTEGER NOT NULL DEFAULT 0,  -- first failure of the current run (0: none)
	circuit_open      INTEGER NOT NULL DEFAULT 0,  -- 1: only probes until it answers again
	next_try          INTEGER NOT NULL DEFAULT 0,  -- backoff: not polled before this time
	last_ok           INTEGER NOT NULL DEFAULT 0,  -- last successful request
	sensors           TEXT,                        -- {"sensors":[...]} as the driver gave it
	sensors_time      INTEGER NOT NULL DEFAULT 0,
	sel_cursor        INTEGER NOT NULL DEFAULT 0,  -- newest SEL entry time seen
	health            TEXT    NOT NULL DEFAULT 'ok' CHECK (health IN ('ok', 'warning', 'critical')),
	reasons           TEXT,                        -- JSON array of strings
	health_time       INTEGER NOT NULL DEFAULT 0,
	hung_since        INTEGER NOT NULL DEFAULT 0,  -- first evaluation that found it hung
	starved_since     INTEGER NOT NULL DEFAULT 0,  -- first report of the current starved run
	remediated_at     INTEGER NOT NULL DEFAULT 0   -- last automatic power cycle
) WITHOUT ROWID;

-- A node in maintenance is shown as such and never acted on automatically.
CREATE TABLE node_maintenance (
	node_id INTEGER PRIMARY KEY REFERENCES nodes (id) ON DELETE CASCADE,
	reason  TEXT    NOT NULL,
	by      TEXT    NOT NULL,
	since   INTEGER NOT NULL
) WITHOUT ROWID;

CREATE INDEX events_by_kind_time ON events (kind, time);
