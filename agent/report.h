/* SPDX-License-Identifier: Apache-2.0 */
/* The agent's JSON report (schema "kiln.agent.report/1", schema/agent-report.schema.json). */
#ifndef KILN_AGENT_REPORT_H
#define KILN_AGENT_REPORT_H

#include <stdint.h>

#include <jansson.h>

#include "host.h"
#include "versions.h"

#define REPORT_SCHEMA "kiln.agent.report/1"
/* Xid events carried in one report at most; more are counted in agent.xid_events_dropped. */
#define REPORT_MAX_XIDS 256

struct nvml;
struct xid_reader;

/* What the report builder keeps between reports; the caller owns nvml and xid. */
struct report_ctx {
	const char *root;          /* --root, or NULL */
	const char *site_packages; /* --site-packages, or NULL */
	const char *spool_dir;     /* the spool's folder, whose filesystem is reported; or NULL */
	const char *fs_paths;      /* --fs-paths: more filesystems to report (comma-separated) */
	struct nvml *nvml;         /* never NULL */
	struct xid_reader *xid;    /* NULL when /dev/kmsg cannot be read */
	const char *xid_error;     /* why xid is NULL, for the report */
	struct host_state host;
	struct versions_fm_cache fm;
	uint64_t seq;              /* reports built since the start */
	uint64_t spool_dropped;    /* reports the spool dropped since the start */
	long long started_at;      /* unix seconds */
	int interval_s;
};

/* 32 lowercase hex digits from the kernel's random source, in out[33]. */
int report_id_generate(char out[33]);

/* Collects everything and builds one report. The caller owns *out. */
int report_build(json_t **out, struct report_ctx *ctx);

#endif
