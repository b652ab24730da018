-- SPDX-License-Identifier: Apache-2.0
-- kiln schema 21: what ingest refused of an agent's reports. A leaf field out of its range
-- (or not of its pattern) is stored as null and named in the latest report's
-- rejected_fields (comma-separated here, for the health sweep); a report refused whole (a
-- 400) is noted per node, so that a node whose every report is refused is not taken for
-- one whose agent went silent (a hung node, power-cycled).
ALTER TABLE node_agent_state ADD COLUMN rejected_fields TEXT;
CREATE TABLE agent_refusals (
	node_id      INTEGER PRIMARY KEY REFERENCES nodes (id) ON DELETE CASCADE,
	reason       TEXT NOT NULL,      -- the last refusal's message ("report: field 'x' ...")
	refused      INTEGER NOT NULL,   -- reports refused since the first
	first_at     INTEGER NOT NULL,
	last_at      INTEGER NOT NULL
);
