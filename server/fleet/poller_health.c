/* SPDX-License-Identifier: Apache-2.0 */
/* The poller's health sweep: each owned node judged from its facts (health/), the verdict
 * stored, flagged nodes drained, and the automatic power cycle of a hung node where
 * maintenance, the guard, the hourly limit and the fleet-wide silence allow it. */
#include <stdarg.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "bmc/target.h"
#include "cluster/cluster.h"
#include "daemon/config.h"
#include "fleet/console.h"
#include "health/event_limit.h"
#include "fleet/guard.h"
#include "cluster/handoff.h"
#include "health/health_facts.h"
#include "kiln/buf.h"
#include "kiln/error.h"
#include "kiln/log.h"
#include "kiln/parse.h"
#include "metrics/counters.h"
#include "cluster/node_lock.h"
#include "fleet/poller_internal.h"
#include "agents/receive_gap.h"

static int maint_has(const struct maintenance *m, size_t n, int64_t node_id)
{
	for (size_t i = 0; i < n; i++)
		if (m[i].node_id == node_id)
			return 1;
	return 0;
}

/* Automatic power cycles of any actor "kilnd" within the last hour. */
static int remediations_last_hour(struct poller *p, int64_t now)
{
	struct audit_entry *rows = NULL;
	size_t n = 0;
	int count = 0;

	if (store_audit_list(p->st, &rows, &n, now - 3600, 0) < 0)
		return INT32_MAX;
	for (size_t i = 0; i < n; i++)
		if (rows[i].actor && strcmp(rows[i].actor, "kilnd") == 0 && rows[i].action &&
		    strcmp(rows[i].action, "power.cycle") == 0)
			count++;
	audit_entry_list_free(rows, n);
	return count;
}

static void remediation_limited(struct poller *p, struct slot *s)
{
	metrics_remediation_count(METRICS_REMEDIATION_LIMITED);
	poller_event_add(p, s, SEV_WARNING, "kilnd", "remediation", "remediation-limit",
		  "hung, but the limit of %d automatic power cycles an hour is reached",
		  p->opt.cfg.remediate_max_per_hour);
}

/* Once per hung episode, and never again for a node whose agent has not come back since
 * the last automatic cycle (a cycle that did not help is a person's problem). */
static void remediate(struct poller *p, struct slot *s, const struct health_result *r,
		      const char *reason, int64_t agent_last_seen, int64_t now)
{
	const struct poller_config *cfg = &p->opt.cfg;
	struct bmc_op op = { .kind = BMC_OP_POWER_ACTION, .action = BMC_ACT_CYCLE };
	json_t *detail;
	char *text;
	int64_t audit_id = 0, remediated_at = s->st.remediated_at;

	if (!cfg->remediate || !p->opt.engine || s->acting || s->node->bmc_protocol == BMC_NONE ||
	    s->st.hung_since <= 0 || now - s->st.hung_since < cfg->remediate_grace_s ||
	    s->st.remediated_at >= s->st.hung_since ||
	    (s->st.remediated_at > 0 && agent_last_seen < s->st.remediated_at))
		return;
	/* A part that needs a person (a failed fan, a GPU whose remap failed, a fault back
	 * after a reboot): a cycle would not mend it and may finish the part. */
	for (size_t i = 0; i < r->nreasons; i++) {
		char key[64];

		if (r->repairs[i] != HEALTH_REPAIR_INSPECTION)
			continue;
		snprintf(key, sizeof(key), "remediation-inspection:%lld",
			 (long long)s->st.hung_since);
		poller_event_add(p, s, SEV_WARNING, "kilnd", "remediation", key,
				 "hung, but no automatic power cycle: needs hardware inspection: %.300s",
				 r->reasons[i]);
		return;
	}
	if (remediations_last_hour(p, now) >= cfg->remediate_max_per_hour) {
		remediation_limited(p, s);
		return;
	}
	/* Work Slurm still runs there waits: the node only looks hung to kiln. */
	{
		char why[400], key[64];

		if (!guard_remediation_allowed(p->opt.guard, s->node->id, s->node->name, why,
					       sizeof(why))) {
			snprintf(key, sizeof(key), "remediation-slurm:%lld",
				 (long long)s->st.hung_since);
			poller_event_add(p, s, SEV_WARNING, "kilnd", "remediation", key,
				  "hung, but automatic power cycle waits: %.300s", why);
			return;
		}
	}
	/* The GPU work its agent reported lately waits too, as it does for an operator. */
	{
		char why[400], key[64];

		if (guard_remediation_work(p->opt.guard, p->st, s->node, why, sizeof(why))) {
			snprintf(key, sizeof(key), "remediation-work:%lld",
				 (long long)s->st.hung_since);
			poller_event_add(p, s, SEV_WARNING, "kilnd", "remediation", key,
					 "hung, but automatic power cycle waits: work running: %.300s",
					 why);
			return;
		}
	}
	/* An action through the API (or a reinstall job) holds the node: try at the next sweep. */
	if (node_lock_claim(s->node->id) != 1)
		return;
	detail = json_pack("{s:s, s:b, s:I}", "reason", reason, "automatic", 1, "hung_since",
			   (json_int_t)s->st.hung_since);
	text = detail ? json_dumps(detail, JSON_COMPACT) : NULL;
	json_decref(detail);
	/* The count again, its audit row, the claim and remediated_at in one write
	 * transaction: several kilnd on one database write one at a time (store_begin), so
	 * they keep one limit between them; and a kilnd killed before the result leaves what
	 * the next one (or the node's next owner) needs to send no second cycle. */
	if (store_begin(p->st) < 0)
		goto failed;
	if (remediations_last_hour(p, now) >= cfg->remediate_max_per_hour) {
		store_rollback(p->st);
		free(text);
		node_lock_release(s->node->id);
		remediation_limited(p, s);
		return;
	}
	if (store_audit_begin(p->st, &audit_id, "kilnd", "power.cycle", s->node->name, text) < 0 ||
	    handoff_row(p->st, p->opt.cluster, s->node->id, s->node->name, &op, audit_id, NULL,
			&s->claim_id) < 0)
		goto rollback;
	s->st.remediated_at = now;
	if (store_fleet_state_put(p->st, &s->st) < 0 || store_commit(p->st) < 0)
		goto rollback;
	free(text);
	metrics_remediation_count(METRICS_REMEDIATION_STARTED);
	poller_event_add(p, s, SEV_WARNING, "kilnd", "remediation", NULL,
		  "automatic power cycle: %.400s", reason);
	log_info("poller: %s: automatic power cycle (%s)", s->node->name, reason);
	s->acting = 1;
	if (poller_submit(p, s, &op, audit_id) < 0) {
		s->acting = 0;
		node_lock_release(s->node->id);
		store_audit_finish(p->st, audit_id, "failed: not submitted");
		if (s->claim_id > 0)
			store_node_call_delete(p->st, s->claim_id);
		s->claim_id = 0;
	}
	return;
rollback:
	store_rollback(p->st);
	s->claim_id = 0;
	s->st.remediated_at = remediated_at;
failed:
	log_warn("poller: %s: automatic power cycle not sent: %s", s->node->name,
		 kiln_error_last());
	free(text);
	node_lock_release(s->node->id);
}

static char *reasons_json(const struct health_result *r)
{
	json_t *arr = json_array();
	char *text;

	for (size_t i = 0; arr && i < r->nreasons; i++)
		json_array_append_new(arr, json_string(r->reasons[i]));
	text = arr ? json_dumps(arr, JSON_COMPACT) : NULL;
	json_decref(arr);
	return text;
}

/* A node's health as read from the store, before anything is written. */
struct health_read {
	int ok;
	struct health_result res;
	int64_t agent_last_seen;
	int faults_changed;         /* s->st.boot_faults was rewritten: store the state */
};

/* The active reinstall job of node_id in jobs[0..n) (sorted by node id), or NULL. */
static const struct job *job_find(const struct job *jobs, size_t n, int64_t node_id)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (jobs[mid].node_id == node_id)
			return &jobs[mid];
		if (jobs[mid].node_id < node_id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static int cmp_job_node(const void *a, const void *b)
{
	const struct job *x = a, *y = b;

	return x->node_id < y->node_id ? -1 : x->node_id > y->node_id;
}

/* The last meaningful line of the node's captured console, if capture kept any: from its
 * last few kilobytes only, read again at each sweep the node is hung. */
static int console_evidence(const struct slot *s, char *out, size_t outlen)
{
	struct kiln_buf text;
	int found = 0;

	if (console_log_recent(&text, s->node->name, CONSOLE_EVIDENCE_BYTES) < 0) {
		kiln_error_clear();
		return 0;
	}
	if (text.data)
		found = health_console_evidence(out, outlen, text.data, text.len);
	kiln_buf_free(&text);
	return found;
}

/* The read half: facts and rules, no writes (so no write lock is held meanwhile). */
static void health_read(struct poller *p, struct slot *s, struct health_read *out,
			int maintenance, const struct job *job, int64_t now)
{
	const struct poller_config *cfg = &p->opt.cfg;
	struct health_facts f;
	struct health_sources src;
	struct health_boot_faults faults;
	char console[HEALTH_REASON_LEN], *text;
	int changed;

	out->ok = 0;
	out->faults_changed = 0;
	if (health_facts_gather(&f, &src, p->st, s->node, &s->st, maintenance, now,
				&cfg->health) < 0) {
		log_warn("poller: %s: health: %s", s->node->name, kiln_error_last());
		health_sources_clear(&src);
		return;
	}
	if (!f.starved_now)
		s->st.starved_since = 0;
	else if (s->st.starved_since == 0)
		s->st.starved_since = now;
	f.starved_since = s->st.starved_since;
	/* A node being reinstalled is shown so, and its silence is not a hang. */
	f.reinstalling = job != NULL;
	f.reinstall_step = job ? (job->step ? job->step : job->state) : NULL;
	f.receive_gap = receive_gap_last(now);
	f.fleet_silence = p->fleet.active;
	f.fleet_silence_ended = p->fleet.ended_at;
	/* a fault seen before the node's last reboot and back now needs a person */
	health_boot_faults_load(&faults, s->st.boot_faults);
	changed = health_boot_faults_rotate(&faults, f.boot_id, now);
	if (faults.prev_kinds[0] && now - faults.prev_end <= cfg->health.fault_return_window_s)
		f.returned_kinds = faults.prev_kinds;
	health_evaluate(&out->res, &f, &cfg->health);
	if (out->res.hung && console_evidence(s, console, sizeof(console))) {
		/* the verdict again, with what the console last said beside it */
		f.console_line = console;
		health_evaluate(&out->res, &f, &cfg->health);
	}
	out->agent_last_seen = f.agent_last_seen;
	changed |= health_boot_faults_note(&faults, &out->res);
	if (changed && (text = health_boot_faults_dump(&faults))) {
		free(s->st.boot_faults);
		s->st.boot_faults = text;
		out->faults_changed = 1;
	}
	health_sources_clear(&src);
	out->ok = 1;
}

/* A node kiln flags hung, or with a GPU lost or a critical Xid, is drained in the scheduler
 * (on the guard's thread) once while that lasts, so that no new job lands there. */
static void drain_flagged(struct poller *p, struct slot *s, const struct health_result *r)
{
	const char *why = NULL;

	for (size_t i = 0; !why && i < r->nreasons; i++) {
		const char *t = r->reasons[i];

		if ((r->hung && strncmp(t, "hung:", 5) == 0) ||
		    (strncmp(t, "gpus: ", 6) == 0 && (strstr(t, " seen") || strstr(t, "not counted"))) ||
		    strncmp(t, "xid: critical", 13) == 0)
			why = t;
	}
	if (!why) {
		s->drain_asked = 0;
		return;
	}
	if (s->drain_asked)
		return;
	s->drain_asked = 1;
	guard_hung(p->opt.guard, s->node->id, s->node->name, why);
}

/* The write half: events and the stored state, inside the caller's transaction. */
static void health_apply(struct poller *p, struct slot *s, const struct health_read *hr,
			 int64_t now)
{
	const struct health_result *r = &hr->res;
	const char *old = s->st.health;
	int64_t hung_before = s->st.hung_since;
	char *reasons;
	int level_changed, same;

	if (!hr->ok)
		return;
	level_changed = strcmp(old, health_level_name(r->level)) != 0;

	if (r->hung && s->st.hung_since == 0) {
		char key[64];

		s->st.hung_since = now;
		snprintf(key, sizeof(key), "hung:%lld", (long long)now);
		poller_event_add(p, s, SEV_CRITICAL, "kilnd", "hung", key, "%s", r->reasons[0]);
	} else if (!r->hung) {
		s->st.hung_since = 0;
	}
	if (level_changed)
		poller_event_add(p, s, r->level == HEALTH_CRITICAL  ? SEV_CRITICAL
				: r->level == HEALTH_WARNING ? SEV_WARNING
							      : SEV_INFO,
			  "kilnd", "health", NULL, "health %s -> %s%s%s", old,
			  health_level_name(r->level), r->nreasons ? ": " : "",
			  r->nreasons ? r->reasons[0] : "");
	snprintf(s->st.health, sizeof(s->st.health), "%s", health_level_name(r->level));
	reasons = reasons_json(r);
	same = s->st.health_time > 0 && !level_changed && s->st.hung_since == hung_before &&
	       !hr->faults_changed &&
	       reasons && s->st.reasons && strcmp(reasons, s->st.reasons) == 0;
	if (reasons) {
		free(s->st.reasons);
		s->st.reasons = reasons;
	}
	/* The same outcome as the stored one is not written on every sweep (10,000 rows every
	 * 10 s, beside the agents' reports), only once a minute: health_time says when health
	 * was last found so, within that minute. */
	if (!same || now - s->st.health_time >= HEALTH_REWRITE_S) {
		s->st.health_time = now;
		poller_state_put(p, s);
	}
}

/* After the slice's transaction: a power cycle must not reach a BMC before its audit row and
 * remediated_at are stored (a kilnd killed in between would cycle the node again). */
static void health_remediate(struct poller *p, struct slot *s, const struct health_read *hr,
			     int64_t now)
{
	const struct health_result *r = &hr->res;

	if (!hr->ok)
		return;
	drain_flagged(p, s, r);
	if (!r->hung)
		return;
	for (size_t i = 0; i < r->nreasons; i++)
		if (strncmp(r->reasons[i], "hung:", 5) == 0)
			remediate(p, s, r, r->reasons[i], hr->agent_last_seen, now);
}

/* One node's part in the fleet-wide silence count (health_fleet_part). */
static int fleet_part(const struct poller *p, const struct slot *s, const struct agent_seen *a,
		      int maintenance, int reinstalling, int64_t gap, int64_t now)
{
	struct health_facts f;

	health_facts_init(&f, now);
	f.power = strcmp(s->st.power, "on") == 0 ? 1 : strcmp(s->st.power, "off") == 0 ? 2 : 0;
	if (f.power == 1)
		f.power_on_since = s->st.power_changed;
	f.maintenance = maintenance;
	f.reinstalling = reinstalling;
	f.agent_last_seen = a ? a->last_seen : 0;
	f.agent_interval_s = a && a->interval_s > 0 ? a->interval_s : 0;
	f.receive_gap = gap;
	return health_fleet_part(&f, &p->opt.cfg.health);
}

/*
 * The fleet-wide silence guard, before any node is judged: when many agents fell silent
 * together the fault is the network's or kilnd's, and one event says so instead of a hung
 * verdict (and a power cycle) per node.
 */
static void fleet_guard(struct poller *p, const struct maintenance *m, size_t nm,
			const struct job *jobs, size_t njobs, int64_t now)
{
	struct agent_seen *seen = NULL;
	size_t nseen = 0, k = 0, reporting = 0, silent = 0, returned = 0;
	int64_t gap = receive_gap_last(now);

	if (store_agent_seen_list(p->st, &seen, &nseen) < 0) {
		log_warn("poller: agents: %s", kiln_error_last());
		return;
	}
	/* slots and seen are both in node id order */
	for (size_t i = 0; i < p->nslots; i++) {
		struct slot *s = &p->slots[i];
		const struct agent_seen *a = NULL;
		int part;

		if (!s->owned)
			continue; /* counted by its owner */
		while (k < nseen && seen[k].node_id < s->node->id)
			k++;
		if (k < nseen && seen[k].node_id == s->node->id)
			a = &seen[k];
		part = fleet_part(p, s, a, maint_has(m, nm, s->node->id),
				  job_find(jobs, njobs, s->node->id) != NULL, gap, now);
		reporting += part == 1;
		silent += part == 2;
		if (p->fleet.active && s->fleet_silent && a && a->last_seen > p->fleet.since)
			returned++;
		if (!p->fleet.active)
			s->fleet_silent = part == 2;
	}
	free(seen);
	switch (health_fleet_silence_step(&p->fleet, reporting, silent, returned, now,
					  &p->opt.cfg.health)) {
	case HEALTH_FLEET_BEGAN:
		poller_event_add(p, NULL, SEV_CRITICAL, "kilnd", "fleet-silence", NULL,
			  "fleet-wide agent silence: network or kilnd problem (%zu of %zu agents "
			  "silent together; no node is judged hung meanwhile)",
			  p->fleet.silent, p->fleet.agents);
		log_warn("poller: fleet-wide agent silence: %zu of %zu agents", p->fleet.silent,
			 p->fleet.agents);
		break;
	case HEALTH_FLEET_ENDED:
		poller_event_add(p, NULL, SEV_INFO, "kilnd", "fleet-silence", NULL,
			  "fleet-wide agent silence over: %zu of %zu silent agents report again",
			  returned, p->fleet.silent);
		log_info("poller: fleet-wide agent silence over");
		for (size_t i = 0; i < p->nslots; i++)
			p->slots[i].fleet_silent = 0;
		break;
	default:
		break;
	}
}

void poller_health_sweep(struct poller *p, int64_t now)
{
	struct maintenance *m = NULL;
	struct job *jobs = NULL;
	size_t nm = 0, njobs = 0;

	if (store_maintenance_list(p->st, &m, &nm) < 0) {
		log_warn("poller: maintenance: %s", kiln_error_last());
		return;
	}
	if (store_job_list(p->st, &jobs, &njobs, 1, 0) < 0) {
		log_warn("poller: jobs: %s", kiln_error_last());
		maintenance_list_free(m, nm);
		return;
	}
	if (njobs > 1)
		qsort(jobs, njobs, sizeof(*jobs), cmp_job_node);
	fleet_guard(p, m, nm, jobs, njobs, now);
	/* In slices: read a slice's facts without a transaction, then write its outcome in one
	 * short transaction. Holding SQLite's write lock over the reads of thousands of nodes
	 * (seconds) starved every agent report into its busy timeout. */
	for (size_t first = 0; first < p->nslots; first += HEALTH_SLICE) {
		struct health_read hr[HEALTH_SLICE];
		int64_t ids[HEALTH_SLICE];
		size_t n = p->nslots - first < HEALTH_SLICE ? p->nslots - first : HEALTH_SLICE;

		for (size_t k = 0; k < n; k++) {
			hr[k].ok = 0; /* a node owned elsewhere is judged there */
			if (p->slots[first + k].owned)
				health_read(p, &p->slots[first + k], &hr[k],
					    maint_has(m, nm, p->slots[first + k].node->id),
					    job_find(jobs, njobs, p->slots[first + k].node->id),
					    now);
		}
		/* the slice's own rows (state, events): each node's lock, not the fleet's */
		for (size_t k = 0; k < n; k++)
			ids[k] = p->slots[first + k].node->id;
		if (store_begin_nodes(p->st, ids, n) < 0) {
			log_warn("poller: health: %s", kiln_error_last());
			break;
		}
		for (size_t k = 0; k < n; k++)
			health_apply(p, &p->slots[first + k], &hr[k], now);
		if (store_commit(p->st) < 0) {
			log_warn("poller: commit: %s", kiln_error_last());
			store_rollback(p->st);
		}
		for (size_t k = 0; k < n; k++)
			health_remediate(p, &p->slots[first + k], &hr[k], now);
		/* a node list read meanwhile (a live reading of a new node) may move the slots:
		 * the sweep goes on by position, and the next one judges whom this one missed */
		poller_work(p);
	}
	maintenance_list_free(m, nm);
	job_list_free(jobs, njobs);
	p->health_at = now;
}

/* Old BMC history goes in small transactions, so that no writer waits long. */
