/* The poller thread: BMC readings on a jittered schedule under the engine's fan-out limit,
 * backoff and circuit breaker per BMC, events, health evaluation and automatic remediation. */
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
#include "fleet/poller.h"
#include "agents/receive_gap.h"

#define REFRESH_S 10        /* the node list is read again this often */
#define TICK_MS 250
#define HEALTH_SLICE 64     /* nodes per transaction of the health sweep */
#define HEALTH_REWRITE_S 60 /* an unchanged health outcome is written again after this */
#define INVENTORY_RETRY_S 600 /* a failed inventory is tried again after this at most */
#define PRUNE_EVERY_S 600   /* the BMC history is pruned this often */
#define PRUNE_BATCH 5000    /* rows per prune transaction */
#define POWER_OFF_WINDOW_S 600 /* a kiln action this recent explains a power-off seen */
#define CONSOLE_EVIDENCE_BYTES 8192 /* console bytes read for a hung node's evidence */

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

struct slot {
	struct node *node;          /* owned; refreshed */
	struct fleet_state st;
	int64_t due_ms;
	unsigned cycle;
	int busy;                   /* a poll chain is in flight */
	int acting;                 /* an automatic power cycle is in flight */
	int64_t cred_version;       /* credentials the circuit was opened with */
	int64_t inventory_due;      /* inventory read at the first chain from then (0: now) */
	char known[8];              /* the last power the BMC said, "on" | "off" ("": none): a
				     * failed read makes st.power unknown, and the next answer is
				     * compared with this one (events, power_changed) */
	int fleet_silent;           /* its agent was silent when a fleet-wide silence began */
	int read_back;              /* its first power reading since the start was added to the
				     * audit rows a stopped kilnd left interrupted */
	struct bmc_log_state log;   /* what its last log read saw (baselined 0: the next
				     * read's entries are history) */
	int log_reread;             /* its log was found cleared: read it whole again now */
	int drain_asked;            /* flagged (hung, GPU lost, critical Xid): drain was asked */
	int owned;                  /* this instance polls and judges it (cluster_owns) */
	int64_t claim_id;           /* its automatic cycle's node_calls claim (several kilnd) */
};

struct completion {
	struct completion *next;
	struct poller *p;
	int64_t node_id;
	enum bmc_op_kind kind;
	int64_t audit_id;
	int live;                   /* a live call's reading (poller_observe), not a poll */
	int64_t started_ms;         /* when it was submitted (the metrics' poll duration) */
	enum metrics_protocol proto;
	int rc;
	char error[512];
	json_t *data;
};

struct poller {
	struct poller_options opt;
	const struct secret_key *key; /* the state dir's, which outlives the poller */
	struct store *st;
	pthread_t thread;
	int started;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int stopping;
	int outstanding;            /* submitted, not yet processed */
	struct completion *done_head;
	struct slot *slots;         /* sorted by node id */
	size_t nslots;
	int64_t refreshed_at;
	int64_t health_at;
	int64_t pruned_at;
	unsigned owners_gen;        /* the cluster_generation() the owned marks follow */
	struct health_fleet_silence fleet; /* the fleet-wide silence guard */
};

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

static int event_add(struct poller *p, const struct slot *s, enum event_severity sev,
		     const char *source, const char *kind, const char *dedup, const char *fmt, ...)
	__attribute__((format(printf, 7, 8)));

static int event_add(struct poller *p, const struct slot *s, enum event_severity sev,
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
static int sel_event_add(struct poller *p, const struct slot *s, enum event_severity sev,
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
static int submit(struct poller *p, struct slot *s, const struct bmc_op *op, int64_t audit_id)
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

static int submit_kind(struct poller *p, struct slot *s, enum bmc_op_kind kind)
{
	struct bmc_op op = { .kind = kind, .background = 1 }; /* an operator's request goes first */

	if (kind == BMC_OP_SEL)
		op.sel_since = s->st.sel_cursor;
	return submit(p, s, &op, 0);
}

static void state_put(struct poller *p, const struct slot *s)
{
	if (store_fleet_state_put(p->st, &s->st) < 0)
		log_warn("poller: %s: %s", s->node->name, kiln_error_last());
}

static void set_error(struct fleet_state *st, const char *msg)
{
	free(st->power_error);
	st->power_error = msg ? strdup(msg) : NULL;
}

static enum event_severity sel_severity(const char *s)
{
	if (s && (strcasecmp(s, "critical") == 0 || strcasecmp(s, "error") == 0))
		return SEV_CRITICAL;
	if (s && strcasecmp(s, "warning") == 0)
		return SEV_WARNING;
	return SEV_INFO;
}

/* A log that was cleared (or refilled after a clear) since the last read: fewer entries than
 * then, or its newest entry older than the newest seen then. */
static int log_cleared(const struct bmc_log_state *last, int64_t count, int64_t newest)
{
	if (count >= 0 && last->count >= 0 && count < last->count)
		return 1;
	return newest > 0 && last->newest > 0 && newest < last->newest;
}

/* One entry of a log read: stored once as history (what was on the BMC before kiln looked)
 * or as new, which is a "sel" event with the BMC's time beside kiln's. A critical new one
 * gets a second event, "bmc_log", that counts in the node's health for [health]
 * bmc_log_window (health_facts.c reads those). */
static void sel_entry(struct poller *p, struct slot *s, const json_t *e, int history)
{
	json_t *idv = json_object_get(e, "id"), *tv = json_object_get(e, "timestamp");
	const char *msg = json_string_value(json_object_get(e, "message"));
	const char *sev = json_string_value(json_object_get(e, "severity"));
	int64_t t = json_is_integer(tv) ? json_integer_value(tv) : 0;
	char id[256], key[320], text[680];
	int inserted = 0;

	if (json_is_string(idv))
		snprintf(id, sizeof(id), "%s", json_string_value(idv));
	else if (json_is_integer(idv))
		snprintf(id, sizeof(id), "%" JSON_INTEGER_FORMAT, json_integer_value(idv));
	else
		snprintf(id, sizeof(id), "-");
	snprintf(key, sizeof(key), "sel:%s:%lld", id, (long long)t);
	snprintf(text, sizeof(text), "SEL %s: %.400s", id, msg ? msg : "(no message)");
	if (store_bmc_log_add(p->st, &inserted, s->node->id, key, t, sel_severity(sev), text,
			      history) < 0) {
		log_warn("poller: %s: BMC log: %s", s->node->name, kiln_error_last());
		return;
	}
	if (t > s->st.sel_cursor)
		s->st.sel_cursor = t;
	if (!inserted || history)
		return;
	if (sel_event_add(p, s, sel_severity(sev), "sel", key, t, text) &&
	    sel_severity(sev) == SEV_CRITICAL) {
		snprintf(key, sizeof(key), "bmc_log:%s:%lld", id, (long long)t);
		/* info: the "sel" event is the critical one (once in reports) */
		sel_event_add(p, s, SEV_INFO, "bmc_log", key, t, text);
	}
}

/* The log services a read looked at (the Redfish driver's "services", by label) that kiln has
 * not read before, into fresh: their entries are history, as a whole log's are at first
 * contact (a BMC firmware that adds a service, a kiln that reads the HGX baseboard's and the
 * chassis' logs as well, raise no old entry as news). A row "svc:LABEL" in the node's BMC
 * log history marks a service read; one without a mark whose entries kiln stored all the
 * same ("sel:LABEL/...": a kiln from before the marks read it) is not new. Returns 1 when
 * any was new. */
static int log_services_fresh(struct poller *p, struct slot *s, const json_t *services,
			      json_t *fresh)
{
	char key[320];
	size_t i;
	json_t *v;
	int any = 0;

	json_array_foreach(services, i, v) {
		const char *label = json_string_value(v);
		int inserted = 0, known = 0;

		if (!label)
			continue;
		snprintf(key, sizeof(key), "svc:%s", label);
		if (store_bmc_log_add(p->st, &inserted, s->node->id, key, 0, SEV_INFO,
				      "a log service kiln reads", 1) < 0) {
			log_warn("poller: %s: BMC log: %s", s->node->name, kiln_error_last());
			continue;
		}
		if (!inserted)
			continue;
		any = 1;
		snprintf(key, sizeof(key), "sel:%s/", label);
		if (store_bmc_log_known(p->st, &known, s->node->id, key) < 0)
			log_warn("poller: %s: BMC log: %s", s->node->name, kiln_error_last());
		else if (!known)
			json_object_set_new(fresh, label, json_true());
	}
	return any;
}

/* A log read. At first contact, and after the log was cleared, the entries on the BMC are
 * history: no event, no webhook, no report line (a fresh lab's two-year-old entries are not
 * news); so are those of a log service kiln reads for the first time. Entries that arrive
 * later are events. The cursor (the newest time) and the log state persist, so a restart
 * neither raises old entries again nor misses new ones. */
static void sel_entries(struct poller *p, struct slot *s, json_t *data, int64_t now)
{
	json_t *entries = json_object_get(data, "entries"), *e, *cv, *nv;
	json_t *fresh = json_object();
	int64_t count, newest;
	int history = s->log.baselined == 0;
	int services_changed;
	size_t i;

	cv = json_object_get(data, "count");
	nv = json_object_get(data, "newest");
	count = json_is_integer(cv) ? json_integer_value(cv) : -1;
	newest = json_is_integer(nv) ? json_integer_value(nv) : 0;
	services_changed = log_services_fresh(p, s, json_object_get(data, "services"), fresh);
	/* a count over other services than the last one's tells no clear */
	if (!history && !services_changed && log_cleared(&s->log, count, newest)) {
		char key[64];

		snprintf(key, sizeof(key), "bmc_log_cleared:%lld", (long long)now);
		event_add(p, s, SEV_INFO, "bmc", "bmc_log_cleared", key,
			  "BMC log cleared (%lld entries before, %lld now): what it holds now is "
			  "history", (long long)s->log.count, (long long)count);
		history = 1;
		s->log_reread = 1; /* the entries before the cursor were not in this read */
	}
	json_array_foreach(entries, i, e) {
		const char *service = json_string_value(json_object_get(e, "service"));

		sel_entry(p, s, e, history || (service && json_object_get(fresh, service)));
	}
	json_decref(fresh);
	if (s->log_reread)
		s->st.sel_cursor = 0;
	if (history)
		s->log.baselined = now;
	s->log.count = count;
	s->log.newest = newest > 0 ? newest : s->log.newest;
	if (store_bmc_log_state_put(p->st, s->node->id, &s->log) < 0)
		log_warn("poller: %s: BMC log state: %s", s->node->name, kiln_error_last());
}

/* After a step of the poll chain: the next one, or the end of the chain. The chain runs
 * power, sensors, SEL, inventory, each when due. */
static void chain_next(struct poller *p, struct slot *s, enum bmc_op_kind after, int64_t now)
{
	int sensors = p->opt.cfg.sensors_every > 0 &&
		      s->cycle % (unsigned)p->opt.cfg.sensors_every == 0;
	int sel = p->opt.cfg.sel_every > 0 && s->cycle % (unsigned)p->opt.cfg.sel_every == 0;
	int inventory = p->opt.cfg.inventory_every_s > 0 && now >= s->inventory_due;

	if (after == BMC_OP_POWER_GET && sensors && submit_kind(p, s, BMC_OP_SENSORS) == 0)
		return;
	if ((after == BMC_OP_POWER_GET || after == BMC_OP_SENSORS) && sel &&
	    submit_kind(p, s, BMC_OP_SEL) == 0)
		return;
	/* a cleared log is read whole again at once: what arrives meanwhile is news */
	if (after == BMC_OP_SEL && s->log_reread) {
		s->log_reread = 0;
		if (submit_kind(p, s, BMC_OP_SEL) == 0)
			return;
	}
	if (after != BMC_OP_INVENTORY && inventory && submit_kind(p, s, BMC_OP_INVENTORY) == 0)
		return;
	s->busy = 0;
}

/* Keeps what the BMC says the node is: the whole inventory, and the values that identify the
 * machine (an agent is bound to its node by them; enrollment finds the node by them). */
static void inventory_store(struct poller *p, struct slot *s, json_t *data, int64_t now)
{
	struct node_bmc_ids ids = {
		json_string_value(json_object_get(data, "serial")),
		json_string_value(json_object_get(data, "uuid")),
		json_string_value(json_object_get(data, "sku")),
		json_string_value(json_object_get(data, "chassis_serial")),
	};
	char *text = data ? json_dumps(data, JSON_COMPACT) : NULL;

	if (text && store_node_inventory_put(p->st, s->node->id, text, now) < 0)
		log_warn("poller: %s: inventory: %s", s->node->name, kiln_error_last());
	free(text);
	/* an answer that names nothing (a BMC mid-reset) keeps what is known */
	if ((ids.serial || ids.uuid || ids.sku || ids.chassis_serial) &&
	    store_node_bmc_ids_set(p->st, s->node->name, &ids) < 0)
		log_warn("poller: %s: BMC identity: %s", s->node->name, kiln_error_last());
	s->inventory_due = now + p->opt.cfg.inventory_every_s;
}

/*
 * A node seen going from on to off: who did it, if kiln did. A kiln action that can turn it
 * off, begun within the window, explains it; none is an outside power-off (a button, the
 * BMC's own page, a PDU), a warning of its own in health.
 */
static void power_off_seen(struct poller *p, struct slot *s, int64_t now)
{
	int64_t window = 3 * p->opt.cfg.interval_s, since, t = 0;
	char *actor = NULL;
	int rc;

	if (window < POWER_OFF_WINDOW_S)
		window = POWER_OFF_WINDOW_S;
	/* nor one begun before the node was last seen turning on */
	since = now - window > s->st.power_changed ? now - window : s->st.power_changed;
	rc = store_audit_power_off_find(p->st, &actor, &t, s->node->name, since);
	if (rc < 0 && rc != KILN_ENOTFOUND) {
		log_warn("poller: %s: audit: %s", s->node->name, kiln_error_last());
		/* not known who: neither blamed on kiln nor on the outside */
		event_add(p, s, SEV_INFO, "bmc", "power", NULL, "power on -> off");
		return;
	}
	free(s->st.power_off_by);
	s->st.power_off_by = actor ? actor : strdup("");
	s->st.power_off_time = actor ? t : now; /* when alice asked, or when it was seen */
	if (actor)
		event_add(p, s, SEV_INFO, "bmc", "power", NULL, "power on -> off, by %s", actor);
	else
		event_add(p, s, SEV_WARNING, "bmc", "power", NULL,
			  "power on -> off outside kiln (no kiln action turned it off)");
}

/* A reading the BMC gave (a poll's or a live call's): the node's state, events, history. */
static void reading_store(struct poller *p, struct slot *s, enum bmc_op_kind kind, json_t *data,
			  int64_t now)
{
	enum poller_transition t;

	t = poller_record_success(&s->st, now);
	if (t == POLLER_UP)
		event_add(p, s, SEV_INFO, "bmc", "bmc", NULL, "BMC reachable again");
	set_error(&s->st, NULL);
	switch (kind) {
	case BMC_OP_POWER_GET: {
		const char *pw = json_string_value(json_object_get(data, "power"));

		if (!pw || (strcmp(pw, "on") != 0 && strcmp(pw, "off") != 0))
			pw = "unknown";
		if (strcmp(pw, "unknown") != 0 && strcmp(pw, s->known) != 0) {
			if (strcmp(s->known, "on") == 0 && strcmp(pw, "off") == 0)
				power_off_seen(p, s, now);
			else if (s->known[0])
				event_add(p, s, SEV_INFO, "bmc", "power", NULL, "power %s -> %s",
					  s->known, pw);
			if (strcmp(pw, "on") == 0) {
				free(s->st.power_off_by);
				s->st.power_off_by = NULL;
				s->st.power_off_time = 0;
			}
			s->st.power_changed = now;
			snprintf(s->known, sizeof(s->known), "%s", pw);
		}
		snprintf(s->st.power, sizeof(s->st.power), "%s", pw);
		s->st.power_time = now;
		if (!s->read_back && strcmp(pw, "unknown") != 0) {
			char when[KILN_TIME_UTC_LEN];

			kiln_time_utc(when, now);
			if (store_audit_readback(p->st, s->node->name, pw, when) < 0)
				log_warn("poller: %s: audit: %s", s->node->name, kiln_error_last());
			s->read_back = 1;
		}
		break;
	}
	case BMC_OP_SENSORS: {
		char *text = data ? json_dumps(data, JSON_COMPACT) : NULL;
		double watts, inlet;

		if (text) {
			free(s->st.sensors);
			s->st.sensors = text;
			s->st.sensors_time = now;
		}
		/* The report's energy and peaks: a compact row per read. */
		bmc_sensors_summary(data, &watts, &inlet);
		if ((!isnan(watts) || !isnan(inlet)) &&
		    store_bmc_sample_insert(p->st, s->node->id, now, watts, inlet) < 0)
			log_warn("poller: %s: history: %s", s->node->name, kiln_error_last());
		break;
	}
	case BMC_OP_SEL:
		sel_entries(p, s, data, now);
		break;
	case BMC_OP_INVENTORY:
		inventory_store(p, s, data, now);
		break;
	default:
		break;
	}
	state_put(p, s);
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
		event_add(p, s, SEV_INFO, "bmc", "bmc", NULL, "BMC reachable again");
	if (!was_busy)
		event_add(p, s, SEV_WARNING, "bmc", "bmc", NULL, "BMC busy: %.400s",
			  busy_detail(c->error));
	s->busy = 0;
	state_put(p, s);
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
		set_error(&s->st, msg);
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
			event_add(p, s, SEV_CRITICAL, "bmc", "tls", key, "%.480s", msg);
		}
		if (t == POLLER_DOWN)
			event_add(p, s, SEV_WARNING, "bmc", "bmc", NULL, "%s: %.400s",
				  c->rc == KILN_ECONFIG ? "BMC configuration error" : "BMC unreachable",
				  msg);
		s->busy = 0;
		state_put(p, s);
		return;
	}
	reading_store(p, s, c->kind, c->data, now);
	chain_next(p, s, c->kind, now);
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
	metrics_remediation_count(c->rc == 0 ? METRICS_REMEDIATION_DONE
					     : METRICS_REMEDIATION_FAILED);
	if (c->rc == 0)
		event_add(p, s, SEV_INFO, "kilnd", "remediation", NULL,
			  "automatic power cycle done%s%s", result ? ": " : "", result ? result : "");
	else
		event_add(p, s, SEV_CRITICAL, "kilnd", "remediation", NULL,
			  "automatic power cycle failed: %.400s", c->error);
	log_info("poller: %s: automatic power cycle %s", s->node->name, outcome);
}

static int refresh(struct poller *p, int64_t now);

static void completions_process(struct poller *p, struct completion *list)
{
	int64_t now = time(NULL);
	int began = store_begin(p->st) == 0;

	while (list) {
		struct completion *c = list;
		struct slot *s = slot_find(p, c->node_id);

		list = c->next;
		if (!s && c->live && refresh(p, now) == 0)
			s = slot_find(p, c->node_id); /* a node added since the last refresh */
		if (c->live) {
			if (s)
				reading_store(p, s, c->kind, c->data, now);
		} else if (s && c->kind == BMC_OP_POWER_ACTION) {
			action_result(p, s, c);
		} else if (s && !s->owned) {
			s->busy = 0; /* given up meanwhile: its new owner reads and stores it */
		} else if (s) {
			poll_result(p, s, c, now);
		} else if (c->kind == BMC_OP_POWER_ACTION) {
			/* The node was deleted during its automatic cycle: the busy mark and
			 * the audit row still need their end. */
			char outcome[600];

			node_lock_release(c->node_id);
			snprintf(outcome, sizeof(outcome), "%s%s", c->rc == 0 ? "ok" : "failed: ",
				 c->rc == 0 ? "" : c->error);
			if (c->audit_id && store_audit_finish(p->st, c->audit_id, outcome) < 0)
				log_warn("poller: audit: %s", kiln_error_last());
		}
		json_decref(c->data);
		free(c);
		pthread_mutex_lock(&p->lock);
		p->outstanding--;
		pthread_mutex_unlock(&p->lock);
	}
	if (began && store_commit(p->st) < 0) {
		log_warn("poller: commit: %s", kiln_error_last());
		store_rollback(p->st);
	}
}

void poller_observe(struct poller *p, int64_t node_id, enum bmc_op_kind kind, const json_t *data)
{
	struct completion *c;

	if (kind == BMC_OP_POWER_ACTION)
		kind = BMC_OP_POWER_GET; /* its "power" is the state read back */
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
		if (submit_kind(p, s, BMC_OP_POWER_GET) < 0) {
			s->busy = 0;
			log_warn("poller: %s: %s", s->node->name, kiln_error_last());
		}
	}
}

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
	event_add(p, s, SEV_WARNING, "kilnd", "remediation", "remediation-limit",
		  "hung, but the limit of %d automatic power cycles an hour is reached",
		  p->opt.cfg.remediate_max_per_hour);
}

/* Once per hung episode, and never again for a node whose agent has not come back since
 * the last automatic cycle (a cycle that did not help is a person's problem). */
static void remediate(struct poller *p, struct slot *s, const char *reason,
		      int64_t agent_last_seen, int64_t now)
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
			event_add(p, s, SEV_WARNING, "kilnd", "remediation", key,
				  "hung, but automatic power cycle waits: %.300s", why);
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
	event_add(p, s, SEV_WARNING, "kilnd", "remediation", NULL,
		  "automatic power cycle: %.400s", reason);
	log_info("poller: %s: automatic power cycle (%s)", s->node->name, reason);
	s->acting = 1;
	if (submit(p, s, &op, audit_id) < 0) {
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
	char console[HEALTH_REASON_LEN];

	out->ok = 0;
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
	health_evaluate(&out->res, &f, &cfg->health);
	if (out->res.hung && console_evidence(s, console, sizeof(console))) {
		/* the verdict again, with what the console last said beside it */
		f.console_line = console;
		health_evaluate(&out->res, &f, &cfg->health);
	}
	out->agent_last_seen = f.agent_last_seen;
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
		event_add(p, s, SEV_CRITICAL, "kilnd", "hung", key, "%s", r->reasons[0]);
	} else if (!r->hung) {
		s->st.hung_since = 0;
	}
	if (level_changed)
		event_add(p, s, r->level == HEALTH_CRITICAL  ? SEV_CRITICAL
				: r->level == HEALTH_WARNING ? SEV_WARNING
							      : SEV_INFO,
			  "kilnd", "health", NULL, "health %s -> %s%s%s", old,
			  health_level_name(r->level), r->nreasons ? ": " : "",
			  r->nreasons ? r->reasons[0] : "");
	snprintf(s->st.health, sizeof(s->st.health), "%s", health_level_name(r->level));
	reasons = reasons_json(r);
	same = s->st.health_time > 0 && !level_changed && s->st.hung_since == hung_before &&
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
		state_put(p, s);
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
			remediate(p, s, r->reasons[i], hr->agent_last_seen, now);
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
		event_add(p, NULL, SEV_CRITICAL, "kilnd", "fleet-silence", NULL,
			  "fleet-wide agent silence: network or kilnd problem (%zu of %zu agents "
			  "silent together; no node is judged hung meanwhile)",
			  p->fleet.silent, p->fleet.agents);
		log_warn("poller: fleet-wide agent silence: %zu of %zu agents", p->fleet.silent,
			 p->fleet.agents);
		break;
	case HEALTH_FLEET_ENDED:
		event_add(p, NULL, SEV_INFO, "kilnd", "fleet-silence", NULL,
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

static void health_sweep(struct poller *p, int64_t now)
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
		size_t n = p->nslots - first < HEALTH_SLICE ? p->nslots - first : HEALTH_SLICE;

		for (size_t k = 0; k < n; k++) {
			hr[k].ok = 0; /* a node owned elsewhere is judged there */
			if (p->slots[first + k].owned)
				health_read(p, &p->slots[first + k], &hr[k],
					    maint_has(m, nm, p->slots[first + k].node->id),
					    job_find(jobs, njobs, p->slots[first + k].node->id),
					    now);
		}
		if (store_begin(p->st) < 0) {
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
	}
	maintenance_list_free(m, nm);
	job_list_free(jobs, njobs);
	p->health_at = now;
}

/* Old BMC history goes in small transactions, so that no writer waits long. */
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
			health_sweep(p, now);
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
