/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for the ingest writer thread (commits, its cache, a full queue, stalls that are gaps
 * in reception), the health facts after ingest, and an agent's identity. */
#include "ingest_fixture.h"

/* The ingest writer's callbacks, counted; done can hold the writer until released. */
struct waiter {
	pthread_mutex_t m;
	pthread_cond_t c;
	int queued, done, block, blocked;
};

static void w_queued(void *arg)
{
	((struct waiter *)arg)->queued++; /* under the writer's lock */
}

static void w_done(struct ingest_item *it, void *arg)
{
	struct waiter *w = arg;

	(void)it;
	pthread_mutex_lock(&w->m);
	w->done++;
	if (w->block) {
		w->blocked = 1;
		pthread_cond_broadcast(&w->c);
		while (w->block)
			pthread_cond_wait(&w->c, &w->m);
	}
	pthread_cond_broadcast(&w->c);
	pthread_mutex_unlock(&w->m);
}

static void w_wait(struct waiter *w, int done)
{
	pthread_mutex_lock(&w->m);
	while (w->done < done)
		pthread_cond_wait(&w->c, &w->m);
	pthread_mutex_unlock(&w->m);
}

/* The writer commits queued reports together and reports each one's own result. */
static void test_writer_commits(void **state)
{
	struct fx *f = *state;
	struct waiter w = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, 0 };
	struct ingest_report *r[6] = { parsed("w1", 2), parsed("w2", 2), parsed("w3", 2),
				       parsed("w4", 2), parsed("w1", 2), parsed("w5", 2) };
	struct ingest_item it[6];
	int64_t hist = 0, seen = 0;

	for (int i = 0; i < 6; i++)
		it[i] = (struct ingest_item){ .node_id = i == 5 ? 9999 : f->node, .report = r[i] };
	assert_int_equal(ingest_enqueue(&it[0], w_queued, w_done, &w), KILN_ENOTFOUND);
	assert_int_equal(w.queued, 0);
	assert_int_equal(ingest_writer_start(f->db, 8), 0);
	assert_int_equal(ingest_writer_start(f->db, 8), KILN_EBUSY);
	for (int i = 0; i < 6; i++)
		assert_int_equal(ingest_enqueue(&it[i], w_queued, w_done, &w), 0);
	w_wait(&w, 6);
	assert_int_equal(w.queued, 6);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(it[i].rc, 0);
		assert_int_equal(it[i].duplicate, 0);
	}
	assert_int_equal(it[4].rc, 0);
	assert_int_equal(it[4].duplicate, 1); /* w1 again */
	assert_true(it[5].rc < 0);            /* no such node: that item alone fails */
	assert_true(it[5].error[0] != '\0');
	ingest_writer_stop();
	assert_int_equal(ingest_enqueue(&it[0], w_queued, w_done, &w), KILN_ENOTFOUND);
	assert_int_equal(store_agent_counts(f->st, f->node, &hist, &seen), 0);
	assert_int_equal(hist, 4);
	assert_int_equal(seen, 4);
	for (int i = 0; i < 6; i++)
		ingest_report_free(r[i]);
}

/* The reports of one node stored, as the first 4 hex digits of their ids, by row id. */
static const char *history_order(struct fx *f, int64_t node, char *buf, size_t len)
{
	char sql[256];

	if (fx_pg())
		snprintf(sql, sizeof(sql), "SELECT string_agg(substr(report_id, 1, 4), ',' ORDER BY"
			 " id) FROM agent_history WHERE node_id = %lld", (long long)node);
	else
		snprintf(sql, sizeof(sql), "SELECT group_concat(substr(report_id, 1, 4), ',') FROM"
			 " (SELECT report_id FROM agent_history WHERE node_id = %lld ORDER BY id)",
			 (long long)node);
	return db_text(f, sql, buf, len);
}

/* On PostgreSQL the writer has several lanes: the reports of two nodes queued in turn are
 * each node's stored in the order they came. */
static void test_writer_node_order(void **state)
{
	struct fx *f = *state;
	struct waiter w = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, 0 };
	const char *ids[8] = { "a1", "b1", "a2", "b2", "a3", "b3", "a4", "b4" };
	struct ingest_report *r[8];
	struct ingest_item it[8];
	char buf[128];

	assert_int_equal(ingest_writer_start(f->db, 16), 0);
	for (int i = 0; i < 8; i++) {
		r[i] = parsed(ids[i], 2);
		it[i] = (struct ingest_item){ .node_id = i % 2 ? f->other : f->node, .report = r[i] };
		assert_int_equal(ingest_enqueue(&it[i], w_queued, w_done, &w), 0);
	}
	w_wait(&w, 8);
	ingest_writer_stop();
	for (int i = 0; i < 8; i++) {
		assert_int_equal(it[i].rc, 0);
		ingest_report_free(r[i]);
	}
	/* "a1" is 6131..., "b1" 6231... */
	assert_string_equal(history_order(f, f->node, buf, sizeof(buf)), "6131,6132,6133,6134");
	assert_string_equal(history_order(f, f->other, buf, sizeof(buf)), "6231,6232,6233,6234");
}

/*
 * A report of f->node is stored and its lane held in the answer (done() blocks); a second
 * report ("second", of node b) is queued then. Returns whether that one was answered within
 * wait_s while the first lane was held; its result in *rc once all is released.
 */
static int answered_while_held(struct fx *f, int64_t b, const char *second, int wait_s,
			       int *rc)
{
	struct waiter wa = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 1, 0 };
	struct waiter wb = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, 0 };
	struct ingest_report *ra = parsed("n1", 2), *rb = parsed(second, 2);
	struct ingest_item ia = { .node_id = f->node, .report = ra };
	struct ingest_item ib = { .node_id = b, .report = rb };
	struct timespec until;
	int early;

	assert_int_equal(ingest_writer_start(f->db, 8), 0);
	assert_int_equal(ingest_enqueue(&ia, w_queued, w_done, &wa), 0);
	pthread_mutex_lock(&wa.m);
	while (!wa.blocked)
		pthread_cond_wait(&wa.c, &wa.m);
	pthread_mutex_unlock(&wa.m);
	assert_int_equal(ingest_enqueue(&ib, w_queued, w_done, &wb), 0);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += wait_s;
	pthread_mutex_lock(&wb.m);
	while (wb.done < 1 && pthread_cond_timedwait(&wb.c, &wb.m, &until) == 0)
		;
	early = wb.done;
	pthread_mutex_unlock(&wb.m);
	pthread_mutex_lock(&wa.m);
	wa.block = 0;
	pthread_cond_broadcast(&wa.c);
	pthread_mutex_unlock(&wa.m);
	w_wait(&wb, 1);
	ingest_writer_stop();
	*rc = ib.rc;
	ingest_report_free(ra);
	ingest_report_free(rb);
	return early;
}

/* A node's next report waits for its lane: while the lane still answers the first one, the
 * second is not stored by another lane. */
static void test_writer_node_waits_its_lane(void **state)
{
	struct fx *f = *state;
	char buf[64];
	int rc = -1;

	assert_int_equal(answered_while_held(f, f->node, "n2", 1, &rc), 0);
	assert_int_equal(rc, 0);
	assert_string_equal(history_order(f, f->node, buf, sizeof(buf)), "6e31,6e32");
}

/* On PostgreSQL a node's report held up in its lane (its answer not taken yet) does not hold
 * up another node's, stored by another lane meanwhile. */
static void test_writer_lanes_apart(void **state)
{
	struct fx *f = *state;
	int rc = -1;

	if (!fx_pg()) {
		print_message("note: on SQLite one writer stores every node's reports in turn: "
			      "only PostgreSQL's lanes are tested here (set KILN_TEST_PG)\n");
		skip();
	}
	/* the fixture's two nodes are ids 1 and 2: two lanes (INGEST_LANES_PG of them) */
	assert_int_equal(answered_while_held(f, f->other, "n3", 10, &rc), 1);
	assert_int_equal(rc, 0);
}

/* The writer keeps each node's state in memory: a state written meanwhile by another handle
 * (here one GPU instead of two) is noticed, not compared with the kept one. */
static void test_writer_cache_stale(void **state)
{
	struct fx *f = *state;
	struct waiter w = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, 0 };
	struct ingest_report *r[3] = { parsed("k1", 2), parsed("k2", 1), parsed("k3", 2) };
	struct ingest_item it[2];
	struct agent_state s = { 0 };
	struct agent_gpu *g = NULL;
	size_t ng = 0;
	int dup = 1;

	it[0] = (struct ingest_item){ .node_id = f->node, .report = r[0] };
	it[1] = (struct ingest_item){ .node_id = f->node, .report = r[2] };
	assert_int_equal(ingest_writer_start(f->db, 8), 0);
	assert_int_equal(ingest_enqueue(&it[0], w_queued, w_done, &w), 0);
	w_wait(&w, 1);
	assert_int_equal(it[0].rc, 0);
	assert_int_equal(ingest_report_store(f->st, &dup, f->node, r[1]), 0);
	assert_int_equal(dup, 0);
	assert_int_equal(ingest_enqueue(&it[1], w_queued, w_done, &w), 0);
	w_wait(&w, 2);
	assert_int_equal(it[1].rc, 0);
	ingest_writer_stop();
	assert_int_equal(store_agent_state_get(f->st, &s, f->node, 0), 0);
	assert_string_equal(s.report_id, rid("k3"));
	assert_int_equal(s.gpu_count, 2);
	agent_state_clear(&s);
	assert_int_equal(store_agent_gpus_get(f->st, &g, &ng, f->node), 0);
	assert_int_equal(ng, 2);
	agent_gpu_list_free(g, ng);
	for (int i = 0; i < 3; i++)
		ingest_report_free(r[i]);
}

/* A full queue refuses (KILN_EBUSY, no callback); stopping commits and answers what waits. */
static void test_writer_queue_full_and_stop(void **state)
{
	struct fx *f = *state;
	struct waiter w = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 1, 0 };
	struct ingest_report *r[4] = { parsed("q1", 1), parsed("q2", 1), parsed("q3", 1),
				       parsed("q4", 1) };
	struct ingest_item it[4];
	int64_t hist = 0, seen = 0;

	for (int i = 0; i < 4; i++)
		it[i] = (struct ingest_item){ .node_id = f->node, .report = r[i] };
	assert_int_equal(ingest_writer_start(f->db, 1), 0);
	assert_int_equal(ingest_enqueue(&it[0], w_queued, w_done, &w), 0);
	/* The writer committed q1 and is held in its callback: q2 waits, q3 finds it full. */
	pthread_mutex_lock(&w.m);
	while (!w.blocked)
		pthread_cond_wait(&w.c, &w.m);
	pthread_mutex_unlock(&w.m);
	assert_int_equal(ingest_enqueue(&it[1], w_queued, w_done, &w), 0);
	assert_int_equal(ingest_enqueue(&it[2], w_queued, w_done, &w), KILN_EBUSY);
	assert_int_equal(w.queued, 2);
	pthread_mutex_lock(&w.m);
	w.block = 0;
	pthread_cond_broadcast(&w.c);
	pthread_mutex_unlock(&w.m);
	w_wait(&w, 2);
	assert_int_equal(ingest_enqueue(&it[3], w_queued, w_done, &w), 0);
	ingest_writer_stop();
	assert_int_equal(w.done, 3);
	assert_int_equal(it[3].rc, 0);
	assert_int_equal(store_agent_counts(f->st, f->node, &hist, &seen), 0);
	assert_int_equal(hist, 3);
	assert_int_equal(seen, 3);
	for (int i = 0; i < 4; i++)
		ingest_report_free(r[i]);
}

/* Holds the store's write lock from another connection, as another kilnd would: SQLite's
 * BEGIN IMMEDIATE, or the PostgreSQL backend's advisory lock in a transaction. */
static void lock_hold(struct fx *f, sqlite3 **db, PGconn **pg)
{
	if (fx_pg()) {
		PGresult *res;

		*pg = PQconnectdb(f->db + strlen(STORE_PG_PREFIX));
		res = PQexec(*pg, "BEGIN; SELECT pg_advisory_xact_lock(" STORE_PG_WRITER_LOCK ")");
		assert_int_equal(PQresultStatus(res), PGRES_TUPLES_OK);
		PQclear(res);
		return;
	}
	assert_int_equal(sqlite3_open(f->db, db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(*db, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
}

static void lock_release(sqlite3 *db, PGconn *pg)
{
	if (pg) {
		PQclear(PQexec(pg, "COMMIT"));
		PQfinish(pg);
		return;
	}
	assert_int_equal(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
}

/* kilnd not receiving is a gap in every agent's silence (receive_gap.h): a writer held on
 * the store's lock past RECEIVE_GAP_STALL_S counts as one while it waits and marks its end;
 * a report refused for a full queue marks its moment. */
static void test_writer_stall_is_a_gap(void **state)
{
	struct fx *f = *state;
	struct waiter w = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, 0 };
	struct ingest_report *r[3] = { parsed("g1", 1), parsed("g2", 1), parsed("g3", 1) };
	struct ingest_item it[3];
	sqlite3 *locker = NULL;
	PGconn *pg_locker = NULL;
	int64_t before;

	receive_gap_reset();
	for (int i = 0; i < 3; i++)
		it[i] = (struct ingest_item){ .node_id = f->node, .report = r[i] };
	assert_int_equal(ingest_writer_start(f->db, 1), 0);
	lock_hold(f, &locker, &pg_locker);
	assert_int_equal(receive_gap_last(time(NULL)), 0);
	assert_int_equal(ingest_enqueue(&it[0], w_queued, w_done, &w), 0);
	sleep(RECEIVE_GAP_STALL_S + 1); /* under the store's 5 s busy timeout */
	assert_int_equal(receive_gap_last(time(NULL) + 1), time(NULL) + 1); /* stalled: now */
	assert_int_equal(ingest_enqueue(&it[1], w_queued, w_done, &w), 0);
	before = time(NULL);
	assert_int_equal(ingest_enqueue(&it[2], w_queued, w_done, &w), KILN_EBUSY);
	lock_release(locker, pg_locker);
	w_wait(&w, 2);
	assert_int_equal(it[0].rc, 0);
	/* over: the last moment is the stall's end (or the refusal), no longer "now" */
	assert_true(receive_gap_last(time(NULL) + 100) >= before);
	assert_true(receive_gap_last(time(NULL) + 100) <= time(NULL));
	ingest_writer_stop();
	for (int i = 0; i < 3; i++)
		ingest_report_free(r[i]);
	receive_gap_reset();
}

/* The listener's connection count: full at the limit, and the moment it has room again is
 * the last one it could not receive. */
static void test_listener_full_is_a_gap(void **state)
{
	(void)state;
	receive_gap_reset();
	receive_gap_connections(1, 2, 100);
	assert_int_equal(receive_gap_last(150), 0);
	receive_gap_connections(1, 2, 160);
	assert_int_equal(receive_gap_last(170), 170); /* full: now */
	receive_gap_connections(-1, 2, 180);
	assert_int_equal(receive_gap_last(190), 180);
	receive_gap_mark(120); /* never backwards */
	assert_int_equal(receive_gap_last(200), 180);
	receive_gap_reset();
}

/* The waiting items' bytes are capped too: past the cap KILN_EBUSY (no callback), one item
 * alone is always taken, and the bytes count down as the writer takes items. */
static void test_writer_queue_bytes_cap(void **state)
{
	struct fx *f = *state;
	struct waiter w = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 1, 0 };
	struct ingest_report *r[5] = { parsed("b1", 1), parsed("b2", 1), parsed("b3", 1),
				       parsed("b4", 1), parsed("b5", 1) };
	size_t bytes[5] = { 600, 1500, 600, 300, 600 };
	struct ingest_item it[5];
	int64_t hist = 0, seen = 0;

	for (int i = 0; i < 5; i++)
		it[i] = (struct ingest_item){ .node_id = f->node, .report = r[i], .bytes = bytes[i] };
	assert_int_equal(ingest_writer_start(f->db, 8), 0);
	ingest_writer_bytes_max_set(1000);
	assert_int_equal(ingest_enqueue(&it[0], w_queued, w_done, &w), 0);
	/* b1 is committed and the writer held in its callback: b2 (over the cap alone) waits
	 * alone, b3 would pass the cap, b4 fits beside b2 (1,500 + 300 > 1,000: refused too). */
	pthread_mutex_lock(&w.m);
	while (!w.blocked)
		pthread_cond_wait(&w.c, &w.m);
	pthread_mutex_unlock(&w.m);
	assert_int_equal(ingest_enqueue(&it[1], w_queued, w_done, &w), 0);
	assert_int_equal(ingest_enqueue(&it[2], w_queued, w_done, &w), KILN_EBUSY);
	assert_non_null(strstr(kiln_error_last(), "1500 bytes"));
	assert_int_equal(ingest_enqueue(&it[3], w_queued, w_done, &w), KILN_EBUSY);
	assert_int_equal(w.queued, 2);
	pthread_mutex_lock(&w.m);
	w.block = 0;
	pthread_cond_broadcast(&w.c);
	pthread_mutex_unlock(&w.m);
	w_wait(&w, 2);
	/* Nothing waits now: 600 + 300 fit under the cap. */
	assert_int_equal(ingest_enqueue(&it[2], w_queued, w_done, &w), 0);
	assert_int_equal(ingest_enqueue(&it[3], w_queued, w_done, &w), 0);
	w_wait(&w, 4);
	ingest_writer_stop();
	/* A new writer starts with the default cap. */
	assert_int_equal(ingest_writer_start(f->db, 8), 0);
	it[4].bytes = INGEST_QUEUE_BYTES_MAX / 2;
	w.block = 1;
	w.blocked = 0;
	assert_int_equal(ingest_enqueue(&it[4], w_queued, w_done, &w), 0);
	pthread_mutex_lock(&w.m);
	while (!w.blocked)
		pthread_cond_wait(&w.c, &w.m);
	w.block = 0;
	pthread_cond_broadcast(&w.c);
	pthread_mutex_unlock(&w.m);
	ingest_writer_stop();
	assert_int_equal(w.done, 5);
	for (int i = 0; i < 5; i++)
		assert_int_equal(it[i].rc, 0);
	assert_int_equal(store_agent_counts(f->st, f->node, &hist, &seen), 0);
	assert_int_equal(hist, 5);
	assert_int_equal(seen, 5);
	for (int i = 0; i < 5; i++)
		ingest_report_free(r[i]);
}

/* What the health sweep reads after ingest: the hottest GPU and the utilisation from the
 * state's summary, the memory and process lists from the report (the GPU rows keep none). */
static void test_health_facts_after_ingest(void **state)
{
	struct fx *f = *state;
	struct health_config cfg;
	struct health_facts hf;
	struct health_sources src;
	struct node n = { 0 };
	json_t *r = mkreport("r1", 4);

	health_config_defaults(&cfg);
	n.id = f->node;
	n.name = "gpu01";
	json_object_set_new(gpu(r, 2), "temperature_c", json_real(93.5));
	for (size_t i = 0; i < 4; i++)
		json_object_set_new(gpu(r, i), "utilization_gpu_pct", json_real(2.0 + (double)i));
	set_path(r, "host", "cpu_iowait_pct", json_real(35.0));
	assert_int_equal(ingest(f, f->node, r, NULL), 0);
	assert_int_equal(health_facts_gather(&hf, &src, f->st, &n, NULL, 0, fake_now, &cfg), 0);
	assert_true(hf.hottest_gpu_c > 93.4 && hf.hottest_gpu_c < 93.6);
	assert_int_equal(hf.starved_now, 1); /* 3.5 % average, 35 % iowait, memory held */
	health_sources_clear(&src);

	/* The same numbers, but every GPU says it runs no process: not starved. */
	fake_now += 30;
	r = mkreport("r2", 4);
	for (size_t i = 0; i < 4; i++) {
		json_object_set_new(gpu(r, i), "utilization_gpu_pct", json_real(2.0));
		json_object_set_new(gpu(r, i), "processes", json_array());
	}
	set_path(r, "host", "cpu_iowait_pct", json_real(35.0));
	assert_int_equal(ingest(f, f->node, r, NULL), 0);
	assert_int_equal(health_facts_gather(&hf, &src, f->st, &n, NULL, 0, fake_now, &cfg), 0);
	assert_true(hf.hottest_gpu_c > 42.9 && hf.hottest_gpu_c < 43.1); /* 40 + 3 */
	assert_int_equal(hf.starved_now, 0);
	health_sources_clear(&src);

	/* Busy GPUs: not starved whatever the iowait. */
	fake_now += 30;
	r = mkreport("r3", 4);
	set_path(r, "host", "cpu_iowait_pct", json_real(35.0));
	assert_int_equal(ingest(f, f->node, r, NULL), 0); /* 12 % each */
	assert_int_equal(health_facts_gather(&hf, &src, f->st, &n, NULL, 0, fake_now, &cfg), 0);
	assert_int_equal(hf.starved_now, 0);
	health_sources_clear(&src);
}

/* A first report with a GPU's uncorrected ECC and pending remap: the gathered facts carry
 * that GPU, and its verdict is critical and names it. */
static void test_health_gpu_facts_first_report(void **state)
{
	struct fx *f = *state;
	struct health_config cfg;
	struct health_facts hf;
	struct health_sources src;
	struct health_result res;
	struct node n = { 0 };

	health_config_defaults(&cfg);
	n.id = f->node;
	n.name = "gpu01";
	assert_int_equal(ingest(f, f->node, mkreport_bad_gpu("r1", 2), NULL), 0);
	assert_int_equal(health_facts_gather(&hf, &src, f->st, &n, NULL, 0, fake_now, &cfg), 0);
	assert_int_equal(hf.ngpus, 4);
	assert_int_equal(hf.gpus[2].index, 2);
	assert_string_equal(hf.gpus[2].pci_bus_id, "00000000:38:00.0");
	assert_int_equal(hf.gpus[2].ecc_volatile, 2);
	assert_int_equal(hf.gpus[2].remap_pending, 1);
	health_evaluate(&res, &hf, &cfg);
	assert_int_equal(res.level, HEALTH_CRITICAL);
	assert_int_equal(res.nreasons, 1);
	assert_string_equal(res.reasons[0],
			    "gpu 2 (00000000:38:00.0): 2 uncorrected ECC errors, page retirement and"
			    " row remap pending (reset needed), 1 row remapped [reboot may clear it]");
	health_sources_clear(&src);
}

/* r as another machine's report: its host name, machine id, serial and boot. */
static json_t *foreign(json_t *r, const char *mid)
{
	set_path(r, "host", "hostname", json_string("gpu02"));
	set_path(r, "host", "machine_id", json_string(mid));
	set_path(r, "host", "dmi_serial", json_string("SN-0002"));
	set_path(r, "host", "boot_id", json_string("boot-other"));
	return r;
}

static int64_t count_rows(struct fx *f, const char *sql)
{
	char buf[32];

	return strtoll(db_text(f, sql, buf, sizeof(buf)), NULL, 10);
}

/* Another host's report on gpu01's token: refused, nothing of it stored, one event for a
 * stream of them; an admin's acceptance lets the very same report in, and it binds. */
static void test_identity_refused(void **state)
{
	struct fx *f = *state;
	struct ingest_item it = { 0 }, *items[1] = { &it };
	struct ingest_report *ir = NULL;
	struct agent_state a = { 0 };
	json_t *r;
	char buf[512];
	int dup = -1;

	assert_int_equal(ingest(f, f->node, mkreport("r1", 2), NULL), 0);
	/* through a batch, as the writer does: the item names the field */
	r = foreign(mkreport("r2", 2), "ffff");
	assert_int_equal(ingest_report_parse(&ir, r, NULL, 0), 0);
	json_decref(r);
	it.node_id = f->node;
	it.report = ir;
	assert_int_equal(ingest_batch(f->st, items, 1), 0);
	assert_int_equal(it.rc, KILN_EIDENTITY);
	assert_string_equal(it.field, "host.dmi_serial");
	assert_non_null(strstr(it.error, "host.machine_id '0123456789abcdef0123456789abcdef' "
				      "(stored) vs 'ffff' (reported)"));
	assert_non_null(strstr(it.error, "host.hostname 'gpu01' (stored) vs 'gpu02' (reported)"));
	assert_non_null(strstr(it.error, "kiln agent accept-identity gpu01"));
	ingest_report_free(ir);
	/* nothing stored: state, history, GPUs, report id, reboot */
	assert_int_equal(store_agent_state_get(f->st, &a, f->node, 0), 0);
	assert_string_equal(a.hostname, "gpu01");
	assert_string_equal(a.report_id, rid("r1"));
	agent_state_clear(&a);
	assert_int_equal(count_rows(f, "SELECT count(*) FROM agent_history"), 1);
	snprintf(buf, sizeof(buf), "SELECT count(*) FROM agent_reports_seen WHERE report_id = '%s'",
		 rid("r2"));
	assert_int_equal(count_rows(f, buf), 0);
	assert_int_equal(count_events(f, "reboot"), 0);
	assert_int_equal(count_events(f, "identity"), 1);
	assert_non_null(strstr(last_message(f, "identity", buf, sizeof(buf)),
			       "agent identity mismatch: host.dmi_serial 'SN-0001' (stored) vs "
			       "'SN-0002' (reported)"));
	/* the same host again: refused, no second event; another mismatch is another event */
	fake_now += 30;
	assert_int_equal(ingest(f, f->node, foreign(mkreport("r3", 2), "ffff"), NULL),
			 KILN_EIDENTITY);
	assert_int_equal(count_events(f, "identity"), 1);
	assert_int_equal(count_rows(f, "SELECT refused FROM agent_identity"), 2);
	fake_now += 30;
	assert_int_equal(ingest(f, f->node, foreign(mkreport("r4", 2), "eeee"), NULL),
			 KILN_EIDENTITY);
	assert_int_equal(count_events(f, "identity"), 2);
	/* the node's own agent still reports (and the refusal stays for an admin to see) */
	assert_int_equal(ingest(f, f->node, mkreport("r5", 2), NULL), 0);
	assert_int_equal(count_rows(f, "SELECT count(*) FROM agent_identity WHERE mismatch IS NOT NULL"), 1);
	/* accepted: the refused report itself is taken now (its id was not kept), and binds */
	assert_int_equal(store_agent_identity_accept(f->st, f->node, "alice"), 0);
	assert_int_equal(ingest(f, f->node, foreign(mkreport("r2", 2), "ffff"), &dup), 0);
	assert_int_equal(dup, 0);
	assert_int_equal(store_agent_state_get(f->st, &a, f->node, 0), 0);
	assert_string_equal(a.machine_id, "ffff");
	agent_state_clear(&a);
	assert_int_equal(count_rows(f, "SELECT count(*) FROM agent_identity WHERE mismatch IS NOT NULL"
				    " OR accept_next = 1"), 0);
	assert_int_equal(ingest(f, f->node, mkreport("r6", 2), NULL), KILN_EIDENTITY);
	/* an old report resent (its answer was lost) is a duplicate, not a refusal: it must not
	 * block the agent's spool */
	assert_int_equal(ingest(f, f->node, mkreport("r1", 2), &dup), 0);
	assert_int_equal(dup, 1);
}

/* The report's DMI serial is compared with the BMC's, unless several nodes share that. */
static void test_identity_bmc_serial(void **state)
{
	struct fx *f = *state;

	assert_int_equal(store_node_bmc_serial_set(f->st, "gpu01", "SN-BMC1"), 0);
	assert_int_equal(ingest(f, f->node, mkreport("r1", 1), NULL), KILN_EIDENTITY);
	assert_int_equal(count_rows(f, "SELECT count(*) FROM node_agent_state"), 0);
	/* one simulator tree behind both BMCs: the serial identifies no machine */
	assert_int_equal(store_node_bmc_serial_set(f->st, "gpu02", "SN-BMC1"), 0);
	assert_int_equal(ingest(f, f->node, mkreport("r2", 1), NULL), 0);
}

/* gpu01's agent reports with gpu02's token: gpu02 refuses it, and gpu01 is noted as
 * reporting elsewhere (its silence is no hang) until its own agent reports again. */
static void test_identity_elsewhere(void **state)
{
	struct fx *f = *state;
	json_t *b = mkreport("b1", 1);
	char buf[64];

	assert_int_equal(ingest(f, f->node, mkreport("a1", 1), NULL), 0);
	set_path(b, "host", "hostname", json_string("gpu02"));
	set_path(b, "host", "machine_id", json_string("bbbb"));
	set_path(b, "host", "dmi_serial", json_string("SN-0002"));
	assert_int_equal(ingest(f, f->other, b, NULL), 0);
	assert_int_equal(ingest(f, f->other, mkreport("a2", 1), NULL), KILN_EIDENTITY);
	assert_string_equal(db_text(f, "SELECT elsewhere_node FROM agent_identity i JOIN nodes n"
				    " ON n.id = i.node_id WHERE n.name = 'gpu01'", buf, sizeof(buf)),
			    "gpu02");
	/* gpu01's own token refused a foreign host meanwhile: that refusal stays */
	assert_int_equal(ingest(f, f->node, foreign(mkreport("x1", 1), "ffff"), NULL),
			 KILN_EIDENTITY);
	assert_int_equal(ingest(f, f->node, mkreport("a3", 1), NULL), 0);
	assert_string_equal(db_text(f, "SELECT coalesce(elsewhere_node, '-') || ' ' ||"
				    " coalesce(mismatch_field, '-') FROM agent_identity i JOIN nodes n"
				    " ON n.id = i.node_id WHERE n.name = 'gpu01'", buf, sizeof(buf)),
			    "- host.dmi_serial");
}

/* A report of the same machine reinstalled: another machine id and boot. */
static json_t *reinstalled(const char *id, const char *mid, const char *boot)
{
	json_t *r = mkreport(id, 1);

	set_path(r, "host", "machine_id", json_string(mid));
	set_path(r, "host", "boot_id", json_string(boot));
	return r;
}

/* A running reinstall job takes one new machine id (with a new boot) without an admin. */
static void test_identity_reinstall(void **state)
{
	struct fx *f = *state;
	struct job j = { 0 };

	assert_int_equal(ingest(f, f->node, mkreport("r1", 1), NULL), 0);
	j.node_id = f->node;
	j.image = "ubuntu";
	j.image_kind = "pxe";
	j.created_by = "alice";
	assert_int_equal(store_job_insert(f->st, &j), 0);
	/* queued, not running yet */
	assert_int_equal(ingest(f, f->node, reinstalled("r2", "1111", "boot-2"), NULL),
			 KILN_EIDENTITY);
	j.state = "running";
	j.step = "wait_boot";
	assert_int_equal(store_job_update(f->st, &j), 0);
	assert_int_equal(ingest(f, f->node, reinstalled("r3", "1111", "boot-2"), NULL), 0);
	/* its one change is spent: the next machine id is refused */
	assert_int_equal(ingest(f, f->node, reinstalled("r4", "2222", "boot-3"), NULL),
			 KILN_EIDENTITY);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)
	const struct CMUnitTest tests[] = {
		T(test_writer_commits),
		T(test_writer_node_order),
		T(test_writer_node_waits_its_lane),
		T(test_writer_lanes_apart),
		T(test_writer_queue_full_and_stop),
		T(test_writer_stall_is_a_gap),
		T(test_listener_full_is_a_gap),
		T(test_writer_queue_bytes_cap),
		T(test_writer_cache_stale),
		T(test_health_facts_after_ingest),
		T(test_health_gpu_facts_first_report),
		T(test_identity_refused),
		T(test_identity_bmc_serial),
		T(test_identity_elsewhere),
		T(test_identity_reinstall),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
