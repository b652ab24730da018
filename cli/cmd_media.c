/* SPDX-License-Identifier: Apache-2.0 */
/* kiln media insert NODE URL | eject NODE | status NODE: a node's virtual media (CD/DVD). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <kiln/error.h>

#include "bmc_cli.h"
#include "cli.h"
#include "output.h"

enum { O_RETRY = 1, O_FORCE };

static const struct cli_opt media_opts[] = {
	BMC_CLI_OPT_RETRY(O_RETRY),
	{ 0 },
};

static const struct cli_opt insert_opts[] = {
	{ "force", 0, NULL, O_FORCE, "replace an image already inserted (else refused, naming it)" },
	BMC_CLI_OPT_RETRY(O_RETRY),
	{ 0 },
};

struct media_args {
	bool retry, force;
};

static int media_opt(void *ud, const struct cli_opt *opt, const char *value)
{
	struct media_args *a = ud;

	(void)value;
	if (opt->id == O_RETRY)
		a->retry = true;
	else if (opt->id == O_FORCE)
		a->force = true;
	return 0;
}

/* One node (the API takes one name): nothing to stream, so the table is aligned on its row. */
static int media_print(const struct cli_ctx *ctx, const json_t *res)
{
	static const char *const headers[] = { "NODE", "INSERTED", "IMAGE", "DEVICE", "ERROR" };
	struct out_table t;
	size_t i;
	json_t *e;
	int rc = 0;

	if (ctx->output == CLI_OUT_JSON)
		return out_json_print(res, stdout);
	out_table_init(&t, headers, 5);
	json_array_foreach(res, i, e) {
		json_t *m = json_object_get(e, "media");
		char node[128], ins[8], image[1024], dev[256], err[512];
		const char *row[] = { out_cell(node, sizeof(node), json_object_get(e, "node")),
				      out_cell(ins, sizeof(ins), json_object_get(m, "inserted")),
				      out_cell(image, sizeof(image), json_object_get(m, "image")),
				      out_cell(dev, sizeof(dev), json_object_get(m, "device")),
				      out_cell(err, sizeof(err), json_object_get(e, "error")) };

		if (json_is_true(json_object_get(e, "dry_run")))
			row[4] = "dry run: nothing sent";
		if ((rc = out_table_add(&t, row)) < 0)
			break;
	}
	if (rc == 0)
		out_table_print(&t, stdout);
	out_table_free(&t);
	return rc;
}

static int media_call(struct cli_ctx *ctx, int argc, char **argv, size_t want_args,
		      const char *synopsis, const char *summary)
{
	struct cli_args pos = { 0 };
	json_t *body = NULL, *res = NULL;
	const char *verb = argv[0];
	const struct cli_opt *opts = strcmp(verb, "insert") == 0 ? insert_opts : media_opts;
	struct media_args a = { 0 };
	int rc;

	rc = cli_args_parse(&pos, ctx, opts, argc - 1, argv + 1, media_opt, &a);
	if (rc < 0)
		goto cleanup;
	if (ctx->help) {
		cli_help_print(stdout, ctx, synopsis, summary, opts);
		goto cleanup;
	}
	if (pos.n != want_args) {
		rc = cli_usage_error(ctx, "expected %s", synopsis);
		goto cleanup;
	}
	if (strcmp(verb, "status") == 0) {
		const struct bmc_cli_query q = { .endpoint = "media", .key = "node",
						 .value = pos.v[0], .retry_unreachable = a.retry };

		rc = bmc_cli_get(&res, ctx, &q);
	} else {
		body = strcmp(verb, "insert") == 0
			       ? json_pack("{s:s, s:s, s:b}", "node", pos.v[0], "url", pos.v[1],
					   "dry_run", ctx->dry_run)
			       : json_pack("{s:s, s:b}", "node", pos.v[0], "dry_run", ctx->dry_run);
		if (body && a.force && json_object_set_new(body, "force", json_true()) < 0) {
			json_decref(body);
			body = NULL;
		}
		if (body && a.retry && json_object_set_new(body, "retry_unreachable", json_true()) < 0) {
			json_decref(body);
			body = NULL;
		}
		rc = body ? bmc_cli_post(&res, ctx, strcmp(verb, "insert") == 0 ? "media/insert"
										: "media/eject",
					 body)
			  : kiln_fail(KILN_ERROR, "out of memory");
	}
	if (rc < 0)
		goto cleanup;
	rc = media_print(ctx, res);
	if (rc == 0 && !ctx->dry_run)
		rc = out_results_status(res);
cleanup:
	json_decref(body);
	json_decref(res);
	free(pos.v);
	return rc;
}

static int media_insert(struct cli_ctx *ctx, int argc, char **argv)
{
	return media_call(ctx, argc, argv, 2, "NODE URL",
			  "Inserts an image (http, https, nfs or cifs URL) into the node's virtual "
			  "CD/DVD. An image already inserted is not replaced (the command fails "
			  "naming it) unless --force; the same image again is a noop. A BMC kilnd "
			  "knows is down answers at once with its last error unless "
			  "--retry-unreachable.");
}

static int media_eject(struct cli_ctx *ctx, int argc, char **argv)
{
	return media_call(ctx, argc, argv, 1, "NODE",
			  "Ejects the node's virtual media. A BMC kilnd knows is down answers at "
			  "once with its last error unless --retry-unreachable.");
}

static int media_status(struct cli_ctx *ctx, int argc, char **argv)
{
	return media_call(ctx, argc, argv, 1, "NODE",
			  "Shows the node's virtual media, asked of its BMC now. A BMC kilnd knows "
			  "is down answers at once with its last error unless --retry-unreachable.");
}

static const struct cli_verb media_verbs[] = {
	{ "insert", "NODE URL", "insert an image into the virtual CD/DVD", media_insert },
	{ "eject", "NODE", "eject the virtual media", media_eject },
	{ "status", "NODE", "show the virtual media (live)", media_status },
	{ 0 },
};

static int media_run(struct cli_ctx *ctx, int argc, char **argv)
{
	return cli_verb_dispatch(ctx, "Virtual media on a node's BMC.", media_verbs, argc, argv);
}

const struct cli_cmd cmd_media = { "media", "virtual media: insert, eject, status", media_run };
