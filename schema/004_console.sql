-- SPDX-License-Identifier: Apache-2.0
-- kiln schema 4: serial console capture, switched on per node.
-- kilnd keeps a SOL session open for each node with capture on and writes its output to
-- STATE/console/NODE.log. All SQL on this table is in server/store/store_console.c.
CREATE TABLE console_capture (
	node_id    INTEGER PRIMARY KEY REFERENCES nodes (id) ON DELETE CASCADE,
	enabled    INTEGER NOT NULL DEFAULT 0 CHECK (enabled IN (0, 1)),
	updated_at INTEGER NOT NULL
);
