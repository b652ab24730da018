/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for noderange expansion and compression: table-driven vectors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kiln/buf.h"
#include "kiln/error.h"
#include "kiln/noderange.h"

/* Groups for the resolver: "gpus" = gpu01..gpu04, "login" = login1,login2; all = both. */
static int resolver(void *ud, const char *name, int is_group, struct kiln_nodelist *out)
{
	static const char *const gpus[] = { "gpu01", "gpu02", "gpu03", "gpu04" };
	static const char *const login[] = { "login1", "login2" };
	int *calls = ud;
	int rc = 0;

	(*calls)++;
	if (!is_group && strcmp(name, "all") == 0) {
		for (size_t i = 0; i < 4 && rc == 0; i++)
			rc = kiln_nodelist_add(out, gpus[i]);
		for (size_t i = 0; i < 2 && rc == 0; i++)
			rc = kiln_nodelist_add(out, login[i]);
		return rc;
	}
	if (is_group && strcmp(name, "gpus") == 0) {
		for (size_t i = 0; i < 4 && rc == 0; i++)
			rc = kiln_nodelist_add(out, gpus[i]);
		return rc;
	}
	if (is_group && strcmp(name, "login") == 0) {
		for (size_t i = 0; i < 2 && rc == 0; i++)
			rc = kiln_nodelist_add(out, login[i]);
		return rc;
	}
	if (is_group && strcmp(name, "empty") == 0)
		return 0;
	return kiln_fail(KILN_ENOTFOUND, "unknown group '%s'", name);
}

/* The expansion joined by spaces, or NULL on failure. */
static char *expand_joined(const char *expr, int use_resolver, int *rc_out)
{
	struct kiln_nodelist l = { 0 };
	struct kiln_buf b;
	int calls = 0, rc;

	kiln_buf_init(&b, 0);
	rc = noderange_expand(&l, expr, use_resolver ? resolver : NULL, &calls);
	*rc_out = rc;
	if (rc < 0) {
		assert_int_equal(l.count, 0);
		return NULL;
	}
	assert_int_equal(kiln_buf_puts(&b, ""), 0);
	for (size_t i = 0; i < l.count; i++)
		assert_int_equal(kiln_buf_printf(&b, "%s%s", i ? " " : "", l.names[i]), 0);
	kiln_nodelist_free(&l);
	return kiln_buf_steal(&b);
}

struct good_vector {
	const char *expr;
	const char *want; /* space separated, in order */
};

static const struct good_vector good[] = {
	{ "gpu01", "gpu01" },
	{ "gpu[01-04]", "gpu01 gpu02 gpu03 gpu04" },
	{ "gpu[01-04,07]", "gpu01 gpu02 gpu03 gpu04 gpu07" },
	{ "gpu[1-3]", "gpu1 gpu2 gpu3" },
	{ "gpu[8-11]", "gpu8 gpu9 gpu10 gpu11" },
	{ "gpu[08-11]", "gpu08 gpu09 gpu10 gpu11" },
	{ "gpu[098-101]", "gpu098 gpu099 gpu100 gpu101" },
	{ "gpu[001-002]", "gpu001 gpu002" },
	{ "r[1-2]n[01-03]", "r1n01 r1n02 r1n03 r2n01 r2n02 r2n03" },
	{ "r[1-2]n[01-02]-ib", "r1n01-ib r1n02-ib r2n01-ib r2n02-ib" },
	{ "[1-3]", "1 2 3" },
	{ "gpu[7]", "gpu7" },
	{ "gpu[3,1,2]", "gpu3 gpu1 gpu2" },
	{ "a,b,c", "a b c" },
	{ "b,a,b", "b a" },
	{ "gpu[01-03],gpu02,login1", "gpu01 gpu02 gpu03 login1" },
	{ "gpu[01-05],-gpu03", "gpu01 gpu02 gpu04 gpu05" },
	{ "gpu[01-16],-gpu07", "gpu01 gpu02 gpu03 gpu04 gpu05 gpu06 gpu08 gpu09 gpu10 gpu11 "
			       "gpu12 gpu13 gpu14 gpu15 gpu16" },
	{ "gpu[01-06],-gpu[02-04]", "gpu01 gpu05 gpu06" },
	{ "gpu[01-03],-gpu02,gpu02", "gpu01 gpu03 gpu02" },
	{ "gpu01,-gpu01", "" },
	{ "-gpu01", "" },
	{ "gpu01,-gpu09", "gpu01" },
	{ " gpu01 , gpu02 ", "gpu01 gpu02" },
	{ "node-1.example_a", "node-1.example_a" },
	{ "@gpus", "gpu01 gpu02 gpu03 gpu04" },
	{ "@gpus,-gpu02", "gpu01 gpu03 gpu04" },
	{ "@gpus,@login", "gpu01 gpu02 gpu03 gpu04 login1 login2" },
	{ "all", "gpu01 gpu02 gpu03 gpu04 login1 login2" },
	{ "all,-@gpus", "login1 login2" },
	{ "all,-login[1-2]", "gpu01 gpu02 gpu03 gpu04" },
	{ "@empty", "" },
	{ "login1,@gpus,gpu01", "login1 gpu01 gpu02 gpu03 gpu04" },
	{ "allx", "allx" },
};

static void test_expand_good(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		int rc;
		char *got = expand_joined(good[i].expr, 1, &rc);

		if (rc < 0)
			fail_msg("'%s': unexpected error: %s", good[i].expr, kiln_error_last());
		if (strcmp(got, good[i].want) != 0)
			fail_msg("'%s': got '%s', want '%s'", good[i].expr, got, good[i].want);
		free(got);
	}
}

struct bad_vector {
	const char *expr;
	int rc;
	const char *msg; /* substring of the message */
};

static const struct bad_vector bad[] = {
	{ "", KILN_EINVAL, "empty" },
	{ "   ", KILN_EINVAL, "empty" },
	{ "gpu[01-", KILN_EINVAL, "position 4: unterminated '['" },
	{ "gpu01]", KILN_EINVAL, "position 6: unexpected ']'" },
	{ "gpu[]", KILN_EINVAL, "position 5: empty brackets" },
	{ "gpu[a-b]", KILN_EINVAL, "position 5: expected a number" },
	{ "gpu[1-]", KILN_EINVAL, "position 7: expected a number" },
	{ "gpu[-3]", KILN_EINVAL, "position 5: expected a number" },
	{ "gpu[5-3]", KILN_EINVAL, "position 5: range end is below its start" },
	{ "gpu[1,]", KILN_EINVAL, "position 7: expected a number" },
	{ "gpu[1;2]", KILN_EINVAL, "position 6: expected ','" },
	{ "gpu[1[2]]", KILN_EINVAL, "position 6: nested '['" },
	{ "gpu01,,gpu02", KILN_EINVAL, "position 7: empty element" },
	{ "gpu01,", KILN_EINVAL, "position 7: empty element" },
	{ ",gpu01", KILN_EINVAL, "position 1: empty element" },
	{ "gpu 01", KILN_EINVAL, "position 4: unexpected character ' '" },
	{ "gpu/01", KILN_EINVAL, "position 4: unexpected character '/'" },
	{ "gpu01,-", KILN_EINVAL, "position 8: expected a name after '-'" },
	{ "--gpu01", KILN_EINVAL, "position 2: a node name must start" },
	{ "@", KILN_EINVAL, "position 2: expected a group name" },
	{ "@gr!p", KILN_EINVAL, "position 4: unexpected character in group name" },
	{ "@nosuch", KILN_ENOTFOUND, "unknown group 'nosuch'" },
	{ "gpu[1-1000001]", KILN_EINVAL, "more than 1000000 names" },
	{ "a[1-1000]b[1-1001]", KILN_EINVAL, "more than 1000000 names" },
	{ "a[1-600000],b[1-600000]", KILN_EINVAL, "position 13: expression yields more than 1000000" },
	{ "gpu[1234567890123456789]", KILN_EINVAL, "number too long" },
	{ "abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghij[1-2000]", KILN_EINVAL,
	  "longer than 63" },
	{ "_gpu", KILN_EINVAL, "must start with a letter or digit" },
	{ "x[1-2],.y", KILN_EINVAL, "position 8: a node name must start" },
};

static void test_expand_bad(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc;
		char *got = expand_joined(bad[i].expr, 1, &rc);

		if (got)
			fail_msg("'%s': expected an error, got '%s'", bad[i].expr, got);
		if (rc != bad[i].rc)
			fail_msg("'%s': rc %d, want %d (%s)", bad[i].expr, rc, bad[i].rc,
				 kiln_error_last());
		if (!strstr(kiln_error_last(), bad[i].msg))
			fail_msg("'%s': message '%s' lacks '%s'", bad[i].expr, kiln_error_last(),
				 bad[i].msg);
		if (strchr(kiln_error_last(), '\n'))
			fail_msg("'%s': message has a newline", bad[i].expr);
	}
}

static void test_no_resolver(void **state)
{
	int rc;

	(void)state;
	assert_null(expand_joined("@gpus", 0, &rc));
	assert_int_equal(rc, KILN_EINVAL);
	assert_non_null(strstr(kiln_error_last(), "groups are not available"));
	assert_null(expand_joined("gpu01,all", 0, &rc));
	assert_int_equal(rc, KILN_EINVAL);
	assert_non_null(strstr(kiln_error_last(), "position 7"));
}

/* A failure leaves out as it was; a success appends without duplicates. */
static void test_out_untouched_and_merged(void **state)
{
	struct kiln_nodelist l = { 0 };

	(void)state;
	assert_int_equal(kiln_nodelist_add(&l, "gpu02"), 0);
	assert_int_equal(noderange_expand(&l, "gpu[01-03],bad[", NULL, NULL), KILN_EINVAL);
	assert_int_equal(l.count, 1);
	assert_string_equal(l.names[0], "gpu02");
	assert_int_equal(noderange_expand(&l, "gpu[01-03]", NULL, NULL), 0);
	assert_int_equal(l.count, 3);
	assert_string_equal(l.names[0], "gpu02");
	assert_string_equal(l.names[1], "gpu01");
	assert_string_equal(l.names[2], "gpu03");
	assert_true(kiln_nodelist_contains(&l, "gpu03"));
	assert_false(kiln_nodelist_contains(&l, "gpu04"));
	kiln_nodelist_free(&l);
	kiln_nodelist_free(&l); /* twice is harmless */
	kiln_nodelist_free(NULL);
}

static void test_large_range(void **state)
{
	struct kiln_nodelist l = { 0 };
	char want[32];

	(void)state;
	assert_int_equal(noderange_expand(&l, "n[000001-200000],-n[000002-199999]", NULL, NULL), 0);
	assert_int_equal(l.count, 2);
	assert_string_equal(l.names[0], "n000001");
	assert_string_equal(l.names[1], "n200000");
	kiln_nodelist_free(&l);
	assert_int_equal(noderange_expand(&l, "r[1-1000]n[0001-1000]", NULL, NULL), 0);
	assert_int_equal(l.count, 1000000);
	snprintf(want, sizeof(want), "r%dn%04d", 1000, 1000);
	assert_string_equal(l.names[l.count - 1], want);
	kiln_nodelist_free(&l);
}

/* A bracket with many comma items stays linear (a 1 MiB API body could hold 100k). */
static void test_many_items(void **state)
{
	struct kiln_buf b;

	(void)state;
	kiln_buf_init(&b, 0);
	assert_int_equal(kiln_buf_puts(&b, "n["), 0);
	for (int i = 1; i <= 100000; i++)
		assert_int_equal(kiln_buf_printf(&b, "%s%d", i > 1 ? "," : "", i), 0);
	assert_int_equal(kiln_buf_puts(&b, "]"), 0);
	struct kiln_nodelist l = { 0 };
	assert_int_equal(noderange_expand(&l, b.data, NULL, NULL), 0);
	assert_int_equal(l.count, 100000);
	assert_string_equal(l.names[99999], "n100000");
	kiln_nodelist_free(&l);
	kiln_buf_free(&b);
}

static void test_name_valid(void **state)
{
	static const struct {
		const char *name;
		int ok;
	} v[] = {
		{ "gpu01", 1 }, { "1gpu", 1 }, { "a", 1 }, { "a.b-c_d", 1 }, { "", 0 },
		{ "-a", 0 }, { ".a", 0 }, { "_a", 0 }, { "a b", 0 }, { "a/b", 0 }, { "a@b", 0 },
		{ "a[1]", 0 },
		{ "abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabc", 1 },
		{ "abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcd", 0 },
	};

	(void)state;
	assert_false(kiln_node_name_valid(NULL));
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		if (kiln_node_name_valid(v[i].name) != v[i].ok)
			fail_msg("'%s': want %d", v[i].name, v[i].ok);
	}
}

struct compress_vector {
	const char *names; /* space separated */
	const char *want;
};

static const struct compress_vector compress_vectors[] = {
	{ "", "" },
	{ "gpu01", "gpu01" },
	{ "gpu01 gpu02 gpu03 gpu04 gpu07", "gpu[01-04,07]" },
	{ "gpu07 gpu01 gpu03 gpu02 gpu04", "gpu[01-04,07]" },
	{ "gpu01 gpu02 login1", "gpu[01-02],login1" },
	{ "login gpu1 gpu2", "login,gpu[1-2]" },
	{ "gpu8 gpu9 gpu10", "gpu[8-10]" },
	{ "gpu08 gpu09 gpu10", "gpu[08-10]" },
	{ "gpu1 gpu01", "gpu1,gpu01" },
	{ "gpu098 gpu099 gpu100", "gpu[098-100]" },
	{ "r1n01 r1n02 r2n01", "r1n[01-02],r2n01" },
	{ "a1 a1 a2", "a[1-2]" },
	{ "0 1 2", "[0-2]" },
	{ "gpu01 gpu03 gpu05", "gpu[01,03,05]" },
};

static char **split(const char *s, size_t *count)
{
	char **v = calloc(64, sizeof(char *));

	*count = 0;
	assert_non_null(v);
	while (*s) {
		const char *sp = strchr(s, ' ');
		size_t len = sp ? (size_t)(sp - s) : strlen(s);

		v[(*count)++] = strndup(s, len);
		s += len;
		while (*s == ' ')
			s++;
	}
	return v;
}

static void free_split(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* Expanding the compressed form gives back the same set of names. */
static void check_round_trip(char **names, size_t n, const char *compressed)
{
	struct kiln_nodelist l = { 0 };

	if (n == 0)
		return;
	if (noderange_expand(&l, compressed, NULL, NULL) < 0)
		fail_msg("'%s' does not expand: %s", compressed, kiln_error_last());
	for (size_t i = 0; i < n; i++) {
		if (!kiln_nodelist_contains(&l, names[i]))
			fail_msg("'%s' lost %s", compressed, names[i]);
	}
	for (size_t i = 0; i < l.count; i++) {
		int found = 0;

		for (size_t k = 0; k < n; k++)
			found |= strcmp(names[k], l.names[i]) == 0;
		if (!found)
			fail_msg("'%s' gained %s", compressed, l.names[i]);
	}
	kiln_nodelist_free(&l);
}

static void test_compress(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(compress_vectors) / sizeof(compress_vectors[0]); i++) {
		size_t n;
		char **names = split(compress_vectors[i].names, &n);
		char *got = noderange_compress(names, n);

		assert_non_null(got);
		if (strcmp(got, compress_vectors[i].want) != 0)
			fail_msg("compress '%s': got '%s', want '%s'", compress_vectors[i].names, got,
				 compress_vectors[i].want);
		check_round_trip(names, n, got);
		free(got);
		free_split(names, n);
	}
}

/* Every good expansion compresses to something that expands back to it. */
static void test_round_trip_vectors(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct kiln_nodelist l = { 0 };
		int calls = 0;
		char *c;

		assert_int_equal(noderange_expand(&l, good[i].expr, resolver, &calls), 0);
		c = noderange_compress(l.names, l.count);
		assert_non_null(c);
		check_round_trip(l.names, l.count, c);
		free(c);
		kiln_nodelist_free(&l);
	}
}

/* Pseudo-random sets of names compress and expand back. */
static void test_round_trip_random(void **state)
{
	static const char *const prefixes[] = { "gpu", "r1n", "r2n", "login", "x" };
	uint32_t seed = 12345;

	(void)state;
	for (int round = 0; round < 200; round++) {
		char *names[40];
		size_t n = 0;
		char *c;

		for (int k = 0; k < 40; k++) {
			char buf[32];

			seed = seed * 1103515245u + 12345u;
			const char *p = prefixes[(seed >> 16) % 5];
			seed = seed * 1103515245u + 12345u;
			unsigned v = (seed >> 16) % 120;
			seed = seed * 1103515245u + 12345u;
			switch ((seed >> 16) % 3) {
			case 0: snprintf(buf, sizeof(buf), "%s%u", p, v); break;
			case 1: snprintf(buf, sizeof(buf), "%s%02u", p, v); break;
			default: snprintf(buf, sizeof(buf), "%s%03u", p, v); break;
			}
			names[n++] = strdup(buf);
		}
		c = noderange_compress(names, n);
		assert_non_null(c);
		check_round_trip(names, n, c);
		free(c);
		for (size_t k = 0; k < n; k++)
			free(names[k]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_expand_good),
		cmocka_unit_test(test_expand_bad),
		cmocka_unit_test(test_no_resolver),
		cmocka_unit_test(test_out_untouched_and_merged),
		cmocka_unit_test(test_large_range),
		cmocka_unit_test(test_many_items),
		cmocka_unit_test(test_name_valid),
		cmocka_unit_test(test_compress),
		cmocka_unit_test(test_round_trip_vectors),
		cmocka_unit_test(test_round_trip_random),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
