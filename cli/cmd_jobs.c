/* SPDX-License-Identifier: Apache-2.0 */
/* kiln jobs [NODERANGE] [--active] [--watch [S]]: reinstall jobs with each node's step. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kiln/error.h>
#include <kiln/parse.h>

#include "cli.h"
#include "client.h"
#include "output.h"

enum { O_ACTIVE = 1, O_WATCH };

static const struct cli_opt jobs_opts[] = {
	{ "active", 0, NULL, O_ACTIVE, "only queued and running jobs" },
	{ "watch", 0, NULL, O_WATCH, "refresh every 2 seconds" },
	{ 0 },
};

struct jobs_args {
	int active;
	int watch;
};

static int jobs_opt(void *ud, const struct cli_opt *opt, const char *value)
{
	struct jobs_args *a = ud;

	(void)value;
	if (opt->id == O_ACTIVE)
		a->active = 1;
	else if (opt->id == O_WATCH)
		a->watch = 1;
	return 0;
}

static int jobs_print(const json_t *res)
{
	static const char *const headers[] = { "ID", "NODE", "IMAGE", "STATE", "STEP", "PROGRESS",
					       "BY", "STARTED", "ERROR" };
	struct out_table t;
	json_t *e;
	size_t i;
	int rc = 0;

	out_table_init(&t, headers, 9);
	json_array_foreach(res, i, e) {
		char c[9][512];
		const char *row[9];

		snprintf(c[5], sizeof(c[5]), "%d/%d",
			 (int)json_integer_value(json_object_get(e, "step_index")),
			 (int)json_integer_value(json_object_get(e, "step_total")));
		row[0] = out_cell(c[0], sizeof(c[0]), json_object_get(e, "id"));
		row[1] = out_cell(c[1], sizeof(c[1]), json_object_get(e, "node"));
		row[2] = out_cell(c[2], sizeof(c[2]), json_object_get(e, "image"));
		row[3] = out_cell(c[3], sizeof(c[3]), json_object_get(e, "state"));
		row[4] = out_cell(c[4], sizeof(c[4]), json_object_get(e, "step"));
		row[5] = c[5];
		row[6] = out_cell(c[6], sizeof(c[6]), json_object_get(e, "created_by"));
		row[7] = out_time(c[7], sizeof(c[7]), json_object_get(e, "started_at"));
		row[8] = out_cell(c[8], sizeof(c[8]), json_object_get(e, "error"));
		if ((rc = out_table_add(&t, row)) < 0)
			break;
	}
	if (rc == 0)
		out_table_print(&t, stdout);
	out_table_free(&t);
	return rc;
}

static int jobs_run(struct cli_ctx *ctx, int argc, char **argv)
{
	struct jobs_args a = { 0 };
	struct cli_args pos = { 0 };
	json_t *res = NULL;
	char path[2048], *range = NULL;
	int rc, tty = isatty(STDOUT_FILENO);

	rc = cli_args_parse(&pos, ctx, jobs_opts, argc - 1, argv + 1, jobs_opt, &a);
	if (rc < 0)
		goto cleanup;
	if (ctx->help) {
		cli_help_print(stdout, ctx, "[NODERANGE] [--active] [--watch]",
			       "Lists reinstall jobs with each node's step and progress.", jobs_opts);
		goto cleanup;
	}
	if (pos.n > 1) {
		rc = cli_usage_error(ctx, "unexpected argument '%s'", pos.v[1]);
		goto cleanup;
	}
	if (pos.n == 1 && !(range = cli_url_escape(pos.v[0]))) {
		rc = kiln_fail(KILN_ERROR, "out of memory");
		goto cleanup;
	}
	snprintf(path, sizeof(path), "/jobs?active=%d%s%s", a.active, range ? "&range=" : "",
		 range ? range : "");
	for (;;) {
		json_decref(res);
		res = NULL;
		if ((rc = cli_api(&res, NULL, ctx, "GET", path, NULL)) < 0)
			goto cleanup;
		if (a.watch && tty)
			printf("\033[H\033[2J");
		if (ctx->output == CLI_OUT_JSON)
			rc = out_json_print(res, stdout);
		else
			rc = jobs_print(res);
		if (rc < 0 || !a.watch)
			break;
		fflush(stdout);
		sleep(2);
	}
cleanup:
	free(range);
	json_decref(res);
	free(pos.v);
	return rc;
}

const struct cli_cmd cmd_jobs = { "jobs", "reinstall jobs and their progress", jobs_run };
