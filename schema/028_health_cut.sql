-- SPDX-License-Identifier: Apache-2.0
-- kiln schema 28: the facts of a node's latest agent report that the health rules read
-- besides the GPU rows (server/health/health_cut.c), cut out at ingest as a small JSON
-- object: clocks held down, link error counters and when they last rose, filesystems. The
-- next report's cut is made against it, so a counter's rise is seen between two reports.
ALTER TABLE node_agent_state ADD COLUMN health_cut TEXT;
