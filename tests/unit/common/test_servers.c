/* SPDX-License-Identifier: Apache-2.0 */
/* The kilnd URL list of the CLI and the agent: parsing, and moving to the next on failure. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "kiln/error.h"
#include "kiln/servers.h"

static void test_parse(void **state)
{
	struct kiln_servers s;
	char buf[200];

	(void)state;
	assert_int_equal(kiln_servers_parse(&s, "https://a:8470", "--url"), 0);
	assert_int_equal(s.count, 1);
	assert_string_equal(kiln_servers_current(&s), "https://a:8470");
	kiln_servers_free(&s);

	assert_int_equal(kiln_servers_parse(&s, " https://a:8470/ , http://b/api/v1,https://a:8470,"
					     "https://c:1//", "--url"), 0);
	assert_int_equal(s.count, 3); /* the repeat of a dropped */
	assert_string_equal(s.urls[0], "https://a:8470");
	assert_string_equal(s.urls[1], "http://b");
	assert_string_equal(s.urls[2], "https://c:1");
	kiln_servers_describe(&s, buf, sizeof buf);
	assert_string_equal(buf, "https://a:8470, http://b, https://c:1");
	kiln_servers_free(&s);
}

static void test_parse_refuses(void **state)
{
	struct kiln_servers s;
	char many[2000] = "";

	(void)state;
	assert_int_equal(kiln_servers_parse(&s, "", "--url"), KILN_EINVAL);
	assert_int_equal(kiln_servers_parse(&s, "ftp://a", "--url"), KILN_EINVAL);
	assert_non_null(strstr(kiln_error_last(), "'ftp://a' is not an http:// or https:// URL"));
	assert_int_equal(kiln_servers_parse(&s, "https://a,,https://b", "--url"), KILN_EINVAL);
	assert_non_null(strstr(kiln_error_last(), "empty URL"));
	assert_int_equal(kiln_servers_parse(&s, "https://a, b", "--url"), KILN_EINVAL);
	assert_int_equal(kiln_servers_parse(&s, "http://", "--url"), KILN_EINVAL);
	for (int i = 0; i <= KILN_SERVERS_MAX; i++)
		snprintf(many + strlen(many), sizeof many - strlen(many), "%shttp://h%d", i ? "," : "",
			 i);
	assert_int_equal(kiln_servers_parse(&s, many, "--url"), KILN_EINVAL);
	assert_int_equal(s.count, 0);
}

static void test_failover(void **state)
{
	struct kiln_servers s;

	(void)state;
	assert_int_equal(kiln_servers_parse(&s, "http://a,http://b,http://c", "--url"), 0);
	/* a request that reaches nobody at a, b, c in turn: two moves, then it has tried all */
	assert_int_equal(kiln_servers_failover(&s, 0), 1);
	assert_string_equal(kiln_servers_current(&s), "http://b");
	assert_int_equal(kiln_servers_failover(&s, 1), 1);
	assert_string_equal(kiln_servers_current(&s), "http://c");
	assert_int_equal(kiln_servers_failover(&s, 2), 0);
	/* the next request starts where the list goes on: a, after c */
	assert_string_equal(kiln_servers_current(&s), "http://a");
	kiln_servers_free(&s);

	assert_int_equal(kiln_servers_parse(&s, "http://only", "--url"), 0);
	assert_int_equal(kiln_servers_failover(&s, 0), 0);
	assert_string_equal(kiln_servers_current(&s), "http://only");
	kiln_servers_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_parse_refuses),
		cmocka_unit_test(test_failover),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
