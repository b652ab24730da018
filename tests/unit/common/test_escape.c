/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for kiln_escape: table-driven vectors of what a terminal or a log must not get. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kiln/escape.h"
#include "kiln/log.h"

struct vector {
	const char *in;
	int flags;
	const char *want;
};

static const struct vector vectors[] = {
	{ "550.54.15", 0, "550.54.15" },
	{ "", 0, "" },
	{ NULL, 0, "(null)" },
	/* C0 controls and DEL: clear screen, window title, bell, a forged second line */
	{ "a\x1b[2Jb", 0, "a\\x1b[2Jb" },
	{ "\x1b]0;pwned\x07", 0, "\\x1b]0;pwned\\x07" },
	{ "ok\r\ngpu99  on  ok", 0, "ok\\x0d\\x0agpu99  on  ok" },
	{ "tab\there\x7f", 0, "tab\\x09here\\x7f" },
	/* C1 controls as UTF-8: U+009B is a CSI on terminals that take 8-bit controls */
	{ "x\xc2\x9b" "31mred", 0, "x\\u009b31mred" },
	{ "\xc2\x80\xc2\x9f", 0, "\\u0080\\u009f" },
	/* bidi overrides, embeddings, isolates, marks, separators */
	{ "12.4\xe2\x80\xae", 0, "12.4\\u202e" },
	{ "\xe2\x80\xaa\xe2\x80\xab\xe2\x80\xac\xe2\x80\xad", 0, "\\u202a\\u202b\\u202c\\u202d" },
	{ "\xe2\x81\xa6\xe2\x81\xa7\xe2\x81\xa8\xe2\x81\xa9", 0, "\\u2066\\u2067\\u2068\\u2069" },
	{ "\xd8\x9c\xe2\x80\x8e\xe2\x80\x8f\xe2\x80\xa8\xe2\x80\xa9", 0,
	  "\\u061c\\u200e\\u200f\\u2028\\u2029" },
	/* valid UTF-8 is kept: accents, CJK, an emoji, U+00A0, U+202F (not an override) */
	{ "Gr\xc3\xbc\xc3\x9f \xe4\xb8\xad \xf0\x9f\x94\xa5\xc2\xa0\xe2\x80\xaf", 0,
	  "Gr\xc3\xbc\xc3\x9f \xe4\xb8\xad \xf0\x9f\x94\xa5\xc2\xa0\xe2\x80\xaf" },
	/* invalid UTF-8, byte by byte: a stray continuation, an overlong ESC, a surrogate,
	 * past U+10FFFF, a sequence cut short, a lone lead byte at the end */
	{ "\x80z", 0, "\\x80z" },
	{ "\xc0\x9b", 0, "\\xc0\\x9b" },
	{ "\xe0\x80\x9b", 0, "\\xe0\\x80\\x9b" },
	{ "\xed\xa0\x80", 0, "\\xed\\xa0\\x80" },
	{ "\xf4\x90\x80\x80", 0, "\\xf4\\x90\\x80\\x80" },
	{ "\xe2\x80" "x", 0, "\\xe2\\x80x" },
	{ "end\xc3", 0, "end\\xc3" },
	/* quotes and backslashes only in quoted log text */
	{ "a \"b\" \\c", 0, "a \"b\" \\c" },
	{ "a \"b\" \\c", KILN_ESC_QUOTE, "a \\x22b\\x22 \\x5cc" },
};

static void test_vectors(void **state)
{
	char out[256];

	(void)state;
	for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
		const struct vector *v = &vectors[i];
		char *dup = kiln_escape_dup(v->in, v->flags);

		kiln_escape(out, sizeof(out), v->in, v->flags);
		if (strcmp(out, v->want) != 0 || !dup || strcmp(dup, v->want) != 0)
			fail_msg("vector %zu: got '%s' / '%s', want '%s'", i, out, dup ? dup : "NULL",
				 v->want);
		free(dup);
		/* escaping is idempotent: what it makes is plain */
		dup = kiln_escape_dup(out, 0);
		assert_string_equal(dup, out);
		free(dup);
	}
}

/* A small buffer cuts before an escape or a character that would not fit, never inside. */
static void test_cut(void **state)
{
	char out[8];

	(void)state;
	assert_string_equal(kiln_escape(out, sizeof(out), "abcd\x1b[2J", 0), "abcd");
	assert_string_equal(kiln_escape(out, sizeof(out), "ab\xe4\xb8\xad\xe4\xb8\xad", 0),
			    "ab\xe4\xb8\xad");
	assert_string_equal(kiln_escape(out, 1, "abc", 0), "");
	/* outlen 0 writes nothing */
	out[0] = 'x';
	kiln_escape(out, 0, "abc", 0);
	assert_int_equal(out[0], 'x');
}

/* kiln_log_quote is the same escaping, quotes included. */
static void test_log_quote(void **state)
{
	char out[64];

	(void)state;
	assert_string_equal(kiln_log_quote(out, sizeof(out), "\"x\xc2\x9b\xe2\x80\xae\n"),
			    "\\x22x\\u009b\\u202e\\x0a");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vectors),
		cmocka_unit_test(test_cut),
		cmocka_unit_test(test_log_quote),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
