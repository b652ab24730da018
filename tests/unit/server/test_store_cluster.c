/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for the store's rows of several kilnd (server/store/store_cluster.c): instances and
 * the secret.key check value, on SQLite or, with KILN_TEST_PG, on PostgreSQL. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "kiln/error.h"
#include "store_fixture.h"

/* The instance rows (schema 025): register, heartbeat, list with the database's clock,
 * prune, remove; the key check records the first value and tells another one apart. */
static void test_instances(void **state)
{
	struct fx *f = *state;
	struct instance_row r = { .id = "aaaa", .host = "h1", .listen = "https://h1:8470",
				  .group = NULL, .lease_ms = 5000 };
	struct instance_row *rows = NULL;
	size_t n = 0;
	int deleted = -1, match = -1, first = -1;

	assert_int_equal(store_instance_register(f->st, &r), 0);
	r.id = "bbbb";
	r.host = "h2";
	r.group = "room1";
	assert_int_equal(store_instance_register(f->st, &r), 0);
	assert_int_equal(store_instance_register(f->st, &r), 0); /* again: replaces */
	assert_int_equal(store_instance_heartbeat(f->st, "aaaa"), 0);
	assert_int_equal(store_instance_heartbeat(f->st, "zzzz"), KILN_ENOTFOUND);
	assert_int_equal(store_instance_list(f->st, &rows, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(rows[0].id, "aaaa");
	assert_string_equal(rows[0].host, "h1");
	assert_string_equal(rows[0].listen, "https://h1:8470");
	assert_null(rows[0].group);
	assert_string_equal(rows[1].group, "room1");
	assert_int_equal(rows[1].lease_ms, 5000);
	/* on the database's clock (PostgreSQL's now(), SQLite's the store's) */
	assert_true(rows[0].now_ms >= rows[0].heartbeat_ms);
	assert_true(rows[0].now_ms - rows[0].heartbeat_ms < 60000);
	instance_list_free(rows, n);
	/* nothing is an hour old */
	assert_int_equal(store_instance_prune(f->st, 3600 * 1000, &deleted), 0);
	assert_int_equal(deleted, 0);
	assert_int_equal(store_instance_remove(f->st, "aaaa"), 0);
	assert_int_equal(store_instance_remove(f->st, "aaaa"), 0);
	assert_int_equal(store_instance_list(f->st, &rows, &n), 0);
	assert_int_equal(n, 1);
	instance_list_free(rows, n);
	/* a negative age prunes every row: their heartbeats are all older than the future */
	assert_int_equal(store_instance_prune(f->st, -3600 * 1000, &deleted), 0);
	assert_int_equal(deleted, 1);

	assert_int_equal(store_key_check(f->st, "v1", &match, &first), 0);
	assert_int_equal(match, 1);
	assert_int_equal(first, 1);
	assert_int_equal(store_key_check(f->st, "v1", &match, &first), 0);
	assert_int_equal(match, 1);
	assert_int_equal(first, 0);
	assert_int_equal(store_key_check(f->st, "v2", &match, NULL), 0);
	assert_int_equal(match, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_instances, fx_setup, fx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
