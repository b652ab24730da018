-- SPDX-License-Identifier: Apache-2.0
-- kiln schema 7: the inventory each node's BMC last gave the poller (or `kiln inventory`), so
-- that enrollment by serial and the audit's BMC firmware grouping need no one to ask for it.
-- All SQL that reads or writes it is in server/store/store_fleet.c.
CREATE TABLE node_inventory (
	node_id      INTEGER PRIMARY KEY REFERENCES nodes (id) ON DELETE CASCADE,
	inventory    TEXT    NOT NULL,  -- the driver's inventory object as JSON
	bmc_firmware TEXT,              -- cut out of it for the audit (NULL: not reported)
	time         INTEGER NOT NULL   -- when the BMC answered (unix seconds)
) WITHOUT ROWID;
