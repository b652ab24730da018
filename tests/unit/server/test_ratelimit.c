/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for server/ratelimit.c: per-address token buckets. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>

#include "daemon/ratelimit.h"

static void test_burst_then_rate(void **state)
{
	struct ratelimit *rl = NULL;

	(void)state;
	assert_int_equal(ratelimit_new(&rl, 2, 5, 16), 0);
	for (int i = 0; i < 5; i++)
		assert_int_equal(ratelimit_take(rl, "10.0.0.1", 100.0), 0);
	/* the sixth waits: one token in half a second, rounded up to whole seconds */
	assert_int_equal(ratelimit_take(rl, "10.0.0.1", 100.0), 1);
	/* another address has its own bucket */
	assert_int_equal(ratelimit_take(rl, "10.0.0.2", 100.0), 0);
	/* half a second later one more is allowed, then none */
	assert_int_equal(ratelimit_take(rl, "10.0.0.1", 100.5), 0);
	assert_int_equal(ratelimit_take(rl, "10.0.0.1", 100.5), 1);
	/* refills to the burst, not beyond */
	for (int i = 0; i < 5; i++)
		assert_int_equal(ratelimit_take(rl, "10.0.0.1", 1000.0), 0);
	assert_true(ratelimit_take(rl, "10.0.0.1", 1000.0) > 0);
	ratelimit_free(rl);
}

static void test_slow_rate_says_how_long(void **state)
{
	struct ratelimit *rl = NULL;

	(void)state;
	assert_int_equal(ratelimit_new(&rl, 0.1, 1, 4), 0);
	assert_int_equal(ratelimit_take(rl, "a", 0), 0);
	assert_int_equal(ratelimit_take(rl, "a", 0), 10);
	/* the next one refused comes after the first one's slot, not with it */
	assert_int_equal(ratelimit_take(rl, "a", 5), 15);
	assert_int_equal(ratelimit_take(rl, "a", 6), 24);
	ratelimit_free(rl);
}

/* More addresses than slots: the table stays its size and a refilled bucket is reused. */
/* A crowd refused at once is told to come back one slot of the rate after another. */
static void test_crowd_spread(void **state)
{
	struct ratelimit *rl = NULL;
	unsigned last = 0;

	(void)state;
	assert_int_equal(ratelimit_new(&rl, 5, 100, 16), 0);
	for (int i = 0; i < 100; i++)
		assert_int_equal(ratelimit_take(rl, "nat", 0), 0);
	for (int i = 0; i < 900; i++) {
		unsigned w = ratelimit_take(rl, "nat", 0);

		assert_true(w >= last && w >= 1);
		last = w;
	}
	assert_int_equal(last, 180); /* the 900th of them: 900 / 5 a second */
	ratelimit_free(rl);
}

static void test_table_full(void **state)
{
	struct ratelimit *rl = NULL;
	char key[32];

	(void)state;
	assert_int_equal(ratelimit_new(&rl, 1, 1, 4), 0);
	for (int i = 0; i < 100; i++) {
		snprintf(key, sizeof(key), "10.0.%d.%d", i / 256, i % 256);
		assert_int_equal(ratelimit_take(rl, key, (double)i * 2), 0);
	}
	/* the latest address is remembered */
	assert_int_equal(ratelimit_take(rl, key, 198), 1);
	ratelimit_free(rl);
}

static void test_off(void **state)
{
	struct ratelimit *rl = NULL;

	(void)state;
	assert_int_equal(ratelimit_take(NULL, "a", 0), 0);
	assert_int_equal(ratelimit_new(&rl, 0, 1, 4), 0);
	for (int i = 0; i < 100; i++)
		assert_int_equal(ratelimit_take(rl, "a", 0), 0);
	ratelimit_free(rl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_burst_then_rate),
		cmocka_unit_test(test_slow_rate_says_how_long),
		cmocka_unit_test(test_crowd_spread),
		cmocka_unit_test(test_table_full),
		cmocka_unit_test(test_off),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
