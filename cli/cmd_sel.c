/* kiln sel NODERANGE [--since DURATION]: the BMCs' event logs (SEL, Lclog, IML...), read now. */
#include <stdlib.h>

#include <kiln/error.h>
#include <kiln/parse.h>

#include "bmc_cli.h"
#include "cli.h"
#include "output.h"

enum { O_SINCE = 1 };

static const struct cli_opt sel_opts[] = {
	{ "since", 0, "DURATION", O_SINCE, "only entries newer than this (90s, 30m, 12h, 7d)" },
	{ 0 },
};

struct sel_args {
	struct cli_ctx *ctx;
	const char *since;
};

static int sel_opt(void *ud, const struct cli_opt *opt, const char *value)
{
	struct sel_args *a = ud;
	int64_t s;

	if (opt->id == O_SINCE) {
		if (kiln_parse_duration(&s, value) < 0)
			return cli_usage_error(a->ctx, "--since: %s", kiln_error_last());
		a->since = value;
	}
	return 0;
}

static int sel_run(struct cli_ctx *ctx, int argc, char **argv)
{
	static const char *const headers[] = { "NODE", "ID", "TIME", "SEVERITY", "MESSAGE" };
	struct sel_args a = { .ctx = ctx };
	struct cli_args pos = { 0 };
	struct out_table t;
	json_t *res = NULL, *e, *en;
	size_t i, j;
	int rc;

	out_table_init(&t, headers, 5);
	rc = cli_args_parse(&pos, ctx, sel_opts, argc - 1, argv + 1, sel_opt, &a);
	if (rc < 0)
		goto cleanup;
	if (ctx->help) {
		cli_help_print(stdout, ctx, "NODERANGE [--since DURATION]",
			       "Reads each node's BMC event logs now. Exit status 3 when some nodes "
			       "failed.", sel_opts);
		goto cleanup;
	}
	if (pos.n != 1) {
		rc = cli_usage_error(ctx, "one NODERANGE is required");
		goto cleanup;
	}
	rc = bmc_cli_get(&res, ctx, "sel", "range", pos.v[0], "since", a.since);
	if (rc < 0)
		goto cleanup;
	if (ctx->output == CLI_OUT_JSON) {
		rc = out_json_print(res, stdout);
		if (rc == 0)
			rc = out_results_status(res);
		goto cleanup;
	}
	json_array_foreach(res, i, e) {
		json_array_foreach(json_object_get(e, "entries"), j, en) {
			char node[128], id[128], time[64], sev[32], msg[1024];
			const char *row[] = {
				out_cell(node, sizeof(node), json_object_get(e, "node")),
				out_cell(id, sizeof(id), json_object_get(en, "id")),
				out_cell(time, sizeof(time), json_object_get(en, "time")),
				out_cell(sev, sizeof(sev), json_object_get(en, "severity")),
				out_cell(msg, sizeof(msg), json_object_get(en, "message")),
			};

			if ((rc = out_table_add(&t, row)) < 0)
				goto cleanup;
		}
	}
	if (t.nrows > 0)
		out_table_print(&t, stdout);
	rc = bmc_cli_errors_print(res);
cleanup:
	out_table_free(&t);
	json_decref(res);
	free(pos.v);
	return rc;
}

const struct cli_cmd cmd_sel = { "sel", "BMC event log entries (live)", sel_run };
