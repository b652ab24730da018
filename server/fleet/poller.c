/* SPDX-License-Identifier: Apache-2.0 */
/* The poller thread: BMC readings on a jittered schedule under the engine's fan-out limit,
 * backoff and circuit breaker per BMC, results and events. The readings kept:
 * poller_readings.c; health and remediation: poller_health.c. */
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

void poller_config_defaults(struct poller_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->interval_s = 30;
	cfg->sensors_every = 4;
	cfg->sel_every = 4;
	cfg->unreachable_failures = 2;
	cfg->circuit_failures = 5;
	cfg->backoff_max_s = 600;
	cfg->probe_interval_s = 300;
	cfg->health_every_s = 10;
	cfg->inventory_every_s = 6 * 3600;
	cfg->history_retention_s = 30 * 86400;
	health_config_defaults(&cfg->health);
	cfg->remediate = 0;
	cfg->remediate_grace_s = 300;
	cfg->remediate_max_per_hour = 2;
}

void poller_config_from(struct poller_config *out, const struct kilnd_config *cfg)
{
	poller_config_defaults(out);
	out->interval_s = cfg->poller_interval;
	out->sensors_every = cfg->poller_sensors_every;
	out->sel_every = cfg->poller_sel_every;
	out->unreachable_failures = cfg->poller_unreachable_failures;
	out->circuit_failures = cfg->poller_circuit_failures;
	out->backoff_max_s = cfg->poller_backoff_max;
	out->probe_interval_s = cfg->poller_probe_interval;
	out->health_every_s = cfg->poller_health_every;
	out->inventory_every_s = cfg->poller_inventory_every;
	out->history_retention_s = cfg->poller_history_retention;
	out->health.agent_interval_s = cfg->health_agent_interval;
	out->health.hung_intervals = cfg->health_hung_intervals;
	out->health.power_max_age_s = cfg->health_power_fresh_intervals * cfg->poller_interval;
	out->health.xid_window_s = cfg->health_xid_window;
	out->health.ecc_window_s = cfg->health_ecc_window;
	out->health.gpu_temp_max_c = cfg->health_gpu_temp_max;
	out->health.inlet_temp_max_c = cfg->health_inlet_temp_max;
	out->health.starved_s = cfg->health_starved_for;
	out->health.starved_util_max_pct = cfg->health_starved_util_max;
	out->health.starved_iowait_min_pct = cfg->health_starved_iowait_min;
	out->health.fleet_silence_pct = cfg->health_fleet_silence_pct;
	out->health.fleet_silence_min = cfg->health_fleet_silence_min;
	out->health.bmc_log_window_s = cfg->health_bmc_log_window;
	out->health.boot_time_s = cfg->health_boot_time;
	out->health.fault_return_window_s = cfg->health_fault_return_window;
	out->health.kernel_window_s = cfg->health_kernel_window;
	out->health.disk_warn_pct = cfg->health_disk_warn_pct;
	out->health.disk_full_pct = cfg->health_disk_full_pct;
	out->health.throttle_busy_min_pct = cfg->health_throttle_busy_min;
	out->health.throttle_reports = cfg->health_throttle_reports;
	out->health.link_error_window_s = cfg->health_link_error_window;
	out->health.bmc_clock_skew_max_s = cfg->health_bmc_clock_skew_max;
	out->remediate = cfg->remediation_enabled;
	out->remediate_grace_s = cfg->remediation_grace;
	out->remediate_max_per_hour = cfg->remediation_max_per_hour;
}

/* --- pure pieces --------------------------------------------------------------------- */

int64_t poller_jitter_ms(const char *node, int64_t interval_ms)
{
	uint64_t h = 1469598103934665603ULL;

	if (interval_ms <= 0)
		return 0;
	for (const char *s = node; s && *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ULL;
	}
	return (int64_t)(h % (uint64_t)interval_ms);
}

int64_t poller_backoff_s(int failures, int64_t interval_s, int64_t max_s)
{
	int64_t d = interval_s > 0 ? interval_s : 1;

	for (int i = 1; i < failures && d < max_s; i++)
		d *= 2;
	return d > max_s ? max_s : d;
}

enum poller_transition poller_record_failure(struct fleet_state *s, int64_t now,
					     const struct poller_config *cfg)
{
	enum poller_transition t = POLLER_SAME;

	if (s->failures == 0)
		s->down_since = now;
	s->failures++;
	/* The BMC did not answer: its last word on power is not the node's state now. */
	snprintf(s->power, sizeof(s->power), "unknown");
	if (s->reachable && s->failures >= cfg->unreachable_failures) {
		s->reachable = 0;
		t = POLLER_DOWN;
	}
	if (s->failures >= cfg->circuit_failures) {
		s->circuit_open = 1;
		s->next_try = now + cfg->probe_interval_s;
	} else {
		s->next_try = now + poller_backoff_s(s->failures, cfg->interval_s, cfg->backoff_max_s);
	}
	return t;
}

enum poller_transition poller_record_success(struct fleet_state *s, int64_t now)
{
	enum poller_transition t = s->reachable ? POLLER_SAME : POLLER_UP;

	s->reachable = 1;
	s->failures = 0;
	s->down_since = 0;
	s->circuit_open = 0;
	s->next_try = 0;
	s->last_ok = now;
	return t;
}

enum poller_transition poller_record_busy(struct fleet_state *s, const char *detail)
{
	enum poller_transition t = s->reachable ? POLLER_SAME : POLLER_UP;
	char msg[600];

	s->reachable = 1;
	s->failures = 0;
	s->down_since = 0;
	s->circuit_open = 0;
	s->next_try = 0;
	snprintf(msg, sizeof(msg), "bmc busy: %s", detail && detail[0] ? detail : "try again later");
	free(s->power_error);
	s->power_error = strdup(msg);
	return t;
}

int poller_state_busy(const struct fleet_state *s)
{
	return s->reachable && s->power_error && strncmp(s->power_error, "bmc busy: ", 10) == 0;
}

int poller_may_poll(const struct fleet_state *s, int64_t now)
{
	return now >= s->next_try;
}

/* --- the thread ---------------------------------------------------------------------- */


static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void on_done(void *ud, const struct bmc_result *res)
{
	struct completion *c = ud;
	struct poller *p = c->p;

	c->rc = res->rc;
	if (!c->audit_id) /* a poll, not an automatic power cycle */
		metrics_poll_observe(c->proto, (double)(now_ms() - c->started_ms) / 1000.0, c->rc);
	snprintf(c->error, sizeof(c->error), "%s", res->error);
	c->data = res->data ? json_incref(res->data) : NULL;
	pthread_mutex_lock(&p->lock);
	c->next = p->done_head;
	p->done_head = c;
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

static struct slot *slot_find(struct poller *p, int64_t node_id)
{
	size_t lo = 0, hi = p->nslots;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->slots[mid].node->id == node_id)
			return &p->slots[mid];
		if (p->slots[mid].node->id < node_id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

int poller_event_add(struct poller *p, const struct slot *s, enum event_severity sev,
		     const char *source, const char *kind, const char *dedup, const char *fmt, ...)
{
	char msg[512];
	struct event ev = { 0 };
	int inserted = 0;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ev.node_id = s ? s->node->id : 0; /* no slot: the fleet's event */
	ev.severity = sev;
	ev.source = (char *)source;
	ev.kind = (char *)kind;
	ev.message = msg;
	ev.dedup_key = (char *)dedup;
	if (event_add_limited(p->st, &ev, &inserted) < 0) {
		log_warn("poller: %s: event: %s", s ? s->node->name : "fleet", kiln_error_last());
		return 0;
	}
	return inserted;
}

/* A new BMC log entry's event: when kiln saw it, and the BMC's own time (bmc_time). */
int poller_sel_event_add(struct poller *p, const struct slot *s, enum event_severity sev,
			 const char *kind, const char *dedup, int64_t bmc_time, const char *msg)
{
	struct event ev = { 0 };
	int inserted = 0;

	ev.node_id = s->node->id;
	ev.severity = sev;
	ev.source = (char *)"bmc";
	ev.kind = (char *)kind;
	ev.message = (char *)msg;
	ev.dedup_key = (char *)dedup;
	ev.bmc_time = bmc_time;
	if (store_event_insert(p->st, &ev, &inserted) < 0) {
		log_warn("poller: %s: event: %s", s->node->name, kiln_error_last());
		return 0;
	}
	return inserted;
}

/* Submits op for the slot's node; the password is decrypted for the call only. */
int poller_submit(struct poller *p, struct slot *s, const struct bmc_op *op, int64_t audit_id)
{
	const struct node *n = s->node;
	struct bmc_target t = { 0 };
	struct completion *c = NULL;
	char *password = NULL;
	int rc;

	if ((rc = bmc_target_from_node(&t, &password, n, p->key)) < 0)
		return rc;
	c = calloc(1, sizeof(*c));
	if (!c) {
		rc = kiln_fail(KILN_ERROR, "out of memory");
		goto cleanup;
	}
	c->p = p;
	c->node_id = n->id;
	c->kind = op->kind;
	c->audit_id = audit_id;
	c->started_ms = now_ms();
	c->proto = n->bmc_protocol == BMC_IPMI ? METRICS_IPMI : METRICS_REDFISH;
	pthread_mutex_lock(&p->lock);
	p->outstanding++;
	pthread_mutex_unlock(&p->lock);
	rc = bmc_submit(p->opt.engine, &t, op, on_done, c);
	if (rc < 0) {
		pthread_mutex_lock(&p->lock);
		p->outstanding--;
		pthread_mutex_unlock(&p->lock);
		free(c);
	}
cleanup:
	secret_free_string(password);
	return rc;
}

int poller_submit_kind(struct poller *p, struct slot *s, enum bmc_op_kind kind)
{
	struct bmc_op op = { .kind = kind, .background = 1 }; /* an operator's request goes first */

	if (kind == BMC_OP_SEL)
		op.sel_since = s->st.sel_cursor;
	return poller_submit(p, s, &op, 0);
}

void poller_state_put(struct poller *p, const struct slot *s)
{
	if (store_fleet_state_put(p->st, &s->st) < 0)
		log_warn("poller: %s: %s", s->node->name, kiln_error_last());
}

void poller_set_error(struct fleet_state *st, const char *msg)
{
	free(st->power_error);
	st->power_error = msg ? strdup(msg) : NULL;
}

static int is_status(const char *q)
{
	return q[0] >= '1' && q[0] <= '5' && q[1] >= '0' && q[1] <= '9' && q[2] >= '0' &&
	       q[2] <= '9' && (q[3] == ' ' || q[3] == '\0');
}

/* What a busy answer said, from its status on ("503 'RAC0218: ...' (Retry-After 60s)"), or
 * the whole message when it names no HTTP status (IPMI). */
static const char *busy_detail(const char *error)
{
	for (const char *q = error; q && (q = strstr(q, ": ")) != NULL; q += 2) {
		if (is_status(q + 2))
			return q + 2;
		if (strncmp(q + 2, "HTTP ", 5) == 0 && is_status(q + 7))
			return q + 7;
	}
	return error;
}

/* A BMC that answered "busy": reachable, its reading missing; one event per busy run. */
static void busy_record(struct poller *p, struct slot *s, struct completion *c)
{
	int was_busy = poller_state_busy(&s->st);

	if (poller_record_busy(&s->st, busy_detail(c->error)) == POLLER_UP)
		poller_event_add(p, s, SEV_INFO, "bmc", "bmc", NULL, "BMC reachable again");
	if (!was_busy)
		poller_event_add(p, s, SEV_WARNING, "bmc", "bmc", NULL, "BMC busy: %.400s",
			  busy_detail(c->error));
	s->busy = 0;
	poller_state_put(p, s);
}

static void poll_result(struct poller *p, struct slot *s, struct completion *c, int64_t now)
{
	enum poller_transition t;

	if (c->rc < 0 && c->kind == BMC_OP_INVENTORY && c->rc != KILN_EAUTH) {
		/* The BMC answered the power reading of this chain: an inventory it cannot give
		 * (an IPMI BMC without FRU data, a timeout on a big tree) is tried again later
		 * without counting against its reachability. */
		int64_t retry = p->opt.cfg.inventory_every_s < INVENTORY_RETRY_S
					? p->opt.cfg.inventory_every_s
					: INVENTORY_RETRY_S;

		log_debug("poller: %s: inventory: %s", s->node->name, c->error);
		s->inventory_due = now + retry;
		s->busy = 0;
		return;
	}
	if (c->rc == KILN_EBUSY) {
		/* 503 / IPMI "node busy": it answered. Not a failure toward the circuit (which
		 * would show it unreachable for intervals after it answers normally again). */
		busy_record(p, s, c);
		return;
	}
	if (c->rc < 0) {
		char msg[600];

		if (c->rc == KILN_EAUTH)
			snprintf(msg, sizeof(msg), "credentials rejected: %s", c->error);
		else if (c->rc == KILN_ECONFIG)
			/* it answered: the node's settings do not fit it (a BMC of several
			 * systems and no --bmc-system), which is no outage */
			snprintf(msg, sizeof(msg), HEALTH_BMC_CONFIG_ERROR "%s", c->error);
		else
			snprintf(msg, sizeof(msg), "%s", c->error[0] ? c->error : kiln_error_name(c->rc));
		poller_set_error(&s->st, msg);
		t = poller_record_failure(&s->st, now, &p->opt.cfg);
		if (c->rc == KILN_EAUTH) {
			/* BMCs lock an address out: not again until the credentials change. */
			s->st.circuit_open = 1;
			s->st.next_try = INT64_MAX / 2;
			s->cred_version = s->node->credentials_version;
		}
		if (c->rc == KILN_ETLS) {
			/* A pinned node showing another certificate: refused by the driver, and said
			 * once per run of failures (the key survives a restart with the state). */
			char key[64];

			snprintf(key, sizeof(key), "tls:%lld", (long long)s->st.down_since);
			poller_event_add(p, s, SEV_CRITICAL, "bmc", "tls", key, "%.480s", msg);
		}
		if (t == POLLER_DOWN)
			poller_event_add(p, s, SEV_WARNING, "bmc", "bmc", NULL, "%s: %.400s",
				  c->rc == KILN_ECONFIG ? "BMC configuration error" : "BMC unreachable",
				  msg);
		s->busy = 0;
		poller_state_put(p, s);
		return;
	}
	poller_reading_store(p, s, c->kind, c->data, now);
	poller_chain_next(p, s, c->kind, now);
}

static void action_result(struct poller *p, struct slot *s, struct completion *c)
{
	char outcome[600];
	const char *result = json_string_value(json_object_get(c->data, "result"));

	s->acting = 0;
	node_lock_release(s->node->id);
	if (s->claim_id > 0 && store_node_call_delete(p->st, s->claim_id) < 0)
		log_warn("poller: %s: %s", s->node->name, kiln_error_last());
	s->claim_id = 0;
	if (c->rc == 0)
		snprintf(outcome, sizeof(outcome), "ok");
	else
		snprintf(outcome, sizeof(outcome), "failed: %s", c->error);
	if (c->audit_id && store_audit_finish(p->st, c->audit_id, outcome) < 0)
		log_warn("poller: audit: %s", kiln_error_last());
	if (c->rc == 0)
		s->st.boot_started = time(NULL); /* the node boots now: hung only after its boot */
	metrics_remediation_count(c->rc == 0 ? METRICS_REMEDIATION_DONE
					     : METRICS_REMEDIATION_FAILED);
	if (c->rc == 0)
		poller_event_add(p, s, SEV_INFO, "kilnd", "remediation", NULL,
			  "automatic power cycle done%s%s", result ? ": " : "", result ? result : "");
	else
		poller_event_add(p, s, SEV_CRITICAL, "kilnd", "remediation", NULL,
			  "automatic power cycle failed: %.400s", c->error);
	log_info("poller: %s: automatic power cycle %s", s->node->name, outcome);
}

static int refresh(struct poller *p, int64_t now);

/* One completion, inside the caller's transaction. */
static void completion_handle(struct poller *p, struct completion *c, int64_t now)
{
	struct slot *s = slot_find(p, c->node_id);

	if (!s && c->live && refresh(p, now) == 0)
		s = slot_find(p, c->node_id); /* a node added since the last refresh */
	if (c->live) {
		if (s)
			poller_reading_store(p, s, c->kind, c->data, now);
	} else if (s && c->kind == BMC_OP_POWER_ACTION) {
		action_result(p, s, c);
	} else if (s && !s->owned) {
		s->busy = 0; /* given up meanwhile: its new owner reads and stores it */
	} else if (s) {
		poll_result(p, s, c, now);
	} else if (c->kind == BMC_OP_POWER_ACTION) {
		/* The node was deleted during its automatic cycle: the busy mark and the audit
		 * row still need their end. */
		char outcome[600];

		node_lock_release(c->node_id);
		snprintf(outcome, sizeof(outcome), "%s%s", c->rc == 0 ? "ok" : "failed: ",
			 c->rc == 0 ? "" : c->error);
		if (c->audit_id && store_audit_finish(p->st, c->audit_id, outcome) < 0)
			log_warn("poller: audit: %s", kiln_error_last());
	}
}

static void completion_free(struct poller *p, struct completion *c)
{
	json_decref(c->data);
	free(c);
	pthread_mutex_lock(&p->lock);
	p->outstanding--;
	pthread_mutex_unlock(&p->lock);
}

/*
 * Stores n completions in one transaction and frees them. Readings write their nodes' own
 * rows only (state, history, log, events): store_begin_nodes() with their node ids, so that
 * on PostgreSQL they take no fleet-wide lock and their writes are pipelined (issue 35). An
 * automatic power cycle's result (the audit row of an action, its node_calls claim) goes in
 * a store_begin() transaction of its own. When a reading's transaction fails, every
 * reading lost with it, the BMC state of each of its nodes is written again one by one
 * (a node deleted meanwhile fails alone): the next reads find the state the poller acts on.
 * n is at most COMPLETIONS_TX.
 */
static void completions_store(struct poller *p, struct completion **cs, size_t n, int actions,
			      int64_t now)
{
	int64_t ids[COMPLETIONS_TX];
	int began;

	for (size_t i = 0; i < n; i++)
		ids[i] = cs[i]->node_id;
	began = (actions ? store_begin(p->st) : store_begin_nodes(p->st, ids, n)) == 0;
	if (!began)
		log_warn("poller: %s", kiln_error_last());
	for (size_t i = 0; i < n; i++)
		completion_handle(p, cs[i], now);
	if (began && store_commit(p->st) < 0) {
		log_warn("poller: commit: %s", kiln_error_last());
		store_rollback(p->st);
		for (size_t i = 0; !actions && i < n; i++) {
			struct slot *s = slot_find(p, cs[i]->node_id);

			if (s)
				poller_state_put(p, s);
		}
	}
	for (size_t i = 0; i < n; i++)
		completion_free(p, cs[i]);
}

/* The completions that came back, COMPLETIONS_TX readings a transaction at most (each node a
 * lock on PostgreSQL); actions apart (completions_store). */
static void completions_process(struct poller *p, struct completion *list)
{
	struct completion *reads[COMPLETIONS_TX], *acts[COMPLETIONS_TX];
	int64_t now = time(NULL);

	while (list) {
		size_t nr = 0, na = 0;

		while (list && nr < COMPLETIONS_TX && na < COMPLETIONS_TX) {
			struct completion *c = list;

			list = c->next;
			if (c->kind == BMC_OP_POWER_ACTION && !c->live)
				acts[na++] = c;
			else
				reads[nr++] = c;
		}
		if (na)
			completions_store(p, acts, na, 1, now);
		if (nr)
			completions_store(p, reads, nr, 0, now);
	}
}

void poller_observe(struct poller *p, int64_t node_id, enum bmc_op_kind kind, const json_t *data)
{
	struct completion *c;
	int boot = 0;

	if (kind == BMC_OP_POWER_ACTION) {
		const char *result = json_string_value(json_object_get(data, "result"));
		const char *power = json_string_value(json_object_get(data, "power"));

		/* on, cycle or reset that went through: the node boots from now */
		boot = result && strcmp(result, "noop") != 0 && power && strcmp(power, "on") == 0;
		kind = BMC_OP_POWER_GET; /* its "power" is the state read back */
	}
	if (kind != BMC_OP_POWER_GET && kind != BMC_OP_SENSORS && kind != BMC_OP_SEL &&
	    kind != BMC_OP_INVENTORY)
		return;
	c = calloc(1, sizeof(*c));
	if (!c)
		return;
	c->p = p;
	c->node_id = node_id;
	c->kind = kind;
	c->live = 1;
	c->data = json_deep_copy(data);
	if (boot && c->data)
		json_object_set_new(c->data, "boot_began", json_true());
	pthread_mutex_lock(&p->lock);
	p->outstanding++;
	c->next = p->done_head;
	p->done_head = c;
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

static int cmp_node_id(const void *a, const void *b)
{
	const struct slot *x = a, *y = b;

	return x->node->id < y->node->id ? -1 : x->node->id > y->node->id;
}

/*
 * A slot's schedule and state as the store has them: at its first refresh, and again when
 * this instance takes the node over from another (which wrote them meanwhile). Keeps
 * s->node and s->owned; a chain in flight (busy, acting) stays marked.
 */
static void slot_load(struct poller *p, struct slot *s, int64_t base_ms)
{
	const struct node *n = s->node;
	int64_t inv = 0, interval_ms = p->opt.cfg.interval_s * 1000;

	fleet_state_clear(&s->st);
	if (store_fleet_state_get(p->st, &s->st, n->id) < 0)
		fleet_state_init(&s->st, n->id);
	s->known[0] = '\0';
	if (s->st.power_time > 0 &&
	    (strcmp(s->st.power, "on") == 0 || strcmp(s->st.power, "off") == 0))
		snprintf(s->known, sizeof(s->known), "%s", s->st.power);
	/* After a restart the stored inventory's age counts; none: at first contact. */
	s->inventory_due = 0;
	if (store_node_inventory_time(p->st, n->id, &inv) == 0 && inv > 0)
		s->inventory_due = inv + p->opt.cfg.inventory_every_s;
	s->due_ms = base_ms + poller_jitter_ms(n->name, interval_ms);
	s->cycle = 0;
	s->cred_version = 0;
	s->fleet_silent = 0;
	s->read_back = 0;
	s->log_reread = 0;
	s->drain_asked = 0;
	/* read before a restart: where the last kilnd left it */
	memset(&s->log, 0, sizeof(s->log));
	if (store_bmc_log_state_get(p->st, &s->log, n->id) < 0) {
		log_warn("poller: %s: BMC log state: %s", n->name, kiln_error_last());
		s->log.count = -1;
	}
	if (s->log.baselined == 0)
		s->st.sel_cursor = 0; /* history is taken from the whole log */
}

/* Marks the nodes this instance owns after the cluster's instance list changed; a node
 * taken over is read again from the store, one given up is left to its new owner. */
static void owners_update(struct poller *p)
{
	int64_t base = now_ms();
	size_t gained = 0, lost = 0, owned = 0;

	p->owners_gen = cluster_generation(p->opt.cluster);
	for (size_t i = 0; i < p->nslots; i++) {
		struct slot *s = &p->slots[i];
		int o = cluster_owns(p->opt.cluster, s->node);

		if (o && !s->owned) {
			slot_load(p, s, base);
			gained++;
		} else if (!o && s->owned) {
			lost++;
		}
		s->owned = o;
		owned += (size_t)o;
	}
	if (gained || lost)
		log_info("poller: %zu of %zu node(s) owned here (%zu taken over, %zu given up)",
			 owned, p->nslots, gained, lost);
}

/* Reads the node list again: new nodes get a slot (and their stored state), removed ones
 * lose it, the others keep their schedule with the node's current settings. */
static int refresh(struct poller *p, int64_t now)
{
	struct node **nodes = NULL;
	struct slot *slots = NULL;
	size_t count = 0;
	int64_t base = now_ms();
	int rc;

	rc = store_node_list(p->st, &nodes, &count);
	if (rc < 0)
		return rc;
	slots = calloc(count ? count : 1, sizeof(*slots));
	if (!slots) {
		node_list_free(nodes, count);
		return kiln_fail(KILN_ERROR, "out of memory");
	}
	for (size_t i = 0; i < count; i++) {
		struct slot *old = slot_find(p, nodes[i]->id), *s = &slots[i];

		if (old) {
			*s = *old; /* old->node is freed below with the old list */
			memset(&old->st, 0, sizeof(old->st));
			s->node = nodes[i];
		} else {
			s->node = nodes[i];
			s->owned = cluster_owns(p->opt.cluster, s->node);
			slot_load(p, s, base);
		}
		/* New credentials close a circuit opened by a rejection. */
		if (s->st.circuit_open && s->cred_version &&
		    s->cred_version != s->node->credentials_version) {
			s->st.next_try = now;
			s->cred_version = 0;
		}
		nodes[i] = NULL;
	}
	for (size_t i = 0; i < p->nslots; i++) {
		node_free(p->slots[i].node);
		fleet_state_clear(&p->slots[i].st);
	}
	free(p->slots);
	free(nodes);
	qsort(slots, count, sizeof(*slots), cmp_node_id);
	p->slots = slots;
	p->nslots = count;
	p->refreshed_at = now;
	owners_update(p);
	return 0;
}

static void poll_due(struct poller *p, int64_t now)
{
	int64_t ms = now_ms(), interval_ms = p->opt.cfg.interval_s * 1000;

	for (size_t i = 0; i < p->nslots; i++) {
		struct slot *s = &p->slots[i];

		if (!s->owned || s->node->bmc_protocol == BMC_NONE || s->busy || ms < s->due_ms)
			continue;
		while (s->due_ms <= ms)
			s->due_ms += interval_ms;
		if (!poller_may_poll(&s->st, now))
			continue;
		s->cycle++;
		s->busy = 1;
		if (poller_submit_kind(p, s, BMC_OP_POWER_GET) < 0) {
			s->busy = 0;
			log_warn("poller: %s: %s", s->node->name, kiln_error_last());
		}
	}
}

void poller_work(struct poller *p)
{
	struct completion *done;

	pthread_mutex_lock(&p->lock);
	done = p->done_head;
	p->done_head = NULL;
	pthread_mutex_unlock(&p->lock);
	if (done)
		completions_process(p, done);
	if (p->opt.engine && !p->stopping)
		poll_due(p, time(NULL));
}

static void history_prune(struct poller *p, int64_t now)
{
	int deleted = PRUNE_BATCH;

	p->pruned_at = now;
	if (p->opt.cfg.history_retention_s <= 0)
		return;
	if (store_bmc_log_prune(p->st, now - p->opt.cfg.history_retention_s) < 0)
		log_warn("poller: BMC log history: %s", kiln_error_last());
	for (int rounds = 0; deleted == PRUNE_BATCH && rounds < 100; rounds++)
		if (store_bmc_history_prune(p->st, now - p->opt.cfg.history_retention_s, PRUNE_BATCH,
					    &deleted) < 0) {
			log_warn("poller: history: %s", kiln_error_last());
			return;
		}
}

/* The summaries of the events nodes had held back (event_limit.h), once due. */
static void events_held_flush(struct poller *p, int64_t now)
{
	struct event *due = NULL;
	size_t n = 0;

	if (event_limit_due(&due, &n, now) < 0)
		log_warn("poller: held events: %s", kiln_error_last());
	for (size_t i = 0; i < n; i++)
		if (store_event_insert(p->st, &due[i], NULL) < 0)
			log_warn("poller: node id %lld: the summary of its held events: %s",
				 (long long)due[i].node_id, kiln_error_last());
	event_list_free(due, n);
}

static void *poller_main(void *arg)
{
	struct poller *p = arg;

	for (;;) {
		struct completion *done;
		struct timespec until;
		int64_t now = time(NULL), ms;

		pthread_mutex_lock(&p->lock);
		if (!p->done_head && !p->stopping) {
			ms = now_ms() + TICK_MS;
			until.tv_sec = ms / 1000;
			until.tv_nsec = (ms % 1000) * 1000000;
			pthread_cond_timedwait(&p->cond, &p->lock, &until);
		}
		done = p->done_head;
		p->done_head = NULL;
		if (p->stopping && !done && p->outstanding == 0) {
			pthread_mutex_unlock(&p->lock);
			break;
		}
		pthread_mutex_unlock(&p->lock);
		if (done)
			completions_process(p, done);
		if (p->stopping)
			continue; /* only drain what is in flight */
		now = time(NULL);
		if (now - p->refreshed_at >= REFRESH_S && refresh(p, now) < 0)
			log_warn("poller: nodes: %s", kiln_error_last());
		else if (p->opt.cluster && cluster_generation(p->opt.cluster) != p->owners_gen)
			owners_update(p);
		if (p->opt.engine)
			poll_due(p, now);
		if (now - p->health_at >= p->opt.cfg.health_every_s)
			poller_health_sweep(p, now);
		events_held_flush(p, now);
		if (now - p->pruned_at >= PRUNE_EVERY_S)
			history_prune(p, now);
	}
	return NULL;
}

int poller_start(struct poller **out, const struct poller_options *opt)
{
	struct poller *p = calloc(1, sizeof(*p));
	int rc;

	if (!p)
		return kiln_fail(KILN_ERROR, "out of memory");
	p->opt = *opt;
	p->opt.db_path = NULL;
	if (opt->key)
		p->key = opt->key;
	if (p->opt.cfg.interval_s <= 0)
		p->opt.cfg.interval_s = 30;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	rc = store_open(&p->st, opt->db_path);
	if (rc < 0)
		goto fail;
	if (pthread_create(&p->thread, NULL, poller_main, p) != 0) {
		rc = kiln_fail(KILN_ERROR, "poller: cannot start its thread");
		goto fail;
	}
	p->started = 1;
	*out = p;
	return 0;
fail:
	poller_stop(p);
	return rc;
}

void poller_stop(struct poller *p)
{
	if (!p)
		return;
	if (p->started) {
		pthread_mutex_lock(&p->lock);
		p->stopping = 1;
		pthread_cond_signal(&p->cond);
		pthread_mutex_unlock(&p->lock);
		pthread_join(p->thread, NULL);
	}
	for (size_t i = 0; i < p->nslots; i++) {
		node_free(p->slots[i].node);
		fleet_state_clear(&p->slots[i].st);
	}
	free(p->slots);
	store_close(p->st);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->cond);
	free(p);
}
