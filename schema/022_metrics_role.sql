-- SPDX-License-Identifier: Apache-2.0
-- kiln schema 22: the `metrics` token role (GET /metrics and nothing else, for a Prometheus
-- server's bearer token). SQLite cannot change a CHECK constraint in place: the table is
-- made again with the role allowed, its rows (ids included) copied over. No table refers
-- to api_tokens.
CREATE TABLE api_tokens_new (
	id           INTEGER PRIMARY KEY,
	name         TEXT,
	role         TEXT    NOT NULL CHECK (role IN ('viewer', 'operator', 'admin', 'metrics')),
	hash         BLOB    NOT NULL UNIQUE CHECK (length(hash) = 32),
	created_at   INTEGER NOT NULL,
	last_used_at INTEGER,
	revoked_at   INTEGER
);
INSERT INTO api_tokens_new (id, name, role, hash, created_at, last_used_at, revoked_at)
	SELECT id, name, role, hash, created_at, last_used_at, revoked_at FROM api_tokens;
DROP TABLE api_tokens;
ALTER TABLE api_tokens_new RENAME TO api_tokens;
