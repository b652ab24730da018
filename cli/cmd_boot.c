/* SPDX-License-Identifier: Apache-2.0 */
/* kiln boot NODERANGE pxe|cd|disk|bios [--persistent]: the BMCs' boot override, audited per node. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kiln/error.h>

#include "bmc_cli.h"
#include "cli.h"
#include "output.h"

enum { O_PERSISTENT = 1, O_CONFIRM_ABOVE, O_RETRY };

static const struct cli_opt boot_opts[] = {
	{ "persistent", 0, NULL, O_PERSISTENT, "keep the override for every boot (default: next boot only)" },
	{ "confirm-above", 0, "N", O_CONFIRM_ABOVE,
	  "ask for the count above N nodes (KILN_CONFIRM_THRESHOLD, cli.conf confirm_above; "
	  "default 1)" },
	BMC_CLI_OPT_RETRY(O_RETRY),
	{ 0 },
};

static const char *const devices[] = { "pxe", "cd", "disk", "bios", NULL };

struct boot_args {
	int persistent;
	const char *confirm_above;
	bool retry_unreachable;
};

static int boot_opt(void *ud, const struct cli_opt *opt, const char *value)
{
	struct boot_args *a = ud;

	if (opt->id == O_PERSISTENT)
		a->persistent = 1;
	else if (opt->id == O_CONFIRM_ABOVE)
		a->confirm_above = value;
	else if (opt->id == O_RETRY)
		a->retry_unreachable = true;
	return 0;
}

static const char *const boot_headers[] = { "NODE", "BOOT", "PERSISTENT", "RESULT" };
static const size_t boot_widths[] = { 0, 4, 10, 0 };

static int boot_row(struct bmc_cli_rows *r, const json_t *e)
{
	char node[128], dev[16], pers[8], result[560];
	const char *err = json_string_value(json_object_get(e, "error"));
	const char *row[] = { out_cell(node, sizeof(node), json_object_get(e, "node")),
			      out_cell(dev, sizeof(dev), json_object_get(e, "device")),
			      out_cell(pers, sizeof(pers), json_object_get(e, "persistent")),
			      json_is_true(json_object_get(e, "dry_run")) ? "dry run" : "ok" };

	if (err) {
		snprintf(result, sizeof(result), "error: %s", err);
		row[3] = result;
	}
	bmc_cli_row(r, row);
	return 0;
}

/* --dry-run: the plan, as the rows of the action would be. */
static int plan_print(const struct cli_ctx *ctx, const json_t *plan)
{
	struct bmc_cli_rows rows = { 0 };
	size_t w[4], i;
	json_t *e;
	int rc;

	if (ctx->output == CLI_OUT_JSON)
		return out_json_print(plan, stdout);
	memcpy(w, boot_widths, sizeof(w));
	w[0] = bmc_cli_results_node_width(plan);
	rc = bmc_cli_rows_init(&rows, "boot", boot_headers, w, 4, boot_row);
	rows.tty = false; /* nothing to wait for */
	json_array_foreach(plan, i, e)
		if (rc == 0)
			rc = bmc_cli_rows_add(&rows, e);
	bmc_cli_rows_free(&rows);
	return rc;
}

static int boot_run(struct cli_ctx *ctx, int argc, char **argv)
{
	struct boot_args a = { 0 };
	struct cli_args pos = { 0 };
	struct bmc_cli_rows rows = { 0 };
	json_t *body = NULL, *plan = NULL;
	const char *device = NULL;
	size_t w[4];
	int rc, threshold;

	rc = cli_args_parse(&pos, ctx, boot_opts, argc - 1, argv + 1, boot_opt, &a);
	if (rc < 0)
		goto cleanup;
	if (ctx->help) {
		cli_help_print(stdout, ctx, "NODERANGE pxe|cd|disk|bios [--persistent]",
			       "Sets the boot override on each node's BMC (next boot only unless "
			       "--persistent); each node's row is printed as it answers (the progress "
			       "on stderr when it is a terminal). A BMC kilnd knows is down answers at "
			       "once with its last error unless --retry-unreachable. Exit status 3 when "
			       "some nodes failed.", boot_opts);
		goto cleanup;
	}
	if (pos.n != 2) {
		rc = cli_usage_error(ctx, pos.n < 2 ? "NODERANGE and a device (pxe, cd, disk, bios) "
				     "are required" : "unexpected argument '%s'",
				     pos.n < 2 ? "" : pos.v[2]);
		goto cleanup;
	}
	for (size_t i = 0; devices[i]; i++)
		if (strcmp(pos.v[1], devices[i]) == 0)
			device = devices[i];
	if (!device) {
		rc = cli_usage_error(ctx, "'%s' is not pxe, cd, disk or bios", pos.v[1]);
		goto cleanup;
	}
	if ((rc = bmc_cli_threshold(&threshold, ctx, a.confirm_above,
				     BMC_CLI_CONFIRM_DESTRUCTIVE)) < 0)
		goto cleanup;
	body = json_pack("{s:s, s:s, s:b, s:b}", "range", pos.v[0], "device", device, "persistent",
			 a.persistent, "dry_run", 1);
	if (!body || (a.retry_unreachable &&
		      json_object_set_new(body, "retry_unreachable", json_true()) < 0)) {
		rc = kiln_fail(KILN_ERROR, "out of memory");
		goto cleanup;
	}
	memcpy(w, boot_widths, sizeof(w));
	w[0] = bmc_cli_node_width(pos.v[0]);
	if (ctx->dry_run || !ctx->yes) {
		rc = bmc_cli_post(&plan, ctx, "boot", body);
		if (rc < 0)
			goto cleanup;
		if (ctx->dry_run) {
			rc = plan_print(ctx, plan);
			goto cleanup;
		}
		if (bmc_cli_ok_count(plan) > (size_t)threshold &&
		    (rc = bmc_cli_confirm_count(bmc_cli_ok_count(plan), "boot override",
						pos.v[0])) < 0)
			goto cleanup;
		w[0] = bmc_cli_results_node_width(plan);
	}
	json_object_set_new(body, "dry_run", json_false());
	rc = bmc_cli_rows_init(&rows, "boot", boot_headers, w, 4,
			       ctx->output == CLI_OUT_JSON ? NULL : boot_row);
	if (rc == 0)
		rc = bmc_cli_rows_post(&rows, ctx, "boot", body);
	bmc_cli_rows_end(&rows, true);
	if (rc == 0 && ctx->output == CLI_OUT_JSON)
		rc = out_json_print(rows.results, stdout);
	if (rc == 0)
		rc = out_results_status(rows.results);
cleanup:
	bmc_cli_rows_free(&rows);
	json_decref(body);
	json_decref(plan);
	free(pos.v);
	return rc;
}

const struct cli_cmd cmd_boot = { "boot", "set the boot device on the BMCs (pxe, cd, disk, bios)",
				  boot_run };
