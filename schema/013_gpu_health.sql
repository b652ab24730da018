-- SPDX-License-Identifier: Apache-2.0
-- What the per-GPU health verdicts need beyond the ECC counts and the remap failure: a page
-- retirement or a row remap waiting for the GPU's reset, the rows remapped for uncorrectable
-- errors, and when the GPU's uncorrected ECC count last rose (so a rise within the ECC window
-- names its GPU). Integers; NULL when the agent did not report them.
ALTER TABLE node_gpus ADD COLUMN retired_pages_pending INTEGER;     -- 0/1
ALTER TABLE node_gpus ADD COLUMN remapped_rows_pending INTEGER;     -- 0/1
ALTER TABLE node_gpus ADD COLUMN remapped_rows_uncorrected INTEGER;
ALTER TABLE node_gpus ADD COLUMN ecc_rose_at INTEGER;               -- unix time of the report
