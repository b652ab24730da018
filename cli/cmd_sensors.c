/* kiln sensors NODERANGE: temperatures, fans, power and PSUs, asked of the BMCs now. */
#include <stdlib.h>

#include <kiln/error.h>

#include "bmc_cli.h"
#include "cli.h"
#include "output.h"

static int sensors_run(struct cli_ctx *ctx, int argc, char **argv)
{
	static const char *const headers[] = { "NODE", "SENSOR", "KIND", "VALUE", "UNIT",
						"HEALTH" };
	struct cli_args pos = { 0 };
	struct out_table t;
	json_t *res = NULL, *e, *s;
	size_t i, j;
	int rc;

	out_table_init(&t, headers, 6);
	rc = cli_args_parse(&pos, ctx, NULL, argc - 1, argv + 1, NULL, NULL);
	if (rc < 0)
		goto cleanup;
	if (ctx->help) {
		cli_help_print(stdout, ctx, "NODERANGE",
			       "Reads each node's sensors from its BMC now: temperatures, fans, power "
			       "draw, power supplies. Exit status 3 when some nodes failed.", NULL);
		goto cleanup;
	}
	if (pos.n != 1) {
		rc = cli_usage_error(ctx, "one NODERANGE is required");
		goto cleanup;
	}
	rc = bmc_cli_get(&res, ctx, "sensors", "range", pos.v[0], NULL, NULL);
	if (rc < 0)
		goto cleanup;
	if (ctx->output == CLI_OUT_JSON) {
		rc = out_json_print(res, stdout);
		if (rc == 0)
			rc = out_results_status(res);
		goto cleanup;
	}
	json_array_foreach(res, i, e) {
		json_array_foreach(json_object_get(e, "sensors"), j, s) {
			char node[128], name[128], kind[32], value[32], unit[16], health[32];
			const char *row[] = {
				out_cell(node, sizeof(node), json_object_get(e, "node")),
				out_cell(name, sizeof(name), json_object_get(s, "name")),
				out_cell(kind, sizeof(kind), json_object_get(s, "kind")),
				out_cell(value, sizeof(value), json_object_get(s, "value")),
				out_cell(unit, sizeof(unit), json_object_get(s, "unit")),
				out_cell(health, sizeof(health), json_object_get(s, "health")),
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

const struct cli_cmd cmd_sensors = { "sensors", "sensor readings from the BMCs (live)",
				     sensors_run };
