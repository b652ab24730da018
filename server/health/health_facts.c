/* SPDX-License-Identifier: Apache-2.0 */
/* A node's health facts read from the store: the poller's BMC readings, the agent's latest
 * report and GPUs, the ECC history and recent Xid events. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "health/health_cut.h"
#include "health/health_facts.h"
#include "health/rules.h"
#include "kiln/error.h"

void health_sources_clear(struct health_sources *src)
{
	if (!src)
		return;
	if (src->have_agent)
		agent_state_clear(&src->agent);
	agent_gpu_list_free(src->gpus, src->ngpus);
	json_decref(src->report);
	json_decref(src->cut);
	agent_identity_clear(&src->identity);
	agent_refusal_clear(&src->refusal);
	memset(src, 0, sizeof(*src));
}

/* The Xid number of an agent event's message ("Xid 79 on GPU 3: ..."), or -1. */
static int xid_of_message(const char *msg)
{
	char *end;
	long v;

	if (!msg || strncasecmp(msg, "xid ", 4) != 0)
		return -1;
	v = strtol(msg + 4, &end, 10);
	if (end == msg + 4 || v < 0 || v > 100000)
		return -1;
	return (int)v;
}

static int health_ok(const char *h)
{
	return !h || strcasecmp(h, "ok") == 0 || strcasecmp(h, "enabled") == 0;
}

/* Appends "name (health)" to the failed PSUs' list, while it fits. */
static void psu_name_add(struct health_facts *f, const char *name, const char *health)
{
	size_t len = strlen(f->psu_failed_names);
	char item[HEALTH_NAME_LEN + 24];

	snprintf(item, sizeof(item), "%s%.64s (%.16s)", len ? ", " : "", name,
		 health ? health : "?");
	if (len + strlen(item) < sizeof(f->psu_failed_names))
		memcpy(f->psu_failed_names + len, item, strlen(item) + 1);
}

/* The PSUs of a redundancy set (its "members", the PSUs' resource ids) that are healthy. */
static int psu_set_healthy(json_t *arr, json_t *members)
{
	size_t i, j;
	json_t *s, *m;
	int n = 0;

	json_array_foreach(arr, i, s) {
		const char *id = json_string_value(json_object_get(s, "id"));

		if (!id || json_object_get(s, "redundancy"))
			continue;
		json_array_foreach(members, j, m) {
			const char *mid = json_string_value(m);

			if (mid && strcmp(mid, id) == 0 &&
			    health_ok(json_string_value(json_object_get(s, "health"))))
				n++;
		}
	}
	return n;
}

/* A redundancy set the BMC reports ({"redundancy":{"min_needed","members"}} on a psu
 * sensor): lost when the BMC says so, or when fewer of its PSUs are healthy than it needs. */
static void psu_redundancy_facts(struct health_facts *f, json_t *arr, json_t *s,
				 const char *name)
{
	json_t *red = json_object_get(s, "redundancy");
	json_t *members = json_object_get(red, "members");
	json_t *need = json_object_get(red, "min_needed");
	int healthy = -1, needed = -1, lost;

	if (json_is_integer(need) && json_integer_value(need) > 0 &&
	    json_integer_value(need) < 1000 && json_array_size(members) > 0) {
		needed = (int)json_integer_value(need);
		healthy = psu_set_healthy(arr, members);
	}
	lost = !health_ok(json_string_value(json_object_get(s, "health"))) ||
	       (needed > 0 && healthy < needed);
	/* The first set named, or the first lost one when several are reported. */
	if (f->psu_redundancy_name[0] && (f->psu_redundancy_lost || !lost))
		return;
	snprintf(f->psu_redundancy_name, sizeof(f->psu_redundancy_name), "%s", name);
	f->psu_healthy = healthy;
	f->psu_needed = needed;
	if (lost)
		f->psu_redundancy_lost = 1;
}

/* Inlet temperature and PSU state from the BMC's sensors JSON ({"sensors":[...]}). */
void health_sensor_facts(struct health_facts *f, const char *sensors_json)
{
	json_t *root = sensors_json ? json_loads(sensors_json, 0, NULL) : NULL;
	json_t *arr = json_object_get(root, "sensors"), *s;
	size_t i;

	json_array_foreach(arr, i, s) {
		const char *name = json_string_value(json_object_get(s, "name"));
		const char *kind = json_string_value(json_object_get(s, "kind"));
		const char *health = json_string_value(json_object_get(s, "health"));
		json_t *value = json_object_get(s, "value");

		if (!name || !kind)
			continue;
		if (strcmp(kind, "temperature") == 0 && strcasestr(name, "inlet") &&
		    json_is_number(value)) {
			double v = json_number_value(value);

			if (isnan(f->inlet_c) || v > f->inlet_c)
				f->inlet_c = v;
		} else if (strcmp(kind, "psu") == 0 && json_is_object(json_object_get(s, "redundancy"))) {
			psu_redundancy_facts(f, arr, s, name);
		} else if (strcmp(kind, "psu") == 0 && !health_ok(health)) {
			if (strcasestr(name, "redundan")) {
				f->psu_redundancy_lost = 1;
			} else {
				f->psu_failed++;
				psu_name_add(f, name, health);
			}
		} else if (strcasestr(name, "redundan") && !health_ok(health)) {
			f->psu_redundancy_lost = 1;
		}
	}
	health_parts_sensor_facts(f, root);
	json_decref(root);
}

static int power_code(const char *p)
{
	if (strcmp(p, "on") == 0)
		return 1;
	if (strcmp(p, "off") == 0)
		return 2;
	return 0;
}

/* The critical BMC log entries that arrived within the window (the poller's "bmc_log"
 * events, written only for critical entries read after the node's first log read), newest
 * first. */
static int bmc_log_facts(struct health_facts *f, struct store *st, int64_t node_id, int64_t since)
{
	struct event *ev = NULL;
	size_t n = 0;
	int rc;

	rc = store_event_query(st, &ev, &n, since, node_id, "bmc_log", SEV_INFO, HEALTH_BMC_LOGS_MAX);
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < n && f->nbmc_logs < HEALTH_BMC_LOGS_MAX; i++) {
		struct health_bmc_log *e = &f->bmc_logs[f->nbmc_logs++];

		e->time = ev[i].time;
		snprintf(e->message, sizeof(e->message), "%s", ev[i].message ? ev[i].message : "");
	}
	event_list_free(ev, n);
	return 0;
}

static int xid_facts(struct health_facts *f, struct store *st, int64_t node_id, int64_t since)
{
	struct event *ev = NULL;
	size_t n = 0;
	int rc;

	rc = store_event_query(st, &ev, &n, since, node_id, "xid", SEV_INFO, 256);
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < n && f->nxids < HEALTH_XIDS_MAX; i++) {
		int x = xid_of_message(ev[i].message);

		if (x >= 0 && health_xid_critical(x))
			f->xids[f->nxids++] = x;
	}
	event_list_free(ev, n);
	return 0;
}

/* The per-GPU memory facts from the stored GPU rows (their strings stay in the rows). */
static void gpu_facts(struct health_facts *f, const struct agent_gpu *gpus, size_t n)
{
	f->ngpus = 0;
	for (size_t i = 0; i < n && f->ngpus < HEALTH_GPUS_MAX; i++) {
		const struct agent_gpu *g = &gpus[i];

		f->gpus[f->ngpus++] = (struct health_gpu){
			.index = g->index,
			.pci_bus_id = g->pci_bus_id,
			.ecc_volatile = g->ecc_volatile_uncorrected,
			.ecc_aggregate = g->ecc_aggregate_uncorrected,
			.ecc_rose_at = g->ecc_rose_at,
			.retired_pages_pending = g->retired_pages_pending,
			.remap_pending = g->remapped_rows_pending,
			.remap_failure = g->remapped_rows_failure,
			.remapped_rows = g->remapped_rows_uncorrected,
		};
	}
}

/* Whether a GPU of the report holds memory for processes: its "processes" list when it
 * has one, else memory in use. */
static int gpu_held(json_t *o)
{
	json_t *used = json_object_get(o, "memory_used_bytes"), *procs;

	if (!json_is_integer(used) || json_integer_value(used) <= 0)
		return 0;
	procs = json_object_get(o, "processes");
	return json_is_array(procs) ? json_array_size(procs) > 0 : 1;
}

/* Parses the node's latest report into src->report (once; NULL when there is none). */
static int report_load(struct health_sources *src, struct store *st, int64_t node_id)
{
	struct agent_state a = { 0 };
	int rc;

	if (src->report)
		return 0;
	if (!src->agent.report) {
		rc = store_agent_state_get(st, &a, node_id, 1);
		if (rc == KILN_ENOTFOUND) {
			kiln_error_clear();
			return 0;
		}
		if (rc < 0)
			return rc;
		src->agent.report = a.report;
		a.report = NULL;
		agent_state_clear(&a);
	}
	src->report = src->agent.report ? json_loads(src->agent.report, 0, NULL) : NULL;
	return 0;
}

static int starved_facts(struct health_facts *f, struct health_sources *src, struct store *st,
			 int64_t node_id, const struct health_config *cfg)
{
	double iowait = src->agent.cpu_iowait_pct, avg = src->agent.gpu_utilization_avg_pct;
	int held = 0, rc;
	size_t i;
	json_t *o;

	f->starved_now = 0;
	if (isnan(avg) || isnan(iowait))
		return 0;
	/* Which GPUs hold memory matters only when utilization and iowait already say starved;
	 * then the GPUs' memory and process lists are read from the latest report. */
	if (health_starved_sample(avg, 1, iowait, cfg)) {
		if ((rc = report_load(src, st, node_id)) < 0)
			return rc;
		json_array_foreach(json_object_get(src->report, "gpus"), i, o) {
			if ((held = gpu_held(o)))
				break;
		}
	}
	f->starved_now = health_starved_sample(avg, held, iowait, cfg);
	return 0;
}

int health_facts_gather(struct health_facts *f, struct health_sources *src, struct store *st,
			const struct node *n, const struct fleet_state *state, int maintenance,
			int64_t now, const struct health_config *cfg)
{
	json_t *iv;
	int rc;

	memset(src, 0, sizeof(*src));
	health_facts_init(f, now);
	f->has_bmc = n->bmc_protocol != BMC_NONE;
	f->maintenance = maintenance;
	if (state) {
		f->bmc_reachable = state->reachable;
		f->bmc_down_since = state->down_since;
		f->credentials_rejected =
			state->power_error &&
			strncmp(state->power_error, "credentials rejected", 20) == 0;
		if (!state->reachable && state->power_error &&
		    strncmp(state->power_error, HEALTH_BMC_CONFIG_ERROR,
			    strlen(HEALTH_BMC_CONFIG_ERROR)) == 0)
			f->bmc_config_error = state->power_error + strlen(HEALTH_BMC_CONFIG_ERROR);
		f->power = power_code(state->power);
		f->power_time = state->power_time;
		if (f->power == 1)
			f->power_on_since = state->power_changed;
		f->boot_started = state->boot_started;
		f->boot_state = state->boot_state;
		f->boot_last_s = state->boot_last_s;
		f->starved_since = state->starved_since;
		f->power_off_by = state->power_off_by;
		f->power_off_time = state->power_off_time;
		health_sensor_facts(f, state->sensors);
		/* The poller's mark of an answer that said "busy" (see poller.c, busy_record). */
		if (state->reachable && state->power_error &&
		    strncmp(state->power_error, "bmc busy: ", 10) == 0) {
			f->bmc_busy = 1;
			f->bmc_busy_detail = state->power_error + 10;
		}
	}
	rc = store_agent_identity_get(st, &src->identity, n->id);
	if (rc < 0 && rc != KILN_ENOTFOUND)
		return rc;
	kiln_error_clear(); /* a node deleted meanwhile: nothing to say of it */
	f->identity_field = src->identity.mismatch ? src->identity.mismatch_field : NULL;
	if (src->identity.mismatch && !f->identity_field)
		f->identity_field = "the host identity";
	f->identity_message = src->identity.mismatch;
	f->identity_since = src->identity.mismatch_since;
	f->identity_last = src->identity.mismatch_last;
	f->identity_node = src->identity.node;
	f->identity_elsewhere = src->identity.elsewhere_node;
	f->identity_elsewhere_last = src->identity.elsewhere_last;
	if (f->has_bmc && (rc = bmc_log_facts(f, st, n->id, now - cfg->bmc_log_window_s)) < 0)
		return rc;
	if ((rc = store_agent_refusal_get(st, &src->refusal, n->id)) < 0)
		return rc;
	f->refused_reason = src->refusal.reason;
	f->refused_last = src->refusal.last_at;
	rc = store_agent_state_get(st, &src->agent, n->id, 0);
	if (rc == KILN_ENOTFOUND)
		return 0;
	if (rc < 0)
		return rc;
	src->have_agent = 1;
	f->agent_last_seen = src->agent.last_seen;
	f->rejected_fields = src->agent.rejected_fields;
	if (src->agent.health_facts) {
		/* Cut out of the report at ingest: no report to parse. */
		if (src->agent.interval_s > 0)
			f->agent_interval_s = src->agent.interval_s;
	} else {
		if ((rc = report_load(src, st, n->id)) < 0)
			return rc;
		iv = json_object_get(src->report, "interval_s");
		if (json_is_integer(iv) && json_integer_value(iv) > 0)
			f->agent_interval_s = json_integer_value(iv);
		iv = json_object_get(json_object_get(src->report, "host"), "cpu_iowait_pct");
		src->agent.cpu_iowait_pct = json_is_number(iv) ? json_number_value(iv) : NAN;
	}
	health_cut_facts(f, src->agent.health_cut, &src->cut);
	f->boot_id = src->agent.boot_id;
	f->gpus_seen = src->agent.gpu_count;
	f->gpus_expected = src->agent.gpu_count_max;
	f->nvidia_status = src->agent.nvidia_status;
	f->driver_version = src->agent.driver_version;
	f->kernel_module_version = src->agent.kernel_module_version;
	rc = store_agent_gpus_get(st, &src->gpus, &src->ngpus, n->id);
	if (rc < 0)
		return rc;
	f->hottest_gpu_c = src->agent.gpu_hottest_c;
	for (size_t i = 0; i < src->ngpus; i++)
		if (src->gpus[i].remapped_rows_failure == 1)
			f->remap_failure = 1;
	gpu_facts(f, src->gpus, src->ngpus);
	rc = store_fleet_ecc_window(st, &f->ecc_first, &f->ecc_last, n->id,
				    now - cfg->ecc_window_s);
	if (rc < 0)
		return rc;
	rc = xid_facts(f, st, n->id, now - cfg->xid_window_s);
	if (rc < 0)
		return rc;
	return starved_facts(f, src, st, n->id, cfg);
}
