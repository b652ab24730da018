/* SPDX-License-Identifier: Apache-2.0 */
/* kiln sel NODERANGE [--since DURATION]: the BMCs' event logs (SEL, Lclog, IML...), read now. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <kiln/error.h>
#include <kiln/parse.h>

#include "bmc_cli.h"
#include "cli.h"
#include "output.h"

enum { O_SINCE = 1, O_RETRY };

static const struct cli_opt sel_opts[] = {
	{ "since", 0, "DURATION", O_SINCE, "only entries newer than this (90s, 30m, 12h, 7d)" },
	BMC_CLI_OPT_RETRY(O_RETRY),
	{ 0 },
};

struct sel_args {
	struct cli_ctx *ctx;
	const char *since;
	bool retry_unreachable;
};

static int sel_opt(void *ud, const struct cli_opt *opt, const char *value)
{
	struct sel_args *a = ud;
	int64_t s;

	if (opt->id == O_SINCE) {
		if (kiln_parse_duration(&s, value) < 0)
			return cli_usage_error(a->ctx, "--since: %s", kiln_error_last());
		a->since = value;
	} else if (opt->id == O_RETRY) {
		a->retry_unreachable = true;
	}
	return 0;
}

static const char *const headers[] = { "NODE", "ID", "TIME", "SEVERITY", "MESSAGE" };
/* "EventLog/123" (an id is the log service's name and the entry's),
 * "2026-12-01T02:10:00+00:00", "critical" */
static const size_t widths[] = { 0, 12, 25, 8, 0 };

/* One node's entries, a row each, as its answer arrives; its error on stderr. */
static int sel_node(struct bmc_cli_rows *r, const json_t *e)
{
	size_t j;
	json_t *en;

	bmc_cli_row_error(r, e);
	if (!json_object_get(e, "error") && json_array_size(json_object_get(e, "entries")) == 0)
		bmc_cli_row_none(r, e, "no event log entries");
	json_array_foreach(json_object_get(e, "entries"), j, en) {
		char node[128], id[128], time[64], sev[32], msg[1024];
		const char *row[] = {
			out_cell(node, sizeof(node), json_object_get(e, "node")),
			out_cell(id, sizeof(id), json_object_get(en, "id")),
			out_cell(time, sizeof(time), json_object_get(en, "time")),
			out_cell(sev, sizeof(sev), json_object_get(en, "severity")),
			out_cell(msg, sizeof(msg), json_object_get(en, "message")),
		};

		bmc_cli_row(r, row);
	}
	/* a log (or a page of one) that did not read: the rows above leave its entries out */
	json_array_foreach(json_object_get(e, "skipped"), j, en)
		printf("%s: not read, left out: %s\n", json_string_value(json_object_get(e, "node")),
		       json_string_value(en));
	return 0;
}

static int sel_run(struct cli_ctx *ctx, int argc, char **argv)
{
	struct sel_args a = { .ctx = ctx };
	struct bmc_cli_query q = { .endpoint = "sel", .key = "range", .key2 = "since" };
	struct cli_args pos = { 0 };
	int rc;

	rc = cli_args_parse(&pos, ctx, sel_opts, argc - 1, argv + 1, sel_opt, &a);
	if (rc < 0)
		goto cleanup;
	if (ctx->help) {
		cli_help_print(stdout, ctx, "NODERANGE [--since DURATION]",
			       "Reads each node's BMC event logs now. Each node's entries are printed "
			       "as it answers (the progress on stderr when it is a terminal). A BMC "
			       "kilnd knows is down answers at once with its last error unless "
			       "--retry-unreachable. Exit status 3 when some nodes failed.", sel_opts);
		goto cleanup;
	}
	if (pos.n != 1) {
		rc = cli_usage_error(ctx, "one NODERANGE is required");
		goto cleanup;
	}
	q.value = pos.v[0];
	q.value2 = a.since;
	q.retry_unreachable = a.retry_unreachable;
	rc = bmc_cli_read(ctx, &q, "sel", headers, widths, 5, sel_node);
cleanup:
	free(pos.v);
	return rc;
}

const struct cli_cmd cmd_sel = { "sel", "BMC event log entries (live)", sel_run };
