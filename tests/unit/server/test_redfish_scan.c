/* Unit tests for the Redfish driver's JSON check and top-level string lookup (scan.c): it
 * must never take a body that jansson refuses, and must find what jansson finds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "bmc/redfish/internal.h"

static int plain(const char *s)
{
	return rf_json_plain_object(s, strlen(s));
}

/* Whatever the check accepts, jansson parses as an object. */
static void agrees(const char *s)
{
	if (!plain(s))
		return;
	json_t *j = json_loadb(s, strlen(s), 0, NULL);
	if (!json_is_object(j))
		fail_msg("accepted but jansson refuses: %s", s);
	json_decref(j);
}

static void test_check(void **state)
{
	(void)state;
	static const char *const good[] = {
		"{}", " { } \n", "{\"a\":1}", "{\"a\":[1,2.5,-3,0,-0.25],\"b\":{\"c\":null}}",
		"{\"a\":\"x\\\"y\\\\z\\/\\n\",\"t\":true,\"f\":false}", "{\"a\":[[],{},[{}]]}",
	};
	static const char *const bad[] = {
		"", "[]", "\"x\"", "1", "{", "{\"a\"}", "{\"a\":}", "{\"a\":1,}", "{,}", "{\"a\":1}x",
		"{\"a\":01}", "{\"a\":1.}", "{\"a\":.5}", "{\"a\":-}", "{\"a\":tru}", "{\"a\":nul}",
		"{a:1}", "{\"a\":\"\x01\"}", "{\"a\":\"\\x\"}", "{\"a\":\"unterminated}",
		"\x01}}]]<malformed", "{\"PowerState\":\"On\",\"Status\":{\"State\":\"Ena",
		/* left to jansson: \u escapes, non-ASCII, exponents, long numbers */
		"{\"a\":\"\\u0000\"}", "{\"a\":\"\\ud800\"}", "{\"a\":\"\xc3\xa9\"}", "{\"a\":1e999}",
		"{\"a\":99999999999999999999}", "{\"a\":[1}", "{\"a\":{]}",
	};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		if (!plain(good[i]))
			fail_msg("refused: %s", good[i]);
		agrees(good[i]);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (plain(bad[i]))
			fail_msg("accepted: %s", bad[i]);
	/* a body with a NUL inside is refused (its length says more than strlen) */
	assert_int_equal(rf_json_plain_object("{\"a\":\"b\0\"}", 10), 0);
	/* 64 levels pass (an object and 63 arrays), 65 go to jansson */
	char deep[256];
	for (int levels = 64; levels <= 65; levels++) {
		size_t k = (size_t)snprintf(deep, sizeof(deep), "{\"a\":");
		for (int i = 1; i < levels; i++)
			deep[k++] = '[';
		for (int i = 1; i < levels; i++)
			deep[k++] = ']';
		deep[k++] = '}';
		deep[k] = '\0';
		assert_int_equal(plain(deep), levels == 64);
		agrees(deep);
	}
}

static void test_lookup(void **state)
{
	(void)state;
	char out[16];
	const char *sys = "{\"@odata.id\":\"/redfish/v1/Systems/1\",\"Status\":{\"PowerState\":\"Off\"},"
			  "\"Links\":[\"PowerState\"],\"PowerState\" : \"On\",\"Name\":\"x\"}";
	assert_int_equal(plain(sys), 1);
	assert_int_equal(rf_json_top_string(sys, strlen(sys), "PowerState", out, sizeof(out)), 1);
	assert_string_equal(out, "On"); /* the top-level member, not the nested one */
	assert_int_equal(rf_json_top_string(sys, strlen(sys), "Missing", out, sizeof(out)), 0);
	const char *null = "{\"PowerState\":null}";
	assert_int_equal(rf_json_top_string(null, strlen(null), "PowerState", out, sizeof(out)), 0);
	const char *twice = "{\"PowerState\":\"Off\",\"PowerState\":\"On\"}";
	assert_int_equal(rf_json_top_string(twice, strlen(twice), "PowerState", out, sizeof(out)), 1);
	assert_string_equal(out, "On"); /* the last, as jansson keeps it */
	const char *esc = "{\"PowerState\":\"O\\n\"}";
	assert_int_equal(rf_json_top_string(esc, strlen(esc), "PowerState", out, sizeof(out)), -1);
	const char *lng = "{\"PowerState\":\"0123456789abcdef\"}";
	assert_int_equal(rf_json_top_string(lng, strlen(lng), "PowerState", out, sizeof(out)), -1);
	const char *prefix = "{\"PowerStateX\":\"On\",\"Power\":\"Off\"}";
	assert_int_equal(rf_json_top_string(prefix, strlen(prefix), "PowerState", out, sizeof(out)), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_lookup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
