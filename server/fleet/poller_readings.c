/* SPDX-License-Identifier: Apache-2.0 */
/* What the poller keeps of each reading: power (and a power-off no one asked for), sensors,
 * the BMC's logs as events (history the first time a log is read), the inventory and the
 * values that identify the machine; and the next step of a node's poll chain. */
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
static void sel_entry(struct poller *p, struct slot *s, const json_t *e, int history,
		      int64_t now)
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
	if (health_boot_log_line(msg)) { /* a reboot the power readings may not show */
		s->st.boot_started = now;
		poller_event_add(p, s, SEV_INFO, "bmc", "boot", NULL, "boot began (BMC log: %.200s)",
				 msg);
	}
	if (poller_sel_event_add(p, s, sel_severity(sev), "sel", key, t, text) &&
	    sel_severity(sev) == SEV_CRITICAL) {
		snprintf(key, sizeof(key), "bmc_log:%s:%lld", id, (long long)t);
		/* info: the "sel" event is the critical one (once in reports) */
		poller_sel_event_add(p, s, SEV_INFO, "bmc_log", key, t, text);
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
		poller_event_add(p, s, SEV_INFO, "bmc", "bmc_log_cleared", key,
			  "BMC log cleared (%lld entries before, %lld now): what it holds now is "
			  "history", (long long)s->log.count, (long long)count);
		history = 1;
		s->log_reread = 1; /* the entries before the cursor were not in this read */
	}
	json_array_foreach(entries, i, e) {
		const char *service = json_string_value(json_object_get(e, "service"));

		sel_entry(p, s, e, history || (service && json_object_get(fresh, service)), now);
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
void poller_chain_next(struct poller *p, struct slot *s, enum bmc_op_kind after, int64_t now)
{
	int sensors = p->opt.cfg.sensors_every > 0 &&
		      s->cycle % (unsigned)p->opt.cfg.sensors_every == 0;
	int sel = p->opt.cfg.sel_every > 0 && s->cycle % (unsigned)p->opt.cfg.sel_every == 0;
	int inventory = p->opt.cfg.inventory_every_s > 0 && now >= s->inventory_due;

	if (after == BMC_OP_POWER_GET && sensors && poller_submit_kind(p, s, BMC_OP_SENSORS) == 0)
		return;
	if ((after == BMC_OP_POWER_GET || after == BMC_OP_SENSORS) && sel &&
	    poller_submit_kind(p, s, BMC_OP_SEL) == 0)
		return;
	/* a cleared log is read whole again at once: what arrives meanwhile is news */
	if (after == BMC_OP_SEL && s->log_reread) {
		s->log_reread = 0;
		if (poller_submit_kind(p, s, BMC_OP_SEL) == 0)
			return;
	}
	if (after != BMC_OP_INVENTORY && inventory && poller_submit_kind(p, s, BMC_OP_INVENTORY) == 0)
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
		poller_event_add(p, s, SEV_INFO, "bmc", "power", NULL, "power on -> off");
		return;
	}
	free(s->st.power_off_by);
	s->st.power_off_by = actor ? actor : strdup("");
	s->st.power_off_time = actor ? t : now; /* when alice asked, or when it was seen */
	if (actor)
		poller_event_add(p, s, SEV_INFO, "bmc", "power", NULL, "power on -> off, by %s", actor);
	else
		poller_event_add(p, s, SEV_WARNING, "bmc", "power", NULL,
			  "power on -> off outside kiln (no kiln action turned it off)");
}

/* A boot kiln sees in a power reading: an on, cycle or reset that went through
 * ("boot_began", poller_observe), or the BMC's BootProgress entering a booting state (a
 * node that rebooted by itself, its power never off). */
static void boot_seen(struct poller *p, struct slot *s, const json_t *data, int64_t now)
{
	const char *state = json_string_value(json_object_get(data, "boot_progress"));
	const json_t *secs = json_object_get(data, "last_boot_s");

	if (json_is_true(json_object_get(data, "boot_began")))
		s->st.boot_started = now;
	if (json_is_integer(secs))
		s->st.boot_last_s = json_integer_value(secs);
	if (health_boot_state_booting(state) && !health_boot_state_booting(s->st.boot_state)) {
		s->st.boot_started = now;
		poller_event_add(p, s, SEV_INFO, "bmc", "boot", NULL, "boot began (BMC: %.64s)", state);
	}
	if (!state ? s->st.boot_state != NULL
		   : !s->st.boot_state || strcmp(state, s->st.boot_state) != 0) {
		char *copy = state ? strdup(state) : NULL;

		if (state && !copy)
			return;
		free(s->st.boot_state);
		s->st.boot_state = copy;
	}
}

/* A reading the BMC gave (a poll's or a live call's): the node's state, events, history. */
void poller_reading_store(struct poller *p, struct slot *s, enum bmc_op_kind kind, json_t *data,
			  int64_t now)
{
	enum poller_transition t;

	t = poller_record_success(&s->st, now);
	if (t == POLLER_UP)
		poller_event_add(p, s, SEV_INFO, "bmc", "bmc", NULL, "BMC reachable again");
	poller_set_error(&s->st, NULL);
	switch (kind) {
	case BMC_OP_POWER_GET: {
		const char *pw = json_string_value(json_object_get(data, "power"));

		if (!pw || (strcmp(pw, "on") != 0 && strcmp(pw, "off") != 0))
			pw = "unknown";
		if (strcmp(pw, "unknown") != 0 && strcmp(pw, s->known) != 0) {
			if (strcmp(s->known, "on") == 0 && strcmp(pw, "off") == 0)
				power_off_seen(p, s, now);
			else if (s->known[0])
				poller_event_add(p, s, SEV_INFO, "bmc", "power", NULL, "power %s -> %s",
					  s->known, pw);
			if (strcmp(pw, "on") == 0) {
				free(s->st.power_off_by);
				s->st.power_off_by = NULL;
				s->st.power_off_time = 0;
			}
			s->st.power_changed = now;
			if (strcmp(pw, "on") == 0 && s->known[0])
				s->st.boot_started = now; /* seen going on: it boots */
			snprintf(s->known, sizeof(s->known), "%s", pw);
		}
		boot_seen(p, s, data, now);
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
	poller_state_put(p, s);
}
