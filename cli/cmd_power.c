/* kiln power status|on|off|soft|reset|cycle NODERANGE: live power state and confirmed power
 * actions, one request fanned out by kilnd, a result per node. */
#include <stdlib.h>
#include <string.h>

#include <kiln/error.h>

#include "bmc_cli.h"
#include "cli.h"
#include "output.h"

enum { O_ON_IF_OFF = 1, O_CONFIRM_ABOVE };

static const struct cli_opt power_opts[] = {
	{ "on-if-off", 0, NULL, O_ON_IF_OFF, "reset/cycle: power on a node that is off" },
	{ "confirm-above", 0, "N", O_CONFIRM_ABOVE,
	  "ask for the count above N nodes (KILN_CONFIRM_THRESHOLD; default 10)" },
	{ 0 },
};

static const char *const actions[] = { "status", "on", "off", "soft", "reset", "cycle", NULL };

struct power_args {
	int on_if_off;
	const char *confirm_above;
};

static int power_opt(void *ud, const struct cli_opt *opt, const char *value)
{
	struct power_args *a = ud;

	if (opt->id == O_ON_IF_OFF)
		a->on_if_off = 1;
	else if (opt->id == O_CONFIRM_ABOVE)
		a->confirm_above = value;
	return 0;
}

static int status_print(const json_t *res)
{
	static const char *const headers[] = { "NODE", "POWER", "ERROR" };
	struct out_table t;
	size_t i;
	json_t *e;
	int rc = 0;

	out_table_init(&t, headers, 3);
	json_array_foreach(res, i, e) {
		char node[128], power[16], err[512];
		const char *row[] = { out_cell(node, sizeof(node), json_object_get(e, "node")),
				      out_cell(power, sizeof(power), json_object_get(e, "power")),
				      out_cell(err, sizeof(err), json_object_get(e, "error")) };

		if (!json_object_get(e, "power"))
			row[1] = "unknown";
		if ((rc = out_table_add(&t, row)) < 0)
			break;
	}
	if (rc == 0)
		out_table_print(&t, stdout);
	out_table_free(&t);
	return rc;
}

static int action_print(const json_t *res)
{
	static const char *const headers[] = { "NODE", "ACTION", "POWER", "RESULT" };
	struct out_table t;
	size_t i;
	json_t *e;
	int rc = 0;

	out_table_init(&t, headers, 4);
	json_array_foreach(res, i, e) {
		char node[128], action[32], power[16], result[560];
		const char *err = json_string_value(json_object_get(e, "error"));
		const char *row[] = { out_cell(node, sizeof(node), json_object_get(e, "node")),
				      out_cell(action, sizeof(action), json_object_get(e, "action")),
				      out_cell(power, sizeof(power), json_object_get(e, "power")),
				      out_cell(result, sizeof(result), json_object_get(e, "result")) };

		if (err) {
			snprintf(result, sizeof(result), "error: %s", err);
			row[3] = result;
		}
		if ((rc = out_table_add(&t, row)) < 0)
			break;
	}
	if (rc == 0)
		out_table_print(&t, stdout);
	out_table_free(&t);
	return rc;
}

static int dry_run_print(const struct cli_ctx *ctx, const json_t *res)
{
	size_t i;
	json_t *e;

	if (ctx->output == CLI_OUT_JSON)
		return out_json_print(res, stdout);
	json_array_foreach(res, i, e) {
		const char *node = json_string_value(json_object_get(e, "node"));
		const char *err = json_string_value(json_object_get(e, "error"));

		if (err)
			printf("%s: skipped: %s\n", node, err);
		else
			printf("%s: would %s\n", node,
			       json_string_value(json_object_get(e, "action")));
	}
	return 0;
}

static int power_run(struct cli_ctx *ctx, int argc, char **argv)
{
	struct power_args a = { 0 };
	struct cli_args pos = { 0 };
	json_t *body = NULL, *res = NULL;
	const char *action = NULL;
	char what[64];
	int rc, threshold;

	rc = cli_args_parse(&pos, ctx, power_opts, argc - 1, argv + 1, power_opt, &a);
	if (rc < 0)
		goto cleanup;
	if (ctx->help) {
		cli_help_print(stdout, ctx, "status|on|off|soft|reset|cycle NODERANGE",
			       "Asks the BMCs for their power state, or powers nodes on, off (forced), "
			       "soft (graceful shutdown), reset or cycle, each result the state read "
			       "back. An action on more nodes than the threshold asks for the count "
			       "to be typed unless --yes; --dry-run prints the targets and sends "
			       "nothing. Exit status 3 when some nodes failed.",
			       power_opts);
		goto cleanup;
	}
	if (pos.n < 2) {
		rc = cli_usage_error(ctx, "an action (status, on, off, soft, reset, cycle) and a "
				     "NODERANGE are required");
		goto cleanup;
	}
	if (pos.n > 2) {
		rc = cli_usage_error(ctx, "unexpected argument '%s' (join ranges with ',')",
				     pos.v[2]);
		goto cleanup;
	}
	for (size_t i = 0; actions[i]; i++)
		if (strcmp(pos.v[0], actions[i]) == 0)
			action = actions[i];
	if (!action) {
		rc = cli_usage_error(ctx, "'%s' is not status, on, off, soft, reset or cycle",
				     pos.v[0]);
		goto cleanup;
	}
	if ((rc = bmc_cli_threshold(&threshold, ctx, a.confirm_above)) < 0)
		goto cleanup;

	if (strcmp(action, "status") == 0) {
		rc = bmc_cli_get(&res, ctx, "power", "range", pos.v[1], NULL, NULL);
		if (rc < 0)
			goto cleanup;
		if (ctx->output == CLI_OUT_JSON)
			rc = out_json_print(res, stdout);
		else
			rc = status_print(res);
		if (rc == 0)
			rc = out_results_status(res);
		goto cleanup;
	}

	body = json_pack("{s:s, s:s, s:b, s:b}", "range", pos.v[1], "action", action, "on_if_off",
			 a.on_if_off, "dry_run", 1);
	if (!body) {
		rc = kiln_fail(KILN_ERROR, "out of memory");
		goto cleanup;
	}
	snprintf(what, sizeof(what), "power %s", action);
	/* The targets first (nothing sent to a BMC): what --dry-run prints and what the
	 * confirmation counts. */
	if (ctx->dry_run || !ctx->yes) {
		rc = bmc_cli_post(&res, ctx, "power", body);
		if (rc < 0)
			goto cleanup;
		if (ctx->dry_run) {
			rc = dry_run_print(ctx, res);
			goto cleanup;
		}
		if (bmc_cli_ok_count(res) > (size_t)threshold &&
		    (rc = bmc_cli_confirm_count(bmc_cli_ok_count(res), what, pos.v[1])) < 0)
			goto cleanup;
		json_decref(res);
		res = NULL;
	}
	json_object_set_new(body, "dry_run", json_false());
	rc = bmc_cli_post(&res, ctx, "power", body);
	if (rc < 0)
		goto cleanup;
	if (ctx->output == CLI_OUT_JSON)
		rc = out_json_print(res, stdout);
	else
		rc = action_print(res);
	if (rc == 0)
		rc = out_results_status(res);
cleanup:
	json_decref(body);
	json_decref(res);
	free(pos.v);
	return rc;
}

const struct cli_cmd cmd_power = { "power", "power state and confirmed power actions (live)",
				   power_run };
