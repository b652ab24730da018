/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for agent report ingest: validation, de-duplication, state, history, events, batches. */
#include "ingest_fixture.h"

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

/* One report's write fails where nobody waits for its answer (pipelined on PostgreSQL, which
 * then loses the whole transaction): the batch is stored again, the others kept, the failure
 * that one report's. A trigger refuses the report's history row. */
static const struct sql_stmt REFUSE_FN = {
	STMT_NONE, "making the test's trigger function",
	"SELECT 1",
	"CREATE FUNCTION kiln_test_refuse() RETURNS trigger LANGUAGE plpgsql AS"
	" $$ BEGIN RAISE EXCEPTION 'refused by the test'; END $$"};
static const struct sql_stmt REFUSE_TRIGGER = {
	STMT_NONE, "making the test's trigger",
	"CREATE TRIGGER kiln_test_refuse BEFORE INSERT ON agent_history"
	" WHEN NEW.report_id = '62616400000000000000000000000000' BEGIN"
	" SELECT RAISE(ABORT, 'refused by the test'); END",
	"CREATE TRIGGER kiln_test_refuse BEFORE INSERT ON agent_history FOR EACH ROW"
	" WHEN (NEW.report_id = '62616400000000000000000000000000')"
	" EXECUTE FUNCTION kiln_test_refuse()"};

static void test_batch_write_failure_redone(void **state)
{
	struct fx *f = *state;
	struct ingest_report *a = parsed("a", 2), *bad = parsed("bad", 2), *c = parsed("c", 2);
	struct ingest_item ia = { .node_id = f->node, .report = a };
	struct ingest_item ib = { .node_id = f->other, .report = bad };
	struct ingest_item ic = { .node_id = f->node, .report = c };
	struct ingest_item *items[] = { &ia, &ib, &ic };
	int64_t hist = 0, seen = 0;

	assert_string_equal(rid("bad"), "62616400000000000000000000000000");
	assert_true(sql_exec(f->st, &REFUSE_FN, SQL_NO_ARGS) >= 0);
	assert_true(sql_exec(f->st, &REFUSE_TRIGGER, SQL_NO_ARGS) >= 0);
	assert_int_equal(ingest_batch(f->st, items, 3), 0);
	assert_int_equal(ia.rc, 0);
	assert_int_equal(ic.rc, 0);
	assert_true(ib.rc < 0);
	assert_non_null(strstr(ib.error, "refused by the test"));
	assert_int_equal(store_agent_counts(f->st, f->node, &hist, &seen), 0);
	assert_int_equal(hist, 2);
	assert_int_equal(seen, 2);
	assert_int_equal(store_agent_counts(f->st, f->other, &hist, &seen), 0);
	assert_int_equal(hist, 0);
	assert_int_equal(seen, 0); /* nothing of the refused report, not even its id */
	ingest_report_free(a);
	ingest_report_free(bad);
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
		T(test_batch_write_failure_redone),
		T(test_history_pruned),
		T(test_ecc_sum_saturates),
		T(test_submit_concurrent),
		T(test_text_kept_and_gpus_in_place),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
