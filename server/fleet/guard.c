/* SPDX-License-Identifier: Apache-2.0 */
/* The guard of disruptive actions (see guard.h): the work on a node, refusals, forced
 * actions, drains in Slurm and their resume, and the Slurm view remediation waits on. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fleet/guard.h"
#include "kiln/error.h"
#include "kiln/log.h"
#include "fleet/live_call.h"

/* Slurm's view of a node is asked again for remediation after this long. */
#define GUARD_CACHE_S 60
/* A resume waits at most this long for the node's agent. */
#define GUARD_WATCH_MAX_S (7 * 86400)

enum task_kind { TASK_HUNG, TASK_RESUME, TASK_ASK };

struct task {
	struct task *next;
	enum task_kind kind;
	int64_t node_id;
	char name[128];
	char reason[200];
	int64_t after;        /* TASK_RESUME: the agent must report after this */
	int64_t until;        /* TASK_RESUME: given up after this */
};

struct cached {
	int64_t node_id;
	int64_t asked_at;
	int failed;
	struct sched_node sn;
};

struct guard {
	struct guard_options opt;
	pthread_t thread;
	int started;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int quitting;
	struct task *queue;          /* new tasks */
	struct task *watches;        /* the thread's: resumes waiting for an agent */
	struct cached *cache;        /* under lock */
	size_t ncache, capcache;
};

/* The cluster view (guard_view_jobs): one kilnd, one guard, so module-wide. */
static pthread_mutex_t view_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sched_count *view;
static size_t nview;
static int view_on;          /* a scheduler is configured */
static int64_t view_at;      /* the last view's time, 0: none yet */
static int64_t view_s = 30;  /* its period */
static const char *view_names; /* [scheduler] node_name: the view holds Slurm names */
static int view_failed;

static int64_t now_s(void)
{
	return (int64_t)time(NULL);
}

static int sched_on(const struct guard *g)
{
	return g && g->opt.sched.type != SCHED_NONE;
}

/* --- the work on a node -------------------------------------------------------------- */

/*
 * The processes of the node's latest report. They count only while the report is fresh:
 * younger than [work] report_fresh and than two of the node's report intervals (a hung node
 * is silent for more than [health] hung_intervals of them). For an operator (hung_excepts)
 * never on a node kiln flags hung, whose last report says what ran before it hung; kilnd's
 * own cycle of that node waits while the report is fresh all the same.
 */
static void procs_gather(struct guard *g, struct store *st, const struct node *n,
			 struct node_work *w, int hung_excepts)
{
	struct agent_state a = { 0 };
	struct fleet_state fs = { 0 };
	json_t *report = NULL;
	int64_t fresh_s = g->opt.fresh_s, interval;

	if (store_agent_state_get(st, &a, n->id, 1) < 0) {
		kiln_error_clear();
		return;
	}
	interval = a.interval_s > 0 ? a.interval_s : g->opt.agent_interval_s;
	if (interval > 0 && 2 * interval < fresh_s)
		fresh_s = 2 * interval;
	if (hung_excepts && store_fleet_state_get(st, &fs, n->id) == 0) {
		if (fs.hung_since > 0)
			fresh_s = -1;
		fleet_state_clear(&fs);
	}
	kiln_error_clear();
	if (a.report)
		report = json_loads(a.report, 0, NULL);
	work_procs_from_report(w, report, now_s() - a.last_seen, fresh_s, g->opt.ignore);
	json_decref(report);
	agent_state_clear(&a);
}

static void sched_gather(struct guard *g, const char *name, struct node_work *w)
{
	int rc;

	if (!sched_on(g))
		return;
	w->sched_asked = 1;
	kiln_error_clear();
	rc = sched_node_query(&g->opt.sched, &w->sched, name);
	if (rc == KILN_ENOTFOUND) {
		/* a node Slurm does not know runs no Slurm job */
		w->sched_unknown_node = 1;
		memset(&w->sched, 0, sizeof(w->sched));
	} else if (rc < 0) {
		w->sched_failed = 1;
		snprintf(w->sched_error, sizeof(w->sched_error), "slurm: %s", kiln_error_last());
	}
}

void guard_node_work(struct guard *g, struct store *st, const struct node *n,
		     struct node_work *out)
{
	memset(out, 0, sizeof(*out));
	procs_gather(g, st, n, out, 1);
	sched_gather(g, n->name, out);
}

int guard_remediation_work(struct guard *g, struct store *st, const struct node *n, char *msg,
			   size_t len)
{
	struct node_work w;

	msg[0] = '\0';
	if (!g)
		return 0;
	memset(&w, 0, sizeof(w));
	procs_gather(g, st, n, &w, 0);
	return work_blocks(&w, msg, len);
}

/* --- guarded calls ------------------------------------------------------------------- */

/* "power.cycle" -> "power cycle" */
static void action_words(char *buf, size_t len, const char *action)
{
	snprintf(buf, len, "%s", action ? action : "action");
	for (char *p = buf; *p; p++)
		if (*p == '.')
			*p = ' ';
}

static void audit_outcome(struct store *st, const struct live_call *call, const char *node,
			  const char *detail, const char *outcome)
{
	int64_t id = 0;

	if (store_audit_begin(st, &id, call->audit_actor ? call->audit_actor : "?",
			      call->audit_action, node, detail ? detail : call->audit_detail) < 0 ||
	    store_audit_finish(st, id, outcome) < 0)
		log_warn("guard: %s: audit: %s", node, kiln_error_last());
}

/* The call's detail with more members, as JSON text (caller frees); NULL on ENOMEM. */
static char *detail_with(const struct live_call *call, const char *k1, json_t *v1,
			 const char *k2, json_t *v2)
{
	json_t *d = call->audit_detail ? json_loads(call->audit_detail, 0, NULL) : NULL;
	char *text;

	if (!d)
		d = json_object();
	json_object_set_new(d, k1, v1);
	if (k2)
		json_object_set_new(d, k2, v2);
	text = d ? json_dumps(d, JSON_COMPACT) : NULL;
	json_decref(d);
	return text;
}

/* Node n is not acted on: its answer says why (and hint, what to do), an audit row too. */
static void node_refuse(struct store *st, struct live_call *call, struct live_node *n,
			const char *outcome, const char *msg, const char *hint)
{
	char *detail = detail_with(call, "work", json_string(msg), NULL, NULL);
	char text[1400], answer[1600];

	snprintf(text, sizeof(text), "%s: %s", outcome, msg);
	snprintf(answer, sizeof(answer), "%s%s%s%s", text, hint ? " (" : "", hint ? hint : "",
		 hint ? ")" : "");
	json_object_set_new(n->out, "error", json_string(answer));
	json_object_set_new(n->out, "work", json_string(msg));
	audit_outcome(st, call, n->name, detail, text);
	free(detail);
	n->targeted = 0;
}

/* Per node of a guarded call, the guard's part. */
struct pending {
	int waiting;          /* drained (or draining), waiting for its work to end */
	int kiln_drained;     /* kiln set the drain: kiln undoes it */
};

/* Resumes a node kiln drained, if the reason is still kiln's (a person may have taken it). */
static void resume_if_ours(struct guard *g, const char *name)
{
	struct sched_node sn;

	kiln_error_clear();
	if (sched_node_query(&g->opt.sched, &sn, name) < 0) {
		log_warn("guard: %s: cannot ask slurm before resuming: %s", name,
			 kiln_error_last());
		return;
	}
	if (!sn.drain || strncmp(sn.reason, SCHED_TAG, strlen(SCHED_TAG)) != 0) {
		log_info("guard: %s: left as slurm has it (%s, reason '%s')", name, sn.state,
			 sn.reason);
		return;
	}
	if (sched_node_resume(&g->opt.sched, name) < 0)
		log_warn("guard: %s: resume: %s", name, kiln_error_last());
	else
		log_info("guard: %s: resumed in slurm", name);
}

int guard_scheduler_on(void)
{
	int on;

	pthread_mutex_lock(&view_lock);
	on = view_on;
	pthread_mutex_unlock(&view_lock);
	return on;
}

int guard_drain(struct guard *g, const char *name, const struct node_work *w,
		const char *reason)
{
	if (!sched_on(g) || w->sched_unknown_node || w->sched.drain || w->sched.down ||
	    (w->sched.not_responding && !w->fresh) || w->sched.njobs_all == 0)
		return 0; /* someone's drain stays theirs */
	kiln_error_clear();
	if (sched_node_drain(&g->opt.sched, name, reason) < 0) {
		log_warn("guard: %s: drain: %s", name, kiln_error_last());
		return -1;
	}
	log_info("guard: %s: drained in slurm ('%s')", name, reason);
	return 1;
}

void guard_resume(struct guard *g, const char *name)
{
	if (sched_on(g))
		resume_if_ours(g, name);
}

int64_t guard_poll_ms(const struct guard *g)
{
	return g ? g->opt.poll_ms : 5000;
}

/* Drains node n with kiln's reason; 1 when kiln set the drain, 0 when it was drained. */
static int drain_node(struct guard *g, const struct live_call *call, const struct live_node *n,
		      const struct node_work *w)
{
	char words[64], reason[200];

	action_words(words, sizeof(words), call->audit_action);
	snprintf(reason, sizeof(reason), "%s %s by %s", SCHED_TAG, words,
		 call->audit_actor ? call->audit_actor : "?");
	return guard_drain(g, n->name, w, reason);
}

/* Sleeps up to ms, waking early when *stop is set. */
static void nap(int64_t ms, const atomic_int *stop)
{
	while (ms > 0 && !atomic_load(stop)) {
		int64_t step = ms < 100 ? ms : 100;
		struct timespec ts = { .tv_sec = 0, .tv_nsec = step * 1000000 };

		nanosleep(&ts, NULL);
		ms -= step;
	}
}

/* The first look: refuse, force or start a drain. Returns how many nodes wait. */
static size_t first_look(struct guard *g, struct store *st, struct live_call *call,
			 struct pending *pend)
{
	size_t waiting = 0;

	for (size_t i = 0; i < call->count; i++) {
		struct live_node *n = &call->nodes[i];
		struct node_work w;
		char msg[1024];
		int rc;

		if (!n->targeted || n->finished)
			continue;
		guard_node_work(g, st, n->node, &w);
		if (!work_blocks(&w, msg, sizeof(msg)))
			continue;
		if (call->force) {
			free(n->audit_detail);
			n->audit_detail = detail_with(call, "forced", json_true(), "work",
						      json_string(msg));
			json_object_set_new(n->out, "forced", json_true());
			json_object_set_new(n->out, "work", json_string(msg));
			continue;
		}
		if (!call->drain || w.sched_failed) {
			node_refuse(st, call, n, "refused: work running", msg,
				    call->drain	     ? "--force acts anyway"
				    : sched_on(g) ? "--drain drains it in Slurm and waits for it; "
						    "--force acts now"
						  : "--force acts now (no scheduler is configured for "
						    "--drain)");
			continue;
		}
		rc = drain_node(g, call, n, &w);
		if (rc < 0) {
			node_refuse(st, call, n, "refused: drain failed", kiln_error_last(), NULL);
			continue;
		}
		pend[i].waiting = 1;
		pend[i].kiln_drained = rc == 1;
		n->drained = rc == 1;
		waiting++;
	}
	return waiting;
}

void guard_call_run(struct guard *g, struct live_call *call, const atomic_int *stop)
{
	struct pending *pend = calloc(call->count ? call->count : 1, sizeof(*pend));
	struct store *st = NULL;
	int64_t deadline = now_s() + (call->drain_timeout_s > 0 ? call->drain_timeout_s : 3600);
	size_t waiting;

	if (!pend || store_open(&st, g->opt.db_path) < 0) {
		for (size_t i = 0; i < call->count; i++)
			if (call->nodes[i].targeted) {
				json_object_set_new(call->nodes[i].out, "error",
						    json_string("the work on the node could not be "
								"checked; nothing sent"));
				call->nodes[i].targeted = 0;
			}
		goto cleanup;
	}
	waiting = first_look(g, st, call, pend);
	while (waiting > 0 && !atomic_load(stop) && now_s() < deadline) {
		nap(g->opt.poll_ms, stop);
		for (size_t i = 0; i < call->count && !atomic_load(stop); i++) {
			struct node_work w;
			char msg[1024];

			if (!pend[i].waiting)
				continue;
			guard_node_work(g, st, call->nodes[i].node, &w);
			/* a scheduler that cannot be asked now is asked again at the next look */
			if (!w.sched_failed && !work_blocks(&w, msg, sizeof(msg))) {
				pend[i].waiting = 0;
				waiting--;
			}
		}
	}
	for (size_t i = 0; i < call->count; i++) {
		struct live_node *n = &call->nodes[i];
		struct node_work w;
		char msg[1024], text[1100];

		if (!pend[i].waiting)
			continue;
		if (atomic_load(stop)) {
			json_object_set_new(n->out, "error",
					    json_string("kilnd is stopping; not sent"));
			n->targeted = 0;
		} else {
			guard_node_work(g, st, n->node, &w);
			work_blocks(&w, msg, sizeof(msg));
			snprintf(text, sizeof(text), "still running after %" PRId64 "s: %s",
				 call->drain_timeout_s, msg);
			node_refuse(st, call, n, "drain timed out", text, NULL);
		}
		if (pend[i].kiln_drained) {
			resume_if_ours(g, n->name);
			n->drained = 0;
		}
	}
cleanup:
	store_close(st);
	free(pend);
}

/* --- the guard's thread: hung drains, resumes, Slurm's view for remediation ----------- */

static void task_push(struct guard *g, struct task *t)
{
	pthread_mutex_lock(&g->lock);
	t->next = g->queue;
	g->queue = t;
	pthread_cond_signal(&g->cond);
	pthread_mutex_unlock(&g->lock);
}

static struct task *task_new(enum task_kind kind, int64_t node_id, const char *name)
{
	struct task *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->kind = kind;
	t->node_id = node_id;
	snprintf(t->name, sizeof(t->name), "%s", name);
	return t;
}

void guard_resume_after(struct guard *g, int64_t node_id, const char *name, int64_t after)
{
	struct task *t;

	if (!sched_on(g) || !(t = task_new(TASK_RESUME, node_id, name)))
		return;
	t->after = after;
	t->until = after + GUARD_WATCH_MAX_S;
	task_push(g, t);
}

void guard_hung(struct guard *g, int64_t node_id, const char *name, const char *reason)
{
	struct task *t;

	if (!sched_on(g) || !g->opt.drain_hung || !(t = task_new(TASK_HUNG, node_id, name)))
		return;
	snprintf(t->reason, sizeof(t->reason), "%s", reason);
	task_push(g, t);
}

static struct cached *cache_find(struct guard *g, int64_t node_id)
{
	for (size_t i = 0; i < g->ncache; i++)
		if (g->cache[i].node_id == node_id)
			return &g->cache[i];
	return NULL;
}

static void cache_put(struct guard *g, int64_t node_id, const struct sched_node *sn, int failed)
{
	struct cached *c;

	pthread_mutex_lock(&g->lock);
	c = cache_find(g, node_id);
	if (!c && g->ncache == g->capcache) {
		size_t cap = g->capcache ? g->capcache * 2 : 16;
		struct cached *more = realloc(g->cache, cap * sizeof(*more));

		if (more) {
			g->cache = more;
			g->capcache = cap;
		}
	}
	if (!c && g->ncache < g->capcache)
		c = &g->cache[g->ncache++];
	if (c) {
		c->node_id = node_id;
		c->asked_at = now_s();
		c->failed = failed;
		if (sn)
			c->sn = *sn;
	}
	pthread_mutex_unlock(&g->lock);
}

int guard_remediation_allowed(struct guard *g, int64_t node_id, const char *name, char *msg,
			      size_t len)
{
	struct cached c = { 0 };
	int have = 0;
	struct task *t;

	msg[0] = '\0';
	if (!sched_on(g))
		return 1;
	pthread_mutex_lock(&g->lock);
	if (cache_find(g, node_id)) {
		c = *cache_find(g, node_id);
		have = now_s() - c.asked_at <= GUARD_CACHE_S;
	}
	pthread_mutex_unlock(&g->lock);
	/* a hung node: its agent is silent, so Slurm's not responding is its death too */
	if (have && !c.failed && (c.sn.down || c.sn.not_responding || c.sn.njobs_all == 0))
		return 1;
	if (!have)
		snprintf(msg, len, "slurm not asked yet");
	else if (c.failed)
		snprintf(msg, len, "slurm could not be asked");
	else
		sched_jobs_format(msg, len, &c.sn);
	if ((t = task_new(TASK_ASK, node_id, name)))
		task_push(g, t);
	return 0;
}

static void do_ask(struct guard *g, const struct task *t)
{
	struct sched_node sn;
	int rc;

	kiln_error_clear();
	rc = sched_node_query(&g->opt.sched, &sn, t->name);
	if (rc == KILN_ENOTFOUND) {
		memset(&sn, 0, sizeof(sn));
		rc = 0;
	}
	if (rc < 0)
		log_warn("guard: %s: %s", t->name, kiln_error_last());
	cache_put(g, t->node_id, rc == 0 ? &sn : NULL, rc < 0);
}

/* A hung node: drained with a kiln reason unless someone drained it already. */
static void do_hung(struct guard *g, struct task *t)
{
	struct sched_node sn;
	char reason[240];

	kiln_error_clear();
	if (sched_node_query(&g->opt.sched, &sn, t->name) < 0) {
		log_warn("guard: %s: hung, but slurm cannot be asked: %s", t->name,
			 kiln_error_last());
		return;
	}
	cache_put(g, t->node_id, &sn, 0);
	if (sn.drain)
		return;
	snprintf(reason, sizeof(reason), "%s %s", SCHED_TAG, t->reason);
	if (sched_node_drain(&g->opt.sched, t->name, reason) < 0) {
		log_warn("guard: %s: drain: %s", t->name, kiln_error_last());
		return;
	}
	log_info("guard: %s: hung: drained in slurm", t->name);
	guard_resume_after(g, t->node_id, t->name, now_s());
}

/* 1 when the watch is over (resumed, or no longer kiln's to resume). */
static int do_watch(struct guard *g, struct store *st, struct task *t)
{
	struct agent_state a = { 0 };
	int64_t seen;

	if (now_s() > t->until)
		return 1;
	if (store_agent_state_get(st, &a, t->node_id, 0) < 0) {
		kiln_error_clear();
		return 0;
	}
	seen = a.last_seen;
	agent_state_clear(&a);
	if (seen <= t->after)
		return 0;
	resume_if_ours(g, t->name);
	return 1;
}

static int cmp_view(const void *key, const void *elem)
{
	return strcmp(key, ((const struct sched_count *)elem)->name);
}

int guard_view_jobs(const char *name)
{
	const struct sched_count *c;
	char slurm[256];
	int n;

	pthread_mutex_lock(&view_lock);
	sched_node_name(slurm, sizeof(slurm), view_names, name);
	if (!view_on)
		n = GUARD_VIEW_NONE;
	else if (view_failed || view_at == 0 || now_s() - view_at > 3 * view_s)
		n = GUARD_VIEW_UNKNOWN;
	else {
		c = nview ? bsearch(slurm, view, nview, sizeof(*view), cmp_view) : NULL;
		n = c ? c->njobs : 0;
	}
	pthread_mutex_unlock(&view_lock);
	return n;
}

void guard_view_apply(struct node_work *w, const char *name)
{
	int n = guard_view_jobs(name);

	if (n == GUARD_VIEW_NONE)
		return;
	w->sched_asked = 1;
	if (n == GUARD_VIEW_UNKNOWN) {
		w->sched_failed = 1;
		snprintf(w->sched_error, sizeof(w->sched_error), "slurm: no recent view");
		return;
	}
	w->sched.njobs_all = (size_t)n;
}

/* One squeue over the cluster into the view. */
static void view_refresh(struct guard *g)
{
	struct sched_count *list = NULL;
	size_t n = 0;
	int rc;

	kiln_error_clear();
	rc = sched_fleet_jobs(&g->opt.sched, &list, &n);
	if (rc < 0)
		log_warn("guard: slurm's jobs: %s", kiln_error_last());
	pthread_mutex_lock(&view_lock);
	if (rc == 0) {
		free(view);
		view = list;
		nview = n;
		view_at = now_s();
	}
	view_failed = rc < 0;
	pthread_mutex_unlock(&view_lock);
}

static void *guard_main(void *arg)
{
	struct guard *g = arg;
	struct store *st = NULL;
	int64_t viewed = 0;

	if (store_open(&st, g->opt.db_path) < 0)
		log_warn("guard: store: %s", kiln_error_last());
	for (;;) {
		struct task *q;
		struct timespec until;

		pthread_mutex_lock(&g->lock);
		if (!g->queue && !g->quitting) {
			clock_gettime(CLOCK_REALTIME, &until);
			until.tv_sec += 1;
			pthread_cond_timedwait(&g->cond, &g->lock, &until);
		}
		q = g->queue;
		g->queue = NULL;
		if (g->quitting) {
			pthread_mutex_unlock(&g->lock);
			while (q) {
				struct task *t = q;

				q = t->next;
				free(t);
			}
			break;
		}
		pthread_mutex_unlock(&g->lock);
		while (q) {
			struct task *t = q;

			q = t->next;
			if (t->kind == TASK_RESUME) {
				t->next = g->watches;
				g->watches = t;
				continue;
			}
			if (t->kind == TASK_HUNG)
				do_hung(g, t);
			else
				do_ask(g, t);
			free(t);
		}
		if (sched_on(g) && now_s() - viewed >= g->opt.view_s) {
			viewed = now_s();
			view_refresh(g);
		}
		for (struct task **pp = &g->watches; st && *pp;) {
			struct task *t = *pp;

			if (do_watch(g, st, t)) {
				*pp = t->next;
				free(t);
			} else {
				pp = &t->next;
			}
		}
	}
	store_close(st);
	return NULL;
}

int guard_start(struct guard **out, const struct guard_options *opt)
{
	struct guard *g = calloc(1, sizeof(*g));

	if (!g)
		return kiln_fail(KILN_ERROR, "out of memory");
	g->opt = *opt;
	if (g->opt.poll_ms <= 0)
		g->opt.poll_ms = 5000;
	if (g->opt.view_s <= 0)
		g->opt.view_s = 30;
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->cond, NULL);
	if (pthread_create(&g->thread, NULL, guard_main, g) != 0) {
		guard_free(g);
		return kiln_fail(KILN_ERROR, "guard: cannot start its thread");
	}
	g->started = 1;
	pthread_mutex_lock(&view_lock);
	view_on = sched_on(g);
	view_s = g->opt.view_s;
	view_names = g->opt.sched.node_name;
	pthread_mutex_unlock(&view_lock);
	*out = g;
	return 0;
}

void guard_free(struct guard *g)
{
	if (!g)
		return;
	if (g->started) {
		pthread_mutex_lock(&g->lock);
		g->quitting = 1;
		pthread_cond_signal(&g->cond);
		pthread_mutex_unlock(&g->lock);
		pthread_join(g->thread, NULL);
	}
	while (g->watches) {
		struct task *t = g->watches;

		g->watches = t->next;
		free(t);
	}
	free(g->cache);
	pthread_mutex_lock(&view_lock);
	free(view);
	view = NULL;
	nview = 0;
	view_on = 0;
	view_at = 0;
	pthread_mutex_unlock(&view_lock);
	pthread_mutex_destroy(&g->lock);
	pthread_cond_destroy(&g->cond);
	free(g);
}
