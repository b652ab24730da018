/* SPDX-License-Identifier: Apache-2.0 */
/* Redfish sensors: Thermal/Power (older) or ThermalSubsystem/PowerSubsystem/EnvironmentMetrics
 * (newer) and Sensors collections, normalised to {"name","kind","value","unit","health",
 * "thresholds"}, each physical reading once (rf_sensors_merge). */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bmc/redfish/internal.h"
#include "kiln/error.h"

static int absent(const json_t *obj)
{
	const char *state = json_string_value(json_object_get(json_object_get(obj, "Status"), "State"));
	return state && strcmp(state, "Absent") == 0;
}

static json_t *number_or_null(const json_t *v)
{
	return json_is_number(v) ? json_real(json_number_value(v)) : json_null();
}

/* Adds one sensor (returned, owned by out); value may be NULL (no reading). */
static json_t *sensor_add(json_t *out, const char *name, const char *kind, const json_t *value,
		       const char *unit, const json_t *obj)
{
	json_t *s = json_object();
	const char *health = json_string_value(json_object_get(json_object_get(obj, "Status"), "Health"));
	json_object_set_new(s, "name", json_string(name ? name : "unnamed"));
	json_object_set_new(s, "kind", json_string(kind));
	json_object_set_new(s, "value", number_or_null(value));
	json_object_set_new(s, "unit", json_string(unit));
	json_object_set_new(s, "health", health ? json_string(health) : json_null());

	static const struct { const char *key, *as; } th[] = {
		{"UpperThresholdNonCritical", "upper_warning"},
		{"UpperThresholdCritical", "upper_critical"},
		{"UpperThresholdFatal", "upper_fatal"},
		{"LowerThresholdNonCritical", "lower_warning"},
		{"LowerThresholdCritical", "lower_critical"},
		{"LowerThresholdFatal", "lower_fatal"},
	};
	json_t *t = json_object();
	for (size_t i = 0; i < sizeof(th) / sizeof(th[0]); i++) {
		json_t *v = json_object_get(obj, th[i].key);
		if (json_is_number(v))
			json_object_set_new(t, th[i].as, json_real(json_number_value(v)));
	}
	/* the newer schemas: Thresholds {"UpperCritical":{"Reading":n}} */
	static const struct { const char *key, *as; } nt[] = {
		{"UpperCaution", "upper_warning"}, {"UpperCritical", "upper_critical"},
		{"UpperFatal", "upper_fatal"},     {"LowerCaution", "lower_warning"},
		{"LowerCritical", "lower_critical"}, {"LowerFatal", "lower_fatal"},
	};
	json_t *thresholds = json_object_get(obj, "Thresholds");
	for (size_t i = 0; i < sizeof(nt) / sizeof(nt[0]); i++) {
		json_t *v = json_object_get(json_object_get(thresholds, nt[i].key), "Reading");
		if (json_is_number(v))
			json_object_set_new(t, nt[i].as, json_real(json_number_value(v)));
	}
	if (json_object_size(t))
		json_object_set_new(s, "thresholds", t);
	else
		json_decref(t);
	json_array_append_new(out, s);
	return s;
}

/* What tells the reading apart from the other views of it (rf_sensors_merge): "_uri", the
 * Sensor resource it is (its @odata.id) or an excerpt of (DataSourceUri), and "_names", the
 * other names that resource goes by. Internal: dropped before the list leaves the driver. */
static void identity_set(json_t *s, const char *uri, const char *alias1, const char *alias2)
{
	json_t *names;

	if (!s || !uri || !*uri)
		return;
	json_object_set_new(s, "_uri", json_string(uri));
	names = json_array();
	if (alias1 && *alias1)
		json_array_append_new(names, json_string(alias1));
	if (alias2 && *alias2)
		json_array_append_new(names, json_string(alias2));
	json_object_set_new(s, "_names", names);
}

/* A legacy array member: the Sensor its DataSourceUri names, where it names one (without,
 * it is told by its name). */
static void identity_legacy(json_t *s, const json_t *member)
{
	identity_set(s, json_string_value(json_object_get(member, "DataSourceUri")), NULL, NULL);
}

/* A PSU keeps its resource id: a redundancy set names its members by it. */
static json_t *psu_add(json_t *out, const char *name, const json_t *value, const json_t *psu)
{
	json_t *s = sensor_add(out, name, "psu", value, "W", psu);
	const char *id = json_string_value(json_object_get(psu, "@odata.id"));
	if (id)
		json_object_set_new(s, "id", json_string(id));
	return s;
}

/* A PSU redundancy set (Power's Redundancy[], PowerSubsystem's PowerSupplyRedundancy[]):
 * a psu sensor with the BMC's own health of the set and {"redundancy":{"mode","min_needed",
 * "members":[PSU ids]}}, from which health_facts.c also counts the healthy members. */
static void redundancy_add(json_t *out, const json_t *set, const char *members_key,
			   const char *needed_key, const char *mode_key)
{
	const char *name = json_string_value(json_object_get(set, "Name"));
	json_t *members = json_array(), *m, *red;
	size_t i;
	json_array_foreach(json_object_get(set, members_key), i, m) {
		const char *id = rf_link(m, "@odata.id");
		if (id)
			json_array_append_new(members, json_string(id));
	}
	red = json_pack("{s:o}", "members", members);
	json_t *need = json_object_get(set, needed_key);
	if (red && json_is_integer(need))
		json_object_set_new(red, "min_needed", json_integer(json_integer_value(need)));
	const char *mode = json_string_value(json_object_get(set, mode_key));
	if (red && mode)
		json_object_set_new(red, "mode", json_string(mode));
	json_t *s = sensor_add(out, name ? name : "PSU Redundancy", "psu", NULL, "", set);
	if (red)
		json_object_set_new(s, "redundancy", red);
}

static const char *name_of(const json_t *obj, const char *fallback_key)
{
	const char *n = json_string_value(json_object_get(obj, "Name"));
	if (!n && fallback_key)
		n = json_string_value(json_object_get(obj, fallback_key));
	if (!n)
		n = json_string_value(json_object_get(obj, "MemberId"));
	return n;
}

/* What names a fan in a verdict: its Id (a legacy member's MemberId), where it sits, and
 * its State (an empty slot some BMCs list at 0 RPM says so there). */
static void fan_ident(json_t *s, const json_t *fan)
{
	const char *id = json_string_value(json_object_get(fan, "Id"));
	const char *loc = json_string_value(json_object_get(
		json_object_get(json_object_get(fan, "Location"), "PartLocation"), "ServiceLabel"));
	const char *state = json_string_value(json_object_get(json_object_get(fan, "Status"), "State"));

	if (!id)
		id = json_string_value(json_object_get(fan, "MemberId"));
	if (s && id)
		json_object_set_new(s, "id", json_string(id));
	if (s && loc && *loc)
		json_object_set_new(s, "location", json_string(loc));
	if (s && state)
		json_object_set_new(s, "state", json_string(state));
}

static const char *fan_unit(const char *units)
{
	if (units && strcmp(units, "Percent") == 0)
		return "%";
	return "RPM";
}

void rf_sensors_from_thermal(json_t *out, const json_t *thermal)
{
	size_t i;
	json_t *t;
	json_array_foreach(json_object_get(thermal, "Temperatures"), i, t) {
		if (!absent(t))
			identity_legacy(sensor_add(out, name_of(t, NULL), "temperature",
						   json_object_get(t, "ReadingCelsius"), "C", t), t);
	}
	json_array_foreach(json_object_get(thermal, "Fans"), i, t) {
		json_t *s;

		if (absent(t))
			continue;
		s = sensor_add(out, name_of(t, "FanName"), "fan", json_object_get(t, "Reading"),
			       fan_unit(json_string_value(json_object_get(t, "ReadingUnits"))), t);
		fan_ident(s, t);
		identity_legacy(s, t);
	}
}

void rf_sensors_from_power(json_t *out, const json_t *power)
{
	size_t i;
	json_t *p;
	json_array_foreach(json_object_get(power, "PowerControl"), i, p) {
		const char *name = json_string_value(json_object_get(p, "Name"));
		identity_legacy(sensor_add(out, name ? name : "Power Consumed", "power",
					   json_object_get(p, "PowerConsumedWatts"), "W", p), p);
	}
	json_array_foreach(json_object_get(power, "Voltages"), i, p) {
		if (!absent(p))
			identity_legacy(sensor_add(out, name_of(p, NULL), "voltage",
						   json_object_get(p, "ReadingVolts"), "V", p), p);
	}
	json_array_foreach(json_object_get(power, "PowerSupplies"), i, p) {
		if (absent(p))
			continue;
		json_t *w = json_object_get(p, "LastPowerOutputWatts");
		if (!json_is_number(w))
			w = json_object_get(p, "PowerOutputWatts");
		identity_legacy(psu_add(out, name_of(p, NULL), w, p), p);
	}
	json_array_foreach(json_object_get(power, "Redundancy"), i, p) {
		if (!absent(p))
			redundancy_add(out, p, "RedundancySet", "MinNumNeeded", "Mode");
	}
}

void rf_sensors_from_thermal_metrics(json_t *out, const json_t *tm)
{
	size_t i;
	json_t *t;
	json_array_foreach(json_object_get(tm, "TemperatureReadingsCelsius"), i, t) {
		const char *name = json_string_value(json_object_get(t, "DeviceName"));
		const char *uri = json_string_value(json_object_get(t, "DataSourceUri"));
		if (!name)
			name = uri;
		identity_set(sensor_add(out, name, "temperature", json_object_get(t, "Reading"), "C", t),
			     uri, name, NULL);
	}
}

void rf_sensors_from_fan(json_t *out, const json_t *fan)
{
	if (absent(fan))
		return;
	json_t *speed = json_object_get(fan, "SpeedPercent");
	json_t *rpm = json_object_get(speed, "SpeedRPM");
	json_t *s;
	if (json_is_number(rpm))
		s = sensor_add(out, name_of(fan, NULL), "fan", rpm, "RPM", fan);
	else
		s = sensor_add(out, name_of(fan, NULL), "fan", json_object_get(speed, "Reading"), "%",
			       fan);
	fan_ident(s, fan);
	identity_set(s, json_string_value(json_object_get(speed, "DataSourceUri")),
		     json_string_value(json_object_get(fan, "Id")), NULL);
}

void rf_sensors_from_power_supply(json_t *out, const json_t *psu)
{
	if (absent(psu))
		return;
	psu_add(out, name_of(psu, NULL), NULL, psu);
}

void rf_sensors_from_power_subsystem(json_t *out, const json_t *ps)
{
	size_t i;
	json_t *set;
	json_array_foreach(json_object_get(ps, "PowerSupplyRedundancy"), i, set) {
		if (!absent(set))
			redundancy_add(out, set, "RedundancyGroup", "MinNeededInGroup",
				       "RedundancyType");
	}
}

void rf_sensors_from_environment(json_t *out, const json_t *env, const char *chassis_name)
{
	char name[160];
	json_t *pw = json_object_get(env, "PowerWatts");
	json_t *tc = json_object_get(env, "TemperatureCelsius");
	json_t *w = json_object_get(pw, "Reading");
	if (json_is_number(w)) {
		snprintf(name, sizeof(name), "%s Power", chassis_name ? chassis_name : "Chassis");
		identity_set(sensor_add(out, name, "power", w, "W", env),
			     json_string_value(json_object_get(pw, "DataSourceUri")), NULL, NULL);
	}
	json_t *t = json_object_get(tc, "Reading");
	if (json_is_number(t)) {
		snprintf(name, sizeof(name), "%s Temperature", chassis_name ? chassis_name : "Chassis");
		identity_set(sensor_add(out, name, "temperature", t, "C", env),
			     json_string_value(json_object_get(tc, "DataSourceUri")), NULL, NULL);
	}
}

/* A Sensor resource (DSP0268 2019.1+): its ReadingType says the kind, ReadingUnits the unit. */
void rf_sensors_from_sensor(json_t *out, const json_t *sensor)
{
	static const struct { const char *type, *kind, *unit; } kinds[] = {
		{"Temperature", "temperature", "C"}, {"Rotational", "fan", "RPM"},
		{"Power", "power", "W"},             {"Voltage", "voltage", "V"},
	};
	const char *type = json_string_value(json_object_get(sensor, "ReadingType"));
	const char *units = json_string_value(json_object_get(sensor, "ReadingUnits"));
	const char *context = json_string_value(json_object_get(sensor, "PhysicalContext"));
	const char *kind = "other", *unit = units ? units : "";
	if (absent(sensor))
		return;
	for (size_t i = 0; type && i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		if (strcmp(type, kinds[i].type) == 0) {
			kind = kinds[i].kind;
			unit = kinds[i].unit;
		}
	}
	/* a fan given in percent of its speed */
	if (type && strcmp(type, "Percent") == 0 && context && strcmp(context, "Fan") == 0) {
		kind = "fan";
		unit = "%";
	}
	json_t *s = sensor_add(out, name_of(sensor, "Id"), kind, json_object_get(sensor, "Reading"),
			       unit, sensor);
	if (strcmp(kind, "fan") == 0)
		fan_ident(s, sensor);
	identity_set(s,
		     json_string_value(json_object_get(sensor, "@odata.id")),
		     json_string_value(json_object_get(sensor, "Id")),
		     json_string_value(json_object_get(sensor, "Name")));
}

/* --- the crawl --------------------------------------------------------------------------- */

/* op->scratch: {"sensors": [...], "skipped": ["PATH: STATUS '...'"]} */
static json_t *found(struct rf_op *op)
{
	return json_object_get(op->scratch, "sensors");
}

static json_t *skipped(struct rf_op *op)
{
	return json_object_get(op->scratch, "skipped");
}

static int on_thermal(struct rf_op *op, const struct rf_reply *r)
{
	int ok = rf_reply_usable(r, skipped(op));
	if (ok > 0)
		rf_sensors_from_thermal(found(op), r->json);
	return ok < 0 ? ok : 0;
}

static int on_power(struct rf_op *op, const struct rf_reply *r)
{
	int ok = rf_reply_usable(r, skipped(op));
	if (ok > 0)
		rf_sensors_from_power(found(op), r->json);
	return ok < 0 ? ok : 0;
}

static int on_thermal_metrics(struct rf_op *op, const struct rf_reply *r)
{
	int ok = rf_reply_usable(r, skipped(op));
	if (ok > 0)
		rf_sensors_from_thermal_metrics(found(op), r->json);
	return ok < 0 ? ok : 0;
}

static int on_fan(struct rf_op *op, const struct rf_reply *r)
{
	int ok = rf_reply_usable(r, skipped(op));
	if (ok > 0)
		rf_sensors_from_fan(found(op), r->json);
	return ok < 0 ? ok : 0;
}

static int on_psu(struct rf_op *op, const struct rf_reply *r)
{
	int ok = rf_reply_usable(r, skipped(op));
	if (ok > 0)
		rf_sensors_from_power_supply(found(op), r->json);
	return ok < 0 ? ok : 0;
}

static int on_environment(struct rf_op *op, const struct rf_reply *r)
{
	int ok = rf_reply_usable(r, skipped(op));
	if (ok > 0)
		rf_sensors_from_environment(found(op), r->json, NULL);
	return ok < 0 ? ok : 0;
}

static int on_sensor(struct rf_op *op, const struct rf_reply *r)
{
	int ok = rf_reply_usable(r, skipped(op));
	if (ok > 0)
		rf_sensors_from_sensor(found(op), r->json);
	return ok < 0 ? ok : 0;
}

static int push_members(struct rf_op *op, const struct rf_reply *r, rf_handler h)
{
	size_t i;
	json_t *m;
	int ok = rf_reply_usable(r, skipped(op));
	if (ok <= 0)
		return ok;
	json_array_foreach(json_object_get(r->json, "Members"), i, m) {
		const char *p = rf_link(m, "@odata.id");
		if (p)
			rf_push(op, "GET", p, NULL, RF_ALLOW_ERROR, h);
	}
	return 0;
}

/* A Sensors collection: the members no excerpt read so far is of (ThermalMetrics'
 * DataSourceUri: a GB200 GPU's temperatures), one GET each. */
static int on_sensors(struct rf_op *op, const struct rf_reply *r)
{
	json_t *known = json_object(), *m, *s;
	char key[1024];
	size_t i;
	int ok = rf_reply_usable(r, skipped(op));

	if (ok <= 0) {
		json_decref(known);
		return ok;
	}
	json_array_foreach(found(op), i, s) {
		const char *uri = json_string_value(json_object_get(s, "_uri"));
		if (uri) {
			rf_path_key(key, sizeof(key), uri);
			json_object_set_new(known, key, json_true());
		}
	}
	json_array_foreach(json_object_get(r->json, "Members"), i, m) {
		const char *p = rf_link(m, "@odata.id");
		if (!p)
			continue;
		rf_path_key(key, sizeof(key), p);
		if (!json_object_get(known, key))
			rf_push(op, "GET", p, NULL, RF_ALLOW_ERROR, on_sensor);
	}
	json_decref(known);
	return 0;
}

static int on_fans(struct rf_op *op, const struct rf_reply *r)
{
	return push_members(op, r, on_fan);
}

static int on_psus(struct rf_op *op, const struct rf_reply *r)
{
	return push_members(op, r, on_psu);
}

static int on_thermal_subsystem(struct rf_op *op, const struct rf_reply *r)
{
	int ok = rf_reply_usable(r, skipped(op));
	if (ok <= 0)
		return ok;
	const char *tm = rf_link(r->json, "ThermalMetrics");
	const char *fans = rf_link(r->json, "Fans");
	if (tm)
		rf_push(op, "GET", tm, NULL, RF_ALLOW_ERROR, on_thermal_metrics);
	if (fans)
		rf_push(op, "GET", fans, NULL, RF_ALLOW_ERROR, on_fans);
	return 0;
}

static int on_power_subsystem(struct rf_op *op, const struct rf_reply *r)
{
	int ok = rf_reply_usable(r, skipped(op));
	if (ok <= 0)
		return ok;
	const char *psus = rf_link(r->json, "PowerSupplies");
	rf_sensors_from_power_subsystem(found(op), r->json);
	if (psus)
		rf_push(op, "GET", psus, NULL, RF_ALLOW_ERROR, on_psus);
	return 0;
}

static int sensors_finish(struct rf_op *op)
{
	json_t *skip = skipped(op);
	json_t *chassis = op->bmc->chassis_skipped;
	json_t *list = rf_sensors_merge(found(op));
	size_t i;
	json_t *line;

	if (!list)
		return kiln_fail(KILN_ERROR, "out of memory");
	/* the chassis that did not read first: their readings are missing too */
	json_array_foreach(chassis, i, line)
		json_array_insert(skip, i, line);
	op->data = json_pack("{s:o}", "sensors", list);
	if (op->data)
		rf_parts_finish(op, op->data);
	if (op->data && json_array_size(skip) > 0)
		json_object_set(op->data, "skipped", skip);
	return op->data ? 0 : kiln_fail(KILN_ERROR, "out of memory");
}

/* Per chassis: the legacy Thermal, else ThermalSubsystem; the legacy Power, else
 * PowerSubsystem and EnvironmentMetrics; and the Sensors collection unless both legacy
 * resources are there (iDRAC, iLO and OpenBMC repeat them there, at one GET per sensor):
 * a Cray EX blade's temperatures are only there, a GB200 GPU's power too. What does not read
 * is skipped and named; a busy BMC fails the read as busy. */
int rf_sensors_start(struct rf_op *op)
{
	op->scratch = json_pack("{s:[], s:[]}", "sensors", "skipped");
	if (!op->scratch)
		return kiln_fail(KILN_ERROR, "out of memory");
	rf_parts_start(op); /* the system's rollup (and its parts), the manager's clock */
	for (size_t i = 0; i < op->bmc->nchassis; i++) {
		const struct rf_chassis *c = &op->bmc->chassis[i];
		if (c->thermal)
			rf_push(op, "GET", c->thermal, NULL, RF_ALLOW_ERROR, on_thermal);
		else if (c->thermal_subsystem)
			rf_push(op, "GET", c->thermal_subsystem, NULL, RF_ALLOW_ERROR,
				on_thermal_subsystem);
		if (c->power) {
			rf_push(op, "GET", c->power, NULL, RF_ALLOW_ERROR, on_power);
		} else {
			if (c->power_subsystem)
				rf_push(op, "GET", c->power_subsystem, NULL, RF_ALLOW_ERROR,
					on_power_subsystem);
			if (c->environment)
				rf_push(op, "GET", c->environment, NULL, RF_ALLOW_ERROR,
					on_environment);
		}
		if (c->sensors && !(c->thermal && c->power))
			rf_push(op, "GET", c->sensors, NULL, RF_ALLOW_ERROR, on_sensors);
	}
	op->finish = sensors_finish;
	return 0;
}
