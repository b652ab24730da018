/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for server/health/health_facts.c: the BMC's evidence read from the poller's state
 * and events (busy mark, PSUs and their redundancy set, critical log entries that arrived). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "health/health_facts.h"

#define NOW 1700000000

/* Four PSUs in a set that needs three; PS2 and PS4 report failures. */
static const char sensors[] =
	"{\"sensors\":["
	"{\"name\":\"PS1\",\"kind\":\"psu\",\"health\":\"OK\",\"id\":\"/P#/PowerSupplies/0\"},"
	"{\"name\":\"PS2\",\"kind\":\"psu\",\"health\":\"Critical\",\"id\":\"/P#/PowerSupplies/1\"},"
	"{\"name\":\"PS3\",\"kind\":\"psu\",\"health\":null,\"id\":\"/P#/PowerSupplies/2\"},"
	"{\"name\":\"PS4\",\"kind\":\"psu\",\"health\":\"Warning\",\"id\":\"/P#/PowerSupplies/3\"},"
	"{\"name\":\"PS Set\",\"kind\":\"psu\",\"health\":\"OK\",\"redundancy\":{\"min_needed\":3,"
	"\"members\":[\"/P#/PowerSupplies/0\",\"/P#/PowerSupplies/1\",\"/P#/PowerSupplies/2\","
	"\"/P#/PowerSupplies/3\"]}}]}";

struct fx {
	struct store *st;
	struct node n;
	struct fleet_state fs;
};

static int fx_setup(void **state)
{
	static struct fx f;

	memset(&f, 0, sizeof(f));
	assert_int_equal(store_open(&f.st, ":memory:"), 0);
	f.n.name = "gpu01";
	f.n.ipmi_cipher = 3;
	f.n.bmc_protocol = BMC_REDFISH_HTTP;
	f.n.bmc_host = "127.0.0.1";
	assert_int_equal(store_node_insert(f.st, &f.n), 0);
	fleet_state_init(&f.fs, f.n.id);
	*state = &f;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *f = *state;

	store_close(f->st);
	return 0;
}

static void gather(struct health_facts *hf, struct health_sources *src, struct fx *f)
{
	struct health_config cfg;

	health_config_defaults(&cfg);
	assert_int_equal(health_facts_gather(hf, src, f->st, &f->n, &f->fs, 0, NOW, &cfg), 0);
}

static void test_psus(void **state)
{
	struct fx *f = *state;
	struct health_facts hf;
	struct health_sources src;

	f->fs.sensors = (char *)sensors;
	gather(&hf, &src, f);
	assert_int_equal(hf.psu_failed, 2);
	assert_string_equal(hf.psu_failed_names, "PS2 (Critical), PS4 (Warning)");
	/* the BMC calls the set OK, but two healthy of three needed is no redundancy */
	assert_true(hf.psu_redundancy_lost);
	assert_string_equal(hf.psu_redundancy_name, "PS Set");
	assert_int_equal(hf.psu_healthy, 2);
	assert_int_equal(hf.psu_needed, 3);
	health_sources_clear(&src);

	/* a set the BMC itself calls lost, without counts */
	f->fs.sensors = "{\"sensors\":[{\"name\":\"PSU Redundancy\",\"kind\":\"psu\","
			"\"health\":\"Critical\",\"redundancy\":{\"members\":[]}}]}";
	gather(&hf, &src, f);
	assert_true(hf.psu_redundancy_lost);
	assert_int_equal(hf.psu_failed, 0);
	assert_int_equal(hf.psu_healthy, -1);
	health_sources_clear(&src);
	f->fs.sensors = NULL;
}

static void test_busy_mark(void **state)
{
	struct fx *f = *state;
	struct health_facts hf;
	struct health_sources src;

	f->fs.power_error = "bmc busy: 503 'RAC0218: sessions full'";
	gather(&hf, &src, f);
	assert_true(hf.bmc_busy);
	assert_string_equal(hf.bmc_busy_detail, "503 'RAC0218: sessions full'");
	health_sources_clear(&src);
	/* the same text on an unreachable BMC is not the mark */
	f->fs.reachable = 0;
	gather(&hf, &src, f);
	assert_false(hf.bmc_busy);
	health_sources_clear(&src);
	f->fs.reachable = 1;
	f->fs.power_error = NULL;
}

static void event(struct fx *f, int64_t t, enum event_severity sev, const char *kind,
		  const char *msg, const char *key)
{
	struct event ev = { .time = t, .node_id = f->n.id, .severity = sev, .source = "bmc",
			    .kind = (char *)kind, .message = (char *)msg, .dedup_key = (char *)key };

	assert_int_equal(store_event_insert(f->st, &ev, NULL), 0);
}

static void test_bmc_logs(void **state)
{
	struct fx *f = *state;
	struct health_facts hf;
	struct health_sources src;

	event(f, NOW - 7200, SEV_INFO, "bmc_log", "SEL 1: too old", "bmc_log:1:1");
	event(f, NOW - 600, SEV_CRITICAL, "sel", "SEL 2: there at first contact", "sel:2:2");
	event(f, NOW - 30, SEV_CRITICAL, "sel", "SEL 4: fatal bus error", "sel:4:4");
	event(f, NOW - 30, SEV_INFO, "bmc_log", "SEL 4: fatal bus error", "bmc_log:4:4");
	gather(&hf, &src, f);
	assert_int_equal(hf.nbmc_logs, 1);
	assert_int_equal(hf.bmc_logs[0].time, NOW - 30);
	assert_string_equal(hf.bmc_logs[0].message, "SEL 4: fatal bus error");
	health_sources_clear(&src);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_psus, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_busy_mark, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_bmc_logs, fx_setup, fx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
