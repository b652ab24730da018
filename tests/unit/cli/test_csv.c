/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the CLI's CSV reader (cli/csv.c): table-driven vectors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <kiln/error.h>

#include "csv.h"

struct good_case {
	const char *in;
	const char *want; /* records joined: fields by '|', records by '/', each "LINE:" first */
};

static const struct good_case good[] = {
	{ "", "" },
	{ "a", "1:a" },
	{ "a,b,c\n", "1:a|b|c" },
	{ "a,b\n1,2\n", "1:a|b/2:1|2" },
	{ "a,b\r\n1,2\r\n", "1:a|b/2:1|2" },
	{ "a,b\n1,2", "1:a|b/2:1|2" },
	{ "a,,c\n", "1:a||c" },
	{ "a,b,\n", "1:a|b|" },
	{ ",\n", "1:|" },
	{ "\"x,y\",z\n", "1:x,y|z" },
	{ "\"say \"\"hi\"\"\",2\n", "1:say \"hi\"|2" },
	{ "\"\",b\n", "1:|b" },
	{ "\"two\nlines\",b\nnext,row\n", "1:two\nlines|b/3:next|row" },
	{ "\"crlf\r\ninside\",b\r\nn,r\r\n", "1:crlf\r\ninside|b/3:n|r" },
	{ "a\n\n\nb\n", "1:a/4:b" },
	{ "\n\na,b\n", "3:a|b" },
	{ "a\r\n\r\nb", "1:a/3:b" },
	{ "\xEF\xBB\xBFname,rack\ngpu1,r1\n", "1:name|rack/2:gpu1|r1" },
	{ " spaced , kept \n", "1: spaced | kept " },
	{ "gpu01,\"a100;rack1\",r1\n", "1:gpu01|a100;rack1|r1" },
	{ "caf\xC3\xA9,x\n", "1:caf\xC3\xA9|x" },
};

struct bad_case {
	const char *in;
	const char *msg; /* expected message */
};

static const struct bad_case bad[] = {
	{ "\"open", "line 1, field 1: unterminated quoted field" },
	{ "a,b\nc,\"open\n\nmore", "line 2, field 2: unterminated quoted field" },
	{ "a,b\n1,x\"y\n", "line 2, field 2: quote inside an unquoted field (quote the whole field "
		"and double the quote)" },
	{ "\"ab\"c,d\n", "line 1, field 1: unexpected character after a closing quote" },
	{ "a\n\"q\nq\"x\n", "line 3, field 1: unexpected character after a closing quote" },
};

static char *render(const struct csv_doc *doc)
{
	size_t cap = 4096, used = 0;
	char *s = calloc(1, cap);

	assert_non_null(s);
	for (size_t r = 0; r < doc->count; r++) {
		used += (size_t)snprintf(s + used, cap - used, "%s%zu:", r ? "/" : "",
					 doc->records[r].line);
		for (size_t f = 0; f < doc->records[r].count; f++)
			used += (size_t)snprintf(s + used, cap - used, "%s%s", f ? "|" : "",
						 doc->records[r].fields[f]);
		assert_true(used < cap);
	}
	return s;
}

static void test_good(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct csv_doc doc = { 0 };
		char *got;
		int rc = csv_parse(&doc, good[i].in, strlen(good[i].in));

		if (rc != 0)
			fail_msg("case %zu: unexpected error '%s'", i, kiln_error_last());
		got = render(&doc);
		if (strcmp(got, good[i].want) != 0)
			fail_msg("case %zu: got '%s', want '%s'", i, got, good[i].want);
		free(got);
		csv_doc_free(&doc);
	}
}

static void test_bad(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct csv_doc doc = { 0 };
		int rc = csv_parse(&doc, bad[i].in, strlen(bad[i].in));

		if (rc != KILN_EINVAL)
			fail_msg("case %zu: rc %d, want KILN_EINVAL", i, rc);
		if (strcmp(kiln_error_last(), bad[i].msg) != 0)
			fail_msg("case %zu: message '%s', want '%s'", i, kiln_error_last(), bad[i].msg);
		assert_int_equal(doc.count, 0);
		assert_null(doc.records);
	}
}

static void test_embedded_nul(void **state)
{
	static const char in[] = "a,b\nc\0d,e\n";
	struct csv_doc doc = { 0 };

	(void)state;
	assert_int_equal(csv_parse(&doc, in, sizeof(in) - 1), KILN_EINVAL);
	assert_string_equal(kiln_error_last(), "line 2, field 1: NUL byte");
}

static void test_load_file(void **state)
{
	char path[] = "/tmp/kiln-test-csv-XXXXXX";
	static const char text[] = "name,group\ngpu01,\"a;b\"\n";
	struct csv_doc doc = { 0 };
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, sizeof(text) - 1), (ssize_t)(sizeof(text) - 1));
	close(fd);
	assert_int_equal(csv_load_file(&doc, path), 0);
	assert_int_equal(doc.count, 2);
	assert_string_equal(doc.records[1].fields[1], "a;b");
	assert_int_equal(doc.records[1].line, 2);
	csv_doc_free(&doc);
	csv_doc_free(&doc); /* idempotent */
	unlink(path);

	assert_int_equal(csv_load_file(&doc, path), KILN_ERROR);
	assert_non_null(strstr(kiln_error_last(), path));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good),
		cmocka_unit_test(test_bad),
		cmocka_unit_test(test_embedded_nul),
		cmocka_unit_test(test_load_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
