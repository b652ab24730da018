/* kiln events: what the poller, the agents and the actions recorded, newest first. */
#include <stdlib.h>
#include <string.h>

#include <kiln/error.h>
#include <kiln/parse.h>

#include "cli.h"
#include "client.h"
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

/* Appends "&name=escaped(value)" (the first with '?') to path. */
static int query_add(char *path, size_t len, const char *name, const char *value)
{
	char *esc;
	size_t used = strlen(path);

	if (!value)
		return 0;
	esc = cli_url_escape(value);
	if (!esc)
		return kiln_fail(KILN_ERROR, "out of memory");
	if ((size_t)snprintf(path + used, len - used, "%c%s=%s", strchr(path, '?') ? '&' : '?', name,
			     esc) >= len - used) {
		free(esc);
		return kiln_fail(KILN_ETOOBIG, "the node range is too long");
	}
	free(esc);
	return 0;
}

static int events_run(struct cli_ctx *ctx, int argc, char **argv)
{
	static const char *const headers[] = { "TIME", "SEVERITY", "NODE", "SOURCE", "KIND",
						"MESSAGE" };
	struct events_args a = { .ctx = ctx };
	struct cli_args pos = { 0 };
	struct out_table t;
	json_t *res = NULL, *e;
	char path[4096] = "/events";
	size_t i;
	int rc;

	out_table_init(&t, headers, 6);
	rc = cli_args_parse(&pos, ctx, events_opts, argc - 1, argv + 1, events_opt, &a);
	if (rc < 0)
		goto cleanup;
	if (ctx->help) {
		cli_help_print(stdout, ctx, "[NODERANGE] [--since DURATION] [--severity S]",
			       "Shows events from the BMCs, the agents and the actions, newest first.",
			       events_opts);
		goto cleanup;
	}
	if (pos.n > 1) {
		rc = cli_usage_error(ctx, "unexpected argument '%s'", pos.v[1]);
		goto cleanup;
	}
	if ((rc = query_add(path, sizeof(path), "since", a.since)) < 0 ||
	    (rc = query_add(path, sizeof(path), "severity", a.severity)) < 0 ||
	    (rc = query_add(path, sizeof(path), "kind", a.kind)) < 0 ||
	    (rc = query_add(path, sizeof(path), "limit", a.limit)) < 0 ||
	    (rc = query_add(path, sizeof(path), "range", pos.n ? pos.v[0] : NULL)) < 0)
		goto cleanup;
	rc = cli_api(&res, NULL, ctx, "GET", path, NULL);
	if (rc < 0)
		goto cleanup;
	if (ctx->output == CLI_OUT_JSON) {
		rc = out_json_print(res, stdout);
		goto cleanup;
	}
	json_array_foreach(res, i, e) {
		char when[32], sev[32], node[128], source[64], kind[64], msg[600];
		const char *row[] = {
			out_time(when, sizeof(when), json_object_get(e, "time")),
			out_cell(sev, sizeof(sev), json_object_get(e, "severity")),
			out_cell(node, sizeof(node), json_object_get(e, "node")),
			out_cell(source, sizeof(source), json_object_get(e, "source")),
			out_cell(kind, sizeof(kind), json_object_get(e, "kind")),
			out_cell(msg, sizeof(msg), json_object_get(e, "message")),
		};

		rc = out_table_add(&t, row);
		if (rc < 0)
			goto cleanup;
	}
	out_table_print(&t, stdout);
cleanup:
	out_table_free(&t);
	json_decref(res);
	free(pos.v);
	return rc;
}

const struct cli_cmd cmd_events = { "events", "events from the BMCs, the agents and the actions",
				    events_run };
