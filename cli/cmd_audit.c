/* kiln audit: the fleet version audit (cmd_versions.c) and kiln audit log: who did what to which
 * nodes, newest first. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <kiln/error.h>
#include <kiln/parse.h>

#include "cli.h"
#include "client.h"
#include "cmd_versions.h"
#include "output.h"

enum { O_SINCE = 1, O_LIMIT };

static const struct cli_opt log_opts[] = {
	{ "since", 0, "DURATION", O_SINCE, "only entries newer than this (90s, 30m, 12h, 7d)" },
	{ "limit", 0, "N", O_LIMIT, "at most N entries" },
	{ 0 },
};

struct log_args {
	struct cli_ctx *ctx;
	int64_t since; /* seconds ago; -1 when not given */
	int64_t limit; /* -1 when not given */
};

static int log_opt(void *ud, const struct cli_opt *opt, const char *value)
{
	struct log_args *a = ud;

	if (opt->id == O_SINCE && kiln_parse_duration(&a->since, value) < 0)
		return cli_usage_error(a->ctx, "--since: %s", kiln_error_last());
	if (opt->id == O_LIMIT && kiln_parse_int64(&a->limit, value, 1, 1000000) < 0)
		return cli_usage_error(a->ctx, "--limit: %s", kiln_error_last());
	return 0;
}

static int audit_log(struct cli_ctx *ctx, int argc, char **argv)
{
	static const char *const headers[] = { "TIME", "ACTOR", "ACTION", "TARGET", "OUTCOME",
						"DETAIL" };
	struct log_args a = { .ctx = ctx, .since = -1, .limit = -1 };
	struct cli_args pos = { 0 };
	struct out_table t;
	json_t *res = NULL, *e;
	char path[96];
	size_t i;
	int rc;

	out_table_init(&t, headers, 6);
	rc = cli_args_parse(&pos, ctx, log_opts, argc - 1, argv + 1, log_opt, &a);
	if (rc < 0)
		goto cleanup;
	if (ctx->help) {
		cli_help_print(stdout, ctx, "[--since DURATION] [--limit N]",
			       "Shows the audit log, newest first.", log_opts);
		goto cleanup;
	}
	if (pos.n > 0) {
		rc = cli_usage_error(ctx, "unexpected argument '%s'", pos.v[0]);
		goto cleanup;
	}
	snprintf(path, sizeof(path), "/audit");
	if (a.since >= 0)
		snprintf(path, sizeof(path), "/audit?since=%" PRId64, a.since);
	if (a.limit > 0) {
		size_t len = strlen(path);

		snprintf(path + len, sizeof(path) - len, "%climit=%" PRId64, a.since >= 0 ? '&' : '?',
			 a.limit);
	}
	rc = cli_api(&res, NULL, ctx, "GET", path, NULL);
	if (rc < 0)
		goto cleanup;
	if (ctx->output == CLI_OUT_JSON) {
		rc = out_json_print(res, stdout);
		goto cleanup;
	}
	json_array_foreach(res, i, e) {
		char when[32], actor[128], action[128], target[512], outcome[64], detail[512];
		const char *row[] = {
			out_time(when, sizeof(when), json_object_get(e, "time")),
			out_cell(actor, sizeof(actor), json_object_get(e, "actor")),
			out_cell(action, sizeof(action), json_object_get(e, "action")),
			out_cell(target, sizeof(target), json_object_get(e, "target")),
			out_cell(outcome, sizeof(outcome), json_object_get(e, "outcome")),
			out_cell(detail, sizeof(detail), json_object_get(e, "detail")),
		};

		rc = out_table_add(&t, row);
		if (rc < 0)
			goto cleanup;
	}
	out_table_print(&t, stdout);
cleanup:
	out_table_free(&t);
	json_decref(res);
	free(pos.v);
	return rc;
}

static const struct cli_verb verbs[] = {
	{ "versions", "[NODERANGE] [--policy FILE]", "the fleet version audit (the default)",
	  cmd_versions_audit_run },
	{ "log", "[--since DURATION] [--limit N]", "show the audit log", audit_log },
	{ 0 },
};

/* The first word that is neither an option nor an option's value, or NULL. */
static const char *first_word(int argc, char **argv)
{
	static const char *const with_value[] = { "-o", "--output", "--url", "--token-file", "--ca",
						  "--fingerprint", "--policy", "--since", "--limit",
						  NULL };

	for (int i = 1; i < argc; i++) {
		int takes = 0;

		if (strcmp(argv[i], "--") == 0)
			return i + 1 < argc ? argv[i + 1] : NULL;
		if (argv[i][0] != '-')
			return argv[i];
		for (size_t k = 0; with_value[k]; k++)
			takes |= strcmp(argv[i], with_value[k]) == 0;
		i += takes;
	}
	return NULL;
}

/* "kiln audit log ..." and "kiln audit versions ..." are verbs; anything else ("kiln audit",
 * "kiln audit gpu[01-08] --policy f.ini") is the version audit. */
static int audit_run(struct cli_ctx *ctx, int argc, char **argv)
{
	const char *w = first_word(argc, argv);

	if (w && (strcmp(w, "log") == 0 || strcmp(w, "versions") == 0))
		return cli_verb_dispatch(ctx, "The fleet version audit and the audit log.", verbs,
					 argc, argv);
	return cmd_versions_audit_run(ctx, argc, argv);
}

const struct cli_cmd cmd_audit = { "audit", "version audit of the fleet; audit log (audit log)",
				   audit_run };
