/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for the Redfish driver's parts, clock and log-arrival parsing (server/bmc/redfish/
 * parts.c, sensors.c, logs.c), with values shaped after iDRAC 9, iLO 5/6 and OpenBMC (bmcweb)
 * answers as the captures in ../shared/redfish-mockups fill them. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "bmc/redfish/internal.h"

static json_t *parse(const char *text)
{
	json_error_t err;
	json_t *j = json_loads(text, 0, &err);

	if (!j)
		fail_msg("bad fixture JSON: %s (line %d)", err.text, err.line);
	return j;
}

static const char *field(const json_t *row, const char *key)
{
	return json_string_value(json_object_get(row, key));
}

/* iDRAC's legacy Thermal: a fan at 0 RPM rated Critical keeps its MemberId and State. */
static void test_fans_idrac(void **state)
{
	json_t *thermal = parse(
		"{\"@odata.id\":\"/redfish/v1/Chassis/System.Embedded.1/Thermal\",\"Fans\":["
		"{\"@odata.id\":\"/redfish/v1/Chassis/System.Embedded.1/Thermal#/Fans/0\","
		"\"MemberId\":\"0x17||Fan.Embedded.1A\",\"Name\":\"System Board Fan1A\","
		"\"FanName\":\"System Board Fan1A\",\"Reading\":7080,\"ReadingUnits\":\"RPM\","
		"\"LowerThresholdCritical\":600,\"Status\":{\"Health\":\"OK\",\"State\":\"Enabled\"}},"
		"{\"@odata.id\":\"/redfish/v1/Chassis/System.Embedded.1/Thermal#/Fans/3\","
		"\"MemberId\":\"0x17||Fan.Embedded.2B\",\"Name\":\"System Board Fan2B\","
		"\"FanName\":\"System Board Fan2B\",\"Reading\":0,\"ReadingUnits\":\"RPM\","
		"\"LowerThresholdCritical\":600,\"Status\":{\"Health\":\"Critical\",\"State\":\"Enabled\"}}]}");
	json_t *out = json_array(), *fan;

	(void)state;
	rf_sensors_from_thermal(out, thermal);
	assert_int_equal(json_array_size(out), 2);
	fan = json_array_get(out, 1);
	assert_string_equal(field(fan, "kind"), "fan");
	assert_string_equal(field(fan, "name"), "System Board Fan2B");
	assert_string_equal(field(fan, "id"), "0x17||Fan.Embedded.2B");
	assert_string_equal(field(fan, "health"), "Critical");
	assert_string_equal(field(fan, "state"), "Enabled");
	assert_string_equal(field(fan, "unit"), "RPM");
	assert_true(json_number_value(json_object_get(fan, "value")) == 0);
	json_decref(out);
	json_decref(thermal);
}

/* iLO 5: fans in percent; an empty bay listed Absent at 0 is left out. */
static void test_fans_ilo(void **state)
{
	json_t *thermal = parse(
		"{\"Fans\":[{\"MemberId\":\"0\",\"Name\":\"Fan 1\",\"Reading\":26,\"ReadingUnits\":\"Percent\","
		"\"Status\":{\"Health\":\"OK\",\"State\":\"Enabled\"}},"
		"{\"MemberId\":\"6\",\"Name\":\"Fan 7\",\"Reading\":0,\"ReadingUnits\":\"Percent\","
		"\"Status\":{\"State\":\"Absent\"}},"
		"{\"MemberId\":\"2\",\"Name\":\"Fan 3\",\"Reading\":60,\"ReadingUnits\":\"Percent\","
		"\"Status\":{\"Health\":\"Warning\",\"State\":\"Enabled\"}}]}");
	json_t *out = json_array(), *fan;

	(void)state;
	rf_sensors_from_thermal(out, thermal);
	assert_int_equal(json_array_size(out), 2);
	fan = json_array_get(out, 1);
	assert_string_equal(field(fan, "name"), "Fan 3");
	assert_string_equal(field(fan, "id"), "2");
	assert_string_equal(field(fan, "unit"), "%");
	assert_string_equal(field(fan, "health"), "Warning");
	json_decref(out);
	json_decref(thermal);
}

/* OpenBMC (bmcweb) ThermalSubsystem Fan: SpeedPercent.SpeedRPM, its ServiceLabel. */
static void test_fans_openbmc(void **state)
{
	json_t *fan = parse(
		"{\"@odata.id\":\"/redfish/v1/Chassis/chassis/ThermalSubsystem/Fans/fan2\","
		"\"@odata.type\":\"#Fan.v1_3_0.Fan\",\"Id\":\"fan2\",\"Name\":\"Fan 2\","
		"\"Location\":{\"PartLocation\":{\"ServiceLabel\":\"FAN2\",\"LocationType\":\"Slot\"}},"
		"\"SpeedPercent\":{\"DataSourceUri\":\"/redfish/v1/Chassis/chassis/Sensors/fantach_fan2_0\","
		"\"SpeedRPM\":0},\"Status\":{\"Health\":\"Critical\",\"State\":\"Enabled\"}}");
	json_t *out = json_array(), *row;

	(void)state;
	rf_sensors_from_fan(out, fan);
	assert_int_equal(json_array_size(out), 1);
	row = json_array_get(out, 0);
	assert_string_equal(field(row, "id"), "fan2");
	assert_string_equal(field(row, "location"), "FAN2");
	assert_string_equal(field(row, "unit"), "RPM");
	assert_string_equal(field(row, "health"), "Critical");
	json_decref(out);
	json_decref(fan);
}

/* The system's rollups: which members a read goes on to. */
static void test_system_rollups(void **state)
{
	/* iDRAC XR8620t as captured: the system Critical, the deprecated summaries OK */
	json_t *idrac = parse("{\"Status\":{\"Health\":\"Critical\",\"HealthRollup\":\"Critical\","
			      "\"State\":\"Enabled\"},\"MemorySummary\":{\"Status\":{\"Health\":\"OK\","
			      "\"HealthRollup\":\"OK\",\"State\":\"Enabled\"}}}");
	/* iLO 6 as captured: every rollup OK */
	json_t *ilo = parse("{\"Status\":{\"Health\":\"OK\",\"HealthRollup\":\"OK\",\"State\":\"Enabled\"},"
			    "\"MemorySummary\":{\"Status\":{\"HealthRollup\":\"OK\"}},"
			    "\"ProcessorSummary\":{\"Status\":{\"HealthRollup\":\"OK\"}}}");
	/* a memory rollup Warning under a system that says only its own Health */
	json_t *mem = parse("{\"Status\":{\"Health\":\"OK\",\"State\":\"Enabled\"},"
			    "\"MemorySummary\":{\"Status\":{\"HealthRollup\":\"Warning\"}}}");
	json_t *rollups = json_array();

	(void)state;
	assert_int_equal(rf_parts_from_system(rollups, idrac),
			 RF_PARTS_MEMORY | RF_PARTS_PROCESSORS | RF_PARTS_STORAGE);
	assert_string_equal(field(json_array_get(rollups, 0), "health"), "Critical");
	assert_string_equal(field(json_array_get(rollups, 0), "name"), "system");
	assert_int_equal(rf_parts_from_system(rollups, ilo), 0);
	assert_int_equal(rf_parts_from_system(rollups, mem), RF_PARTS_MEMORY);
	assert_int_equal(json_array_size(rollups), 3);
	json_decref(rollups);
	json_decref(idrac);
	json_decref(ilo);
	json_decref(mem);
}

struct member_row {
	const char *what, *type, *json;
	int added;
	const char *part, *id, *location, *health;
};

static const struct member_row members[] = {
	{ "iDRAC DIMM Critical", "memory",
	  "{\"@odata.type\":\"#Memory.v1_17_0.Memory\",\"Id\":\"DIMM.Socket.B2\",\"Name\":\"DIMM B2\","
	  "\"DeviceLocator\":\"DIMM B2\",\"Status\":{\"Health\":\"Critical\",\"State\":\"Enabled\"}}",
	  1, "memory", "DIMM.Socket.B2", "DIMM B2", "Critical" },
	{ "iDRAC DIMM OK", "memory",
	  "{\"Id\":\"DIMM.Socket.A5\",\"Name\":\"DIMM A5\",\"DeviceLocator\":\"DIMM A5\","
	  "\"Status\":{\"Health\":\"OK\",\"State\":\"Enabled\"}}", 0, NULL, NULL, NULL, NULL },
	{ "iLO 6 DIMM Warning", "memory",
	  "{\"Id\":\"proc1dimm8\",\"Name\":\"proc1dimm8\",\"DeviceLocator\":\"PROC 1 DIMM 8\","
	  "\"Status\":{\"Health\":\"Warning\",\"State\":\"Enabled\"}}",
	  1, "memory", "proc1dimm8", "PROC 1 DIMM 8", "Warning" },
	{ "iLO empty DIMM slot", "memory",
	  "{\"Id\":\"proc2dimm1\",\"Name\":\"proc2dimm1\",\"DeviceLocator\":\"PROC 2 DIMM 1\","
	  "\"Status\":{\"Health\":\"Critical\",\"State\":\"Absent\"}}", 0, NULL, NULL, NULL, NULL },
	{ "OpenBMC DIMM Critical, its ServiceLabel", "memory",
	  "{\"Id\":\"dimm3\",\"Name\":\"DIMM Slot 3\",\"Location\":{\"PartLocation\":"
	  "{\"ServiceLabel\":\"DIMM3\"}},\"Status\":{\"Health\":\"Critical\",\"State\":\"Enabled\"}}",
	  1, "memory", "dimm3", "DIMM3", "Critical" },
	{ "iLO 6 GPU rated Critical", "processor",
	  "{\"Id\":\"3\",\"Name\":\"NVIDIA H100 NVL\",\"ProcessorType\":\"GPU\","
	  "\"Status\":{\"Health\":\"Critical\",\"State\":\"Enabled\"}}",
	  1, "gpu", "3", NULL, "Critical" },
	{ "iDRAC CPU Warning", "processor",
	  "{\"Id\":\"CPU.Socket.2\",\"Name\":\"CPU 2\",\"ProcessorType\":\"CPU\","
	  "\"Status\":{\"Health\":\"Warning\",\"State\":\"Enabled\"}}",
	  1, "processor", "CPU.Socket.2", NULL, "Warning" },
	{ "iLO 6 NVMe drive Critical, its bay", "drive",
	  "{\"Id\":\"3\",\"Name\":\"1.60TB 64G NVMe SSD\",\"PhysicalLocation\":{\"PartLocation\":"
	  "{\"ServiceLabel\":\"Slot=18:Port=1:Box=1:Bay=6\",\"LocationType\":\"Bay\"}},"
	  "\"Status\":{\"Health\":\"Critical\",\"State\":\"Enabled\"}}",
	  1, "drive", "3", "Slot=18:Port=1:Box=1:Bay=6", "Critical" },
	{ "iDRAC PCIe SSD OK (HealthRollup OK)", "drive",
	  "{\"Id\":\"PCIeSSD.Integrated.1-1\",\"Name\":\"Integrated PCIe SSD 1 Disk 1\","
	  "\"Status\":{\"Health\":\"OK\",\"HealthRollup\":\"OK\",\"State\":\"Enabled\"}}",
	  0, NULL, NULL, NULL, NULL },
};

static void test_members(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(members) / sizeof(members[0]); i++) {
		const struct member_row *w = &members[i];
		json_t *m = parse(w->json), *out = json_array(), *row;

		if (rf_part_from_member(out, w->type, m) != w->added)
			fail_msg("%s: added %zu, want %d", w->what, json_array_size(out), w->added);
		if (w->added) {
			row = json_array_get(out, 0);
			assert_string_equal(field(row, "kind"), "part");
			assert_string_equal(field(row, "part"), w->part);
			assert_string_equal(field(row, "id"), w->id);
			assert_string_equal(field(row, "health"), w->health);
			if (w->location)
				assert_string_equal(field(row, "location"), w->location);
			else
				assert_null(json_object_get(row, "location"));
		}
		json_decref(out);
		json_decref(m);
	}
}

/* Managers/X DateTime as each vendor writes it: iDRAC with its offset, iLO in UTC, OpenBMC
 * "+00:00", and one without a zone whose DateTimeLocalOffset says it. */
static void test_manager_clock(void **state)
{
	json_t *idrac = parse("{\"DateTime\":\"2024-05-02T05:00:00-05:00\","
			      "\"DateTimeLocalOffset\":\"-05:00\"}");
	json_t *ilo = parse("{\"DateTime\":\"2024-05-02T10:00:00Z\",\"DateTimeLocalOffset\":\"+00:00\"}");
	json_t *obmc = parse("{\"DateTime\":\"2024-05-02T10:00:00+00:00\"}");
	json_t *bare = parse("{\"DateTime\":\"2024-05-02T12:00:00\",\"DateTimeLocalOffset\":\"+02:00\"}");
	json_t *none = parse("{\"Id\":\"bmc\"}");

	(void)state;
	assert_int_equal(rf_manager_clock(idrac), 1714644000);
	assert_int_equal(rf_manager_clock(ilo), 1714644000);
	assert_int_equal(rf_manager_clock(obmc), 1714644000);
	assert_int_equal(rf_manager_clock(bare), 1714644000);
	assert_int_equal(rf_manager_clock(none), 0);
	json_decref(idrac);
	json_decref(ilo);
	json_decref(obmc);
	json_decref(bare);
	json_decref(none);
}

static json_t *entries_page(const char *extra)
{
	char text[2048];

	snprintf(text, sizeof(text),
		 "{\"Members\":["
		 "{\"@odata.id\":\"/redfish/v1/Managers/1/LogServices/Sel/Entries/1\",\"Id\":\"1\","
		 "\"Created\":\"2024-05-02T10:00:00Z\",\"Severity\":\"OK\",\"Message\":\"boot\"},"
		 "{\"@odata.id\":\"/redfish/v1/Managers/1/LogServices/Sel/Entries/2\",\"Id\":\"2\","
		 "\"Created\":\"2024-05-04T10:00:00Z\",\"Severity\":\"Warning\",\"Message\":\"fan\"}%s]}",
		 extra);
	return parse(text);
}

/* One read as the poller makes it: ids from a fresh scratch, the BMC's last list. */
static size_t poller_read(json_t *out, json_t *coll, int64_t since, struct redfish_bmc *b)
{
	json_t *labels = json_object(), *taken = json_object(), *seen = json_object();
	json_t *kept = json_object();
	struct rf_log_ids ids = { labels, taken, seen, { NULL, "/redfish/v1/Managers/1" },
				  b->log_seen, b->nlog_seen, b->log_seen_known, kept };
	size_t n = rf_log_entries_append(out, NULL, &ids, coll, "/redfish/v1/Managers/1/LogServices/Sel",
					 since, NULL);

	free(b->log_seen);
	b->log_seen = rf_log_kept_list(kept, &b->nlog_seen);
	b->log_seen_known = 1;
	json_decref(labels);
	json_decref(taken);
	json_decref(seen);
	json_decref(kept);
	return n;
}

/* A BMC whose clock was set back two days: the entry it writes now is dated before the
 * newest one kiln saw (the cursor the poller passes as since). Told by arrival, it is new;
 * the entries read before are not new again, whatever since says. */
static void test_log_arrival(void **state)
{
	struct redfish_bmc b;
	json_t *out = json_array();
	json_t *first = entries_page(""), *second;
	int64_t cursor = 1714816800; /* 2024-05-04T10:00:00Z, entry 2's */

	(void)state;
	memset(&b, 0, sizeof(b));
	assert_int_equal(poller_read(out, first, 0, &b), 2);
	second = entries_page(",{\"@odata.id\":\"/redfish/v1/Managers/1/LogServices/Sel/Entries/3\","
			      "\"Id\":\"3\",\"Created\":\"2024-05-02T11:00:00Z\",\"Severity\":"
			      "\"Critical\",\"Message\":\"DIMM B2 uncorrectable\"}");
	json_array_clear(out);
	assert_int_equal(poller_read(out, second, cursor, &b), 1);
	assert_string_equal(field(json_array_get(out, 0), "id"), "Sel/3");
	/* and read again with no cursor at all (a cleared log's re-read): nothing replays */
	json_array_clear(out);
	assert_int_equal(poller_read(out, second, 0, &b), 0);
	/* an id reused after a clear, with its own Created, is another entry */
	json_decref(second);
	second = parse("{\"Members\":[{\"Id\":\"1\",\"Created\":\"2024-05-03T09:00:00Z\","
		       "\"Severity\":\"Critical\",\"Message\":\"after the clear\"}]}");
	assert_int_equal(poller_read(out, second, cursor, &b), 1);
	free(b.log_seen);
	json_decref(first);
	json_decref(second);
	json_decref(out);
}

/* The first read after a restart goes by the poller's cursor; what it leaves out as older is
 * not news to the next read either (a log service the kiln before did not store). */
static void test_log_restart(void **state)
{
	struct redfish_bmc b;
	json_t *out = json_array(), *page = entries_page("");

	(void)state;
	memset(&b, 0, sizeof(b));
	assert_int_equal(poller_read(out, page, 1714816800, &b), 1);
	assert_string_equal(field(json_array_get(out, 0), "id"), "Sel/2");
	json_array_clear(out);
	assert_int_equal(poller_read(out, page, 1714816800, &b), 0);
	free(b.log_seen);
	json_decref(page);
	json_decref(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fans_idrac),
		cmocka_unit_test(test_fans_ilo),
		cmocka_unit_test(test_fans_openbmc),
		cmocka_unit_test(test_system_rollups),
		cmocka_unit_test(test_members),
		cmocka_unit_test(test_manager_clock),
		cmocka_unit_test(test_log_arrival),
		cmocka_unit_test(test_log_restart),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
