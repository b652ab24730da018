/* SPDX-License-Identifier: Apache-2.0 */
/* What the ingest tests share: a store with two nodes and a fake clock, reports built in
 * JSON, ingest through a batch of one, events counted. */
#ifndef KILN_TEST_INGEST_FIXTURE_H
#define KILN_TEST_INGEST_FIXTURE_H
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "health/health_facts.h"
#include "agents/ingest.h"
#include "agents/receive_gap.h"
#include "kiln/error.h"
#include "store/store.h"
#include "store/store_internal.h"
#include "store_db.h"

struct fx {
	char dir[64];
	char db[FX_TARGET_MAX];
	struct store *st;
	int64_t node; /* "gpu01" */
	int64_t other; /* "gpu02" */
};

static int64_t fake_now = 1700000000;

static inline int64_t fake_clock(void)
{
	return fake_now;
}

static inline int64_t add_node(struct store *st, const char *name)
{
	struct node n = { 0 };

	n.name = (char *)name;
	n.ipmi_cipher = 3;
	assert_int_equal(store_node_insert(st, &n), 0);
	return n.id;
}

static inline int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	fx_db_make(f->dir, sizeof(f->dir), f->db, sizeof(f->db), "kiln-ingest");
	assert_int_equal(store_open(&f->st, f->db), 0);
	fake_now = 1700000000;
	store_clock_set(f->st, fake_clock);
	f->node = add_node(f->st, "gpu01");
	f->other = add_node(f->st, "gpu02");
	ingest_retention_set(INGEST_RETENTION_DEFAULT_S);
	*state = f;
	return 0;
}

static inline int fx_teardown(void **state)
{
	struct fx *f = *state;

	store_close(f->st);
	fx_db_remove(f->dir, f->db);
	free(f);
	return 0;
}

/* The schema's report_id for a test's short label ("r1"): the label's bytes in hex, padded with
 * zeros to 32 digits. A few rotating buffers, so one expression may hold several. */
static const char *rid(const char *label)
{
	static char ring[8][33];
	static unsigned next;
	char *out = ring[next++ % 8];
	size_t i;

	assert_true(strlen(label) <= 16);
	memset(out, '0', 32);
	out[32] = '\0';
	for (i = 0; label[i]; i++) {
		static const char hex[] = "0123456789abcdef";

		out[2 * i] = hex[(unsigned char)label[i] >> 4];
		out[2 * i + 1] = hex[(unsigned char)label[i] & 15];
	}
	return out;
}

/* A report with ngpus H100s, as the agent sends it; the caller changes what it tests. */
static inline json_t *mkreport(const char *id, int ngpus)
{
	json_t *gpus = json_array(), *r;

	assert_non_null(gpus);
	for (int i = 0; i < ngpus; i++) {
		char uuid[64], bus[32];

		snprintf(uuid, sizeof(uuid), "GPU-0000000%d-aaaa-bbbb-cccc-dddddddddddd", i);
		snprintf(bus, sizeof(bus), "00000000:%02X:00.0", 0x18 + i * 0x10);
		assert_int_equal(json_array_append_new(gpus, json_pack(
			"{s:i,s:s,s:s,s:s,s:I,s:I,s:f,s:f,s:f,s:i,s:i,s:b}", "index", i, "uuid", uuid,
			"name", "NVIDIA H100 80GB HBM3", "pci_bus_id", bus, "memory_total_bytes",
			(json_int_t)85520809984LL, "memory_used_bytes", (json_int_t)1048576,
			"temperature_c", 40.0 + i, "power_draw_w", 70.5, "utilization_gpu_pct", 12.0,
			"ecc_volatile_uncorrected", 0, "ecc_aggregate_uncorrected", 0,
			"remapped_rows_failure", 0)), 0);
	}
	r = json_pack("{s:s,s:s,s:s,s:{s:s},s:{s:s,s:s,s:s,s:s,s:s,s:s},"
		      "s:{s:s,s:s,s:s,s:s,s:s},s:o,s:[],s:[],s:[]}",
		      "schema", "kiln.agent.report/1", "report_id", rid(id), "time", "2023-11-14T22:13:00Z",
		      "agent", "version", "0.1.0",
		      "host", "hostname", "gpu01", "machine_id", "0123456789abcdef0123456789abcdef",
		      "boot_id", "boot-1", "os", "Ubuntu 22.04.4 LTS", "kernel", "5.15.0-105-generic",
		      "dmi_serial", "SN-0001",
		      "nvidia", "status", "ok", "driver_version", "550.54.15", "kernel_module_version",
		      "550.54.15", "cuda_driver_version", "12.4", "nvml_version", "12.550.54.15",
		      "gpus", gpus, "xid_events", "cuda_toolkits", "disks");
	assert_non_null(r);
	return r;
}

static inline void set_path(json_t *r, const char *obj, const char *key, json_t *v)
{
	assert_int_equal(json_object_set_new(obj ? json_object_get(r, obj) : r, key, v), 0);
}

static inline json_t *gpu(json_t *r, size_t i)
{
	return json_array_get(json_object_get(r, "gpus"), i);
}

static inline void add_xid(json_t *r, int xid, int seq, const char *bus, const char *msg)
{
	json_t *x = json_pack("{s:i,s:s,s:s,s:s}", "xid", xid, "message", msg, "source", "kmsg",
			      "pci_bus_id", bus);

	assert_non_null(x);
	if (seq >= 0)
		json_object_set_new(x, "seq", json_integer(seq));
	assert_int_equal(json_array_append_new(json_object_get(r, "xid_events"), x), 0);
}

/* Parses and stores r (consumed) for node; returns the result, *dup set. */
static inline int ingest(struct fx *f, int64_t node, json_t *r, int *dup)
{
	struct ingest_report *ir = NULL;
	char field[INGEST_FIELD_MAX];
	int rc, d = -1;

	rc = ingest_report_parse(&ir, r, field, sizeof(field));
	json_decref(r);
	if (rc < 0)
		return rc;
	rc = ingest_report_store(f->st, &d, node, ir);
	ingest_report_free(ir);
	if (dup)
		*dup = d;
	return rc;
}

static inline size_t count_events(struct fx *f, const char *kind)
{
	struct event *ev = NULL;
	size_t n = 0, hits = 0;

	assert_int_equal(store_event_list(f->st, &ev, &n, 0, 0), 0);
	for (size_t i = 0; i < n; i++)
		if (!kind || strcmp(ev[i].kind, kind) == 0)
			hits++;
	event_list_free(ev, n);
	return hits;
}

/* The newest event of a kind's message, copied into buf ("" when none). */
static const char *last_message(struct fx *f, const char *kind, char *buf, size_t len)
{
	struct event *ev = NULL;
	size_t n = 0;

	buf[0] = '\0';
	assert_int_equal(store_event_list(f->st, &ev, &n, 0, 0), 0);
	for (size_t i = 0; i < n; i++)
		if (strcmp(ev[i].kind, kind) == 0) {
			snprintf(buf, len, "%s", ev[i].message);
			break;
		}
	event_list_free(ev, n);
	return buf;
}


/* The GPU rows keep what the per-GPU health verdicts read: pending retirement and remap,
 * rows remapped, and when the uncorrected count last rose (not at a GPU's first report:
 * its counts are judged by their values then). */
static inline json_t *mkreport_bad_gpu(const char *id, int64_t ecc)
{
	json_t *r = mkreport(id, 4), *g = gpu(r, 2);

	json_object_del(r, "time"); /* the report's time is its arrival */
	json_object_set_new(g, "ecc_volatile_uncorrected", json_integer(ecc));
	json_object_set_new(g, "ecc_aggregate_uncorrected", json_integer(ecc));
	json_object_set_new(g, "retired_pages_pending", json_true());
	json_object_set_new(g, "remapped_rows_pending", json_true());
	json_object_set_new(g, "remapped_rows_uncorrected", json_integer(1));
	json_object_set_new(gpu(r, 1), "retired_pages_pending", json_false());
	return r;
}

static inline struct ingest_report *parsed(const char *id, int ngpus)
{
	struct ingest_report *ir = NULL;
	json_t *r = mkreport(id, ngpus);

	assert_int_equal(ingest_report_parse(&ir, r, NULL, 0), 0);
	json_decref(r);
	return ir;
}

/* One text column of the first row of sql on f's database (either backend), copied into
 * buf. */
static const char *db_text(struct fx *f, const char *sql, char *buf, size_t len)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *s = NULL;

	buf[0] = '\0';
	if (fx_pg()) {
		PGconn *c = PQconnectdb(f->db + strlen(STORE_PG_PREFIX));
		PGresult *res = PQexec(c, sql);

		assert_int_equal(PQresultStatus(res), PGRES_TUPLES_OK);
		if (PQntuples(res) > 0 && !PQgetisnull(res, 0, 0))
			snprintf(buf, len, "%s", PQgetvalue(res, 0, 0));
		PQclear(res);
		PQfinish(c);
		return buf;
	}
	assert_int_equal(sqlite3_open_v2(f->db, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
	if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0))
		snprintf(buf, len, "%s", (const char *)sqlite3_column_text(s, 0));
	sqlite3_finalize(s);
	sqlite3_close(db);
	return buf;
}

#endif
