/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the jansson field helpers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kiln/error.h"
#include "kiln/json.h"

static json_t *parse(const char *text)
{
	json_t *v = NULL;

	if (kiln_json_parse_object(&v, text, strlen(text)) < 0)
		fail_msg("parse '%s': %s", text, kiln_error_last());
	return v;
}

static void test_parse_object(void **state)
{
	static const struct {
		const char *text;
		const char *msg; /* NULL: valid */
	} v[] = {
		{ "{}", NULL },
		{ "{\"a\": 1}", NULL },
		{ "", "invalid JSON at line" },
		{ "{", "invalid JSON at line 1" },
		{ "{\"a\": 1,\n \"b\": }", "invalid JSON at line 2" },
		{ "[1, 2]", "expected a JSON object" },
		{ "42", "invalid JSON" },
		{ "{\"a\": 1, \"a\": 2}", "duplicate" },
		{ "{} trailing", "invalid JSON" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		json_t *o = NULL;
		int rc = kiln_json_parse_object(&o, v[i].text, strlen(v[i].text));

		if (!v[i].msg) {
			if (rc != 0)
				fail_msg("'%s': %s", v[i].text, kiln_error_last());
			json_decref(o);
			continue;
		}
		if (rc != KILN_EINVAL || o)
			fail_msg("'%s': rc %d, want KILN_EINVAL", v[i].text, rc);
		if (!strstr(kiln_error_last(), v[i].msg))
			fail_msg("'%s': message '%s' lacks '%s'", v[i].text, kiln_error_last(), v[i].msg);
	}
	/* length-bounded: text need not be terminated */
	json_t *o = NULL;
	assert_int_equal(kiln_json_parse_object(&o, "{\"a\":1}garbage", 7), 0);
	json_decref(o);
	assert_int_equal(kiln_json_parse_object(&o, NULL, 0), KILN_EINVAL);
}

static void test_get_string(void **state)
{
	json_t *o = parse("{\"name\": \"gpu01\", \"n\": 3, \"z\": null}");
	const char *s = "untouched";

	(void)state;
	/* jansson's parser refuses \u0000, but a built object can hold one */
	json_object_set_new(o, "nul", json_stringn("a\0b", 3));
	assert_int_equal(kiln_json_get_string(&s, o, "name", true), 0);
	assert_string_equal(s, "gpu01");
	s = "untouched";
	assert_int_equal(kiln_json_get_string(&s, o, "missing", false), 0);
	assert_string_equal(s, "untouched");
	assert_int_equal(kiln_json_get_string(&s, o, "missing", true), KILN_EINVAL);
	assert_string_equal(kiln_error_last(), "field 'missing' is required");
	assert_int_equal(kiln_json_get_string(&s, o, "n", false), KILN_EINVAL);
	assert_string_equal(kiln_error_last(), "field 'n' must be a string");
	assert_int_equal(kiln_json_get_string(&s, o, "nul", false), KILN_EINVAL);
	assert_non_null(strstr(kiln_error_last(), "field 'nul'"));
	assert_int_equal(kiln_json_get_string(&s, o, "z", false), KILN_EINVAL);
	assert_string_equal(s, "untouched");
	json_decref(o);
}

static void test_get_int(void **state)
{
	json_t *o = parse("{\"port\": 623, \"neg\": -5, \"f\": 1.5, \"s\": \"7\", \"big\": 9223372036854775807}");
	int64_t v = -1;

	(void)state;
	assert_int_equal(kiln_json_get_int(&v, o, "port", 1, 65535, true), 0);
	assert_int_equal(v, 623);
	assert_int_equal(kiln_json_get_int(&v, o, "neg", 0, 10, true), KILN_EINVAL);
	assert_string_equal(kiln_error_last(), "field 'neg': -5 is out of range [0, 10]");
	assert_int_equal(kiln_json_get_int(&v, o, "port", 1, 100, true), KILN_EINVAL);
	assert_int_equal(kiln_json_get_int(&v, o, "f", 0, 10, true), KILN_EINVAL);
	assert_string_equal(kiln_error_last(), "field 'f' must be an integer");
	assert_int_equal(kiln_json_get_int(&v, o, "s", 0, 10, true), KILN_EINVAL);
	assert_int_equal(kiln_json_get_int(&v, o, "big", INT64_MIN, INT64_MAX, true), 0);
	assert_true(v == INT64_MAX);
	v = 42;
	assert_int_equal(kiln_json_get_int(&v, o, "absent", 0, 10, false), 0);
	assert_int_equal(v, 42);
	assert_int_equal(kiln_json_get_int(&v, o, "absent", 0, 10, true), KILN_EINVAL);
	json_decref(o);
}

static void test_get_bool_double(void **state)
{
	json_t *o = parse("{\"t\": true, \"f\": false, \"one\": 1, \"x\": 2.5, \"i\": 3}");
	bool b = false;
	double d = 0;

	(void)state;
	assert_int_equal(kiln_json_get_bool(&b, o, "t", true), 0);
	assert_true(b);
	assert_int_equal(kiln_json_get_bool(&b, o, "f", true), 0);
	assert_false(b);
	assert_int_equal(kiln_json_get_bool(&b, o, "one", true), KILN_EINVAL);
	assert_string_equal(kiln_error_last(), "field 'one' must be true or false");
	assert_int_equal(kiln_json_get_double(&d, o, "x", true), 0);
	assert_true(d == 2.5);
	assert_int_equal(kiln_json_get_double(&d, o, "i", true), 0);
	assert_true(d == 3.0);
	assert_int_equal(kiln_json_get_double(&d, o, "t", true), KILN_EINVAL);
	assert_string_equal(kiln_error_last(), "field 't' must be a number");
	json_decref(o);
}

static void test_not_object(void **state)
{
	json_t *a = json_array();
	const char *s;

	(void)state;
	assert_int_equal(kiln_json_get_string(&s, a, "x", false), KILN_EINVAL);
	assert_int_equal(kiln_json_get_string(&s, NULL, "x", false), KILN_EINVAL);
	json_decref(a);
}

static void test_check_keys(void **state)
{
	static const char *const allowed[] = { "name", "bmc", "groups", NULL };
	json_t *good = parse("{\"name\": \"a\", \"groups\": []}");
	json_t *bad = parse("{\"name\": \"a\", \"passwd\": \"x\"}");
	const char *key = NULL;

	(void)state;
	assert_int_equal(kiln_json_check_keys(good, allowed, &key), 0);
	assert_null(key);
	assert_int_equal(kiln_json_check_keys(bad, allowed, &key), KILN_EINVAL);
	assert_string_equal(key, "passwd");
	assert_string_equal(kiln_error_last(), "unknown field 'passwd'");
	assert_int_equal(kiln_json_check_keys(bad, allowed, NULL), KILN_EINVAL);
	json_decref(good);
	json_decref(bad);
}

static void test_dumps(void **state)
{
	json_t *o = parse("{\"a\": [1, 2], \"b\": \"x\"}");
	json_t *s = json_string("bare");
	char *d;

	(void)state;
	d = kiln_json_dumps(o);
	assert_string_equal(d, "{\"a\":[1,2],\"b\":\"x\"}");
	free(d);
	d = kiln_json_dumps(s);
	assert_string_equal(d, "\"bare\"");
	free(d);
	json_decref(o);
	json_decref(s);
}

/* The password's bytes are zeroed where jansson keeps them; other members stay. */
static void test_wipe_string(void **state)
{
	json_t *o = json_pack("{s:s, s:s, s:i}", "user", "root", "password", "calvin", "n", 3);
	const char *pw;

	(void)state;
	assert_non_null(o);
	pw = json_string_value(json_object_get(o, "password"));
	kiln_json_wipe_string(o, "password");
	assert_int_equal(json_string_length(json_object_get(o, "password")), 6);
	for (int i = 0; i < 6; i++)
		assert_int_equal(pw[i], 0);
	assert_string_equal(json_string_value(json_object_get(o, "user")), "root");
	kiln_json_wipe_string(o, "n");       /* not a string: untouched */
	kiln_json_wipe_string(o, "missing"); /* absent: nothing */
	kiln_json_wipe_string(NULL, "password");
	assert_int_equal(json_integer_value(json_object_get(o, "n")), 3);
	json_decref(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_object),
		cmocka_unit_test(test_get_string),
		cmocka_unit_test(test_get_int),
		cmocka_unit_test(test_get_bool_double),
		cmocka_unit_test(test_not_object),
		cmocka_unit_test(test_check_keys),
		cmocka_unit_test(test_dumps),
		cmocka_unit_test(test_wipe_string),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
