-- SPDX-License-Identifier: Apache-2.0
-- The parts of each node's latest agent report that the health sweep reads besides the GPU
-- rows, cut out at ingest: the sweep over 10,000 nodes every 10 s no longer parses 10,000
-- whole reports. health_facts = 0 for rows stored before this migration (read the report).
ALTER TABLE node_agent_state ADD COLUMN health_facts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE node_agent_state ADD COLUMN interval_s INTEGER;     -- the report's interval_s
ALTER TABLE node_agent_state ADD COLUMN cpu_iowait_pct REAL;    -- the report's host.cpu_iowait_pct
