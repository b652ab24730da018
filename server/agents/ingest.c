/* Agent reports into the store: validation, de-duplication, latest state, history, events. */
#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "health/event_limit.h"
#include "agents/identity.h"
#include "workload/work.h"
#include "agents/ingest.h"
#include "metrics/counters.h"
#include "agents/receive_gap.h"
#include "reports/versions_audit.h"
#include "kiln/error.h"

#define PRUNE_INTERVAL_S 60
#define PRUNE_BATCH 5000
/* The writer checkpoints the WAL itself, between batches and after the answers went out:
 * once it holds this many frames and no report waits, or at this many whatever waits. */
#define WAL_CKPT_IDLE_FRAMES 1000
#define WAL_CKPT_BUSY_FRAMES 8000

struct ingest_report {
	json_t *json;
	char *text;                 /* compact JSON, as stored */
	const char *report_id;
	int64_t time;               /* the report's "time", 0 when absent */
	const char *boot_id, *hostname, *machine_id, *os, *kernel, *dmi_serial, *dmi_uuid;
	const char *agent_version;
	const char *status, *driver, *module, *cuda, *nvml;
	const char *nvidia_error;
	struct agent_gpu *gpus;
	size_t ngpus;
	json_t *xids;               /* borrowed; an array (maybe empty) or NULL */
	char *rejected;             /* the refused fields' paths, "a, b", or NULL */
};

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
	if ((rc = LEAVES(c, o, pre, gpu_rules)) < 0)
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

/* --- events -------------------------------------------------------------------------- */

/* Xids that mean a GPU needs attention now (fallen off the bus, double-bit ECC, ...). */
static enum event_severity xid_severity(int64_t xid)
{
	static const int critical[] = { 48, 61, 62, 63, 64, 74, 79, 92, 94, 95, 119, 120, 140 };

	for (size_t i = 0; i < sizeof(critical) / sizeof(critical[0]); i++)
		if (critical[i] == xid)
			return SEV_CRITICAL;
	return SEV_WARNING;
}

struct ctx {
	struct store *st;
	int64_t node_id;
	int64_t time;      /* event time: the report's, never in the future */
	const char *boot;  /* boot id or "-" */
};

static int emit(struct ctx *x, enum event_severity sev, const char *kind, const char *dedup,
		const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static int emit(struct ctx *x, enum event_severity sev, const char *kind, const char *dedup,
		const char *fmt, ...)
{
	char msg[512];
	struct event ev = { 0 };
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ev.time = x->time;
	ev.node_id = x->node_id;
	ev.severity = sev;
	ev.source = "agent";
	ev.kind = (char *)kind;
	ev.message = msg;
	ev.dedup_key = (char *)dedup;
	return event_add_limited(x->st, &ev, NULL);
}

/* A small stable hash for dedup keys of lines without a kernel sequence number. */
static uint64_t fnv1a(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (; s && *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ULL;
	}
	return h;
}

static int xid_events(struct ctx *x, json_t *xids)
{
	size_t i;
	json_t *o;
	int rc;

	json_array_foreach(xids, i, o) {
		int64_t xid = json_integer_value(json_object_get(o, "xid"));
		const char *bus = json_string_value(json_object_get(o, "pci_bus_id"));
		const char *msg = json_string_value(json_object_get(o, "message"));
		const char *src = json_string_value(json_object_get(o, "source"));
		json_t *seq = json_object_get(o, "seq"), *tus = json_object_get(o, "time_us");
		json_t *gi = json_object_get(o, "gpu_index");
		char key[256], gpu[96] = "";

		/* One event per kernel log line: the line's sequence number within this boot,
		 * else what the line says (the same line read again is the same Xid). */
		if (json_is_integer(seq))
			snprintf(key, sizeof(key), "xid:%s:%s:seq%" JSON_INTEGER_FORMAT, x->boot,
				 src ? src : "kmsg", json_integer_value(seq));
		else
			snprintf(key, sizeof(key), "xid:%s:%s:%s:%lld:%" JSON_INTEGER_FORMAT ":%016llx",
				 x->boot, src ? src : "kmsg", bus ? bus : "-", (long long)xid,
				 json_is_integer(tus) ? json_integer_value(tus) : -1,
				 (unsigned long long)fnv1a(msg));
		if (json_is_integer(gi))
			snprintf(gpu, sizeof(gpu), " on GPU %" JSON_INTEGER_FORMAT "%s%s%s",
				 json_integer_value(gi), bus ? " (" : "", bus ? bus : "", bus ? ")" : "");
		else if (bus)
			snprintf(gpu, sizeof(gpu), " on %s", bus);
		rc = emit(x, xid_severity(xid), "xid", key, "Xid %lld%s: %.300s", (long long)xid, gpu,
			  msg && *msg ? msg : "(no message)");
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int str_differs(const char *a, const char *b)
{
	return a && b && strcmp(a, b) != 0;
}

/* The previous GPU that is the same device as g: by UUID, else bus id, else index. */
static const struct agent_gpu *gpu_match(const struct agent_gpu *g, const struct agent_gpu *prev,
					 size_t nprev)
{
	for (size_t i = 0; i < nprev; i++) {
		if (g->uuid && prev[i].uuid) {
			if (strcmp(g->uuid, prev[i].uuid) == 0)
				return &prev[i];
		} else if (g->pci_bus_id && prev[i].pci_bus_id) {
			if (strcmp(g->pci_bus_id, prev[i].pci_bus_id) == 0)
				return &prev[i];
		} else if (g->index == prev[i].index) {
			return &prev[i];
		}
	}
	return NULL;
}

static void gpu_id(char *buf, size_t len, const struct agent_gpu *g)
{
	if (g->uuid)
		snprintf(buf, len, "%s", g->uuid);
	else if (g->pci_bus_id)
		snprintf(buf, len, "%s", g->pci_bus_id);
	else
		snprintf(buf, len, "index%lld", (long long)g->index);
}

static int gpu_events(struct ctx *x, const struct ingest_report *r, const struct agent_gpu *prev,
		      size_t nprev)
{
	char id[160], key[320];
	int rc;

	for (size_t i = 0; i < r->ngpus; i++) {
		const struct agent_gpu *g = &r->gpus[i], *p = gpu_match(g, prev, nprev);

		gpu_id(id, sizeof(id), g);
		if (p && g->ecc_aggregate_uncorrected >= 0 && p->ecc_aggregate_uncorrected >= 0 &&
		    g->ecc_aggregate_uncorrected > p->ecc_aggregate_uncorrected) {
			snprintf(key, sizeof(key), "ecc:%s:aggregate:%lld", id,
				 (long long)g->ecc_aggregate_uncorrected);
			rc = emit(x, SEV_CRITICAL, "ecc", key,
				  "GPU %lld (%s): uncorrected ECC errors rose from %lld to %lld",
				  (long long)g->index, id, (long long)p->ecc_aggregate_uncorrected,
				  (long long)g->ecc_aggregate_uncorrected);
			if (rc < 0)
				return rc;
		} else if (p && g->ecc_volatile_uncorrected >= 0 && p->ecc_volatile_uncorrected >= 0 &&
			   g->ecc_volatile_uncorrected > p->ecc_volatile_uncorrected) {
			snprintf(key, sizeof(key), "ecc:%s:%s:volatile:%lld", id, x->boot,
				 (long long)g->ecc_volatile_uncorrected);
			rc = emit(x, SEV_CRITICAL, "ecc", key,
				  "GPU %lld (%s): uncorrected ECC errors since boot rose from %lld to %lld",
				  (long long)g->index, id, (long long)p->ecc_volatile_uncorrected,
				  (long long)g->ecc_volatile_uncorrected);
			if (rc < 0)
				return rc;
		}
		if (g->remapped_rows_failure == 1 && (!p || p->remapped_rows_failure != 1)) {
			snprintf(key, sizeof(key), "remap-failure:%s:%s", id, x->boot);
			rc = emit(x, SEV_CRITICAL, "remap",
				  key, "GPU %lld (%s): row remapping failed; the GPU needs service",
				  (long long)g->index, id);
			if (rc < 0)
				return rc;
		}
	}
	return 0;
}

/* Whether g's uncorrected ECC count (aggregate or since boot) is above its stored row p's. */
static int ecc_rose(const struct agent_gpu *g, const struct agent_gpu *p)
{
	return (g->ecc_aggregate_uncorrected >= 0 && p->ecc_aggregate_uncorrected >= 0 &&
		g->ecc_aggregate_uncorrected > p->ecc_aggregate_uncorrected) ||
	       (g->ecc_volatile_uncorrected >= 0 && p->ecc_volatile_uncorrected >= 0 &&
		g->ecc_volatile_uncorrected > p->ecc_volatile_uncorrected);
}

/* Sets each reported GPU's ecc_rose_at: the report's time when its uncorrected ECC count
 * rose since its stored row, else the row's (a GPU first seen has none: counts in its first
 * report are judged by their values, not as a rise). */
static void gpu_ecc_rises(struct agent_gpu *gpus, size_t n, const struct agent_gpu *prev,
			  size_t nprev, int64_t rtime)
{
	for (size_t i = 0; i < n; i++) {
		const struct agent_gpu *p = gpu_match(&gpus[i], prev, nprev);

		gpus[i].ecc_rose_at = !p ? 0 : ecc_rose(&gpus[i], p) ? rtime : p->ecc_rose_at;
	}
}

/* The GPUs of prev that the report lacks, as "3 (GPU-uuid), 5 (...)" into buf. */
static void missing_gpus(char *buf, size_t len, const struct ingest_report *r,
			 const struct agent_gpu *prev, size_t nprev)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < nprev && used + 1 < len; i++) {
		char id[160];
		int n;

		if (gpu_match(&prev[i], r->gpus, r->ngpus))
			continue;
		gpu_id(id, sizeof(id), &prev[i]);
		n = snprintf(buf + used, len - used, "%s%lld (%s)", used ? ", " : "",
			     (long long)prev[i].index, id);
		if (n < 0)
			break;
		used += (size_t)n;
	}
	if (used >= len)
		buf[len - 1] = '\0';
}

static int mismatched(const char *status, const char *driver, const char *module)
{
	return (status && strcmp(status, "mismatch") == 0) || str_differs(driver, module);
}

static int state_events(struct ctx *x, const struct ingest_report *r,
			const struct agent_state *p, const struct agent_gpu *prev, size_t nprev)
{
	char key[320], missing[256];
	const char *pdrv;
	int rc;

	if (p && str_differs(p->boot_id, r->boot_id)) {
		snprintf(key, sizeof(key), "reboot:%s", r->boot_id);
		if ((rc = emit(x, SEV_INFO, "reboot", key, "node rebooted (new boot id)")) < 0)
			return rc;
	}
	if (mismatched(r->status, r->driver, r->module) &&
	    !(p && mismatched(p->nvidia_status, p->driver_version, p->kernel_module_version))) {
		snprintf(key, sizeof(key), "mismatch:%s:%s:%s", x->boot, r->driver ? r->driver : "-",
			 r->module ? r->module : "-");
		rc = emit(x, SEV_WARNING, "driver_mismatch", key,
			  "NVIDIA driver library %s and loaded kernel module %s differ (reboot pending)",
			  r->driver ? r->driver : "(unknown)", r->module ? r->module : "(unknown)");
		if (rc < 0)
			return rc;
	} else if (p && strcmp(r->status, "ok") != 0 && strcmp(r->status, "mismatch") != 0 &&
		   str_differs(p->nvidia_status, r->status)) {
		rc = emit(x, SEV_WARNING, "nvidia_status", NULL, "NVIDIA status %s -> %s%s%.300s",
			  p->nvidia_status, r->status, r->nvidia_error ? ": " : "",
			  r->nvidia_error ? r->nvidia_error : "");
		if (rc < 0)
			return rc;
	}
	if (!p)
		return 0;
	/* After a mismatch NVML gives no driver version: compare with the module's then. */
	pdrv = p->driver_version ? p->driver_version : p->kernel_module_version;
	if (r->driver && str_differs(pdrv, r->driver)) {
		rc = emit(x, SEV_INFO, "driver_changed", NULL, "NVIDIA driver %s -> %s", pdrv,
			  r->driver);
		if (rc < 0)
			return rc;
	}
	if (str_differs(p->cuda_driver_version, r->cuda)) {
		rc = emit(x, SEV_INFO, "cuda_changed", NULL, "CUDA driver version %s -> %s",
			  p->cuda_driver_version, r->cuda);
		if (rc < 0)
			return rc;
	}
	if (strcmp(r->status, "ok") == 0 && (int64_t)r->ngpus < p->gpu_count_max &&
	    (int64_t)r->ngpus != p->gpu_count) {
		missing_gpus(missing, sizeof(missing), r, prev, nprev);
		snprintf(key, sizeof(key), "gpus-lost:%s:%zu", x->boot, r->ngpus);
		rc = emit(x, SEV_CRITICAL, "gpu_lost", key, "%zu GPU%s reported, the node had %lld%s%s",
			  r->ngpus, r->ngpus == 1 ? "" : "s", (long long)p->gpu_count_max,
			  missing[0] ? "; missing: " : "", missing);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* --- storing ------------------------------------------------------------------------- */

/* A real as jansson dumps it with JSON_REAL_PRECISION(6) ("41.0", "612.345", "1e20"), or
 * null when unknown. */
static size_t real_put(char *buf, size_t len, double v)
{
	char tmp[40], *e;
	int n;

	if (isnan(v) || isinf(v))
		return (size_t)snprintf(buf, len, "null");
	n = snprintf(tmp, sizeof(tmp), "%.6g", v);
	if (n < 0 || (size_t)n >= sizeof(tmp))
		return (size_t)snprintf(buf, len, "null");
	if ((e = strchr(tmp, 'e'))) {
		/* "1e+20" -> "1e20", "1e-05" -> "1e-5" */
		char *d = e + 1, *q;

		if (*d == '+')
			memmove(d, d + 1, strlen(d));
		q = *d == '-' ? d + 1 : d;
		while (q[0] == '0' && q[1])
			memmove(q, q + 1, strlen(q));
	} else if (!strchr(tmp, '.')) {
		snprintf(tmp + n, sizeof(tmp) - (size_t)n, ".0");
	}
	return (size_t)snprintf(buf, len, "%s", tmp);
}

/* The hottest GPU, the GPUs' power draw summed and their utilisation averaged (NAN when
 * no GPU tells). */
struct gpu_totals {
	double hottest_c, power_w, utilization_avg_pct;
};

static void gpu_totals(const struct ingest_report *r, struct gpu_totals *out)
{
	double hot = NAN, power = NAN, util = 0;
	size_t nutil = 0;

	for (size_t i = 0; i < r->ngpus; i++) {
		const struct agent_gpu *g = &r->gpus[i];

		if (!isnan(g->temperature_c) && (isnan(hot) || g->temperature_c > hot))
			hot = g->temperature_c;
		if (!isnan(g->power_draw_w))
			power = (isnan(power) ? 0 : power) + g->power_draw_w;
		if (!isnan(g->utilization_gpu_pct)) {
			util += g->utilization_gpu_pct;
			nutil++;
		}
	}
	out->hottest_c = hot;
	out->power_w = power;
	out->utilization_avg_pct = nutil ? util / (double)nutil : NAN;
}

/* The compact history row of a report; gpus_json (written directly, no JSON tree:
 * [[index, temperature_c, power_draw_w, util_pct], ...]) is set to a string the caller
 * frees. */
static void history_fill(struct agent_history_row *h, char **gpus_json,
			 const struct ingest_report *r, const struct gpu_totals *t)
{
	int64_t ecc = -1;
	size_t cap = 3 + r->ngpus * 96, used = 0;
	char *arr = malloc(cap);

	if (arr)
		arr[used++] = '[';
	for (size_t i = 0; i < r->ngpus; i++) {
		const struct agent_gpu *g = &r->gpus[i];

		/* saturating: counts near INT64_MAX would overflow the sum */
		if (g->ecc_volatile_uncorrected >= 0) {
			if (ecc < 0)
				ecc = 0;
			ecc = g->ecc_volatile_uncorrected > INT64_MAX - ecc
				      ? INT64_MAX
				      : ecc + g->ecc_volatile_uncorrected;
		}
		if (arr) {
			/* at most 2 + 20 + 3 * (1 + 39) + 1 < 96 bytes */
			used += (size_t)snprintf(arr + used, cap - used, "%s[%lld,", i ? "," : "",
						 (long long)g->index);
			used += real_put(arr + used, cap - used, g->temperature_c);
			arr[used++] = ',';
			used += real_put(arr + used, cap - used, g->power_draw_w);
			arr[used++] = ',';
			used += real_put(arr + used, cap - used, g->utilization_gpu_pct);
			arr[used++] = ']';
		}
	}
	if (arr) {
		arr[used++] = ']';
		arr[used] = '\0';
	}
	h->gpu_count = (int64_t)r->ngpus;
	h->temperature_max_c = t->hottest_c;
	h->power_draw_total_w = t->power_w;
	h->utilization_avg_pct = t->utilization_avg_pct;
	h->ecc_uncorrected = ecc;
	h->xid_count = r->xids ? (int64_t)json_array_size(r->xids) : 0;
	*gpus_json = arr;
}

/* --- what the writer compares each node's next report with ----------------------------- */

/*
 * The writer is the only thread that writes agent state: it keeps each node's latest state
 * (the fields the events compare) and GPU rows in memory instead of reading them for every
 * report. An entry is filled after a commit and checked against the stored report_id before
 * use (a short read), so a state written elsewhere, or a node deleted and its id reused,
 * only costs a read.
 */
#define PREV_CACHE_MAX 131072 /* nodes kept at most; beyond, the cache starts over */

struct node_prev {
	int64_t node_id;          /* 0: an empty slot */
	int valid;                /* 0: a slot kept for node_id that holds nothing */
	char report_id[65];
	struct agent_state state; /* report_time, boot_id, nvidia_status, driver_version,
				   * kernel_module_version, cuda_driver_version, gpu_count,
				   * gpu_count_max */
	struct agent_gpu *gpus;   /* the GPU rows as stored */
	size_t ngpus;
};

struct prev_cache {
	struct node_prev *slot;
	size_t cap, used;         /* cap: a power of two, or 0 */
	struct node_prev next[INGEST_BATCH_MAX]; /* the batch's entries until its commit */
};

static void node_prev_clear(struct node_prev *e)
{
	agent_state_clear(&e->state);
	memset(&e->state, 0, sizeof(e->state));
	agent_gpu_list_free(e->gpus, e->ngpus);
	e->gpus = NULL;
	e->ngpus = 0;
	e->valid = 0;
}

/* Clears an entry outside the table (node_id 0: it holds nothing). */
static void node_prev_reset(struct node_prev *e)
{
	node_prev_clear(e);
	e->node_id = 0;
}

static void prev_cache_free(struct prev_cache *c)
{
	for (size_t i = 0; i < c->cap; i++)
		if (c->slot[i].node_id)
			node_prev_clear(&c->slot[i]);
	free(c->slot);
	c->slot = NULL;
	c->cap = c->used = 0;
}

static struct node_prev *prev_slot(struct prev_cache *c, int64_t node_id)
{
	size_t i = ((uint64_t)node_id * 0x9E3779B97F4A7C15ULL) >> 20 & (c->cap - 1);

	while (c->slot[i].node_id && c->slot[i].node_id != node_id)
		i = (i + 1) & (c->cap - 1);
	return &c->slot[i];
}

/* The node's entry when it holds something, else NULL. */
static struct node_prev *prev_find(struct prev_cache *c, int64_t node_id)
{
	struct node_prev *e;

	if (!c || !c->cap)
		return NULL;
	e = prev_slot(c, node_id);
	return e->node_id && e->valid ? e : NULL;
}

static void prev_drop(struct prev_cache *c, int64_t node_id)
{
	struct node_prev *e = prev_find(c, node_id);

	if (e)
		node_prev_clear(e);
}

/* Moves *n (filled, valid) into the cache; on any failure *n is cleared instead. */
static void prev_put(struct prev_cache *c, struct node_prev *n)
{
	struct node_prev *e;

	if (c->used + 1 > PREV_CACHE_MAX)
		prev_cache_free(c);
	if ((c->used + 1) * 2 > c->cap) {
		struct node_prev *old = c->slot;
		size_t old_cap = c->cap;

		c->cap = old_cap ? old_cap * 2 : 1024;
		if (!(c->slot = calloc(c->cap, sizeof(*c->slot)))) {
			c->slot = old;
			c->cap = old_cap;
			node_prev_reset(n);
			return;
		}
		for (size_t i = 0; i < old_cap; i++)
			if (old[i].node_id)
				*prev_slot(c, old[i].node_id) = old[i];
		free(old);
	}
	e = prev_slot(c, n->node_id);
	if (e->node_id)
		node_prev_clear(e);
	else
		c->used++;
	*e = *n;
	memset(n, 0, sizeof(*n));
}

static int dup_or_null(char **out, const char *s)
{
	*out = s ? strdup(s) : NULL;
	return s && !*out ? -1 : 0;
}

/* Fills n with what report r leaves stored as the node's state (cur) and GPU rows. */
static int node_prev_fill(struct node_prev *n, const struct ingest_report *r,
			  const struct agent_state *cur)
{
	n->node_id = cur->node_id;
	snprintf(n->report_id, sizeof(n->report_id), "%s", r->report_id);
	n->state.node_id = cur->node_id;
	n->state.report_time = cur->report_time;
	n->state.gpu_count = cur->gpu_count;
	n->state.gpu_count_max = cur->gpu_count_max;
	if (dup_or_null(&n->state.boot_id, r->boot_id) < 0 ||
	    dup_or_null(&n->state.nvidia_status, r->status) < 0 ||
	    dup_or_null(&n->state.driver_version, r->driver) < 0 ||
	    dup_or_null(&n->state.kernel_module_version, r->module) < 0 ||
	    dup_or_null(&n->state.cuda_driver_version, r->cuda) < 0)
		goto fail;
	if (r->ngpus && !(n->gpus = calloc(r->ngpus, sizeof(*n->gpus))))
		goto fail;
	for (size_t i = 0; i < r->ngpus; i++) {
		struct agent_gpu *g = &n->gpus[i];

		*g = r->gpus[i];
		g->uuid = g->name = g->serial = g->pci_bus_id = NULL;
		n->ngpus = i + 1;
		/* telemetry is not stored: as store_agent_gpus_get reads it back */
		g->memory_used_bytes = -1;
		g->temperature_c = g->power_draw_w = g->utilization_gpu_pct = NAN;
		if (dup_or_null(&g->uuid, r->gpus[i].uuid) < 0 ||
		    dup_or_null(&g->name, r->gpus[i].name) < 0 ||
		    dup_or_null(&g->serial, r->gpus[i].serial) < 0 ||
		    dup_or_null(&g->pci_bus_id, r->gpus[i].pci_bus_id) < 0)
			goto fail;
	}
	n->valid = 1;
	return 0;
fail:
	node_prev_reset(n);
	return -1;
}

/* Stores the new report r. With a cache: the previous state comes from it when it is
 * current, and *next is filled (when possible) with what this report leaves stored. */
static int store_new(struct store *st, int64_t node_id, const struct ingest_report *r,
		     struct prev_cache *cache, struct node_prev *next)
{
	struct agent_state prev = { 0 }, cur = { 0 };
	const struct agent_state *pstate;
	struct node_prev *hit = NULL;
	struct agent_gpu *pgpus = NULL;
	struct agent_history_row h = { 0 };
	struct gpu_totals totals;
	size_t npgpus = 0;
	char *gpus_json = NULL;
	int64_t now = store_now(st), rtime;
	int has_prev, rc;
	struct ctx x;
	json_t *iv;

	/* The agent's clock may run ahead: a report never counts as later than its arrival. */
	rtime = r->time > 0 && r->time < now ? r->time : now;
	gpu_totals(r, &totals);
	x = (struct ctx){ st, node_id, rtime, r->boot_id ? r->boot_id : "-" };
	if ((hit = prev_find(cache, node_id))) {
		char id[sizeof(hit->report_id)];

		rc = store_agent_state_report_id(st, id, sizeof(id), node_id);
		if (rc < 0 && rc != KILN_ENOTFOUND)
			goto cleanup;
		if (rc < 0 || strcmp(id, hit->report_id) != 0) {
			prev_drop(cache, node_id); /* written by someone else meanwhile */
			hit = NULL;
		}
		kiln_error_clear();
	}
	if (hit) {
		has_prev = 1;
		pstate = &hit->state;
	} else {
		rc = store_agent_state_get(st, &prev, node_id, 0);
		if (rc < 0 && rc != KILN_ENOTFOUND)
			goto cleanup;
		has_prev = rc == 0;
		pstate = &prev;
		kiln_error_clear();
	}
	if (!has_prev || rtime >= pstate->report_time) {
		/* The newest report so far: it becomes the state, and changes become events. */
		const struct agent_gpu *pg;
		size_t npg;

		if (!hit && has_prev && (rc = store_agent_gpus_get(st, &pgpus, &npgpus, node_id)) < 0)
			goto cleanup;
		pg = hit ? hit->gpus : pgpus;
		npg = hit ? hit->ngpus : npgpus;
		gpu_ecc_rises(r->gpus, r->ngpus, pg, npg, rtime);
		if ((rc = state_events(&x, r, has_prev ? pstate : NULL, pg, npg)) < 0 ||
		    (rc = gpu_events(&x, r, pg, npg)) < 0 ||
		    (rc = store_agent_gpus_update(st, node_id, r->gpus, r->ngpus, pg, npg, NULL)) < 0)
			goto cleanup;
		cur.node_id = node_id;
		cur.report_id = (char *)r->report_id;
		cur.last_seen = now;
		cur.report_time = rtime;
		cur.boot_id = (char *)r->boot_id;
		cur.hostname = (char *)r->hostname;
		cur.machine_id = (char *)r->machine_id;
		cur.os = (char *)r->os;
		cur.kernel = (char *)r->kernel;
		cur.dmi_serial = (char *)r->dmi_serial;
		cur.agent_version = (char *)r->agent_version;
		cur.nvidia_status = (char *)r->status;
		cur.driver_version = (char *)r->driver;
		cur.kernel_module_version = (char *)r->module;
		cur.cuda_driver_version = (char *)r->cuda;
		cur.nvml_version = (char *)r->nvml;
		cur.gpu_count = (int64_t)r->ngpus;
		cur.gpu_count_max = has_prev && pstate->gpu_count_max > cur.gpu_count
					    ? pstate->gpu_count_max
					    : cur.gpu_count;
		cur.report = r->text;
		cur.audit_facts = vaudit_facts_extract(r->json);
		cur.gpu_processes = work_procs_extract(r->json);
		cur.gpu_hottest_c = totals.hottest_c;
		cur.gpu_power_w = totals.power_w;
		cur.gpu_utilization_avg_pct = totals.utilization_avg_pct;
		/* What the health sweep reads besides the GPU rows, so that it parses no report. */
		cur.health_facts = 1;
		iv = json_object_get(r->json, "interval_s");
		cur.interval_s = json_is_integer(iv) && json_integer_value(iv) >= 0
					 ? (int64_t)json_integer_value(iv)
					 : -1;
		iv = json_object_get(json_object_get(r->json, "host"), "cpu_iowait_pct");
		cur.cpu_iowait_pct = json_is_number(iv) ? json_number_value(iv) : NAN;
		cur.rejected_fields = r->rejected;
		if ((rc = store_agent_state_put(st, &cur)) < 0)
			goto cleanup;
		if (next)
			node_prev_fill(next, r, &cur); /* none when out of memory: read next time */
	}
	/* Xids are events whenever they are reported, also in a late (spooled) report. */
	if (r->xids && (rc = xid_events(&x, r->xids)) < 0)
		goto cleanup;
	h.node_id = node_id;
	h.time = rtime;
	h.received_at = now;
	h.report_id = r->report_id;
	h.boot_id = r->boot_id;
	h.nvidia_status = r->status;
	h.driver_version = r->driver;
	h.cuda_driver_version = r->cuda;
	history_fill(&h, &gpus_json, r, &totals);
	h.gpus = gpus_json;
	rc = store_agent_history_insert(st, &h);
cleanup:
	free(gpus_json);
	free(cur.audit_facts);
	free(cur.gpu_processes);
	agent_gpu_list_free(pgpus, npgpus);
	agent_state_clear(&prev);
	return rc;
}

/* --- an agent is its node ----------------------------------------------------------- */

/* A refusal not repeated for this long, while the node's own host reports, is over. */
#define IDENTITY_REFUSAL_OVER_S 600

/* What an identity check leaves to do once the report is stored. */
struct identity_after {
	int settle;                      /* clear the note that its agent reports elsewhere */
	int rebound;                     /* and the refusal and acceptance: a new identity binds */
	int64_t reinstall_job;           /* the reinstall job that used its change, or 0 */
	char bmc_serial_accepted[160];   /* the BMC value an admin accepted past, or "" */
	const char *bound_by;            /* what of the BMC's vouched (static), or NULL */
};

/* The node whose stored agent identity a refused report carries (its agent reports with
 * node_id's token): by DMI serial, else machine id; 0 when none or several. */
static int64_t identity_owner(struct store *st, int64_t node_id, const struct ingest_report *r)
{
	int64_t id = 0;

	if (!r->machine_id && !identity_serial_useful(r->dmi_serial))
		return 0;
	if (store_agent_identity_owner(st, &id, node_id,
				       identity_serial_useful(r->dmi_serial) ? r->dmi_serial : NULL,
				       r->machine_id) < 0)
		kiln_error_clear();
	return id;
}

/* Records the refusal of report r for node_id in its own savepoint (one critical event per
 * distinct mismatch, not per report); returns KILN_EIDENTITY with d's message. */
static int identity_refuse(struct store *st, int64_t node_id, const struct ingest_report *r,
			   const struct identity_decision *d, char *field, size_t fieldlen)
{
	char key[64];
	struct ctx x = { st, node_id, store_now(st), "-" };
	int64_t owner;
	int fresh = 0, rc;

	if ((rc = store_savepoint(st)) < 0)
		return rc;
	if ((rc = store_agent_identity_refuse(st, &fresh, node_id, d->field, d->message)) < 0)
		goto fail;
	owner = identity_owner(st, node_id, r);
	if (owner > 0 && (rc = store_agent_identity_elsewhere(st, owner, node_id)) < 0)
		goto fail;
	if (fresh) {
		/* keyed by when this mismatch began: the same one again is the same event */
		snprintf(key, sizeof(key), "identity:%lld:%016llx", (long long)x.time,
			 (unsigned long long)fnv1a(d->message));
		rc = emit(&x, SEV_CRITICAL, "identity", key, "agent identity mismatch: %s", d->message);
		if (rc < 0)
			goto fail;
	}
	if ((rc = store_release(st)) < 0)
		goto fail;
	if (field && fieldlen)
		snprintf(field, fieldlen, "%s", d->field);
	return kiln_fail(KILN_EIDENTITY, "agent identity mismatch: %s", d->message);
fail:
	store_rollback_to(st);
	return rc;
}

/* Whether report r may be stored for node_id (identity.h): *d says, and *after what to
 * record once the report is stored. Reads only. */
static int identity_check(struct store *st, struct identity_decision *d,
			  struct identity_after *after, int64_t node_id,
			  const struct ingest_report *r)
{
	struct agent_identity f = { 0 };
	struct identity_report rep = { r->hostname, r->machine_id, r->dmi_serial, r->boot_id,
				       r->dmi_uuid };
	struct identity_bmc b;
	const char *how = NULL;
	int rc;

	memset(after, 0, sizeof(*after));
	if ((rc = store_agent_identity_get(st, &f, node_id)) < 0)
		return rc;
	identity_decide(d, &f, &rep);
	after->bound_by = d->bound_by;
	switch (d->verdict) {
	case IDENTITY_MISMATCH:
		break;
	case IDENTITY_ACCEPTED:
		after->settle = after->rebound = 1;
		/* a host the BMC does not vouch for, accepted by an admin, stays accepted while
		 * the BMC states the same */
		b = identity_bmc_of(&f);
		if (identity_bmc_vouch(&how, NULL, 0, &b, r->dmi_uuid, r->dmi_serial) >= BMC_DIFFERS) {
			snprintf(after->bmc_serial_accepted, sizeof(after->bmc_serial_accepted), "%s",
				 identity_bmc_key(&b));
			after->bound_by = "an admin's acceptance (the BMC does not vouch)";
		}
		break;
	case IDENTITY_REINSTALL:
		after->settle = after->rebound = 1;
		after->reinstall_job = f.reinstall_running;
		break;
	default:
		/* the node's own agent reporting again ends a note that it reported elsewhere,
		 * and a refusal not repeated for a while (another host's token copy is gone, or
		 * the BMC's word changed); one that goes on stays, one event for it */
		after->settle = f.elsewhere_node != NULL;
		if (f.mismatch && store_now(st) - f.mismatch_last > IDENTITY_REFUSAL_OVER_S)
			after->settle = after->rebound = 1;
		break;
	}
	/* what vouched is kept when it changes (a first report, a BMC read anew) */
	if ((after->bound_by ? 1 : 0) != (f.bound_by ? 1 : 0) ||
	    (after->bound_by && strcmp(after->bound_by, f.bound_by) != 0))
		after->settle = 1;
	agent_identity_clear(&f);
	return rc;
}

static int identity_settle(struct store *st, int64_t node_id, const struct identity_after *a)
{
	if (!a->settle)
		return 0;
	return store_agent_identity_settle(st, node_id, a->rebound, a->reinstall_job,
					   a->bmc_serial_accepted[0] ? a->bmc_serial_accepted : NULL,
					   a->bound_by);
}

static int report_store(struct store *st, int *out_duplicate, int64_t node_id,
			const struct ingest_report *r, struct prev_cache *cache,
			struct node_prev *next, char *field, size_t fieldlen)
{
	struct identity_after after;
	struct identity_decision d;
	int fresh = 0, rc;

	if ((rc = store_savepoint(st)) < 0)
		return rc;
	if ((rc = store_agent_report_claim(st, &fresh, r->report_id, node_id)) < 0)
		goto fail;
	/* A duplicate changes nothing and is answered so whoever sent it: an old report
	 * resent after an accepted change must not block the agent's spool. */
	if (fresh && (rc = identity_check(st, &d, &after, node_id, r)) < 0)
		goto fail;
	if (fresh && d.verdict == IDENTITY_MISMATCH) {
		/* Nothing of the report is kept, not even its id (sent again after an admin
		 * accepted the change, it is taken): only the refusal. */
		store_rollback_to(st);
		return identity_refuse(st, node_id, r, &d, field, fieldlen);
	}
	if (fresh && (rc = store_new(st, node_id, r, cache, next)) < 0)
		goto fail;
	if (fresh && (rc = identity_settle(st, node_id, &after)) < 0)
		goto fail;
	if ((rc = store_release(st)) < 0)
		goto fail;
	*out_duplicate = !fresh;
	return 0;
fail:
	store_rollback_to(st);
	if (next && next->node_id)
		node_prev_reset(next);
	return rc;
}

int ingest_report_store(struct store *st, int *out_duplicate, int64_t node_id,
			const struct ingest_report *r)
{
	return report_store(st, out_duplicate, node_id, r, NULL, NULL, NULL, 0);
}

/* --- batches ------------------------------------------------------------------------ */

static void item_fail(struct ingest_item *it, int rc)
{
	it->rc = rc;
	snprintf(it->error, sizeof(it->error), "%s",
		 kiln_error_last()[0] ? kiln_error_last() : kiln_error_name(rc));
}

/* An answered item as the metrics count it. */
static enum metrics_ingest item_result(const struct ingest_item *it)
{
	if (it->rc == KILN_EIDENTITY)
		return METRICS_INGEST_IDENTITY;
	if (it->rc < 0)
		return METRICS_INGEST_FAILED;
	return it->duplicate ? METRICS_INGEST_DUPLICATE : METRICS_INGEST_STORED;
}

/* ingest_batch, with the writer's cache (or none): the entries of the committed reports
 * replace the nodes' old ones after the commit; a failed commit drops them. */
static int batch_run(struct store *st, struct prev_cache *cache, struct ingest_item **items,
		     size_t n)
{
	size_t i;
	int rc;

	for (i = 0; i < n; i++) {
		items[i]->rc = 0;
		items[i]->duplicate = 0;
		items[i]->error[0] = '\0';
		items[i]->field[0] = '\0';
	}
	if ((rc = store_begin(st)) < 0)
		goto fail;
	for (i = 0; i < n; i++) {
		kiln_error_clear();
		rc = report_store(st, &items[i]->duplicate, items[i]->node_id, items[i]->report,
				  cache, cache ? &cache->next[i] : NULL, items[i]->field,
				  sizeof(items[i]->field));
		if (rc < 0)
			item_fail(items[i], rc);
		/* Recording the token's use never fails the report. */
		if (items[i]->token_touch > 0)
			store_agent_token_touch(st, items[i]->token_touch);
	}
	if ((rc = store_commit(st)) < 0) {
		store_rollback(st);
		goto fail;
	}
	for (i = 0; cache && i < n; i++)
		if (cache->next[i].node_id)
			prev_put(cache, &cache->next[i]);
	return 0;
fail:
	for (i = 0; i < n; i++) {
		items[i]->duplicate = 0;
		item_fail(items[i], rc);
		if (cache) {
			prev_drop(cache, items[i]->node_id);
			if (cache->next[i].node_id)
				node_prev_reset(&cache->next[i]);
		}
	}
	return rc;
}

int ingest_batch(struct store *st, struct ingest_item **items, size_t n)
{
	return batch_run(st, NULL, items, n);
}

static pthread_mutex_t retention_lock = PTHREAD_MUTEX_INITIALIZER;
static int64_t retention_s = INGEST_RETENTION_DEFAULT_S;
static int64_t last_prune; /* the writer thread's */

/* 1 when the history prune is due (and marks it done now). */
static int prune_due(struct store *st)
{
	if (store_now(st) - last_prune < PRUNE_INTERVAL_S)
		return 0;
	last_prune = store_now(st);
	return 1;
}

/* Housekeeping after a commit; its failures fail no report (they are committed). */
static void prune_run(struct store *st)
{
	ingest_prune(st, NULL);
	store_wal_checkpoint(st);
}

void ingest_retention_set(int64_t seconds)
{
	pthread_mutex_lock(&retention_lock);
	retention_s = seconds < 0 ? 0 : seconds;
	pthread_mutex_unlock(&retention_lock);
}

int64_t ingest_retention_get(void)
{
	int64_t v;

	pthread_mutex_lock(&retention_lock);
	v = retention_s;
	pthread_mutex_unlock(&retention_lock);
	return v;
}

int ingest_prune(struct store *st, int *out_deleted)
{
	int64_t keep = ingest_retention_get();
	int deleted = 0, n, rc;

	if (keep > 0) {
		do {
			n = 0;
			if ((rc = store_agent_history_prune(st, store_now(st) - keep, PRUNE_BATCH, &n)) < 0)
				return rc;
			deleted += n;
		} while (n >= PRUNE_BATCH);
	}
	if (out_deleted)
		*out_deleted = deleted;
	return 0;
}

/* --- the writer ---------------------------------------------------------------------- */

static struct {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	pthread_t thread;
	struct store *st;
	struct ingest_item *head, **tail;
	size_t queued, max;
	size_t bytes, bytes_max; /* item.bytes of the waiting items, and their cap */
	int running;   /* ingest_enqueue accepts items */
	int stopping;  /* the thread ends once the queue is empty */
	int wal_frames; /* the WAL's length after the writer's last commit */
	struct prev_cache prev; /* the writer thread's own */
} writer = { .lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER };

static void *writer_main(void *arg)
{
	struct ingest_item *batch[INGEST_BATCH_MAX];
	struct store *st = writer.st;

	(void)arg;
	pthread_mutex_lock(&writer.lock);
	for (;;) {
		size_t n = 0;

		while (!writer.head && !writer.stopping)
			pthread_cond_wait(&writer.wake, &writer.lock);
		if (!writer.head)
			break;
		while (writer.head && n < INGEST_BATCH_MAX) {
			batch[n++] = writer.head;
			writer.head = writer.head->next;
		}
		if (!writer.head)
			writer.tail = &writer.head;
		writer.queued -= n;
		for (size_t i = 0; i < n; i++)
			writer.bytes -= batch[i]->bytes;
		metrics_ingest_queue_set((int64_t)writer.queued);
		pthread_mutex_unlock(&writer.lock);
		/* A batch that waits long on the store, or fails, is kilnd not receiving: no
		 * agent's silence meanwhile is its own (receive_gap.h). */
		receive_gap_ingest_busy(time(NULL), 0);
		if (batch_run(st, &writer.prev, batch, n) < 0)
			receive_gap_mark(time(NULL));
		receive_gap_ingest_busy(0, time(NULL));
		/* Each answer goes out only now: the commit (or its failure) is final. */
		for (size_t i = 0; i < n; i++) {
			metrics_ingest_count(item_result(batch[i]));
			batch[i]->done_fn(batch[i], batch[i]->done_arg);
		}
		if (prune_due(st)) {
			prune_run(st);
			writer.wal_frames = 0;
		}
		if (writer.wal_frames >= WAL_CKPT_IDLE_FRAMES) {
			int idle;

			pthread_mutex_lock(&writer.lock);
			idle = !writer.head;
			pthread_mutex_unlock(&writer.lock);
			if (idle || writer.wal_frames >= WAL_CKPT_BUSY_FRAMES) {
				store_wal_checkpoint(st);
				writer.wal_frames = 0;
			}
		}
		pthread_mutex_lock(&writer.lock);
	}
	pthread_mutex_unlock(&writer.lock);
	return NULL;
}

int ingest_writer_start(const char *db_path, size_t queue_max)
{
	struct store *st = NULL;
	int rc;

	if ((rc = store_open(&st, db_path)) < 0)
		return rc;
	pthread_mutex_lock(&writer.lock);
	if (writer.running || writer.st) {
		pthread_mutex_unlock(&writer.lock);
		store_close(st);
		return kiln_fail(KILN_EBUSY, "ingest: the writer runs already");
	}
	writer.st = st;
	/* No checkpoint inside a commit of the writer: it runs one between batches. */
	store_wal_frames_watch(st, &writer.wal_frames);
	writer.head = NULL;
	writer.tail = &writer.head;
	writer.queued = 0;
	writer.max = queue_max ? queue_max : INGEST_QUEUE_MAX;
	writer.bytes = 0;
	writer.bytes_max = INGEST_QUEUE_BYTES_MAX;
	writer.stopping = 0;
	if (pthread_create(&writer.thread, NULL, writer_main, NULL) != 0) {
		writer.st = NULL;
		pthread_mutex_unlock(&writer.lock);
		store_close(st);
		return kiln_fail(KILN_ERROR, "ingest: cannot start the writer thread");
	}
	writer.running = 1;
	pthread_mutex_unlock(&writer.lock);
	return 0;
}

void ingest_writer_stop(void)
{
	pthread_mutex_lock(&writer.lock);
	if (!writer.running) {
		pthread_mutex_unlock(&writer.lock);
		return;
	}
	writer.running = 0;
	writer.stopping = 1;
	pthread_cond_signal(&writer.wake);
	pthread_mutex_unlock(&writer.lock);
	pthread_join(writer.thread, NULL);
	prev_cache_free(&writer.prev);
	store_close(writer.st);
	writer.st = NULL;
}

void ingest_writer_bytes_max_set(size_t bytes_max)
{
	pthread_mutex_lock(&writer.lock);
	writer.bytes_max = bytes_max ? bytes_max : INGEST_QUEUE_BYTES_MAX;
	pthread_mutex_unlock(&writer.lock);
}

int ingest_enqueue(struct ingest_item *item, void (*queued)(void *arg), ingest_done_fn done,
		   void *arg)
{
	size_t waiting, bytes;

	pthread_mutex_lock(&writer.lock);
	if (!writer.running) {
		pthread_mutex_unlock(&writer.lock);
		return kiln_fail(KILN_ENOTFOUND, "ingest: no writer runs");
	}
	if (writer.queued >= writer.max) {
		waiting = writer.queued;
		pthread_mutex_unlock(&writer.lock);
		metrics_ingest_count(METRICS_INGEST_QUEUE_FULL);
		receive_gap_mark(time(NULL));
		return kiln_fail(KILN_EBUSY, "ingest: %zu reports wait to be stored already; try again",
				 waiting);
	}
	if (writer.queued > 0 && (writer.bytes >= writer.bytes_max ||
				  item->bytes > writer.bytes_max - writer.bytes)) {
		bytes = writer.bytes;
		pthread_mutex_unlock(&writer.lock);
		metrics_ingest_count(METRICS_INGEST_QUEUE_FULL);
		receive_gap_mark(time(NULL));
		return kiln_fail(KILN_EBUSY, "ingest: reports of %zu bytes wait to be stored already; "
				 "try again", bytes);
	}
	item->next = NULL;
	item->done_fn = done;
	item->done_arg = arg;
	if (queued)
		queued(arg);
	*writer.tail = item;
	writer.tail = &item->next;
	writer.bytes += item->bytes;
	if (writer.queued++ == 0)
		pthread_cond_signal(&writer.wake);
	metrics_ingest_queue_set((int64_t)writer.queued);
	pthread_mutex_unlock(&writer.lock);
	return 0;
}
