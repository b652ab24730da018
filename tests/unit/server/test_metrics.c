/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for server/metrics/ (metrics.c, scrape.c, zblock.c) over a real store: what a node
 * exports from its poller state, health, sensors and agent report; a silent agent's series
 * left out; the range; the answer exactly as before the kept blocks (data/metrics_fleet.prom),
 * gzip and plain the same text; blocks made again only for the nodes whose data moved. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <zlib.h>

#include "kiln/buf.h"
#include "kiln/error.h"
#include "metrics/metrics.h"
#include "store/store.h"
#include "store_fixture.h"

#define NOW 100000

static int64_t node_add(struct store *st, const char *name, const char *rack)
{
	struct node n = { .name = (char *)name, .rack = (char *)rack, .ipmi_cipher = 3 };

	assert_int_equal(store_node_insert(st, &n), 0);
	return n.id;
}

static const char sensors[] =
	"{\"sensors\":["
	"{\"name\":\"System Board Inlet Temp\",\"kind\":\"temperature\",\"value\":47,\"unit\":\"C\","
	"\"health\":\"OK\"},"
	"{\"name\":\"PS1 Status\",\"kind\":\"psu\",\"value\":null,\"health\":\"OK\"},"
	"{\"name\":\"PS2 Status\",\"kind\":\"psu\",\"health\":\"Critical\"},"
	"{\"name\":\"Fan1\",\"kind\":\"fan\",\"value\":5400,\"unit\":\"RPM\",\"health\":\"Critical\"},"
	"{\"name\":\"Fan1\",\"kind\":\"fan\",\"value\":5400,\"unit\":\"RPM\",\"health\":\"Critical\"},"
	"{\"name\":\"System Power\",\"kind\":\"power\",\"value\":3210.5,\"unit\":\"W\"}]}";

static const char report[] =
	"{\"cudnn_version\":\"9.1.0\",\"cuda_toolkits\":[{\"version\":\"12.4\",\"path\":\"/usr/local/cuda-12.4\"}],"
	"\"gpus\":[{\"index\":0,\"uuid\":\"GPU-a\",\"name\":\"NVIDIA \\\"H100\\\"\",\"pci_bus_id\":\"00000000:18:00.0\","
	"\"temperature_c\":41,\"power_draw_w\":612.345,\"utilization_gpu_pct\":97,\"memory_used_bytes\":1048576000,"
	"\"ecc_volatile_uncorrected\":2,\"ecc_aggregate_uncorrected\":5,\"remapped_rows_pending\":true,"
	"\"clock_event_reasons\":68,\"clock_event_reason_names\":[\"sw_power_cap\",\"hw_thermal_slowdown\"]},"
	"{\"index\":1,\"uuid\":\"GPU-b\",\"name\":\"NVIDIA H100\",\"pci_bus_id\":\"00000000:2A:00.0\","
	"\"temperature_c\":null}]}";

/* g1: on, critical (hung, an Xid, a PSU), with its sensors, a fresh agent and two Xid events;
 * g2: an agent silent for longer than 3 intervals of 30 s; g3: nothing known. */
static void fleet_fill(struct store *st)
{
	struct fleet_state fs;
	struct agent_state a = { 0 };
	struct event ev = { .severity = SEV_CRITICAL, .source = "agent", .kind = "xid" };
	int ins;
	int64_t id;

	id = node_add(st, "g1", "r01");
	fleet_state_init(&fs, id);
	snprintf(fs.power, sizeof(fs.power), "on");
	fs.power_time = NOW - 5;
	fs.last_ok = NOW - 5;
	fs.sensors = (char *)sensors;
	snprintf(fs.health, sizeof(fs.health), "critical");
	fs.reasons = "[\"hung: powered on, agent silent for 2m [reboot may clear it]\","
		     "\"xid: critical Xid 79 [reboot may clear it]\","
		     "\"psu: PS2 Status (Critical) failed\",\"psu: redundancy lost\"]";
	fs.health_time = NOW - 1;
	fs.hung_since = NOW - 60;
	assert_int_equal(store_fleet_state_put(st, &fs), 0);
	a.node_id = id;
	a.report_id = "r1";
	a.report = (char *)report;
	a.last_seen = NOW - 10;
	a.report_time = NOW - 10;
	a.nvidia_status = "ok";
	a.driver_version = "550.54.15";
	a.kernel_module_version = "535.104.05";
	a.cuda_driver_version = "12.4";
	a.os = "Debian GNU/Linux 12 (bookworm)";
	a.kernel = "6.1.0-18-amd64";
	a.gpu_count = 2;
	a.gpu_count_max = 8;
	a.interval_s = -1;
	assert_int_equal(store_agent_state_put(st, &a), 0);
	ev.node_id = id;
	ev.message = "Xid 48 on GPU 0: DBE";
	ev.dedup_key = "x1";
	assert_int_equal(store_event_insert(st, &ev, &ins), 0);
	ev.message = "Xid 79 on GPU 1 (00000000:2A:00.0): fallen off the bus";
	ev.dedup_key = "x2";
	assert_int_equal(store_event_insert(st, &ev, &ins), 0);

	id = node_add(st, "g2", NULL);
	a.node_id = id;
	a.report_id = "r2";
	a.last_seen = NOW - 91;
	a.report_time = NOW - 91;
	assert_int_equal(store_agent_state_put(st, &a), 0);

	node_add(st, "g3", NULL);
}

/* The gzip answer inflated by zlib, which checks the trailer's crc32 and length. */
static char *gunzip(const struct kiln_buf *gz)
{
	struct kiln_buf text;
	z_stream z = { 0 };
	char chunk[4096];
	int zr;

	kiln_buf_init(&text, 0);
	assert_int_equal(inflateInit2(&z, 16 + 15), Z_OK);
	z.next_in = (Bytef *)gz->data;
	z.avail_in = (uInt)gz->len;
	do {
		z.next_out = (Bytef *)chunk;
		z.avail_out = sizeof(chunk);
		zr = inflate(&z, Z_NO_FLUSH);
		assert_true(zr == Z_OK || zr == Z_STREAM_END);
		assert_int_equal(kiln_buf_append(&text, chunk, sizeof(chunk) - z.avail_out), 0);
	} while (zr != Z_STREAM_END);
	assert_int_equal(z.avail_in, 0); /* nothing after the trailer */
	inflateEnd(&z);
	return text.data ? text.data : strdup("");
}

/* One scrape's answer through cache c (a new one when NULL), read in small odd pieces; a gzip
 * answer is returned inflated. */
static char *scrape_at(struct store *st, struct metrics_cache *c,
		       int (*want)(void *, const char *), int64_t now, int gzip)
{
	struct metrics_options opt = { .silent_intervals = 3, .default_interval_s = 30,
				       .want = want };
	struct metrics_cache *own = NULL;
	struct metrics_scrape *s;
	struct kiln_buf out;
	char piece[1000];
	size_t n;
	char *text;

	if (!c) {
		assert_int_equal(metrics_cache_new(&own), 0);
		c = own;
	}
	kiln_buf_init(&out, 0);
	assert_int_equal(metrics_scrape_open(&s, c, st, &opt, now, gzip), 0);
	do {
		assert_int_equal(metrics_scrape_read(s, piece, sizeof(piece), &n), 0);
		assert_int_equal(kiln_buf_append(&out, piece, n), 0);
	} while (n);
	metrics_scrape_free(s);
	metrics_cache_free(own);
	if (gzip) {
		text = gunzip(&out);
		kiln_buf_free(&out);
		return text;
	}
	return out.data ? out.data : strdup("");
}

static char *scrape(struct store *st, int (*want)(void *, const char *))
{
	return scrape_at(st, NULL, want, NOW, 0);
}

static void has(const char *text, const char *line)
{
	struct kiln_buf want;
	int found;

	kiln_buf_init(&want, 0);
	assert_int_equal(kiln_buf_printf(&want, "\n%s\n", line), 0);
	found = strstr(text, want.data) != NULL;
	kiln_buf_free(&want);
	if (!found)
		fail_msg("missing line: %s", line);
}

static void lacks(const char *text, const char *part)
{
	if (strstr(text, part))
		fail_msg("unexpected: %s", part);
}

static void test_node_series(void **state)
{
	struct fx *f = *state;
	char *t;

	fleet_fill(f->st);
	t = scrape(f->st, NULL);
	has(t, "kiln_nodes 3");
	has(t, "kiln_node_power_on{node=\"g1\",rack=\"r01\"} 1");
	has(t, "kiln_node_power_unknown{node=\"g1\",rack=\"r01\"} 0");
	has(t, "kiln_node_power_reading_age_seconds{node=\"g1\",rack=\"r01\"} 5");
	has(t, "kiln_node_health_level{node=\"g1\",rack=\"r01\"} 2");
	has(t, "kiln_node_hung{node=\"g1\",rack=\"r01\"} 1");
	has(t, "kiln_node_health_reason{node=\"g1\",rack=\"r01\",kind=\"hung\"} 1");
	has(t, "kiln_node_health_reason{node=\"g1\",rack=\"r01\",kind=\"xid\"} 1");
	has(t, "kiln_node_repair{node=\"g1\",rack=\"r01\",repair=\"reboot\"} 1");
	/* two psu reasons, one series */
	has(t, "kiln_node_health_reason{node=\"g1\",rack=\"r01\",kind=\"psu\"} 1");
	/* nothing known of g3: power unknown, no health verdict */
	has(t, "kiln_node_power_on{node=\"g3\"} 0");
	has(t, "kiln_node_power_unknown{node=\"g3\"} 1");
	lacks(t, "kiln_node_health_level{node=\"g3\"}");
	free(t);
}

static void test_bmc_series(void **state)
{
	struct fx *f = *state;
	char *t;

	fleet_fill(f->st);
	t = scrape(f->st, NULL);
	has(t, "kiln_bmc_inlet_temperature_celsius{node=\"g1\",rack=\"r01\"} 47");
	has(t, "kiln_bmc_power_watts{node=\"g1\",rack=\"r01\"} 3210.5");
	has(t, "kiln_bmc_psus_failed{node=\"g1\",rack=\"r01\"} 1");
	/* the two fans of one name: one series, the failure counted twice */
	has(t, "kiln_bmc_fans_failed{node=\"g1\",rack=\"r01\"} 2");
	has(t, "kiln_bmc_sensor_reading{node=\"g1\",rack=\"r01\",kind=\"fan\",sensor=\"Fan1\",unit=\"RPM\"} 5400");
	has(t, "kiln_bmc_sensor_healthy{node=\"g1\",rack=\"r01\",kind=\"psu\",sensor=\"PS2 Status\"} 0");
	/* a null reading is left out, not 0 */
	lacks(t, "kiln_bmc_sensor_reading{node=\"g1\",rack=\"r01\",kind=\"psu\",sensor=\"PS1 Status\"");
	free(t);
}

static void test_agent_series(void **state)
{
	struct fx *f = *state;
	const char *g0 = "node=\"g1\",rack=\"r01\",gpu=\"0\",UUID=\"GPU-a\","
			 "pci_bus_id=\"00000000:18:00.0\",model_name=\"NVIDIA \\\"H100\\\"\"";
	char line[600], *t;

	fleet_fill(f->st);
	t = scrape(f->st, NULL);
	snprintf(line, sizeof(line), "kiln_gpu_temperature_celsius{%s} 41", g0);
	has(t, line);
	snprintf(line, sizeof(line), "kiln_gpu_power_watts{%s} 612.345", g0);
	has(t, line);
	snprintf(line, sizeof(line), "kiln_gpu_utilization_ratio{%s} 0.97", g0);
	has(t, line);
	snprintf(line, sizeof(line), "kiln_gpu_ecc_aggregate_errors_total{%s,type=\"uncorrected\"} 5", g0);
	has(t, line);
	snprintf(line, sizeof(line), "kiln_gpu_remapped_rows_pending{%s} 1", g0);
	has(t, line);
	snprintf(line, sizeof(line), "kiln_gpu_clock_event_reason{%s,reason=\"hw_thermal_slowdown\"} 1", g0);
	has(t, line);
	/* GPU 1 reported no temperature: none exported */
	lacks(t, "kiln_gpu_temperature_celsius{node=\"g1\",rack=\"r01\",gpu=\"1\"");
	has(t, "kiln_node_nvidia_driver_info{node=\"g1\",rack=\"r01\",driver_version=\"550.54.15\","
	       "kernel_module_version=\"535.104.05\",cuda_driver_version=\"12.4\",status=\"ok\"} 1");
	has(t, "kiln_node_reboot_pending{node=\"g1\",rack=\"r01\"} 1");
	has(t, "kiln_node_gpus_seen{node=\"g1\",rack=\"r01\"} 2");
	has(t, "kiln_node_gpus_expected{node=\"g1\",rack=\"r01\"} 8");
	has(t, "kiln_node_cudnn_info{node=\"g1\",rack=\"r01\",version=\"9.1.0\"} 1");
	has(t, "kiln_node_cuda_toolkit_info{node=\"g1\",rack=\"r01\",version=\"12.4\",path=\"/usr/local/cuda-12.4\"} 1");
	has(t, "kiln_node_xid_events_total{node=\"g1\",rack=\"r01\"} 2");
	has(t, "kiln_node_xid_last{node=\"g1\",rack=\"r01\"} 79");
	has(t, "kiln_node_agent_silent{node=\"g1\",rack=\"r01\"} 0");
	free(t);
}

static void test_silent_agent(void **state)
{
	struct fx *f = *state;
	char *t;

	fleet_fill(f->st);
	t = scrape(f->st, NULL);
	/* 91 s of silence with 3 intervals of 30 s: only the silence is exported */
	has(t, "kiln_node_agent_silent{node=\"g2\"} 1");
	has(t, "kiln_node_agent_last_seen_age_seconds{node=\"g2\"} 91");
	lacks(t, "kiln_gpu_temperature_celsius{node=\"g2\"");
	lacks(t, "kiln_gpu_info{node=\"g2\"");
	lacks(t, "kiln_node_nvidia_driver_info{node=\"g2\"");
	lacks(t, "kiln_node_gpus_seen{node=\"g2\"");
	lacks(t, "kiln_node_reboot_pending{node=\"g2\"");
	free(t);
}

static int only_g2(void *ud, const char *node)
{
	(void)ud;
	return strcmp(node, "g2") == 0;
}

static void test_range_and_families(void **state)
{
	struct fx *f = *state;
	char *t, *p;

	fleet_fill(f->st);
	t = scrape(f->st, only_g2);
	has(t, "kiln_nodes 1");
	lacks(t, "node=\"g1\"");
	lacks(t, "node=\"g3\"");
	has(t, "kiln_node_power_unknown{node=\"g2\"} 1");
	/* kilnd's own families are in every scrape */
	assert_non_null(strstr(t, "\nkiln_build_info{version=\""));
	assert_non_null(strstr(t, "\n# TYPE kiln_bmc_poll_duration_seconds histogram\n"));
	/* every family's HELP once */
	for (p = strstr(t, "# HELP "); p; p = strstr(p + 1, "# HELP ")) {
		char name[128], again[140];

		assert_int_equal(sscanf(p, "# HELP %127s", name), 1);
		snprintf(again, sizeof(again), "# HELP %s ", name);
		assert_null(strstr(p + 1, again));
	}
	free(t);
}

/* The node part of the answer: everything before kilnd's own families. */
static char *nodes_part(char *t)
{
	char *own = strstr(t, "# HELP kiln_build_info ");

	assert_non_null(own);
	*own = '\0';
	return t;
}

static char *file_read(const char *name)
{
	char path[512];
	struct kiln_buf b;
	char chunk[4096];
	size_t n;
	FILE *fp;

	snprintf(path, sizeof(path), "%s/unit/server/data/%s", KILN_TEST_DATA, name);
	assert_non_null(fp = fopen(path, "r"));
	kiln_buf_init(&b, 0);
	while ((n = fread(chunk, 1, sizeof(chunk), fp)) > 0)
		assert_int_equal(kiln_buf_append(&b, chunk, n), 0);
	fclose(fp);
	return b.data;
}

/* The answer is the text kilnd wrote before its blocks were kept, byte for byte (the file
 * was written by the former metrics_write), plain and gzip alike. */
static void test_same_answer_as_before(void **state)
{
	struct fx *f = *state;
	char *want = file_read("metrics_fleet.prom"), *plain, *gz;

	fleet_fill(f->st);
	plain = scrape_at(f->st, NULL, NULL, NOW, 0);
	gz = scrape_at(f->st, NULL, NULL, NOW, 1);
	assert_string_equal(plain, gz);
	assert_string_equal(nodes_part(plain), want);
	free(plain);
	free(gz);
	free(want);
}

static int64_t node_id(struct store *st, const char *name)
{
	struct node *n;
	int64_t id;

	assert_int_equal(store_node_get(st, &n, name), 0);
	id = n->id;
	node_free(n);
	return id;
}

/* A new report for g1: GPU 0 at 43 degrees. */
static void report_again(struct store *st, const char *report_id, int64_t seen)
{
	struct agent_state a = { 0 };
	char *text = strdup(report);
	char *t = strstr(text, "\"temperature_c\":41");

	assert_non_null(t);
	t[17] = '3';
	a.node_id = node_id(st, "g1");
	a.report_id = (char *)report_id;
	a.report = text;
	a.last_seen = seen;
	a.report_time = seen;
	a.nvidia_status = "ok";
	a.driver_version = "550.54.15";
	a.kernel_module_version = "550.54.15";
	a.cuda_driver_version = "12.4";
	a.gpu_count = 2;
	a.gpu_count_max = 8;
	a.interval_s = -1;
	assert_int_equal(store_agent_state_put(st, &a), 0);
	free(text);
}

/* g3's BMC read for the first time at time at: its inlet at 31 degrees. */
static void sensors_read(struct store *st, int64_t at)
{
	struct fleet_state fs;

	fleet_state_init(&fs, node_id(st, "g3"));
	snprintf(fs.power, sizeof(fs.power), "off");
	fs.power_time = at;
	fs.last_ok = at;
	fs.sensors = "{\"sensors\":[{\"name\":\"Inlet Temp\",\"kind\":\"temperature\","
		     "\"value\":31,\"unit\":\"C\",\"health\":\"OK\"}]}";
	fs.sensors_time = at;
	assert_int_equal(store_fleet_state_put(st, &fs), 0);
}

static void renders(struct metrics_cache *c, uint64_t bmc, uint64_t reports)
{
	struct metrics_cache_stats cs;

	metrics_cache_stats(c, &cs);
	assert_int_equal(cs.bmc_renders, bmc);
	assert_int_equal(cs.report_renders, reports);
}

/* Only the node whose data moved is made again; the answer from the cache is the answer a
 * new cache gives, gzip and plain. */
static void test_cache_follows_changes(void **state)
{
	struct fx *f = *state;
	struct metrics_cache *c;
	char *t, *fresh, *gz;

	assert_int_equal(metrics_cache_new(&c), 0);
	fleet_fill(f->st);
	free(scrape_at(f->st, c, NULL, NOW, 0));
	/* every node's BMC series, and the report of the one fresh agent (g2's is silent) */
	renders(c, 3, 1);
	free(scrape_at(f->st, c, NULL, NOW, 1));
	renders(c, 3, 1);

	report_again(f->st, "r1b", NOW - 2);
	t = scrape_at(f->st, c, NULL, NOW, 0);
	renders(c, 3, 2);
	has(t, "kiln_gpu_temperature_celsius{node=\"g1\",rack=\"r01\",gpu=\"0\",UUID=\"GPU-a\","
	       "pci_bus_id=\"00000000:18:00.0\",model_name=\"NVIDIA \\\"H100\\\"\"} 43");
	has(t, "kiln_node_reboot_pending{node=\"g1\",rack=\"r01\"} 0");
	has(t, "kiln_node_agent_last_seen_age_seconds{node=\"g1\",rack=\"r01\"} 2");
	free(t);

	sensors_read(f->st, NOW - 3);
	t = scrape_at(f->st, c, NULL, NOW, 0);
	renders(c, 4, 2);
	has(t, "kiln_bmc_inlet_temperature_celsius{node=\"g3\"} 31");
	has(t, "kiln_node_power_on{node=\"g3\"} 0");
	fresh = scrape_at(f->st, NULL, NULL, NOW, 0);
	assert_string_equal(nodes_part(t), nodes_part(fresh));
	free(t);
	free(fresh);

	/* another rack: the labels change, so do the node's blocks */
	{
		struct node *n;

		assert_int_equal(store_node_get(f->st, &n, "g1"), 0);
		free(n->rack);
		n->rack = strdup("r02");
		assert_int_equal(store_node_update(f->st, n), 0);
		node_free(n);
	}
	gz = scrape_at(f->st, c, NULL, NOW, 1);
	renders(c, 5, 3);
	fresh = scrape_at(f->st, NULL, NULL, NOW, 0);
	assert_string_equal(nodes_part(gz), nodes_part(fresh));
	lacks(gz, "r01");
	has(gz, "kiln_bmc_psus_failed{node=\"g1\",rack=\"r02\"} 1");
	free(gz);
	free(fresh);
	metrics_cache_free(c);
}

/* What depends on the scrape's time moves with it, from the same blocks. */
static void test_time_moves(void **state)
{
	struct fx *f = *state;
	struct metrics_cache *c;
	char *first, *t;

	assert_int_equal(metrics_cache_new(&c), 0);
	fleet_fill(f->st);
	first = scrape_at(f->st, c, NULL, NOW, 0);
	t = scrape_at(f->st, c, NULL, NOW + 50, 1);
	has(t, "kiln_node_power_reading_age_seconds{node=\"g1\",rack=\"r01\"} 55");
	has(t, "kiln_node_agent_last_seen_age_seconds{node=\"g1\",rack=\"r01\"} 60");
	has(t, "kiln_node_agent_silent{node=\"g1\",rack=\"r01\"} 0");
	has(t, "kiln_node_gpus_seen{node=\"g1\",rack=\"r01\"} 2");
	free(t);
	/* 3 intervals of 30 s past: g1's agent is silent, its agent series gone */
	t = scrape_at(f->st, c, NULL, NOW + 81, 0);
	has(t, "kiln_node_agent_silent{node=\"g1\",rack=\"r01\"} 1");
	has(t, "kiln_node_agent_last_seen_age_seconds{node=\"g1\",rack=\"r01\"} 91");
	lacks(t, "kiln_gpu_info{node=\"g1\"");
	lacks(t, "kiln_node_cudnn_info{node=\"g1\"");
	lacks(t, "kiln_node_xid_events_total{node=\"g1\"");
	lacks(t, "kiln_node_gpus_seen{node=\"g1\"");
	has(t, "kiln_bmc_psus_failed{node=\"g1\",rack=\"r01\"} 1");
	free(t);
	/* and back: the same answer as at first, nothing made again */
	t = scrape_at(f->st, c, NULL, NOW, 1);
	assert_string_equal(nodes_part(t), nodes_part(first));
	renders(c, 3, 1);
	free(t);
	free(first);
	metrics_cache_free(c);
}

/* A node deleted is gone from the answer and from the cache. */
static void test_node_deleted(void **state)
{
	struct fx *f = *state;
	struct metrics_cache_stats cs;
	struct metrics_cache *c;
	char *t;

	assert_int_equal(metrics_cache_new(&c), 0);
	fleet_fill(f->st);
	free(scrape_at(f->st, c, NULL, NOW, 0));
	metrics_cache_stats(c, &cs);
	assert_int_equal(cs.nodes, 3);
	assert_true(cs.bytes > 0);
	assert_int_equal(store_node_delete(f->st, "g1"), 0);
	t = scrape_at(f->st, c, NULL, NOW, 1);
	lacks(t, "node=\"g1\"");
	has(t, "kiln_nodes 2");
	metrics_cache_stats(c, &cs);
	assert_int_equal(cs.nodes, 2);
	free(t);
	/* a range scrape keeps the nodes it does not show */
	t = scrape_at(f->st, c, only_g2, NOW, 0);
	lacks(t, "node=\"g3\"");
	metrics_cache_stats(c, &cs);
	assert_int_equal(cs.nodes, 2);
	free(t);
	metrics_cache_free(c);
}

/* Polls the cache's counts for up to 5 s until the report renders reach at least want. */
static void report_renders_wait(struct metrics_cache *c, uint64_t want)
{
	struct metrics_cache_stats cs;

	for (int i = 0; i < 100 && (metrics_cache_stats(c, &cs), cs.report_renders < want); i++)
		usleep(50 * 1000);
}

/* The warming thread makes the blocks between scrapes, from its own store handle: a scrape
 * then has nothing left to make. */
static void test_warm_between_scrapes(void **state)
{
	struct fx *f = *state;
	struct metrics_options opt = { .silent_intervals = 3, .default_interval_s = 30 };
	struct metrics_cache_stats cs;
	struct metrics_cache *c;
	int64_t now = (int64_t)time(NULL);
	char *t;

	fleet_fill(f->st);
	assert_int_equal(metrics_cache_new(&c), 0);
	assert_int_equal(metrics_cache_warm(c, f->db, &opt, 1, 0), 0);
	/* its clock is the real one: g1's report of 1970 is silent, not read; then one of now */
	for (int i = 0; i < 100 && (metrics_cache_stats(c, &cs), cs.bmc_renders < 3); i++)
		usleep(50 * 1000);
	renders(c, 3, 0);
	report_again(f->st, "r1b", now);
	report_renders_wait(c, 1);
	renders(c, 3, 1);
	t = scrape_at(f->st, c, NULL, now, 1);
	renders(c, 3, 1);
	has(t, "kiln_gpu_temperature_celsius{node=\"g1\",rack=\"r01\",gpu=\"0\",UUID=\"GPU-a\","
	       "pci_bus_id=\"00000000:18:00.0\",model_name=\"NVIDIA \\\"H100\\\"\"} 43");
	free(t);
	metrics_cache_free(c);
}

/* Once warm, the thread makes nothing while nobody scrapes, and goes on after a scrape. */
static void test_warm_idle(void **state)
{
	struct fx *f = *state;
	struct metrics_options opt = { .silent_intervals = 3, .default_interval_s = 30 };
	struct metrics_cache_stats cs;
	struct metrics_cache *c;
	int64_t now = (int64_t)time(NULL);

	fleet_fill(f->st);
	assert_int_equal(metrics_cache_new(&c), 0);
	assert_int_equal(metrics_cache_warm(c, f->db, &opt, 1, 1), 0);
	/* made at once, without a scrape */
	for (int i = 0; i < 100 && (metrics_cache_stats(c, &cs), cs.bmc_renders < 3); i++)
		usleep(50 * 1000);
	renders(c, 3, 0);
	usleep(1500 * 1000);
	report_again(f->st, "r1b", now);
	usleep(2500 * 1000);
	renders(c, 3, 0);
	free(scrape_at(f->st, c, NULL, now, 0));
	renders(c, 3, 1);
	report_again(f->st, "r1c", now);
	report_renders_wait(c, 2);
	renders(c, 3, 2);
	metrics_cache_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_node_series, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_bmc_series, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_agent_series, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_silent_agent, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_range_and_families, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_same_answer_as_before, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_cache_follows_changes, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_time_moves, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_node_deleted, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_warm_between_scrapes, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_warm_idle, fx_setup, fx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
