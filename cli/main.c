/* SPDX-License-Identifier: Apache-2.0 */
/* kiln: the command-line client of kilnd. Global options, dispatch and exit status only. */
#include <stdio.h>
#include <string.h>

#include <curl/curl.h>

#include <kiln/error.h>
#include <kiln/escape.h>
#include <kiln/json_arena.h>
#include <kiln/version.h>

#include "cli.h"

static void usage_print(void)
{
	const struct cli_cmd *const *c;
	struct cli_ctx empty = { 0 };
	int name_w = 0;

	cli_help_print(stdout, &empty, "[options] COMMAND [VERB] [ARGS]",
		       "Drive kilnd, the kiln fleet manager: node inventory, tokens, audit log.", NULL);
	printf("\ncommands:\n");
	for (c = cli_commands; *c; c++)
		if ((int)strlen((*c)->name) > name_w)
			name_w = (int)strlen((*c)->name);
	for (c = cli_commands; *c; c++)
		printf("  %-*s  %s\n", name_w, (*c)->name, (*c)->summary);
	printf("\n'kiln COMMAND --help' describes a command; 'kiln --version' prints the version.\n"
	       "Exit status: 0 ok, 1 failure, 2 usage error, 3 partial (some nodes failed).\n");
}

static int dispatch(struct cli_ctx *ctx, int argc, char **argv)
{
	const struct cli_cmd *const *c;
	int next, rc;

	/* Not global options of every command: they stand alone, first. */
	if (argc == 2 && strcmp(argv[1], "--version") == 0) {
		kiln_version_print(stdout, "kiln");
		return 0;
	}
	if (argc == 2 && strcmp(argv[1], "--list-commands") == 0) /* for tests and tools */
		return cli_commands_list(stdout);
	rc = cli_args_globals(ctx, argc - 1, argv + 1, &next);
	if (rc < 0)
		return rc;
	next++;
	if (next >= argc) {
		if (!ctx->help)
			return cli_usage_error(ctx, "missing command");
		usage_print();
		return 0;
	}
	for (c = cli_commands; *c; c++) {
		if (strcmp((*c)->name, argv[next]) == 0) {
			cli_ctx_push(ctx, (*c)->name);
			return (*c)->run(ctx, argc - next, argv + next);
		}
	}
	{
		const char *names[64];
		size_t n = 0;

		for (c = cli_commands; *c && n < 64; c++)
			names[n++] = (*c)->name;
		return cli_unknown_word(ctx, "command", argv[next], names, n);
	}
}

int main(int argc, char **argv)
{
	struct cli_ctx ctx = { 0 };
	int rc;

	kiln_json_arena_install(); /* before any jansson value: kiln status reads into an arena */
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		fprintf(stderr, "kiln: cannot initialise libcurl\n");
		return 1;
	}
	rc = dispatch(&ctx, argc, argv);
	cli_ctx_free(&ctx);
	curl_global_cleanup();
	if (rc == 0)
		return 0;
	if (rc == CLI_EPARTIAL)
		return 3;
	/* the message may carry kilnd's, a BMC's or an agent's words */
	char safe[2048];

	fprintf(stderr, "kiln: %s\n", kiln_escape(safe, sizeof(safe), kiln_error_last(), 0));
	return rc == CLI_EUSAGE ? 2 : 1;
}
