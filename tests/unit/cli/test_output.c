/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for the CLI's tables (cli/output.c): two spaces between columns whatever a cell's
 * width, streamed rows that widen their columns, cells cut at a character with "…". */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "output.h"

#define E_ACUTE "\xC3\xA9"     /* é, 2 bytes */
#define ELLIPSIS "\xE2\x80\xA6" /* …, 3 bytes */

/* What f holds from its start, for the caller to free; f is closed. */
static char *memstream_text(FILE *f, char **text)
{
	assert_int_equal(fclose(f), 0);
	return *text;
}

/* Rows printed as they come, widths {5, 3}: a cell as wide as its column, one and two
 * characters wider (today's "S889914X37109101.4": no space at width+2), much wider; each
 * wider one widens its column for the rows after it. */
static void test_row_wider_cells(void **state)
{
	size_t widths[] = { 5, 3, 2 };
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	(void)state;
	assert_non_null(f);
	out_row_print(f, (const char *[]){ "NODE", "BIOS", "X" }, widths, 3);
	out_row_print(f, (const char *[]){ "abcde", "1.4", "x" }, widths, 3);   /* width */
	out_row_print(f, (const char *[]){ "abcdef", "1.4", "x" }, widths, 3);  /* width + 1 */
	out_row_print(f, (const char *[]){ "abcdefgh", "1.4", "x" }, widths, 3); /* + 2 now */
	out_row_print(f, (const char *[]){ "a", "S889914X37109101", "x" }, widths, 3);
	out_row_print(f, (const char *[]){ "b", NULL, "last column never padded" }, widths, 3);
	assert_string_equal(memstream_text(f, &text),
			    "NODE   BIOS  X\n"
			    "abcde  1.4   x\n"
			    "abcdef  1.4   x\n"
			    "abcdefgh  1.4   x\n"
			    "a         S889914X37109101  x\n"
			    "b         -                 last column never padded\n");
	assert_int_equal(widths[0], 8);
	assert_int_equal(widths[1], 16);
	assert_int_equal(widths[2], 24);
	free(text);
}

/* Widths count characters: "é" is one column, two bytes; an escaped control takes the
 * columns of its escape. */
static void test_row_multibyte(void **state)
{
	size_t widths[] = { 3, 1 };
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	(void)state;
	assert_non_null(f);
	out_row_print(f, (const char *[]){ E_ACUTE E_ACUTE E_ACUTE, "x" }, widths, 2);
	out_row_print(f, (const char *[]){ E_ACUTE E_ACUTE E_ACUTE E_ACUTE E_ACUTE, "x" }, widths,
		      2);
	out_row_print(f, (const char *[]){ "a\tb", "x" }, widths, 2);
	out_row_print(f, (const char *[]){ E_ACUTE, "x" }, widths, 2);
	assert_string_equal(memstream_text(f, &text),
			    E_ACUTE E_ACUTE E_ACUTE "  x\n"
			    E_ACUTE E_ACUTE E_ACUTE E_ACUTE E_ACUTE "  x\n"
			    "a\\x09b  x\n"
			    E_ACUTE "       x\n");
	assert_int_equal(widths[0], 6);
	free(text);
}

/* A table printed whole: each column as wide as its widest cell, two spaces apart, the wide
 * cells of kiln sensors and kiln sel among them. */
static void test_table_wide_cells(void **state)
{
	static const char *const headers[] = { "NODE", "SENSOR", "KIND" };
	struct out_table t;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	(void)state;
	assert_non_null(f);
	out_table_init(&t, headers, 3);
	assert_int_equal(out_table_add(&t, (const char *[]){ "n1", "System Board PS Redundancy",
							     "psu" }), 0);
	assert_int_equal(out_table_add(&t, (const char *[]){ "a-long-node-name", "T" E_ACUTE "mp",
							     "temperature" }), 0);
	out_table_print(&t, f);
	assert_string_equal(memstream_text(f, &text),
			    "NODE              SENSOR                      KIND\n"
			    "n1                System Board PS Redundancy  psu\n"
			    "a-long-node-name  T" E_ACUTE "mp                        temperature\n");
	out_table_free(&t);
	free(text);
}

/* A cell that does not fit its buffer ends in "…" and is never cut inside a character. */
static void test_cell_cut(void **state)
{
	json_t *v;
	char buf[64];

	(void)state;
	v = json_string("abcdefg");
	assert_string_equal(out_cell(buf, 8, v), "abcdefg"); /* fits exactly: uncut */
	json_decref(v);
	v = json_string("abcdefgh");
	assert_string_equal(out_cell(buf, 8, v), "abcd" ELLIPSIS);
	json_decref(v);
	/* 5 bytes before the mark would split the third é: two are kept */
	v = json_string(E_ACUTE E_ACUTE E_ACUTE E_ACUTE E_ACUTE);
	assert_string_equal(out_cell(buf, 9, v), E_ACUTE E_ACUTE ELLIPSIS);
	assert_string_equal(out_cell(buf, 8, v), E_ACUTE E_ACUTE ELLIPSIS);
	assert_string_equal(out_cell(buf, 7, v), E_ACUTE ELLIPSIS);
	assert_string_equal(out_cell(buf, 11, v), E_ACUTE E_ACUTE E_ACUTE E_ACUTE E_ACUTE);
	/* no room for the mark: whole characters only */
	assert_string_equal(out_cell(buf, 3, v), E_ACUTE);
	assert_string_equal(out_cell(buf, 2, v), "");
	json_decref(v);
	v = json_integer(1234567890);
	assert_string_equal(out_cell(buf, 8, v), "1234" ELLIPSIS);
	json_decref(v);
	v = json_pack("[s,s,s]", "alpha", "beta", "gamma");
	assert_string_equal(out_cell(buf, 12, v), "alpha,be" ELLIPSIS);
	json_decref(v);
	v = json_pack("{s:s,s:i}", "name", "NVIDIA H100 80GB HBM3", "index", 0);
	assert_string_equal(out_field(buf, 16, "gpu", v), "name NVIDIA " ELLIPSIS);
	json_decref(v);
	assert_string_equal(out_cellf(buf, 6, "%s-%d", "ab", 12345), "ab" ELLIPSIS);
}

/* Reads stdout, redirected to a file, from where it was at start. */
struct capture {
	int saved;
	FILE *f;
};

static void capture_begin(struct capture *c)
{
	c->f = tmpfile();
	assert_non_null(c->f);
	fflush(stdout);
	c->saved = dup(STDOUT_FILENO);
	assert_true(c->saved >= 0);
	assert_true(dup2(fileno(c->f), STDOUT_FILENO) >= 0);
}

static char *capture_end(struct capture *c)
{
	long n;
	char *text;

	fflush(stdout);
	assert_true(dup2(c->saved, STDOUT_FILENO) >= 0);
	close(c->saved);
	n = ftell(c->f);
	assert_true(n >= 0);
	text = calloc(1, (size_t)n + 1);
	assert_non_null(text);
	rewind(c->f);
	assert_int_equal(fread(text, 1, (size_t)n, c->f), (size_t)n);
	fclose(c->f);
	return text;
}

/* out_list_print: a column's cap cuts with "…" at a character, the column as wide as what is
 * shown; an uncapped column (OUT_COL_STR) is shown whole. */
static void test_list_cut(void **state)
{
	static const struct out_col cols[] = {
		{ "ID", "id", OUT_COL_CELL, 32 },
		{ "NAME", "name", OUT_COL_CELL, 8 },
		{ "ROLE", "role", OUT_COL_STR, 0 },
		{ "REVOKED", "revoked", OUT_COL_CELL, 8 },
	};
	json_t *list = json_pack("[{s:i,s:s,s:s,s:b},{s:i,s:s,s:s,s:b},{s:i,s:s,s:s,s:b}]",
				 "id", 1, "name", "ops", "role", "admin", "revoked", 0,
				 "id", 22, "name", "a-long-token-name", "role", "a-long-role-name",
				 "revoked", 1,
				 "id", 333, "name", E_ACUTE E_ACUTE E_ACUTE E_ACUTE, "role", "viewer",
				 "revoked", 0);
	struct capture cap;
	char *text;

	(void)state;
	assert_non_null(list);
	capture_begin(&cap);
	assert_int_equal(out_list_print(list, 0, cols, 4), 0);
	text = capture_end(&cap);
	assert_string_equal(text, "ID   NAME   ROLE              REVOKED\n"
				  "1    ops    admin             no\n"
				  "22   a-lo" ELLIPSIS "  a-long-role-name  yes\n"
				  "333  " E_ACUTE E_ACUTE ELLIPSIS "    viewer            no\n");
	free(text);
	json_decref(list);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_row_wider_cells),
		cmocka_unit_test(test_row_multibyte),
		cmocka_unit_test(test_table_wide_cells),
		cmocka_unit_test(test_cell_cut),
		cmocka_unit_test(test_list_cut),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
