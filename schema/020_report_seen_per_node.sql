-- SPDX-License-Identifier: Apache-2.0
-- report_id de-duplication per node (issue 17): a report id is unique within its node's
-- reports only. Fleet-wide, node A posting node B's id was answered "duplicate" and dropped,
-- and an agent could learn which ids another node had sent.
CREATE TABLE agent_reports_seen_node (
	node_id   INTEGER NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
	report_id TEXT    NOT NULL CHECK (length(report_id) BETWEEN 1 AND 64),
	time      INTEGER NOT NULL,  -- when kilnd stored it
	PRIMARY KEY (node_id, report_id)
) WITHOUT ROWID;
INSERT INTO agent_reports_seen_node (node_id, report_id, time)
	SELECT node_id, report_id, time FROM agent_reports_seen;
DROP TABLE agent_reports_seen;
ALTER TABLE agent_reports_seen_node RENAME TO agent_reports_seen;
CREATE INDEX agent_reports_seen_by_time ON agent_reports_seen (time);
