/* SPDX-License-Identifier: Apache-2.0 */
/* kiln events: what the poller, the agents and the actions recorded, newest first. */
#include <stdlib.h>
#include <string.h>

#include <kiln/error.h>
#include <kiln/parse.h>

#include "cli.h"
#include "client.h"
#include "common_opts.h"
#include "output.h"

enum { O_SINCE = 1, O_SEVERITY, O_KIND, O_LIMIT };

static const struct cli_opt events_opts[] = {
	{ "since", 0, "DURATION", O_SINCE, "only events newer than this (90s, 30m, 12h, 7d)" },
	{ "severity", 0, "S", O_SEVERITY, "at least this severity: info, warning, critical" },
	{ "kind", 0, "KIND", O_KIND, "only this kind (power, bmc, sel, xid, hung, health, ...)" },
	{ "limit", 0, "N", O_LIMIT, "at most N events (default 1000)" },
	{ 0 },
};

struct events_args {
	struct cli_ctx *ctx;
	const char *since, *severity, *kind, *limit;
};

static int events_opt(void *ud, const struct cli_opt *opt, const char *value)
{
	struct events_args *a = ud;
	int64_t v;

	switch (opt->id) {
	case O_SINCE:
		if (kiln_parse_duration(&v, value) < 0)
			return cli_usage_error(a->ctx, "--since: %s", kiln_error_last());
		a->since = value;
		break;
	case O_SEVERITY:
		if (strcmp(value, "info") != 0 && strcmp(value, "warning") != 0 &&
		    strcmp(value, "critical") != 0)
			return cli_usage_error(a->ctx, "--severity: '%s' is not info, warning or "
						       "critical", value);
		a->severity = value;
		break;
	case O_KIND:
		a->kind = value;
		break;
	case O_LIMIT:
		if (kiln_parse_int64(&v, value, 1, 100000) < 0)
			return cli_usage_error(a->ctx, "--limit: %s", kiln_error_last());
		a->limit = value;
		break;
	}
	return 0;
}

static int events_run(struct cli_ctx *ctx, int argc, char **argv)
{
	static const struct out_col cols[] = {
		{ "TIME", "time", OUT_COL_TIME, 32 },
		{ "BMC TIME", "bmc_time", OUT_COL_TIME, 32 }, /* a BMC log entry's own clock */
		{ "SEVERITY", "severity", OUT_COL_CELL, 32 },
		{ "NODE", "node", OUT_COL_CELL, 128 },
		{ "SOURCE", "source", OUT_COL_CELL, 64 },
		{ "KIND", "kind", OUT_COL_CELL, 64 },
		{ "MESSAGE", "message", OUT_COL_CELL, 600 },
	};
	struct events_args a = { .ctx = ctx };
	struct cli_args pos = { 0 };
	char path[4096] = "/events";
	int rc;

	rc = cli_args_parse(&pos, ctx, events_opts, argc - 1, argv + 1, events_opt, &a);
	if (rc < 0)
		goto cleanup;
	if (ctx->help) {
		cli_help_print(stdout, ctx, "[NODERANGE] [--since DURATION] [--severity S]",
			       "Shows events from the BMCs, the agents and the actions, newest first.",
			       events_opts);
		goto cleanup;
	}
	if ((rc = cli_args_max(ctx, &pos, 1)) < 0)
		goto cleanup;
	if ((rc = cli_query_add(path, sizeof(path), "since", a.since)) < 0 ||
	    (rc = cli_query_add(path, sizeof(path), "severity", a.severity)) < 0 ||
	    (rc = cli_query_add(path, sizeof(path), "kind", a.kind)) < 0 ||
	    (rc = cli_query_add(path, sizeof(path), "limit", a.limit)) < 0 ||
	    (rc = cli_query_add(path, sizeof(path), "range", pos.n ? pos.v[0] : NULL)) < 0)
		goto cleanup;
	rc = cli_list_get(ctx, path, cols, sizeof(cols) / sizeof(cols[0]));
cleanup:
	free(pos.v);
	return rc;
}

const struct cli_cmd cmd_events = { "events", "events from the BMCs, the agents and the actions",
				    events_run };
