-- SPDX-License-Identifier: Apache-2.0
-- A narrow row per node with agent state: what `kiln status` and `kiln audit` read for every
-- node. Read from node_agent_state they cost a scan of 80,000 GPU rows (hottest GPU, power
-- draw) and a walk through each report's overflow pages (audit_facts is stored after the
-- report): tens of megabytes for 10,000 nodes. Ingest writes it with the state row.
CREATE TABLE node_agent_summary (
	node_id        INTEGER PRIMARY KEY REFERENCES nodes (id) ON DELETE CASCADE,
	gpu_count_max  INTEGER NOT NULL,
	gpu_hottest_c  REAL,     -- the hottest GPU of the latest report, NULL when unknown
	gpu_power_w    REAL,     -- the GPUs' power draw summed, NULL when unknown
	audit_facts    TEXT      -- the version facts (vaudit_facts_extract), else the whole report
);
INSERT INTO node_agent_summary (node_id, gpu_count_max, gpu_hottest_c, gpu_power_w, audit_facts)
	SELECT a.node_id, a.gpu_count_max,
	       (SELECT max(g.temperature_c) FROM node_gpus g WHERE g.node_id = a.node_id),
	       (SELECT sum(g.power_draw_w) FROM node_gpus g WHERE g.node_id = a.node_id),
	       ifnull(a.audit_facts, a.report)
	FROM node_agent_state a;
UPDATE node_agent_state SET audit_facts = NULL;
