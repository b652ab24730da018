/* SPDX-License-Identifier: Apache-2.0 */
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
#include "common_opts.h"
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
	static const struct out_col cols[] = {
		{ "TIME", "time", OUT_COL_TIME, 32 },
		{ "ACTOR", "actor", OUT_COL_CELL, 128 },
		{ "ACTION", "action", OUT_COL_CELL, 128 },
		{ "TARGET", "target", OUT_COL_CELL, 512 },
		{ "DETAIL", "detail", OUT_COL_CELL, 512 },
		/* last and whole: an error's text ends the line (the terminal wraps it) instead
		 * of being cut mid-word to fit a column */
		{ "OUTCOME", "outcome", OUT_COL_STR, 0 },
	};
	struct log_args a = { .ctx = ctx, .since = -1, .limit = -1 };
	struct cli_args pos = { 0 };
	char path[96] = "/audit", since[24], limit[24];
	int rc;

	rc = cli_args_parse(&pos, ctx, log_opts, argc - 1, argv + 1, log_opt, &a);
	if (rc < 0)
		goto cleanup;
	if (ctx->help) {
		cli_help_print(stdout, ctx, "[--since DURATION] [--limit N]",
			       "Shows the audit log, newest first.", log_opts);
		goto cleanup;
	}
	if ((rc = cli_args_max(ctx, &pos, 0)) < 0)
		goto cleanup;
	snprintf(since, sizeof(since), "%" PRId64, a.since);
	snprintf(limit, sizeof(limit), "%" PRId64, a.limit);
	if ((rc = cli_query_add(path, sizeof(path), "since", a.since >= 0 ? since : NULL)) < 0 ||
	    (rc = cli_query_add(path, sizeof(path), "limit", a.limit > 0 ? limit : NULL)) < 0)
		goto cleanup;
	rc = cli_list_get(ctx, path, cols, 6);
cleanup:
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
	int rc;

	if (ctx->list) { /* both halves: the version audit's options, then the verbs */
		rc = cmd_versions_audit_run(ctx, argc, argv);
		return rc < 0 ? rc
			      : cli_verb_dispatch(ctx, "The fleet version audit and the audit log.",
						  verbs, 1, argv);
	}
	if (w && (strcmp(w, "log") == 0 || strcmp(w, "versions") == 0))
		return cli_verb_dispatch(ctx, "The fleet version audit and the audit log.", verbs,
					 argc, argv);
	return cmd_versions_audit_run(ctx, argc, argv);
}

const struct cli_cmd cmd_audit = { "audit", "version audit of the fleet; audit log (audit log)",
				   audit_run };
