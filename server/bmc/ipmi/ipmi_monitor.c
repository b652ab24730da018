/* SPDX-License-Identifier: Apache-2.0 */
/* Sensors and SEL over IPMI 2.0 with libipmimonitoring, one SDR cache folder per node. */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <ipmi_monitoring.h>

#include "bmc/ipmi/ipmi_ops.h"
#include "kiln/error.h"
#include "kiln/parse.h"

/* Timestamps below this are seconds since the BMC started, not a date (IPMI spec 37.1). */
#define SEL_PREINIT_MAX 0x20000000u

int ipmi_monitor_init(void)
{
	int errnum = 0;

	if (ipmi_monitoring_init(IPMI_MONITORING_FLAGS_NONE, &errnum) < 0)
		return kiln_fail(KILN_ERROR, "ipmi_monitoring_init: %s",
				 ipmi_monitoring_ctx_strerror(errnum));
	return 0;
}

static int code_of(int errnum)
{
	switch (errnum) {
	case IPMI_MONITORING_ERR_USERNAME_INVALID:
	case IPMI_MONITORING_ERR_PASSWORD_INVALID:
	case IPMI_MONITORING_ERR_K_G_INVALID:
		return KILN_EAUTH;
	case IPMI_MONITORING_ERR_PRIVILEGE_LEVEL_INSUFFICIENT:
	case IPMI_MONITORING_ERR_PRIVILEGEL_LEVEL_CANNOT_BE_OBTAINED:
		return KILN_EPERM;
	case IPMI_MONITORING_ERR_CONNECTION_TIMEOUT:
	case IPMI_MONITORING_ERR_SESSION_TIMEOUT:
	case IPMI_MONITORING_ERR_PASSWORD_VERIFICATION_TIMEOUT:
		return KILN_ETIMEOUT;
	case IPMI_MONITORING_ERR_BMC_BUSY:
		return KILN_EBUSY;
	case IPMI_MONITORING_ERR_IPMI_ERROR:
	case IPMI_MONITORING_ERR_IPMI_2_0_UNAVAILABLE:
	case IPMI_MONITORING_ERR_CIPHER_SUITE_ID_UNAVAILABLE:
	case IPMI_MONITORING_ERR_AUTHENTICATION_TYPE_UNAVAILABLE:
		return KILN_EPROTO;
	default:
		return KILN_ERROR;
	}
}

static int ctx_fail(ipmi_monitoring_ctx_t ctx, const char *what)
{
	int errnum = ipmi_monitoring_ctx_errnum(ctx);

	return kiln_fail(code_of(errnum), "%s: %s", what, ipmi_monitoring_ctx_errormsg(ctx));
}

static void config_fill(struct ipmi_monitoring_ipmi_config *cfg, const struct ipmi_job *job)
{
	long retransmit = job->timeout_ms / 8;

	if (retransmit < 100)
		retransmit = 100;
	if (retransmit > 1000)
		retransmit = 1000;
	if (retransmit >= job->timeout_ms)
		retransmit = job->timeout_ms / 2;
	memset(cfg, 0, sizeof(*cfg));
	cfg->driver_type = -1;
	cfg->protocol_version = IPMI_MONITORING_PROTOCOL_VERSION_2_0;
	cfg->username = (char *)job->user;
	cfg->password = (char *)job->password;
	cfg->privilege_level = job->privilege; /* 0,1,2 are user, operator, admin here too */
	cfg->authentication_type = -1;
	cfg->cipher_suite_id = job->cipher;
	cfg->session_timeout_len = (int)job->timeout_ms;
	cfg->retransmission_timeout_len = (int)retransmit;
	cfg->workaround_flags = job->wa_monitoring;
}

/* Creates the context with its own SDR cache folder (the cache is keyed by host:port). */
static int ctx_open(ipmi_monitoring_ctx_t *out, const struct ipmi_job *job)
{
	ipmi_monitoring_ctx_t ctx;

	if (mkdir(job->sdr_dir, 0700) < 0 && errno != EEXIST)
		return kiln_fail(KILN_ERROR, "SDR cache %s: %s", job->sdr_dir, strerror(errno));
	ctx = ipmi_monitoring_ctx_create();
	if (!ctx)
		return kiln_fail(KILN_ERROR, "out of memory");
	if (ipmi_monitoring_ctx_sdr_cache_directory(ctx, job->sdr_dir) < 0) {
		int rc = ctx_fail(ctx, "SDR cache directory");

		ipmi_monitoring_ctx_destroy(ctx);
		return rc;
	}
	*out = ctx;
	return 0;
}

static const char *kind_of(int type, int units)
{
	if (units == IPMI_MONITORING_SENSOR_UNITS_WATTS)
		return "power";
	switch (type) {
	case IPMI_MONITORING_SENSOR_TYPE_TEMPERATURE:
		return "temperature";
	case IPMI_MONITORING_SENSOR_TYPE_FAN:
	case IPMI_MONITORING_SENSOR_TYPE_COOLING_DEVICE:
		return "fan";
	case IPMI_MONITORING_SENSOR_TYPE_VOLTAGE:
		return "voltage";
	case IPMI_MONITORING_SENSOR_TYPE_POWER_SUPPLY:
		return "psu";
	case IPMI_MONITORING_SENSOR_TYPE_POWER_UNIT:
		return "power";
	default:
		return "other";
	}
}

static json_t *unit_of(int units)
{
	switch (units) {
	case IPMI_MONITORING_SENSOR_UNITS_CELSIUS:
		return json_string("C");
	case IPMI_MONITORING_SENSOR_UNITS_FAHRENHEIT:
		return json_string("F");
	case IPMI_MONITORING_SENSOR_UNITS_VOLTS:
		return json_string("V");
	case IPMI_MONITORING_SENSOR_UNITS_AMPS:
		return json_string("A");
	case IPMI_MONITORING_SENSOR_UNITS_RPM:
		return json_string("RPM");
	case IPMI_MONITORING_SENSOR_UNITS_WATTS:
		return json_string("W");
	case IPMI_MONITORING_SENSOR_UNITS_PERCENT:
		return json_string("%");
	default:
		return json_null();
	}
}

static const char *health_of(int state)
{
	switch (state) {
	case IPMI_MONITORING_STATE_NOMINAL:
		return "ok";
	case IPMI_MONITORING_STATE_WARNING:
		return "warning";
	case IPMI_MONITORING_STATE_CRITICAL:
		return "critical";
	default:
		return "unknown";
	}
}

static json_t *sensor_value(ipmi_monitoring_ctx_t ctx)
{
	int type = ipmi_monitoring_sensor_read_sensor_reading_type(ctx);
	void *reading = ipmi_monitoring_sensor_read_sensor_reading(ctx);

	if (!reading)
		return json_null();
	switch (type) {
	case IPMI_MONITORING_SENSOR_READING_TYPE_DOUBLE:
		return json_real(*(double *)reading);
	case IPMI_MONITORING_SENSOR_READING_TYPE_UNSIGNED_INTEGER32:
		return json_integer(*(uint32_t *)reading);
	case IPMI_MONITORING_SENSOR_READING_TYPE_UNSIGNED_INTEGER8_BOOL:
		return json_boolean(*(uint8_t *)reading);
	default:
		return json_null();
	}
}

/* The discrete states a sensor asserts ("Device Present"), as a JSON array. */
static json_t *sensor_states(ipmi_monitoring_ctx_t ctx)
{
	char **strings = ipmi_monitoring_sensor_read_sensor_bitmask_strings(ctx);
	json_t *arr = json_array();
	size_t i;

	for (i = 0; strings && strings[i] && i < 32; i++)
		json_array_append_new(arr, json_string(strings[i]));
	return arr;
}

int ipmi_monitor_sensors(json_t **out, const struct ipmi_job *job)
{
	struct ipmi_monitoring_ipmi_config cfg;
	ipmi_monitoring_ctx_t ctx = NULL;
	json_t *sensors = NULL;
	int rc, n;

	rc = ctx_open(&ctx, job);
	if (rc < 0)
		return rc;
	config_fill(&cfg, job);
	n = ipmi_monitoring_sensor_readings_by_record_id(
		ctx, job->host, &cfg, IPMI_MONITORING_SENSOR_READING_FLAGS_IGNORE_NON_INTERPRETABLE_SENSORS,
		NULL, 0, NULL, NULL);
	if (n < 0) {
		rc = ctx_fail(ctx, "read sensors");
		goto cleanup;
	}
	sensors = json_array();
	for (int i = 0; i < n; i++, ipmi_monitoring_sensor_iterator_next(ctx)) {
		const char *name = ipmi_monitoring_sensor_read_sensor_name(ctx);
		int type = ipmi_monitoring_sensor_read_sensor_type(ctx);
		int units = ipmi_monitoring_sensor_read_sensor_units(ctx);
		int state = ipmi_monitoring_sensor_read_sensor_state(ctx);
		int reading_type = ipmi_monitoring_sensor_read_sensor_reading_type(ctx);
		json_t *s = json_object();

		json_object_set_new(s, "name", json_string(name ? name : "?"));
		json_object_set_new(s, "kind", json_string(kind_of(type, units)));
		if (reading_type == IPMI_MONITORING_SENSOR_READING_TYPE_DOUBLE ||
		    reading_type == IPMI_MONITORING_SENSOR_READING_TYPE_UNSIGNED_INTEGER32) {
			json_object_set_new(s, "value", sensor_value(ctx));
			json_object_set_new(s, "unit", unit_of(units));
		} else {
			json_object_set_new(s, "value", json_null());
			json_object_set_new(s, "unit", json_null());
			json_object_set_new(s, "states", sensor_states(ctx));
		}
		json_object_set_new(s, "health", json_string(health_of(state)));
		json_object_set_new(s, "record_id",
				    json_integer(ipmi_monitoring_sensor_read_record_id(ctx)));
		json_array_append_new(sensors, s);
	}
	*out = json_pack("{s:o}", "sensors", sensors);
	sensors = NULL;
cleanup:
	json_decref(sensors);
	ipmi_monitoring_ctx_destroy(ctx);
	return rc;
}

static const char *severity_of(int state)
{
	switch (state) {
	case IPMI_MONITORING_STATE_NOMINAL:
		return "info";
	case IPMI_MONITORING_STATE_WARNING:
		return "warning";
	case IPMI_MONITORING_STATE_CRITICAL:
		return "critical";
	default:
		return "unknown";
	}
}

static json_t *sel_entry(ipmi_monitoring_ctx_t ctx, int id, unsigned int ts)
{
	int cls = ipmi_monitoring_sel_read_record_type_class(ctx);
	json_t *e = json_object();
	char idbuf[16], msg[384], when[32];

	snprintf(idbuf, sizeof(idbuf), "%d", id);
	json_object_set_new(e, "id", json_string(idbuf));
	json_object_set_new(e, "record_id", json_integer(id));
	if (ts >= SEL_PREINIT_MAX) {
		kiln_time_utc(when, ts);
		json_object_set_new(e, "time", json_string(when));
	} else {
		json_object_set_new(e, "time", json_null()); /* the BMC's clock was not set */
	}
	json_object_set_new(e, "timestamp", json_integer(ts));
	json_object_set_new(e, "severity", json_string(severity_of(ipmi_monitoring_sel_read_sel_state(ctx))));
	if (cls == IPMI_MONITORING_SEL_RECORD_TYPE_CLASS_SYSTEM_EVENT_RECORD) {
		const char *sensor = ipmi_monitoring_sel_read_sensor_name(ctx);
		const char *what = ipmi_monitoring_sel_read_event_offset_string(ctx);
		int dir = ipmi_monitoring_sel_read_event_direction(ctx);

		snprintf(msg, sizeof(msg), "%s: %s%s", sensor && *sensor ? sensor : "sensor",
			 what && *what ? what : "event",
			 dir == IPMI_MONITORING_SEL_EVENT_DIRECTION_DEASSERTION ? " (deasserted)" : "");
		json_object_set_new(e, "sensor_type",
				    json_integer(ipmi_monitoring_sel_read_sensor_type(ctx)));
	} else {
		snprintf(msg, sizeof(msg), "OEM record type 0x%02x",
			 (unsigned)ipmi_monitoring_sel_read_record_type(ctx));
	}
	json_object_set_new(e, "message", json_string(msg));
	return e;
}

int ipmi_monitor_sel(json_t **out, const struct ipmi_job *job)
{
	struct ipmi_monitoring_ipmi_config cfg;
	ipmi_monitoring_ctx_t ctx = NULL;
	json_t *all = NULL, *entries = NULL;
	int64_t last_id = 0;
	int mark_seen = 0;
	int rc, n;

	rc = ctx_open(&ctx, job);
	if (rc < 0)
		return rc;
	config_fill(&cfg, job);
	n = ipmi_monitoring_sel_by_record_id(ctx, job->host, &cfg, 0, NULL, 0, NULL, NULL);
	if (n < 0) {
		if (ipmi_monitoring_ctx_errnum(ctx) == IPMI_MONITORING_ERR_NO_SEL_RECORDS) {
			n = 0;
		} else {
			rc = ctx_fail(ctx, "read SEL");
			goto cleanup;
		}
	}
	all = json_array();
	for (int i = 0; i < n; i++, ipmi_monitoring_sel_iterator_next(ctx)) {
		int id = ipmi_monitoring_sel_read_record_id(ctx);
		unsigned int ts = 0;

		if (id < 0)
			continue;
		if (ipmi_monitoring_sel_read_timestamp(ctx, &ts) < 0)
			ts = 0;
		if (id > last_id)
			last_id = id;
		if (job->sel_after_id > 0 && id == job->sel_after_id)
			mark_seen = 1;
		json_array_append_new(all, sel_entry(ctx, id, ts));
	}
	/*
	 * The record id mark is only good while its record is still there; a cleared or
	 * wrapped SEL falls back to the time filter.
	 */
	entries = json_array();
	for (size_t i = 0; i < json_array_size(all); i++) {
		json_t *e = json_array_get(all, i);
		json_int_t id = json_integer_value(json_object_get(e, "record_id"));
		json_int_t ts = json_integer_value(json_object_get(e, "timestamp"));
		int keep = 1;

		if (job->sel_since > 0 && mark_seen)
			keep = id > job->sel_after_id;
		else if (job->sel_since > 0 && ts >= (json_int_t)SEL_PREINIT_MAX)
			keep = ts >= job->sel_since;
		if (keep)
			json_array_append(entries, e);
	}
	/* the total and the newest time tell the poller a cleared SEL (both drop) */
	json_int_t newest = 0;
	for (size_t i = 0; i < json_array_size(all); i++) {
		json_int_t ts = json_integer_value(json_object_get(json_array_get(all, i), "timestamp"));
		if (ts >= (json_int_t)SEL_PREINIT_MAX && ts > newest)
			newest = ts;
	}
	*out = json_pack("{s:o, s:I, s:I, s:I}", "entries", entries, "last_record_id",
			 (json_int_t)last_id, "count", (json_int_t)json_array_size(all), "newest",
			 newest);
	entries = NULL;
cleanup:
	json_decref(all);
	json_decref(entries);
	ipmi_monitoring_ctx_destroy(ctx);
	return rc;
}
