-- SPDX-License-Identifier: Apache-2.0
-- Dashboard sessions: a browser that logged in with an API token holds a random session id
-- in a cookie; only its hash is stored. A session acts as its token (same role, same audit
-- actor) and ends at its expiry, at log-out, or when its token is revoked (the lookup joins
-- the live tokens). csrf is the value every state-changing request of the session must carry
-- in its X-CSRF-Token header.
CREATE TABLE ui_sessions (
	id INTEGER PRIMARY KEY,
	hash BLOB NOT NULL UNIQUE,
	token_id INTEGER NOT NULL REFERENCES api_tokens (id) ON DELETE CASCADE,
	csrf TEXT NOT NULL,
	created_at INTEGER NOT NULL,
	expires_at INTEGER NOT NULL,
	ended_at INTEGER
);
