/* SPDX-License-Identifier: Apache-2.0 */
/* The events an agent report raises against its node's stored state: Xids, the kernel's
 * alarms, GPUs gone or back, ECC counts that rose, driver/module and CUDA changes. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agents/ingest_internal.h"
#include "health/event_limit.h"
#include "health/health.h"
#include "kiln/error.h"

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

int ingest_emit(struct ingest_events *x, enum event_severity sev, const char *kind, const char *dedup,
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
uint64_t ingest_fnv1a(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (; s && *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ULL;
	}
	return h;
}

int ingest_xid_events(struct ingest_events *x, json_t *xids)
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
				 (unsigned long long)ingest_fnv1a(msg));
		if (json_is_integer(gi))
			snprintf(gpu, sizeof(gpu), " on GPU %" JSON_INTEGER_FORMAT "%s%s%s",
				 json_integer_value(gi), bus ? " (" : "", bus ? bus : "", bus ? ")" : "");
		else if (bus)
			snprintf(gpu, sizeof(gpu), " on %s", bus);
		rc = ingest_emit(x, xid_severity(xid), "xid", key, "Xid %lld%s: %.300s", (long long)xid, gpu,
			  msg && *msg ? msg : "(no message)");
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* The kernel's alarms (the agent's kernel_alarms.h kinds), named and graded as the health
 * rule names and grades them (host_rules.c). */
int ingest_kernel_events(struct ingest_events *x, json_t *alarms)
{
	size_t i;
	json_t *o;
	int rc;

	json_array_foreach(alarms, i, o) {
		const char *kind = json_string_value(json_object_get(o, "kind"));
		const char *msg = json_string_value(json_object_get(o, "message"));
		json_t *seq = json_object_get(o, "seq"), *tus = json_object_get(o, "time_us");
		enum health_level level;
		const char *name;
		char key[256];

		if (!kind || !msg)
			continue;
		name = health_kernel_alarm_name(kind, &level);
		/* one event per kernel log line: its sequence number within this boot (a report
		 * sent again, or read again by a restarted agent, is the same line) */
		if (json_is_integer(seq))
			snprintf(key, sizeof(key), "kernel:%s:seq%" JSON_INTEGER_FORMAT, x->boot,
				 json_integer_value(seq));
		else
			snprintf(key, sizeof(key), "kernel:%s:%" JSON_INTEGER_FORMAT ":%016llx", x->boot,
				 json_is_integer(tus) ? json_integer_value(tus) : -1,
				 (unsigned long long)ingest_fnv1a(msg));
		rc = ingest_emit(x, level == HEALTH_CRITICAL ? SEV_CRITICAL : SEV_WARNING, "kernel",
				 key, "%s: %.400s", name, msg);
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

int ingest_gpu_events(struct ingest_events *x, const struct ingest_report *r, const struct agent_gpu *prev,
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
			rc = ingest_emit(x, SEV_CRITICAL, "ecc", key,
				  "GPU %lld (%s): uncorrected ECC errors rose from %lld to %lld",
				  (long long)g->index, id, (long long)p->ecc_aggregate_uncorrected,
				  (long long)g->ecc_aggregate_uncorrected);
			if (rc < 0)
				return rc;
		} else if (p && g->ecc_volatile_uncorrected >= 0 && p->ecc_volatile_uncorrected >= 0 &&
			   g->ecc_volatile_uncorrected > p->ecc_volatile_uncorrected) {
			snprintf(key, sizeof(key), "ecc:%s:%s:volatile:%lld", id, x->boot,
				 (long long)g->ecc_volatile_uncorrected);
			rc = ingest_emit(x, SEV_CRITICAL, "ecc", key,
				  "GPU %lld (%s): uncorrected ECC errors since boot rose from %lld to %lld",
				  (long long)g->index, id, (long long)p->ecc_volatile_uncorrected,
				  (long long)g->ecc_volatile_uncorrected);
			if (rc < 0)
				return rc;
		}
		if (g->remapped_rows_failure == 1 && (!p || p->remapped_rows_failure != 1)) {
			snprintf(key, sizeof(key), "remap-failure:%s:%s", id, x->boot);
			rc = ingest_emit(x, SEV_CRITICAL, "remap",
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
void ingest_gpu_ecc_rises(struct agent_gpu *gpus, size_t n, const struct agent_gpu *prev,
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

int ingest_state_events(struct ingest_events *x, const struct ingest_report *r,
			const struct agent_state *p, const struct agent_gpu *prev, size_t nprev)
{
	char key[320], missing[256];
	const char *pdrv;
	int rc;

	if (p && str_differs(p->boot_id, r->boot_id)) {
		snprintf(key, sizeof(key), "reboot:%s", r->boot_id);
		if ((rc = ingest_emit(x, SEV_INFO, "reboot", key, "node rebooted (new boot id)")) < 0)
			return rc;
	}
	if (mismatched(r->status, r->driver, r->module) &&
	    !(p && mismatched(p->nvidia_status, p->driver_version, p->kernel_module_version))) {
		snprintf(key, sizeof(key), "mismatch:%s:%s:%s", x->boot, r->driver ? r->driver : "-",
			 r->module ? r->module : "-");
		rc = ingest_emit(x, SEV_WARNING, "driver_mismatch", key,
			  "NVIDIA driver library %s and loaded kernel module %s differ (reboot pending)",
			  r->driver ? r->driver : "(unknown)", r->module ? r->module : "(unknown)");
		if (rc < 0)
			return rc;
	} else if (p && strcmp(r->status, "ok") != 0 && strcmp(r->status, "mismatch") != 0 &&
		   str_differs(p->nvidia_status, r->status)) {
		rc = ingest_emit(x, SEV_WARNING, "nvidia_status", NULL, "NVIDIA status %s -> %s%s%.300s",
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
		rc = ingest_emit(x, SEV_INFO, "driver_changed", NULL, "NVIDIA driver %s -> %s", pdrv,
			  r->driver);
		if (rc < 0)
			return rc;
	}
	if (str_differs(p->cuda_driver_version, r->cuda)) {
		rc = ingest_emit(x, SEV_INFO, "cuda_changed", NULL, "CUDA driver version %s -> %s",
			  p->cuda_driver_version, r->cuda);
		if (rc < 0)
			return rc;
	}
	if (strcmp(r->status, "ok") == 0 && (int64_t)r->ngpus < p->gpu_count_max &&
	    (int64_t)r->ngpus != p->gpu_count) {
		missing_gpus(missing, sizeof(missing), r, prev, nprev);
		snprintf(key, sizeof(key), "gpus-lost:%s:%zu", x->boot, r->ngpus);
		rc = ingest_emit(x, SEV_CRITICAL, "gpu_lost", key, "%zu GPU%s reported, the node had %lld%s%s",
			  r->ngpus, r->ngpus == 1 ? "" : "s", (long long)p->gpu_count_max,
			  missing[0] ? "; missing: " : "", missing);
		if (rc < 0)
			return rc;
	}
	return 0;
}
