/* Fleet status from stored state only (no BMC calls): GET /api/v1/status, GET /api/v1/hung,
 * and POST /api/v1/nodes/maintenance. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/api_internal.h"
#include "kiln/error.h"
#include "kiln/noderange.h"

#define MAINT_REASON_MAX 500

static int range_resolve(void *ud, const char *name, int is_group, struct kiln_nodelist *out)
{
	struct store *st = ud;
	int rc;

	if (is_group) {
		rc = store_group_members(st, name, out);
		return rc == KILN_ENOTFOUND ? 0 : rc;
	}
	if (strcmp(name, "all") == 0)
		return store_node_names(st, out);
	return kiln_fail(KILN_EINVAL, "'%s' is not a node range", name);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int api_fleet_range_expand(struct api_ctx *c, struct kiln_nodelist *out, const char *range)
{
	int rc = noderange_expand(out, range, range_resolve, c->st);

	if (rc < 0) {
		api_fail(c, api_status_of(rc), "range", "range: %s", kiln_error_last());
		return rc;
	}
	if (out->count > 1)
		qsort(out->names, out->count, sizeof(out->names[0]), cmp_str);
	return 0;
}

int api_fleet_range_has(const struct kiln_nodelist *l, const char *name)
{
	/* bsearch over an empty (NULL) array is undefined */
	return l->count > 0 &&
	       bsearch(&name, l->names, l->count, sizeof(l->names[0]), cmp_str) != NULL;
}

/* A node id and its entry in one of the fleet's lists; sorted by id for bsearch. */
struct id_ref {
	int64_t id;
	const void *entry;
};

/* Everything stored about the fleet, with an index by node id of each list (a linear search
 * per node was quadratic: 10,000 nodes took ~10^8 comparisons per status request). */
struct fleet {
	struct id_ref *state_ix, *agent_ix, *maint_ix;
	struct node **nodes;
	size_t nnodes;
	struct fleet_state *states;
	size_t nstates;
	struct agent_state *agents;
	size_t nagents;
	struct maintenance *maint;
	size_t nmaint;
	struct agent_gpu_summary *gpus;  /* by node id */
	size_t ngpus;
};

static void fleet_free(struct fleet *f)
{
	node_list_free(f->nodes, f->nnodes);
	fleet_state_list_free(f->states, f->nstates);
	agent_state_list_free(f->agents, f->nagents);
	maintenance_list_free(f->maint, f->nmaint);
	free(f->state_ix);
	free(f->agent_ix);
	free(f->maint_ix);
	free(f->gpus);
}

static int cmp_id(const void *a, const void *b)
{
	const struct id_ref *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* Builds *out over n entries of size sz whose node id is at offset off. */
static int index_build(struct id_ref **out, const void *list, size_t n, size_t sz, size_t off)
{
	struct id_ref *ix = malloc((n ? n : 1) * sizeof(*ix));

	if (!ix)
		return kiln_fail(KILN_ERROR, "out of memory");
	for (size_t i = 0; i < n; i++) {
		const char *e = (const char *)list + i * sz;

		memcpy(&ix[i].id, e + off, sizeof(int64_t));
		ix[i].entry = e;
	}
	qsort(ix, n, sizeof(*ix), cmp_id);
	*out = ix;
	return 0;
}

static const void *index_find(const struct id_ref *ix, size_t n, int64_t id)
{
	struct id_ref key = { id, NULL };
	const struct id_ref *hit = n ? bsearch(&key, ix, n, sizeof(*ix), cmp_id) : NULL;

	return hit ? hit->entry : NULL;
}

static int fleet_load(struct fleet *f, struct store *st)
{
	int rc;

	memset(f, 0, sizeof(*f));
	if ((rc = store_node_list(st, &f->nodes, &f->nnodes)) < 0 ||
	    (rc = store_fleet_state_list(st, &f->states, &f->nstates)) < 0 ||
	    (rc = store_agent_state_list(st, &f->agents, &f->nagents)) < 0 ||
	    (rc = store_maintenance_list(st, &f->maint, &f->nmaint)) < 0 ||
	    (rc = store_agent_gpu_summary_list(st, &f->gpus, &f->ngpus)) < 0 ||
	    (rc = index_build(&f->state_ix, f->states, f->nstates, sizeof(*f->states),
			      offsetof(struct fleet_state, node_id))) < 0 ||
	    (rc = index_build(&f->agent_ix, f->agents, f->nagents, sizeof(*f->agents),
			      offsetof(struct agent_state, node_id))) < 0 ||
	    (rc = index_build(&f->maint_ix, f->maint, f->nmaint, sizeof(*f->maint),
			      offsetof(struct maintenance, node_id))) < 0)
		return rc;
	return 0;
}

static const struct fleet_state *state_of(const struct fleet *f, int64_t id)
{
	return index_find(f->state_ix, f->nstates, id);
}

static const struct agent_state *agent_of(const struct fleet *f, int64_t id)
{
	return index_find(f->agent_ix, f->nagents, id);
}

static const struct maintenance *maint_of(const struct fleet *f, int64_t id)
{
	return index_find(f->maint_ix, f->nmaint, id);
}

static int cmp_gpu_node(const void *a, const void *b)
{
	const struct agent_gpu_summary *x = a, *y = b;

	return x->node_id < y->node_id ? -1 : x->node_id > y->node_id;
}

static const struct agent_gpu_summary *gpus_of(const struct fleet *f, int64_t id)
{
	struct agent_gpu_summary key = { .node_id = id };

	if (f->ngpus == 0) /* no agent reported: the list is NULL */
		return NULL;
	return bsearch(&key, f->gpus, f->ngpus, sizeof(*f->gpus), cmp_gpu_node);
}

static json_t *real_or_null(double v)
{
	return isnan(v) ? json_null() : json_real(round(v * 10) / 10);
}

static json_t *age_or_null(int64_t t, int64_t now)
{
	return t > 0 ? json_integer(now - t > 0 ? now - t : 0) : json_null();
}

static int is_problem(const char *health, const struct fleet_state *s)
{
	return !health || strcmp(health, "ok") != 0 || (s && !s->reachable);
}

/* One node's status object; *out_health is its health word. */
static json_t *node_status(const struct agent_gpu_summary *g, const struct node *n,
			   const struct fleet_state *s, const struct agent_state *a,
			   const struct maintenance *m, int64_t now)
{
	double hot = a && g ? g->hottest_c : NAN, power = a && g ? g->power_w : NAN;
	json_t *o, *reasons = NULL, *maint;

	if (s && s->reasons)
		reasons = json_loads(s->reasons, 0, NULL);
	if (!json_is_array(reasons)) {
		json_decref(reasons);
		reasons = json_array();
	}
	maint = m ? json_pack("{s:s?, s:s?, s:I}", "reason", m->reason, "by", m->by, "since",
			      (json_int_t)m->since)
		  : json_false();
	o = json_pack("{s:s, s:s, s:o, s:o, s:o, s:s, s:o, s:o, s:o, s:o, s:s?, s:s?, s:o, s:o,"
		      " s:b, s:b}",
		      "node", n->name,
		      "power", s ? s->power : "unknown",
		      "power_age_s", s ? age_or_null(s->power_time, now) : json_null(),
		      "agent_last_seen", a && a->last_seen ? json_integer(a->last_seen) : json_null(),
		      "agent_age_s", a ? age_or_null(a->last_seen, now) : json_null(),
		      "health", s && s->health_time ? s->health : "unknown",
		      "reasons", reasons,
		      "maintenance", maint,
		      "gpus_seen", a ? json_integer(a->gpu_count) : json_null(),
		      "gpus_expected", a ? json_integer(a->gpu_count_max) : json_null(),
		      "driver", a ? a->driver_version : NULL,
		      "cuda", a ? a->cuda_driver_version : NULL,
		      "hottest_gpu_c", real_or_null(hot),
		      "power_draw_w", real_or_null(power),
		      "bmc_reachable", s ? s->reachable : 1,
		      "hung", s && s->hung_since > 0);
	if (o && s && s->power_error)
		json_object_set_new(o, "bmc_error", json_string(s->power_error));
	return o;
}

static void count(json_t *summary, const char *key)
{
	json_t *v = json_object_get(summary, key);

	json_object_set_new(summary, key, json_integer(json_integer_value(v) + 1));
}

void api_status_get(struct api_ctx *c)
{
	const char *range = api_query(c, "range"), *problems = api_query(c, "problems");
	int only_problems = problems && strcmp(problems, "0") != 0 && strcmp(problems, "") != 0;
	struct kiln_nodelist want = { 0 };
	struct fleet f;
	json_t *arr = NULL, *summary = NULL;
	int64_t now = time(NULL);
	int rc;

	if (range && api_fleet_range_expand(c, &want, range) < 0)
		return;
	rc = fleet_load(&f, c->st);
	if (rc < 0) {
		api_fail_code(c, rc, NULL);
		goto cleanup;
	}
	arr = json_array();
	summary = json_pack("{s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i}", "nodes", 0, "ok",
			    0, "warning", 0, "critical", 0, "unknown", 0, "maintenance", 0, "hung",
			    0, "power_on", 0, "power_off", 0, "power_unknown", 0);
	for (size_t i = 0; arr && summary && i < f.nnodes; i++) {
		const struct node *n = f.nodes[i];
		const struct fleet_state *s = state_of(&f, n->id);
		const struct maintenance *m = maint_of(&f, n->id);
		const char *health = s && s->health_time ? s->health : "unknown";
		char pk[16];

		if (range && !api_fleet_range_has(&want, n->name))
			continue;
		count(summary, "nodes");
		count(summary, health);
		if (m)
			count(summary, "maintenance");
		if (s && s->hung_since > 0)
			count(summary, "hung");
		snprintf(pk, sizeof(pk), "power_%s", s ? s->power : "unknown");
		count(summary, pk);
		if (only_problems && !m && !is_problem(health, s))
			continue;
		json_array_append_new(arr, node_status(gpus_of(&f, n->id), n, s, agent_of(&f, n->id),
						       m, now));
	}
	if (arr && summary)
		api_reply(c, MHD_HTTP_OK, json_pack("{s:o, s:o}", "nodes", arr, "summary", summary));
	else
		api_fail(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
	arr = summary = NULL;
	fleet_free(&f);
cleanup:
	json_decref(arr);
	json_decref(summary);
	kiln_nodelist_free(&want);
}

void api_hung_list(struct api_ctx *c)
{
	const char *range = api_query(c, "range");
	struct kiln_nodelist want = { 0 };
	struct fleet f;
	char **names = NULL;
	size_t n = 0;
	json_t *arr;
	char *compact;
	int rc;

	if (range && api_fleet_range_expand(c, &want, range) < 0)
		return;
	rc = fleet_load(&f, c->st);
	if (rc < 0) {
		api_fail_code(c, rc, NULL);
		kiln_nodelist_free(&want);
		return;
	}
	names = calloc(f.nstates ? f.nstates : 1, sizeof(*names));
	arr = json_array();
	for (size_t i = 0; names && arr && i < f.nstates; i++) {
		const struct fleet_state *s = &f.states[i];

		/* The poller never marks a node in maintenance hung; checked again here. */
		if (s->hung_since <= 0 || !s->node || maint_of(&f, s->node_id) ||
		    strcmp(s->power, "on") != 0 || (range && !api_fleet_range_has(&want, s->node)))
			continue;
		names[n++] = s->node;
		json_array_append_new(arr, json_string(s->node));
	}
	compact = names && n ? noderange_compress(names, n) : NULL;
	if (!arr || !names)
		api_fail(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
	else
		api_reply(c, MHD_HTTP_OK,
			  json_pack("{s:o, s:s?}", "nodes", json_incref(arr), "range", compact));
	json_decref(arr);
	free(compact);
	free(names);
	fleet_free(&f);
	kiln_nodelist_free(&want);
}

void api_nodes_maintenance(struct api_ctx *c)
{
	struct kiln_nodelist want = { 0 };
	const char *range, *reason;
	json_t *on, *results = NULL, *detail;
	char *target = NULL;
	int64_t audit_id;
	int rc = 0;

	if (!api_body_require(c))
		return;
	range = json_string_value(json_object_get(c->body, "range"));
	on = json_object_get(c->body, "on");
	reason = json_string_value(json_object_get(c->body, "reason"));
	if (!range || !range[0]) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, "range", "range must be a NODERANGE string");
		return;
	}
	if (!json_is_boolean(on)) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, "on", "on must be true or false");
		return;
	}
	if (json_object_get(c->body, "reason") && !reason) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, "reason", "reason must be a string");
		return;
	}
	if (json_is_true(on) && (!reason || !reason[0])) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, "reason", "a reason is required to enter maintenance");
		return;
	}
	if (reason && strlen(reason) > MAINT_REASON_MAX) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, "reason", "reason is longer than %d bytes",
			 MAINT_REASON_MAX);
		return;
	}
	if (api_fleet_range_expand(c, &want, range) < 0)
		return;
	if (want.count == 0) {
		api_fail(c, MHD_HTTP_NOT_FOUND, "range", "range '%.100s' matches no node", range);
		goto cleanup;
	}
	results = json_array();
	/* All names must exist before anything changes. */
	for (size_t i = 0; i < want.count; i++) {
		struct node *n = NULL;

		rc = store_node_get(c->st, &n, want.names[i]);
		node_free(n);
		if (rc == KILN_ENOTFOUND) {
			api_fail(c, MHD_HTTP_NOT_FOUND, "range", "no node '%s'; nothing was changed",
				 want.names[i]);
			goto cleanup;
		}
		if (rc < 0) {
			api_fail_code(c, rc, NULL);
			goto cleanup;
		}
	}
	target = noderange_compress(want.names, want.count);
	detail = json_pack("{s:b, s:s?}", "on", json_is_true(on), "reason", reason);
	if (api_audit_begin(c, &audit_id, json_is_true(on) ? "node.maintenance.on"
							   : "node.maintenance.off",
			    target ? target : range, detail) < 0)
		goto cleanup;
	rc = store_begin(c->st);
	for (size_t i = 0; rc == 0 && i < want.count; i++) {
		struct node *n = NULL;
		struct event ev = { 0 };
		char msg[600];

		rc = store_node_get(c->st, &n, want.names[i]);
		if (rc == 0)
			rc = store_maintenance_set(c->st, n->id, json_is_true(on) ? reason : NULL,
						   c->caller.name);
		if (rc == 0) {
			snprintf(msg, sizeof(msg), "maintenance %s by %s%s%.500s",
				 json_is_true(on) ? "on" : "off", c->caller.name ? c->caller.name : "?",
				 reason ? ": " : "", reason ? reason : "");
			ev.node_id = n->id;
			ev.severity = SEV_INFO;
			ev.source = "action";
			ev.kind = "maintenance";
			ev.message = msg;
			rc = store_event_insert(c->st, &ev, NULL);
		}
		node_free(n);
		json_array_append_new(results, json_pack("{s:s, s:b}", "node", want.names[i],
							 "maintenance", json_is_true(on)));
	}
	if (rc == 0)
		rc = store_commit(c->st);
	else
		store_rollback(c->st);
	api_audit_finish(c, audit_id, rc);
	if (rc < 0) {
		api_fail_code(c, rc, NULL);
		goto cleanup;
	}
	api_reply(c, MHD_HTTP_OK, results);
	results = NULL;
cleanup:
	json_decref(results);
	free(target);
	kiln_nodelist_free(&want);
}
