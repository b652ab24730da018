-- SPDX-License-Identifier: Apache-2.0
-- kiln schema 5: installable images and the reinstall jobs that use them.
-- Times are unix seconds. All SQL on these tables is in server/store/store_jobs.c.

-- An image a node can be reinstalled from: an ISO the BMC mounts as virtual media, or a
-- PXE boot served by the site's DHCP/TFTP (no URL). os, when set, is what the agent must
-- report after the reinstall (matched as a case-insensitive substring of its os).
CREATE TABLE images (
	id         INTEGER PRIMARY KEY,
	name       TEXT    NOT NULL UNIQUE,
	kind       TEXT    NOT NULL CHECK (kind IN ('iso', 'pxe')),
	url        TEXT,
	os         TEXT,
	created_by TEXT    NOT NULL,
	created_at INTEGER NOT NULL,
	CHECK ((kind = 'iso') = (url IS NOT NULL))
);

-- One job per node and action. The image is copied in, so removing an image leaves the jobs
-- that used it intact. step is the step running (or last run); step_started is persisted so
-- a restarted kilnd resumes the step with its original deadline.
CREATE TABLE jobs (
	id             INTEGER PRIMARY KEY,
	kind           TEXT    NOT NULL DEFAULT 'reinstall' CHECK (kind IN ('reinstall')),
	node_id        INTEGER NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
	image          TEXT    NOT NULL,
	image_kind     TEXT    NOT NULL CHECK (image_kind IN ('iso', 'pxe')),
	image_url      TEXT,
	image_os       TEXT,
	state          TEXT    NOT NULL DEFAULT 'queued'
	               CHECK (state IN ('queued', 'running', 'done', 'failed', 'cancelled')),
	step           TEXT    NOT NULL DEFAULT 'boot_id',
	step_started   INTEGER NOT NULL DEFAULT 0,
	boot_id_before TEXT,                        -- the agent's boot id before the cycle
	cycle_sent_at  INTEGER NOT NULL DEFAULT 0,  -- the power cycle was handed to the BMC
	cycle_done     INTEGER NOT NULL DEFAULT 0,  -- the BMC confirmed it
	error          TEXT,                        -- why it failed (or the last retried error)
	created_by     TEXT    NOT NULL,            -- the token name: the audit actor
	audit_id       INTEGER NOT NULL DEFAULT 0,  -- the job's own audit row
	created_at     INTEGER NOT NULL,
	started_at     INTEGER NOT NULL DEFAULT 0,
	finished_at    INTEGER NOT NULL DEFAULT 0,
	updated_at     INTEGER NOT NULL
);

CREATE INDEX jobs_by_node ON jobs (node_id, id);
-- At most one queued or running job per node.
CREATE UNIQUE INDEX jobs_active_node ON jobs (node_id) WHERE state IN ('queued', 'running');
