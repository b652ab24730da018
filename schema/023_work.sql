-- SPDX-License-Identifier: Apache-2.0
-- The GPU compute processes of each node's latest report, for `kiln status`'s WORK column
-- and GET /gpus without reading the report (4-5 KB a node): {"gpus":[{"index",
-- "processes":[{"pid","name","user","used_memory_bytes"}]}]}, NULL when the report had none.
ALTER TABLE node_agent_summary ADD COLUMN gpu_processes TEXT;
-- A reinstall asked with --force goes ahead although work runs on the node (audited so).
ALTER TABLE jobs ADD COLUMN force INTEGER NOT NULL DEFAULT 0;
-- A reinstall asked with --drain waits, queued, until the node's work ended: since when, how
-- long at most, and whether kiln set the drain in Slurm (then kiln undoes it).
ALTER TABLE jobs ADD COLUMN drain INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN drain_timeout_s INTEGER NOT NULL DEFAULT 3600;
ALTER TABLE jobs ADD COLUMN drain_started INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN drained INTEGER NOT NULL DEFAULT 0;
