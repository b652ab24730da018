/* SPDX-License-Identifier: Apache-2.0 */
/* kiln sensors NODERANGE: temperatures, fans, power and PSUs, asked of the BMCs now. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <kiln/error.h>

#include "bmc_cli.h"
#include "cli.h"
#include "output.h"

enum { O_RETRY = 1 };

static const struct cli_opt sensors_opts[] = {
	BMC_CLI_OPT_RETRY(O_RETRY),
	{ 0 },
};

static int sensors_opt(void *ud, const struct cli_opt *opt, const char *value)
{
	(void)value;
	if (opt->id == O_RETRY)
		*(bool *)ud = true;
	return 0;
}

static const char *const headers[] = { "NODE", "SENSOR", "KIND", "VALUE", "UNIT", "HEALTH" };
/* "temperature" is the longest kind; most sensor names fit 24 */
static const size_t widths[] = { 0, 24, 11, 8, 5, 0 };

/* One node's sensors, a row each, as its answer arrives; its error on stderr. */
static int sensors_node(struct bmc_cli_rows *r, const json_t *e)
{
	size_t j;
	json_t *s;

	bmc_cli_row_error(r, e);
	if (!json_object_get(e, "error") && json_array_size(json_object_get(e, "sensors")) == 0)
		bmc_cli_row_none(r, e, "no sensors found on this BMC");
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

		bmc_cli_row(r, row);
	}
	/* what did not read: the rows above leave its readings out */
	json_array_foreach(json_object_get(e, "skipped"), j, s)
		printf("%s: not read, left out: %s\n", json_string_value(json_object_get(e, "node")),
		       json_string_value(s));
	return 0;
}

static int sensors_run(struct cli_ctx *ctx, int argc, char **argv)
{
	struct bmc_cli_query q = { .endpoint = "sensors", .key = "range" };
	struct cli_args pos = { 0 };
	int rc;

	rc = cli_args_parse(&pos, ctx, sensors_opts, argc - 1, argv + 1, sensors_opt,
			    &q.retry_unreachable);
	if (rc < 0)
		goto cleanup;
	if (ctx->help) {
		cli_help_print(stdout, ctx, "NODERANGE",
			       "Reads each node's sensors from its BMC now: temperatures, fans, power "
			       "draw, power supplies. Each node's rows are printed as it answers (the "
			       "progress on stderr when it is a terminal). A BMC kilnd knows is down "
			       "answers at once with its last error unless --retry-unreachable. Exit "
			       "status 3 when some nodes failed.", sensors_opts);
		goto cleanup;
	}
	if (pos.n != 1) {
		rc = cli_usage_error(ctx, "one NODERANGE is required");
		goto cleanup;
	}
	q.value = pos.v[0];
	rc = bmc_cli_read(ctx, &q, "sensors", headers, widths, 6, sensors_node);
cleanup:
	free(pos.v);
	return rc;
}

const struct cli_cmd cmd_sensors = { "sensors", "sensor readings from the BMCs (live)",
				     sensors_run };
