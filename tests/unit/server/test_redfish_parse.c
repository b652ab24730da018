/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the Redfish driver's pure parsers: sensors, reset types, logs, inventory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <stdlib.h>

#include "bmc/redfish/budget.h"
#include "bmc/redfish/internal.h"

static json_t *load(const char *name)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/unit/server/data/%s", KILN_TEST_DATA, name);
	json_error_t err;
	json_t *j = json_load_file(path, 0, &err);
	if (!j)
		fail_msg("%s: %s", path, err.text);
	return j;
}

static json_t *find(json_t *sensors, const char *name)
{
	size_t i;
	json_t *s;
	json_array_foreach(sensors, i, s)
		if (strcmp(json_string_value(json_object_get(s, "name")), name) == 0)
			return s;
	return NULL;
}

static void test_thermal(void **state)
{
	(void)state;
	json_t *in = load("redfish_thermal.json");
	json_t *out = json_array();
	rf_sensors_from_thermal(out, in);
	assert_int_equal(json_array_size(out), 4); /* the absent CPU 2 is left out */

	json_t *s = find(out, "Inlet");
	assert_non_null(s);
	assert_string_equal(json_string_value(json_object_get(s, "kind")), "temperature");
	assert_string_equal(json_string_value(json_object_get(s, "unit")), "C");
	assert_true(json_number_value(json_object_get(s, "value")) == 23.5);
	assert_string_equal(json_string_value(json_object_get(s, "health")), "OK");
	json_t *t = json_object_get(s, "thresholds");
	assert_true(json_number_value(json_object_get(t, "upper_critical")) == 42);
	assert_true(json_number_value(json_object_get(t, "upper_fatal")) == 47);
	assert_null(json_object_get(t, "lower_critical"));

	s = find(out, "Fan A"); /* named by FanName when Name is missing */
	assert_non_null(s);
	assert_string_equal(json_string_value(json_object_get(s, "unit")), "RPM");
	assert_true(json_number_value(json_object_get(
			    json_object_get(s, "thresholds"), "lower_critical")) == 600);
	s = find(out, "Fan B");
	assert_string_equal(json_string_value(json_object_get(s, "unit")), "%");
	assert_null(json_object_get(s, "thresholds"));
	s = find(out, "GPU 0");
	assert_string_equal(json_string_value(json_object_get(s, "health")), "Warning");
	json_decref(in);
	json_decref(out);
}

static void test_power(void **state)
{
	(void)state;
	json_t *in = load("redfish_power.json");
	json_t *out = json_array();
	rf_sensors_from_power(out, in);
	assert_int_equal(json_array_size(out), 4);
	json_t *s = json_array_get(out, 0);
	assert_string_equal(json_string_value(json_object_get(s, "kind")), "power");
	assert_string_equal(json_string_value(json_object_get(s, "name")), "Power Consumed");
	assert_true(json_number_value(json_object_get(s, "value")) == 812);
	assert_true(json_is_null(json_object_get(s, "health")));
	s = json_array_get(out, 1);
	assert_string_equal(json_string_value(json_object_get(s, "kind")), "voltage");
	assert_string_equal(json_string_value(json_object_get(s, "unit")), "V");
	s = json_array_get(out, 3); /* PowerOutputWatts when LastPowerOutputWatts is missing */
	assert_string_equal(json_string_value(json_object_get(s, "kind")), "psu");
	assert_true(json_number_value(json_object_get(s, "value")) == 412);
	assert_string_equal(json_string_value(json_object_get(s, "health")), "Critical");
	json_decref(in);
	json_decref(out);
}

/* A redundancy set is a psu sensor with its members' ids; each PSU keeps its id. The BMC may
 * still call the set OK with a member failed: health_facts.c counts the members. */
static void test_power_redundancy(void **state)
{
	(void)state;
	json_t *in = load("redfish_power_redundancy.json");
	json_t *out = json_array();
	rf_sensors_from_power(out, in);
	assert_int_equal(json_array_size(out), 4); /* the absent set is left out */
	json_t *s = find(out, "PSU Bay 2");
	assert_string_equal(json_string_value(json_object_get(s, "id")),
			    "/redfish/v1/Chassis/1/Power#/PowerSupplies/1");
	s = find(out, "PSU Redundancy Set");
	assert_non_null(s);
	assert_string_equal(json_string_value(json_object_get(s, "kind")), "psu");
	assert_string_equal(json_string_value(json_object_get(s, "health")), "OK");
	json_t *red = json_object_get(s, "redundancy");
	assert_int_equal(json_integer_value(json_object_get(red, "min_needed")), 2);
	assert_string_equal(json_string_value(json_object_get(red, "mode")), "N+m");
	assert_int_equal(json_array_size(json_object_get(red, "members")), 2);
	assert_string_equal(json_string_value(json_array_get(json_object_get(red, "members"), 1)),
			    "/redfish/v1/Chassis/1/Power#/PowerSupplies/1");
	json_decref(out);

	/* PowerSubsystem's PowerSupplyRedundancy: the same shape from RedundancyGroup. */
	json_t *ps = json_pack("{s:[{s:s, s:i, s:[{s:s}, {s:s}], s:{s:s, s:s}}]}",
			       "PowerSupplyRedundancy", "RedundancyType", "Failover",
			       "MinNeededInGroup", 1, "RedundancyGroup", "@odata.id",
			       "/redfish/v1/Chassis/1U/PowerSubsystem/PowerSupplies/Bay1", "@odata.id",
			       "/redfish/v1/Chassis/1U/PowerSubsystem/PowerSupplies/Bay2", "Status",
			       "State", "Enabled", "Health", "Warning");
	out = json_array();
	rf_sensors_from_power_subsystem(out, ps);
	assert_int_equal(json_array_size(out), 1);
	s = find(out, "PSU Redundancy");
	assert_non_null(s);
	assert_string_equal(json_string_value(json_object_get(s, "health")), "Warning");
	red = json_object_get(s, "redundancy");
	assert_int_equal(json_integer_value(json_object_get(red, "min_needed")), 1);
	assert_string_equal(json_string_value(json_object_get(red, "mode")), "Failover");
	assert_int_equal(json_array_size(json_object_get(red, "members")), 2);
	json_decref(ps);
	json_decref(in);
	json_decref(out);
}

static void test_newer_schemas(void **state)
{
	(void)state;
	json_t *out = json_array();
	json_t *tm = json_pack("{s:[{s:f, s:s}, {s:i, s:s}]}", "TemperatureReadingsCelsius",
			       "Reading", 24.8, "DeviceName", "Intake", "Reading", 40,
			       "DataSourceUri", "/redfish/v1/Chassis/1U/Sensors/ExhaustTemp");
	rf_sensors_from_thermal_metrics(out, tm);
	json_t *fan = json_pack("{s:s, s:{s:i, s:i}, s:{s:s}}", "Name", "Bay 1", "SpeedPercent",
				"Reading", 45, "SpeedRPM", 3000, "Status", "Health", "OK");
	rf_sensors_from_fan(out, fan);
	json_t *env = json_pack("{s:{s:i}}", "PowerWatts", "Reading", 374);
	rf_sensors_from_environment(out, env, "1U");
	assert_int_equal(json_array_size(out), 4);
	assert_true(json_number_value(json_object_get(find(out, "Intake"), "value")) == 24.8);
	assert_non_null(find(out, "/redfish/v1/Chassis/1U/Sensors/ExhaustTemp"));
	assert_string_equal(json_string_value(json_object_get(find(out, "Bay 1"), "unit")), "RPM");
	assert_true(json_number_value(json_object_get(find(out, "1U Power"), "value")) == 374);
	json_decref(tm);
	json_decref(fan);
	json_decref(env);
	json_decref(out);
}

static void test_reset_types(void **state)
{
	(void)state;
	json_t *action = json_pack("{s:[s,s,s]}", "ResetType@Redfish.AllowableValues", "On",
				   "ForceOff", "GracefulRestart");
	json_t *allowed = rf_reset_allowed_parse(action);
	static const char *const reset[] = {"ForceRestart", "GracefulRestart", "PowerCycle", NULL};
	static const char *const cycle[] = {"PowerCycle", NULL};
	assert_string_equal(rf_reset_pick(allowed, reset), "GracefulRestart");
	assert_null(rf_reset_pick(allowed, cycle));
	assert_string_equal(rf_reset_pick(NULL, cycle), "PowerCycle"); /* not advertised */

	json_t *info = json_pack("{s:[{s:s, s:[s,s]}]}", "Parameters", "Name", "ResetType",
				 "AllowableValues", "On", "PowerCycle");
	json_t *a2 = rf_reset_allowed_parse(info);
	assert_int_equal(json_array_size(a2), 2);
	assert_string_equal(rf_reset_pick(a2, cycle), "PowerCycle");
	json_t *empty = json_object();
	assert_null(rf_reset_allowed_parse(empty));
	json_decref(empty);
	json_decref(action);
	json_decref(allowed);
	json_decref(info);
	json_decref(a2);

	assert_int_equal(rf_power_parse("On"), BMC_POWER_ON);
	assert_int_equal(rf_power_parse("Off"), BMC_POWER_OFF);
	assert_int_equal(rf_power_parse("PoweringOn"), BMC_POWER_UNKNOWN);
	assert_int_equal(rf_power_parse(NULL), BMC_POWER_UNKNOWN);
}

static void test_logs(void **state)
{
	(void)state;
	static const struct { const char *in; int64_t want; } times[] = {
		{"2012-03-07T14:44:00Z", 1331131440},
		{"2023-06-02T10:29:20-05:00", 1685719760},
		{"2023-08-16T19:42:58.033389+00:00", 1692214978},
		{"garbage", 0},
	};
	for (size_t i = 0; i < sizeof(times) / sizeof(times[0]); i++)
		assert_int_equal(rf_time_parse(times[i].in), times[i].want);

	assert_true(rf_log_service_wanted("Sel"));
	assert_true(rf_log_service_wanted("IML"));
	assert_true(rf_log_service_wanted("EventLog"));
	assert_false(rf_log_service_wanted("Journal"));
	assert_false(rf_log_service_wanted("FaultList"));
	assert_false(rf_log_service_wanted("PostCodes-Dump"));

	json_t *coll = json_pack("{s:[{s:s, s:s, s:s, s:s}, {s:s, s:s, s:s}, {s:s}]}", "Members",
				 "Id", "1", "Created", "2012-03-07T14:44:00Z", "Severity",
				 "Critical", "Message", "Temperature threshold exceeded",
				 "Id", "2", "Created", "2020-01-01T00:00:00Z", "Message", "later",
				 "Name", "no id: skipped");
	json_t *out = json_array();
	json_t *seen = json_object();
	json_t *meta = json_object();
	struct rf_log_ids ids = { json_object(), json_object(), seen, { NULL, NULL }, NULL, 0, 0, NULL };
	static const char log1[] = "/redfish/v1/Systems/1/LogServices/Log1";
	ids.host[0] = "/redfish/v1/Systems/1";
	assert_int_equal(rf_log_entries_append(out, meta, &ids, coll, log1, 0, NULL), 2);
	/* the newest entry's time: a log cleared and refilled shows it going backwards */
	assert_int_equal(json_integer_value(json_object_get(meta, "newest")), 1577836800);
	json_t *e = json_array_get(out, 0);
	assert_string_equal(json_string_value(json_object_get(e, "id")), "Log1/1");
	assert_string_equal(json_string_value(json_object_get(e, "severity")), "critical");
	assert_int_equal(json_integer_value(json_object_get(e, "timestamp")), 1331131440);
	/* the same page again adds nothing (both counted as listed before); since filters */
	size_t dups = 0;
	assert_int_equal(rf_log_entries_append(out, NULL, &ids, coll, log1, 0, &dups), 0);
	assert_int_equal(dups, 2);
	json_t *out2 = json_array();
	json_t *seen2 = json_object();
	struct rf_log_ids ids2 = { json_object(), json_object(), seen2, { NULL, NULL }, NULL, 0, 0, NULL };
	assert_int_equal(rf_log_entries_append(out2, meta, &ids2, coll, log1, 1500000000, NULL), 1);
	json_decref(coll);
	json_decref(out);
	json_decref(seen);
	json_decref(meta);
	json_decref(out2);
	json_decref(seen2);
	json_decref(ids.labels);
	json_decref(ids.taken);
	json_decref(ids2.labels);
	json_decref(ids2.taken);
}

/* Log ids keep the names kiln stored before (the poller keys its history by them): a service
 * of the system's or the manager's is its last segment, the first to take it keeps it; the
 * second of a name, and one elsewhere, is its path. */
static void test_log_labels(void **state)
{
	static const struct { const char *path, *label; } v[] = {
		/* Supermicro: the Health Event Log, read first, keeps "Log1" */
		{ "/redfish/v1/Systems/1/LogServices/Log1", "Log1" },
		{ "/redfish/v1/Managers/1/LogServices/Log1", "Managers/1/Log1" },
		/* the same service again (iLO's trailing slash, case): the same label */
		{ "/redfish/v1/systems/1/LogServices/Log1/", "Log1" },
		{ "/redfish/v1/Managers/1/LogServices/IEL", "IEL" },
		/* the HGX baseboard's and the chassis': new to kiln, always by their path */
		{ "/redfish/v1/Systems/HGX_Baseboard_0/LogServices/EventLog",
		  "Systems/HGX_Baseboard_0/EventLog" },
		{ "/redfish/v1/Chassis/HGX_GPU_SXM_1/LogServices/XID", "Chassis/HGX_GPU_SXM_1/XID" },
		{ "/redfish/v1/Chassis/DGX/LogServices/Logs", "Chassis/DGX/Logs" },
	};
	struct rf_log_ids ids = { json_object(), json_object(), json_object(),
				  { "/redfish/v1/Systems/1", "/redfish/v1/Managers/1" }, NULL, 0, 0, NULL };

	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		assert_string_equal(rf_log_label(&ids, v[i].path), v[i].label);
	json_decref(ids.labels);
	json_decref(ids.taken);
	json_decref(ids.seen);
}

/* An HGX XID log re-lists the baseboard's EventLog entries (their @odata.id): listed once,
 * with the EventLog's id, the Xid tied to its GPU. */
static void test_log_xid(void **state)
{
	(void)state;
	static const struct { const char *text; int found; long xid; int sxid; } v[] = {
		{ "[Mon Mar 10 02:11:07 UTC 2025][5][00] XID 79 GPU has fallen off the bus", 1, 79, 0 },
		{ "SXID 20034 Fatal NVLink LTSSM fault on port 7", 1, 20034, 1 },
		{ "NVRM: Xid (PCI:0000:3b:00): 48, pid=1234, DBE", 1, 48, 0 },
		{ "xid: 13 Graphics SM Warp Exception", 1, 13, 0 },
		{ "The health of resource 'GPU_SXM_5' has changed to Critical.", 0, 0, 0 },
		{ "FXID 12 is no Xid", 0, 0, 0 },
		{ "XID without a number", 0, 0, 0 },
		{ "XID 12345678901 too long", 0, 0, 0 },
		{ NULL, 0, 0, 0 },
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		long xid = -1;
		int sxid = -1;

		assert_int_equal(rf_log_xid_parse(v[i].text, &xid, &sxid), v[i].found);
		if (v[i].found) {
			assert_int_equal(xid, v[i].xid);
			assert_int_equal(sxid, v[i].sxid);
		}
	}

	static const char ev[] = "/redfish/v1/Systems/HGX_Baseboard_0/LogServices/EventLog";
	static const char xid5[] = "/redfish/v1/Chassis/HGX_GPU_SXM_5/LogServices/XID";
	static const char xid2[] = "/redfish/v1/Chassis/HGX_GPU_SXM_2/LogServices/XID";
	json_t *xids = json_pack(
		"{s:[{s:s, s:s, s:s, s:s, s:[s, s], s:{s:{s:s}}}]}", "Members",
		"@odata.id", "/redfish/v1/Systems/HGX_Baseboard_0/LogServices/EventLog/Entries/469",
		"Id", "469", "Created", "2025-03-10T02:11:07+00:00",
		"Message", "The resource property has detected errors of type 'XID 79 ...'",
		"MessageArgs", "GPU_SXM_5 Driver Event Message", "XID 79 GPU has fallen off the bus",
		"Links", "OriginOfCondition", "@odata.id", "/redfish/v1/Chassis/HGX_GPU_SXM_5");
	/* an XID log's own entry that names no device: the GPU of its chassis */
	json_t *own = json_pack("{s:[{s:s, s:s, s:s, s:s}]}", "Members",
		"@odata.id", "/redfish/v1/Chassis/HGX_GPU_SXM_2/LogServices/XID/Entries/1",
		"Id", "1", "Created", "2025-03-10T01:02:17+00:00", "Message", "XID 13 SM Warp");
	json_t *events = json_pack("{s:[{s:s, s:s, s:s}, {s:s, s:s, s:s}]}", "Members",
		"@odata.id", "/redfish/v1/Systems/HGX_Baseboard_0/LogServices/EventLog/Entries/469",
		"Id", "469", "Message", "the same entry",
		"@odata.id", "/redfish/v1/Systems/HGX_Baseboard_0/LogServices/EventLog/Entries/470",
		"Id", "470", "Message", "The health of resource 'GPU_SXM_5' has changed to Critical.");
	json_t *out = json_array(), *meta = json_object();
	struct rf_log_ids ids = { json_object(), json_object(), json_object(),
				  { "/redfish/v1/Systems/DGX", "/redfish/v1/Managers/BMC" }, NULL, 0, 0, NULL };
	size_t dups = 0;

	assert_int_equal(rf_log_entries_append(out, meta, &ids, xids, xid5, 0, &dups), 1);
	assert_int_equal(rf_log_entries_append(out, meta, &ids, own, xid2, 0, &dups), 1);
	assert_int_equal(rf_log_entries_append(out, meta, &ids, events, ev, 0, &dups), 1);
	assert_int_equal(dups, 1);
	json_t *e = json_array_get(out, 0);
	assert_string_equal(json_string_value(json_object_get(e, "id")),
			    "Systems/HGX_Baseboard_0/EventLog/469");
	assert_string_equal(json_string_value(json_object_get(e, "gpu")), "GPU_SXM_5");
	assert_int_equal(json_integer_value(json_object_get(e, "xid")), 79);
	e = json_array_get(out, 1);
	assert_string_equal(json_string_value(json_object_get(e, "id")),
			    "Chassis/HGX_GPU_SXM_2/XID/1");
	assert_string_equal(json_string_value(json_object_get(e, "gpu")), "GPU_SXM_2");
	assert_int_equal(json_integer_value(json_object_get(e, "xid")), 13);
	e = json_array_get(out, 2);
	assert_null(json_object_get(e, "xid"));
	assert_null(json_object_get(e, "gpu"));
	json_decref(xids);
	json_decref(own);
	json_decref(events);
	json_decref(out);
	json_decref(meta);
	json_decref(ids.labels);
	json_decref(ids.taken);
	json_decref(ids.seen);
}

static void test_inventory(void **state)
{
	(void)state;
	json_t *sys = json_pack("{s:s, s:s, s:s, s:s, s:{s:i}, s:{s:i, s:s}}", "Manufacturer", "HPE",
				"Model", "ProLiant XL675d Gen10 Plus", "SerialNumber", "JS05NP0896",
				"BiosVersion", "A47", "MemorySummary", "TotalSystemMemoryGiB", 256,
				"ProcessorSummary", "Count", 2, "Model", "AMD EPYC 7702   ");
	json_t *inv = json_object();
	rf_inventory_from_system(inv, sys);
	assert_string_equal(json_string_value(json_object_get(inv, "serial")), "JS05NP0896");
	assert_string_equal(json_string_value(json_object_get(inv, "cpu_model")), "AMD EPYC 7702");
	assert_true(json_is_null(json_object_get(inv, "sku")));
	assert_true(json_number_value(json_object_get(inv, "memory_gib")) == 256);

	json_t *gpu = json_pack("{s:s, s:s}", "Name", "NVIDIA A100-SXM4-40GB", "DeviceType", "GPU");
	json_t *nic = json_pack("{s:s, s:s}", "Name", "Ethernet 25G", "Manufacturer", "Intel");
	json_t *nv = json_pack("{s:s}", "Manufacturer", "NVIDIA Corporation");
	/* a ConnectX is NVIDIA's: its maker says nothing, its type and class do */
	json_t *cx = json_pack("{s:s, s:s, s:s}", "Name", "NVIDIA ConnectX-7", "Manufacturer",
			       "NVIDIA", "DeviceType", "LOM/NIC");
	json_t *net = json_pack("{s:s, s:s}", "Manufacturer", "NVIDIA", "DeviceClass",
				"NetworkController");
	assert_int_equal(rf_device_is_gpu(gpu), 1);
	assert_int_equal(rf_device_is_gpu(nic), -1);
	assert_int_equal(rf_device_is_gpu(nv), -1);
	assert_int_equal(rf_device_is_gpu(cx), 0);
	assert_int_equal(rf_device_is_gpu(net), 0);
	static const struct { const char *key, *value; int want; } fns[] = {
		{"DeviceClass", "DisplayController", 1}, {"DeviceClass", "ProcessingAccelerators", 1},
		{"DeviceClass", "NetworkController", 0}, {"ClassCode", "0x030200", 1},
		{"ClassCode", "0x120000", 1},            {"ClassCode", "0x020000", 0},
		{"FunctionType", "Physical", -1},
	};
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		json_t *fn = json_pack("{s:s}", fns[i].key, fns[i].value);
		assert_int_equal(rf_function_is_gpu(fn), fns[i].want);
		json_decref(fn);
	}
	json_decref(sys);
	json_decref(inv);
	json_decref(gpu);
	json_decref(nic);
	json_decref(nv);
	json_decref(cx);
	json_decref(net);
}

/* Sensor resources (Chassis/X/Sensors/Y) by ReadingType. */
static void test_sensor_resources(void **state)
{
	(void)state;
	static const struct { const char *type, *units, *context, *kind, *unit; } v[] = {
		{"Temperature", "Cel", NULL, "temperature", "C"},
		{"Rotational", "RPM", "Fan", "fan", "RPM"},
		{"Percent", "%", "Fan", "fan", "%"},
		{"Power", "W", NULL, "power", "W"},
		{"Voltage", "V", NULL, "voltage", "V"},
		{"Current", "A", NULL, "other", "A"},
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		json_t *out = json_array();
		json_t *s = json_pack("{s:s, s:s, s:s, s:f, s:{s:s}}", "Name", "X", "ReadingType",
				      v[i].type, "ReadingUnits", v[i].units, "Reading", 41.5,
				      "Status", "Health", "OK");
		if (v[i].context)
			json_object_set_new(s, "PhysicalContext", json_string(v[i].context));
		rf_sensors_from_sensor(out, s);
		json_t *got = json_array_get(out, 0);
		assert_string_equal(json_string_value(json_object_get(got, "kind")), v[i].kind);
		assert_string_equal(json_string_value(json_object_get(got, "unit")), v[i].unit);
		assert_true(json_number_value(json_object_get(got, "value")) == 41.5);
		json_decref(s);
		json_decref(out);
	}
	json_t *out = json_array();
	json_t *absent = json_pack("{s:s, s:s, s:{s:s}}", "Id", "CPU2", "ReadingType",
				   "Temperature", "Status", "State", "Absent");
	rf_sensors_from_sensor(out, absent);
	assert_int_equal(json_array_size(out), 0);
	json_decref(absent);
	json_decref(out);

	json_t *err = json_pack("{s:{s:s}}", "error", "code", "Base.1.8.ResourceMissingAtURI");
	json_t *res = json_pack("{s:s, s:{}}", "@odata.id", "/redfish/v1/Chassis/1", "error");
	assert_true(rf_body_is_error(err));
	assert_false(rf_body_is_error(res));
	json_decref(err);
	json_decref(res);
}

static void test_paths_and_errors(void **state)
{
	(void)state;
	assert_true(rf_path_equal("/redfish/v1/Systems/1/", "/redfish/v1/systems/1"));
	assert_false(rf_path_equal("/redfish/v1/Systems/1", "/redfish/v1/Systems/10"));

	char text[200];
	json_t *err = json_pack("{s:{s:s, s:s, s:[{s:s, s:s}]}}", "error", "code",
				"Base.1.8.GeneralError", "message", "See ExtendedInfo",
				"@Message.ExtendedInfo", "MessageId", "IDRAC.2.8.SYS518",
				"Message", "iDRAC is busy");
	rf_error_text(text, sizeof(text), err);
	assert_string_equal(text, "IDRAC.2.8.SYS518: iDRAC is busy");
	rf_error_text(text, sizeof(text), NULL);
	assert_string_equal(text, "");
	json_decref(err);

	json_t *root = json_pack("{s:s}", "Vendor", "Dell");
	assert_int_equal(rf_profile_detect(root, NULL), RF_DELL);
	json_t *mgr = json_pack("{s:s}", "Model", "OpenBmc");
	assert_int_equal(rf_profile_detect(NULL, mgr), RF_OPENBMC);
	json_t *hpe = json_pack("{s:{s:{}}}", "Oem", "Hpe");
	assert_int_equal(rf_profile_detect(hpe, NULL), RF_HPE);
	assert_int_equal(rf_profile_detect(NULL, NULL), RF_GENERIC);
	/* an iDRAC naming no Vendor, its Model "14G Monolithic": its manager's id says it */
	json_t *idrac = json_pack("{s:s, s:s, s:s}", "@odata.id",
				  "/redfish/v1/Managers/iDRAC.Embedded.1", "Model", "14G Monolithic",
				  "FirmwareVersion", "4.40.00.00");
	assert_int_equal(rf_profile_detect(NULL, idrac), RF_DELL);
	json_t *ilo = json_pack("{s:s, s:s}", "Model", "", "FirmwareVersion", "iLO 7 v1.12.00");
	assert_int_equal(rf_profile_detect(NULL, ilo), RF_HPE);
	json_decref(root);
	json_decref(mgr);
	json_decref(hpe);
	json_decref(idrac);
	json_decref(ilo);
}

/* The parse budget (issue 17, finding 3): an answer's tree is estimated before it is
 * built; "{}," costs far more than its text, strings little; what is taken comes back. */
static void test_parse_budget(void **state)
{
	static const char system[] = "{\"@odata.id\":\"/redfish/v1/Systems/1\",\"PowerState\":"
				     "\"On\",\"Name\":\"a {quoted} [name], \\\"x\\\"\"}";
	size_t n = 340000, cost = 1;
	char *flood = malloc(3 * n + 2);
	json_error_t err;
	json_t *j;

	(void)state;
	assert_true(rf_json_cost(system, strlen(system)) < 1024);
	/* one object, 3 members (2 commas, 3 colons); what is inside the strings, escaped
	 * quote included, counts for nothing */
	assert_int_equal(rf_json_cost(system, strlen(system)), strlen(system) + 224 + 6 * 64);
	assert_non_null(flood);
	flood[0] = '[';
	for (size_t i = 0; i < n; i++)
		memcpy(flood + 1 + 3 * i, "{},", 3);
	flood[3 * n] = ']';
	flood[3 * n + 1] = '\0';
	/* a 1 MB page of "{}," (a ~75 MB tree) is refused unparsed, nothing taken */
	assert_true(rf_json_cost(flood, 3 * n + 1) > RF_PARSE_ONE_MAX);
	assert_null(rf_json_load(flood, 3 * n + 1, &cost, &err));
	assert_int_equal(err.line, 0);
	assert_non_null(strstr(err.text, "to parse"));
	assert_int_equal(cost, 0);
	/* 300 kB of it goes through the budget, which is whole again once released */
	n = 100000;
	flood[3 * n] = ']';
	j = rf_json_load(flood, 3 * n + 1, &cost, &err);
	assert_non_null(j);
	assert_true(cost > RF_PARSE_FREE);
	assert_int_equal(rf_json_budget_used(), cost);
	json_decref(j);
	rf_json_release(cost);
	assert_int_equal(rf_json_budget_used(), 0);
	/* malformed text takes nothing either */
	assert_null(rf_json_load(flood, 3 * n, &cost, &err));
	assert_int_equal(cost, 0);
	assert_int_equal(rf_json_budget_used(), 0);
	free(flood);
}

/* One line per physical reading (sensor_merge.c): each case a list of readings as the views
 * give them ("name|kind|value|uri|aliases"), and the names kiln reports. */
static void test_sensor_merge(void **state)
{
	static const struct { const char *what, *in[6], *want; } v[] = {
		{ "a ThermalMetrics excerpt and its Sensor: one (the first read stays)",
		  { "GPU_0_TEMP_0|temperature|40.5|/redfish/v1/Chassis/G/Sensors/GPU_0_TEMP_0|",
		    "GPU 0 TEMP 0|temperature|40.6|/redfish/v1/Chassis/G/Sensors/GPU_0_TEMP_0|GPU_0_TEMP_0" },
		  "GPU_0_TEMP_0=40.5" },
		{ "a legacy Thermal member and the Sensor of that name in a contained chassis",
		  { "TEMP_CPU0|temperature|47||",
		    "TEMP_CPU0|temperature|48|/redfish/v1/Chassis/CPUBaseboard/Sensors/TEMP_CPU0|TEMP_CPU0" },
		  "TEMP_CPU0=47" },
		{ "legacy Power voltage and PDB Sensor by name; a legacy-only one stays",
		  { "VOLT_12V|voltage|12.21||", "VOLT_3V|voltage|3.05||",
		    "VOLT_12V|voltage|12.276|/redfish/v1/Chassis/PDB/Sensors/VOLT_12V|VOLT_12V" },
		  "VOLT_12V=12.21,VOLT_3V=3.05" },
		{ "a name two legacy members share (iLO's PSUs) tells no sensor: all kept",
		  { "HpeServerPowerSupply|psu|410||", "HpeServerPowerSupply|psu|395||",
		    "HpeServerPowerSupply|psu|400|/redfish/v1/Chassis/1/Sensors/PS1|" },
		  "HpeServerPowerSupply=410,HpeServerPowerSupply #2=395,HpeServerPowerSupply #3=400" },
		{ "the same name in another kind is another sensor",
		  { "PSU0|psu|2395||", "PSU0|power|2400|/redfish/v1/Chassis/PDB/Sensors/PSU0|" },
		  "PSU0=2395,PSU0 #2=2400" },
		{ "two Sensors of one name are two sensors",
		  { "Inlet|temperature|21|/redfish/v1/Chassis/A/Sensors/Inlet|",
		    "Inlet|temperature|25|/redfish/v1/Chassis/B/Sensors/Inlet|" },
		  "Inlet=21,Inlet #2=25" },
		{ "an excerpt without a reading takes the Sensor's",
		  { "TEMP_NIC|temperature|-|/redfish/v1/Chassis/C/Sensors/TEMP_NIC/|",
		    "NIC Temp|temperature|44|/redfish/v1/chassis/C/Sensors/TEMP_NIC|" },
		  "TEMP_NIC=44" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		json_t *in = json_array(), *out;
		char got[512] = "";

		for (size_t k = 0; k < 6 && v[i].in[k]; k++) {
			char buf[300], *f[5] = { 0 }, *save = NULL, *p = buf;
			size_t nf = 0;

			snprintf(buf, sizeof(buf), "%s", v[i].in[k]);
			/* fields may be empty: split by hand */
			f[nf++] = p;
			for (; *p && nf < 5; p++)
				if (*p == '|') {
					*p = '\0';
					f[nf++] = p + 1;
				}
			(void)save;
			json_t *s = json_pack("{s:s, s:s, s:o}", "name", f[0], "kind", f[1], "value",
					      strcmp(f[2], "-") ? json_real(atof(f[2])) : json_null());
			if (f[3] && *f[3])
				json_object_set_new(s, "_uri", json_string(f[3]));
			if (f[4] && *f[4])
				json_object_set_new(s, "_names", json_pack("[s]", f[4]));
			json_array_append_new(in, s);
		}
		out = rf_sensors_merge(in);
		assert_non_null(out);
		size_t j;
		json_t *s;
		json_array_foreach(out, j, s) {
			size_t len = strlen(got);

			snprintf(got + len, sizeof(got) - len, "%s%s=%g", j ? "," : "",
				 json_string_value(json_object_get(s, "name")),
				 json_number_value(json_object_get(s, "value")));
			/* the parsers' internal members never leave */
			assert_null(json_object_get(s, "_uri"));
			assert_null(json_object_get(s, "_names"));
		}
		if (strcmp(got, v[i].want) != 0)
			fail_msg("%s: got '%s', want '%s'", v[i].what, got, v[i].want);
		json_decref(in);
		json_decref(out);
	}

	/* the parsers give the views their identity: DGX's ThermalMetrics and a Sensor */
	json_t *tm = json_pack("{s:[{s:s, s:s, s:i}]}", "TemperatureReadingsCelsius",
			       "DataSourceUri", "/redfish/v1/Chassis/CPUBaseboard/Sensors/TEMP_CPU0",
			       "DeviceName", "TEMP_CPU0", "Reading", 48);
	json_t *sensor = json_pack("{s:s, s:s, s:s, s:s, s:i}", "@odata.id",
				   "/redfish/v1/Chassis/CPUBaseboard/Sensors/TEMP_CPU0", "Id",
				   "TEMP_CPU0", "Name", "TEMP_CPU0", "ReadingType", "Temperature",
				   "Reading", 49);
	json_t *thermal = json_pack("{s:[{s:s, s:s, s:i}]}", "Temperatures", "@odata.id",
				    "/redfish/v1/Chassis/DGX/Thermal#/Temperatures/0", "Name",
				    "TEMP_CPU0", "ReadingCelsius", 47);
	json_t *all = json_array(), *merged;
	rf_sensors_from_thermal(all, thermal);
	rf_sensors_from_thermal_metrics(all, tm);
	rf_sensors_from_sensor(all, sensor);
	assert_int_equal(json_array_size(all), 3);
	merged = rf_sensors_merge(all);
	assert_int_equal(json_array_size(merged), 1);
	assert_true(json_number_value(json_object_get(json_array_get(merged, 0), "value")) == 47);
	json_decref(merged);
	json_decref(all);
	json_decref(tm);
	json_decref(sensor);
	json_decref(thermal);
}

/* Which chassis are the system's, and which manager is its BMC (discover.c). */
static void test_discovery_choices(void **state)
{
	static const char sys[] = "/redfish/v1/Systems/System_0";
	static const char hgx[] = "/redfish/v1/Systems/HGX_Baseboard_0";
	static const struct { const char *links; int want; } chassis[] = {
		{ "{\"ComputerSystems\":[{\"@odata.id\":\"/redfish/v1/Systems/System_0\"}]}",
		  RF_CLAIM_WITH_CONTAINED },
		{ "{\"ComputerSystems\":[{\"@odata.id\":\"/redfish/v1/Systems/System_0/\"}]}",
		  RF_CLAIM_WITH_CONTAINED },
		/* the host's HGX baseboard's chassis: its GPUs' temperatures are the host's */
		{ "{\"ComputerSystems\":[{\"@odata.id\":\"/redfish/v1/Systems/HGX_Baseboard_0\"}]}",
		  RF_CLAIM_WITH_CONTAINED },
		/* an enclosure of several systems: for itself only */
		{ "{\"ComputerSystems\":[{\"@odata.id\":\"/redfish/v1/Systems/System_0\"},"
		  "{\"@odata.id\":\"/redfish/v1/Systems/System_1\"}]}", RF_CLAIM_ALONE },
		{ "{\"ComputerSystems\":[{\"@odata.id\":\"/redfish/v1/Systems/System_1\"}]}",
		  RF_CLAIM_NO },
		{ "{}", RF_CLAIM_NO },
		{ "{\"ComputerSystems\":\"/redfish/v1/Systems/System_0\"}", RF_CLAIM_NO },
	};
	static const struct { const char *json; int want; } managers[] = {
		{ "{\"ManagerType\":\"AuxiliaryController\"}", 1 },
		{ "{\"ManagerType\":\"BMC\"}", 2 },
		{ "{\"ManagerType\":\"BMC\",\"Links\":{\"ManagerForServers\":"
		  "[{\"@odata.id\":\"/redfish/v1/Systems/HGX_Baseboard_0\"}]}}", 0 },
		{ "{\"Links\":{\"ManagerForServers\":[{\"@odata.id\":\"/redfish/v1/Systems/HGX_"
		  "Baseboard_0\"},{\"@odata.id\":\"/redfish/v1/systems/system_0\"}]}}", 3 },
	};
	char key[64];

	(void)state;
	for (size_t i = 0; i < sizeof(chassis) / sizeof(chassis[0]); i++) {
		json_t *links = json_loads(chassis[i].links, 0, NULL);
		json_t *c = json_pack("{s:o}", "Links", links);

		assert_int_equal(rf_chassis_claim(c, sys, hgx), chassis[i].want);
		json_decref(c);
	}
	for (size_t i = 0; i < sizeof(managers) / sizeof(managers[0]); i++) {
		json_t *m = json_loads(managers[i].json, 0, NULL);

		assert_non_null(m);
		assert_int_equal(rf_manager_score(m, sys), managers[i].want);
		json_decref(m);
	}
	rf_path_key(key, sizeof(key), "/redfish/v1/Chassis/Enc/Power#/PowerSupplies/0");
	assert_string_equal(key, "/redfish/v1/chassis/enc/power");
	rf_path_key(key, sizeof(key), "/redfish/v1/Chassis/1/");
	assert_string_equal(key, "/redfish/v1/chassis/1");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_thermal),
		cmocka_unit_test(test_parse_budget),
		cmocka_unit_test(test_power),
		cmocka_unit_test(test_power_redundancy),
		cmocka_unit_test(test_newer_schemas),
		cmocka_unit_test(test_reset_types),
		cmocka_unit_test(test_logs),
		cmocka_unit_test(test_log_labels),
		cmocka_unit_test(test_log_xid),
		cmocka_unit_test(test_sensor_merge),
		cmocka_unit_test(test_discovery_choices),
		cmocka_unit_test(test_inventory),
		cmocka_unit_test(test_paths_and_errors),
		cmocka_unit_test(test_sensor_resources),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
