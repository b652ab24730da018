-- SPDX-License-Identifier: Apache-2.0
-- kiln schema 16: Redfish sessions kept across restarts (a kill -9 must not leave one behind
-- on the BMC at every start: iDRAC's 8-session cap then locks everyone out for 30 minutes).
-- All SQL that reads or writes this table is in server/store/store_sessions.c.
CREATE TABLE bmc_sessions (
	node_id             INTEGER PRIMARY KEY REFERENCES nodes (id) ON DELETE CASCADE,
	credentials_version INTEGER NOT NULL, -- the credentials the session was opened with
	token_enc           BLOB,             -- X-Auth-Token sealed with secret.key; NULL: Basic
	uri                 TEXT,             -- the session resource (checked, DELETEd at shutdown)
	auth                TEXT    NOT NULL DEFAULT 'session', -- 'session' or 'basic (why)'
	time                INTEGER NOT NULL  -- when this row was written
) WITHOUT ROWID;
