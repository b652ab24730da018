/* SPDX-License-Identifier: Apache-2.0 */
/* Agent reports into the store: de-duplication, latest state, history, identity, the
 * writer thread and its batches. Parsing: report_check.c; events: report_events.c. */
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
#include "health/health_cut.h"
#include "agents/identity.h"
#include "workload/work.h"
#include "agents/ingest_internal.h"
#include "metrics/counters.h"
#include "agents/receive_gap.h"
#include "reports/versions_audit.h"
#include "kiln/error.h"

#define PRUNE_BATCH 5000

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

static void cache_clear(struct prev_cache *c)
{
	for (size_t i = 0; i < c->cap; i++)
		if (c->slot[i].node_id)
			node_prev_clear(&c->slot[i]);
	free(c->slot);
	c->slot = NULL;
	c->cap = c->used = 0;
}

struct prev_cache *ingest_cache_new(void)
{
	return calloc(1, sizeof(struct prev_cache));
}

void ingest_cache_free(struct prev_cache *c)
{
	if (!c)
		return;
	cache_clear(c);
	free(c);
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
		cache_clear(c);
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
	    dup_or_null(&n->state.cuda_driver_version, r->cuda) < 0 ||
	    dup_or_null(&n->state.health_cut, cur->health_cut) < 0)
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
 * current (stored_id: the report id the node's stored state has, "" when none), and *next is
 * filled (when possible) with what this report leaves stored. */
static int store_new(struct store *st, int64_t node_id, const struct ingest_report *r,
		     struct prev_cache *cache, struct node_prev *next, const char *stored_id)
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
	struct ingest_events x;
	json_t *iv;

	/* The agent's clock may run ahead: a report never counts as later than its arrival. */
	rtime = r->time > 0 && r->time < now ? r->time : now;
	gpu_totals(r, &totals);
	x = (struct ingest_events){ st, node_id, rtime, r->boot_id ? r->boot_id : "-" };
	if ((hit = prev_find(cache, node_id)) && strcmp(stored_id, hit->report_id) != 0) {
		prev_drop(cache, node_id); /* written by someone else meanwhile */
		hit = NULL;
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
		ingest_gpu_ecc_rises(r->gpus, r->ngpus, pg, npg, rtime);
		if ((rc = ingest_state_events(&x, r, has_prev ? pstate : NULL, pg, npg)) < 0 ||
		    (rc = ingest_gpu_events(&x, r, pg, npg)) < 0 ||
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
		cur.health_cut = health_cut_make(r->json, has_prev ? pstate->health_cut : NULL, now);
		if ((rc = store_agent_state_put(st, &cur)) < 0)
			goto cleanup;
		if (next)
			node_prev_fill(next, r, &cur); /* none when out of memory: read next time */
	}
	/* Xids are events whenever they are reported, also in a late (spooled) report. */
	if (r->xids && (rc = ingest_xid_events(&x, r->xids)) < 0)
		goto cleanup;
	if ((rc = ingest_kernel_events(&x, json_object_get(r->json, "kernel_events"))) < 0)
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
	free(cur.health_cut);
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
	char stored_id[64];              /* the node's stored state's report id, "" when none */
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
	struct ingest_events x = { st, node_id, store_now(st), "-" };
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
			 (unsigned long long)ingest_fnv1a(d->message));
		rc = ingest_emit(&x, SEV_CRITICAL, "identity", key, "agent identity mismatch: %s", d->message);
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

/* Whether report r may be stored for its node, whose identity facts are f (identity.h): *d
 * says, and *after what to record once the report is stored. */
static void identity_check(struct identity_decision *d, struct identity_after *after,
			   const struct agent_identity *f, const struct ingest_report *r,
			   int64_t now)
{
	struct identity_report rep = { r->hostname, r->machine_id, r->dmi_serial, r->boot_id,
				       r->dmi_uuid };
	struct identity_bmc b;
	const char *how = NULL;

	memset(after, 0, sizeof(*after));
	snprintf(after->stored_id, sizeof(after->stored_id), "%s", f->report_id ? f->report_id : "");
	identity_decide(d, f, &rep);
	after->bound_by = d->bound_by;
	switch (d->verdict) {
	case IDENTITY_MISMATCH:
		break;
	case IDENTITY_ACCEPTED:
		after->settle = after->rebound = 1;
		/* a host the BMC does not vouch for, accepted by an admin, stays accepted while
		 * the BMC states the same */
		b = identity_bmc_of(f);
		if (identity_bmc_vouch(&how, NULL, 0, &b, r->dmi_uuid, r->dmi_serial) >= BMC_DIFFERS) {
			snprintf(after->bmc_serial_accepted, sizeof(after->bmc_serial_accepted), "%s",
				 identity_bmc_key(&b));
			after->bound_by = "an admin's acceptance (the BMC does not vouch)";
		}
		break;
	case IDENTITY_REINSTALL:
		after->settle = after->rebound = 1;
		after->reinstall_job = f->reinstall_running;
		break;
	default:
		/* the node's own agent reporting again ends a note that it reported elsewhere,
		 * and a refusal not repeated for a while (another host's token copy is gone, or
		 * the BMC's word changed); one that goes on stays, one event for it */
		after->settle = f->elsewhere_node != NULL;
		if (f->mismatch && now - f->mismatch_last > IDENTITY_REFUSAL_OVER_S)
			after->settle = after->rebound = 1;
		break;
	}
	/* what vouched is kept when it changes (a first report, a BMC read anew) */
	if ((after->bound_by ? 1 : 0) != (f->bound_by ? 1 : 0) ||
	    (after->bound_by && strcmp(after->bound_by, f->bound_by) != 0))
		after->settle = 1;
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
	struct agent_identity f = { 0 };
	struct identity_after after;
	struct identity_decision d;
	int fresh = 0, rc;

	if ((rc = store_savepoint(st)) < 0)
		return rc;
	/* the report's id and its node's identity in one round trip */
	rc = store_agent_report_claim_identity(st, &fresh, &f, r->report_id, node_id);
	/* A duplicate changes nothing and is answered so whoever sent it: an old report
	 * resent after an accepted change must not block the agent's spool. */
	if (rc == 0 && fresh)
		identity_check(&d, &after, &f, r, store_now(st));
	agent_identity_clear(&f);
	if (rc < 0)
		goto fail;
	if (fresh && d.verdict == IDENTITY_MISMATCH) {
		/* Nothing of the report is kept, not even its id (sent again after an admin
		 * accepted the change, it is taken): only the refusal. */
		store_rollback_to(st);
		return identity_refuse(st, node_id, r, &d, field, fieldlen);
	}
	if (fresh && (rc = store_new(st, node_id, r, cache, next, after.stored_id)) < 0)
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
enum metrics_ingest ingest_item_result(const struct ingest_item *it)
{
	if (it->rc == KILN_EIDENTITY)
		return METRICS_INGEST_IDENTITY;
	if (it->rc < 0)
		return METRICS_INGEST_FAILED;
	return it->duplicate ? METRICS_INGEST_DUPLICATE : METRICS_INGEST_STORED;
}

/* One try of batch_run: in one transaction of the batch's nodes (nodes_only), or of every
 * writer (store_begin), which tells which report a failure belongs to. *began: the
 * transaction began (a failure was then inside it). */
static int batch_try(struct store *st, struct prev_cache *cache, struct ingest_item **items,
		     size_t n, int nodes_only, int *began)
{
	int64_t ids[INGEST_BATCH_MAX];
	size_t i;
	int rc;

	for (i = 0; i < n; i++) {
		items[i]->rc = 0;
		items[i]->duplicate = 0;
		items[i]->error[0] = '\0';
		items[i]->field[0] = '\0';
	}
	for (i = 0; i < n; i++)
		ids[i] = items[i]->node_id;
	rc = nodes_only ? store_begin_nodes(st, ids, n) : store_begin(st);
	if ((*began = rc == 0) == 0)
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

/*
 * ingest_batch, with the writer's cache (or none): the entries of the committed reports
 * replace the nodes' old ones after the commit; a failed commit drops them. First in a
 * transaction of the batch's nodes alone (on PostgreSQL: no wait on other kilnd writing
 * other nodes, writes pipelined); when that fails as a whole (a pipelined write failed, and
 * with it the rest), once more in an ordinary one, where each report's failure is its own.
 * One that did not even begin (the store busy or gone) is not tried again.
 */
int ingest_batch_cached(struct store *st, struct prev_cache *cache, struct ingest_item **items,
			size_t n)
{
	int began = 0, rc;

	if (n > INGEST_BATCH_MAX)
		return kiln_fail(KILN_EINVAL, "ingest: a batch of %zu reports (at most %d)", n,
				 INGEST_BATCH_MAX);
	if ((rc = batch_try(st, cache, items, n, 1, &began)) == 0 || !began)
		return rc;
	kiln_error_clear();
	return batch_try(st, cache, items, n, 0, &began);
}

int ingest_batch(struct store *st, struct ingest_item **items, size_t n)
{
	return ingest_batch_cached(st, NULL, items, n);
}

static pthread_mutex_t retention_lock = PTHREAD_MUTEX_INITIALIZER;
static int64_t retention_s = INGEST_RETENTION_DEFAULT_S;

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
