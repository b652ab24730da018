/* SPDX-License-Identifier: Apache-2.0 */
/* kiln token: create, list and revoke API tokens (admin). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <kiln/error.h>
#include <kiln/parse.h>

#include "cli.h"
#include "client.h"
#include "common_opts.h"
#include "output.h"

enum { O_ROLE = 1, O_NAME };

static const struct cli_opt create_opts[] = {
	{ "role", 0, "viewer|operator|admin|metrics", O_ROLE,
	  "what the token may do (required; metrics: GET /metrics only, for Prometheus)" },
	{ "name", 0, "NAME", O_NAME, "a name to recognise the token by" },
	{ 0 },
};

struct create_args {
	struct cli_ctx *ctx;
	const char *role;
	const char *name;
};

static int create_opt(void *ud, const struct cli_opt *opt, const char *value)
{
	struct create_args *a = ud;

	if (opt->id == O_ROLE) {
		if (strcmp(value, "viewer") != 0 && strcmp(value, "operator") != 0 &&
		    strcmp(value, "admin") != 0 && strcmp(value, "metrics") != 0)
			return cli_usage_error(a->ctx,
					       "--role: '%s' is not viewer, operator, admin or metrics",
					       value);
		a->role = value;
	} else if (opt->id == O_NAME) {
		a->name = value;
	}
	return 0;
}

static int token_create(struct cli_ctx *ctx, int argc, char **argv)
{
	static const char synopsis[] = "--role viewer|operator|admin|metrics [--name NAME]";
	struct create_args a = { .ctx = ctx };
	struct cli_args pos = { 0 };
	json_t *body = NULL, *res = NULL;
	int rc;

	rc = cli_args_parse(&pos, ctx, create_opts, argc - 1, argv + 1, create_opt, &a);
	if (rc < 0)
		goto cleanup;
	if (ctx->help) {
		cli_help_print(stdout, ctx, synopsis,
			       "Creates an API token. The bare token is printed once; kilnd keeps only "
			       "its hash.", create_opts);
		goto cleanup;
	}
	if ((rc = cli_args_max(ctx, &pos, 0)) < 0)
		goto cleanup;
	if (!a.role) {
		rc = cli_usage_error(ctx, "--role is required");
		goto cleanup;
	}
	body = json_pack("{s:s}", "role", a.role);
	if (!body || (a.name && json_object_set_new(body, "name", json_string(a.name)) < 0)) {
		rc = kiln_fail(KILN_ERROR, "out of memory");
		goto cleanup;
	}
	if (ctx->dry_run) {
		printf("would create a%s %s token%s%s\n",
		       strcmp(a.role, "operator") && strcmp(a.role, "admin") ? "" : "n", a.role,
		       a.name ? " named " : "", a.name ? a.name : "");
		goto cleanup;
	}
	rc = cli_api(&res, NULL, ctx, "POST", "/tokens", body);
	if (rc < 0)
		goto cleanup;
	if (ctx->output == CLI_OUT_JSON) {
		rc = out_json_print(res, stdout);
	} else if (!json_is_string(json_object_get(res, "token"))) {
		rc = kiln_fail(KILN_EPROTO, "kilnd's answer has no token");
	} else {
		printf("%s\n", json_string_value(json_object_get(res, "token")));
		fprintf(stderr, "kiln: token %" JSON_INTEGER_FORMAT " (%s) created; it is shown only "
			"once, store it now\n", json_integer_value(json_object_get(res, "id")), a.role);
	}
cleanup:
	json_decref(body);
	json_decref(res);
	free(pos.v);
	return rc;
}

static int token_list(struct cli_ctx *ctx, int argc, char **argv)
{
	static const struct out_col cols[] = {
		{ "ID", "id", OUT_COL_CELL, 32 },
		{ "NAME", "name", OUT_COL_CELL, 256 },
		{ "ROLE", "role", OUT_COL_STR, 0 },
		{ "CREATED", "created_at", OUT_COL_TIME, 32 },
		{ "LAST USED", "last_used_at", OUT_COL_TIME, 32 },
		{ "REVOKED", "revoked", OUT_COL_CELL, 8 },
	};
	struct cli_args pos = { 0 };
	int rc;

	rc = cli_args_parse(&pos, ctx, NULL, argc - 1, argv + 1, NULL, NULL);
	if (rc < 0)
		goto cleanup;
	if (ctx->help) {
		cli_help_print(stdout, ctx, "", "Lists API tokens (never the tokens themselves).", NULL);
		goto cleanup;
	}
	if ((rc = cli_args_max(ctx, &pos, 0)) == 0)
		rc = cli_list_get(ctx, "/tokens", cols, 6);
cleanup:
	free(pos.v);
	return rc;
}

static int token_revoke(struct cli_ctx *ctx, int argc, char **argv)
{
	struct cli_args pos = { 0 };
	char path[64];
	int64_t id;
	int rc;

	rc = cli_args_parse(&pos, ctx, NULL, argc - 1, argv + 1, NULL, NULL);
	if (rc < 0)
		goto cleanup;
	if (ctx->help) {
		cli_help_print(stdout, ctx, "ID", "Revokes an API token; it stops working at once.", NULL);
		goto cleanup;
	}
	if (pos.n != 1) {
		rc = cli_usage_error(ctx, pos.n ? "one token ID only" : "missing token ID");
		goto cleanup;
	}
	if (kiln_parse_int64(&id, pos.v[0], 1, INT64_MAX) < 0) {
		rc = cli_usage_error(ctx, "token ID '%s' is not a positive number", pos.v[0]);
		goto cleanup;
	}
	if (ctx->dry_run) {
		printf("would revoke token %" PRId64 "\n", id);
		goto cleanup;
	}
	snprintf(path, sizeof(path), "/tokens/%" PRId64, id);
	rc = cli_api_say(ctx, "DELETE", path, NULL, "token %" PRId64 " revoked", id);
cleanup:
	free(pos.v);
	return rc;
}

static const struct cli_verb verbs[] = {
	{ "create", "--role R [--name N]", "create an API token", token_create },
	{ "list", "", "list API tokens", token_list },
	{ "revoke", "ID", "revoke an API token", token_revoke },
	{ 0 },
};

static int token_run(struct cli_ctx *ctx, int argc, char **argv)
{
	return cli_verb_dispatch(ctx, "API tokens for kilnd (admin only).", verbs, argc, argv);
}

const struct cli_cmd cmd_token = { "token", "create, list and revoke API tokens", token_run };
