/* SPDX-License-Identifier: Apache-2.0 */
/* The BMC engine: per-node queues (one operation at a time per BMC, in order), a global
 * fan-out limit, per-BMC driver state cached by node id, dispatch to the protocol drivers. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon/secret.h"
#include "bmc/bmc.h"
#include "bmc/ipmi/ipmi.h"
#include "bmc/redfish/redfish.h"
#include "kiln/buf.h"
#include "kiln/error.h"
#include "store/store.h"

#define BMC_BUCKETS 4096
#define READY_OPERATOR 0   /* ready list of nodes whose next job is not a background read */
#define READY_BACKGROUND 1

struct bmc_job {
	struct bmc_job *next;
	struct bmc_node *node;
	struct bmc_op op;
	struct bmc_target target;   /* strings owned by the job */
	char *key;                  /* a Redfish target's target_key(), or NULL */
	bmc_done_fn done;
	void *ud;
	struct bmc_engine *engine;
};

struct bmc_node {
	struct bmc_node *hnext;     /* hash chain */
	struct bmc_node *ready_next[2]; /* in the engine's ready lists (READY_*) */
	int64_t node_id;
	char *key;                  /* what the driver state was built from (under the lock) */
	char *rejected_key;         /* a key whose credentials the BMC rejected: not tried again
				     * when a job with stale credentials came between (under
				     * the lock) */
	struct redfish_bmc *rf;     /* held by the Redfish loop node_loop() names */
	struct bmc_job *head, *tail;
	int busy;                   /* jobs running: 1, or 2 when one overtook a background read */
	struct bmc_job *background; /* the background read among them, or NULL */
	int ready[2];               /* listed there (a node may wait in both: see pump) */
	int slow;                   /* its last operation timed out: a batch starts it first */
};

struct bmc_engine {
	struct bmc_engine_config cfg;
	pthread_mutex_t lock;
	/* Redfish loops, one thread each; a node's BMC stays on one (node_loop) */
	struct redfish *rf[BMC_REDFISH_LOOPS_MAX];
	int nrf;
	struct bmc_node *buckets[BMC_BUCKETS];
	/* nodes whose next job may start: an operator's first, then the poller's reads */
	struct bmc_node *ready_head[2], *ready_tail[2];
	int running;
	int stopping;
};

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

static void target_free(struct bmc_target *t)
{
	free((char *)t->node_name);
	free((char *)t->host);
	free((char *)t->user);
	if (t->password) {
		explicit_bzero((char *)t->password, strlen(t->password));
		free((char *)t->password);
	}
	free((char *)t->tls_ca_file);
	free((char *)t->tls_fingerprint);
	free((char *)t->ipmi_privilege);
	free((char *)t->ipmi_workarounds);
	free((char *)t->bmc_system);
}

static int target_copy(struct bmc_target *dst, const struct bmc_target *src)
{
	*dst = *src;
	dst->node_name = dup_or_null(src->node_name);
	dst->host = dup_or_null(src->host);
	dst->user = dup_or_null(src->user);
	dst->password = dup_or_null(src->password);
	dst->tls_ca_file = dup_or_null(src->tls_ca_file);
	dst->tls_fingerprint = dup_or_null(src->tls_fingerprint);
	dst->ipmi_privilege = dup_or_null(src->ipmi_privilege);
	dst->ipmi_workarounds = dup_or_null(src->ipmi_workarounds);
	dst->bmc_system = dup_or_null(src->bmc_system);
	if ((src->node_name && !dst->node_name) || (src->host && !dst->host) ||
	    (src->user && !dst->user) || (src->password && !dst->password)) {
		target_free(dst);
		return kiln_fail(KILN_ERROR, "out of memory");
	}
	return 0;
}

/* Everything the driver state depends on; a change rebuilds it (and drops the session). The
 * node keeps it for its life: the password is in it as a keyed hash, not in clear. */
static char *target_key(const struct bmc_target *t)
{
	struct kiln_buf b;
	char pw[65];

	secret_fingerprint(pw, t->password);
	kiln_buf_init(&b, 0);
	kiln_buf_printf(&b, "%d|%s|%d|%s|%s|%d|%s|%s|%s|%lld", t->protocol, t->host ? t->host : "",
			t->port, t->user ? t->user : "", pw,
			t->tls_mode, t->tls_ca_file ? t->tls_ca_file : "",
			t->tls_fingerprint ? t->tls_fingerprint : "",
			t->bmc_system ? t->bmc_system : "", (long long)t->credentials_version);
	return kiln_buf_steal(&b);
}

static void key_free(char *key)
{
	if (key) {
		explicit_bzero(key, strlen(key));
		free(key);
	}
}

static void job_free(struct bmc_job *j)
{
	if (!j)
		return;
	key_free(j->key);
	free((char *)j->op.media_url);
	target_free(&j->target);
	free(j);
}

static size_t node_bucket(int64_t id)
{
	return (size_t)((uint64_t)id * 0x9E3779B97F4A7C15ull >> 52) % BMC_BUCKETS;
}

/* Under the lock: the node's state, or NULL when it never had an operation. */
static struct bmc_node *node_find(struct bmc_engine *e, int64_t id)
{
	for (struct bmc_node *n = e->buckets[node_bucket(id)]; n; n = n->hnext)
		if (n->node_id == id)
			return n;
	return NULL;
}

static struct bmc_node *node_get(struct bmc_engine *e, int64_t id)
{
	size_t h = node_bucket(id);
	struct bmc_node *found = node_find(e, id);
	if (found)
		return found;
	struct bmc_node *n = calloc(1, sizeof(*n));
	if (!n)
		return NULL;
	n->node_id = id;
	n->hnext = e->buckets[h];
	e->buckets[h] = n;
	return n;
}

/* Under the lock: n's next job may start now: n is idle, or its next job may start beside
 * the running background read on the Redfish BMC state both would use (same key: whichever
 * starts first builds it, the other finds it); the driver holds the read for it. */
static int node_may_start(const struct bmc_node *n)
{
	const struct bmc_job *j = n->head;
	if (!j)
		return 0;
	if (!n->busy)
		return 1;
	return n->busy == 1 && n->background && !j->op.background && j->key &&
	       strcmp(j->key, n->background->key) == 0;
}

/* Under the lock: lists n as ready when its next job may start, in the list of that job's
 * kind (it may still be listed in the other one from before: pump skips what cannot start). */
static void ready_push(struct bmc_engine *e, struct bmc_node *n)
{
	if (!node_may_start(n))
		return;
	int q = n->head->op.background ? READY_BACKGROUND : READY_OPERATOR;
	if (n->ready[q])
		return;
	n->ready[q] = 1;
	n->ready_next[q] = NULL;
	if (e->ready_tail[q])
		e->ready_tail[q]->ready_next[q] = n;
	else
		e->ready_head[q] = n;
	e->ready_tail[q] = n;
}

/* Under the lock: the next listed node, an operator's job before the poller's; NULL when none. */
static struct bmc_node *ready_pop(struct bmc_engine *e)
{
	int q = e->ready_head[READY_OPERATOR] ? READY_OPERATOR : READY_BACKGROUND;
	struct bmc_node *n = e->ready_head[q];
	if (!n)
		return NULL;
	e->ready_head[q] = n->ready_next[q];
	if (!e->ready_head[q])
		e->ready_tail[q] = NULL;
	n->ready[q] = 0;
	return n;
}

/* Under the lock: queues j on n. An operator's job goes before the node's queued background
 * reads (they keep their order among themselves); anything else at the end. */
static void node_queue(struct bmc_node *n, struct bmc_job *j)
{
	struct bmc_job **pp = &n->head;
	if (!j->op.background)
		while (*pp && !(*pp)->op.background)
			pp = &(*pp)->next;
	else
		pp = n->tail ? &n->tail->next : &n->head;
	j->next = *pp;
	*pp = j;
	if (!j->next)
		n->tail = j;
}

/* Under the lock: takes the jobs that may start now (a slot free, their node idle). */
static struct bmc_job *pump(struct bmc_engine *e)
{
	struct bmc_job *start = NULL, **tail = &start;
	struct bmc_node *n;
	while (!e->stopping && e->running < e->cfg.fanout && (n = ready_pop(e))) {
		if (!node_may_start(n))
			continue; /* started meanwhile through its other listing */
		struct bmc_job *j = n->head;
		n->head = j->next;
		if (!n->head)
			n->tail = NULL;
		j->next = NULL;
		n->busy++;
		if (j->op.background)
			n->background = j;
		e->running++;
		*tail = j;
		tail = &j->next;
		ready_push(e, n); /* its next job may overtake a background read */
	}
	return start;
}

static void start_jobs(struct bmc_engine *e, struct bmc_job *list);

static struct redfish *node_loop(const struct bmc_engine *e, const struct bmc_node *n);

static void job_done(void *ud, const struct bmc_result *res)
{
	struct bmc_job *j = ud;
	struct bmc_engine *e = j->engine;

	pthread_mutex_lock(&e->lock);
	j->node->busy--;
	if (j->node->background == j)
		j->node->background = NULL;
	j->node->slow = res->rc == KILN_ETIMEOUT;
	e->running--;
	if (j->op.probe && !j->node->busy && !j->node->head && j->node->rf) {
		/* nothing of a probe's is kept: its session would be a second one on the BMC
		 * once the node is added */
		redfish_bmc_retire(node_loop(e, j->node), j->node->rf);
		j->node->rf = NULL;
		key_free(j->node->key);
		j->node->key = NULL;
	}
	ready_push(e, j->node);
	struct bmc_job *next = pump(e);
	pthread_mutex_unlock(&e->lock);

	if (j->done)
		j->done(j->ud, res);
	job_free(j);
	start_jobs(e, next);
}

static void job_fail(struct bmc_job *j, int rc, const char *msg)
{
	struct bmc_result res = {.rc = rc};
	snprintf(res.error, sizeof(res.error), "%s: %s",
		 j->target.node_name ? j->target.node_name : "node", msg);
	job_done(j, &res);
}

/* The Redfish loop of a node's BMC, for the node's life (node ids spread them evenly). */
static struct redfish *node_loop(const struct bmc_engine *e, const struct bmc_node *n)
{
	return e->rf[(uint64_t)n->node_id % (uint64_t)e->nrf];
}

/* Runs one job. Its node is marked busy: only a job that overtakes a background read runs
 * beside it, with the read's key (node_may_start). */
static void job_start(struct bmc_engine *e, struct bmc_job *j)
{
	struct bmc_node *n = j->node;
	struct redfish_bmc *rf;
	int rc;

	if (j->target.protocol == BMC_IPMI) {
		struct ipmi_limits limits = {
			.request_timeout_ms = e->cfg.request_timeout_ms,
			.action_timeout_ms = e->cfg.action_timeout_ms,
		};
		kiln_error_clear();
		if ((rc = ipmi_submit(&j->target, &j->op, &limits, job_done, j)) < 0)
			job_fail(j, rc, kiln_error_last());
		return;
	}
	/* n->key and n->rf change under the lock: a job that overtakes a background read may
	 * start at the same time */
	pthread_mutex_lock(&e->lock);
	if (!n->rf || !n->key || strcmp(n->key, j->key) != 0) {
		char *key = strdup(j->key);
		if (!key) {
			pthread_mutex_unlock(&e->lock);
			job_fail(j, KILN_ERROR, "out of memory");
			return;
		}
		if (n->rf && n->key && redfish_bmc_rejected(n->rf)) {
			key_free(n->rejected_key);
			n->rejected_key = n->key; /* remembered past the retire */
			n->key = NULL;
		}
		if (n->rejected_key && strcmp(n->rejected_key, j->key) == 0) {
			/* the poller's node list and a live call's fresh read alternate while a
			 * password change propagates: each switch would bring two more failed
			 * logins (and a BMC's lockout closer) */
			pthread_mutex_unlock(&e->lock);
			key_free(key);
			job_fail(j, KILN_EAUTH, "credentials rejected twice; not tried again until "
				 "they change");
			return;
		}
		redfish_bmc_retire(node_loop(e, n), n->rf); /* logs out the old session */
		n->rf = NULL;
		key_free(n->key);
		n->key = NULL;
		kiln_error_clear();
		if ((rc = redfish_bmc_new(node_loop(e, n), &n->rf, &j->target)) < 0) {
			pthread_mutex_unlock(&e->lock);
			key_free(key);
			job_fail(j, rc, kiln_error_last());
			return;
		}
		n->key = key;
	}
	rf = n->rf;
	pthread_mutex_unlock(&e->lock);
	kiln_error_clear();
	if ((rc = redfish_submit(node_loop(e, n), rf, &j->op, job_done, j)) < 0)
		job_fail(j, rc, kiln_error_last());
}

static void start_jobs(struct bmc_engine *e, struct bmc_job *list)
{
	while (list) {
		struct bmc_job *j = list;
		list = list->next;
		j->next = NULL;
		job_start(e, j);
	}
}

int bmc_engine_start(struct bmc_engine **out, const struct bmc_engine_config *cfg)
{
	struct bmc_engine *e = calloc(1, sizeof(*e));
	if (!e)
		return kiln_fail(KILN_ERROR, "out of memory");
	e->cfg = *cfg;
	if (e->cfg.fanout <= 0)
		e->cfg.fanout = 2048;
	pthread_mutex_init(&e->lock, NULL);
	/* One Redfish loop per core (TLS and HTTP work is CPU-bound past a few thousand BMCs),
	 * sharing the descriptor and handshake budgets. */
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	e->nrf = e->cfg.redfish_loops > 0 ? e->cfg.redfish_loops : cores > 0 ? (int)cores : 1;
	if (e->nrf > BMC_REDFISH_LOOPS_MAX)
		e->nrf = BMC_REDFISH_LOOPS_MAX;
	struct redfish_config rc = {
		.max_inflight = e->cfg.fanout,
		.connect_timeout_ms = e->cfg.connect_timeout_ms,
		.request_timeout_ms = e->cfg.request_timeout_ms,
		.action_timeout_ms = e->cfg.action_timeout_ms,
		.status_timeout_ms = e->cfg.status_timeout_ms,
		.share = e->nrf,
		.keeper = e->cfg.sessions,
	};
	for (int i = 0; i < e->nrf; i++) {
		int err = redfish_start(&e->rf[i], &rc);
		if (err < 0) {
			while (i-- > 0)
				redfish_stop(e->rf[i]);
			pthread_mutex_destroy(&e->lock);
			free(e);
			return err;
		}
	}
	*out = e;
	return 0;
}

void bmc_engine_drain(struct bmc_engine *e)
{
	if (!e)
		return;
	struct bmc_job *queued = NULL;
	pthread_mutex_lock(&e->lock);
	e->stopping = 1;
	for (size_t h = 0; h < BMC_BUCKETS; h++) {
		for (struct bmc_node *n = e->buckets[h]; n; n = n->hnext) {
			if (n->tail) {
				n->tail->next = queued;
				queued = n->head;
			}
			n->head = n->tail = NULL;
			n->ready[READY_OPERATOR] = n->ready[READY_BACKGROUND] = 0;
		}
	}
	for (int q = 0; q < 2; q++)
		e->ready_head[q] = e->ready_tail[q] = NULL;
	pthread_mutex_unlock(&e->lock);

	while (queued) {
		struct bmc_job *j = queued;
		queued = j->next;
		struct bmc_result res = {.rc = KILN_ERROR};
		snprintf(res.error, sizeof(res.error), "%s: kilnd is stopping",
			 j->target.node_name ? j->target.node_name : "node");
		if (j->done)
			j->done(j->ud, &res);
		job_free(j);
	}
}

void bmc_engine_stop(struct bmc_engine *e)
{
	if (!e)
		return;
	bmc_engine_drain(e);
	/* fails what runs, deletes every session, frees every driver state: the loops log
	 * out of their BMCs at the same time */
	for (int i = 0; i < e->nrf; i++)
		redfish_stop_begin(e->rf[i]);
	for (int i = 0; i < e->nrf; i++)
		redfish_stop(e->rf[i]);
	/* IPMI operations at the helper end now too, and the engine waits for every done
	 * callback (one still running on the helper's reader thread) before it frees the
	 * nodes they point to: a stop with an IPMI read in flight freed them under it. */
	ipmi_fail_pending("kilnd is stopping");
	for (int waited_ms = 0;; waited_ms += 10) {
		pthread_mutex_lock(&e->lock);
		int running = e->running;
		pthread_mutex_unlock(&e->lock);
		if (running <= 0 || waited_ms >= 30000)
			break;
		struct timespec ts = { .tv_nsec = 10 * 1000000 };
		nanosleep(&ts, NULL);
	}

	for (size_t h = 0; h < BMC_BUCKETS; h++) {
		struct bmc_node *n = e->buckets[h];
		while (n) {
			struct bmc_node *next = n->hnext;
			key_free(n->key);
			key_free(n->rejected_key);
			free(n);
			n = next;
		}
	}
	pthread_mutex_destroy(&e->lock);
	free(e);
}

int bmc_submit(struct bmc_engine *e, const struct bmc_target *target, const struct bmc_op *op,
	       bmc_done_fn done, void *ud)
{
	switch (target->protocol) {
	case BMC_REDFISH:
	case BMC_REDFISH_HTTP:
	case BMC_IPMI:
		break;
	default:
		return kiln_fail(KILN_EINVAL, "%s: the node has no BMC address",
				 target->node_name ? target->node_name : "node");
	}
	if ((op->kind == BMC_OP_MEDIA_INSERT) && (!op->media_url || !op->media_url[0]))
		return kiln_fail(KILN_EINVAL, "media insert needs an image URL");

	struct bmc_job *j = calloc(1, sizeof(*j));
	if (!j)
		return kiln_fail(KILN_ERROR, "out of memory");
	if (target_copy(&j->target, target) < 0) {
		free(j);
		return KILN_ERROR;
	}
	j->op = *op;
	j->op.media_url = dup_or_null(op->media_url);
	if (target->protocol != BMC_IPMI && !(j->key = target_key(target))) {
		job_free(j);
		return kiln_fail(KILN_ERROR, "out of memory");
	}
	j->done = done;
	j->ud = ud;
	j->engine = e;

	pthread_mutex_lock(&e->lock);
	struct bmc_node *n = e->stopping ? NULL : node_get(e, target->node_id);
	if (!n) {
		int stopping = e->stopping;
		pthread_mutex_unlock(&e->lock);
		job_free(j);
		return stopping ? kiln_fail(KILN_EBUSY, "the BMC engine is stopping")
				: kiln_fail(KILN_ERROR, "out of memory");
	}
	j->node = n;
	node_queue(n, j);
	ready_push(e, n);
	struct bmc_job *start = pump(e);
	pthread_mutex_unlock(&e->lock);
	start_jobs(e, start);
	return 0;
}

/* --- batches ------------------------------------------------------------------------------ */

struct batch {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	size_t remaining;
	struct bmc_result *results;
};

struct batch_slot {
	struct batch *batch;
	size_t index;
	int slow;                   /* its node's last operation timed out */
};

static void batch_done(void *ud, const struct bmc_result *res)
{
	struct batch_slot *s = ud;
	struct batch *b = s->batch;
	struct bmc_result *out = &b->results[s->index];
	out->rc = res->rc;
	memcpy(out->error, res->error, sizeof(out->error));
	out->data = res->rc == 0 && res->data ? json_incref(res->data) : NULL;
	pthread_mutex_lock(&b->lock);
	if (--b->remaining == 0)
		pthread_cond_signal(&b->cond); /* one waiter, woken once (not per result) */
	pthread_mutex_unlock(&b->lock);
}

/* Submits one target of a batch; a refusal is its result at once. */
static void batch_submit(struct bmc_engine *e, struct batch *b, struct batch_slot *slot,
			 const struct bmc_target *t, const struct bmc_op *op)
{
	kiln_error_clear();
	int rc = bmc_submit(e, t, op, batch_done, slot);
	if (rc < 0) {
		b->results[slot->index].rc = rc;
		snprintf(b->results[slot->index].error, sizeof(b->results[0].error), "%s",
			 kiln_error_last());
		pthread_mutex_lock(&b->lock);
		b->remaining--;
		pthread_mutex_unlock(&b->lock);
	}
}

int bmc_run_batch(struct bmc_engine *e, const struct bmc_target *targets, size_t n,
		  const struct bmc_op *op, struct bmc_result *results)
{
	struct batch b = {.remaining = n, .results = results};
	struct batch_slot *slots = calloc(n ? n : 1, sizeof(*slots));
	if (!slots)
		return kiln_fail(KILN_ERROR, "out of memory");
	pthread_mutex_init(&b.lock, NULL);
	pthread_cond_init(&b.cond, NULL);
	memset(results, 0, n * sizeof(*results));

	/* BMCs that timed out last time go first: their timeouts then overlap the other
	 * BMCs' answers instead of holding the batch's end (the hung 1 % of a fleet-wide sweep
	 * submitted last would end it one timeout after the rest) */
	pthread_mutex_lock(&e->lock);
	for (size_t i = 0; i < n; i++) {
		struct bmc_node *nd = node_find(e, targets[i].node_id);
		slots[i] = (struct batch_slot){ &b, i, nd && nd->slow };
	}
	pthread_mutex_unlock(&e->lock);
	for (size_t i = 0; i < n; i++)
		if (slots[i].slow)
			batch_submit(e, &b, &slots[i], &targets[i], op);
	for (size_t i = 0; i < n; i++)
		if (!slots[i].slow)
			batch_submit(e, &b, &slots[i], &targets[i], op);
	pthread_mutex_lock(&b.lock);
	while (b.remaining > 0)
		pthread_cond_wait(&b.cond, &b.lock);
	pthread_mutex_unlock(&b.lock);
	pthread_cond_destroy(&b.cond);
	pthread_mutex_destroy(&b.lock);
	free(slots);
	return 0;
}
