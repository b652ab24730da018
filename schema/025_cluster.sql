-- SPDX-License-Identifier: Apache-2.0
-- Several kilnd on one PostgreSQL database (server/cluster.c): each running instance keeps a
-- row here, its heartbeat written on the database's clock (milliseconds since the epoch)
-- every lease/3; one whose heartbeat is older than its lease is dead and its nodes go to the
-- others. A clean stop deletes the row. On SQLite (one kilnd) the table stays empty.
CREATE TABLE instances (
	id TEXT PRIMARY KEY,
	host TEXT NOT NULL,
	listen TEXT NOT NULL,
	grp TEXT,
	lease_ms INTEGER NOT NULL,
	started_ms INTEGER NOT NULL,
	heartbeat_ms INTEGER NOT NULL
);

-- A keyed check value of the secret.key the database was first used with (never the key):
-- a kilnd whose key gives another value refuses to start (its BMC passwords and sealed
-- sessions would not open). One row.
CREATE TABLE key_check (
	one INTEGER PRIMARY KEY CHECK (one = 1),
	value TEXT NOT NULL,
	created_at INTEGER NOT NULL
);
