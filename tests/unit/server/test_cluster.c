/* SPDX-License-Identifier: Apache-2.0 */
/* cluster.c's pure pieces: the owner of a node over the live instances, groups, the key
 * check value. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "cluster/cluster.h"

#define NODES 1000

static const struct cluster_member three[] = {
	{ "3f9a1c0d2e4b5a67", NULL },
	{ "a0b1c2d3e4f50617", NULL },
	{ "5e6f708192a3b4c5", NULL },
};

/* 1,000 nodes over 3 instances: each within +-20% of a third. */
static void test_balance(void **state)
{
	size_t count[3] = { 0 };

	(void)state;
	for (int64_t id = 1; id <= NODES; id++) {
		int o = cluster_owner(three, 3, id, NULL, 0);

		assert_true(o >= 0 && o < 3);
		count[o]++;
	}
	for (int i = 0; i < 3; i++) {
		assert_true(count[i] >= NODES / 3 * 8 / 10);
		assert_true(count[i] <= NODES / 3 * 12 / 10);
	}
}

/* Removing one instance moves only its nodes, and the order of the list does not matter. */
static void test_removal_moves_only_its_nodes(void **state)
{
	const struct cluster_member two[] = { three[2], three[0] }; /* without three[1] */
	size_t moved = 0;

	(void)state;
	for (int64_t id = 1; id <= NODES; id++) {
		int before = cluster_owner(three, 3, id, NULL, 0);
		int after = cluster_owner(two, 2, id, NULL, 0);

		if (before == 1) {
			moved++;
			continue;
		}
		assert_string_equal(two[after].id, three[before].id);
	}
	assert_true(moved > 0);
}

static void test_groups(void **state)
{
	const struct cluster_member m[] = {
		{ "1111", "room1" },
		{ "2222", "room2" },
		{ "3333", NULL },
		{ "4444", "room1" },
	};
	char *room1[] = { "gpu", "room1" }, *room3[] = { "room3" };
	size_t in_room1[4] = { 0 };

	(void)state;
	for (int64_t id = 1; id <= 200; id++) {
		int o = cluster_owner(m, 4, id, room1, 2);

		assert_true(o == 0 || o == 3); /* only room1's instances */
		in_room1[o]++;
		/* a group no instance serves goes to the instance of no group */
		assert_int_equal(cluster_owner(m, 4, id, room3, 1), 2);
		assert_int_equal(cluster_owner(m, 4, id, NULL, 0), 2);
		/* with no instance of no group either: any instance still owns it */
		assert_true(cluster_owner(m, 2, id, room3, 1) >= 0);
	}
	assert_true(in_room1[0] > 0 && in_room1[3] > 0);
	assert_int_equal(cluster_owner(m, 0, 1, NULL, 0), -1);
}

static void test_row_live(void **state)
{
	struct instance_row r = { .lease_ms = 5000, .heartbeat_ms = 100000, .now_ms = 105000 };

	(void)state;
	assert_true(cluster_row_live(&r));
	r.now_ms = 105001;
	assert_false(cluster_row_live(&r));
}

/* The check value: fixed for a key, another for another key, never the key's bytes. */
static void test_key_value(void **state)
{
	struct secret_key a, b;
	char va[65], va2[65], vb[65], hex[65];

	(void)state;
	memset(&a, 0x11, sizeof(a));
	memset(&b, 0x12, sizeof(b));
	cluster_key_value(va, &a);
	cluster_key_value(va2, &a);
	cluster_key_value(vb, &b);
	assert_int_equal(strlen(va), 64);
	assert_string_equal(va, va2);
	assert_string_not_equal(va, vb);
	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", a.key[i]);
	assert_string_not_equal(va, hex);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_balance),
		cmocka_unit_test(test_removal_moves_only_its_nodes),
		cmocka_unit_test(test_groups),
		cmocka_unit_test(test_row_live),
		cmocka_unit_test(test_key_value),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
