/* SPDX-License-Identifier: Apache-2.0 */
/* kiln inventory NODERANGE: make, model, serial, firmware, CPUs, memory and GPUs as the BMCs
 * report them now. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <kiln/error.h>

#include "bmc_cli.h"
#include "cli.h"
#include "output.h"

enum { O_RETRY = 1 };

static const struct cli_opt inventory_opts[] = {
	BMC_CLI_OPT_RETRY(O_RETRY),
	{ 0 },
};

static int inventory_opt(void *ud, const struct cli_opt *opt, const char *value)
{
	(void)value;
	if (opt->id == O_RETRY)
		*(bool *)ud = true;
	return 0;
}

static const char *const headers[] = { "NODE", "MANUFACTURER", "MODEL", "SERIAL", "BIOS",
					"BMC FW", "CPUS", "MEMORY GIB", "GPUS" };
static const size_t widths[] = { 0, 12, 20, 12, 10, 10, 4, 10, 0 };

/* One node's row as its answer arrives; its error on stderr. */
static int inventory_node(struct bmc_cli_rows *r, const json_t *e)
{
	char node[128], mfr[128], model[128], serial[128], bios[64], fw[64], cpus[16], mem[32],
		gpus[16];
	json_t *skipped;
	size_t i;
	const char *row[] = {
		out_cell(node, sizeof(node), json_object_get(e, "node")),
		out_cell(mfr, sizeof(mfr), json_object_get(e, "manufacturer")),
		out_cell(model, sizeof(model), json_object_get(e, "model")),
		out_cell(serial, sizeof(serial), json_object_get(e, "serial")),
		out_cell(bios, sizeof(bios), json_object_get(e, "bios_version")),
		out_cell(fw, sizeof(fw), json_object_get(e, "bmc_firmware")),
		out_cell(cpus, sizeof(cpus), json_object_get(e, "cpu_count")),
		out_cell(mem, sizeof(mem), json_object_get(e, "memory_gib")),
		NULL,
	};

	if (json_object_get(e, "error")) {
		bmc_cli_row_error(r, e);
		return 0;
	}
	if (json_is_array(json_object_get(e, "gpus"))) {
		snprintf(gpus, sizeof(gpus), "%zu", json_array_size(json_object_get(e, "gpus")));
		row[8] = gpus;
	}
	bmc_cli_row(r, row);
	/* what the BMC lists but could not be read: the numbers above leave it out */
	json_array_foreach(json_object_get(e, "chassis_skipped"), i, skipped)
		printf("%s: chassis not read, left out: %s\n", row[0], json_string_value(skipped));
	return 0;
}

static int inventory_run(struct cli_ctx *ctx, int argc, char **argv)
{
	struct bmc_cli_query q = { .endpoint = "inventory", .key = "range" };
	struct cli_args pos = { 0 };
	int rc;

	rc = cli_args_parse(&pos, ctx, inventory_opts, argc - 1, argv + 1, inventory_opt,
			    &q.retry_unreachable);
	if (rc < 0)
		goto cleanup;
	if (ctx->help) {
		cli_help_print(stdout, ctx, "NODERANGE",
			       "Asks each node's BMC for its inventory now. Each node's row is printed "
			       "as it answers (the progress on stderr when it is a terminal). A BMC "
			       "kilnd knows is down answers at once with its last error unless "
			       "--retry-unreachable. Exit status 3 when some nodes failed.",
			       inventory_opts);
		goto cleanup;
	}
	if (pos.n != 1) {
		rc = cli_usage_error(ctx, "one NODERANGE is required");
		goto cleanup;
	}
	q.value = pos.v[0];
	rc = bmc_cli_read(ctx, &q, "inventory", headers, widths, 9, inventory_node);
cleanup:
	free(pos.v);
	return rc;
}

const struct cli_cmd cmd_inventory = { "inventory", "hardware inventory from the BMCs (live)",
				       inventory_run };
