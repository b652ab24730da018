/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the safe parsers: table-driven vectors for ints, durations and booleans. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "kiln/error.h"
#include "kiln/parse.h"

struct int_vector {
	const char *in;
	int64_t min, max;
	int rc;
	int64_t want;
	const char *msg; /* substring of the message on failure */
};

static const struct int_vector ints[] = {
	{ "0", 0, 10, 0, 0, NULL },
	{ "10", 0, 10, 0, 10, NULL },
	{ "-3", -5, 5, 0, -3, NULL },
	{ "+7", 0, 10, 0, 7, NULL },
	{ "007", 0, 10, 0, 7, NULL },
	{ "9223372036854775807", INT64_MIN, INT64_MAX, 0, INT64_MAX, NULL },
	{ "-9223372036854775808", INT64_MIN, INT64_MAX, 0, INT64_MIN, NULL },
	{ "9223372036854775808", INT64_MIN, INT64_MAX, KILN_EINVAL, 0, "not a whole number" },
	{ "11", 0, 10, KILN_EINVAL, 0, "11 is out of range [0, 10]" },
	{ "-1", 0, 10, KILN_EINVAL, 0, "-1 is out of range [0, 10]" },
	{ "", 0, 10, KILN_EINVAL, 0, "empty number" },
	{ " 5", 0, 10, KILN_EINVAL, 0, "not a whole number" },
	{ "5 ", 0, 10, KILN_EINVAL, 0, "not a whole number" },
	{ "5x", 0, 10, KILN_EINVAL, 0, "not a whole number" },
	{ "0x10", 0, 100, KILN_EINVAL, 0, "not a whole number" },
	{ "1.0", 0, 10, KILN_EINVAL, 0, "not a whole number" },
	{ "-", 0, 10, KILN_EINVAL, 0, "not a whole number" },
	{ "\t3", 0, 10, KILN_EINVAL, 0, "not a whole number" },
};

static void test_int64(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
		int64_t v = 12345;
		int rc = kiln_parse_int64(&v, ints[i].in, ints[i].min, ints[i].max);

		if (rc != ints[i].rc)
			fail_msg("'%s': rc %d, want %d (%s)", ints[i].in, rc, ints[i].rc,
				 kiln_error_last());
		if (rc == 0 && v != ints[i].want)
			fail_msg("'%s': got %lld", ints[i].in, (long long)v);
		if (rc < 0 && v != 12345)
			fail_msg("'%s': out written on failure", ints[i].in);
		if (rc < 0 && !strstr(kiln_error_last(), ints[i].msg))
			fail_msg("'%s': message '%s' lacks '%s'", ints[i].in, kiln_error_last(),
				 ints[i].msg);
	}
	assert_int_equal(kiln_parse_int64(&(int64_t){ 0 }, NULL, 0, 1), KILN_EINVAL);
}

static void test_int(void **state)
{
	int v = 0;

	(void)state;
	assert_int_equal(kiln_parse_int(&v, "2147483647", INT32_MIN, INT32_MAX), 0);
	assert_int_equal(v, INT32_MAX);
	assert_int_equal(kiln_parse_int(&v, "2147483648", INT32_MIN, INT32_MAX), KILN_EINVAL);
	assert_int_equal(kiln_parse_int(&v, "3", 1, 2), KILN_EINVAL);
	assert_string_equal(kiln_error_last(), "3 is out of range [1, 2]");
}

static void test_double(void **state)
{
	static const struct {
		const char *in;
		int rc;
		double want;
	} v[] = {
		{ "0.5", 0, 0.5 }, { "1", 0, 1.0 }, { "-0.25", 0, -0.25 }, { "1e-3", 0, 0.001 },
		{ "", KILN_EINVAL, 0 }, { "abc", KILN_EINVAL, 0 }, { "1.5x", KILN_EINVAL, 0 },
		{ "nan", KILN_EINVAL, 0 }, { "inf", KILN_EINVAL, 0 }, { "1e999", KILN_EINVAL, 0 },
		{ "2", KILN_EINVAL, 0 }, { "-2", KILN_EINVAL, 0 }, { " 0.5", KILN_EINVAL, 0 },
		{ "\n0.5", KILN_EINVAL, 0 }, { ".5", 0, 0.5 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		double d = 99;
		int rc = kiln_parse_double(&d, v[i].in, -1.0, 1.0);

		if (rc != v[i].rc)
			fail_msg("'%s': rc %d, want %d", v[i].in, rc, v[i].rc);
		if (rc == 0 && d != v[i].want)
			fail_msg("'%s': got %g", v[i].in, d);
	}
}

static const struct {
	const char *in;
	int rc;
	int64_t want;
	const char *msg;
} durations[] = {
	{ "0", 0, 0, NULL },
	{ "90", 0, 90, NULL },
	{ "90s", 0, 90, NULL },
	{ "30m", 0, 1800, NULL },
	{ "12h", 0, 43200, NULL },
	{ "7d", 0, 604800, NULL },
	{ "2w", 0, 1209600, NULL },
	{ "1h30m", 0, 5400, NULL },
	{ "1d2h3m4s", 0, 93784, NULL },
	{ "", KILN_EINVAL, 0, "empty duration" },
	{ "h", KILN_EINVAL, 0, "expected a number at position 1" },
	{ "1hm", KILN_EINVAL, 0, "expected a number at position 3" },
	{ "5x", KILN_EINVAL, 0, "unknown unit 'x'" },
	{ "5 m", KILN_EINVAL, 0, "unknown unit ' '" },
	{ "-5s", KILN_EINVAL, 0, "expected a number at position 1" },
	{ "99999999999999999999", KILN_EINVAL, 0, "too large" },
	{ "9223372036854775807w", KILN_EINVAL, 0, "too large" },
	{ "9223372036854775807s1s", KILN_EINVAL, 0, "too large" },
	{ "1500ms", KILN_EINVAL, 0, "expected a number at position 6" }, /* "m", then "s" */
};

/* The same parser in milliseconds, where "ms" is a unit. */
static void test_duration_ms(void **state)
{
	static const struct {
		const char *in;
		int64_t want;
	} ok[] = { { "0", 0 }, { "1500ms", 1500 }, { "2s", 2000 }, { "90", 90000 },
		   { "1m", 60000 }, { "1m30s", 90000 }, { "1s250ms", 1250 }, { "2h", 7200000 } };
	int64_t v = -7;

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		if (kiln_parse_duration_ms(&v, ok[i].in) != 0 || v != ok[i].want)
			fail_msg("'%s': got %lld (%s), want %lld", ok[i].in, (long long)v,
				 kiln_error_last(), (long long)ok[i].want);
	}
	v = -7;
	assert_int_equal(kiln_parse_duration_ms(&v, "5us"), KILN_EINVAL);
	assert_non_null(strstr(kiln_error_last(), "use ms, s, m"));
	assert_int_equal(kiln_parse_duration_ms(&v, "ms"), KILN_EINVAL);
	assert_int_equal(v, -7);
}

static void test_duration(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(durations) / sizeof(durations[0]); i++) {
		int64_t v = -7;
		int rc = kiln_parse_duration(&v, durations[i].in);

		if (rc != durations[i].rc)
			fail_msg("'%s': rc %d, want %d (%s)", durations[i].in, rc, durations[i].rc,
				 kiln_error_last());
		if (rc == 0 && v != durations[i].want)
			fail_msg("'%s': got %lld, want %lld", durations[i].in, (long long)v,
				 (long long)durations[i].want);
		if (rc < 0 && v != -7)
			fail_msg("'%s': out written on failure", durations[i].in);
		if (rc < 0 && !strstr(kiln_error_last(), durations[i].msg))
			fail_msg("'%s': message '%s' lacks '%s'", durations[i].in, kiln_error_last(),
				 durations[i].msg);
	}
}

static void test_bool(void **state)
{
	static const struct {
		const char *in;
		int rc;
		bool want;
	} v[] = {
		{ "1", 0, true }, { "yes", 0, true }, { "TRUE", 0, true }, { "On", 0, true },
		{ "0", 0, false }, { "no", 0, false }, { "false", 0, false }, { "OFF", 0, false },
		{ "", KILN_EINVAL, false }, { "y", KILN_EINVAL, false }, { "2", KILN_EINVAL, false },
		{ "yes ", KILN_EINVAL, false }, { NULL, KILN_EINVAL, false },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		bool b = !v[i].want;
		int rc = kiln_parse_bool(&b, v[i].in);

		if (rc != v[i].rc)
			fail_msg("'%s': rc %d, want %d", v[i].in ? v[i].in : "(null)", rc, v[i].rc);
		if (rc == 0 && b != v[i].want)
			fail_msg("'%s': wrong value", v[i].in);
	}
}

static void test_strlcpy(void **state)
{
	char buf[4];

	(void)state;
	assert_int_equal(kiln_strlcpy(buf, "ab", sizeof(buf)), 2);
	assert_string_equal(buf, "ab");
	assert_int_equal(kiln_strlcpy(buf, "abcdef", sizeof(buf)), 6);
	assert_string_equal(buf, "abc");
	buf[0] = 'x';
	assert_int_equal(kiln_strlcpy(buf, "abc", 0), 3);
	assert_int_equal(buf[0], 'x');
}

static void test_time_utc(void **state)
{
	static const struct {
		int64_t t;
		const char *want;
	} rows[] = {
		{ 0, "1970-01-01T00:00:00Z" },
		{ 1796090400, "2026-12-01T02:00:00Z" },
		{ 951782400, "2000-02-29T00:00:00Z" },
	};
	char out[KILN_TIME_UTC_LEN];

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		kiln_time_utc(out, rows[i].t);
		assert_string_equal(out, rows[i].want);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_int64),
		cmocka_unit_test(test_int),
		cmocka_unit_test(test_double),
		cmocka_unit_test(test_duration),
		cmocka_unit_test(test_duration_ms),
		cmocka_unit_test(test_bool),
		cmocka_unit_test(test_strlcpy),
		cmocka_unit_test(test_time_utc),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
