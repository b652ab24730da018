-- SPDX-License-Identifier: Apache-2.0
-- The parts of each node's latest agent report that the version audit reads, cut out at ingest
-- (a few hundred bytes): auditing 10,000 nodes no longer parses 10,000 whole reports.
-- NULL for rows stored before this migration: the audit falls back to the report.
ALTER TABLE node_agent_state ADD COLUMN audit_facts TEXT;
