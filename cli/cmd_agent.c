/* SPDX-License-Identifier: Apache-2.0 */
/* kiln agent: per-node agent tokens, fleet enrollment tokens, pending agents (admin). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <kiln/error.h>
#include <kiln/noderange.h>
#include <kiln/parse.h>

#include "cli.h"
#include "client.h"
#include "common_opts.h"
#include "output.h"

static int oom(void)
{
	return kiln_fail(KILN_ERROR, "out of memory");
}

/* Prints the answer's "token" bare on stdout (or the whole answer as JSON). */
static int token_print(struct cli_ctx *ctx, json_t *res, const char *what)
{
	const char *tok = json_string_value(json_object_get(res, "token"));

	if (ctx->output == CLI_OUT_JSON)
		return out_json_print(res, stdout);
	if (!tok)
		return kiln_fail(KILN_EPROTO, "kilnd's answer has no token");
	printf("%s\n", tok);
	fprintf(stderr, "kiln: %s created; it is shown only once, store it now\n", what);
	return 0;
}

/* A verb without arguments that lists what kilnd answers at path. */
static int list_verb(struct cli_ctx *ctx, int argc, char **argv, const char *help,
		     const char *path, const struct out_col *cols, size_t ncols)
{
	struct cli_args pos = { 0 };
	int rc;

	rc = cli_args_parse(&pos, ctx, NULL, argc - 1, argv + 1, NULL, NULL);
	if (rc < 0)
		goto cleanup;
	if (ctx->help) {
		cli_help_print(stdout, ctx, "", help, NULL);
		goto cleanup;
	}
	if ((rc = cli_args_max(ctx, &pos, 0)) == 0)
		rc = cli_list_get(ctx, path, cols, ncols);
cleanup:
	free(pos.v);
	return rc;
}

/* The one NODE argument a verb takes; a usage error otherwise. */
static int node_arg(struct cli_ctx *ctx, const struct cli_args *pos)
{
	if (pos->n != 1)
		return cli_usage_error(ctx, pos->n ? "one NODE only" : "missing NODE");
	if (!kiln_node_name_valid(pos->v[0]))
		return cli_usage_error(ctx, "'%s' is not a node name", pos->v[0]);
	return 0;
}

static int agent_token(struct cli_ctx *ctx, int argc, char **argv)
{
	struct cli_args pos = { 0 };
	json_t *body = NULL, *res = NULL;
	char what[128];
	int rc;

	rc = cli_args_parse(&pos, ctx, NULL, argc - 1, argv + 1, NULL, NULL);
	if (rc < 0)
		goto cleanup;
	if (ctx->help) {
		cli_help_print(stdout, ctx, "NODE",
			       "Creates the node's agent token and prints it bare (for kiln-agent "
			       "--token-file); the node's older agent tokens stop working.", NULL);
		goto cleanup;
	}
	if ((rc = node_arg(ctx, &pos)) < 0)
		goto cleanup;
	if (ctx->dry_run) {
		printf("would create an agent token for %s (revoking its older ones)\n", pos.v[0]);
		goto cleanup;
	}
	body = json_pack("{s:s}", "node", pos.v[0]);
	if (!body) {
		rc = oom();
		goto cleanup;
	}
	rc = cli_api(&res, NULL, ctx, "POST", "/agent/tokens", body);
	if (rc < 0)
		goto cleanup;
	snprintf(what, sizeof(what), "agent token for %s", pos.v[0]);
	rc = token_print(ctx, res, what);
cleanup:
	json_decref(body);
	json_decref(res);
	free(pos.v);
	return rc;
}

/* --- enroll-token create | list | revoke --------------------------------------------- */

enum { O_NAME = 1 };

static const struct cli_opt create_opts[] = {
	{ "name", 0, "NAME", O_NAME, "a name to recognise the token by" },
	{ 0 },
};

static int create_opt(void *ud, const struct cli_opt *opt, const char *value)
{
	if (opt->id == O_NAME)
		*(const char **)ud = value;
	return 0;
}

static int enroll_create(struct cli_ctx *ctx, int argc, char **argv)
{
	struct cli_args pos = { 0 };
	const char *name = NULL;
	json_t *body = NULL, *res = NULL;
	int rc;

	rc = cli_args_parse(&pos, ctx, create_opts, argc - 1, argv + 1, create_opt, &name);
	if (rc < 0)
		goto cleanup;
	if (ctx->help) {
		cli_help_print(stdout, ctx, "[--name NAME]",
			       "Creates a fleet enrollment token and prints it bare: an agent started "
			       "with --enroll-token-file gets its node's own token with it.",
			       create_opts);
		goto cleanup;
	}
	if ((rc = cli_args_max(ctx, &pos, 0)) < 0)
		goto cleanup;
	if (ctx->dry_run) {
		printf("would create an enrollment token%s%s\n", name ? " named " : "",
		       name ? name : "");
		goto cleanup;
	}
	body = name ? json_pack("{s:s}", "name", name) : json_object();
	if (!body) {
		rc = oom();
		goto cleanup;
	}
	rc = cli_api(&res, NULL, ctx, "POST", "/agent/enroll-tokens", body);
	if (rc == 0)
		rc = token_print(ctx, res, "enrollment token");
cleanup:
	json_decref(body);
	json_decref(res);
	free(pos.v);
	return rc;
}

static int enroll_list(struct cli_ctx *ctx, int argc, char **argv)
{
	static const struct out_col cols[] = {
		{ "ID", "id", OUT_COL_CELL, 32 },
		{ "NAME", "name", OUT_COL_CELL, 256 },
		{ "CREATED", "created_at", OUT_COL_TIME, 32 },
		{ "LAST USED", "last_used_at", OUT_COL_TIME, 32 },
		{ "REVOKED", "revoked", OUT_COL_CELL, 8 },
	};

	return list_verb(ctx, argc, argv,
			 "Lists enrollment tokens (never the tokens themselves).",
			 "/agent/enroll-tokens", cols, 5);
}

static int enroll_revoke(struct cli_ctx *ctx, int argc, char **argv)
{
	struct cli_args pos = { 0 };
	char path[80];
	int64_t id;
	int rc;

	rc = cli_args_parse(&pos, ctx, NULL, argc - 1, argv + 1, NULL, NULL);
	if (rc < 0)
		goto cleanup;
	if (ctx->help) {
		cli_help_print(stdout, ctx, "ID",
			       "Revokes an enrollment token: agents can no longer enroll with it (tokens "
			       "already issued to nodes keep working).", NULL);
		goto cleanup;
	}
	if ((rc = cli_args_id(ctx, &id, &pos, 1)) < 0)
		goto cleanup;
	if (ctx->dry_run) {
		printf("would revoke enrollment token %" PRId64 "\n", id);
		goto cleanup;
	}
	snprintf(path, sizeof(path), "/agent/enroll-tokens/%" PRId64, id);
	rc = cli_api_say(ctx, "DELETE", path, NULL, "enrollment token %" PRId64 " revoked", id);
cleanup:
	free(pos.v);
	return rc;
}

static const struct cli_verb enroll_verbs[] = {
	{ "create", "[--name N]", "create a fleet enrollment token", enroll_create },
	{ "list", "", "list enrollment tokens", enroll_list },
	{ "revoke", "ID", "revoke an enrollment token", enroll_revoke },
	{ 0 },
};

static int agent_enroll_token(struct cli_ctx *ctx, int argc, char **argv)
{
	return cli_verb_dispatch(ctx, "Fleet enrollment tokens for kiln-agent --enroll-token-file.",
				 enroll_verbs, argc, argv);
}

/* --- pending | accept | reject ------------------------------------------------------- */

static int agent_pending(struct cli_ctx *ctx, int argc, char **argv)
{
	static const struct out_col cols[] = {
		{ "ID", "id", OUT_COL_CELL, 32 },
		{ "DMI SERIAL", "dmi_serial", OUT_COL_CELL, 256 },
		{ "HOSTNAME", "hostname", OUT_COL_CELL, 256 },
		{ "FIRST SEEN", "first_seen", OUT_COL_TIME, 32 },
		{ "LAST SEEN", "last_seen", OUT_COL_TIME, 32 },
		{ "ATTEMPTS", "attempts", OUT_COL_CELL, 32 },
		{ "STATUS", "status", OUT_COL_CELL, 32 },
		{ "NODE", "node", OUT_COL_CELL, 128 },
		{ "RESEMBLES", "candidate", OUT_COL_CELL, 128 },
		{ "WHY", "reason", OUT_COL_CELL, 256 },
	};

	return list_verb(ctx, argc, argv,
			 "Lists agents whose enrollment waits for an admin: no node matched, only "
			 "the host name did, or the node already has an agent (enrollment never "
			 "replaces a token); 'kiln agent accept' binds one to a node.",
			 "/agent/pending", cols, 10);
}

static int agent_accept(struct cli_ctx *ctx, int argc, char **argv)
{
	struct cli_args pos = { 0 };
	json_t *body = NULL;
	char path[96];
	int64_t id;
	int rc;

	rc = cli_args_parse(&pos, ctx, NULL, argc - 1, argv + 1, NULL, NULL);
	if (rc < 0)
		goto cleanup;
	if (ctx->help) {
		cli_help_print(stdout, ctx, "ID NODE",
			       "Accepts a pending agent as NODE: its next enrollment attempt gets the "
			       "node's agent token.", NULL);
		goto cleanup;
	}
	if ((rc = cli_args_id(ctx, &id, &pos, 2)) < 0)
		goto cleanup;
	if (!kiln_node_name_valid(pos.v[1])) {
		rc = cli_usage_error(ctx, "'%s' is not a node name", pos.v[1]);
		goto cleanup;
	}
	if (ctx->dry_run) {
		printf("would accept pending agent %" PRId64 " as %s\n", id, pos.v[1]);
		goto cleanup;
	}
	body = json_pack("{s:s}", "node", pos.v[1]);
	if (!body) {
		rc = oom();
		goto cleanup;
	}
	snprintf(path, sizeof(path), "/agent/pending/%" PRId64 "/accept", id);
	rc = cli_api_say(ctx, "POST", path, body,
			 "pending agent %" PRId64 " accepted as %s; it gets its token when it next "
			 "enrolls", id, pos.v[1]);
cleanup:
	json_decref(body);
	free(pos.v);
	return rc;
}

static int agent_reject(struct cli_ctx *ctx, int argc, char **argv)
{
	struct cli_args pos = { 0 };
	char path[80];
	int64_t id;
	int rc;

	rc = cli_args_parse(&pos, ctx, NULL, argc - 1, argv + 1, NULL, NULL);
	if (rc < 0)
		goto cleanup;
	if (ctx->help) {
		cli_help_print(stdout, ctx, "ID", "Forgets a pending agent (it shows up again if it "
			       "keeps enrolling).", NULL);
		goto cleanup;
	}
	if ((rc = cli_args_id(ctx, &id, &pos, 1)) < 0)
		goto cleanup;
	if (ctx->dry_run) {
		printf("would forget pending agent %" PRId64 "\n", id);
		goto cleanup;
	}
	snprintf(path, sizeof(path), "/agent/pending/%" PRId64, id);
	rc = cli_api_say(ctx, "DELETE", path, NULL, "pending agent %" PRId64 " forgotten", id);
cleanup:
	free(pos.v);
	return rc;
}

/* --- identities: refused reports and the admin's acceptance -------------------------- */

static int agent_identities(struct cli_ctx *ctx, int argc, char **argv)
{
	static const struct out_col cols[] = {
		{ "NODE", "node", OUT_COL_CELL, 128 },
		{ "FIELD", "field", OUT_COL_CELL, 32 },
		{ "SINCE", "since", OUT_COL_TIME, 32 },
		{ "REFUSED", "refused", OUT_COL_CELL, 16 },
		{ "REPORTS WITH TOKEN OF", "reports_with_token_of", OUT_COL_CELL, 128 },
		{ "MISMATCH", "mismatch", OUT_COL_CELL, 512 },
	};

	return list_verb(ctx, argc, argv,
			 "Lists nodes whose agent reports are refused because their host "
			 "identity (DMI serial, machine id, host name) is not the node's, and "
			 "nodes whose agent reports with another node's token.",
			 "/agent/identities", cols, 6);
}

static int agent_accept_identity(struct cli_ctx *ctx, int argc, char **argv)
{
	struct cli_args pos = { 0 };
	json_t *body = NULL;
	int rc;

	rc = cli_args_parse(&pos, ctx, NULL, argc - 1, argv + 1, NULL, NULL);
	if (rc < 0)
		goto cleanup;
	if (ctx->help) {
		cli_help_print(stdout, ctx, "NODE",
			       "Accepts a genuine change of the node's host identity (motherboard "
			       "swap, OS reinstall, rename): the node's next agent report is taken and "
			       "its identity becomes the node's.", NULL);
		goto cleanup;
	}
	if ((rc = node_arg(ctx, &pos)) < 0)
		goto cleanup;
	if (ctx->dry_run) {
		printf("would accept the next agent report's identity as %s's\n", pos.v[0]);
		goto cleanup;
	}
	body = json_pack("{s:s}", "node", pos.v[0]);
	if (!body) {
		rc = oom();
		goto cleanup;
	}
	rc = cli_api_say(ctx, "POST", "/agent/identities/accept", body,
			 "%s: the next agent report's identity is taken as the node's", pos.v[0]);
cleanup:
	json_decref(body);
	free(pos.v);
	return rc;
}

static const struct cli_verb verbs[] = {
	{ "token", "NODE", "create a node's agent token (printed bare)", agent_token },
	{ "enroll-token", "create|list|revoke", "fleet enrollment tokens", agent_enroll_token },
	{ "pending", "", "list agents waiting to be accepted", agent_pending },
	{ "accept", "ID NODE", "accept a pending agent as NODE", agent_accept },
	{ "reject", "ID", "forget a pending agent", agent_reject },
	{ "identities", "", "list refused agent identities", agent_identities },
	{ "accept-identity", "NODE", "take the node's next report's identity", agent_accept_identity },
	{ 0 },
};

static int agent_run(struct cli_ctx *ctx, int argc, char **argv)
{
	return cli_verb_dispatch(ctx, "Node agents: tokens, enrollment and pending agents (admin).",
				 verbs, argc, argv);
}

const struct cli_cmd cmd_agent = { "agent", "agent tokens, enrollment tokens, pending agents",
				   agent_run };
