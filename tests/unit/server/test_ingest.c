/* Tests for agent report ingest: validation, de-duplication, state, history, events, batches. */
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

static int64_t fake_clock(void)
{
	return fake_now;
}

static int64_t add_node(struct store *st, const char *name)
{
	struct node n = { 0 };

	n.name = (char *)name;
	n.ipmi_cipher = 3;
	assert_int_equal(store_node_insert(st, &n), 0);
	return n.id;
}

static int fx_setup(void **state)
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

static int fx_teardown(void **state)
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
static json_t *mkreport(const char *id, int ngpus)
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

static void set_path(json_t *r, const char *obj, const char *key, json_t *v)
{
	assert_int_equal(json_object_set_new(obj ? json_object_get(r, obj) : r, key, v), 0);
}

static json_t *gpu(json_t *r, size_t i)
{
	return json_array_get(json_object_get(r, "gpus"), i);
}

static void add_xid(json_t *r, int xid, int seq, const char *bus, const char *msg)
{
	json_t *x = json_pack("{s:i,s:s,s:s,s:s}", "xid", xid, "message", msg, "source", "kmsg",
			      "pci_bus_id", bus);

	assert_non_null(x);
	if (seq >= 0)
		json_object_set_new(x, "seq", json_integer(seq));
	assert_int_equal(json_array_append_new(json_object_get(r, "xid_events"), x), 0);
}

/* Parses and stores r (consumed) for node; returns the result, *dup set. */
static int ingest(struct fx *f, int64_t node, json_t *r, int *dup)
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

static size_t count_events(struct fx *f, const char *kind)
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

static void test_valid_report_stored(void **state)
{
	struct fx *f = *state;
	struct agent_state s = { 0 };
	struct agent_gpu *g = NULL;
	size_t ng = 0;
	int64_t hist = 0, seen = 0;
	char want[64];
	int dup = -1;

	assert_int_equal(ingest(f, f->node, mkreport("r1", 8), &dup), 0);
	assert_int_equal(dup, 0);
	assert_int_equal(store_agent_state_get(f->st, &s, f->node, 1), 0);
	assert_string_equal(s.node, "gpu01");
	assert_string_equal(s.report_id, rid("r1"));
	assert_string_equal(s.driver_version, "550.54.15");
	assert_string_equal(s.cuda_driver_version, "12.4");
	assert_string_equal(s.nvidia_status, "ok");
	assert_string_equal(s.dmi_serial, "SN-0001");
	assert_string_equal(s.boot_id, "boot-1");
	assert_int_equal(s.gpu_count, 8);
	assert_int_equal(s.gpu_count_max, 8);
	assert_int_equal(s.report_time, 1699999980); /* 2023-11-14T22:13:00Z */
	assert_int_equal(s.last_seen, fake_now);
	snprintf(want, sizeof(want), "\"report_id\":\"%s\"", rid("r1"));
	assert_non_null(strstr(s.report, want));
	agent_state_clear(&s);

	assert_int_equal(store_agent_gpus_get(f->st, &g, &ng, f->node), 0);
	assert_int_equal(ng, 8);
	assert_int_equal(g[3].index, 3);
	assert_string_equal(g[3].name, "NVIDIA H100 80GB HBM3");
	assert_int_equal(g[3].memory_total_bytes, 85520809984LL);
	assert_string_equal(g[3].uuid, "GPU-00000003-aaaa-bbbb-cccc-dddddddddddd");
	assert_int_equal(g[3].remapped_rows_failure, 0);
	/* The telemetry is the report's, summed up in the state: not in the GPU rows. */
	assert_true(isnan(g[3].temperature_c));
	assert_int_equal(g[3].memory_used_bytes, -1);
	agent_gpu_list_free(g, ng);
	assert_int_equal(store_agent_state_get(f->st, &s, f->node, 0), 0);
	assert_true(s.gpu_hottest_c > 46.9 && s.gpu_hottest_c < 47.1);   /* 40 + 7 */
	assert_true(s.gpu_power_w > 563.9 && s.gpu_power_w < 564.1);     /* 8 x 70.5 */
	assert_true(s.gpu_utilization_avg_pct > 11.9 && s.gpu_utilization_avg_pct < 12.1);
	agent_state_clear(&s);

	assert_int_equal(store_agent_counts(f->st, f->node, &hist, &seen), 0);
	assert_int_equal(hist, 1);
	assert_int_equal(seen, 1);
	/* The other node is untouched. */
	assert_int_equal(store_agent_state_get(f->st, &s, f->other, 0), KILN_ENOTFOUND);
	/* A first report raises nothing. */
	assert_int_equal(count_events(f, NULL), 0);
}

static void test_duplicate_ignored(void **state)
{
	struct fx *f = *state;
	struct agent_state s = { 0 };
	int64_t hist = 0, seen = 0;
	json_t *again;
	int dup = -1;

	assert_int_equal(ingest(f, f->node, mkreport("r1", 8), &dup), 0);
	assert_int_equal(dup, 0);
	/* The same id with other content (a resend after a lost acknowledgement) changes nothing. */
	again = mkreport("r1", 2);
	add_xid(again, 79, 1, "00000000:18:00.0", "GPU has fallen off the bus.");
	set_path(again, "nvidia", "driver_version", json_string("999.0"));
	fake_now += 30;
	assert_int_equal(ingest(f, f->node, again, &dup), 0);
	assert_int_equal(dup, 1);
	assert_int_equal(store_agent_state_get(f->st, &s, f->node, 0), 0);
	assert_int_equal(s.gpu_count, 8);
	assert_string_equal(s.driver_version, "550.54.15");
	assert_int_equal(s.last_seen, fake_now - 30);
	agent_state_clear(&s);
	assert_int_equal(store_agent_counts(f->st, f->node, &hist, &seen), 0);
	assert_int_equal(hist, 1);
	assert_int_equal(seen, 1);
	assert_int_equal(count_events(f, NULL), 0);
	/* A report id is unique per node: another node's report of that id is its own. */
	assert_int_equal(ingest(f, f->other, mkreport("r1", 8), &dup), 0);
	assert_int_equal(dup, 0);
	assert_int_equal(store_agent_state_get(f->st, &s, f->other, 0), 0);
	agent_state_clear(&s);
}

/* A change to the base report and the field the 400 must name. */
struct bad_case {
	const char *obj;   /* NULL: top level; "gpus0": the first GPU; "xid0": an Xid */
	const char *key;
	const char *value; /* JSON text; NULL deletes the key */
	const char *field;
};

static void test_invalid_fields_named(void **state)
{
	static const struct bad_case cases[] = {
		{ NULL, "schema", NULL, "schema" },
		{ NULL, "schema", "\"kiln.agent.report/2\"", "schema" },
		{ NULL, "schema", "7", "schema" },
		{ NULL, "report_id", NULL, "report_id" },
		{ NULL, "report_id", "\"\"", "report_id" },
		{ NULL, "report_id", "\"has space\"", "report_id" },
		{ NULL, "report_id", "12", "report_id" },
		/* the schema's ^[0-9a-f]{32}$ and nothing looser */
		{ NULL, "report_id", "\"r-contract-1\"", "report_id" },
		{ NULL, "report_id", "\"D9C500937F87AAA74EA40ECF36737F5B\"", "report_id" },
		{ NULL, "report_id", "\"d9c500937f87aaa74ea40ecf36737f5\"", "report_id" },
		{ NULL, "report_id", "\"d9c500937f87aaa74ea40ecf36737f5b0\"", "report_id" },
		{ NULL, "report_id", "\"d9c50093-7f87-aaa7-4ea4-0ecf36737f5b\"", "report_id" },
		{ NULL, "time", "\"yesterday\"", "time" },
		{ NULL, "host", NULL, "host" },
		{ NULL, "host", "[]", "host" },
		{ "host", "hostname", "42", "host.hostname" },
		{ "host", "boot_id", "{}", "host.boot_id" },
		{ NULL, "nvidia", NULL, "nvidia" },
		{ "nvidia", "status", NULL, "nvidia.status" },
		{ "nvidia", "status", "\"fine\"", "nvidia.status" },
		{ NULL, "gpus", NULL, "gpus" },
		{ NULL, "gpus", "{}", "gpus" },
		{ NULL, "gpus", "[1]", "gpus[0]" },
		{ "gpus0", "index", NULL, "gpus[0].index" },
		{ "gpus0", "index", "-1", "gpus[0].index" },
		{ "gpus0", "index", "\"0\"", "gpus[0].index" },
		{ "gpus0", "index", "1", "gpus[1].index" }, /* a repeated index */
		{ NULL, "xid_events", "{}", "xid_events" },
		{ "xid0", "xid", NULL, "xid_events[0].xid" },
		{ "xid0", "xid", "\"79\"", "xid_events[0].xid" },
		{ "xid0", "message", "[]", "xid_events[0].message" },
		{ NULL, "disks", "3", "disks" },
	};
	char field[INGEST_FIELD_MAX];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct bad_case *c = &cases[i];
		struct ingest_report *ir = NULL;
		json_t *r = mkreport("r1", 2), *target = r;
		int rc;

		add_xid(r, 13, 4, "00000000:18:00.0", "Graphics SM Warp Exception");
		if (c->obj && strcmp(c->obj, "gpus0") == 0)
			target = gpu(r, 0);
		else if (c->obj && strcmp(c->obj, "xid0") == 0)
			target = json_array_get(json_object_get(r, "xid_events"), 0);
		else if (c->obj)
			target = json_object_get(r, c->obj);
		if (c->value) {
			json_error_t err;
			json_t *v = json_loads(c->value, JSON_DECODE_ANY, &err);

			assert_non_null(v);
			json_object_set_new(target, c->key, v);
		} else {
			json_object_del(target, c->key);
		}
		rc = ingest_report_parse(&ir, r, field, sizeof(field));
		json_decref(r);
		if (rc != KILN_EINVAL || strcmp(field, c->field) != 0)
			fail_msg("case %zu (%s.%s): rc %d field '%s' (%s), want '%s'", i,
				 c->obj ? c->obj : "", c->key, rc, field, kiln_error_last(), c->field);
		/* The message names the field too. */
		assert_non_null(strstr(kiln_error_last(), c->field));
		assert_null(ir);
	}
}

/* Leaf fields kiln refuses one by one (issue 17, findings 4 and 5): each is stored as null
 * and listed in the stored report's rejected_fields; the rest of the report is stored. */
static void test_fields_rejected(void **state)
{
	static const struct bad_case cases[] = {
		{ "nvidia", "driver_version", "550", "nvidia.driver_version" },
		{ "nvidia", "kernel_module_version", "\"550.54.15\\u001b[2J\\u001b]0;pwned\\u0007\"",
		  "nvidia.kernel_module_version" },
		{ "nvidia", "cuda_driver_version", "\"12.4\\u202e\"", "nvidia.cuda_driver_version" },
		{ "nvidia", "nvml_version", "\"12.550.54.15 | gpu99 | ok\"", "nvidia.nvml_version" },
		{ "gpus0", "memory_total_bytes", "-5", "gpus[0].memory_total_bytes" },
		{ "gpus0", "temperature_c", "\"hot\"", "gpus[0].temperature_c" },
		{ "gpus0", "temperature_c", "1.7e308", "gpus[0].temperature_c" },
		{ "gpus0", "power_draw_w", "-3", "gpus[0].power_draw_w" },
		{ "gpus0", "utilization_gpu_pct", "250", "gpus[0].utilization_gpu_pct" },
		{ "gpus0", "ecc_aggregate_uncorrected", "1.5", "gpus[0].ecc_aggregate_uncorrected" },
		{ "gpus0", "remapped_rows_failure", "1", "gpus[0].remapped_rows_failure" },
		{ "gpus0", "retired_pages_pending", "1", "gpus[0].retired_pages_pending" },
		{ "gpus0", "remapped_rows_pending", "\"yes\"", "gpus[0].remapped_rows_pending" },
		{ "gpus0", "remapped_rows_uncorrected", "-1", "gpus[0].remapped_rows_uncorrected" },
		{ "host", "cpu_threads", "0", "host.cpu_threads" },
		{ NULL, "cudnn_version", "\"9\\u009b31m\"", "cudnn_version" },
		{ "xid0", "gpu_index", "5000", "xid_events[0].gpu_index" },
	};
	struct fx *f = *state;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct bad_case *c = &cases[i];
		struct agent_state st = { 0 };
		json_t *r = mkreport("r0", 2), *target = r, *stored, *rej, *v;
		json_error_t err;
		char id[16];
		int dup = -1;

		snprintf(id, sizeof(id), "r%zu", i);
		set_path(r, NULL, "report_id", json_string(rid(id)));
		add_xid(r, 13, 4, "00000000:18:00.0", "Graphics SM Warp Exception");
		if (c->obj && strcmp(c->obj, "gpus0") == 0)
			target = gpu(r, 0);
		else if (c->obj && strcmp(c->obj, "xid0") == 0)
			target = json_array_get(json_object_get(r, "xid_events"), 0);
		else if (c->obj)
			target = json_object_get(r, c->obj);
		v = json_loads(c->value, JSON_DECODE_ANY, &err);
		assert_non_null(v);
		json_object_set_new(target, c->key, v);
		if (ingest(f, f->node, r, &dup) != 0)
			fail_msg("case %zu (%s): %s", i, c->field, kiln_error_last());
		assert_int_equal(dup, 0);
		assert_int_equal(store_agent_state_get(f->st, &st, f->node, 1), 0);
		stored = json_loads(st.report, 0, &err);
		assert_non_null(stored);
		rej = json_object_get(stored, "rejected_fields");
		if (json_array_size(rej) != 1 ||
		    strcmp(json_string_value(json_array_get(rej, 0)), c->field) != 0)
			fail_msg("case %zu: rejected_fields %s, want [%s]", i, st.report, c->field);
		/* the rest is stored: the other GPU, the node's versions but the refused one */
		assert_int_equal(st.gpu_count, 2);
		if (strcmp(c->field, "nvidia.driver_version") == 0)
			assert_null(st.driver_version);
		else
			assert_string_equal(st.driver_version, "550.54.15");
		if (strcmp(c->field, "nvidia.cuda_driver_version") == 0)
			assert_null(st.cuda_driver_version);
		json_decref(stored);
		agent_state_clear(&st);
		/* the hottest GPU is the other one: 1.7e308 is no reading */
		assert_int_equal(store_agent_state_get(f->st, &st, f->node, 0), 0);
		if (strncmp(c->field, "gpus[0].temperature_c", 21) == 0)
			assert_true(st.gpu_hottest_c > 40.9 && st.gpu_hottest_c < 41.1);
		agent_state_clear(&st);
		fake_now += 30;
	}
	/* an agent cannot say itself what kilnd refused */
	{
		struct agent_state st = { 0 };
		json_t *r = mkreport("rclean", 1);

		set_path(r, NULL, "rejected_fields", json_pack("[s]", "gpus[0].temperature_c"));
		assert_int_equal(ingest(f, f->node, r, NULL), 0);
		assert_int_equal(store_agent_state_get(f->st, &st, f->node, 1), 0);
		assert_null(strstr(st.report, "rejected_fields"));
		agent_state_clear(&st);
	}
}

static void test_too_big_refused(void **state)
{
	struct ingest_report *ir = NULL;
	char field[INGEST_FIELD_MAX];
	json_t *r = mkreport("r1", 1);
	char *blob = malloc(INGEST_REPORT_MAX);

	(void)state;
	assert_non_null(blob);
	memset(blob, 'x', INGEST_REPORT_MAX - 1);
	blob[INGEST_REPORT_MAX - 1] = '\0';
	json_object_set_new(r, "padding", json_string(blob));
	assert_int_equal(ingest_report_parse(&ir, r, field, sizeof(field)), KILN_ETOOBIG);
	free(blob);
	json_decref(r);
}

static void test_xid_event_once(void **state)
{
	struct fx *f = *state;
	json_t *r;
	char msg[512];

	r = mkreport("r1", 8);
	add_xid(r, 79, 1201, "00000000:38:00.0", "pid=1234, GPU has fallen off the bus.");
	json_object_set_new(json_array_get(json_object_get(r, "xid_events"), 0), "gpu_index",
			    json_integer(2));
	assert_int_equal(ingest(f, f->node, r, NULL), 0);
	assert_int_equal(count_events(f, "xid"), 1);
	assert_non_null(strstr(last_message(f, "xid", msg, sizeof(msg)), "Xid 79 on GPU 2"));
	assert_non_null(strstr(msg, "fallen off the bus"));

	/* The agent restarted and read the kernel log again: the same line is no new Xid. */
	r = mkreport("r2", 8);
	add_xid(r, 79, 1201, "00000000:38:00.0", "pid=1234, GPU has fallen off the bus.");
	assert_int_equal(ingest(f, f->node, r, NULL), 0);
	assert_int_equal(count_events(f, "xid"), 1);

	/* A new line is a new event; so is a line without a sequence number, once. */
	r = mkreport("r3", 8);
	add_xid(r, 13, 1300, "00000000:38:00.0", "Graphics SM Warp Exception");
	add_xid(r, 31, -1, "00000000:48:00.0", "MMU Fault");
	assert_int_equal(ingest(f, f->node, r, NULL), 0);
	assert_int_equal(count_events(f, "xid"), 3);
	r = mkreport("r4", 8);
	add_xid(r, 31, -1, "00000000:48:00.0", "MMU Fault");
	assert_int_equal(ingest(f, f->node, r, NULL), 0);
	assert_int_equal(count_events(f, "xid"), 3);

	/* After a reboot the kernel counts again from 0: the same number is a new line. */
	r = mkreport("r5", 8);
	set_path(r, "host", "boot_id", json_string("boot-2"));
	add_xid(r, 79, 1201, "00000000:38:00.0", "pid=99, GPU has fallen off the bus.");
	assert_int_equal(ingest(f, f->node, r, NULL), 0);
	assert_int_equal(count_events(f, "xid"), 4);
	assert_int_equal(count_events(f, "reboot"), 1);
	/* Another node's Xid with the same key is its own event. */
	r = mkreport("r6", 8);
	add_xid(r, 79, 1201, "00000000:38:00.0", "pid=1234, GPU has fallen off the bus.");
	assert_int_equal(ingest(f, f->other, r, NULL), 0);
	assert_int_equal(count_events(f, "xid"), 5);
}

static void test_fewer_gpus(void **state)
{
	struct fx *f = *state;
	struct agent_state s = { 0 };
	json_t *r;
	char msg[512];

	assert_int_equal(ingest(f, f->node, mkreport("r1", 8), NULL), 0);
	/* GPU 5 fell off the bus: NVML numbers the other seven 0-6. */
	r = mkreport("r2", 8);
	json_array_remove(json_object_get(r, "gpus"), 5);
	for (size_t i = 5; i < 7; i++)
		json_object_set_new(gpu(r, i), "index", json_integer((json_int_t)i));
	fake_now += 30;
	assert_int_equal(ingest(f, f->node, r, NULL), 0);
	assert_int_equal(count_events(f, "gpu_lost"), 1);
	last_message(f, "gpu_lost", msg, sizeof(msg));
	assert_non_null(strstr(msg, "7 GPUs reported, the node had 8"));
	assert_non_null(strstr(msg, "GPU-00000005"));
	assert_int_equal(store_agent_state_get(f->st, &s, f->node, 0), 0);
	assert_int_equal(s.gpu_count, 7);
	assert_int_equal(s.gpu_count_max, 8);
	agent_state_clear(&s);
	/* Still seven: no new event. */
	r = mkreport("r3", 7);
	fake_now += 30;
	assert_int_equal(ingest(f, f->node, r, NULL), 0);
	assert_int_equal(count_events(f, "gpu_lost"), 1);
	/* Eight again, then six: a new event. */
	fake_now += 30;
	assert_int_equal(ingest(f, f->node, mkreport("r4", 8), NULL), 0);
	fake_now += 30;
	assert_int_equal(ingest(f, f->node, mkreport("r5", 6), NULL), 0);
	assert_int_equal(count_events(f, "gpu_lost"), 2);
	/* A node without a driver reports no GPUs: that is its own event, not a lost GPU. */
	r = mkreport("r6", 0);
	set_path(r, "nvidia", "status", json_string("no_driver"));
	json_object_del(json_object_get(r, "nvidia"), "driver_version");
	fake_now += 30;
	assert_int_equal(ingest(f, f->node, r, NULL), 0);
	assert_int_equal(count_events(f, "gpu_lost"), 2);
	assert_int_equal(count_events(f, "nvidia_status"), 1);
}

static void test_mismatch_and_versions(void **state)
{
	struct fx *f = *state;
	json_t *r;
	char msg[512];

	assert_int_equal(ingest(f, f->node, mkreport("r1", 2), NULL), 0);
	/* The driver was upgraded underneath: library 550.90.07, loaded module 550.54.15. */
	r = mkreport("r2", 2);
	set_path(r, "nvidia", "driver_version", json_string("550.90.07"));
	fake_now += 30;
	assert_int_equal(ingest(f, f->node, r, NULL), 0);
	assert_int_equal(count_events(f, "driver_mismatch"), 1);
	assert_non_null(strstr(last_message(f, "driver_mismatch", msg, sizeof(msg)), "550.90.07"));
	assert_int_equal(count_events(f, "driver_changed"), 1);
	/* NVML refuses to start (status mismatch): still the same mismatch, no new event. */
	r = mkreport("r3", 0);
	set_path(r, "nvidia", "status", json_string("mismatch"));
	json_object_del(json_object_get(r, "nvidia"), "driver_version");
	fake_now += 30;
	assert_int_equal(ingest(f, f->node, r, NULL), 0);
	assert_int_equal(count_events(f, "driver_mismatch"), 1);
	assert_int_equal(count_events(f, "gpu_lost"), 0);
	/* Rebooted into the new driver and a new CUDA. */
	r = mkreport("r4", 2);
	set_path(r, "host", "boot_id", json_string("boot-2"));
	set_path(r, "nvidia", "driver_version", json_string("550.90.07"));
	set_path(r, "nvidia", "kernel_module_version", json_string("550.90.07"));
	set_path(r, "nvidia", "cuda_driver_version", json_string("12.5"));
	fake_now += 30;
	assert_int_equal(ingest(f, f->node, r, NULL), 0);
	assert_int_equal(count_events(f, "driver_mismatch"), 1);
	/* 550.54.15 (the module while NVML was down) -> 550.90.07 */
	assert_int_equal(count_events(f, "driver_changed"), 2);
	assert_int_equal(count_events(f, "cuda_changed"), 1);
	assert_non_null(strstr(last_message(f, "cuda_changed", msg, sizeof(msg)), "12.4 -> 12.5"));
}

static void test_ecc_rising_and_remap(void **state)
{
	struct fx *f = *state;
	json_t *r;
	char msg[512];

	assert_int_equal(ingest(f, f->node, mkreport("r1", 4), NULL), 0);
	r = mkreport("r2", 4);
	json_object_set_new(gpu(r, 1), "ecc_aggregate_uncorrected", json_integer(2));
	json_object_set_new(gpu(r, 1), "ecc_volatile_uncorrected", json_integer(2));
	fake_now += 30;
	assert_int_equal(ingest(f, f->node, r, NULL), 0);
	assert_int_equal(count_events(f, "ecc"), 1);
	assert_non_null(strstr(last_message(f, "ecc", msg, sizeof(msg)), "from 0 to 2"));
	/* Unchanged: nothing new. */
	r = mkreport("r3", 4);
	json_object_set_new(gpu(r, 1), "ecc_aggregate_uncorrected", json_integer(2));
	json_object_set_new(gpu(r, 1), "ecc_volatile_uncorrected", json_integer(2));
	fake_now += 30;
	assert_int_equal(ingest(f, f->node, r, NULL), 0);
	assert_int_equal(count_events(f, "ecc"), 1);
	/* Rising again, and a remap failure. */
	r = mkreport("r4", 4);
	json_object_set_new(gpu(r, 1), "ecc_aggregate_uncorrected", json_integer(5));
	json_object_set_new(gpu(r, 3), "remapped_rows_failure", json_true());
	fake_now += 30;
	assert_int_equal(ingest(f, f->node, r, NULL), 0);
	assert_int_equal(count_events(f, "ecc"), 2);
	assert_int_equal(count_events(f, "remap"), 1);
	r = mkreport("r5", 4);
	json_object_set_new(gpu(r, 1), "ecc_aggregate_uncorrected", json_integer(5));
	json_object_set_new(gpu(r, 3), "remapped_rows_failure", json_true());
	fake_now += 30;
	assert_int_equal(ingest(f, f->node, r, NULL), 0);
	assert_int_equal(count_events(f, "remap"), 1);
}

/* The GPU rows keep what the per-GPU health verdicts read: pending retirement and remap,
 * rows remapped, and when the uncorrected count last rose (not at a GPU's first report:
 * its counts are judged by their values then). */
static json_t *mkreport_bad_gpu(const char *id, int64_t ecc)
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

static void test_gpu_memory_facts_stored(void **state)
{
	struct fx *f = *state;
	struct agent_gpu *g = NULL;
	size_t ng = 0;
	int64_t rose;

	assert_int_equal(ingest(f, f->node, mkreport_bad_gpu("r1", 2), NULL), 0);
	assert_int_equal(store_agent_gpus_get(f->st, &g, &ng, f->node), 0);
	assert_int_equal(ng, 4);
	assert_int_equal(g[2].ecc_volatile_uncorrected, 2);
	assert_int_equal(g[2].retired_pages_pending, 1);
	assert_int_equal(g[2].remapped_rows_pending, 1);
	assert_int_equal(g[2].remapped_rows_uncorrected, 1);
	assert_int_equal(g[2].ecc_rose_at, 0);
	assert_int_equal(g[1].retired_pages_pending, 0);
	assert_int_equal(g[0].retired_pages_pending, -1); /* not reported */
	assert_int_equal(g[0].remapped_rows_uncorrected, -1);
	agent_gpu_list_free(g, ng);

	fake_now += 30;
	rose = fake_now;
	assert_int_equal(ingest(f, f->node, mkreport_bad_gpu("r2", 3), NULL), 0);
	assert_int_equal(store_agent_gpus_get(f->st, &g, &ng, f->node), 0);
	assert_int_equal(g[2].ecc_rose_at, rose);
	assert_int_equal(g[1].ecc_rose_at, 0);
	agent_gpu_list_free(g, ng);

	fake_now += 30; /* the same counts: the rise keeps its time */
	assert_int_equal(ingest(f, f->node, mkreport_bad_gpu("r3", 3), NULL), 0);
	assert_int_equal(store_agent_gpus_get(f->st, &g, &ng, f->node), 0);
	assert_int_equal(g[2].ecc_rose_at, rose);
	assert_int_equal(g[2].remapped_rows_pending, 1);
	agent_gpu_list_free(g, ng);
}

static void test_older_report_keeps_state(void **state)
{
	struct fx *f = *state;
	struct agent_state s = { 0 };
	int64_t hist = 0, seen = 0;
	json_t *r;

	r = mkreport("new", 2);
	set_path(r, NULL, "time", json_string("2023-11-14T22:13:00Z"));
	assert_int_equal(ingest(f, f->node, r, NULL), 0);
	/* A report made earlier arrives late (from a spool): history only. */
	r = mkreport("old", 1);
	set_path(r, NULL, "time", json_string("2023-11-14T22:00:00.5+00:00"));
	add_xid(r, 48, 7, "00000000:18:00.0", "DBE (Double Bit Error) ECC Error");
	assert_int_equal(ingest(f, f->node, r, NULL), 0);
	assert_int_equal(store_agent_state_get(f->st, &s, f->node, 0), 0);
	assert_string_equal(s.report_id, rid("new"));
	assert_int_equal(s.gpu_count, 2);
	agent_state_clear(&s);
	assert_int_equal(count_events(f, "gpu_lost"), 0);
	assert_int_equal(count_events(f, "xid"), 1); /* its Xid still counts */
	assert_int_equal(store_agent_counts(f->st, f->node, &hist, &seen), 0);
	assert_int_equal(hist, 2);
	assert_int_equal(seen, 2);
	/* A clock far ahead counts as now, so later reports still replace it. */
	r = mkreport("future", 3);
	set_path(r, NULL, "time", json_string("2099-01-01T00:00:00Z"));
	assert_int_equal(ingest(f, f->node, r, NULL), 0);
	fake_now += 30;
	r = mkreport("after", 4);
	json_object_del(r, "time");
	assert_int_equal(ingest(f, f->node, r, NULL), 0);
	assert_int_equal(store_agent_state_get(f->st, &s, f->node, 0), 0);
	assert_string_equal(s.report_id, rid("after"));
	agent_state_clear(&s);
}

static struct ingest_report *parsed(const char *id, int ngpus)
{
	struct ingest_report *ir = NULL;
	json_t *r = mkreport(id, ngpus);

	assert_int_equal(ingest_report_parse(&ir, r, NULL, 0), 0);
	json_decref(r);
	return ir;
}

static void test_batch_items_independent(void **state)
{
	struct fx *f = *state;
	struct ingest_report *a = parsed("a", 1), *b = parsed("b", 1), *c = parsed("a", 1);
	struct ingest_item ia = { .node_id = f->node, .report = a };
	struct ingest_item ib = { .node_id = 9999, .report = b }; /* no such node */
	struct ingest_item ic = { .node_id = f->node, .report = c };
	struct ingest_item *items[] = { &ia, &ib, &ic };
	int64_t hist = 0, seen = 0;

	assert_int_equal(ingest_batch(f->st, items, 3), 0);
	assert_int_equal(ia.rc, 0);
	assert_int_equal(ia.duplicate, 0);
	assert_true(ib.rc < 0);
	assert_true(ib.error[0] != '\0');
	assert_int_equal(ic.rc, 0);
	assert_int_equal(ic.duplicate, 1); /* the same id, later in the same batch */
	assert_int_equal(store_agent_counts(f->st, f->node, &hist, &seen), 0);
	assert_int_equal(hist, 1);
	assert_int_equal(seen, 1);
	/* The failed item left nothing behind: b can be stored for a real node. */
	ib.node_id = f->other;
	assert_int_equal(ingest_batch(f->st, (struct ingest_item *[]){ &ib }, 1), 0);
	assert_int_equal(ib.rc, 0);
	assert_int_equal(ib.duplicate, 0);
	ingest_report_free(a);
	ingest_report_free(b);
	ingest_report_free(c);
}

static void test_history_pruned(void **state)
{
	struct fx *f = *state;
	int64_t hist = 0, seen = 0;
	int deleted = 0;

	ingest_retention_set(3600);
	for (int i = 0; i < 5; i++) {
		char id[16];

		snprintf(id, sizeof(id), "r%d", i);
		assert_int_equal(ingest(f, f->node, mkreport(id, 1), NULL), 0);
		fake_now += 1000;
	}
	/* now = t0 + 5000: rows received at t0, t0+1000 are older than an hour. */
	assert_int_equal(ingest_prune(f->st, &deleted), 0);
	assert_int_equal(deleted, 4); /* 2 history rows and 2 report ids */
	assert_int_equal(store_agent_counts(f->st, f->node, &hist, &seen), 0);
	assert_int_equal(hist, 3);
	assert_int_equal(seen, 3);
	ingest_retention_set(0); /* keep for ever */
	fake_now += 100000;
	assert_int_equal(ingest_prune(f->st, &deleted), 0);
	assert_int_equal(deleted, 0);
	assert_int_equal(store_wal_checkpoint(f->st), 0);
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

/* ECC counts at the top of their range (issue 17, finding 6): the history row's sum
 * saturates instead of overflowing (UBSan aborted here: signed integer overflow). */
static void test_ecc_sum_saturates(void **state)
{
	struct fx *f = *state;
	json_t *r = mkreport("r1", 2);
	char buf[32];

	json_object_set_new(gpu(r, 0), "ecc_volatile_uncorrected", json_integer(INT64_MAX));
	json_object_set_new(gpu(r, 1), "ecc_volatile_uncorrected", json_integer(INT64_MAX));
	assert_int_equal(ingest(f, f->node, r, NULL), 0);
	assert_true(strtoll(db_text(f, "SELECT ecc_uncorrected FROM agent_history", buf,
				    sizeof(buf)), NULL, 10) == INT64_MAX);
}

/* Several threads queue reports for the writer at once, each waiting for its answer. */
struct submitter {
	int64_t node;
	int base;
	int count;
	int failures;
	int duplicates;
};

#define THREADS 4
#define PER_THREAD 40

struct one_wait {
	pthread_mutex_t m;
	pthread_cond_t c;
	int done;
};

static void one_done(struct ingest_item *it, void *arg)
{
	struct one_wait *w = arg;

	(void)it;
	pthread_mutex_lock(&w->m);
	w->done = 1;
	pthread_cond_signal(&w->c);
	pthread_mutex_unlock(&w->m);
}

static void *submit_thread(void *arg)
{
	struct submitter *s = arg;

	for (int i = 0; i < s->count; i++) {
		char id[32];
		struct ingest_item it = { .node_id = s->node };
		struct one_wait w = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0 };
		struct ingest_report *ir;

		/* Every report twice: the second is a duplicate. */
		snprintf(id, sizeof(id), "t%d", s->base + i / 2);
		ir = parsed(id, 2);
		it.report = ir;
		if (ingest_enqueue(&it, NULL, one_done, &w) < 0) {
			s->failures++;
		} else {
			pthread_mutex_lock(&w.m);
			while (!w.done)
				pthread_cond_wait(&w.c, &w.m);
			pthread_mutex_unlock(&w.m);
			s->failures += it.rc < 0;
			s->duplicates += it.duplicate;
		}
		ingest_report_free(ir);
	}
	return NULL;
}

static void test_submit_concurrent(void **state)
{
	struct fx *f = *state;
	struct submitter s[THREADS];
	pthread_t th[THREADS];
	int64_t hist = 0, seen = 0;
	int dups = 0;

	assert_int_equal(ingest_writer_start(f->db, THREADS), 0);
	for (int i = 0; i < THREADS; i++) {
		s[i] = (struct submitter){ f->node, i * 1000, PER_THREAD, 0, 0 };
		assert_int_equal(pthread_create(&th[i], NULL, submit_thread, &s[i]), 0);
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(s[i].failures, 0);
		dups += s[i].duplicates;
	}
	ingest_writer_stop();
	assert_int_equal(dups, THREADS * PER_THREAD / 2);
	assert_int_equal(store_agent_counts(f->st, f->node, &hist, &seen), 0);
	assert_int_equal(hist, THREADS * PER_THREAD / 2);
	assert_int_equal(seen, THREADS * PER_THREAD / 2);
}


/* The body is stored as it came (not re-dumped); GPU rows are written only when they
 * changed; the history's GPU array has jansson's number format. */
static void test_text_kept_and_gpus_in_place(void **state)
{
	struct fx *f = *state;
	struct ingest_report *ir = NULL;
	struct agent_state s = { 0 };
	struct agent_gpu *g = NULL, *g2 = NULL;
	size_t ng = 0, ng2 = 0, written = 99;
	char field[INGEST_FIELD_MAX], buf[4096], *text, *body;
	json_t *r = mkreport("raw1", 2);
	int dup = -1;

	/* The agent's text, with JSON whitespace around it and a space inside. */
	text = json_dumps(r, JSON_COMPACT | JSON_REAL_PRECISION(10));
	assert_non_null(text);
	body = malloc(strlen(text) + 8);
	assert_non_null(body);
	snprintf(body, strlen(text) + 8, " \n%s\r\n", text);
	memmove(body + 3, body + 2, strlen(body + 2) + 1); /* "{" -> "{ " below */
	body[2] = '{';
	body[3] = ' ';
	json_decref(r);
	r = json_loads(body, 0, NULL);
	assert_non_null(r);
	assert_int_equal(ingest_report_parse_text(&ir, r, body, strlen(body), field, sizeof(field)),
			 0);
	assert_int_equal(ingest_report_store(f->st, &dup, f->node, ir), 0);
	ingest_report_free(ir);
	assert_int_equal(store_agent_state_get(f->st, &s, f->node, 1), 0);
	body[strlen(body) - 2] = '\0';
	assert_string_equal(s.report, body + 2);
	agent_state_clear(&s);
	assert_int_equal(store_agent_gpus_get(f->st, &g, &ng, f->node), 0);
	assert_int_equal(ng, 2);
	assert_non_null(strstr(g[1].uuid, "GPU-00000001"));
	assert_string_equal(db_text(f, "SELECT gpus FROM agent_history", buf, sizeof(buf)),
			    "[[0,40.0,70.5,12.0],[1,41.0,70.5,12.0]]");

	/* Unchanged rows are not written, nor rows whose telemetry alone changed; a changed
	 * one is updated in place. */
	assert_int_equal(store_agent_gpus_update(f->st, f->node, g, ng, g, ng, &written), 0);
	assert_int_equal(written, 0);
	assert_int_equal(store_agent_gpus_get(f->st, &g2, &ng2, f->node), 0); /* as stored */
	g[1].temperature_c = 77.5;
	g[1].utilization_gpu_pct = 99;
	g[1].memory_used_bytes = 5;
	assert_int_equal(store_agent_gpus_update(f->st, f->node, g, ng, g2, ng2, &written), 0);
	assert_int_equal(written, 0);
	g[1].ecc_aggregate_uncorrected = 3;
	assert_int_equal(store_agent_gpus_update(f->st, f->node, g, ng, g2, ng2, &written), 0);
	assert_int_equal(written, 1);
	agent_gpu_list_free(g2, ng2);
	assert_int_equal(store_agent_gpus_get(f->st, &g2, &ng2, f->node), 0);
	assert_int_equal(ng2, 2);
	assert_int_equal(g2[1].ecc_aggregate_uncorrected, 3);
	assert_true(isnan(g2[1].temperature_c));
	/* Another set of GPUs replaces the rows. */
	assert_int_equal(store_agent_gpus_update(f->st, f->node, g, 1, g2, ng2, &written), 0);
	agent_gpu_list_free(g2, ng2);
	assert_int_equal(written, 1);
	assert_int_equal(store_agent_gpus_get(f->st, &g2, &ng2, f->node), 0);
	assert_int_equal(ng2, 1);
	agent_gpu_list_free(g2, ng2);
	agent_gpu_list_free(g, ng);
	json_decref(r);
	free(body);
	free(text);
}

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
			    " row remap pending (reset needed), 1 row remapped");
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
		T(test_valid_report_stored),
		T(test_duplicate_ignored),
		T(test_invalid_fields_named),
		T(test_too_big_refused),
		T(test_fields_rejected),
		T(test_xid_event_once),
		T(test_fewer_gpus),
		T(test_mismatch_and_versions),
		T(test_ecc_rising_and_remap),
		T(test_gpu_memory_facts_stored),
		T(test_older_report_keeps_state),
		T(test_batch_items_independent),
		T(test_history_pruned),
		T(test_ecc_sum_saturates),
		T(test_submit_concurrent),
		T(test_text_kept_and_gpus_in_place),
		T(test_writer_commits),
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
