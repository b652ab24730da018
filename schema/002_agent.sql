-- SPDX-License-Identifier: Apache-2.0
-- kiln schema 2: agent reports (de-duplication, latest state, GPUs, history) and enrollment.
-- Times are unix seconds. All SQL that reads or writes these tables is in server/store/store_agent.c.

-- The serial number the BMC reports for the node's system (the Redfish inventory fills it);
-- enrollment matches an agent's DMI serial against it.
ALTER TABLE nodes ADD COLUMN bmc_serial TEXT;
CREATE INDEX nodes_by_bmc_serial ON nodes (bmc_serial) WHERE bmc_serial IS NOT NULL;

-- Every report_id stored, so that a report sent again (a lost acknowledgement) changes nothing.
-- Pruned with the history.
CREATE TABLE agent_reports_seen (
	report_id TEXT    PRIMARY KEY CHECK (length(report_id) BETWEEN 1 AND 64),
	node_id   INTEGER NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
	time      INTEGER NOT NULL   -- when kilnd stored it
) WITHOUT ROWID;
CREATE INDEX agent_reports_seen_by_time ON agent_reports_seen (time);
CREATE INDEX agent_reports_seen_by_node ON agent_reports_seen (node_id);

-- Each node's latest report: the whole JSON, and the columns the fleet views filter on.
CREATE TABLE node_agent_state (
	node_id               INTEGER PRIMARY KEY REFERENCES nodes (id) ON DELETE CASCADE,
	report_id             TEXT    NOT NULL,
	last_seen             INTEGER NOT NULL,  -- when kilnd received the latest report
	report_time           INTEGER NOT NULL,  -- the report's own "time" (the agent's clock)
	boot_id               TEXT,
	hostname              TEXT,
	machine_id            TEXT,
	os                    TEXT,
	kernel                TEXT,
	dmi_serial            TEXT,
	agent_version         TEXT,
	nvidia_status         TEXT,              -- ok | no_driver | mismatch | error
	driver_version        TEXT,
	kernel_module_version TEXT,
	cuda_driver_version   TEXT,
	nvml_version          TEXT,
	gpu_count             INTEGER NOT NULL DEFAULT 0,
	gpu_count_max         INTEGER NOT NULL DEFAULT 0, -- the most GPUs this node ever reported
	report                TEXT    NOT NULL   -- the latest report, JSON
);
CREATE INDEX node_agent_state_by_dmi_serial ON node_agent_state (dmi_serial);

-- The latest state of each GPU of a node (replaced by every newer report).
CREATE TABLE node_gpus (
	node_id                   INTEGER NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
	gpu_index                 INTEGER NOT NULL,
	uuid                      TEXT,
	name                      TEXT,
	serial                    TEXT,
	pci_bus_id                TEXT,
	memory_total_bytes        INTEGER,
	memory_used_bytes         INTEGER,
	temperature_c             REAL,
	power_draw_w              REAL,
	utilization_gpu_pct       REAL,
	ecc_volatile_uncorrected  INTEGER,
	ecc_aggregate_uncorrected INTEGER,
	remapped_rows_failure     INTEGER,           -- 0/1, NULL when not reported
	detail                    TEXT    NOT NULL,  -- the GPU's object from the report, JSON
	PRIMARY KEY (node_id, gpu_index)
) WITHOUT ROWID;

-- One compact row per report; rows older than the retention setting are pruned.
CREATE TABLE agent_history (
	id                   INTEGER PRIMARY KEY,
	node_id              INTEGER NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
	time                 INTEGER NOT NULL,  -- the report's time
	received_at          INTEGER NOT NULL,
	report_id            TEXT    NOT NULL,
	boot_id              TEXT,
	nvidia_status        TEXT,
	driver_version       TEXT,
	cuda_driver_version  TEXT,
	gpu_count            INTEGER NOT NULL,
	temperature_max_c    REAL,
	power_draw_total_w   REAL,
	utilization_avg_pct  REAL,
	ecc_uncorrected      INTEGER,            -- summed over the GPUs (volatile)
	xid_count            INTEGER NOT NULL DEFAULT 0,
	gpus                 TEXT                -- [[index, temperature_c, power_draw_w, util_pct], ...]
);
CREATE INDEX agent_history_by_node_time ON agent_history (node_id, time);
CREATE INDEX agent_history_by_received ON agent_history (received_at);

-- Fleet enrollment tokens, stored as SHA-256 of the token text like the API tokens.
CREATE TABLE enroll_tokens (
	id           INTEGER PRIMARY KEY,
	name         TEXT,
	hash         BLOB    NOT NULL UNIQUE CHECK (length(hash) = 32),
	created_at   INTEGER NOT NULL,
	last_used_at INTEGER,
	revoked_at   INTEGER
);

-- Agents that presented an enrollment token but matched no node: an admin accepts them
-- (naming the node) and the agent's next attempt gets its token. Never creates a node.
CREATE TABLE pending_agents (
	id              INTEGER PRIMARY KEY,
	dmi_serial      TEXT    NOT NULL DEFAULT '',
	hostname        TEXT    NOT NULL DEFAULT '',
	machine_id      TEXT    NOT NULL DEFAULT '',
	enroll_token_id INTEGER REFERENCES enroll_tokens (id) ON DELETE SET NULL,
	first_seen      INTEGER NOT NULL,
	last_seen       INTEGER NOT NULL,
	attempts        INTEGER NOT NULL DEFAULT 1,
	node_id         INTEGER REFERENCES nodes (id) ON DELETE CASCADE, -- set when accepted
	accepted_at     INTEGER,
	UNIQUE (dmi_serial, hostname, machine_id)
);
