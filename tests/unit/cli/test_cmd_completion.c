/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the command listing (cli/cmd_completion.c and the list mode of cli/args.c):
 * --help in list mode writes one tab-separated line per thing and walks every verb. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli.h"

static const struct cli_opt opts[] = {
	{ "wait", 'w', NULL, 1, "wait\tuntil done" },
	{ "image", 0, "NAME", 2, "the image,\nsee 'image list'" },
	{ 0 },
};

static int leaf_runs;

/* A verb as the commands write them: parse, and print the help when asked. */
static int leaf(struct cli_ctx *ctx, int argc, char **argv)
{
	struct cli_args pos = { 0 };
	int rc = cli_args_parse(&pos, ctx, opts, argc - 1, argv + 1, NULL, NULL);

	leaf_runs++;
	if (rc == 0 && ctx->help)
		cli_help_print(stdout, ctx, "NODERANGE --image NAME", "Does it.\nTwice.", opts);
	free(pos.v);
	return rc;
}

static int bare(struct cli_ctx *ctx, int argc, char **argv)
{
	struct cli_args pos = { 0 };
	int rc = cli_args_parse(&pos, ctx, NULL, argc - 1, argv + 1, NULL, NULL);

	if (rc == 0 && ctx->help)
		cli_help_print(stdout, ctx, "", "Lists.", NULL);
	free(pos.v);
	return rc;
}

static const struct cli_verb verbs[] = {
	{ "run", "NODERANGE", "run it", leaf },
	{ "list", "", "list them", bare },
	{ 0 },
};

/* Runs "thing --help" through cli_verb_dispatch in list mode; the caller frees the text. */
static char *listed(void)
{
	struct cli_ctx ctx = { 0 };
	char *text = NULL, help[] = "--help", name[] = "thing", *argv[] = { name, help, NULL };
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	ctx.list = f;
	cli_ctx_push(&ctx, "thing");
	assert_int_equal(cli_verb_dispatch(&ctx, "Things.", verbs, 2, argv), 0);
	assert_string_equal(ctx.cmd_path, "thing"); /* each verb's word is taken back */
	fclose(f);
	return text;
}

static void test_verbs_walked(void **state)
{
	char *text;

	(void)state;
	leaf_runs = 0;
	text = listed();
	assert_int_equal(leaf_runs, 1);
	assert_string_equal(text,
		"verb\tthing\trun\tNODERANGE\trun it\n"
		"usage\tthing run\tNODERANGE --image NAME\tDoes it. Twice.\n"
		"opt\tthing run\t--wait\t-w\t-\twait until done\n"
		"opt\tthing run\t--image\t-\tNAME\tthe image, see 'image list'\n"
		"verb\tthing\tlist\t-\tlist them\n"
		"usage\tthing list\t-\tLists.\n");
	free(text);
}

/* The real tables: every command is listed, with its options, and nothing is sent. */
static void test_commands_listed(void **state)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	size_t lines = 0;

	(void)state;
	assert_non_null(f);
	setenv("KILN_URL", "http://192.0.2.1:9", 1); /* nothing may be asked of it */
	assert_int_equal(cli_commands_list(f), 0);
	fclose(f);
	for (const struct cli_cmd *const *c = cli_commands; *c; c++) {
		char want[64];

		snprintf(want, sizeof(want), "cmd\t%s\t", (*c)->name);
		assert_non_null(strstr(text, want));
	}
	assert_non_null(strstr(text, "usage\tpower\tstatus|on|off|soft|reset|cycle NODERANGE"));
	assert_non_null(strstr(text, "opt\tpower\t--hung\t-\t-\t"));
	assert_non_null(strstr(text, "verb\tnode\tadd\t"));
	assert_non_null(strstr(text, "opt\tnode add\t--bmc-user\t-\tUSER\t"));
	assert_non_null(strstr(text, "global\t--output\t-o\ttable|json\t"));
	assert_non_null(strstr(text, "conf\ttoken_file\t"));
	/* one line per thing: six fields at most, never a stray line of help */
	for (char *p = text; *p; p = strchr(p, '\n') + 1) {
		size_t tabs = 0;
		char *end = strchr(p, '\n');

		assert_non_null(end);
		for (char *q = p; q < end; q++)
			tabs += *q == '\t';
		assert_true(tabs >= 2 && tabs <= 5);
		assert_true(strncmp(p, "cmd\t", 4) == 0 || strncmp(p, "verb\t", 5) == 0 ||
			    strncmp(p, "usage\t", 6) == 0 || strncmp(p, "opt\t", 4) == 0 ||
			    strncmp(p, "global\t", 7) == 0 || strncmp(p, "conf\t", 5) == 0);
		lines++;
	}
	assert_true(lines > 100);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_verbs_walked),
		cmocka_unit_test(test_commands_listed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
