/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for the parts rules (server/health/parts_rules.c): rows of the BMC's sensors JSON, as
 * the Redfish and IPMI drivers write them from iDRAC, iLO, OpenBMC and FreeIPMI readings, to
 * the reasons, their level and repair class. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "health/health.h"
#include "health/health_facts.h"

#define NOW 1700000000

struct row {
	const char *what;
	const char *sensors;        /* the sensors JSON */
	int power;                  /* 1 on, 2 off */
	const char *reason;         /* the reason expected (a prefix), NULL: no parts reason */
	enum health_level level;
	enum health_repair repair;
};

static void evaluate(struct health_result *res, const char *sensors, int power)
{
	struct health_facts f;
	struct health_config cfg;

	health_config_defaults(&cfg);
	health_facts_init(&f, NOW);
	f.has_bmc = 1;
	f.bmc_reachable = 1;
	f.power = power;
	f.power_time = NOW - 5;
	f.agent_last_seen = NOW - 10;
	f.agent_interval_s = 30;
	f.gpus_seen = f.gpus_expected = 8;
	f.hottest_gpu_c = 60;
	f.inlet_c = 24;
	f.nvidia_status = "ok";
	f.driver_version = f.kernel_module_version = "550.54.15";
	health_sensor_facts(&f, sensors);
	health_evaluate(res, &f, &cfg);
}

/* The first reason of the parts' kinds, or NULL. */
static const char *parts_reason(const struct health_result *res, size_t *at)
{
	for (size_t i = 0; i < res->nreasons; i++) {
		const char *k = health_reason_kind(res->reasons[i]);

		if (strcmp(k, "fan") == 0 || strcmp(k, "part") == 0 || strcmp(k, "bmc_clock") == 0) {
			*at = i;
			return res->reasons[i];
		}
	}
	return NULL;
}

static const struct row rows[] = {
	{ "iDRAC fan at 0 RPM, rated Critical (legacy Thermal)",
	  "{\"sensors\":[{\"name\":\"System Board Fan2A\",\"kind\":\"fan\",\"value\":0,\"unit\":\"RPM\","
	  "\"health\":\"Critical\",\"id\":\"0x17||Fan.Embedded.2\",\"state\":\"Enabled\"}]}",
	  1, "fan: Fan.Embedded.2 (System Board Fan2A) at 0 RPM, Critical", HEALTH_CRITICAL,
	  HEALTH_REPAIR_INSPECTION },
	{ "iDRAC fan at 7080 RPM, OK",
	  "{\"sensors\":[{\"name\":\"System Board Fan1A\",\"kind\":\"fan\",\"value\":7080,\"unit\":\"RPM\","
	  "\"health\":\"OK\",\"id\":\"0x17||Fan.Embedded.1\",\"state\":\"Enabled\"}]}",
	  1, NULL, HEALTH_OK, HEALTH_REPAIR_NONE },
	{ "iLO 5 fan in percent at 0 is no stopped fan, rated OK",
	  "{\"sensors\":[{\"name\":\"Fan 3\",\"kind\":\"fan\",\"value\":0,\"unit\":\"%\","
	  "\"health\":\"OK\",\"id\":\"2\",\"state\":\"Enabled\"}]}",
	  1, NULL, HEALTH_OK, HEALTH_REPAIR_NONE },
	{ "iLO 5 fan rated Warning (a degraded rotor), named by Name: the Id is a list index",
	  "{\"sensors\":[{\"name\":\"Fan 3\",\"kind\":\"fan\",\"value\":41,\"unit\":\"%\","
	  "\"health\":\"Warning\",\"id\":\"2\",\"state\":\"Enabled\"}]}",
	  1, "fan: Fan 3 Warning", HEALTH_WARNING, HEALTH_REPAIR_INSPECTION },
	{ "OpenBMC fan at 0 RPM the BMC does not rate, host on",
	  "{\"sensors\":[{\"name\":\"fan0\",\"kind\":\"fan\",\"value\":0,\"unit\":\"RPM\","
	  "\"health\":null,\"id\":\"fan0\",\"location\":\"FAN0\"}]}",
	  1, "fan: fan0 (FAN0) at 0 RPM", HEALTH_WARNING, HEALTH_REPAIR_INSPECTION },
	{ "OpenBMC fans stand still with the host off: no fault",
	  "{\"sensors\":[{\"name\":\"fan0\",\"kind\":\"fan\",\"value\":0,\"unit\":\"RPM\","
	  "\"health\":\"OK\",\"id\":\"fan0\"}]}",
	  2, NULL, HEALTH_OK, HEALTH_REPAIR_NONE },
	{ "an empty fan slot listed at 0 RPM (State UnavailableOffline)",
	  "{\"sensors\":[{\"name\":\"Fan 7\",\"kind\":\"fan\",\"value\":0,\"unit\":\"RPM\","
	  "\"health\":null,\"state\":\"UnavailableOffline\"}]}",
	  1, NULL, HEALTH_OK, HEALTH_REPAIR_NONE },
	{ "IPMI fan sensor, Critical, 0 RPM",
	  "{\"sensors\":[{\"name\":\"FAN2\",\"kind\":\"fan\",\"value\":0.0,\"unit\":\"RPM\","
	  "\"health\":\"critical\",\"record_id\":12}]}",
	  1, "fan: FAN2 at 0 RPM, Critical", HEALTH_CRITICAL, HEALTH_REPAIR_INSPECTION },
	{ "IPMI fan slot not installed (discrete state)",
	  "{\"sensors\":[{\"name\":\"FAN6\",\"kind\":\"fan\",\"value\":0.0,\"unit\":\"RPM\","
	  "\"health\":\"ok\",\"states\":[\"Device Absent\"]}]}",
	  1, NULL, HEALTH_OK, HEALTH_REPAIR_NONE },
	{ "IPMI critical sensor of another type",
	  "{\"sensors\":[{\"name\":\"CPU1 VCCIN\",\"kind\":\"voltage\",\"value\":2.1,\"unit\":\"V\","
	  "\"health\":\"critical\"}]}",
	  1, "part: sensor CPU1 VCCIN Critical", HEALTH_CRITICAL, HEALTH_REPAIR_INSPECTION },
	{ "iDRAC DIMM rated Critical",
	  "{\"sensors\":[{\"name\":\"DIMM B2\",\"kind\":\"part\",\"part\":\"memory\",\"value\":null,"
	  "\"unit\":\"\",\"health\":\"Critical\",\"id\":\"DIMM.Socket.B2\",\"location\":\"CPU2 DIMM B2\"}],"
	  "\"rollups\":[{\"name\":\"system\",\"health\":\"Critical\"}]}",
	  1, "part: memory DIMM.Socket.B2 (CPU2 DIMM B2) Critical", HEALTH_CRITICAL,
	  HEALTH_REPAIR_INSPECTION },
	{ "iLO 6 DIMM rated Warning (PROC 1 DIMM 8)",
	  "{\"sensors\":[{\"name\":\"proc1dimm8\",\"kind\":\"part\",\"part\":\"memory\",\"value\":null,"
	  "\"unit\":\"\",\"health\":\"Warning\",\"id\":\"proc1dimm8\",\"location\":\"PROC 1 DIMM 8\"}]}",
	  1, "part: memory proc1dimm8 (PROC 1 DIMM 8) Warning", HEALTH_WARNING,
	  HEALTH_REPAIR_INSPECTION },
	{ "iLO 6 NVMe drive rated Critical, its bay",
	  "{\"sensors\":[{\"name\":\"1.60TB 64G NVMe SSD\",\"kind\":\"part\",\"part\":\"drive\","
	  "\"value\":null,\"unit\":\"\",\"health\":\"Critical\",\"id\":\"3\","
	  "\"location\":\"Slot=18:Port=1:Box=1:Bay=6\"}]}",
	  1, "part: drive 1.60TB 64G NVMe SSD (Slot=18:Port=1:Box=1:Bay=6) Critical",
	  HEALTH_CRITICAL, HEALTH_REPAIR_INSPECTION },
	{ "a GPU the BMC rates Critical (iLO 6 Processors)",
	  "{\"sensors\":[{\"name\":\"NVIDIA H100 NVL\",\"kind\":\"part\",\"part\":\"gpu\","
	  "\"value\":null,\"unit\":\"\",\"health\":\"Critical\",\"id\":\"3\"}]}",
	  1, "part: gpu NVIDIA H100 NVL Critical", HEALTH_CRITICAL, HEALTH_REPAIR_INSPECTION },
	{ "iDRAC XR8620t: the system Critical, every part read OK",
	  "{\"sensors\":[{\"name\":\"System Board Fan1A\",\"kind\":\"fan\",\"value\":7080,"
	  "\"unit\":\"RPM\",\"health\":\"OK\"}],\"rollups\":[{\"name\":\"system\",\"health\":\"Critical\"}]}",
	  1, "part: the BMC rates the system Critical (HealthRollup) but no part kiln reads is: "
	  "see the BMC's log", HEALTH_WARNING, HEALTH_REPAIR_INSPECTION },
	{ "a rollup no worse than the parts read says nothing more",
	  "{\"sensors\":[{\"name\":\"Fan 1\",\"kind\":\"fan\",\"value\":20,\"unit\":\"%\","
	  "\"health\":\"Warning\"}],\"rollups\":[{\"name\":\"system\",\"health\":\"Warning\"}]}",
	  1, "fan: Fan 1 Warning", HEALTH_WARNING, HEALTH_REPAIR_INSPECTION },
	{ "a failed PSU is rule_psu's alone, and explains the rollup",
	  "{\"sensors\":[{\"name\":\"PS2 Status\",\"kind\":\"psu\",\"value\":null,\"unit\":\"W\","
	  "\"health\":\"Critical\"}],\"rollups\":[{\"name\":\"system\",\"health\":\"Critical\"}]}",
	  1, NULL, HEALTH_WARNING, HEALTH_REPAIR_INSPECTION },
	{ "BMC clock 2 days 3 hours behind",
	  "{\"sensors\":[],\"bmc_clock\":{\"skew_s\":-183600,\"read\":1699999900}}",
	  1, "bmc clock: 2d 3h behind kilnd's (log times are the BMC's)", HEALTH_WARNING,
	  HEALTH_REPAIR_NONE },
	{ "BMC clock 7 minutes ahead",
	  "{\"sensors\":[],\"bmc_clock\":{\"skew_s\":450,\"read\":1699999900}}",
	  1, "bmc clock: 7m 30s ahead of kilnd's", HEALTH_WARNING, HEALTH_REPAIR_NONE },
	{ "BMC clock 5 minutes off: within bmc_clock_skew_max",
	  "{\"sensors\":[],\"bmc_clock\":{\"skew_s\":-300,\"read\":1699999900}}",
	  1, NULL, HEALTH_OK, HEALTH_REPAIR_NONE },
};

static void test_rows(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *w = &rows[i];
		struct health_result res;
		const char *got;
		size_t at = 0;

		evaluate(&res, w->sensors, w->power);
		got = parts_reason(&res, &at);
		if (!w->reason) {
			if (got)
				fail_msg("%s: unexpected reason '%s'", w->what, got);
		} else {
			if (!got || strncmp(got, w->reason, strlen(w->reason)) != 0)
				fail_msg("%s: got '%s', want '%s'", w->what, got ? got : "(none)", w->reason);
			assert_int_equal(res.repairs[at], w->repair);
			assert_int_equal(health_reason_repair(got), w->repair);
		}
		if (res.level != w->level)
			fail_msg("%s: level %d, want %d (%s)", w->what, res.level, w->level,
				 res.nreasons ? res.reasons[0] : "");
	}
}

/* A failed PSU is said once (rule_psu), never again by the parts rule. */
static void test_psu_once(void **state)
{
	struct health_result res;
	size_t psu = 0;

	(void)state;
	evaluate(&res, "{\"sensors\":[{\"name\":\"PS2 Status\",\"kind\":\"psu\",\"value\":null,"
		 "\"unit\":\"W\",\"health\":\"Critical\"}]}", 1);
	for (size_t i = 0; i < res.nreasons; i++) {
		psu += strstr(res.reasons[i], "PS2") != NULL;
		assert_string_not_equal(health_reason_kind(res.reasons[i]), "part");
	}
	assert_int_equal(psu, 1);
}

/* More failed parts than are named: the rest in one line. */
static void test_many_parts(void **state)
{
	char json[8192];
	size_t n = 0, more = 0;
	struct health_result res;

	(void)state;
	n += (size_t)snprintf(json + n, sizeof(json) - n, "{\"sensors\":[");
	for (int i = 0; i < 12; i++)
		n += (size_t)snprintf(json + n, sizeof(json) - n,
				      "%s{\"name\":\"DIMM A%d\",\"kind\":\"part\",\"part\":\"memory\","
				      "\"health\":\"Warning\",\"id\":\"DIMM.Socket.A%d\"}",
				      i ? "," : "", i + 1, i + 1);
	snprintf(json + n, sizeof(json) - n, "]}");
	evaluate(&res, json, 1);
	for (size_t i = 0; i < res.nreasons; i++)
		more += strncmp(res.reasons[i], "part: 4 more parts", 18) == 0;
	assert_int_equal(more, 1);
	assert_int_equal(res.level, HEALTH_WARNING);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rows),
		cmocka_unit_test(test_psu_once),
		cmocka_unit_test(test_many_parts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
