/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests for how the poller stores its readings (server/fleet/poller.c, issue 35): under each
 * node's own lock (store_begin_nodes), so that on PostgreSQL another kilnd writing other
 * nodes does not hold them up and one writing the same node goes first; every reading of a
 * batch larger than one transaction is stored; a reading of a node deleted meanwhile loses
 * no other node's state; a reading is stored while a long health sweep goes on. On a real store (store_fixture.h: SQLite, or PostgreSQL with
 * KILN_TEST_PG); the poller runs without a BMC engine and is fed live readings.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "fleet/poller.h"
#include "kiln/error.h"
#include "store_fixture.h"

static struct poller *poller_up(struct fx *f)
{
	struct poller_options opt = { .db_path = f->db };
	struct poller *p = NULL;

	poller_config_defaults(&opt.cfg);
	opt.cfg.health_every_s = 3600; /* one health sweep, at the start */
	assert_int_equal(poller_start(&p, &opt), 0);
	return p;
}

/* A live power reading of node, as an operator's call hands it to the poller. */
static void observe(struct poller *p, int64_t node, const char *power)
{
	json_t *data = json_pack("{s:s}", "power", power);

	assert_non_null(data);
	poller_observe(p, node, BMC_OP_POWER_GET, data);
	json_decref(data);
}

/* Whether the store shows node's power as power now. */
static int power_is(struct store *st, int64_t node, const char *power)
{
	struct fleet_state s;
	int same;

	if (store_fleet_state_get(st, &s, node) < 0)
		return 0;
	same = strcmp(s.power, power) == 0;
	fleet_state_clear(&s);
	return same;
}

/* Waits (at most secs) until node's stored power is power; when it was, or -1. */
static double power_wait(struct store *st, int64_t node, const char *power, double secs)
{
	double until = fx_now_s() + secs;

	do {
		if (power_is(st, node, power))
			return fx_now_s();
		usleep(20 * 1000);
	} while (fx_now_s() < until);
	return -1;
}

/* Waits until the poller's first health sweep stored node's verdict: the sweep writes each
 * node under its lock, so a test that holds one waits for the sweep to be over first. */
static void health_wait(struct store *st, int64_t node)
{
	double until = fx_now_s() + 10;
	struct fleet_state s;
	int64_t t = 0;

	while (t == 0 && fx_now_s() < until) {
		if (store_fleet_state_get(st, &s, node) == 0) {
			t = s.health_time;
			fleet_state_clear(&s);
		}
		if (t == 0)
			usleep(20 * 1000);
	}
	assert_true(t > 0);
}

/* A second kilnd's transaction, in a thread: begins (node's, or every writer's when node is
 * 0), holds it open for hold_s, commits. */
struct other {
	const char *db;
	int64_t node;
	double hold_s;
	int rc;
	double began, committed;
};

static void *other_main(void *arg)
{
	struct other *o = arg;
	struct store *st = NULL;

	if ((o->rc = store_open(&st, o->db)) < 0)
		return NULL;
	o->rc = o->node ? store_begin_nodes(st, &o->node, 1) : store_begin(st);
	o->began = fx_now_s();
	if (o->rc == 0) {
		usleep((useconds_t)(o->hold_s * 1e6));
		o->committed = fx_now_s();
		o->rc = store_commit(st);
	}
	store_close(st);
	return NULL;
}

static void other_start(pthread_t *t, struct other *o)
{
	assert_int_equal(pthread_create(t, NULL, other_main, o), 0);
	while (o->began == 0 && o->rc == 0)
		usleep(10 * 1000);
	assert_int_equal(o->rc, 0);
}

/* While another kilnd holds node b's lock (store_begin_nodes), the poller stores node a's
 * reading at once, and b's only after the other one committed. Before issue 35 a batch of
 * readings took the fleet-wide lock (store_begin) and waited for every node writer. */
static void test_readings_beside_another_node_writer(void **state)
{
	struct fx *f = *state;
	int64_t a = fx_node_add(f->st, "gpu01"), b = fx_node_add(f->st, "gpu02");
	struct other o = { .db = f->db, .node = b, .hold_s = 2.5 };
	struct poller *p;
	double seen_a, seen_b;
	pthread_t t;

	if (!fx_pg()) {
		print_message("note: SQLite writes one transaction at a time: only PostgreSQL's "
			      "per-node locks are tested here (set KILN_TEST_PG)\n");
		skip();
	}
	p = poller_up(f);
	observe(p, a, "off");
	assert_true(power_wait(f->st, a, "off", 10) > 0);
	health_wait(f->st, b); /* the poller is past its first sweep */
	other_start(&t, &o);
	observe(p, a, "on");
	seen_a = power_wait(f->st, a, "on", 10);
	observe(p, b, "on"); /* apart: a batch waits for every node lock it takes */
	seen_b = power_wait(f->st, b, "on", 10);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(o.rc, 0);
	assert_true(seen_a > 0 && seen_b > 0);
	/* a did not wait for the other transaction (the lock timeout is 5 s); b did */
	assert_true(seen_a < o.committed);
	assert_true(seen_a - o.began < 1.5);
	assert_true(seen_b >= o.committed);
	poller_stop(p);
}

/* More readings at once than one transaction takes (COMPLETIONS_TX): every one is stored. */
static void test_many_readings_all_stored(void **state)
{
	struct fx *f = *state;
	enum { N = 300 };
	int64_t ids[N];
	struct other o = { .db = f->db, .node = 0, .hold_s = 0.5 };
	struct poller *p;
	pthread_t t;
	char name[32];

	assert_int_equal(store_begin(f->st), 0);
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "n%03d", i);
		ids[i] = fx_node_add(f->st, name);
	}
	assert_int_equal(store_commit(f->st), 0);
	p = poller_up(f);
	observe(p, ids[0], "off");
	assert_true(power_wait(f->st, ids[0], "off", 10) > 0);
	/* a fleet-wide writer holds the poller up meanwhile: the readings come as one batch */
	other_start(&t, &o);
	for (int i = 0; i < N; i++)
		observe(p, ids[i], "on");
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(o.rc, 0);
	for (int i = 0; i < N; i++)
		assert_true(power_wait(f->st, ids[i], "on", 10) > 0);
	poller_stop(p);
}

/* A reading of a node deleted since the poller read the node list fails alone: the other
 * readings of its batch are stored (on PostgreSQL the batch's transaction fails, and each
 * node's state is written again on its own). */
static void test_deleted_node_fails_alone(void **state)
{
	struct fx *f = *state;
	int64_t a = fx_node_add(f->st, "gpu01"), b = fx_node_add(f->st, "gpu02");
	struct other o = { .db = f->db, .node = 0, .hold_s = 0.5 };
	struct poller *p;
	pthread_t t;

	p = poller_up(f);
	observe(p, a, "off");
	observe(p, b, "off");
	assert_true(power_wait(f->st, a, "off", 10) > 0);
	assert_true(power_wait(f->st, b, "off", 10) > 0);
	assert_int_equal(store_node_delete(f->st, "gpu02"), 0);
	other_start(&t, &o);
	observe(p, b, "on"); /* its slot is still there until the next refresh */
	observe(p, a, "on");
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_true(power_wait(f->st, a, "on", 10) > 0);
	poller_stop(p);
}

/* Node's health_time as stored (0: not judged yet, or no state). */
static int64_t health_time(struct store *st, int64_t node)
{
	struct fleet_state s;
	int64_t t;

	if (store_fleet_state_get(st, &s, node) < 0)
		return 0;
	t = s.health_time;
	fleet_state_clear(&s);
	return t;
}

/* A reading that comes back while the health sweep judges thousands of nodes is stored
 * before the sweep ends (poller_work between its slices): the sweep's reads, several a node,
 * take seconds on PostgreSQL, and before issue 35 the poller's one thread stored nothing
 * and sent no poll meanwhile. */
static void test_readings_during_health_sweep(void **state)
{
	struct fx *f = *state;
	enum { N = 3000 };
	int64_t first = 0, last = 0, reader;
	struct poller *p;
	double seen;
	char name[32];

	assert_int_equal(store_begin(f->st), 0);
	reader = fx_node_add(f->st, "a-reader"); /* judged in the sweep's first slice */
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "n%04d", i);
		last = fx_node_add(f->st, name);
		if (i == 0)
			first = last;
	}
	assert_int_equal(store_commit(f->st), 0);
	p = poller_up(f); /* its one health sweep starts at once */
	health_wait(f->st, first);
	observe(p, reader, "on");
	seen = power_wait(f->st, reader, "on", 60);
	assert_true(seen > 0);
	/* the sweep had not reached the last node when the reading was stored */
	assert_int_equal(health_time(f->st, last), 0);
	poller_stop(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_readings_beside_another_node_writer, fx_setup,
						fx_teardown),
		cmocka_unit_test_setup_teardown(test_many_readings_all_stored, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_deleted_node_fails_alone, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_readings_during_health_sweep, fx_setup,
						fx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
