-- SPDX-License-Identifier: Apache-2.0
-- kiln schema 12: an agent is bound to its node. A report whose host identity (DMI serial,
-- machine id, host name) differs from what the node's agent reported before, or whose DMI
-- serial differs from the BMC's, is refused; the refusal waits here for an admin
-- (kiln agent accept-identity), who may also let the next report's identity in.
CREATE TABLE agent_identity (
	node_id           INTEGER PRIMARY KEY REFERENCES nodes (id) ON DELETE CASCADE,
	accept_next       INTEGER NOT NULL DEFAULT 0, -- 1: the next report's identity is taken
	accepted_by       TEXT,                       -- who accepted last, and when
	accepted_at       INTEGER,
	bmc_serial_accepted TEXT,    -- the BMC serial an admin accepted a differing DMI serial with
	reinstall_job     INTEGER NOT NULL DEFAULT 0, -- the reinstall job whose one change was used
	mismatch          TEXT,      -- the pending refusal ("machine_id 'x' (stored) ..."), or NULL
	mismatch_field    TEXT,      -- its first differing field ("host.machine_id")
	mismatch_since    INTEGER,
	mismatch_last     INTEGER,
	refused           INTEGER NOT NULL DEFAULT 0, -- reports refused since mismatch_since
	elsewhere_node    TEXT,      -- this node's agent was last seen reporting with this node's
	elsewhere_last    INTEGER    -- token (a report refused there carried our identity)
);
