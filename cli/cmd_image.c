/* SPDX-License-Identifier: Apache-2.0 */
/* kiln image add|list|rm: the ISO and PXE images that kiln reinstall boots nodes from. */
#include <stdlib.h>
#include <string.h>

#include <kiln/error.h>

#include "cli.h"
#include "client.h"
#include "output.h"

enum { O_ISO = 1, O_PXE, O_OS };

static const struct cli_opt add_opts[] = {
	{ "iso", 0, "URL", O_ISO, "an ISO the BMC mounts as virtual media (http, https, nfs, cifs)" },
	{ "pxe", 0, NULL, O_PXE, "a one-time network boot; the site's DHCP/TFTP serves the installer" },
	{ "os", 0, "TEXT", O_OS, "what the agent must report as its OS afterwards (a substring)" },
	{ 0 },
};

struct add_args {
	const char *iso;
	const char *os;
	int pxe;
};

static int add_opt(void *ud, const struct cli_opt *opt, const char *value)
{
	struct add_args *a = ud;

	if (opt->id == O_ISO)
		a->iso = value;
	else if (opt->id == O_PXE)
		a->pxe = 1;
	else if (opt->id == O_OS)
		a->os = value;
	return 0;
}

static int image_add(struct cli_ctx *ctx, int argc, char **argv)
{
	struct add_args a = { 0 };
	struct cli_args pos = { 0 };
	json_t *body = NULL, *res = NULL;
	int rc;

	rc = cli_args_parse(&pos, ctx, add_opts, argc - 1, argv + 1, add_opt, &a);
	if (rc < 0)
		goto cleanup;
	if (ctx->help) {
		cli_help_print(stdout, ctx, "NAME --iso URL | --pxe [--os TEXT]",
			       "Adds an image for kiln reinstall.", add_opts);
		goto cleanup;
	}
	if (pos.n != 1) {
		rc = cli_usage_error(ctx, pos.n ? "unexpected argument '%s'" : "NAME is required%s",
				     pos.n ? pos.v[1] : "");
		goto cleanup;
	}
	if (!a.iso == !a.pxe) {
		rc = cli_usage_error(ctx, "give either --iso URL or --pxe");
		goto cleanup;
	}
	body = json_pack("{s:s, s:s?, s:s?}", "name", pos.v[0], "iso", a.iso, "os", a.os);
	if (!body) {
		rc = kiln_fail(KILN_ERROR, "out of memory");
		goto cleanup;
	}
	if (a.pxe)
		json_object_set_new(body, "pxe", json_true());
	rc = cli_api(&res, NULL, ctx, "POST", "/images", body);
	if (rc < 0)
		goto cleanup;
	if (ctx->output == CLI_OUT_JSON)
		rc = out_json_print(res, stdout);
	else
		printf("added image %s (%s)\n", pos.v[0], a.iso ? "iso" : "pxe");
cleanup:
	json_decref(body);
	json_decref(res);
	free(pos.v);
	return rc;
}

static int image_list(struct cli_ctx *ctx, int argc, char **argv)
{
	static const char *const headers[] = { "NAME", "KIND", "URL", "OS", "ADDED BY" };
	struct cli_args pos = { 0 };
	struct out_table t;
	json_t *res = NULL, *e;
	size_t i;
	int rc;

	out_table_init(&t, headers, 5);
	rc = cli_args_parse(&pos, ctx, NULL, argc - 1, argv + 1, NULL, NULL);
	if (rc < 0)
		goto cleanup;
	if (ctx->help) {
		cli_help_print(stdout, ctx, "", "Lists the images.", NULL);
		goto cleanup;
	}
	if (pos.n) {
		rc = cli_usage_error(ctx, "unexpected argument '%s'", pos.v[0]);
		goto cleanup;
	}
	rc = cli_api(&res, NULL, ctx, "GET", "/images", NULL);
	if (rc < 0)
		goto cleanup;
	if (ctx->output == CLI_OUT_JSON) {
		rc = out_json_print(res, stdout);
		goto cleanup;
	}
	json_array_foreach(res, i, e) {
		char c[5][512];
		const char *row[] = { out_cell(c[0], sizeof(c[0]), json_object_get(e, "name")),
				      out_cell(c[1], sizeof(c[1]), json_object_get(e, "kind")),
				      out_cell(c[2], sizeof(c[2]), json_object_get(e, "url")),
				      out_cell(c[3], sizeof(c[3]), json_object_get(e, "os")),
				      out_cell(c[4], sizeof(c[4]), json_object_get(e, "created_by")) };

		if ((rc = out_table_add(&t, row)) < 0)
			goto cleanup;
	}
	out_table_print(&t, stdout);
cleanup:
	out_table_free(&t);
	json_decref(res);
	free(pos.v);
	return rc;
}

static int image_rm(struct cli_ctx *ctx, int argc, char **argv)
{
	struct cli_args pos = { 0 };
	json_t *res = NULL;
	char path[512], *name = NULL;
	int rc;

	rc = cli_args_parse(&pos, ctx, NULL, argc - 1, argv + 1, NULL, NULL);
	if (rc < 0)
		goto cleanup;
	if (ctx->help) {
		cli_help_print(stdout, ctx, "NAME", "Removes an image (jobs that used it keep a copy).",
			       NULL);
		goto cleanup;
	}
	if (pos.n != 1) {
		rc = cli_usage_error(ctx, pos.n ? "unexpected argument '%s'" : "NAME is required%s",
				     pos.n ? pos.v[1] : "");
		goto cleanup;
	}
	if (!(name = cli_url_escape(pos.v[0]))) {
		rc = kiln_fail(KILN_ERROR, "out of memory");
		goto cleanup;
	}
	snprintf(path, sizeof(path), "/images/%s", name);
	rc = cli_api(&res, NULL, ctx, "DELETE", path, NULL);
	if (rc < 0)
		goto cleanup;
	if (ctx->output == CLI_OUT_JSON)
		rc = out_json_print(res, stdout);
	else
		printf("removed image %s\n", pos.v[0]);
cleanup:
	free(name);
	json_decref(res);
	free(pos.v);
	return rc;
}

static const struct cli_verb verbs[] = {
	{ "add", "NAME --iso URL | --pxe [--os TEXT]", "add an image", image_add },
	{ "list", "", "list the images", image_list },
	{ "rm", "NAME", "remove an image", image_rm },
	{ 0 },
};

static int image_run(struct cli_ctx *ctx, int argc, char **argv)
{
	return cli_verb_dispatch(ctx, "Images that kiln reinstall boots nodes from.", verbs, argc,
				 argv);
}

const struct cli_cmd cmd_image = { "image", "add, list and remove reinstall images", image_run };
