-- SPDX-License-Identifier: Apache-2.0
-- node_gpus keeps what a GPU is (identity, memory size, ECC counts, row remapping), written
-- only when that changes. Its telemetry (temperature, power, utilisation, memory in use) and
-- its copy of the GPU's report object changed with every report, so every report rewrote
-- every GPU row: the same numbers are in the node's latest report (node_agent_state.report),
-- in agent_history and, for what the fleet views and the health sweep read, in
-- node_agent_summary.
ALTER TABLE node_agent_summary ADD COLUMN gpu_utilization_avg_pct REAL;  -- NULL when unknown
UPDATE node_agent_summary SET gpu_utilization_avg_pct =
	(SELECT avg(g.utilization_gpu_pct) FROM node_gpus g WHERE g.node_id = node_agent_summary.node_id);
ALTER TABLE node_gpus DROP COLUMN memory_used_bytes;
ALTER TABLE node_gpus DROP COLUMN temperature_c;
ALTER TABLE node_gpus DROP COLUMN power_draw_w;
ALTER TABLE node_gpus DROP COLUMN utilization_gpu_pct;
ALTER TABLE node_gpus DROP COLUMN detail;
