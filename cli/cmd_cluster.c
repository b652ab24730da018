/* SPDX-License-Identifier: Apache-2.0 */
/* kiln cluster status: the kilnd instances on the store, their groups, the nodes each owns. */
#include <stdio.h>
#include <stdlib.h>

#include <kiln/error.h>

#include "cli.h"
#include "client.h"
#include "output.h"

static const char *const headers[] = { "INSTANCE", "HOST", "LISTEN", "GROUP", "STATE", "NODES",
				       "HEARTBEAT", "STARTED" };
#define NCOLS (sizeof(headers) / sizeof(headers[0]))

static int status_print(const json_t *res)
{
	const json_t *list = json_object_get(res, "instances");
	const char *self = json_string_value(json_object_get(res, "answered_by"));
	const char *backend = json_string_value(json_object_get(res, "backend"));
	struct out_table t;
	json_t *e;
	size_t i;
	int rc = 0;

	out_table_init(&t, headers, NCOLS);
	json_array_foreach(list, i, e) {
		char c[NCOLS][256];
		const char *row[NCOLS];
		int live = json_is_true(json_object_get(e, "live"));

		row[0] = out_cell(c[0], sizeof(c[0]), json_object_get(e, "id"));
		row[1] = out_cell(c[1], sizeof(c[1]), json_object_get(e, "host"));
		row[2] = out_cell(c[2], sizeof(c[2]), json_object_get(e, "listen"));
		row[3] = out_cell(c[3], sizeof(c[3]), json_object_get(e, "group"));
		snprintf(c[4], sizeof(c[4]), "%s%s", live ? "live" : "dead",
			 json_is_true(json_object_get(e, "self")) ? " (answered)" : "");
		row[4] = c[4];
		row[5] = out_cell(c[5], sizeof(c[5]), json_object_get(e, "nodes"));
		snprintf(c[6], sizeof(c[6]), "%.1fs ago",
			 json_number_value(json_object_get(e, "heartbeat_age")));
		row[6] = c[6];
		row[7] = out_time(c[7], sizeof(c[7]), json_object_get(e, "started"));
		if ((rc = out_table_add(&t, row)) < 0)
			break;
	}
	if (rc == 0) {
		out_table_print(&t, stdout);
		printf("%lld node(s) on %s, answered by %s",
		       (long long)json_integer_value(json_object_get(res, "nodes")),
		       backend ? backend : "?", self ? self : "?");
		if (json_integer_value(json_object_get(res, "unowned")) > 0)
			printf("; %lld owned by no live instance",
			       (long long)json_integer_value(json_object_get(res, "unowned")));
		printf("\n");
	}
	out_table_free(&t);
	return rc;
}

static int cluster_status(struct cli_ctx *ctx, int argc, char **argv)
{
	struct cli_args pos = { 0 };
	json_t *res = NULL;
	int rc;

	rc = cli_args_parse(&pos, ctx, NULL, argc - 1, argv + 1, NULL, NULL);
	if (rc < 0)
		goto cleanup;
	if (ctx->help) {
		cli_help_print(stdout, ctx, "",
			       "Lists the kilnd instances on this store: their group, the nodes each "
			       "owns (polls and judges), the age of their last heartbeat, and which "
			       "one answered.",
			       NULL);
		goto cleanup;
	}
	if (pos.n) {
		rc = cli_usage_error(ctx, "unexpected argument '%s'", pos.v[0]);
		goto cleanup;
	}
	if ((rc = cli_api(&res, NULL, ctx, "GET", "/cluster", NULL)) < 0)
		goto cleanup;
	rc = ctx->output == CLI_OUT_JSON ? out_json_print(res, stdout) : status_print(res);
cleanup:
	json_decref(res);
	free(pos.v);
	return rc;
}

static const struct cli_verb verbs[] = {
	{ "status", "", "the instances, their groups, nodes owned and heartbeats", cluster_status },
	{ 0 },
};

static int cluster_run(struct cli_ctx *ctx, int argc, char **argv)
{
	return cli_verb_dispatch(ctx, "Several kilnd on one PostgreSQL database.", verbs, argc,
				 argv);
}

const struct cli_cmd cmd_cluster = { "cluster", "the kilnd instances sharing the store",
				     cluster_run };
