/* SPDX-License-Identifier: Apache-2.0 */
/* handoff.c's operation text and the node_calls claims (store_calls.c) on a real store: a
 * row is claimed by one instance only, a result is stored only by its claimant, and a
 * finished row goes back to its origin alone. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster/handoff.h"
#include "kiln/error.h"
#include "store_fixture.h"

static void round_trip(const struct bmc_op *op)
{
	char *text = handoff_op_text(op, "gpu07"), *media = NULL, *node = NULL;
	struct bmc_op back;

	assert_non_null(text);
	assert_int_equal(handoff_op_parse(text, &back, &media, &node), 0);
	assert_string_equal(node, "gpu07");
	assert_int_equal(back.kind, op->kind);
	assert_int_equal(back.action, op->action);
	assert_int_equal(back.on_if_off, op->on_if_off);
	assert_int_equal(back.boot, op->boot);
	assert_int_equal(back.persistent, op->persistent);
	assert_int_equal(back.force, op->force);
	assert_int_equal(back.sel_since, op->sel_since);
	if (op->media_url)
		assert_string_equal(back.media_url, op->media_url);
	else
		assert_null(back.media_url);
	assert_int_equal(back.probe, 0);
	assert_int_equal(back.background, 0);
	free(text);
	free(media);
	free(node);
}

static void test_op_round_trip(void **state)
{
	(void)state;
	round_trip(&(struct bmc_op){ .kind = BMC_OP_POWER_ACTION, .action = BMC_ACT_CYCLE,
				     .on_if_off = 1 });
	round_trip(&(struct bmc_op){ .kind = BMC_OP_BOOT_SET, .boot = BMC_BOOT_PXE,
				     .persistent = 1 });
	round_trip(&(struct bmc_op){ .kind = BMC_OP_MEDIA_INSERT,
				     .media_url = "http://10.0.0.1/ubuntu.iso", .force = 1 });
	round_trip(&(struct bmc_op){ .kind = BMC_OP_SEL, .sel_since = 1733000000 });
	round_trip(&(struct bmc_op){ .kind = BMC_OP_POWER_GET });
}

static void test_op_parse_refuses(void **state)
{
	static const char *const bad[] = {
		"", "null", "[]", "{\"node\":\"a\"}",
		"{\"node\":\"a\",\"kind\":99,\"action\":0,\"on_if_off\":false,\"boot\":0,"
		"\"persistent\":false,\"force\":false,\"sel_since\":0}",
		"{\"node\":\"a\",\"kind\":1,\"action\":-1,\"on_if_off\":false,\"boot\":0,"
		"\"persistent\":false,\"force\":false,\"sel_since\":0}",
	};
	struct bmc_op op;
	char *media, *node;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(handoff_op_parse(bad[i], &op, &media, &node), KILN_EINVAL);
		assert_null(media);
		assert_null(node);
	}
}

static void test_actions(void **state)
{
	(void)state;
	assert_true(handoff_op_is_action(BMC_OP_POWER_ACTION));
	assert_true(handoff_op_is_action(BMC_OP_BOOT_SET));
	assert_true(handoff_op_is_action(BMC_OP_MEDIA_INSERT));
	assert_true(handoff_op_is_action(BMC_OP_MEDIA_EJECT));
	assert_false(handoff_op_is_action(BMC_OP_POWER_GET));
	assert_false(handoff_op_is_action(BMC_OP_SENSORS));
	assert_false(handoff_op_is_action(BMC_OP_SEL));
}

static int64_t insert(struct store *st, const char *origin, const char *state, const char *by)
{
	struct node_call_row r = { .node_id = 7, .origin = (char *)origin, .op = (char *)"{}",
				   .audit_id = 0, .state = (char *)state, .claimed_by = (char *)by };

	assert_int_equal(store_node_call_insert(st, &r), 0);
	assert_true(r.id > 0);
	return r.id;
}

static void test_claim_once(void **state)
{
	struct fx *f = *state;
	int64_t id = insert(f->st, "aa", NODE_CALL_PENDING, NULL);
	struct node_call_row got;
	int moved = -1;

	assert_int_equal(store_node_call_move(f->st, id, NODE_CALL_PENDING, NULL, NODE_CALL_RUNNING,
					      "bb", &moved), 0);
	assert_int_equal(moved, 1);
	/* a second claimant finds it taken */
	assert_int_equal(store_node_call_move(f->st, id, NODE_CALL_PENDING, NULL, NODE_CALL_RUNNING,
					      "cc", &moved), 0);
	assert_int_equal(moved, 0);
	/* only the claimant stores the result */
	assert_int_equal(store_node_call_finish(f->st, id, NODE_CALL_RUNNING, "cc", NODE_CALL_DONE,
						0, NULL, "{}", &moved), 0);
	assert_int_equal(moved, 0);
	assert_int_equal(store_node_call_finish(f->st, id, NODE_CALL_RUNNING, "bb", NODE_CALL_DONE,
						KILN_ETIMEOUT, "no answer", NULL, &moved), 0);
	assert_int_equal(moved, 1);
	assert_int_equal(store_node_call_get(f->st, id, &got), 0);
	assert_string_equal(got.state, NODE_CALL_DONE);
	assert_string_equal(got.claimed_by, "bb");
	assert_int_equal(got.rc, KILN_ETIMEOUT);
	assert_string_equal(got.error, "no answer");
	assert_null(got.data);
	node_call_row_clear(&got);
}

static void test_takeover_needs_the_dead_claimant(void **state)
{
	struct fx *f = *state;
	int64_t id = insert(f->st, "aa", NODE_CALL_RUNNING, "bb");
	int moved = -1;

	/* the move names the claimant it saw dead: a row claimed since by another stays */
	assert_int_equal(store_node_call_move(f->st, id, NODE_CALL_RUNNING, "cc",
					      NODE_CALL_READBACK, "aa", &moved), 0);
	assert_int_equal(moved, 0);
	assert_int_equal(store_node_call_move(f->st, id, NODE_CALL_RUNNING, "bb",
					      NODE_CALL_READBACK, "aa", &moved), 0);
	assert_int_equal(moved, 1);
	/* a pending cancel finds nothing pending */
	assert_int_equal(store_node_call_move(f->st, id, NODE_CALL_PENDING, NULL,
					      NODE_CALL_CANCELLED, "aa", &moved), 0);
	assert_int_equal(moved, 0);
}

static void test_results_by_origin(void **state)
{
	struct fx *f = *state;
	struct node_call_row *rows = NULL;
	size_t n = 0;

	insert(f->st, "aa", NODE_CALL_DONE, "bb");
	insert(f->st, "cc", NODE_CALL_DONE, "bb");
	insert(f->st, "aa", NODE_CALL_PENDING, NULL);
	assert_int_equal(store_node_call_list(f->st, NODE_CALL_DONE, "aa", NULL, &rows, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(rows[0].origin, "aa");
	assert_int_equal(rows[0].node_id, 7);
	assert_int_equal(store_node_call_delete(f->st, rows[0].id), 0);
	node_call_list_free(rows, n);
	assert_int_equal(store_node_call_list(f->st, NODE_CALL_DONE, NULL, NULL, &rows, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(rows[0].origin, "cc");
	node_call_list_free(rows, n);
	/* no instance rows: every origin has stopped; only the finished rows go */
	assert_int_equal(store_node_call_prune(f->st, (store_now(f->st) + 10) * 1000), 0);
	assert_int_equal(store_node_call_list(f->st, NODE_CALL_DONE, NULL, NULL, &rows, &n), 0);
	assert_int_equal(n, 0);
	node_call_list_free(rows, n);
	assert_int_equal(store_node_call_list(f->st, NODE_CALL_PENDING, NULL, NULL, &rows, &n), 0);
	assert_int_equal(n, 1);
	node_call_list_free(rows, n);
}

/* Two kilnd on one database compare an agent's reports in turn, and count the fleet's
 * automatic cycles against one limit, because their write transactions run one at a time:
 * a second store handle's store_begin waits for the first's commit (SQLite: BEGIN
 * IMMEDIATE; PostgreSQL: the writers' advisory lock store_pg.c takes). */
struct locker {
	const char *db;
	atomic_int locked;
	int rc;
};

static void *lock_thread(void *arg)
{
	struct locker *k = arg;
	struct store *st = NULL;

	k->rc = store_open(&st, k->db);
	if (k->rc == 0 && (k->rc = store_begin(st)) == 0) {
		atomic_store(&k->locked, 1);
		store_commit(st);
	}
	store_close(st);
	return NULL;
}

static void test_writers_in_turn(void **state)
{
	struct fx *f = *state;
	struct locker k = { .db = f->db };
	pthread_t t;

	atomic_init(&k.locked, 0);
	assert_int_equal(store_begin(f->st), 0);
	assert_int_equal(pthread_create(&t, NULL, lock_thread, &k), 0);
	usleep(500 * 1000);
	assert_int_equal(atomic_load(&k.locked), 0);
	assert_int_equal(store_commit(f->st), 0);
	pthread_join(t, NULL);
	assert_int_equal(k.rc, 0);
	assert_int_equal(atomic_load(&k.locked), 1);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_op_round_trip),
		cmocka_unit_test(test_op_parse_refuses),
		cmocka_unit_test(test_actions),
		T(test_claim_once),
		T(test_takeover_needs_the_dead_claimant),
		T(test_results_by_origin),
		T(test_writers_in_turn),
	};
#undef T
	return cmocka_run_group_tests(tests, NULL, NULL);
}
