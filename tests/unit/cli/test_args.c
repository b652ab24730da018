/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the CLI's option parsing and nearest names (cli/args.c), table output and
 * numbers for people (cli/output.c), and the exit code of kilnd's answers (cli/client.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <kiln/error.h>

#include "cli.h"
#include "client.h"
#include "output.h"

enum { O_NAME = 1, O_FLAG, O_GROUP };

static const struct cli_opt opts[] = {
	{ "name", 'n', "NAME", O_NAME, "a name" },
	{ "flag", 'f', NULL, O_FLAG, "a flag" },
	{ "group", 0, "G", O_GROUP, "repeatable" },
	{ 0 },
};

struct seen {
	char log[512];
};

static int record(void *ud, const struct cli_opt *opt, const char *value)
{
	struct seen *s = ud;
	size_t len = strlen(s->log);

	snprintf(s->log + len, sizeof(s->log) - len, "%s%s=%s", len ? " " : "", opt->name,
		 value ? value : "(flag)");
	return 0;
}

struct parse_case {
	const char *args;  /* space-separated */
	int rc;
	const char *log;   /* options seen, in order */
	const char *pos;   /* positional arguments joined by ' ' */
	const char *err;   /* message for failures */
};

static const struct parse_case cases[] = {
	{ "", 0, "", "", NULL },
	{ "gpu01", 0, "", "gpu01", NULL },
	{ "gpu01 --name x", 0, "name=x", "gpu01", NULL },
	{ "--name=x=y gpu01", 0, "name=x=y", "gpu01", NULL },
	{ "-n x -f", 0, "name=x flag=(flag)", "", NULL },
	{ "-fnx", 0, "flag=(flag) name=x", "", NULL },
	{ "--group a --group b c", 0, "group=a group=b", "c", NULL },
	{ "a -- --name b", 0, "", "a --name b", NULL },
	{ "- a", 0, "", "- a", NULL },
	{ "--nope", CLI_EUSAGE, "", "", "node add: unknown option '--nope' (see 'kiln node add --help')" },
	{ "-z", CLI_EUSAGE, "", "", "node add: unknown option '-z' (see 'kiln node add --help')" },
	{ "--name", CLI_EUSAGE, "", "",
	  "node add: option '--name' needs a value (NAME) (see 'kiln node add --help')" },
	{ "--flag=1", CLI_EUSAGE, "", "",
	  "node add: option '--flag' takes no value (see 'kiln node add --help')" },
	{ "-o yaml", CLI_EUSAGE, "", "",
	  "node add: -o: 'yaml' is not table or json (see 'kiln node add --help')" },
};

/* Splits buf in place at spaces. */
static int split(char **argv, char *buf)
{
	int argc = 0;
	char *p = buf;

	while (*p) {
		while (*p == ' ')
			*p++ = '\0';
		if (!*p)
			break;
		argv[argc++] = p;
		p += strcspn(p, " ");
	}
	return argc;
}

static void test_parse_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct cli_ctx ctx = { 0 };
		struct cli_args pos = { 0 };
		struct seen seen = { { 0 } };
		char buf[256], *argv[32], joined[256] = "";
		int argc, rc;

		snprintf(buf, sizeof(buf), "%s", cases[i].args);
		argc = split(argv, buf);
		cli_ctx_push(&ctx, "node");
		cli_ctx_push(&ctx, "add");
		rc = cli_args_parse(&pos, &ctx, opts, argc, argv, record, &seen);
		if (rc != cases[i].rc)
			fail_msg("case %zu (%s): rc %d, want %d (%s)", i, cases[i].args, rc, cases[i].rc,
				 kiln_error_last());
		if (rc < 0) {
			assert_string_equal(kiln_error_last(), cases[i].err);
			continue;
		}
		for (size_t k = 0; k < pos.n; k++) {
			size_t len = strlen(joined);

			snprintf(joined + len, sizeof(joined) - len, "%s%s", k ? " " : "", pos.v[k]);
		}
		if (strcmp(seen.log, cases[i].log) != 0 || strcmp(joined, cases[i].pos) != 0)
			fail_msg("case %zu (%s): options '%s' positional '%s'", i, cases[i].args, seen.log,
				 joined);
		free(pos.v);
	}
}

static void test_globals_anywhere(void **state)
{
	char *argv[] = { "gpu01", "-o", "json", "--yes", "--dry-run", "--url", "http://x:1",
			 "--token-file=/t", "--ca", "/ca", "--fingerprint", "ab", "-h" };
	struct cli_ctx ctx = { 0 };
	struct cli_args pos = { 0 };

	(void)state;
	assert_int_equal(cli_args_parse(&pos, &ctx, opts, 13, argv, record, &(struct seen){ { 0 } }),
			 0);
	assert_int_equal(pos.n, 1);
	assert_int_equal(ctx.output, CLI_OUT_JSON);
	assert_true(ctx.yes && ctx.dry_run && ctx.help);
	assert_string_equal(ctx.url, "http://x:1");
	assert_string_equal(ctx.token_file, "/t");
	assert_string_equal(ctx.ca, "/ca");
	assert_string_equal(ctx.fingerprint, "ab");
	free(pos.v);
}

static void test_leading_globals(void **state)
{
	char *argv[] = { "-ojson", "--url", "http://h:2", "node", "--yes", "list" };
	struct cli_ctx ctx = { 0 };
	int next = -1;

	(void)state;
	assert_int_equal(cli_args_globals(&ctx, 6, argv, &next), 0);
	assert_int_equal(next, 3);
	assert_int_equal(ctx.output, CLI_OUT_JSON);
	assert_false(ctx.yes);
	/* A command's own option before the command is an error. */
	assert_int_equal(cli_args_globals(&ctx, 1, (char *[]){ "--bmc" }, &next), CLI_EUSAGE);
}

static void test_table(void **state)
{
	static const char *const headers[] = { "NAME", "GROUPS", "X" };
	struct out_table t;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	(void)state;
	assert_non_null(f);
	out_table_init(&t, headers, 3);
	assert_int_equal(out_table_add(&t, (const char *[]){ "gpu01", "a,b", "1" }), 0);
	assert_int_equal(out_table_add(&t, (const char *[]){ "g\xC3\xA9", NULL, "bad\ttab" }), 0);
	/* agent or BMC text: a CSI as a C1 control, a bidi override, a clear screen */
	assert_int_equal(out_table_add(&t, (const char *[]){ "x", "\xC2\x9B" "2J", "\xE2\x80\xAE\x1b[2J" }),
			 0);
	out_table_print(&t, f);
	fclose(f);
	assert_string_equal(text, "NAME   GROUPS    X\n"
				  "gpu01  a,b       1\n"
				  "g\xC3\xA9     -         bad\\x09tab\n"
				  "x      \\u009b2J  \\u202e\\x1b[2J\n");
	out_table_free(&t);
	out_table_free(&t);
	free(text);
}

static void test_results_status(void **state)
{
	json_t *ok = json_loads("[{\"node\":\"a\"},{\"node\":\"b\"}]", 0, NULL);
	json_t *some = json_loads("[{\"node\":\"a\"},{\"node\":\"b\",\"error\":\"x\"}]", 0, NULL);
	json_t *all = json_loads("[{\"node\":\"a\",\"error\":\"x\"}]", 0, NULL);

	(void)state;
	assert_int_equal(out_results_status(ok), 0);
	assert_int_equal(out_results_status(some), CLI_EPARTIAL);
	assert_int_equal(out_results_status(all), KILN_ERROR);
	json_decref(ok);
	json_decref(some);
	json_decref(all);
}

/* "did you mean": the nearest command or verb, or none when nothing is near. */
static void test_nearest(void **state)
{
	static const char *const cmds[] = { "status", "node", "token", "audit", "report", "agent",
					    "gpus", "power", "boot", "media", "sensors", "sel",
					    "inventory", "events", "image", "reinstall", "jobs",
					    "console" };
	static const struct {
		const char *typed, *want;
	} typos[] = {
		{ "stauts", "status" },  /* two letters swapped */
		{ "powr", "power" },     /* one left out */
		{ "po", "power" },       /* the only one it starts */
		{ "sensor", "sensors" },
		{ "reinstal", "reinstall" },
		{ "s", NULL },           /* starts several: no guess */
		{ "frobnicate", NULL },
		{ "", NULL },
	};
	size_t n = sizeof(cmds) / sizeof(cmds[0]);

	(void)state;
	for (size_t i = 0; i < sizeof(typos) / sizeof(typos[0]); i++) {
		const char *got = cli_nearest(typos[i].typed, cmds, n);

		if (!typos[i].want)
			assert_null(got);
		else
			assert_non_null(got), assert_string_equal(got, typos[i].want);
	}
}

/* Numbers as people read them, and units from the field's name. */
static void test_human_numbers(void **state)
{
	static const struct {
		double x;
		const char *want;
	} nums[] = {
		{ 612.34500000000003, "612.3" }, { 41.0, "41" }, { 4898.8, "4898.8" },
		{ 0.125, "0.125" }, { 1.5, "1.5" }, { -12.25, "-12.2" }, { 0, "0" },
	};
	char buf[256];
	json_t *v, *gpu;

	(void)state;
	for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++)
		assert_string_equal(out_number(buf, sizeof(buf), nums[i].x), nums[i].want);
	v = json_real(612.34500000000003);
	assert_string_equal(out_cell(buf, sizeof(buf), v), "612.3");
	assert_string_equal(out_field(buf, sizeof(buf), "power_draw_w", v), "612.3 W");
	json_decref(v);
	v = json_integer(85899345920);
	assert_string_equal(out_field(buf, sizeof(buf), "memory_total_bytes", v), "80 GiB");
	json_decref(v);
	v = json_integer(41);
	assert_string_equal(out_field(buf, sizeof(buf), "temperature_c", v), "41 \u00b0C");
	assert_string_equal(out_field(buf, sizeof(buf), "gpu_count", v), "41");
	json_decref(v);
	gpu = json_pack("{s:i, s:s, s:f, s:[]}", "index", 0, "name", "H100", "power_draw_w",
			612.345, "processes");
	assert_string_equal(out_field(buf, sizeof(buf), "gpus", gpu),
			    "index 0, name H100, power_draw_w 612.3 W");
	json_decref(gpu);
}

/* kilnd's refusals of what was typed are usage errors (exit 2), the rest by status. */
static void test_answer_code(void **state)
{
	json_t *unknown = json_pack("{s:s, s:s, s:[s]}", "error", "no such node: gpu99", "field",
				    "range", "unknown", "gpu99");
	json_t *node = json_pack("{s:s}", "error", "no node 'gpu99'");
	json_t *policy = json_pack("{s:s, s:s}", "error", "unknown key", "field", "policy");

	(void)state;
	assert_int_equal(cli_answer_code(404, unknown), CLI_EUSAGE);
	assert_int_equal(cli_answer_code(400, policy), CLI_EUSAGE);
	assert_int_equal(cli_answer_code(400, NULL), CLI_EUSAGE);
	assert_int_equal(cli_answer_code(404, node), KILN_ENOTFOUND);
	assert_int_equal(cli_answer_code(403, NULL), KILN_EPERM);
	assert_int_equal(cli_answer_code(409, NULL), KILN_EEXISTS);
	json_decref(unknown);
	json_decref(node);
	json_decref(policy);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_table),
		cmocka_unit_test(test_globals_anywhere),
		cmocka_unit_test(test_leading_globals),
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_results_status),
		cmocka_unit_test(test_nearest),
		cmocka_unit_test(test_human_numbers),
		cmocka_unit_test(test_answer_code),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
