-- SPDX-License-Identifier: Apache-2.0
-- kiln schema 8: the BMC's power draw and inlet temperature at each sensor read, for the
-- report's energy and peaks; pruned after [poller] history_retention. SQL in store_fleet.c.
CREATE TABLE bmc_history (
	node_id INTEGER NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
	time    INTEGER NOT NULL,  -- unix seconds
	power_w REAL,              -- the system's consumed watts (NULL: the BMC gave none)
	inlet_c REAL,              -- the hottest inlet/ambient sensor (NULL: none)
	PRIMARY KEY (node_id, time)
) WITHOUT ROWID;
CREATE INDEX bmc_history_by_time ON bmc_history (time);
