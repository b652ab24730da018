/* kiln inventory NODERANGE: make, model, serial, firmware, CPUs, memory and GPUs as the BMCs
 * report them now. */
#include <stdlib.h>

#include <kiln/error.h>

#include "bmc_cli.h"
#include "cli.h"
#include "output.h"

static int inventory_run(struct cli_ctx *ctx, int argc, char **argv)
{
	static const char *const headers[] = { "NODE", "MANUFACTURER", "MODEL", "SERIAL", "BIOS",
						"BMC FW", "CPUS", "MEMORY GIB", "GPUS" };
	struct cli_args pos = { 0 };
	struct out_table t;
	json_t *res = NULL, *e;
	size_t i;
	int rc;

	out_table_init(&t, headers, 9);
	rc = cli_args_parse(&pos, ctx, NULL, argc - 1, argv + 1, NULL, NULL);
	if (rc < 0)
		goto cleanup;
	if (ctx->help) {
		cli_help_print(stdout, ctx, "NODERANGE",
			       "Asks each node's BMC for its inventory now. Exit status 3 when some "
			       "nodes failed.", NULL);
		goto cleanup;
	}
	if (pos.n != 1) {
		rc = cli_usage_error(ctx, "one NODERANGE is required");
		goto cleanup;
	}
	rc = bmc_cli_get(&res, ctx, "inventory", "range", pos.v[0], NULL, NULL);
	if (rc < 0)
		goto cleanup;
	if (ctx->output == CLI_OUT_JSON) {
		rc = out_json_print(res, stdout);
		if (rc == 0)
			rc = out_results_status(res);
		goto cleanup;
	}
	json_array_foreach(res, i, e) {
		char node[128], mfr[128], model[128], serial[128], bios[64], fw[64], cpus[16],
			mem[32], gpus[16];
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

		if (json_object_get(e, "error"))
			continue;
		if (json_is_array(json_object_get(e, "gpus"))) {
			snprintf(gpus, sizeof(gpus), "%zu", json_array_size(json_object_get(e, "gpus")));
			row[8] = gpus;
		}
		if ((rc = out_table_add(&t, row)) < 0)
			goto cleanup;
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

const struct cli_cmd cmd_inventory = { "inventory", "hardware inventory from the BMCs (live)",
				       inventory_run };
