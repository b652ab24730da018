/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for server/event_limit.c: a per-node budget of events and the summary of the rest. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "health/event_limit.h"

static void test_budget_and_summary(void **state)
{
	struct event *due = NULL;
	size_t n = 0;

	(void)state;
	assert_int_equal(event_limit_configure(5), 0);
	for (int i = 0; i < 5; i++)
		assert_int_equal(event_limit_take(7, SEV_CRITICAL, "xid", "Xid 79", 1000), 1);
	assert_int_equal(event_limit_take(7, SEV_WARNING, "xid", "Xid 13", 1000), 0);
	assert_int_equal(event_limit_take(7, SEV_CRITICAL, "xid", "Xid 79 again", 1001), 0);
	/* another node, and no node, have their own budgets */
	assert_int_equal(event_limit_take(8, SEV_INFO, "power", "on", 1001), 1);
	assert_int_equal(event_limit_take(0, SEV_INFO, "fleet", "x", 1001), 1);
	/* not quiet long enough yet */
	assert_int_equal(event_limit_due(&due, &n, 1001 + EVENT_HELD_QUIET_S - 1), 0);
	assert_int_equal(n, 0);
	assert_int_equal(event_limit_due(&due, &n, 1001 + EVENT_HELD_QUIET_S), 0);
	assert_int_equal(n, 1);
	assert_int_equal(due[0].node_id, 7);
	assert_int_equal(due[0].severity, SEV_CRITICAL);
	assert_string_equal(due[0].kind, "events-held");
	assert_non_null(strstr(due[0].message, "2 event(s) held back"));
	assert_non_null(strstr(due[0].message, "1 critical"));
	assert_non_null(strstr(due[0].message, "Xid 79 again"));
	event_list_free(due, n);
	/* summed up once */
	assert_int_equal(event_limit_due(&due, &n, 2000), 0);
	assert_int_equal(n, 0);
	event_limit_free();
}

/* The summary counts what it held by kind: an Xid flood and the health change it caused
 * (test_event_flood's one extra critical event), beyond four kinds as "other". */
static void test_summary_by_kind(void **state)
{
	static const char *const kinds[] = { "xid", "health", "xid", "sel", "power", "xid",
					     "gpu", "boot", "health" };
	struct event *due = NULL;
	size_t n = 0;

	(void)state;
	assert_int_equal(event_limit_configure(1), 0);
	assert_int_equal(event_limit_take(4, SEV_CRITICAL, "xid", "Xid 79", 100), 1);
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		assert_int_equal(event_limit_take(4, SEV_CRITICAL, kinds[i], "m", 100), 0);
	assert_int_equal(event_limit_due(&due, &n, 100 + EVENT_HELD_QUIET_S), 0);
	assert_int_equal(n, 1);
	if (!strstr(due[0].message, "9 event(s) held back") ||
	    !strstr(due[0].message, "by kind: xid 3, health 2, sel 1, power 1, other 2; the last: "
				    "health: m"))
		fail_msg("summary: %s", due[0].message);
	event_list_free(due, n);
	event_limit_free();
}

/* A flood that goes on gets a summary a minute, not one at its end only. */
static void test_long_flood(void **state)
{
	struct event *due = NULL;
	size_t n = 0, summaries = 0;

	(void)state;
	assert_int_equal(event_limit_configure(1), 0);
	for (int64_t t = 0; t < 3 * EVENT_HELD_MAX_S; t++) {
		event_limit_take(3, SEV_WARNING, "sel", "m", t);
		event_limit_take(3, SEV_WARNING, "sel", "m", t);
		assert_int_equal(event_limit_due(&due, &n, t), 0);
		summaries += n;
		event_list_free(due, n);
	}
	assert_true(summaries >= 2 && summaries <= 3);
	event_limit_free();
}

static void test_off(void **state)
{
	(void)state;
	assert_int_equal(event_limit_configure(0), 0);
	for (int i = 0; i < 1000; i++)
		assert_int_equal(event_limit_take(7, SEV_CRITICAL, "xid", "x", 1), 1);
	event_limit_free();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_budget_and_summary),
		cmocka_unit_test(test_summary_by_kind),
		cmocka_unit_test(test_long_flood),
		cmocka_unit_test(test_off),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
