/* SPDX-License-Identifier: Apache-2.0 */
/* An agent report parsed and checked before anything is stored: required fields refused
 * whole, leaf fields out of their rules refused one by one (nulled and listed), GPUs and
 * Xid lines read into struct ingest_report. */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "agents/ingest_internal.h"
#include "kiln/error.h"
#include "reports/versions_audit.h"

/* --- validation ---------------------------------------------------------------------- */

struct check {
	char *field;
	size_t fieldlen;
	json_t *rejected;           /* paths of the leaf fields refused (nulled), or NULL */
	size_t nrejected;           /* how many, listed or not */
};

static int bad(struct check *c, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int bad(struct check *c, const char *field, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (c->field && c->fieldlen)
		snprintf(c->field, c->fieldlen, "%s", field);
	return kiln_fail(KILN_EINVAL, "report: field '%s' %s", field, msg);
}

/* path = prefix + key ("gpus[2]" + "index" -> "gpus[2].index"). */
static const char *path(char *buf, size_t len, const char *prefix, const char *key)
{
	if (prefix && *prefix)
		snprintf(buf, len, "%s.%s", prefix, key);
	else
		snprintf(buf, len, "%s", key);
	return buf;
}

/* An optional string: absent or null leaves *out NULL. */
static int opt_str(struct check *c, const char **out, json_t *obj, const char *prefix,
		   const char *key, size_t max)
{
	json_t *v = json_object_get(obj, key);
	char f[INGEST_FIELD_MAX];

	*out = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return bad(c, path(f, sizeof(f), prefix, key), "must be a string");
	if (json_string_length(v) > max)
		return bad(c, path(f, sizeof(f), prefix, key), "is longer than %zu bytes", max);
	*out = json_string_value(v);
	return 0;
}

static int req_str(struct check *c, const char **out, json_t *obj, const char *prefix,
		   const char *key, size_t max)
{
	char f[INGEST_FIELD_MAX];
	int rc = opt_str(c, out, obj, prefix, key, max);

	if (rc == 0 && !*out)
		return bad(c, path(f, sizeof(f), prefix, key), "is required");
	return rc;
}

/* An optional integer in [min, max]: absent or null gives -1. */
static int opt_int(struct check *c, int64_t *out, json_t *obj, const char *prefix,
		   const char *key, int64_t min, int64_t max)
{
	json_t *v = json_object_get(obj, key);
	char f[INGEST_FIELD_MAX];

	*out = -1;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v))
		return bad(c, path(f, sizeof(f), prefix, key), "must be an integer");
	if (json_integer_value(v) < min || json_integer_value(v) > max)
		return bad(c, path(f, sizeof(f), prefix, key), "must be between %lld and %lld",
			   (long long)min, (long long)max);
	*out = json_integer_value(v);
	return 0;
}

/* An optional number: absent or null gives NAN. */
static int opt_num(struct check *c, double *out, json_t *obj, const char *prefix,
		   const char *key)
{
	json_t *v = json_object_get(obj, key);
	char f[INGEST_FIELD_MAX];

	*out = NAN;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_number(v))
		return bad(c, path(f, sizeof(f), prefix, key), "must be a number");
	*out = json_number_value(v);
	return 0;
}

/* An optional boolean: absent or null gives -1. */
static int opt_bool(struct check *c, int *out, json_t *obj, const char *prefix, const char *key)
{
	json_t *v = json_object_get(obj, key);
	char f[INGEST_FIELD_MAX];

	*out = -1;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_boolean(v))
		return bad(c, path(f, sizeof(f), prefix, key), "must be true or false");
	*out = json_is_true(v);
	return 0;
}

/* An optional object or array of at most max elements (arrays); absent gives NULL. */
static int opt_container(struct check *c, json_t **out, json_t *obj, const char *key,
			 int want_array, size_t max)
{
	json_t *v = json_object_get(obj, key);

	*out = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (want_array && !json_is_array(v))
		return bad(c, key, "must be an array");
	if (!want_array && !json_is_object(v))
		return bad(c, key, "must be an object");
	if (want_array && json_array_size(v) > max)
		return bad(c, key, "has more than %zu elements", max);
	*out = v;
	return 0;
}

/* --- leaf fields: refused one by one ------------------------------------------------- */

/*
 * A number, flag or version string out of its range, of the wrong type or not of its
 * pattern is garbage from one sensor or one GPU, not a broken report: the field is set to
 * null in the report (so nothing downstream reads it), its path is listed in the report's
 * "rejected_fields", and the rest of the report is stored. Only what gives a report its
 * shape (schema, report_id, host, nvidia.status, the lists, a GPU's index) refuses it
 * whole.
 */
static int reject(struct check *c, json_t *obj, const char *prefix, const char *key)
{
	char f[INGEST_FIELD_MAX];

	if (!c->rejected && !(c->rejected = json_array()))
		return kiln_fail(KILN_ERROR, "out of memory");
	c->nrejected++;
	if (json_array_size(c->rejected) < INGEST_REJECTED_MAX &&
	    json_array_append_new(c->rejected, json_string(path(f, sizeof(f), prefix, key))) < 0)
		return kiln_fail(KILN_ERROR, "out of memory");
	if (json_object_set_new(obj, key, json_null()) < 0)
		return kiln_fail(KILN_ERROR, "out of memory");
	return 0;
}

enum leaf_kind { LEAF_INT, LEAF_NUM, LEAF_BOOL, LEAF_VERSION, LEAF_CUDA_VERSION };

/* A field's type and range: ints in [imin, imax], numbers (finite) in [dmin, dmax]. */
struct leaf_rule {
	const char *key;
	enum leaf_kind kind;
	int64_t imin, imax;
	double dmin, dmax;
};

#define LR_INT(k, lo, hi) { k, LEAF_INT, lo, hi, 0, 0 }
#define LR_NUM(k, lo, hi) { k, LEAF_NUM, 0, 0, lo, hi }
#define LR_BOOL(k) { k, LEAF_BOOL, 0, 0, 0, 0 }
#define LR_VERSION(k) { k, LEAF_VERSION, 0, 0, 0, 0 }

#define PIB (INT64_C(1) << 50)

/* The ranges are what hardware can report, wide enough for what comes next: a GPU of a
 * PiB, 10 kW or 200 degC is no reading. */
static const struct leaf_rule gpu_rules[] = {
	LR_INT("memory_total_bytes", 0, PIB),
	LR_INT("memory_used_bytes", 0, PIB),
	LR_INT("memory_reserved_bytes", 0, PIB),
	LR_NUM("utilization_gpu_pct", 0, 100),
	LR_NUM("utilization_memory_pct", 0, 100),
	LR_NUM("temperature_c", -60, 200),
	LR_NUM("power_draw_w", 0, 10000),
	LR_NUM("power_limit_w", 0, 10000),
	LR_INT("clock_sm_mhz", 0, 100000),
	LR_INT("clock_mem_mhz", 0, 100000),
	LR_INT("pstate", 0, 15),
	LR_INT("clock_event_reasons", 0, INT64_MAX),
	LR_INT("fan_speed_pct", 0, 255),
	LR_BOOL("ecc_enabled"),
	LR_BOOL("ecc_pending_enabled"),
	LR_INT("ecc_volatile_corrected", 0, INT64_MAX),
	LR_INT("ecc_volatile_uncorrected", 0, INT64_MAX),
	LR_INT("ecc_aggregate_corrected", 0, INT64_MAX),
	LR_INT("ecc_aggregate_uncorrected", 0, INT64_MAX),
	LR_INT("retired_pages_sbe", 0, INT32_MAX),
	LR_INT("retired_pages_dbe", 0, INT32_MAX),
	LR_BOOL("retired_pages_pending"),
	LR_INT("remapped_rows_corrected", 0, INT32_MAX),
	LR_INT("remapped_rows_uncorrected", 0, INT32_MAX),
	LR_BOOL("remapped_rows_pending"),
	LR_BOOL("remapped_rows_failure"),
	LR_BOOL("persistence_mode"),
	LR_BOOL("mig_mode"),
	LR_BOOL("mig_mode_pending"),
	LR_INT("nvlink_links", 0, 64),
	LR_INT("nvlink_active", 0, 64),
	LR_INT("clock_sm_max_mhz", 0, 100000),
	LR_INT("clock_mem_max_mhz", 0, 100000),
	LR_INT("pcie_replay_count", 0, INT64_MAX),
	LR_INT("aer_correctable", 0, INT64_MAX),
	LR_INT("aer_nonfatal", 0, INT64_MAX),
	LR_INT("aer_fatal", 0, INT64_MAX),
};

static const struct leaf_rule host_rules[] = {
	LR_INT("cpu_threads", 1, 1 << 20),
	LR_INT("cpu_sockets", 1, 1024),
	LR_INT("cpu_cores", 1, 1 << 20),
	LR_INT("memory_total_bytes", 0, 1024 * PIB),
	LR_INT("memory_available_bytes", 0, 1024 * PIB),
	LR_INT("uptime_s", 0, INT64_C(1) << 40),
	LR_NUM("cpu_iowait_pct", 0, 100),
};

static const struct leaf_rule nvidia_rules[] = {
	LR_VERSION("driver_version"),
	LR_VERSION("kernel_module_version"),
	LR_VERSION("nvml_version"),
	LR_VERSION("fabric_manager_version"),
	{ "cuda_driver_version", LEAF_CUDA_VERSION, 0, 0, 0, 0 },
	LR_INT("gpu_count", 0, 1024),
	LR_BOOL("driver_module_mismatch"),
};

static const struct leaf_rule agent_rules[] = {
	LR_INT("seq", 1, INT64_MAX),
	LR_INT("interval_s", 1, 86400),
	LR_INT("spool_dropped", 0, INT64_MAX),
	LR_INT("kmsg_overruns", 0, INT64_MAX),
	LR_INT("xid_events_dropped", 0, INT64_MAX),
	LR_INT("kernel_events_dropped", 0, INT64_MAX),
};

static const struct leaf_rule version_rules[] = { LR_VERSION("version") };

/* The schema's version patterns: "^[0-9]+(\.[0-9]+){0,3}$" (a driver's "550.54.15", NVML's
 * "12.550.54.15", a toolkit's "12.4.1"; a toolkit's "12.4.127" too) and, for the CUDA
 * version the driver supports, "^[0-9]+\.[0-9]+$". Nothing else reaches a terminal or a
 * version audit from here. */
static int version_valid(const char *s, int max_dots)
{
	int dots = 0, digits = 0;

	if (strlen(s) > 64)
		return 0;
	for (; *s; s++) {
		if (*s >= '0' && *s <= '9') {
			digits++;
		} else if (*s == '.' && digits > 0 && dots < max_dots) {
			dots++;
			digits = 0;
		} else {
			return 0;
		}
	}
	return digits > 0;
}

static int leaf_ok(const struct leaf_rule *rule, json_t *v)
{
	switch (rule->kind) {
	case LEAF_INT:
		return json_is_integer(v) && json_integer_value(v) >= rule->imin &&
		       json_integer_value(v) <= rule->imax;
	case LEAF_NUM:
		/* jansson keeps 1.7e308 as a real: the range keeps it from a later * 10 */
		return json_is_number(v) && isfinite(json_number_value(v)) &&
		       json_number_value(v) >= rule->dmin && json_number_value(v) <= rule->dmax;
	case LEAF_BOOL:
		return json_is_boolean(v);
	case LEAF_VERSION:
		return json_is_string(v) && version_valid(json_string_value(v), 3);
	case LEAF_CUDA_VERSION:
		return json_is_string(v) && version_valid(json_string_value(v), 1) &&
		       strchr(json_string_value(v), '.');
	}
	return 0;
}

/* Checks obj's fields named in rules; each bad one is refused (reject). */
static int leaves_check(struct check *c, json_t *obj, const char *prefix,
			const struct leaf_rule *rules, size_t n)
{
	int rc;

	if (!json_is_object(obj))
		return 0;
	for (size_t i = 0; i < n; i++) {
		json_t *v = json_object_get(obj, rules[i].key);

		if (v && !json_is_null(v) && !leaf_ok(&rules[i], v) &&
		    (rc = reject(c, obj, prefix, rules[i].key)) < 0)
			return rc;
	}
	return 0;
}

#define LEAVES(c, obj, prefix, rules) leaves_check(c, obj, prefix, rules, sizeof(rules) / sizeof(rules[0]))

/* Each element's "version" of a list (cuda_toolkits, cudnn) checked as a leaf. */
static int list_versions_check(struct check *c, json_t *list, const char *name)
{
	char pre[48];
	int rc;

	for (size_t i = 0; i < json_array_size(list); i++) {
		snprintf(pre, sizeof(pre), "%s[%zu]", name, i);
		if ((rc = LEAVES(c, json_array_get(list, i), pre, version_rules)) < 0)
			return rc;
	}
	return 0;
}

/* The schema's report_id: exactly 32 lowercase hex digits (the agent's 128 random bits). */
static int id_valid(const char *s)
{
	size_t n = 0;

	for (; s[n]; n++)
		if (n == 32 || !((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
			return 0;
	return n == 32;
}

/* "kiln.agent.report/1" or "kiln.agent.report/1.N": major version 1. */
static int schema_valid(const char *s)
{
	static const char prefix[] = "kiln.agent.report/";
	const char *v;

	if (strncmp(s, prefix, sizeof(prefix) - 1) != 0)
		return 0;
	v = s + sizeof(prefix) - 1;
	return v[0] == '1' && (v[1] == '\0' || v[1] == '.');
}

/* RFC 3339 UTC ("2024-05-01T12:00:00Z", fractions and offsets allowed) to unix seconds. */
static int time_parse(int64_t *out, const char *s)
{
	struct tm tm;
	const char *p;
	int64_t t, off = 0;

	memset(&tm, 0, sizeof(tm));
	p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!p)
		return -1;
	if (*p == '.') {
		p++;
		if (!isdigit((unsigned char)*p))
			return -1;
		while (isdigit((unsigned char)*p))
			p++;
	}
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if ((*p == '+' || *p == '-') && isdigit((unsigned char)p[1]) &&
		   isdigit((unsigned char)p[2]) && p[3] == ':' && isdigit((unsigned char)p[4]) &&
		   isdigit((unsigned char)p[5])) {
		off = ((p[1] - '0') * 10 + (p[2] - '0')) * 3600 + ((p[4] - '0') * 10 + (p[5] - '0')) * 60;
		if (*p == '+')
			off = -off;
		p += 6;
	} else {
		return -1;
	}
	if (*p)
		return -1;
	t = (int64_t)timegm(&tm);
	if (t < 0)
		return -1;
	*out = t + off;
	return 0;
}

/* A GPU's "nvlink_errors" ([{"link":N,"replay":..,"recovery":..,"crc_flit":..,"crc_data":..}],
 * counters optional): refused as a whole field (nulled, listed) when any part is not so. */
static int nvlink_errors_check(struct check *c, json_t *o, const char *pre)
{
	static const char *const keys[] = { "replay", "recovery", "crc_flit", "crc_data" };
	json_t *arr = json_object_get(o, "nvlink_errors"), *l, *v;
	size_t i, k;

	if (!arr || json_is_null(arr))
		return 0;
	if (!json_is_array(arr) || json_array_size(arr) > 64)
		return reject(c, o, pre, "nvlink_errors");
	json_array_foreach(arr, i, l) {
		v = json_object_get(l, "link");
		if (!json_is_object(l) || !json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) > 63)
			return reject(c, o, pre, "nvlink_errors");
		for (k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
			v = json_object_get(l, keys[k]);
			if (v && !json_is_null(v) && (!json_is_integer(v) || json_integer_value(v) < 0))
				return reject(c, o, pre, "nvlink_errors");
		}
	}
	return 0;
}

static int gpu_parse(struct check *c, struct agent_gpu *g, json_t *o, size_t i)
{
	char pre[32];
	const char *uuid, *name, *serial, *bus;
	int64_t ecc_vc, ecc_ac;
	int rc;

	snprintf(pre, sizeof(pre), "gpus[%zu]", i);
	if (!json_is_object(o))
		return bad(c, pre, "must be an object");
	/* its readings first: a bad one is nulled, so the reads below see it absent */
	if ((rc = LEAVES(c, o, pre, gpu_rules)) < 0 || (rc = nvlink_errors_check(c, o, pre)) < 0)
		return rc;
	if ((rc = opt_int(c, &g->index, o, pre, "index", 0, 1023)) < 0)
		return rc;
	if (g->index < 0) {
		char f[INGEST_FIELD_MAX];

		return bad(c, path(f, sizeof(f), pre, "index"), "is required");
	}
	if ((rc = opt_str(c, &uuid, o, pre, "uuid", 128)) < 0 ||
	    (rc = opt_str(c, &name, o, pre, "name", 256)) < 0 ||
	    (rc = opt_str(c, &serial, o, pre, "serial", 128)) < 0 ||
	    (rc = opt_str(c, &bus, o, pre, "pci_bus_id", 64)) < 0 ||
	    (rc = opt_int(c, &g->memory_total_bytes, o, pre, "memory_total_bytes", 0, INT64_MAX)) < 0 ||
	    (rc = opt_int(c, &g->memory_used_bytes, o, pre, "memory_used_bytes", 0, INT64_MAX)) < 0 ||
	    (rc = opt_num(c, &g->temperature_c, o, pre, "temperature_c")) < 0 ||
	    (rc = opt_num(c, &g->power_draw_w, o, pre, "power_draw_w")) < 0 ||
	    (rc = opt_num(c, &g->utilization_gpu_pct, o, pre, "utilization_gpu_pct")) < 0 ||
	    (rc = opt_int(c, &g->ecc_volatile_uncorrected, o, pre, "ecc_volatile_uncorrected", 0,
			  INT64_MAX)) < 0 ||
	    (rc = opt_int(c, &g->ecc_aggregate_uncorrected, o, pre, "ecc_aggregate_uncorrected", 0,
			  INT64_MAX)) < 0 ||
	    (rc = opt_int(c, &ecc_vc, o, pre, "ecc_volatile_corrected", 0, INT64_MAX)) < 0 ||
	    (rc = opt_int(c, &ecc_ac, o, pre, "ecc_aggregate_corrected", 0, INT64_MAX)) < 0 ||
	    (rc = opt_bool(c, &g->remapped_rows_failure, o, pre, "remapped_rows_failure")) < 0 ||
	    (rc = opt_bool(c, &g->retired_pages_pending, o, pre, "retired_pages_pending")) < 0 ||
	    (rc = opt_bool(c, &g->remapped_rows_pending, o, pre, "remapped_rows_pending")) < 0 ||
	    (rc = opt_int(c, &g->remapped_rows_uncorrected, o, pre, "remapped_rows_uncorrected", 0,
			  INT64_MAX)) < 0)
		return rc;
	/* The store keeps copies: the agent_gpu list owns its strings. */
	g->uuid = uuid ? strdup(uuid) : NULL;
	g->name = name ? strdup(name) : NULL;
	g->serial = serial ? strdup(serial) : NULL;
	g->pci_bus_id = bus ? strdup(bus) : NULL;
	if ((uuid && !g->uuid) || (name && !g->name) || (serial && !g->serial) ||
	    (bus && !g->pci_bus_id))
		return kiln_fail(KILN_ERROR, "out of memory");
	return 0;
}

/* An Xid's own fields beside its number (which is what the event is). */
static const struct leaf_rule xid_rules[] = {
	LR_INT("seq", 0, INT64_MAX),
	LR_INT("time_us", 0, INT64_MAX),
	LR_INT("gpu_index", 0, 1023),
};

static int xid_check(struct check *c, json_t *o, size_t i)
{
	char pre[40];
	const char *s;
	int64_t v;
	int rc;

	snprintf(pre, sizeof(pre), "xid_events[%zu]", i);
	if (!json_is_object(o))
		return bad(c, pre, "must be an object");
	if ((rc = LEAVES(c, o, pre, xid_rules)) < 0)
		return rc;
	if ((rc = opt_int(c, &v, o, pre, "xid", 0, 100000)) < 0)
		return rc;
	if (v < 0) {
		char f[INGEST_FIELD_MAX];

		return bad(c, path(f, sizeof(f), pre, "xid"), "is required");
	}
	if ((rc = opt_str(c, &s, o, pre, "message", INGEST_STRING_MAX)) < 0 ||
	    (rc = opt_str(c, &s, o, pre, "pci_bus_id", 64)) < 0 ||
	    (rc = opt_str(c, &s, o, pre, "source", 32)) < 0 ||
	    (rc = opt_int(c, &v, o, pre, "seq", 0, INT64_MAX)) < 0 ||
	    (rc = opt_int(c, &v, o, pre, "time_us", 0, INT64_MAX)) < 0 ||
	    (rc = opt_int(c, &v, o, pre, "gpu_index", 0, 1023)) < 0)
		return rc;
	return 0;
}

/* A kernel alarm line's own fields (host_rules.c reads them from the health cut). */
static const struct leaf_rule kernel_event_rules[] = {
	LR_INT("seq", 0, INT64_MAX),
	LR_INT("time_us", 0, INT64_MAX),
};

/* One of "kernel_events": its kind and line are what the event is; refused whole without. */
static int kernel_event_check(struct check *c, json_t *o, size_t i)
{
	char pre[40], f[INGEST_FIELD_MAX];
	const char *kind, *msg;
	int rc;

	snprintf(pre, sizeof(pre), "kernel_events[%zu]", i);
	if (!json_is_object(o))
		return bad(c, pre, "must be an object");
	if ((rc = LEAVES(c, o, pre, kernel_event_rules)) < 0 ||
	    (rc = req_str(c, &kind, o, pre, "kind", 32)) < 0 ||
	    (rc = req_str(c, &msg, o, pre, "message", INGEST_STRING_MAX)) < 0)
		return rc;
	if (!kind[0] || strspn(kind, "abcdefghijklmnopqrstuvwxyz_") != strlen(kind))
		return bad(c, path(f, sizeof(f), pre, "kind"), "must be lowercase letters and '_'");
	return 0;
}

/* A filesystem's numbers: bytes up to an EiB, shares in percent. */
static const struct leaf_rule filesystem_rules[] = {
	LR_INT("size_bytes", 0, 1024 * PIB),
	LR_INT("avail_bytes", 0, 1024 * PIB),
	LR_NUM("used_pct", 0, 100),
	LR_NUM("inodes_used_pct", 0, 100),
	LR_INT("inodes_avail", 0, INT64_MAX),
};

/* One of "filesystems": its path is what a reason names; refused whole without. */
static int filesystem_check(struct check *c, json_t *o, size_t i)
{
	char pre[40];
	const char *s;
	int rc;

	snprintf(pre, sizeof(pre), "filesystems[%zu]", i);
	if (!json_is_object(o))
		return bad(c, pre, "must be an object");
	if ((rc = LEAVES(c, o, pre, filesystem_rules)) < 0 ||
	    (rc = req_str(c, &s, o, pre, "path", 1024)) < 0 ||
	    (rc = opt_str(c, &s, o, pre, "mount", 1024)) < 0 ||
	    (rc = opt_str(c, &s, o, pre, "fstype", 64)) < 0)
		return rc;
	return 0;
}

void ingest_report_free(struct ingest_report *r)
{
	if (!r)
		return;
	agent_gpu_list_free(r->gpus, r->ngpus);
	free(r->rejected);
	free(r->text);
	json_decref(r->json);
	free(r);
}

const char *ingest_report_id(const struct ingest_report *r)
{
	return r->report_id;
}

json_t *ingest_report_rejected(const struct ingest_report *r)
{
	return json_object_get(r->json, "rejected_fields");
}

static const struct leaf_rule cudnn_rules[] = { LR_VERSION("cudnn_version") };

/* "a, b, c" of an array of strings; NULL when out of memory. */
static char *paths_join(json_t *arr)
{
	size_t len = 1, i;
	json_t *v;
	char *out, *p;

	json_array_foreach(arr, i, v)
		len += json_string_length(v) + 2;
	if (!(p = out = malloc(len)))
		return NULL;
	json_array_foreach(arr, i, v)
		p += snprintf(p, len - (size_t)(p - out), "%s%s", i ? ", " : "", json_string_value(v));
	*p = '\0';
	return out;
}

/*
 * The report's text: as received, else dumped; with fields refused, the tree they were
 * nulled in is stored, and its "rejected_fields" lists them (past INGEST_REJECTED_MAX, a
 * last entry counts the rest: nothing is left out unsaid).
 */
static int rejected_note(struct ingest_report *r, struct check *c)
{
	if (c->rejected) {
		if (c->nrejected > json_array_size(c->rejected)) {
			char more[48];

			snprintf(more, sizeof(more), "and %zu more",
				 c->nrejected - json_array_size(c->rejected));
			json_array_append_new(c->rejected, json_string(more));
		}
		if (json_object_set(r->json, "rejected_fields", c->rejected) < 0 ||
		    !(r->rejected = paths_join(c->rejected)))
			return kiln_fail(KILN_ERROR, "out of memory");
		free(r->text);
		r->text = NULL;
	} else if (json_object_get(r->json, "rejected_fields")) {
		/* only kilnd says what it refused */
		json_object_del(r->json, "rejected_fields");
		free(r->text);
		r->text = NULL;
	}
	if (!r->text && !(r->text = json_dumps(r->json, JSON_COMPACT | JSON_REAL_PRECISION(10))))
		return kiln_fail(KILN_ERROR, "out of memory");
	return 0;
}

static int parse_report(struct ingest_report *r, struct check *c)
{
	json_t *j = r->json, *host, *nvidia, *gpus, *agent, *other;
	const char *s;
	size_t i;
	int rc;

	if ((rc = req_str(c, &s, j, NULL, "schema", 64)) < 0)
		return rc;
	if (!schema_valid(s))
		return bad(c, "schema", "is '%.64s'; this kilnd reads kiln.agent.report/1", s);
	if ((rc = req_str(c, &r->report_id, j, NULL, "report_id", 64)) < 0)
		return rc;
	if (!id_valid(r->report_id))
		return bad(c, "report_id", "must be 32 lowercase hex digits");
	if ((rc = opt_str(c, &s, j, NULL, "time", 64)) < 0)
		return rc;
	if (s && time_parse(&r->time, s) < 0)
		return bad(c, "time", "'%.64s' is not an RFC 3339 time", s);

	if ((rc = opt_container(c, &host, j, "host", 0, 0)) < 0)
		return rc;
	if (!host)
		return bad(c, "host", "is required");
	if ((rc = LEAVES(c, host, "host", host_rules)) < 0)
		return rc;
	if ((rc = opt_str(c, &r->hostname, host, "host", "hostname", 255)) < 0 ||
	    (rc = opt_str(c, &r->boot_id, host, "host", "boot_id", 64)) < 0 ||
	    (rc = opt_str(c, &r->machine_id, host, "host", "machine_id", 64)) < 0 ||
	    (rc = opt_str(c, &r->os, host, "host", "os", 256)) < 0 ||
	    (rc = opt_str(c, &r->kernel, host, "host", "kernel", 256)) < 0 ||
	    (rc = opt_str(c, &r->dmi_serial, host, "host", "dmi_serial", 128)) < 0 ||
	    (rc = opt_str(c, &r->dmi_uuid, host, "host", "dmi_uuid", 64)) < 0)
		return rc;

	if ((rc = opt_container(c, &nvidia, j, "nvidia", 0, 0)) < 0)
		return rc;
	if (!nvidia)
		return bad(c, "nvidia", "is required");
	if ((rc = req_str(c, &r->status, nvidia, "nvidia", "status", 16)) < 0)
		return rc;
	if (strcmp(r->status, "ok") != 0 && strcmp(r->status, "no_driver") != 0 &&
	    strcmp(r->status, "mismatch") != 0 && strcmp(r->status, "error") != 0)
		return bad(c, "nvidia.status", "must be \"ok\", \"no_driver\", \"mismatch\" or \"error\"");
	if ((rc = LEAVES(c, nvidia, "nvidia", nvidia_rules)) < 0)
		return rc;
	if ((rc = opt_str(c, &r->driver, nvidia, "nvidia", "driver_version", 64)) < 0 ||
	    (rc = opt_str(c, &r->module, nvidia, "nvidia", "kernel_module_version", 64)) < 0 ||
	    (rc = opt_str(c, &r->cuda, nvidia, "nvidia", "cuda_driver_version", 64)) < 0 ||
	    (rc = opt_str(c, &r->nvml, nvidia, "nvidia", "nvml_version", 64)) < 0 ||
	    (rc = opt_str(c, &r->nvidia_error, nvidia, "nvidia", "error", INGEST_STRING_MAX)) < 0)
		return rc;

	if ((rc = opt_container(c, &agent, j, "agent", 0, 0)) < 0 ||
	    (rc = LEAVES(c, agent, "agent", agent_rules)) < 0 ||
	    (agent && (rc = opt_str(c, &r->agent_version, agent, "agent", "version", 64)) < 0))
		return rc;

	if ((rc = opt_container(c, &gpus, j, "gpus", 1, INGEST_GPUS_MAX)) < 0)
		return rc;
	if (!gpus)
		return bad(c, "gpus", "is required (an empty array when there are none)");
	if (json_array_size(gpus) > 0) {
		r->gpus = calloc(json_array_size(gpus), sizeof(*r->gpus));
		if (!r->gpus)
			return kiln_fail(KILN_ERROR, "out of memory");
	}
	for (i = 0; i < json_array_size(gpus); i++) {
		r->ngpus = i + 1;
		if ((rc = gpu_parse(c, &r->gpus[i], json_array_get(gpus, i), i)) < 0)
			return rc;
		for (size_t k = 0; k < i; k++)
			if (r->gpus[k].index == r->gpus[i].index) {
				char f[INGEST_FIELD_MAX];

				snprintf(f, sizeof(f), "gpus[%zu].index", i);
				return bad(c, f, "%lld repeats gpus[%zu].index",
					   (long long)r->gpus[i].index, k);
			}
	}

	if ((rc = opt_container(c, &r->xids, j, "xid_events", 1, INGEST_XIDS_MAX)) < 0)
		return rc;
	for (i = 0; r->xids && i < json_array_size(r->xids); i++)
		if ((rc = xid_check(c, json_array_get(r->xids, i), i)) < 0)
			return rc;
	if ((rc = opt_container(c, &other, j, "cuda_toolkits", 1, INGEST_LIST_MAX)) < 0 ||
	    (rc = list_versions_check(c, other, "cuda_toolkits")) < 0 ||
	    (rc = opt_container(c, &other, j, "cudnn", 1, INGEST_LIST_MAX)) < 0 ||
	    (rc = list_versions_check(c, other, "cudnn")) < 0 ||
	    (rc = LEAVES(c, j, NULL, cudnn_rules)) < 0 ||
	    (rc = opt_container(c, &other, j, "disks", 1, INGEST_LIST_MAX)) < 0)
		return rc;
	/* the host's alarms and filesystems (host_rules.c) */
	if ((rc = opt_container(c, &other, j, "kernel_events", 1, INGEST_LIST_MAX)) < 0)
		return rc;
	for (i = 0; other && i < json_array_size(other); i++)
		if ((rc = kernel_event_check(c, json_array_get(other, i), i)) < 0)
			return rc;
	if ((rc = opt_container(c, &other, j, "filesystems", 1, INGEST_LIST_MAX)) < 0)
		return rc;
	for (i = 0; other && i < json_array_size(other); i++)
		if ((rc = filesystem_check(c, json_array_get(other, i), i)) < 0)
			return rc;
	return rejected_note(r, c);
}

static int is_ws(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

int ingest_report_parse_text(struct ingest_report **out, json_t *report, const char *text,
			     size_t textlen, char *field, size_t fieldlen)
{
	struct check c = { .field = field, .fieldlen = fieldlen };
	struct ingest_report *r;
	size_t len;
	int rc;

	if (field && fieldlen)
		field[0] = '\0';
	if (!json_is_object(report))
		return kiln_fail(KILN_EINVAL, "report: not a JSON object");
	r = calloc(1, sizeof(*r));
	if (!r)
		return kiln_fail(KILN_ERROR, "out of memory");
	r->json = json_incref(report);
	/* The text the report was parsed from is stored as it came (no dump): JSON
	 * whitespace around it trimmed; one with a NUL byte in it is dumped instead. */
	while (text && textlen > 0 && is_ws(text[0])) {
		text++;
		textlen--;
	}
	while (text && textlen > 0 && is_ws(text[textlen - 1]))
		textlen--;
	if (text && textlen > 0 && !memchr(text, '\0', textlen)) {
		if (!(r->text = strndup(text, textlen))) {
			ingest_report_free(r);
			return kiln_fail(KILN_ERROR, "out of memory");
		}
	} else {
		textlen = 0; /* dumped by parse_report */
	}
	/* a text too big is not parsed; a dump is measured after it is made */
	if (textlen <= INGEST_REPORT_MAX && (rc = parse_report(r, &c)) < 0)
		goto fail;
	len = strlen(r->text); /* as received, or the dump (with refused fields nulled) */
	if (len > INGEST_REPORT_MAX) {
		rc = kiln_fail(KILN_ETOOBIG, "report: %zu bytes exceeds the %d-byte limit", len,
			       INGEST_REPORT_MAX);
		goto fail;
	}
	json_decref(c.rejected);
	*out = r;
	return 0;
fail:
	json_decref(c.rejected);
	ingest_report_free(r);
	return rc;
}

int ingest_report_parse(struct ingest_report **out, json_t *report, char *field,
			size_t fieldlen)
{
	return ingest_report_parse_text(out, report, NULL, 0, field, fieldlen);
}
