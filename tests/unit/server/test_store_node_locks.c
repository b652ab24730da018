/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests for store_begin_nodes() (server/store/store.h): two handles on one database (two
 * kilnd) writing different nodes do not wait on each other, and writing one node take turns;
 * a store_begin() transaction still runs alone; a pipelined write that fails fails the
 * transaction, not the handle. The waiting is PostgreSQL's (per-node locks); on SQLite, where
 * one writer writes at a time, the tests check what holds there and say what they skip.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "kiln/error.h"
#include "store_fixture.h"

static void history_add(struct store *st, int64_t node, const char *report_id)
{
	struct agent_history_row h = { .node_id = node, .time = 1700000000,
				       .received_at = 1700000000, .report_id = report_id,
				       .temperature_max_c = NAN, .power_draw_total_w = NAN,
				       .utilization_avg_pct = NAN, .ecc_uncorrected = -1 };

	assert_int_equal(store_agent_history_insert(st, &h), 0);
}

static int64_t history_count(struct store *st, int64_t node)
{
	int64_t hist = -1, seen = -1;

	assert_int_equal(store_agent_counts(st, node, &hist, &seen), 0);
	return hist;
}

/* A second kilnd's transaction, run in a thread: begin (of node, or every writer when
 * node is 0), count the node's history, add a row, commit; when each step ended. */
struct other {
	const char *db;
	int64_t node;
	int64_t seen_before; /* the history rows it saw once its transaction began */
	int rc;
	double began, done;
};

static void *other_main(void *arg)
{
	struct other *o = arg;
	struct store *st = NULL;

	if (store_open(&st, o->db) < 0) {
		o->rc = -1;
		return NULL;
	}
	o->rc = o->node ? store_begin_nodes(st, &o->node, 1) : store_begin(st);
	o->began = fx_now_s();
	if (o->rc == 0) {
		o->seen_before = history_count(st, o->node ? o->node : 1);
		history_add(st, o->node ? o->node : 1, "other");
		o->rc = store_commit(st);
	}
	o->done = fx_now_s();
	store_close(st);
	return NULL;
}

/* While st holds its transaction open, the other kilnd o tries its own; st commits 0.4 s
 * later: o must have begun only after that commit, and succeeded. */
static void other_waits_for(struct store *st, struct other *o)
{
	pthread_t t;
	double committed;

	assert_int_equal(pthread_create(&t, NULL, other_main, o), 0);
	usleep(400 * 1000);
	committed = fx_now_s();
	assert_int_equal(store_commit(st), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(o->rc, 0);
	assert_true(o->began >= committed);
}

/* Two kilnd writing reports of different nodes: the second begins and commits while the
 * first holds its transaction open. */
static void test_different_nodes_apart(void **state)
{
	struct fx *f = *state;
	int64_t a = fx_node_add(f->st, "gpu01"), b = fx_node_add(f->st, "gpu02");
	struct other o = { .db = f->db, .node = b };
	pthread_t t;
	double t0;

	if (!fx_pg()) {
		print_message("note: SQLite writes one transaction at a time: only PostgreSQL's "
			      "per-node locks are tested here (set KILN_TEST_PG)\n");
		skip();
	}
	assert_int_equal(store_begin_nodes(f->st, &a, 1), 0);
	history_add(f->st, a, "first");
	t0 = fx_now_s();
	assert_int_equal(pthread_create(&t, NULL, other_main, &o), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(o.rc, 0);
	/* it never waited for the open transaction (the lock timeout is 5 s) */
	assert_true(o.done - t0 < 2.0);
	assert_int_equal(store_commit(f->st), 0);
	assert_int_equal(history_count(f->st, a), 1);
	assert_int_equal(history_count(f->st, b), 1);
}

/* Two kilnd writing reports of one node take turns: the second begins only once the first
 * committed, and sees its row. */
static void test_same_node_in_turn(void **state)
{
	struct fx *f = *state;
	int64_t a = fx_node_add(f->st, "gpu01");
	struct other o = { .db = f->db, .node = a };

	assert_int_equal(store_begin_nodes(f->st, &a, 1), 0);
	history_add(f->st, a, "first");
	other_waits_for(f->st, &o);
	assert_int_equal(o.seen_before, 1);
	assert_int_equal(history_count(f->st, a), 2);
}

/* A store_begin() transaction (fleet-wide writes) still excludes node writers, and they it. */
static void test_fleet_writer_alone(void **state)
{
	struct fx *f = *state;
	int64_t a = fx_node_add(f->st, "gpu01"), b = fx_node_add(f->st, "gpu02");
	struct other o = { .db = f->db, .node = b }, all = { .db = f->db, .node = 0 };

	(void)a;
	assert_int_equal(store_begin(f->st), 0);
	other_waits_for(f->st, &o);
	assert_int_equal(store_begin_nodes(f->st, &b, 1), 0);
	other_waits_for(f->st, &all);
}

/* A write that fails where nobody waits for it (pipelined on PostgreSQL) fails what follows
 * and the commit, naming it; nothing of the transaction stays; the handle goes on. */
static void test_failed_write_fails_transaction(void **state)
{
	struct fx *f = *state;
	int64_t a = fx_node_add(f->st, "gpu01"), ghost = 9999;
	int64_t ids[] = { a, ghost };
	int rc;

	assert_int_equal(store_begin_nodes(f->st, ids, 2), 0);
	history_add(f->st, a, "kept?");
	{
		struct agent_history_row h = { .node_id = ghost, .report_id = "ghost",
					       .temperature_max_c = NAN, .power_draw_total_w = NAN,
					       .utilization_avg_pct = NAN, .ecc_uncorrected = -1 };

		/* on PostgreSQL it is sent, not answered yet; SQLite answers at once */
		rc = store_agent_history_insert(f->st, &h);
		if (!fx_pg())
			assert_true(rc < 0);
		else
			assert_int_equal(rc, 0);
	}
	if (fx_pg()) {
		/* the next statement that waits tells, and so does every one after it */
		struct agent_identity idn = { 0 };

		rc = store_agent_identity_get(f->st, &idn, a);
		assert_true(rc < 0 && rc != KILN_ENOTFOUND);
		assert_non_null(strstr(kiln_error_last(), "adding a history row"));
		store_rollback_to(f->st); /* cannot undo only a part */
		assert_true(store_commit(f->st) < 0);
		assert_int_equal(history_count(f->st, a), 0);
	} else {
		assert_int_equal(store_commit(f->st), 0);
		assert_int_equal(history_count(f->st, a), 1);
	}
	/* the handle works on: a transaction of each kind, statements prepared before too */
	assert_int_equal(store_begin_nodes(f->st, &a, 1), 0);
	history_add(f->st, a, "after");
	assert_int_equal(store_commit(f->st), 0);
	assert_int_equal(store_begin(f->st), 0);
	history_add(f->st, a, "after2");
	assert_int_equal(store_commit(f->st), 0);
	assert_int_equal(history_count(f->st, a), fx_pg() ? 2 : 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_different_nodes_apart, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_same_node_in_turn, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_fleet_writer_alone, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_failed_write_fails_transaction, fx_setup,
						fx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
