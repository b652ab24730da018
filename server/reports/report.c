/* SPDX-License-Identifier: Apache-2.0 */
/* The overnight report, built from the events, the audit log, the agents' history and the
 * poller's health cache. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/error.h"
#include "reports/report.h"

#define REPORT_CRITICAL_MAX 500
#define REPORT_ACTIONS_MAX 2000

static pthread_mutex_t price_lock = PTHREAD_MUTEX_INITIALIZER;
static double price_per_kwh;
static char price_currency[16];

void report_energy_price_set(double per_kwh, const char *currency)
{
	pthread_mutex_lock(&price_lock);
	price_per_kwh = per_kwh > 0 ? per_kwh : 0;
	snprintf(price_currency, sizeof(price_currency), "%s", currency ? currency : "");
	pthread_mutex_unlock(&price_lock);
}

double report_energy_wh(const struct agent_sample *s, size_t n, int64_t max_gap)
{
	double wh = 0;
	const struct agent_sample *prev = NULL;

	for (size_t i = 0; i < n; i++) {
		if (isnan(s[i].power_draw_total_w))
			continue;
		if (prev) {
			int64_t dt = s[i].time - prev->time;

			if (dt > 0 && dt <= max_gap)
				wh += (prev->power_draw_total_w + s[i].power_draw_total_w) / 2 *
				      (double)dt / 3600.0;
		}
		prev = &s[i];
	}
	return wh;
}

/* What the report knows of each node, found by id. */
struct rnode {
	int64_t id;
	const char *name;
	const char *rack;           /* NULL: "-" */
	/* went bad */
	int bad_events;
	int64_t bad_first, bad_last;
	enum event_severity worst;
	const char *worst_message;
	/* now */
	const struct agent_state *agent;
	const struct fleet_state *fleet;
	const char *maintenance;
};

struct rctx {
	struct store *st;
	int64_t since, until;
	struct node **nodes;
	size_t nnodes;
	struct rnode *rn;           /* sorted by id */
	struct event *events;
	size_t nevents;
	struct audit_entry *audit;
	size_t naudit;
	struct agent_state *agents;
	size_t nagents;
	struct fleet_state *fleet;
	size_t nfleet;
	struct maintenance *maint;
	size_t nmaint;
	struct agent_sample *samples;
	size_t nsamples;
	struct agent_sample *bmc;   /* the poller's BMC readings, same shape */
	size_t nbmc;
};

static int cmp_rnode(const void *a, const void *b)
{
	const struct rnode *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static struct rnode *rnode_find(struct rctx *x, int64_t id)
{
	struct rnode key = { .id = id };

	return bsearch(&key, x->rn, x->nnodes, sizeof(*x->rn), cmp_rnode);
}

static const char *rack_of(const struct rnode *r)
{
	return r && r->rack && r->rack[0] ? r->rack : "-";
}

static void rctx_free(struct rctx *x)
{
	node_list_free(x->nodes, x->nnodes);
	free(x->rn);
	event_list_free(x->events, x->nevents);
	audit_entry_list_free(x->audit, x->naudit);
	agent_state_list_free(x->agents, x->nagents);
	fleet_state_list_free(x->fleet, x->nfleet);
	maintenance_list_free(x->maint, x->nmaint);
	free(x->samples);
	free(x->bmc);
}

static int load(struct rctx *x)
{
	int rc;

	if ((rc = store_node_list(x->st, &x->nodes, &x->nnodes)) < 0 ||
	    (rc = store_event_list(x->st, &x->events, &x->nevents, x->since, 0)) < 0 ||
	    (rc = store_audit_list(x->st, &x->audit, &x->naudit, x->since, 0)) < 0 ||
	    (rc = store_agent_state_list(x->st, &x->agents, &x->nagents)) < 0 ||
	    (rc = store_fleet_state_list(x->st, &x->fleet, &x->nfleet)) < 0 ||
	    (rc = store_maintenance_list(x->st, &x->maint, &x->nmaint)) < 0 ||
	    (rc = store_agent_samples_list(x->st, &x->samples, &x->nsamples, x->since,
					   x->until)) < 0 ||
	    (rc = store_bmc_samples_list(x->st, &x->bmc, &x->nbmc, x->since, x->until)) < 0)
		return rc;
	x->rn = calloc(x->nnodes ? x->nnodes : 1, sizeof(*x->rn));
	if (!x->rn)
		return kiln_fail(KILN_ERROR, "out of memory");
	for (size_t i = 0; i < x->nnodes; i++) {
		x->rn[i].id = x->nodes[i]->id;
		x->rn[i].name = x->nodes[i]->name;
		x->rn[i].rack = x->nodes[i]->rack;
	}
	qsort(x->rn, x->nnodes, sizeof(*x->rn), cmp_rnode);
	for (size_t i = 0; i < x->nagents; i++) {
		struct rnode *r = rnode_find(x, x->agents[i].node_id);

		if (r)
			r->agent = &x->agents[i];
	}
	for (size_t i = 0; i < x->nfleet; i++) {
		struct rnode *r = rnode_find(x, x->fleet[i].node_id);

		if (r)
			r->fleet = &x->fleet[i];
	}
	for (size_t i = 0; i < x->nmaint; i++) {
		struct rnode *r = rnode_find(x, x->maint[i].node_id);

		if (r)
			r->maintenance = x->maint[i].reason ? x->maint[i].reason : "";
	}
	return 0;
}

static const char *const sev_names[] = { "info", "warning", "critical" };

/* Events, oldest first: who went bad, and the critical ones. */
static int events_section(struct rctx *x, json_t *res)
{
	json_t *crit = json_array();
	size_t ncrit = 0;

	if (!crit)
		return kiln_fail(KILN_ERROR, "out of memory");
	for (size_t k = x->nevents; k-- > 0;) {
		const struct event *e = &x->events[k];
		struct rnode *r;

		if (e->time > x->until)
			continue;
		if (e->severity == SEV_CRITICAL && ncrit++ < REPORT_CRITICAL_MAX)
			json_array_append_new(
				crit, json_pack("{s:I, s:s?, s:s, s:s, s:s}", "time",
						(json_int_t)e->time, "node", e->node, "source",
						e->source, "kind", e->kind, "message", e->message));
		if (e->severity < SEV_WARNING || !(r = rnode_find(x, e->node_id)))
			continue;
		if (r->bad_events++ == 0)
			r->bad_first = e->time;
		r->bad_last = e->time;
		if (!r->worst_message || e->severity > r->worst) {
			r->worst = e->severity;
			r->worst_message = e->message;
		}
	}
	json_object_set_new(res, "critical_events", crit);
	json_object_set_new(res, "critical_events_total", json_integer((json_int_t)ncrit));
	return 0;
}

/* Why a node needs attention now; appends strings to reasons. */
static void attention_reasons(const struct rnode *r, json_t *reasons)
{
	const struct agent_state *a = r->agent;
	char buf[160];

	if (r->fleet && strcmp(r->fleet->health, "ok") != 0) {
		json_t *why = r->fleet->reasons ? json_loads(r->fleet->reasons, 0, NULL) : NULL;
		size_t i;
		json_t *s;

		if (json_is_array(why) && json_array_size(why) > 0) {
			json_array_foreach(why, i, s)
				if (json_is_string(s))
					json_array_append(reasons, s);
		} else {
			snprintf(buf, sizeof(buf), "health %s", r->fleet->health);
			json_array_append_new(reasons, json_string(buf));
		}
		json_decref(why);
	}
	if (a && a->nvidia_status && strcmp(a->nvidia_status, "ok") != 0) {
		snprintf(buf, sizeof(buf), "NVIDIA driver status %.32s", a->nvidia_status);
		json_array_append_new(reasons, json_string(buf));
	}
	if (a && a->gpu_count < a->gpu_count_max) {
		snprintf(buf, sizeof(buf), "%lld of %lld GPUs", (long long)a->gpu_count,
			 (long long)a->gpu_count_max);
		json_array_append_new(reasons, json_string(buf));
	}
}

/* A node that went bad has recovered when nothing is wrong now and a reading newer than its
 * last bad event says so (an agent report or a health evaluation). */
static int recovered(const struct rnode *r, size_t nreasons)
{
	if (nreasons > 0)
		return 0;
	if (r->agent && r->agent->report_time > r->bad_last)
		return 1;
	return r->fleet && r->fleet->health_time > r->bad_last;
}

static int nodes_section(struct rctx *x, json_t *res)
{
	json_t *bad = json_array(), *att = json_array();

	if (!bad || !att) {
		json_decref(bad);
		json_decref(att);
		return kiln_fail(KILN_ERROR, "out of memory");
	}
	/* x->nodes is in name order. */
	for (size_t i = 0; i < x->nnodes; i++) {
		const struct rnode *r = rnode_find(x, x->nodes[i]->id);
		json_t *reasons = json_array();
		int ok;

		if (!reasons)
			goto oom;
		attention_reasons(r, reasons);
		ok = recovered(r, json_array_size(reasons));
		if (r->bad_events > 0) {
			json_array_append_new(
				bad, json_pack("{s:s, s:I, s:I, s:s, s:i, s:s?, s:b}", "node",
					       r->name, "first", (json_int_t)r->bad_first, "last",
					       (json_int_t)r->bad_last, "severity",
					       sev_names[r->worst], "events", r->bad_events,
					       "message", r->worst_message, "recovered", ok));
			if (!ok && json_array_size(reasons) == 0) {
				char buf[600];

				snprintf(buf, sizeof(buf), "not seen healthy since: %.500s",
					 r->worst_message ? r->worst_message : "?");
				json_array_append_new(reasons, json_string(buf));
			}
		}
		if (json_array_size(reasons) > 0)
			json_array_append_new(att, json_pack("{s:s, s:o, s:s?}", "node", r->name,
							      "reasons", reasons, "maintenance",
							      r->maintenance));
		else
			json_decref(reasons);
	}
	json_object_set_new(res, "went_bad", bad);
	json_object_set_new(res, "attention", att);
	return 0;
oom:
	json_decref(bad);
	json_decref(att);
	return kiln_fail(KILN_ERROR, "out of memory");
}

static int actions_section(struct rctx *x, json_t *res)
{
	json_t *arr = json_array();
	size_t n = 0;

	if (!arr)
		return kiln_fail(KILN_ERROR, "out of memory");
	for (size_t k = x->naudit; k-- > 0 && n < REPORT_ACTIONS_MAX;) {
		const struct audit_entry *e = &x->audit[k];

		if (e->time > x->until)
			continue;
		n++;
		json_array_append_new(
			arr, json_pack("{s:I, s:s, s:b, s:s, s:s?, s:s?}", "time", (json_int_t)e->time,
				       "actor", e->actor, "automatic",
				       strcmp(e->actor, "kilnd") == 0, "action", e->action,
				       "target", e->target, "outcome", e->outcome));
	}
	json_object_set_new(res, "actions", arr);
	return 0;
}

/* Per rack, in name order: peaks and energy. */
struct rack {
	const char *name;
	int nodes;
	double temp, power, wh, inlet, sys_power;
	const char *temp_node, *power_node, *inlet_node, *sys_power_node;
	int64_t temp_time, power_time, inlet_time, sys_power_time;
	int energy_bmc, energy_agent; /* nodes whose energy came from each source */
};

static struct rack *rack_get(struct rack *racks, size_t *n, const char *name)
{
	for (size_t i = 0; i < *n; i++)
		if (strcmp(racks[i].name, name) == 0)
			return &racks[i];
	racks[*n] = (struct rack){ .name = name, .temp = NAN, .power = NAN, .inlet = NAN,
				   .sys_power = NAN };
	return &racks[(*n)++];
}

static int cmp_rack(const void *a, const void *b)
{
	return strcmp(((const struct rack *)a)->name, ((const struct rack *)b)->name);
}

static json_t *num_or_null(double v, int digits)
{
	double f = pow(10, digits), r = round(v * f) / f;

	/* json_real refuses inf (1.7e308 * 10): NULL would fail the object it goes into */
	return isfinite(r) ? json_real(r) : json_null();
}

static void peak(double *best, const char **best_node, int64_t *best_time, double v,
		 const char *node, int64_t t)
{
	if (!isnan(v) && (isnan(*best) || v > *best)) {
		*best = v;
		*best_node = node;
		*best_time = t;
	}
}

static const char *source_name(int bmc, int agent)
{
	return bmc && agent ? "bmc+agent" : bmc ? "bmc" : agent ? "agent" : NULL;
}

static void peak_json(json_t *o, const char *prefix, const char *unit_key, double v,
			 const char *node, int64_t t)
{
	char key[64];

	snprintf(key, sizeof(key), "%s_%s", prefix, unit_key);
	json_object_set_new(o, key, num_or_null(v, 1));
	snprintf(key, sizeof(key), "%s_node", prefix);
	json_object_set_new(o, key, node ? json_string(node) : json_null());
	snprintf(key, sizeof(key), "%s_time", prefix);
	json_object_set_new(o, key, node ? json_integer(t) : json_null());
}

/*
 * Energy per node from its BMC's power readings (the whole system) where it has any in the
 * window, else from its agent's GPU power; BMC inlet and system power peaks beside the GPU
 * ones. Both sample lists are sorted by node then time.
 */
static int racks_section(struct rctx *x, json_t *res)
{
	struct rack *racks = calloc(x->nnodes + 1, sizeof(*racks));
	unsigned char *bmc_energy = calloc(x->nnodes + 1, 1); /* by index into x->rn */
	size_t nracks = 0;
	double price, total_wh = 0;
	int total_bmc = 0, total_agent = 0;
	char currency[16];
	json_t *arr = json_array(), *energy;

	pthread_mutex_lock(&price_lock);
	price = price_per_kwh;
	snprintf(currency, sizeof(currency), "%s", price_currency);
	pthread_mutex_unlock(&price_lock);
	if (!racks || !arr || !bmc_energy) {
		free(racks);
		free(bmc_energy);
		json_decref(arr);
		return kiln_fail(KILN_ERROR, "out of memory");
	}
	for (size_t i = 0; i < x->nnodes; i++)
		rack_get(racks, &nracks, rack_of(&x->rn[i]))->nodes++;
	for (size_t i = 0; i < x->nbmc;) {
		size_t j = i;
		const struct rnode *r = rnode_find(x, x->bmc[i].node_id);
		struct rack *k;
		int powered = 0;

		while (j < x->nbmc && x->bmc[j].node_id == x->bmc[i].node_id)
			j++;
		if (!r) {
			i = j;
			continue;
		}
		k = rack_get(racks, &nracks, rack_of(r));
		for (size_t m = i; m < j; m++) {
			const struct agent_sample *s = &x->bmc[m];

			peak(&k->inlet, &k->inlet_node, &k->inlet_time, s->temperature_max_c, r->name,
			     s->time);
			peak(&k->sys_power, &k->sys_power_node, &k->sys_power_time,
			     s->power_draw_total_w, r->name, s->time);
			powered |= !isnan(s->power_draw_total_w);
		}
		if (powered) {
			bmc_energy[r - x->rn] = 1;
			k->wh += report_energy_wh(&x->bmc[i], j - i, REPORT_ENERGY_GAP_MAX_S);
			k->energy_bmc++;
			total_bmc++;
		}
		i = j;
	}
	for (size_t i = 0; i < x->nsamples;) {
		size_t j = i;
		const struct rnode *r = rnode_find(x, x->samples[i].node_id);
		struct rack *k;

		while (j < x->nsamples && x->samples[j].node_id == x->samples[i].node_id)
			j++;
		if (!r) {
			i = j;
			continue;
		}
		k = rack_get(racks, &nracks, rack_of(r));
		for (size_t m = i; m < j; m++) {
			const struct agent_sample *s = &x->samples[m];

			if (!isnan(s->temperature_max_c) &&
			    (isnan(k->temp) || s->temperature_max_c > k->temp)) {
				k->temp = s->temperature_max_c;
				k->temp_node = r->name;
				k->temp_time = s->time;
			}
			if (!isnan(s->power_draw_total_w) &&
			    (isnan(k->power) || s->power_draw_total_w > k->power)) {
				k->power = s->power_draw_total_w;
				k->power_node = r->name;
				k->power_time = s->time;
			}
		}
		/* The agents' GPU power only for nodes without BMC power readings. */
		if (!bmc_energy[r - x->rn]) {
			k->wh += report_energy_wh(&x->samples[i], j - i, REPORT_ENERGY_GAP_MAX_S);
			k->energy_agent++;
			total_agent++;
		}
		i = j;
	}
	qsort(racks, nracks, sizeof(*racks), cmp_rack);
	for (size_t i = 0; i < nracks; i++) {
		const struct rack *k = &racks[i];
		json_t *o = json_pack("{s:s, s:i}", "rack", k->name, "nodes", k->nodes);

		json_object_set_new(o, "temperature_peak_c", num_or_null(k->temp, 1));
		json_object_set_new(o, "temperature_peak_node",
				    k->temp_node ? json_string(k->temp_node) : json_null());
		json_object_set_new(o, "temperature_peak_time",
				    k->temp_node ? json_integer(k->temp_time) : json_null());
		json_object_set_new(o, "power_peak_w", num_or_null(k->power, 1));
		json_object_set_new(o, "power_peak_node",
				    k->power_node ? json_string(k->power_node) : json_null());
		json_object_set_new(o, "power_peak_time",
				    k->power_node ? json_integer(k->power_time) : json_null());
		peak_json(o, "inlet_peak", "c", k->inlet, k->inlet_node, k->inlet_time);
		peak_json(o, "system_power_peak", "w", k->sys_power, k->sys_power_node,
			  k->sys_power_time);
		json_object_set_new(o, "energy_kwh", num_or_null(k->wh / 1000, 3));
		json_object_set_new(o, "energy_source",
				    source_name(k->energy_bmc, k->energy_agent)
					    ? json_string(source_name(k->energy_bmc, k->energy_agent))
					    : json_null());
		json_object_set_new(o, "cost", price > 0 ? num_or_null(k->wh / 1000 * price, 2) :
							   json_null());
		json_array_append_new(arr, o);
		total_wh += k->wh;
	}
	energy = json_pack("{s:s?, s:i, s:i, s:s, s:o, s:o, s:s?, s:o}", "source",
			   source_name(total_bmc, total_agent), "nodes_bmc", total_bmc,
			   "nodes_agent", total_agent, "method",
			   "BMC system power (the poller's sensor reads), or the agents' GPU power "
			   "(NVML) for nodes without BMC readings; trapezoids between samples at "
			   "most 10 minutes apart",
			   "total_kwh", num_or_null(total_wh / 1000, 3), "price_per_kwh",
			   price > 0 ? json_real(price) : json_null(), "currency",
			   currency[0] ? currency : NULL, "total_cost",
			   price > 0 ? num_or_null(total_wh / 1000 * price, 2) : json_null());
	json_object_set_new(res, "racks", arr);
	json_object_set_new(res, "energy", energy);
	free(racks);
	free(bmc_energy);
	return 0;
}

int report_build(json_t **out, struct store *st, int64_t since, int64_t until)
{
	struct rctx x = { .st = st, .since = since, .until = until };
	json_t *res = NULL;
	int rc;

	if (until < since)
		return kiln_fail(KILN_EINVAL, "report: the window ends before it starts");
	if ((rc = load(&x)) < 0)
		goto cleanup;
	res = json_pack("{s:I, s:I}", "since", (json_int_t)since, "until", (json_int_t)until);
	if (!res) {
		rc = kiln_fail(KILN_ERROR, "out of memory");
		goto cleanup;
	}
	if ((rc = events_section(&x, res)) < 0 || (rc = nodes_section(&x, res)) < 0 ||
	    (rc = actions_section(&x, res)) < 0 || (rc = racks_section(&x, res)) < 0)
		goto cleanup;
	*out = res;
	res = NULL;
cleanup:
	json_decref(res);
	rctx_free(&x);
	return rc;
}
