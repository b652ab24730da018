/* SPDX-License-Identifier: Apache-2.0 */
/* What the three parts of ingest share: the parsed report (report_check.c), the events a
 * report raises (report_events.c), the writer that stores it (ingest.c). Not for callers
 * outside agents/: they use ingest.h. */
#ifndef KILND_INGEST_INTERNAL_H
#define KILND_INGEST_INTERNAL_H

#include <stdint.h>

#include "agents/ingest.h"
#include "metrics/counters.h"
#include "store/store.h"

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

/* --- ingest.c, for the writer (ingest_writer.c) --------------------------------------- */

/* What a writer remembers of the nodes it stored (their last state and GPU rows), so that
 * the next report of a node reads none of it back: one per writer thread. */
struct prev_cache;
struct prev_cache *ingest_cache_new(void); /* NULL when out of memory */
void ingest_cache_free(struct prev_cache *c); /* accepts NULL */
/* ingest_batch with a writer's cache (or NULL). */
int ingest_batch_cached(struct store *st, struct prev_cache *cache, struct ingest_item **items,
			size_t n);
/* An answered item as the metrics count it. */
enum metrics_ingest ingest_item_result(const struct ingest_item *it);

/* --- report_events.c ----------------------------------------------------------------- */

/* Where a report's events go: its node, its time (never in the future), its boot. */
struct ingest_events {
	struct store *st;
	int64_t node_id;
	int64_t time;      /* event time: the report's, never in the future */
	const char *boot;  /* boot id or "-" */
};

/* Adds one agent event (limited per node: health/event_limit.h). */
int ingest_emit(struct ingest_events *x, enum event_severity sev, const char *kind,
		const char *dedup, const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* A small stable hash for dedup keys of lines without a kernel sequence number. */
uint64_t ingest_fnv1a(const char *s);
/* One event per Xid line of the report's kernel log. */
int ingest_xid_events(struct ingest_events *x, json_t *xids);
/* One event of kind "kernel" per alarm line of the report's kernel log ("kernel_events":
 * soft lockups, hung tasks, machine checks, ...; NULL: none). */
int ingest_kernel_events(struct ingest_events *x, json_t *alarms);
/* Events of GPUs that changed since the stored rows prev[0..nprev). */
int ingest_gpu_events(struct ingest_events *x, const struct ingest_report *r,
		      const struct agent_gpu *prev, size_t nprev);
/* Marks the ECC counts that rose since the stored rows (see report_events.c). */
void ingest_gpu_ecc_rises(struct agent_gpu *gpus, size_t n, const struct agent_gpu *prev,
			  size_t nprev, int64_t rtime);
/* Events of the node's state (driver, CUDA, GPU count) against its stored state p. */
int ingest_state_events(struct ingest_events *x, const struct ingest_report *r,
			const struct agent_state *p, const struct agent_gpu *prev, size_t nprev);

#endif
