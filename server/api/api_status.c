/* SPDX-License-Identifier: Apache-2.0 */
/* Fleet status from stored state only (no BMC calls): GET /api/v1/status, GET /api/v1/hung,
 * and POST /api/v1/nodes/maintenance. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/handlers.h"
#include "api/api_status.h"
#include "health/health_facts.h"
#include "fleet/guard.h"
#include "workload/work.h"
#include "kiln/error.h"
#include "kiln/noderange.h"
#include "fleet/poller.h"

#define MAINT_REASON_MAX 500

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
	agent_gpu_summary_list_free(f->gpus, f->ngpus);
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
	double r = round(v * 10) / 10;

	/* json_real refuses inf (1.7e308 * 10): NULL would fail the node's json_pack */
	return isfinite(r) ? json_real(r) : json_null();
}

static json_t *age_or_null(int64_t t, int64_t now)
{
	return t > 0 ? json_integer(now - t > 0 ? now - t : 0) : json_null();
}

static int is_problem(const char *health, const struct fleet_state *s)
{
	return !health || strcmp(health, "ok") != 0 || (s && !s->reachable);
}

/* NVML counted the node's GPUs: with a driver mismatch or no driver it counts none, and
 * "0 of 8" would claim GPUs missing that nobody could count. */
static int gpus_counted(const struct agent_state *a)
{
	return !a->nvidia_status || strcmp(a->nvidia_status, "ok") == 0;
}

/* The BMC in a word: "ok", "busy" (it answered, without a reading), "misconfigured" (it
 * answered, but does not fit the node: several systems and no --bmc-system), "unreachable";
 * NULL before the poller wrote the node. */
static const char *bmc_word(int has_state, int reachable, int busy, int misconfigured)
{
	if (!has_state)
		return NULL;
	if (misconfigured)
		return "misconfigured";
	return !reachable ? "unreachable" : busy ? "busy" : "ok";
}

static int bmc_misconfigured(const struct fleet_state *s)
{
	return !s->reachable && s->power_error &&
	       strncmp(s->power_error, HEALTH_BMC_CONFIG_ERROR, strlen(HEALTH_BMC_CONFIG_ERROR)) == 0;
}

/* The WORK cell, in cell: the GPU processes of the stored summary (procs, an agent seen
 * age seconds ago; has_agent 0: none) and the jobs of the guard's view of Slurm ("1 job, 2
 * procs", "-"). 0 without an agent nor a scheduler (no cell). Slurm is asked only by the
 * guard's thread, never here. Both forms of GET /status write it. */
static int work_text(char *cell, size_t len, const char *name, int has_agent, const char *procs,
		     int64_t age)
{
	struct node_work w;

	if (!has_agent && guard_view_jobs(name) == GUARD_VIEW_NONE)
		return 0;
	if (has_agent)
		work_from_summary(&w, procs, age);
	else
		memset(&w, 0, sizeof(w));
	guard_view_apply(&w, name);
	work_cell(cell, len, &w);
	return 1;
}

static json_t *work_cell_json(const char *name, const struct agent_gpu_summary *g,
			      const struct agent_state *a, int64_t now)
{
	char cell[64];

	if (!work_text(cell, sizeof(cell), name, a != NULL, g ? g->gpu_processes : NULL,
		       a ? now - a->last_seen : 0))
		return json_null();
	return json_string(cell);
}

/* What will fix the node: "repairs", each reason's class as its mark says ("none", "reboot",
 * "inspection"), and "repair", the strongest of them. */
static void repairs_set(json_t *o, const json_t *reasons)
{
	enum health_repair most = HEALTH_REPAIR_NONE;
	json_t *arr = json_array(), *r;
	size_t i;

	json_array_foreach(reasons, i, r) {
		enum health_repair c = health_reason_repair(json_string_value(r));

		if (c > most)
			most = c;
		json_array_append_new(arr, json_string(health_repair_name(c)));
	}
	json_object_set_new(o, "repairs", arr);
	json_object_set_new(o, "repair", json_string(health_repair_name(most)));
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
		      "gpus_seen", a && gpus_counted(a) ? json_integer(a->gpu_count) : json_null(),
		      "gpus_expected", a ? json_integer(a->gpu_count_max) : json_null(),
		      "driver", a ? a->driver_version : NULL,
		      "cuda", a ? a->cuda_driver_version : NULL,
		      "hottest_gpu_c", real_or_null(hot),
		      "power_draw_w", real_or_null(power),
		      "bmc_reachable", s ? s->reachable : 1,
		      "hung", s && s->hung_since > 0);
	if (o)
		repairs_set(o, reasons);
	if (o && s && s->power_error)
		json_object_set_new(o, "bmc_error", json_string(s->power_error));
	if (o && s)
		json_object_set_new(o, "bmc", json_string(bmc_word(1, s->reachable,
								   poller_state_busy(s),
								   bmc_misconfigured(s))));
	if (o)
		json_object_set_new(o, "work", work_cell_json(n->name, a ? g : NULL, a, now));
	return o;
}

static void count(json_t *summary, const char *key)
{
	json_t *v = json_object_get(summary, key);

	json_object_set_new(summary, key, json_integer(json_integer_value(v) + 1));
}

/* --- the rows form: JSON text written straight from the query's rows ------------------ */

/* A buffer whose first error sticks, so that a row is written without a check per piece. */
struct jw {
	struct kiln_buf *b;
	int rc;
};

static void jw_raw(struct jw *w, const char *p, size_t n)
{
	if (w->rc == 0)
		w->rc = kiln_buf_append(w->b, p, n);
}

#define JW_LIT(w, lit) jw_raw((w), (lit), sizeof(lit) - 1)

static void jw_int(struct jw *w, int64_t v)
{
	char tmp[24], *p = tmp + sizeof(tmp);
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;

	do {
		*--p = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		*--p = '-';
	jw_raw(w, p, (size_t)(tmp + sizeof(tmp) - p));
}

/* v rounded to a tenth, as the object form's round(v * 10) / 10; null when unknown. The text
 * "k/10" parses back to the very double the object form sends (both are the nearest double
 * to k/10). */
static void jw_tenths(struct jw *w, double v)
{
	double t = round(v * 10);
	char tmp[40];
	uint64_t u;
	int n;

	if (!isfinite(t)) {
		JW_LIT(w, "null");
		return;
	}
	if (fabs(t) >= 1e15) {
		n = snprintf(tmp, sizeof(tmp), "%.17g", t / 10);
		jw_raw(w, tmp, n > 0 ? (size_t)n : 0);
		return;
	}
	u = (uint64_t)fabs(t);
	if (signbit(t))
		JW_LIT(w, "-");
	jw_int(w, (int64_t)(u / 10));
	tmp[0] = '.';
	tmp[1] = (char)('0' + u % 10);
	jw_raw(w, tmp, 2);
}

static void jw_age(struct jw *w, int64_t t, int64_t now)
{
	if (t > 0)
		jw_int(w, now - t > 0 ? now - t : 0);
	else
		JW_LIT(w, "null");
}

/* Length of the valid UTF-8 sequence of two or more bytes at p, 0 when there is none (p's
 * string ends with a NUL, which no test below reads past). */
static size_t utf8_seq(const unsigned char *p)
{
	unsigned char c = p[0], lo, hi;

	if (c < 0xC2 || c > 0xF4)
		return 0;
	if (c < 0xE0)
		return (p[1] & 0xC0) == 0x80 ? 2 : 0;
	if (c < 0xF0) {
		lo = c == 0xE0 ? 0xA0 : 0x80; /* no overlong form */
		hi = c == 0xED ? 0x9F : 0xBF; /* no surrogate */
		return p[1] >= lo && p[1] <= hi && (p[2] & 0xC0) == 0x80 ? 3 : 0;
	}
	lo = c == 0xF0 ? 0x90 : 0x80;
	hi = c == 0xF4 ? 0x8F : 0xBF; /* nothing past U+10FFFF */
	return p[1] >= lo && p[1] <= hi && (p[2] & 0xC0) == 0x80 && (p[3] & 0xC0) == 0x80 ? 4 : 0;
}

static void jw_string(struct jw *w, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	const unsigned char *p = (const unsigned char *)s, *run = p;
	char esc[6];
	size_t n;

	JW_LIT(w, "\"");
	for (;;) {
		unsigned char c = *p;

		if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
			p++;
			continue;
		}
		if (c >= 0x80 && (n = utf8_seq(p)) > 0) {
			p += n;
			continue;
		}
		jw_raw(w, (const char *)run, (size_t)(p - run));
		if (c == 0)
			break;
		switch (c) {
		case '"': JW_LIT(w, "\\\""); break;
		case '\\': JW_LIT(w, "\\\\"); break;
		case '\b': JW_LIT(w, "\\b"); break;
		case '\f': JW_LIT(w, "\\f"); break;
		case '\n': JW_LIT(w, "\\n"); break;
		case '\r': JW_LIT(w, "\\r"); break;
		case '\t': JW_LIT(w, "\\t"); break;
		default:
			if (c < 0x20) {
				memcpy(esc, "\\u00", 4);
				esc[4] = hex[c >> 4];
				esc[5] = hex[c & 0xF];
				jw_raw(w, esc, sizeof(esc));
			} else {
				JW_LIT(w, "\xEF\xBF\xBD"); /* not UTF-8: U+FFFD */
			}
		}
		run = ++p;
	}
	JW_LIT(w, "\"");
}

static void jw_string_or_null(struct jw *w, const char *s)
{
	if (s)
		jw_string(w, s);
	else
		JW_LIT(w, "null");
}

int api_json_string_append(struct kiln_buf *b, const char *s)
{
	struct jw w = { b, 0 };

	jw_string(&w, s);
	return w.rc;
}

/* The stored reasons (a JSON array the poller wrote) as the object form gives them: [] unless
 * they parse as an array. */
static void jw_reasons(struct jw *w, const char *reasons)
{
	json_t *arr;
	char *text;

	if (!reasons || strcmp(reasons, "[]") == 0) {
		JW_LIT(w, "[]");
		return;
	}
	arr = json_loads(reasons, 0, NULL);
	text = json_is_array(arr) ? json_dumps(arr, JSON_COMPACT) : NULL;
	if (text)
		jw_raw(w, text, strlen(text));
	else if (json_is_array(arr) && w->rc == 0)
		w->rc = kiln_fail(KILN_ERROR, "out of memory");
	else
		JW_LIT(w, "[]");
	free(text);
	json_decref(arr);
}

enum {
	SUM_NODES, SUM_OK, SUM_WARNING, SUM_CRITICAL, SUM_UNKNOWN, SUM_MAINTENANCE, SUM_HUNG,
	SUM_POWER_ON, SUM_POWER_OFF, SUM_POWER_UNKNOWN, SUM_COUNT
};
static const char *const sum_keys[SUM_COUNT] = {
	"nodes", "ok", "warning", "critical", "unknown", "maintenance", "hung",
	"power_on", "power_off", "power_unknown"
};

struct rows_walk {
	struct jw w;
	const struct kiln_nodelist *want;
	int only_problems;
	int64_t now;
	size_t rows;
	int64_t sum[SUM_COUNT];
};

static int row_put(void *ud, const struct status_row *r)
{
	struct rows_walk *rw = ud;
	struct jw *w = &rw->w;
	const char *health = r->health ? r->health : "unknown";
	const char *power = r->power ? r->power : "unknown";
	int problem = strcmp(health, "ok") != 0 || !r->reachable;

	if (rw->want && !api_fleet_range_has(rw->want, r->node))
		return 0;
	rw->sum[SUM_NODES]++;
	rw->sum[strcmp(health, "ok") == 0	  ? SUM_OK
		: strcmp(health, "warning") == 0  ? SUM_WARNING
		: strcmp(health, "critical") == 0 ? SUM_CRITICAL
						  : SUM_UNKNOWN]++;
	rw->sum[SUM_MAINTENANCE] += r->in_maintenance != 0;
	rw->sum[SUM_HUNG] += r->has_state && r->hung_since > 0;
	rw->sum[strcmp(power, "on") == 0    ? SUM_POWER_ON
		: strcmp(power, "off") == 0 ? SUM_POWER_OFF
					    : SUM_POWER_UNKNOWN]++;
	if (rw->only_problems && !r->in_maintenance && !problem)
		return 0;
	if (rw->rows++)
		JW_LIT(w, ",");
	JW_LIT(w, "[");
	jw_string(w, r->node);
	JW_LIT(w, ",");
	jw_string(w, power);
	JW_LIT(w, ",");
	jw_age(w, r->has_state ? r->power_time : 0, rw->now);
	JW_LIT(w, ",");
	jw_age(w, r->has_agent ? r->agent_last_seen : 0, rw->now);
	JW_LIT(w, ",");
	jw_string(w, health);
	JW_LIT(w, ",");
	jw_string_or_null(w, r->in_maintenance ? (r->maint_reason ? r->maint_reason : "") : NULL);
	JW_LIT(w, ",");
	if (r->has_agent) {
		if (r->gpu_count >= 0)
			jw_int(w, r->gpu_count);
		else
			JW_LIT(w, "null");
		JW_LIT(w, ",");
		jw_int(w, r->gpu_count_max);
		JW_LIT(w, ",");
		jw_string_or_null(w, r->driver_version);
		JW_LIT(w, ",");
		jw_string_or_null(w, r->cuda_driver_version);
	} else {
		JW_LIT(w, "null,null,null,null");
	}
	JW_LIT(w, ",");
	jw_tenths(w, r->hottest_c);
	JW_LIT(w, ",");
	jw_tenths(w, r->power_w);
	JW_LIT(w, ",");
	jw_reasons(w, r->has_state ? r->reasons : NULL);
	JW_LIT(w, ",");
	jw_string_or_null(w, bmc_word(r->has_state, r->reachable, r->bmc_busy,
				      r->bmc_misconfigured));
	JW_LIT(w, ",");
	char cell[64];

	if (work_text(cell, sizeof(cell), r->node, r->has_agent, r->gpu_processes,
		      rw->now - r->agent_last_seen))
		jw_string(w, cell);
	else
		JW_LIT(w, "null");
	JW_LIT(w, "]");
	return w->rc;
}

int api_status_rows_write(struct kiln_buf *out, struct store *st,
			  const struct kiln_nodelist *want, int only_problems, int64_t now)
{
	struct rows_walk rw = { .w = { out, 0 }, .want = want, .only_problems = only_problems,
				.now = now };
	int rc;

	JW_LIT(&rw.w, "{\"columns\":[" API_STATUS_ROW_COLUMNS "],\"rows\":[");
	if (rw.w.rc < 0)
		return rw.w.rc;
	rc = store_status_rows(st, row_put, &rw);
	if (rc < 0)
		return rc;
	JW_LIT(&rw.w, "],\"summary\":{");
	for (int i = 0; i < SUM_COUNT; i++) {
		if (i)
			JW_LIT(&rw.w, ",");
		jw_string(&rw.w, sum_keys[i]);
		JW_LIT(&rw.w, ":");
		jw_int(&rw.w, rw.sum[i]);
	}
	JW_LIT(&rw.w, "}}");
	return rw.w.rc;
}

/* Answers 200 with the rows form as it is written (no JSON tree, no second dump). */
static void status_rows_reply(struct api_ctx *c, const struct kiln_nodelist *want,
			      int only_problems)
{
	struct kiln_buf b;
	struct MHD_Response *resp;
	int rc;

	kiln_buf_init(&b, 0);
	rc = api_status_rows_write(&b, c->st, want, only_problems, time(NULL));
	if (rc == 0)
		rc = kiln_buf_append(&b, "\n", 1); /* as every other answer, for curl readers */
	if (rc < 0) {
		kiln_buf_free(&b);
		api_fail_code(c, rc, NULL);
		return;
	}
	resp = MHD_create_response_from_buffer(b.len, b.data, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		kiln_buf_free(&b);
		api_fail(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
		return;
	}
	b.data = NULL; /* the response owns it */
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	c->status = MHD_HTTP_OK;
	c->response = resp;
}

void api_status_get(struct api_ctx *c)
{
	const char *range = api_query(c, "range"), *problems = api_query(c, "problems");
	const char *form = api_query(c, "form");
	int only_problems = problems && strcmp(problems, "0") != 0 && strcmp(problems, "") != 0;
	struct kiln_nodelist want = { 0 };
	struct fleet f;
	json_t *arr = NULL, *summary = NULL;
	int64_t now = time(NULL);
	int rc;

	if (form && strcmp(form, "rows") != 0 && strcmp(form, "objects") != 0) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, "form", "form must be 'rows' or 'objects'");
		return;
	}
	if (range && api_range_expand(c, &want, range, API_RANGE_SORTED) < 0)
		return;
	if (form && strcmp(form, "rows") == 0) {
		status_rows_reply(c, range ? &want : NULL, only_problems);
		kiln_nodelist_free(&want);
		return;
	}
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
		json_t *o = node_status(gpus_of(&f, n->id), n, s, agent_of(&f, n->id), m, now);

		/* a node the summary counts is never left out of the list unsaid */
		if (!o)
			o = json_pack("{s:s, s:s}", "name", n->name, "error",
				      "kilnd could not encode this node's status");
		json_array_append_new(arr, o);
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

	if (range && api_range_expand(c, &want, range, API_RANGE_SORTED) < 0)
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
	if (api_range_expand(c, &want, range, API_RANGE_ACTION | API_RANGE_SORTED) < 0)
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
