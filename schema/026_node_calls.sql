-- SPDX-License-Identifier: Apache-2.0
-- Several kilnd on one PostgreSQL database (server/handoff.c): a live BMC call (an action or
-- a read of the API) on a node another instance owns is handed to that owner as a row here,
-- and its result comes back the same way. A row is also the claim that makes an action go to
-- a BMC at most once: the instance that sends it first marks the row running, claimed by it
-- (an action on a node the receiving instance owns is written so at once, beside its audit
-- row). owner: the instance a handed call was handed to (the node's owner then): it takes the
-- row; another takes it only once that one is dead. state: pending (no owner took it yet), running (claimed_by sends it), readback (its
-- claimant died mid-call; claimed_by reads the power back), done, interrupted, cancelled (not
-- sent: the caller gave up). A finished row is read by its origin and deleted; one whose
-- origin stopped is pruned. On SQLite (one kilnd) the table stays empty.
CREATE TABLE node_calls (
	id INTEGER PRIMARY KEY,
	node_id INTEGER NOT NULL,
	origin TEXT NOT NULL,
	owner TEXT,
	op TEXT NOT NULL,
	audit_id INTEGER,
	state TEXT NOT NULL,
	claimed_by TEXT,
	created_ms INTEGER NOT NULL,
	changed_ms INTEGER NOT NULL,
	rc INTEGER NOT NULL DEFAULT 0,
	error TEXT,
	data TEXT
);
CREATE INDEX node_calls_state ON node_calls (state);
CREATE INDEX node_calls_origin ON node_calls (origin);
