-- The GPU compute processes of each node's latest report, for `kiln status`'s WORK column
-- and GET /gpus without reading the report (4-5 KB a node): {"gpus":[{"index",
-- "processes":[{"pid","name","user","used_memory_bytes"}]}]}, NULL when the report had none.
ALTER TABLE node_agent_summary ADD COLUMN gpu_processes TEXT;
-- A reinstall asked with --force goes ahead although work runs on the node (audited so).
ALTER TABLE jobs ADD COLUMN force INTEGER NOT NULL DEFAULT 0;
