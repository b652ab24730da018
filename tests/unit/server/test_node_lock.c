/* SPDX-License-Identifier: Apache-2.0 */
/* The per-node action lock: one holder per node, claims of several nodes at once, threads. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cluster/node_lock.h"

static void test_claim_release(void **state)
{
	(void)state;
	assert_int_equal(node_lock_held(7), 0);
	assert_int_equal(node_lock_claim(7), 1);
	assert_int_equal(node_lock_held(7), 1);
	assert_int_equal(node_lock_claim(7), 0); /* refused, not queued */
	assert_int_equal(node_lock_claim(8), 1); /* another node is free */
	node_lock_release(7);
	assert_int_equal(node_lock_held(7), 0);
	assert_int_equal(node_lock_held(8), 1);
	assert_int_equal(node_lock_claim(7), 1);
	node_lock_release(7);
	node_lock_release(8);
	node_lock_release(9); /* never held: accepted */
	assert_int_equal(node_lock_held(8), 0);
}

static void test_claim_each(void **state)
{
	int64_t ids[] = {1, 2, 3, 2};
	int claimed[4];

	(void)state;
	assert_int_equal(node_lock_claim(2), 1);
	assert_int_equal(node_lock_claim_each(ids, 4, claimed), 2);
	assert_int_equal(claimed[0], 1);
	assert_int_equal(claimed[1], 0); /* held before */
	assert_int_equal(claimed[2], 1);
	assert_int_equal(claimed[3], 0); /* named twice: taken once */
	assert_int_equal(node_lock_claim_each(ids, 4, claimed), 0);
	for (int i = 1; i <= 3; i++)
		node_lock_release(i);
	assert_int_equal(node_lock_claim_each(ids, 0, claimed), 0);
}

static void test_many_nodes(void **state)
{
	(void)state;
	for (int64_t i = 1000; i < 11000; i++)
		assert_int_equal(node_lock_claim(i), 1);
	for (int64_t i = 1000; i < 11000; i += 2)
		node_lock_release(i);
	for (int64_t i = 1000; i < 11000; i++)
		assert_int_equal(node_lock_held(i), i % 2 == 1);
	for (int64_t i = 1001; i < 11000; i += 2)
		node_lock_release(i);
	assert_int_equal(node_lock_held(1001), 0);
}

#define THREADS 8
#define ROUNDS 2000

static int wins[THREADS];
static int inside, overlaps;

/* Each thread claims node 42 over and over; a holder counts itself inside, and no two
 * holders may be inside at once. */
static void *contend(void *arg)
{
	int me = (int)(intptr_t)arg;

	for (int r = 0; r < ROUNDS; r++)
		if (node_lock_claim(42) == 1) {
			wins[me]++;
			if (__atomic_add_fetch(&inside, 1, __ATOMIC_SEQ_CST) != 1)
				__atomic_add_fetch(&overlaps, 1, __ATOMIC_SEQ_CST);
			__atomic_sub_fetch(&inside, 1, __ATOMIC_SEQ_CST);
			node_lock_release(42);
		}
	return NULL;
}

static void test_threads_one_holder(void **state)
{
	pthread_t t[THREADS];
	int total = 0;

	(void)state;
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, contend, (void *)(intptr_t)i), 0);
	for (int i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		total += wins[i];
	}
	assert_true(total > 0);
	assert_int_equal(overlaps, 0);
	assert_int_equal(node_lock_held(42), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_claim_release),
		cmocka_unit_test(test_claim_each),
		cmocka_unit_test(test_many_nodes),
		cmocka_unit_test(test_threads_one_holder),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
