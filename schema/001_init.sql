-- SPDX-License-Identifier: Apache-2.0
-- kiln schema 1: node inventory with groups, API and agent tokens, audit log, events.
-- Applied by server/store/migrate.c inside one transaction; schema_version is kept there.
-- Times are unix seconds. Later migrations add tables (agent reports, history, jobs) freely.

CREATE TABLE nodes (
	id                  INTEGER PRIMARY KEY,
	name                TEXT    NOT NULL UNIQUE CHECK (length(name) BETWEEN 1 AND 63),
	rack                TEXT,
	bmc_protocol        TEXT    NOT NULL DEFAULT 'none'
	                    CHECK (bmc_protocol IN ('none', 'redfish', 'redfish+http', 'ipmi')),
	bmc_host            TEXT,
	bmc_port            INTEGER NOT NULL DEFAULT 0 CHECK (bmc_port BETWEEN 0 AND 65535),
	bmc_user            TEXT,
	bmc_password_enc    BLOB,   -- secret_encrypt() output: nonce || ciphertext, ad = node name
	tls_mode            TEXT    NOT NULL DEFAULT 'verify'
	                    CHECK (tls_mode IN ('verify', 'insecure', 'ca', 'fingerprint')),
	tls_ca_file         TEXT,
	tls_fingerprint     TEXT    CHECK (tls_fingerprint IS NULL OR length(tls_fingerprint) = 64),
	ipmi_cipher         INTEGER NOT NULL DEFAULT 3 CHECK (ipmi_cipher BETWEEN 0 AND 17),
	ipmi_privilege      TEXT    NOT NULL DEFAULT 'admin'
	                    CHECK (ipmi_privilege IN ('user', 'operator', 'admin')),
	ipmi_workarounds    TEXT,
	sol_host            TEXT,
	sol_port            INTEGER NOT NULL DEFAULT 0 CHECK (sol_port BETWEEN 0 AND 65535),
	bmc_system          TEXT,
	credentials_version INTEGER NOT NULL DEFAULT 1,
	created_at          INTEGER NOT NULL,
	updated_at          INTEGER NOT NULL
);

-- A group exists while it has members; position keeps the order the user gave.
CREATE TABLE node_groups (
	node_id  INTEGER NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
	name     TEXT    NOT NULL CHECK (length(name) BETWEEN 1 AND 63),
	position INTEGER NOT NULL,
	PRIMARY KEY (node_id, name)
) WITHOUT ROWID;
CREATE INDEX node_groups_by_name ON node_groups (name, node_id);

-- Bearer tokens for the REST API, stored as SHA-256 of the token text.
CREATE TABLE api_tokens (
	id           INTEGER PRIMARY KEY,
	name         TEXT,
	role         TEXT    NOT NULL CHECK (role IN ('viewer', 'operator', 'admin')),
	hash         BLOB    NOT NULL UNIQUE CHECK (length(hash) = 32),
	created_at   INTEGER NOT NULL,
	last_used_at INTEGER,
	revoked_at   INTEGER
);

-- Per-node agent tokens; an agent token writes only its own node.
CREATE TABLE agent_tokens (
	id           INTEGER PRIMARY KEY,
	node_id      INTEGER NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
	hash         BLOB    NOT NULL UNIQUE CHECK (length(hash) = 32),
	created_at   INTEGER NOT NULL,
	last_used_at INTEGER,
	revoked_at   INTEGER
);
CREATE INDEX agent_tokens_by_node ON agent_tokens (node_id);

-- Who did what to which target: written before the action, finished after.
CREATE TABLE audit_log (
	id          INTEGER PRIMARY KEY,
	time        INTEGER NOT NULL,
	actor       TEXT    NOT NULL,
	action      TEXT    NOT NULL,
	target      TEXT,
	detail      TEXT,   -- JSON text
	outcome     TEXT    NOT NULL DEFAULT 'pending',
	finished_at INTEGER
);
CREATE INDEX audit_log_by_time ON audit_log (time);

-- Events from the poller, the agents and the actions. node_id NULL: fleet-wide.
CREATE TABLE events (
	id        INTEGER PRIMARY KEY,
	time      INTEGER NOT NULL,
	node_id   INTEGER REFERENCES nodes (id) ON DELETE CASCADE,
	severity  INTEGER NOT NULL CHECK (severity BETWEEN 0 AND 2), -- info, warning, critical
	source    TEXT    NOT NULL,
	kind      TEXT    NOT NULL,
	message   TEXT    NOT NULL,
	dedup_key TEXT
);
CREATE INDEX events_by_time ON events (time);
CREATE INDEX events_by_node_time ON events (node_id, time);
-- An event with a dedup key is stored once per node (fleet-wide events share node 0).
CREATE UNIQUE INDEX events_dedup ON events (ifnull(node_id, 0), dedup_key)
	WHERE dedup_key IS NOT NULL;
