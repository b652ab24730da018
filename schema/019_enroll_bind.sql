-- SPDX-License-Identifier: Apache-2.0
-- Enrollment cannot take a node's identity (issue 17): it never replaces a node's agent token.
-- A running reinstall job lets one enrollment in by its node's BMC serial (the reinstalled OS
-- lost its token): enrolled_at says that one was used. A pending agent keeps the node it
-- resembles and why it waits, for the admin who decides (kiln agent pending).
ALTER TABLE jobs ADD COLUMN enrolled_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE pending_agents ADD COLUMN candidate_id INTEGER REFERENCES nodes (id) ON DELETE SET NULL;
ALTER TABLE pending_agents ADD COLUMN reason TEXT;
