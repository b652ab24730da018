/* SPDX-License-Identifier: Apache-2.0 */
/* Live BMC calls off the HTTP threads: results per node as they finish, audit outcomes,
 * readings handed to the poller, paced batches, and the answer written as it grows. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cluster/cluster.h"
#include "fleet/guard.h"
#include "cluster/handoff.h"
#include "kiln/buf.h"
#include "kiln/error.h"
#include "kiln/log.h"
#include "fleet/live.h"
#include "cluster/node_lock.h"
#include "fleet/poller.h"

/* The most an answer may hold unread (a client that stopped reading). */
#define LIVE_OUT_MAX (256u << 20)

struct live_call_private {
	struct live_call_private *next;   /* the live module's active calls */
	struct live_call *call;
	atomic_int refs;                  /* the live module's and the reader's */
	/* the live thread's */
	int batch;                        /* the batch running, 0 before the first */
	size_t pending;                   /* submitted, not yet back */
	int64_t next_batch_ms;            /* > 0: the next batch starts then */
	int submitted_all;                /* every batch was submitted */
	size_t next_write;                /* LIVE_ARRAY: the first node not yet written */
	int opened;                       /* LIVE_ARRAY: its '[' is written */
	int guarded;                      /* its guard ran (or it needs none) */
	/* under lock */
	pthread_mutex_t lock;
	struct kiln_buf out;
	size_t out_off;                   /* bytes of out already read */
	int complete;                     /* out holds the whole answer */
	int failed;                       /* the answer could not be completed */
	int waiting;                      /* the reader is suspended */
	int reader_gone;
	struct live_waker waker;
};

/* One node's result, from an engine thread (or, handed to another instance, from the
 * handoff thread) to the live thread. */
struct live_done {
	struct live_done *next;
	struct live *l;
	struct live_call_private *p;
	size_t index;
	int rc;
	char error[512];
	json_t *data;
	int remote;                       /* its owner ran it and finished its audit row */
	int not_run;                      /* no instance ran it */
	char ran_on[CLUSTER_ID_LEN + 1];
};

/* A node handed to another instance, waiting for its result (the live thread's). */
struct live_handed {
	struct live_handed *next;
	int64_t call_id;
	struct live_call_private *p;
	size_t index;
	int64_t since_ms;
	int64_t retry_ms;                 /* the next try to cancel it, once it waited too long */
};

/* A handed call's result as the handoff thread read it (to the live thread, under lock). */
struct live_remote {
	struct live_remote *next;
	int64_t call_id;
	int rc;
	char error[512];
	char *data;
	char ran_on[CLUSTER_ID_LEN + 1];
};

struct live {
	struct bmc_engine *engine;
	struct store *st;
	pthread_t thread;
	int started;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int stopping;                     /* live_stop asked: no new call */
	int stopped;                      /* the thread ended every answer */
	pthread_cond_t stopped_cond;
	int quitting;                     /* live_free: the thread ends */
	struct live_done *done_head;
	struct live_call_private *starting; /* calls handed over, not yet begun */
	struct live_call_private *active;   /* the live thread's */
	struct poller *poller;            /* the live thread's; NULL once the answers are cut */
	struct guard *guard;
	atomic_int guard_stop;            /* live_stop: guards waiting on a drain give up */
	int guards_running;               /* guarded calls on their guard's thread (under lock) */
	struct cluster *cluster;
	int shared;                       /* several instances: handoffs and claims */
	struct live_handed *handed;       /* the live thread's */
	struct live_remote *remote_head;  /* under lock */
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct live_call *live_call_new(size_t count)
{
	struct live_call *call = calloc(1, sizeof(*call));

	if (!call)
		return NULL;
	call->nodes = calloc(count ? count : 1, sizeof(*call->nodes));
	call->priv = calloc(1, sizeof(*call->priv));
	if (!call->nodes || !call->priv) {
		free(call->nodes);
		free(call->priv);
		free(call);
		return NULL;
	}
	call->count = count;
	call->batches = 1;
	call->priv->call = call;
	atomic_init(&call->priv->refs, 0);
	pthread_mutex_init(&call->priv->lock, NULL);
	kiln_buf_init(&call->priv->out, LIVE_OUT_MAX);
	return call;
}

void live_call_free(struct live_call *call)
{
	if (!call)
		return;
	for (size_t i = 0; i < call->count; i++) {
		struct live_node *n = &call->nodes[i];

		if (n->claimed)
			node_lock_release(n->node->id);
		free(n->name);
		node_free(n->node);
		secret_free_string(n->password);
		free(n->audit_detail);
		json_decref(n->out);
	}
	free(call->nodes);
	free(call->media_url);
	free(call->audit_action);
	free(call->audit_actor);
	free(call->audit_detail);
	if (call->priv) {
		kiln_buf_free(&call->priv->out);
		pthread_mutex_destroy(&call->priv->lock);
		free(call->priv);
	}
	free(call);
}

static void call_unref(struct live_call_private *p)
{
	if (atomic_fetch_sub(&p->refs, 1) == 1)
		live_call_free(p->call);
}

/* --- the answer ---------------------------------------------------------------------- */

/* Appends node i's object (and what the form puts around it); under p->lock. */
static int out_node_locked(struct live_call_private *p, size_t i, int first)
{
	struct live_call *call = p->call;
	char *text = json_dumps(call->nodes[i].out, JSON_COMPACT);
	int rc;

	if (!text)
		return kiln_fail(KILN_ERROR, "out of memory");
	if (call->form == LIVE_NDJSON)
		rc = kiln_buf_printf(&p->out, "%s\n", text);
	else
		rc = kiln_buf_printf(&p->out, "%s%s", first ? "" : ",", text);
	free(text);
	call->nodes[i].written = 1;
	return rc;
}

/*
 * Writes what became final into the answer and wakes the reader: NDJSON writes node i (a
 * finished node) at once, the array form every finished node in order up to the first one
 * still waiting. last: the call is over, the answer ends. i (size_t)-1: none.
 */
static void out_write(struct live_call_private *p, size_t i, int last)
{
	struct live_call *call = p->call;
	int rc = 0;

	pthread_mutex_lock(&p->lock);
	if (p->reader_gone || p->failed || p->complete)
		goto unlock;
	if (call->form == LIVE_NDJSON) {
		if (i != (size_t)-1 && !call->nodes[i].written)
			rc = out_node_locked(p, i, 0);
	} else {
		if (!p->opened) {
			rc = kiln_buf_puts(&p->out, "[");
			p->opened = 1;
		}
		while (rc == 0 && p->next_write < call->count &&
		       call->nodes[p->next_write].finished) {
			rc = out_node_locked(p, p->next_write, p->next_write == 0);
			p->next_write++;
		}
		if (rc == 0 && last)
			rc = kiln_buf_puts(&p->out, "]\n");
	}
	if (rc < 0)
		p->failed = 1;
	else if (last)
		p->complete = 1;
	if (p->waiting && (p->failed || p->complete || p->out.len > p->out_off)) {
		p->waiting = 0;
		p->waker.resume(p->waker.ud);
	}
unlock:
	pthread_mutex_unlock(&p->lock);
}

long live_call_read(struct live_call *call, char *buf, size_t max)
{
	struct live_call_private *p = call->priv;
	long n = 0;

	pthread_mutex_lock(&p->lock);
	if (p->failed) {
		n = LIVE_READ_ERROR;
	} else if (p->out.len > p->out_off) {
		size_t avail = p->out.len - p->out_off;

		if (avail > max)
			avail = max;
		memcpy(buf, p->out.data + p->out_off, avail);
		p->out_off += avail;
		if (p->out_off == p->out.len) {
			kiln_buf_reset(&p->out);
			p->out_off = 0;
		}
		n = (long)avail;
	} else if (p->complete) {
		n = LIVE_READ_END;
	} else {
		p->waiting = 1;
		p->waker.suspend(p->waker.ud);
	}
	pthread_mutex_unlock(&p->lock);
	return n;
}

void live_call_release(struct live_call *call)
{
	struct live_call_private *p = call->priv;

	pthread_mutex_lock(&p->lock);
	p->reader_gone = 1;
	p->waiting = 0;
	kiln_buf_free(&p->out);
	pthread_mutex_unlock(&p->lock);
	call_unref(p);
}

/* --- results ------------------------------------------------------------------------- */

static void on_engine_done(void *ud, const struct bmc_result *res)
{
	struct live_done *d = ud;
	struct live *l = d->l;

	d->rc = res->rc;
	snprintf(d->error, sizeof(d->error), "%s", res->error);
	d->data = res->data ? json_incref(res->data) : NULL;
	pthread_mutex_lock(&l->lock);
	d->next = l->done_head;
	l->done_head = d;
	pthread_cond_signal(&l->cond);
	pthread_mutex_unlock(&l->lock);
}

static void node_error(struct live_node *n, const char *msg)
{
	json_object_set_new(n->out, "error", json_string(msg));
}

/* Ends a node: its busy mark goes, its answer is final. */
static void node_end(struct live_node *n)
{
	if (n->claimed) {
		node_lock_release(n->node->id);
		n->claimed = 0;
	}
	n->finished = 1;
}

/* Node i's result: merged into its answer, its audit outcome, its reading, its busy mark.
 * A result its owner sent back (remote) has its audit row and reading written there. */
static void result_apply(struct live *l, struct live_call_private *p, struct live_done *d)
{
	struct live_call *call = p->call;
	struct live_node *n = &call->nodes[d->index];
	const char *key;
	json_t *v;

	if (d->data)
		json_object_foreach(d->data, key, v)
			json_object_set(n->out, key, v);
	if (d->rc < 0)
		node_error(n, d->error[0] ? d->error : kiln_error_name(d->rc));
	if (l->shared && !d->not_run)
		json_object_set_new(n->out, "ran_on",
				    json_string(d->remote ? d->ran_on : cluster_self(l->cluster)));
	if (call->audit_action && !d->remote) {
		char outcome[600];

		if (d->rc == 0)
			snprintf(outcome, sizeof(outcome), "ok");
		else
			snprintf(outcome, sizeof(outcome), "failed: %s",
				 d->error[0] ? d->error : kiln_error_name(d->rc));
		if (store_audit_finish(l->st, n->audit_id, outcome) < 0)
			log_warn("live: %s: audit: %s", n->name, kiln_error_last());
	}
	/* this action's claim: done, nobody else takes it over */
	if (!d->remote && n->call_id > 0 && store_node_call_delete(l->st, n->call_id) < 0)
		log_warn("live: %s: %s", n->name, kiln_error_last());
	/* What the BMC said goes to the poller, which stores it as a reading of its own. */
	if (d->rc == 0 && d->data && l->poller && !d->remote)
		poller_observe(l->poller, n->node->id, call->op.kind, d->data);
	/* Kiln's drain ends once the node's agent reports after the action; after a failed
	 * action the node stays drained for a person to look at. */
	if (n->drained && d->rc == 0)
		guard_resume_after(l->guard, n->node->id, n->name, (int64_t)time(NULL));
	else if (n->drained)
		json_object_set_new(n->out, "slurm", json_string("left drained: the action failed"));
	node_end(n);
}

/* Node i, handed to its owner: waits for the result the handoff thread brings back. */
static int node_hand(struct live *l, struct live_call_private *p, size_t i)
{
	struct live_handed *w = calloc(1, sizeof(*w));

	if (!w)
		return kiln_fail(KILN_ERROR, "out of memory");
	w->call_id = p->call->nodes[i].call_id;
	w->p = p;
	w->index = i;
	w->since_ms = now_ms();
	w->next = l->handed;
	l->handed = w;
	p->pending++;
	return 0;
}

/* Submits node i, whose audit row (for an action) is written; 0 when it went out. */
static int node_submit(struct live *l, struct live_call_private *p, size_t i)
{
	struct live_call *call = p->call;
	struct live_node *n = &call->nodes[i];
	struct live_done *d;
	int rc;

	if (n->remote) {
		if ((rc = node_hand(l, p, i)) == 0)
			return 0;
		goto fail_row;
	}
	if (!(d = calloc(1, sizeof(*d)))) {
		rc = kiln_fail(KILN_ERROR, "out of memory");
		goto fail_row;
	}
	d->l = l;
	d->p = p;
	d->index = i;
	kiln_error_clear();
	rc = bmc_submit(l->engine, &n->target, &call->op, on_engine_done, d);
	if (rc < 0) {
		free(d);
		goto fail_row;
	}
	p->pending++;
	return 0;
fail_row:
	node_error(n, kiln_error_last()[0] ? kiln_error_last() : "not sent");
	if (call->audit_action)
		store_audit_finish(l->st, n->audit_id, "failed: not sent");
	if (n->call_id > 0)
		store_node_call_delete(l->st, n->call_id);
	return rc;
}

/* Which instance runs each node of the batch: this one, or (remote) the node's owner. */
static int batch_route(struct live *l, struct live_call_private *p)
{
	struct live_call *call = p->call;
	int remote = 0;

	for (size_t i = 0; l->shared && i < call->count; i++) {
		struct live_node *n = &call->nodes[i];
		if (n->finished || !n->targeted || n->batch != p->batch)
			continue;
		n->remote = cluster_owner_of(l->cluster, n->node, n->owner) != 1;
		remote |= n->remote;
	}
	return remote;
}

/* A batch's audit rows, claims and handed rows, committed together before any of its BMC
 * calls (one fsync, not one a node); a node whose rows are not written is not called: its
 * answer is final. */
static void batch_write(struct live *l, struct live_call_private *p, int remote)
{
	struct live_call *call = p->call;
	int ok = store_begin(l->st) == 0;

	for (size_t i = 0; ok && i < call->count; i++) {
		struct live_node *n = &call->nodes[i];

		if (n->finished || !n->targeted || n->batch != p->batch)
			continue;
		if (call->audit_action &&
		    store_audit_begin(l->st, &n->audit_id, call->audit_actor ? call->audit_actor : "?",
				      call->audit_action, n->name,
				      n->audit_detail ? n->audit_detail : call->audit_detail) < 0)
			ok = 0;
		if (ok && (n->remote || call->audit_action) &&
		    handoff_row(l->st, l->cluster, n->node->id, n->name, &call->op, n->audit_id,
				n->remote ? n->owner : NULL, &n->call_id) < 0)
			ok = 0;
	}
	if (ok && remote && store_notify(l->st, HANDOFF_CALLS_CHANNEL, "") < 0)
		ok = 0;
	if (ok && store_commit(l->st) == 0)
		return;
	log_warn("live: %s: %s", call->audit_action ? "audit" : "handoff", kiln_error_last());
	store_rollback(l->st);
	for (size_t i = 0; i < call->count; i++) {
		struct live_node *n = &call->nodes[i];

		if (n->finished || !n->targeted || n->batch != p->batch)
			continue;
		n->call_id = 0;
		node_error(n, call->audit_action ? "audit log unavailable; nothing sent"
						 : "the store is unavailable; nothing sent");
		node_end(n);
		out_write(p, i, 0);
	}
}

/* Starts the next batch; the nodes that cannot go out are final at once. */
static void batch_start(struct live *l, struct live_call_private *p)
{
	struct live_call *call = p->call;

	int remote;

	p->batch++;
	p->next_batch_ms = 0;
	remote = batch_route(l, p);
	if (call->audit_action || remote)
		batch_write(l, p, remote);
	for (size_t i = 0; i < call->count; i++) {
		struct live_node *n = &call->nodes[i];

		if (n->finished || !n->targeted || n->batch != p->batch)
			continue;
		if (node_submit(l, p, i) < 0) {
			node_end(n);
			out_write(p, i, 0);
		}
	}
	if (p->batch >= call->batches)
		p->submitted_all = 1;
}

/* After a result or a batch: the next batch is due, or the call is over. 1 when over. */
static int call_advance(struct live *l, struct live_call_private *p)
{
	struct live_call *call = p->call;

	while (p->pending == 0 && !p->submitted_all && p->next_batch_ms == 0) {
		if (p->batch > 0 && call->interval_s > 0) {
			p->next_batch_ms = now_ms() + call->interval_s * 1000;
			return 0;
		}
		batch_start(l, p);
	}
	if (p->pending > 0 || !p->submitted_all)
		return 0;
	out_write(p, (size_t)-1, 1);
	return 1;
}

static void active_remove(struct live *l, struct live_call_private *p)
{
	for (struct live_call_private **pp = &l->active; *pp; pp = &(*pp)->next) {
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	}
	call_unref(p);
}

struct guard_run {
	struct live *l;
	struct live_call_private *p;
};

/* A guarded call's guard, on a thread of its own (a drain waits up to its timeout); the
 * call then comes back to the live thread as if just handed over. */
static void *guard_thread(void *arg)
{
	struct guard_run *r = arg;
	struct live *l = r->l;
	struct live_call_private *p = r->p;

	free(r);
	guard_call_run(l->guard, p->call, &l->guard_stop);
	pthread_mutex_lock(&l->lock);
	p->guarded = 1;
	p->next = l->starting;
	l->starting = p;
	l->guards_running--;
	pthread_cond_broadcast(&l->cond);
	pthread_mutex_unlock(&l->lock);
	return NULL;
}

/* Starts the call's guard; 0 when it runs (the call comes back later). */
static int guard_begin(struct live *l, struct live_call_private *p)
{
	struct guard_run *r = malloc(sizeof(*r));
	pthread_attr_t attr;
	pthread_t t;
	int rc;

	if (!r)
		return KILN_ERROR;
	r->l = l;
	r->p = p;
	pthread_mutex_lock(&l->lock);
	l->guards_running++;
	pthread_mutex_unlock(&l->lock);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&t, &attr, guard_thread, r);
	pthread_attr_destroy(&attr);
	if (rc == 0)
		return 0;
	free(r);
	pthread_mutex_lock(&l->lock);
	l->guards_running--;
	pthread_mutex_unlock(&l->lock);
	return KILN_ERROR;
}

/* A call handed over: a guarded one goes to its guard first; the nodes answered already
 * (no such node, known down, busy, refused) are written at once, then its first batch
 * starts. */
static void call_begin(struct live *l, struct live_call_private *p)
{
	struct live_call *call = p->call;

	if (call->guard && l->guard && !p->guarded) {
		if (guard_begin(l, p) == 0)
			return;
		for (size_t i = 0; i < call->count; i++) {
			if (!call->nodes[i].targeted)
				continue;
			node_error(&call->nodes[i], "the work on the node could not be checked; "
						    "nothing sent");
			call->nodes[i].targeted = 0;
		}
	}
	for (size_t i = 0; i < call->count; i++) {
		if (call->nodes[i].targeted)
			continue;
		node_end(&call->nodes[i]);
		out_write(p, i, 0);
	}
	p->next = l->active;
	l->active = p;
	if (call_advance(l, p))
		active_remove(l, p);
}

/* Forgets node index of p handed to its owner; 1 when it was waiting. */
static int handed_drop(struct live *l, struct live_call_private *p, size_t index)
{
	for (struct live_handed **pp = &l->handed; *pp; pp = &(*pp)->next) {
		struct live_handed *w = *pp;

		if (w->p == p && w->index == index) {
			*pp = w->next;
			free(w);
			return 1;
		}
	}
	return 0;
}

/* The longest a handed node waits for an instance to take it: its owner's lease running
 * out and the next owner's first scans. */
static int64_t handed_limit_ms(struct live *l)
{
	return 2 * cluster_lease_ms(l->cluster) + 10000;
}

/* The results the handoff thread brought (remote) and the handed nodes no instance took
 * in time (cancelled here, not sent): as results, for the live thread's usual path. */
static struct live_done *handed_results(struct live *l, struct live_remote *remote,
					struct live_done *done)
{
	int64_t now = now_ms(), limit = handed_limit_ms(l);

	while (remote) {
		struct live_remote *r = remote;
		struct live_handed **pp = &l->handed;

		remote = r->next;
		while (*pp && (*pp)->call_id != r->call_id)
			pp = &(*pp)->next;
		if (*pp) {
			struct live_handed *w = *pp;
			struct live_done *d = calloc(1, sizeof(*d));

			if (d) {
				*pp = w->next;
				d->l = l;
				d->p = w->p;
				d->index = w->index;
				d->rc = r->rc;
				d->remote = 1;
				snprintf(d->error, sizeof(d->error), "%s", r->error);
				snprintf(d->ran_on, sizeof(d->ran_on), "%s", r->ran_on);
				d->data = r->data ? json_loads(r->data, 0, NULL) : NULL;
				d->next = done;
				done = d;
				free(w);
			}
		}
		free(r->data);
		free(r);
	}
	for (struct live_handed **pp = &l->handed; *pp;) {
		struct live_handed *w = *pp;
		struct live_done *d;
		int moved = 0;

		if (now - w->since_ms < limit || now < w->retry_ms) {
			pp = &w->next;
			continue;
		}
		w->retry_ms = now + 5000;
		if (store_node_call_move(l->st, w->call_id, NODE_CALL_PENDING, NULL,
					 NODE_CALL_CANCELLED, cluster_self(l->cluster), &moved) < 0 ||
		    !moved || !(d = calloc(1, sizeof(*d)))) {
			pp = &w->next; /* an owner took it: its result comes */
			continue;
		}
		store_node_call_delete(l->st, w->call_id);
		*pp = w->next;
		d->l = l;
		d->p = w->p;
		d->index = w->index;
		d->rc = KILN_ETIMEOUT;
		snprintf(d->error, sizeof(d->error),
			 "not sent: no instance owning the node took the call within %llds",
			 (long long)(limit / 1000));
		d->not_run = 1;
		d->next = done;
		done = d;
		free(w);
	}
	return done;
}

/* Ends one call's answer now (kilnd stops): the nodes still out are answered as not known,
 * those not sent as not sent; no batch starts after. Results still to come only finish
 * their audit rows. */
static void call_cut(struct live *l, struct live_call_private *p)
{
	struct live_call *call = p->call;

	for (size_t i = 0; i < call->count; i++) {
		struct live_node *n = &call->nodes[i];
		int out = n->targeted && n->batch <= p->batch;

		if (n->finished)
			continue;
		if (!n->targeted) {
			node_end(n);
			out_write(p, i, 0);
			continue;
		}
		node_error(n, out ? "kilnd is stopping; the outcome is not known (see the audit "
				    "log)"
				  : "kilnd is stopping; not sent");
		if (out && n->remote && handed_drop(l, p, i)) {
			node_end(n); /* its result would come to a kilnd that stopped */
			p->pending--;
		} else if (out) {
			n->finished = 1; /* its busy mark goes when its result comes */
		} else {
			node_end(n);
		}
		out_write(p, i, 0);
	}
	p->submitted_all = 1;
	p->next_batch_ms = 0;
	out_write(p, (size_t)-1, 1);
}

/* On the live thread, once live_stop asked: every answer ends, no connection stays
 * suspended. Calls handed over but not begun are answered without a BMC call. */
static void stop_answers(struct live *l, struct live_call_private *starting)
{
	while (starting) {
		struct live_call_private *p = starting;

		starting = p->next;
		p->next = l->active;
		l->active = p;
	}
	for (struct live_call_private *p = l->active, *next; p; p = next) {
		next = p->next;
		call_cut(l, p);
		if (p->pending == 0)
			active_remove(l, p);
	}
}

static void *live_main(void *arg)
{
	struct live *l = arg;

	for (;;) {
		struct live_done *done;
		struct live_call_private *starting;
		int64_t due = 0, ms = now_ms();
		int stop_now;

		struct live_remote *remote;

		for (struct live_call_private *p = l->active; p; p = p->next)
			if (p->next_batch_ms > 0 && (due == 0 || p->next_batch_ms < due))
				due = p->next_batch_ms;
		if (l->handed && (due == 0 || due > ms + 1000))
			due = ms + 1000; /* a handed node that waits too long is cancelled */
		pthread_mutex_lock(&l->lock);
		if (!l->done_head && !l->remote_head && !l->starting && !l->quitting &&
		    (l->stopped || !l->stopping) &&
		    (due == 0 || due > ms)) {
			if (due > 0) {
				struct timespec until = { .tv_sec = due / 1000,
							  .tv_nsec = (due % 1000) * 1000000 };

				pthread_cond_timedwait(&l->cond, &l->lock, &until);
			} else {
				pthread_cond_wait(&l->cond, &l->lock);
			}
		}
		done = l->done_head;
		l->done_head = NULL;
		remote = l->remote_head;
		l->remote_head = NULL;
		starting = l->starting;
		l->starting = NULL;
		stop_now = l->stopping && !l->stopped;
		if (l->quitting && !done && !starting) {
			pthread_mutex_unlock(&l->lock);
			handed_results(l, remote, NULL); /* frees them: no call waits any more */
			break;
		}
		pthread_mutex_unlock(&l->lock);
		done = handed_results(l, remote, done);

		if (stop_now) {
			struct live_call_private *back;

			/* the guards end their waits; their calls come back to be answered */
			pthread_mutex_lock(&l->lock);
			while (l->guards_running > 0)
				pthread_cond_wait(&l->cond, &l->lock);
			back = l->starting;
			l->starting = NULL;
			pthread_mutex_unlock(&l->lock);
			while (back) {
				struct live_call_private *p = back;

				back = p->next;
				p->next = starting;
				starting = p;
			}
			l->poller = NULL; /* live_stop returns before the poller stops */
			stop_answers(l, starting);
			starting = NULL;
			pthread_mutex_lock(&l->lock);
			l->stopped = 1;
			pthread_cond_broadcast(&l->stopped_cond);
			pthread_mutex_unlock(&l->lock);
		}
		while (starting) {
			struct live_call_private *p = starting;

			starting = p->next;
			call_begin(l, p);
		}
		/* The outcomes in one transaction, committed before the answers say them. */
		if (done) {
			int began = store_begin(l->st) == 0;

			for (struct live_done *d = done; d; d = d->next)
				result_apply(l, d->p, d);
			if (began && store_commit(l->st) < 0) {
				log_warn("live: audit: %s", kiln_error_last());
				store_rollback(l->st);
			}
		}
		while (done) {
			struct live_done *d = done;
			struct live_call_private *p = d->p;

			done = d->next;
			out_write(p, d->index, 0);
			p->pending--;
			json_decref(d->data);
			free(d);
			if (call_advance(l, p))
				active_remove(l, p);
		}
		ms = now_ms();
		for (struct live_call_private *p = l->active, *next; p; p = next) {
			next = p->next;
			if (p->next_batch_ms > 0 && p->next_batch_ms <= ms) {
				batch_start(l, p);
				if (call_advance(l, p))
					active_remove(l, p);
			}
		}
	}
	return NULL;
}

void live_handoff_result(void *ud, const struct node_call_row *row)
{
	struct live *l = ud;
	struct live_remote *r = calloc(1, sizeof(*r));

	if (!r)
		return; /* the node waits until its handed call is cancelled */
	r->call_id = row->id;
	r->rc = row->rc;
	snprintf(r->error, sizeof(r->error), "%s", row->error ? row->error : "");
	snprintf(r->ran_on, sizeof(r->ran_on), "%s", row->claimed_by ? row->claimed_by : "");
	r->data = row->data ? strdup(row->data) : NULL;
	pthread_mutex_lock(&l->lock);
	r->next = l->remote_head;
	l->remote_head = r;
	pthread_cond_signal(&l->cond);
	pthread_mutex_unlock(&l->lock);
}

int live_call_start(struct live *l, struct live_call *call, const struct live_waker *w)
{
	struct live_call_private *p = call->priv;

	pthread_mutex_lock(&l->lock);
	if (l->stopping) {
		pthread_mutex_unlock(&l->lock);
		return kiln_fail(KILN_EBUSY, "kilnd is stopping");
	}
	p->waker = *w;
	atomic_store(&p->refs, 2);
	p->next = l->starting;
	l->starting = p;
	pthread_cond_signal(&l->cond);
	pthread_mutex_unlock(&l->lock);
	return 0;
}

int live_start(struct live **out, const struct live_options *opt)
{
	struct live *l = calloc(1, sizeof(*l));
	int rc;

	if (!l)
		return kiln_fail(KILN_ERROR, "out of memory");
	l->engine = opt->engine;
	l->poller = opt->poller;
	l->guard = opt->guard;
	l->cluster = opt->cluster;
	l->shared = cluster_shared(opt->cluster);
	atomic_init(&l->guard_stop, 0);
	pthread_mutex_init(&l->lock, NULL);
	pthread_cond_init(&l->cond, NULL);
	pthread_cond_init(&l->stopped_cond, NULL);
	if ((rc = store_open(&l->st, opt->db_path)) < 0)
		goto fail;
	if (pthread_create(&l->thread, NULL, live_main, l) != 0) {
		rc = kiln_fail(KILN_ERROR, "live calls: cannot start their thread");
		goto fail;
	}
	l->started = 1;
	*out = l;
	return 0;
fail:
	live_free(l);
	return rc;
}

void live_stop(struct live *l)
{
	if (!l || !l->started)
		return;
	atomic_store(&l->guard_stop, 1);
	pthread_mutex_lock(&l->lock);
	l->stopping = 1;
	pthread_cond_broadcast(&l->cond);
	while (!l->stopped)
		pthread_cond_wait(&l->stopped_cond, &l->lock);
	pthread_mutex_unlock(&l->lock);
}

void live_free(struct live *l)
{
	if (!l)
		return;
	if (l->started) {
		pthread_mutex_lock(&l->lock);
		l->quitting = 1;
		pthread_cond_signal(&l->cond);
		pthread_mutex_unlock(&l->lock);
		pthread_join(l->thread, NULL);
	}
	while (l->handed) {
		struct live_handed *w = l->handed;

		l->handed = w->next;
		free(w);
	}
	while (l->remote_head) {
		struct live_remote *r = l->remote_head;

		l->remote_head = r->next;
		free(r->data);
		free(r);
	}
	while (l->active) {
		struct live_call_private *p = l->active;

		l->active = p->next;
		call_unref(p);
	}
	store_close(l->st);
	pthread_mutex_destroy(&l->lock);
	pthread_cond_destroy(&l->cond);
	pthread_cond_destroy(&l->stopped_cond);
	free(l);
}
