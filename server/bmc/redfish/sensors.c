/* Redfish sensors: Thermal/Power (older) or ThermalSubsystem/PowerSubsystem/EnvironmentMetrics
 * (newer), normalised to {"name","kind","value","unit","health","thresholds"}. */
#include <stdlib.h>
#include <string.h>

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

/* A PSU keeps its resource id: a redundancy set names its members by it. */
static void psu_add(json_t *out, const char *name, const json_t *value, const json_t *psu)
{
	json_t *s = sensor_add(out, name, "psu", value, "W", psu);
	const char *id = json_string_value(json_object_get(psu, "@odata.id"));
	if (id)
		json_object_set_new(s, "id", json_string(id));
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
			sensor_add(out, name_of(t, NULL), "temperature",
				   json_object_get(t, "ReadingCelsius"), "C", t);
	}
	json_array_foreach(json_object_get(thermal, "Fans"), i, t) {
		if (!absent(t))
			sensor_add(out, name_of(t, "FanName"), "fan", json_object_get(t, "Reading"),
				   fan_unit(json_string_value(json_object_get(t, "ReadingUnits"))), t);
	}
}

void rf_sensors_from_power(json_t *out, const json_t *power)
{
	size_t i;
	json_t *p;
	json_array_foreach(json_object_get(power, "PowerControl"), i, p) {
		const char *name = json_string_value(json_object_get(p, "Name"));
		sensor_add(out, name ? name : "Power Consumed", "power",
			   json_object_get(p, "PowerConsumedWatts"), "W", p);
	}
	json_array_foreach(json_object_get(power, "Voltages"), i, p) {
		if (!absent(p))
			sensor_add(out, name_of(p, NULL), "voltage", json_object_get(p, "ReadingVolts"),
				   "V", p);
	}
	json_array_foreach(json_object_get(power, "PowerSupplies"), i, p) {
		if (absent(p))
			continue;
		json_t *w = json_object_get(p, "LastPowerOutputWatts");
		if (!json_is_number(w))
			w = json_object_get(p, "PowerOutputWatts");
		psu_add(out, name_of(p, NULL), w, p);
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
		if (!name)
			name = json_string_value(json_object_get(t, "DataSourceUri"));
		sensor_add(out, name, "temperature", json_object_get(t, "Reading"), "C", t);
	}
}

void rf_sensors_from_fan(json_t *out, const json_t *fan)
{
	if (absent(fan))
		return;
	json_t *speed = json_object_get(fan, "SpeedPercent");
	json_t *rpm = json_object_get(speed, "SpeedRPM");
	if (json_is_number(rpm))
		sensor_add(out, name_of(fan, NULL), "fan", rpm, "RPM", fan);
	else
		sensor_add(out, name_of(fan, NULL), "fan", json_object_get(speed, "Reading"), "%", fan);
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
	json_t *w = json_object_get(json_object_get(env, "PowerWatts"), "Reading");
	if (json_is_number(w)) {
		snprintf(name, sizeof(name), "%s Power", chassis_name ? chassis_name : "Chassis");
		sensor_add(out, name, "power", w, "W", env);
	}
	json_t *t = json_object_get(json_object_get(env, "TemperatureCelsius"), "Reading");
	if (json_is_number(t)) {
		snprintf(name, sizeof(name), "%s Temperature", chassis_name ? chassis_name : "Chassis");
		sensor_add(out, name, "temperature", t, "C", env);
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
	sensor_add(out, name_of(sensor, "Id"), kind, json_object_get(sensor, "Reading"), unit,
		   sensor);
}

/* --- the crawl --------------------------------------------------------------------------- */

static int on_thermal(struct rf_op *op, const struct rf_reply *r)
{
	rf_sensors_from_thermal(op->scratch, r->json);
	return 0;
}

static int on_power(struct rf_op *op, const struct rf_reply *r)
{
	rf_sensors_from_power(op->scratch, r->json);
	return 0;
}

static int on_thermal_metrics(struct rf_op *op, const struct rf_reply *r)
{
	rf_sensors_from_thermal_metrics(op->scratch, r->json);
	return 0;
}

static int on_fan(struct rf_op *op, const struct rf_reply *r)
{
	rf_sensors_from_fan(op->scratch, r->json);
	return 0;
}

static int on_psu(struct rf_op *op, const struct rf_reply *r)
{
	rf_sensors_from_power_supply(op->scratch, r->json);
	return 0;
}

static int on_environment(struct rf_op *op, const struct rf_reply *r)
{
	rf_sensors_from_environment(op->scratch, r->json, NULL);
	return 0;
}

static int on_sensor(struct rf_op *op, const struct rf_reply *r)
{
	if (r->status < 400 && !rf_body_is_error(r->json))
		rf_sensors_from_sensor(op->scratch, r->json);
	return 0;
}

static int push_members(struct rf_op *op, const struct rf_reply *r, rf_handler h)
{
	size_t i;
	json_t *m;
	json_array_foreach(json_object_get(r->json, "Members"), i, m) {
		const char *p = rf_link(m, "@odata.id");
		if (p)
			rf_push(op, "GET", p, NULL, 0, h);
	}
	return 0;
}

static int on_sensors(struct rf_op *op, const struct rf_reply *r)
{
	size_t i;
	json_t *m;
	if (r->status >= 400)
		return 0;
	json_array_foreach(json_object_get(r->json, "Members"), i, m) {
		const char *p = rf_link(m, "@odata.id");
		if (p)
			rf_push(op, "GET", p, NULL, RF_ALLOW_ERROR, on_sensor);
	}
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
	const char *tm = rf_link(r->json, "ThermalMetrics");
	const char *fans = rf_link(r->json, "Fans");
	if (tm)
		rf_push(op, "GET", tm, NULL, 0, on_thermal_metrics);
	if (fans)
		rf_push(op, "GET", fans, NULL, 0, on_fans);
	return 0;
}

static int on_power_subsystem(struct rf_op *op, const struct rf_reply *r)
{
	const char *psus = rf_link(r->json, "PowerSupplies");
	rf_sensors_from_power_subsystem(op->scratch, r->json);
	if (psus)
		rf_push(op, "GET", psus, NULL, 0, on_psus);
	return 0;
}

/* Names made unique ("HpeServerPowerSupply", "HpeServerPowerSupply #2") so that stored
 * readings keep apart. */
static int sensors_finish(struct rf_op *op)
{
	json_t *count = json_object();
	size_t i;
	json_t *s;
	json_array_foreach(op->scratch, i, s) {
		const char *name = json_string_value(json_object_get(s, "name"));
		json_int_t n = json_integer_value(json_object_get(count, name)) + 1;
		json_object_set_new(count, name, json_integer(n));
		if (n > 1) {
			char buf[300];
			snprintf(buf, sizeof(buf), "%s #%lld", name, (long long)n);
			json_object_set_new(s, "name", json_string(buf));
		}
	}
	json_decref(count);
	op->data = json_pack("{s:O}", "sensors", op->scratch);
	return 0;
}

int rf_sensors_start(struct rf_op *op)
{
	op->scratch = json_array();
	for (size_t i = 0; i < op->bmc->nchassis; i++) {
		const struct rf_chassis *c = &op->bmc->chassis[i];
		if (c->thermal)
			rf_push(op, "GET", c->thermal, NULL, 0, on_thermal);
		else if (c->thermal_subsystem)
			rf_push(op, "GET", c->thermal_subsystem, NULL, 0, on_thermal_subsystem);
		if (c->power) {
			rf_push(op, "GET", c->power, NULL, 0, on_power);
		} else {
			if (c->power_subsystem)
				rf_push(op, "GET", c->power_subsystem, NULL, 0, on_power_subsystem);
			if (c->environment)
				rf_push(op, "GET", c->environment, NULL, 0, on_environment);
		}
		/* a chassis whose readings live only in its Sensors collection */
		if (c->sensors && !c->thermal && !c->thermal_subsystem && !c->power &&
		    !c->power_subsystem && !c->environment)
			rf_push(op, "GET", c->sensors, NULL, RF_ALLOW_ERROR, on_sensors);
	}
	op->finish = sensors_finish;
	return 0;
}
