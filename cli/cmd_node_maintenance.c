/* SPDX-License-Identifier: Apache-2.0 */
/* kiln node maintenance NODERANGE on|off --reason TEXT: nodes in maintenance are shown as such
 * and never acted on automatically. */
#include <stdlib.h>
#include <string.h>

#include <kiln/error.h>

#include "cli.h"
#include "client.h"
#include "output.h"

enum { O_REASON = 1 };

static const struct cli_opt maint_opts[] = {
	{ "reason", 0, "TEXT", O_REASON, "why (required with on; shown by kiln status)" },
	{ 0 },
};

struct maint_args {
	const char *reason;
};

static int maint_opt(void *ud, const struct cli_opt *opt, const char *value)
{
	struct maint_args *a = ud;

	if (opt->id == O_REASON)
		a->reason = value;
	return 0;
}

int cli_node_maintenance(struct cli_ctx *ctx, int argc, char **argv)
{
	static const char *const headers[] = { "NODE", "MAINTENANCE" };
	struct maint_args a = { 0 };
	struct cli_args pos = { 0 };
	struct out_table t;
	json_t *body = NULL, *res = NULL, *e;
	size_t i;
	int rc, on;

	out_table_init(&t, headers, 2);
	rc = cli_args_parse(&pos, ctx, maint_opts, argc - 1, argv + 1, maint_opt, &a);
	if (rc < 0)
		goto cleanup;
	if (ctx->help) {
		cli_help_print(stdout, ctx, "NODERANGE on|off --reason TEXT",
			       "Puts nodes in maintenance or takes them out. A node in maintenance is "
			       "never flagged hung nor power-cycled automatically.",
			       maint_opts);
		goto cleanup;
	}
	if (pos.n != 2) {
		rc = cli_usage_error(ctx, pos.n < 2 ? "NODERANGE and on|off are required"
						    : "unexpected argument '%s'",
				     pos.n < 2 ? "" : pos.v[2]);
		goto cleanup;
	}
	if (strcmp(pos.v[1], "on") != 0 && strcmp(pos.v[1], "off") != 0) {
		rc = cli_usage_error(ctx, "'%s' is not on or off", pos.v[1]);
		goto cleanup;
	}
	on = strcmp(pos.v[1], "on") == 0;
	if (on && (!a.reason || !a.reason[0])) {
		rc = cli_usage_error(ctx, "--reason TEXT is required with on");
		goto cleanup;
	}
	body = json_pack("{s:s, s:b, s:s?}", "range", pos.v[0], "on", on, "reason", a.reason);
	if (!body) {
		rc = kiln_fail(KILN_ERROR, "out of memory");
		goto cleanup;
	}
	if (ctx->dry_run) {
		printf("would set maintenance %s on %s%s%s\n", on ? "on" : "off", pos.v[0],
		       a.reason ? ": " : "", a.reason ? a.reason : "");
		goto cleanup;
	}
	rc = cli_api(&res, NULL, ctx, "POST", "/nodes/maintenance", body);
	if (rc < 0)
		goto cleanup;
	if (ctx->output == CLI_OUT_JSON) {
		rc = out_json_print(res, stdout);
		goto cleanup;
	}
	json_array_foreach(res, i, e) {
		char node[128];
		const char *row[] = { out_cell(node, sizeof(node), json_object_get(e, "node")),
				      json_is_true(json_object_get(e, "maintenance")) ? "on" : "off" };

		rc = out_table_add(&t, row);
		if (rc < 0)
			goto cleanup;
	}
	out_table_print(&t, stdout);
cleanup:
	out_table_free(&t);
	json_decref(body);
	json_decref(res);
	free(pos.v);
	return rc;
}
