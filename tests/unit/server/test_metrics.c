/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for server/metrics/metrics.c over a real store: what a node exports from its poller
 * state, health, sensors and agent report; a silent agent's series left out; the range. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

static char *scrape(struct store *st, int (*want)(void *, const char *))
{
	struct metrics_options opt = { .silent_intervals = 3, .default_interval_s = 30,
				       .want = want };
	struct expo e;
	char *text;

	expo_init(&e, 0);
	assert_int_equal(metrics_write(&e, st, &opt, NOW), 0);
	text = kiln_buf_steal(&e.out);
	expo_free(&e);
	assert_non_null(text);
	return text;
}

static void has(const char *text, const char *line)
{
	char want[600];

	snprintf(want, sizeof(want), "\n%s\n", line);
	if (!strstr(text, want))
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_node_series, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_bmc_series, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_agent_series, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_silent_agent, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_range_and_families, fx_setup, fx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
