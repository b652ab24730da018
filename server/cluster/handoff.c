/* SPDX-License-Identifier: Apache-2.0 */
/* Live BMC calls handed to a node's owner through node_calls rows and PostgreSQL
 * notifications; the claims that send an action at most once; the power read-back of a call
 * whose claimant died mid-way. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bmc/target.h"
#include "cluster/cluster.h"
#include "cluster/handoff.h"
#include "kiln/error.h"
#include "kiln/log.h"
#include "kiln/parse.h"
#include "cluster/node_lock.h"

#define SCAN_EVERY_MS 1000       /* the rows are read again at least this often */
#define ORPHANS_EVERY_MS 2000   /* calls handed to an instance that died: taken over */
#define PRUNE_EVERY_MS 60000
#define PRUNE_AFTER_MS 600000    /* a finished row nobody will read (its origin stopped) */
#define WARN_EVERY_MS 30000      /* one store warning per this, not one a scan */
#define READBACK_TRIES 8         /* reads of an interrupted call's node, 2 s apart, until it */
#define READBACK_EVERY_MS 2000   /* is on or off (a cycle cut mid-way takes a while) */

/* --- the operation as text --------------------------------------------------------------- */

int handoff_op_is_action(enum bmc_op_kind kind)
{
	return kind == BMC_OP_POWER_ACTION || kind == BMC_OP_BOOT_SET ||
	       kind == BMC_OP_MEDIA_INSERT || kind == BMC_OP_MEDIA_EJECT;
}

char *handoff_op_text(const struct bmc_op *op, const char *node)
{
	json_t *o = json_pack("{s:s, s:i, s:i, s:b, s:i, s:b, s:b, s:I}", "node", node, "kind",
			      (int)op->kind, "action", (int)op->action, "on_if_off", op->on_if_off,
			      "boot", (int)op->boot, "persistent", op->persistent, "force", op->force,
			      "sel_since", (json_int_t)op->sel_since);
	char *text;

	if (!o)
		return NULL;
	if (op->media_url && json_object_set_new(o, "media_url", json_string(op->media_url)) < 0) {
		json_decref(o);
		return NULL;
	}
	text = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return text;
}

int handoff_op_parse(const char *text, struct bmc_op *out, char **out_media, char **out_node)
{
	json_t *o = json_loads(text ? text : "", 0, NULL);
	const char *node = NULL, *media = NULL;
	int kind, action, boot, on_if_off = 0, persistent = 0, force = 0;
	json_int_t since = 0;
	int rc = 0;

	*out_media = *out_node = NULL;
	if (!o || json_unpack(o, "{s:s, s:i, s:i, s:b, s:i, s:b, s:b, s:I, s?s}", "node", &node,
			      "kind", &kind, "action", &action, "on_if_off", &on_if_off, "boot",
			      &boot, "persistent", &persistent, "force", &force, "sel_since", &since,
			      "media_url", &media) < 0 ||
	    kind < BMC_OP_POWER_GET || kind > BMC_OP_INVENTORY || action < BMC_ACT_ON ||
	    action > BMC_ACT_CYCLE || boot < BMC_BOOT_PXE || boot > BMC_BOOT_BIOS) {
		json_decref(o);
		return kiln_fail(KILN_EINVAL, "handoff: not an operation: %.80s", text ? text : "");
	}
	memset(out, 0, sizeof(*out));
	out->kind = (enum bmc_op_kind)kind;
	out->action = (enum bmc_power_action)action;
	out->on_if_off = on_if_off;
	out->boot = (enum bmc_boot_device)boot;
	out->persistent = persistent;
	out->force = force;
	out->sel_since = since;
	if (!(*out_node = strdup(node)) || (media && !(*out_media = strdup(media)))) {
		free(*out_node);
		*out_node = NULL;
		rc = kiln_fail(KILN_ERROR, "out of memory");
	}
	out->media_url = *out_media;
	json_decref(o);
	return rc;
}

int handoff_row(struct store *st, struct cluster *c, int64_t node_id, const char *node,
		const struct bmc_op *op, int64_t audit_id, const char *owner, int64_t *out_id)
{
	const char *self = cluster_self(c);
	struct node_call_row r = { .node_id = node_id, .origin = (char *)self,
				   .owner = (char *)owner, .audit_id = audit_id,
				   .state = owner ? NODE_CALL_PENDING : NODE_CALL_RUNNING,
				   .claimed_by = owner ? NULL : (char *)self };
	int rc;

	*out_id = 0;
	if (!cluster_shared(c))
		return 0;
	if (!(r.op = handoff_op_text(op, node)))
		return kiln_fail(KILN_ERROR, "out of memory");
	rc = store_node_call_insert(st, &r);
	free(r.op);
	if (rc == 0)
		*out_id = r.id;
	return rc;
}

/* --- the thread's state -------------------------------------------------------------------- */

/* A call this instance runs on its engine for a row: the row's operation, or the power
 * read-back of a row whose claimant died. */
struct exec {
	struct exec *next;
	struct handoff *h;
	int64_t row_id;
	int64_t audit_id;
	char *origin;
	char *node_name;
	struct node *node;
	char *password;
	char *media;
	struct bmc_op op;
	int readback;       /* the power read of an interrupted call */
	int tries;          /* readback: reads so far (a node mid-transition is read again) */
	int64_t due_ms;     /* readback: when its next read goes (h->later) */
	char *dead;         /* readback: the instance that died mid-call */
	int locked;         /* holds the node's busy mark */
	/* the result */
	int rc;
	char error[512];
	json_t *data;
};

struct handoff {
	struct handoff_options opt;
	struct store *st;
	char self[CLUSTER_ID_LEN + 1];
	char done_channel[64];
	pthread_t thread;
	int started;
	int wake[2];               /* the engine's callbacks and handoff_stop wake the thread */
	int listen_fd;             /* the LISTEN connection's descriptor, -1 before */
	size_t running;            /* execs out on the engine (the thread's) */
	int64_t warned_ms;
	int64_t pruned_ms;
	int64_t orphans_ms;        /* the last look at calls handed to dead instances */
	int batch;                 /* a batch's transaction is open: units are savepoints */
	pthread_mutex_t lock;
	struct exec *deferred;     /* read-backs found at start, sent by the thread */
	struct exec *later;        /* read-backs to read again at their due_ms (the thread's) */
	struct exec *done;         /* results back from the engine (under lock) */
	int stopping;              /* no new claim (under lock) */
	int quitting;              /* the thread ends once nothing runs (under lock) */
	handoff_observe_fn observe; /* NULL once stopping (under lock) */
	void *observe_ud;
};

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void wake(struct handoff *h)
{
	ssize_t n = write(h->wake[1], "", 1);

	(void)n; /* a full pipe wakes the thread as well */
}

/* One store warning per WARN_EVERY_MS (the scans run every second). */
static void store_warn(struct handoff *h, const char *what)
{
	int64_t now = mono_ms();

	if (h->warned_ms && now - h->warned_ms < WARN_EVERY_MS)
		return;
	h->warned_ms = now;
	log_warn("handoff: %s: %s", what, kiln_error_last());
}

static void exec_free(struct exec *e)
{
	if (!e)
		return;
	if (e->locked && e->node)
		node_lock_release(e->node->id);
	free(e->origin);
	free(e->node_name);
	node_free(e->node);
	secret_free_string(e->password);
	free(e->media);
	free(e->dead);
	json_decref(e->data);
	free(e);
}

/* A new exec for row r, its operation parsed and its node read: a row that cannot run (its
 * node gone, an operation this kilnd does not read) has node NULL and the reason in error.
 * NULL on ENOMEM. */
static struct exec *exec_new(struct handoff *h, const struct node_call_row *r)
{
	struct exec *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->h = h;
	e->row_id = r->id;
	e->audit_id = r->audit_id;
	if (!(e->origin = strdup(r->origin))) {
		exec_free(e);
		return NULL;
	}
	if (handoff_op_parse(r->op, &e->op, &e->media, &e->node_name) < 0) {
		e->rc = KILN_EINVAL;
		snprintf(e->error, sizeof(e->error), "%s", kiln_error_last());
	} else if (store_node_get(h->st, &e->node, e->node_name) < 0 ||
		   e->node->id != r->node_id) {
		node_free(e->node);
		e->node = NULL;
		e->rc = KILN_ENOTFOUND;
		snprintf(e->error, sizeof(e->error), "node %s is gone", e->node_name);
	}
	return e;
}

/* --- results ------------------------------------------------------------------------------- */

static void on_engine_done(void *ud, const struct bmc_result *res)
{
	struct exec *e = ud;
	struct handoff *h = e->h;

	e->rc = res->rc;
	snprintf(e->error, sizeof(e->error), "%s", res->error);
	e->data = res->data ? json_incref(res->data) : NULL;
	pthread_mutex_lock(&h->lock);
	e->next = h->done;
	h->done = e;
	pthread_mutex_unlock(&h->lock);
	wake(h);
}

static void notify_origin(struct handoff *h, const char *origin, int64_t row_id)
{
	char channel[64], payload[32];

	snprintf(channel, sizeof(channel), HANDOFF_DONE_CHANNEL "%s", origin);
	snprintf(payload, sizeof(payload), "%lld", (long long)row_id);
	if (store_notify(h->st, channel, payload) < 0)
		store_warn(h, "notifying the caller");
}

/* Whether a power read back is on or off (not unknown: a node powering on or off). */
static int settled(json_t *power)
{
	const char *p = json_string_value(power);

	return p && (strcmp(p, "on") == 0 || strcmp(p, "off") == 0);
}

/*
 * The writes of many rows go in one transaction (one commit, one fsync, one turn of the
 * writers' lock: a bulk call's rows cost milliseconds each otherwise); each row's writes are
 * a unit in it, a savepoint, so that one row's failure undoes only that row.
 */
static void batch_begin(struct handoff *h)
{
	h->batch = store_begin(h->st) == 0;
	if (!h->batch)
		store_warn(h, "beginning a batch");
}

/* 0 when the batch's writes are stored (or there was no batch). */
static int batch_end(struct handoff *h)
{
	int rc = 0;

	if (h->batch && (rc = store_commit(h->st)) < 0) {
		store_warn(h, "committing a batch");
		store_rollback(h->st);
	}
	h->batch = 0;
	return rc;
}

static int unit_begin(struct handoff *h)
{
	return h->batch ? store_savepoint(h->st) : store_begin(h->st);
}

static int unit_end(struct handoff *h)
{
	return h->batch ? store_release(h->st) : store_commit(h->st);
}

static void unit_undo(struct handoff *h)
{
	if (h->batch)
		store_rollback_to(h->st);
	else
		store_rollback(h->st);
}

/* Writes row e's outcome (its audit row's too) and tells its origin, in one unit. A
 * read back that finds the node mid-transition goes to h->later to be read again. */
static void exec_finish(struct handoff *h, struct exec *e)
{
	const char *from = e->readback ? NODE_CALL_READBACK : NODE_CALL_RUNNING;
	const char *to = e->readback ? NODE_CALL_INTERRUPTED : NODE_CALL_DONE;
	char text[700], *data = NULL;
	json_t *power = NULL;
	int moved = 0, rc = e->rc;

	if (e->readback) {
		power = e->rc == 0 ? json_object_get(e->data, "power") : NULL;
		if (!settled(power) && ++e->tries < READBACK_TRIES) {
			/* mid-transition (the cut action's own, most likely): read again */
			json_decref(e->data);
			e->data = NULL;
			e->rc = 0;
			e->error[0] = '\0';
			secret_free_string(e->password); /* exec_send opens it again */
			e->password = NULL;
			e->due_ms = mono_ms() + READBACK_EVERY_MS;
			e->next = h->later;
			h->later = e;
			return;
		}
		if (json_is_string(power))
			snprintf(text, sizeof(text),
				 "interrupted: instance %s stopped mid-call; power now %s (read back)",
				 e->dead, json_string_value(power));
		else
			snprintf(text, sizeof(text),
				 "interrupted: instance %s stopped mid-call; the power could not be "
				 "read back: %s",
				 e->dead, e->error[0] ? e->error : kiln_error_name(e->rc));
		rc = KILN_ERROR;
		if (json_is_string(power)) {
			json_t *o = json_pack("{s:O}", "power", power);

			data = o ? json_dumps(o, JSON_COMPACT) : NULL;
			json_decref(o);
		}
	} else if (e->rc == 0) {
		snprintf(text, sizeof(text), "ok");
		data = e->data ? json_dumps(e->data, JSON_COMPACT) : NULL;
	} else {
		snprintf(text, sizeof(text), "%s", e->error[0] ? e->error : kiln_error_name(e->rc));
	}
	if (unit_begin(h) < 0) {
		store_warn(h, "storing a result");
		goto out;
	}
	if (store_node_call_finish(h->st, e->row_id, from, h->self, to, rc,
				   rc == 0 ? NULL : text, data, &moved) < 0)
		goto fail;
	if (moved && e->audit_id > 0) {
		char outcome[720], when[KILN_TIME_UTC_LEN];

		/* an interrupted row's words as a single kilnd's restart writes them; a node
		 * still changing power after every read keeps the bare words, to which the
		 * poller adds its first reading that is on or off (store_audit_readback) */
		kiln_time_utc(when, store_now(h->st));
		if (e->readback && settled(power))
			snprintf(outcome, sizeof(outcome),
				 STORE_AUDIT_INTERRUPTED "; power read back: %s at %s",
				 json_string_value(power), when);
		else if (e->readback && e->rc == 0)
			snprintf(outcome, sizeof(outcome), STORE_AUDIT_INTERRUPTED);
		else if (e->readback)
			snprintf(outcome, sizeof(outcome),
				 STORE_AUDIT_INTERRUPTED "; the power could not be read back: %s",
				 e->error[0] ? e->error : kiln_error_name(e->rc));
		else if (rc == 0)
			snprintf(outcome, sizeof(outcome), "%s", text);
		else
			snprintf(outcome, sizeof(outcome), "failed: %s", text);
		if (store_audit_finish(h->st, e->audit_id, outcome) < 0)
			goto fail;
	}
	if (moved)
		notify_origin(h, e->origin, e->row_id);
	if (unit_end(h) < 0)
		goto fail;
	goto out;
fail:
	store_warn(h, "storing a result");
	unit_undo(h);
out:
	/* What the BMC said is stored as this owner's own reading. */
	if (!e->readback && e->rc == 0 && e->data && e->node) {
		pthread_mutex_lock(&h->lock);
		if (h->observe)
			h->observe(h->observe_ud, e->node->id, e->op.kind, e->data);
		pthread_mutex_unlock(&h->lock);
	}
	free(data);
	exec_free(e);
}

/* Row e answered at once (not sent): rc and the reason. */
static void exec_answer(struct handoff *h, struct exec *e, int rc, const char *why)
{
	e->rc = rc;
	if (why != e->error) /* exec_new's reason is in place already */
		snprintf(e->error, sizeof(e->error), "%s", why);
	exec_finish(h, e);
}

/* Sends e to its BMC; answers it at once when that cannot be. */
static void exec_send(struct handoff *h, struct exec *e)
{
	struct bmc_target target;
	int rc;

	if (!e->node) {
		exec_answer(h, e, e->rc, e->error);
		return;
	}
	if (!e->readback && handoff_op_is_action(e->op.kind)) {
		if ((rc = node_lock_claim(e->node->id)) <= 0) {
			exec_answer(h, e, KILN_EBUSY,
				    rc == 0 ? "action in flight on this node (on its owner)"
					    : "out of memory");
			return;
		}
		e->locked = 1;
	}
	if (bmc_target_from_node(&target, &e->password, e->node, h->opt.key) < 0) {
		exec_answer(h, e, KILN_ERROR, kiln_error_last());
		return;
	}
	kiln_error_clear();
	if (bmc_submit(h->opt.engine, &target, &e->op, on_engine_done, e) < 0) {
		exec_answer(h, e, KILN_ERROR, kiln_error_last()[0] ? kiln_error_last() : "not sent");
		return;
	}
	h->running++;
}

/* --- the scans ----------------------------------------------------------------------------- */

/*
 * Claims and sends the pending rows handed to this instance; with orphans, instead, the rows
 * handed to an instance that is no longer live whose nodes this one owns now (and a row no
 * instance can run, its node gone, to answer it).
 */
static void scan_pending(struct handoff *h, int orphans)
{
	struct node_call_row *rows = NULL;
	struct exec *claimed = NULL;
	size_t n = 0;

	if (store_node_call_list(h->st, NODE_CALL_PENDING, NULL, orphans ? NULL : h->self, &rows,
				 &n) < 0) {
		store_warn(h, "reading the calls");
		return;
	}
	if (n > 0)
		batch_begin(h);
	for (size_t i = 0; i < n; i++) {
		const char *owner = rows[i].owner;
		struct exec *e;
		int moved = 0;

		if (orphans && owner &&
		    (strcmp(owner, h->self) == 0 || cluster_is_live(h->opt.cluster, owner)))
			continue; /* its owner takes it */
		if (!(e = exec_new(h, &rows[i])))
			break; /* out of memory: the next scan */
		if ((orphans && e->node && !cluster_owns(h->opt.cluster, e->node)) ||
		    store_node_call_move(h->st, rows[i].id, NODE_CALL_PENDING, NULL,
					 NODE_CALL_RUNNING, h->self, &moved) < 0 ||
		    !moved) {
			exec_free(e);
			continue;
		}
		e->next = claimed;
		claimed = e;
	}
	node_call_list_free(rows, n);
	/* sent once the claims are stored: a claim that was not is nobody's */
	if (batch_end(h) < 0) {
		while (claimed) {
			struct exec *e = claimed;

			claimed = e->next;
			exec_free(e);
		}
	}
	if (claimed)
		batch_begin(h); /* the answers of the rows that cannot run */
	while (claimed) {
		struct exec *e = claimed;

		claimed = e->next;
		exec_send(h, e);
	}
	batch_end(h);
}

/*
 * The rows claimed by an instance that is no longer live (or, at start, by this one in an
 * earlier life: self_too): an action is never sent again: its new owner reads the node's
 * power back and reports it interrupted. A read goes back to pending, to run again.
 */
static void scan_orphans(struct handoff *h, const char *state, int self_too)
{
	struct node_call_row *rows = NULL;
	size_t n = 0;

	if (store_node_call_list(h->st, state, NULL, NULL, &rows, &n) < 0) {
		store_warn(h, "reading the calls");
		return;
	}
	for (size_t i = 0; i < n; i++) {
		struct node_call_row *r = &rows[i];
		int self = r->claimed_by && strcmp(r->claimed_by, h->self) == 0;
		struct exec *e;
		int moved = 0;

		if (!r->claimed_by || (self && !self_too) ||
		    (!self && cluster_is_live(h->opt.cluster, r->claimed_by)))
			continue;
		if (!(e = exec_new(h, r)))
			break;
		if (!self && e->node && !cluster_owns(h->opt.cluster, e->node)) {
			exec_free(e);
			continue;
		}
		if (e->node && !handoff_op_is_action(e->op.kind) &&
		    strcmp(state, NODE_CALL_RUNNING) == 0) {
			if (store_node_call_move(h->st, r->id, state, r->claimed_by,
						 NODE_CALL_PENDING, NULL, &moved) < 0)
				store_warn(h, "handing a read back");
			exec_free(e);
			continue;
		}
		if (store_node_call_move(h->st, r->id, state, r->claimed_by, NODE_CALL_READBACK,
					 h->self, &moved) < 0 ||
		    !moved || !(e->dead = strdup(r->claimed_by))) {
			exec_free(e);
			continue;
		}
		e->readback = 1;
		log_warn("handoff: %s: a call instance %s had claimed was interrupted; reading the "
			 "power back, nothing is sent again",
			 e->node_name ? e->node_name : "?", r->claimed_by);
		free(e->media);
		e->media = NULL;
		memset(&e->op, 0, sizeof(e->op));
		e->op.kind = BMC_OP_POWER_GET;
		if (self_too) { /* at start: the thread sends them */
			e->next = h->deferred;
			h->deferred = e;
		} else {
			exec_send(h, e);
		}
	}
	node_call_list_free(rows, n);
}

/* The results of the calls this instance handed out go to its live thread. */
static void scan_results(struct handoff *h, const char *state)
{
	struct node_call_row *rows = NULL;
	size_t n = 0;

	if (store_node_call_list(h->st, state, h->self, NULL, &rows, &n) < 0) {
		store_warn(h, "reading the results");
		return;
	}
	if (n > 0)
		batch_begin(h);
	for (size_t i = 0; i < n; i++) {
		h->opt.on_result(h->opt.ud, &rows[i]);
		if (store_node_call_delete(h->st, rows[i].id) < 0)
			store_warn(h, "deleting a result");
	}
	batch_end(h); /* results not deleted come again: the live thread drops them */
	node_call_list_free(rows, n);
}

/* At start: the calls this instance handed out in an earlier life are cancelled (nobody
 * waits for them; their audit rows say not sent) or, finished, deleted. */
static void sweep_handed(struct handoff *h)
{
	struct node_call_row *rows = NULL;
	size_t n = 0;

	if (store_node_call_list(h->st, NODE_CALL_PENDING, h->self, NULL, &rows, &n) == 0) {
		for (size_t i = 0; i < n; i++) {
			int moved = 0;

			if (store_node_call_move(h->st, rows[i].id, NODE_CALL_PENDING, NULL,
						 NODE_CALL_CANCELLED, h->self, &moved) < 0 ||
			    !moved)
				continue;
			if (rows[i].audit_id > 0 &&
			    store_audit_finish(h->st, rows[i].audit_id,
					       "failed: not sent: kilnd stopped before its owner "
					       "took it") < 0)
				store_warn(h, "closing an audit row");
			store_node_call_delete(h->st, rows[i].id);
		}
		node_call_list_free(rows, n);
	}
	for (const char *const *s = (const char *const[]){ NODE_CALL_DONE, NODE_CALL_INTERRUPTED,
							 NODE_CALL_CANCELLED, NULL };
	     *s; s++) {
		rows = NULL;
		n = 0;
		if (store_node_call_list(h->st, *s, h->self, NULL, &rows, &n) < 0)
			continue;
		for (size_t i = 0; i < n; i++)
			store_node_call_delete(h->st, rows[i].id);
		node_call_list_free(rows, n);
	}
}

static void relisten(struct handoff *h)
{
	int fd = store_listen_fd(h->st);

	if (fd == h->listen_fd && fd >= 0)
		return;
	h->listen_fd = -1;
	if (store_listen(h->st, HANDOFF_CALLS_CHANNEL) < 0 ||
	    store_listen(h->st, h->done_channel) < 0) {
		store_warn(h, "listening");
		return;
	}
	h->listen_fd = store_listen_fd(h->st);
}

static void ignore_notification(void *ud, const char *channel, const char *payload)
{
	(void)ud;
	(void)channel;
	(void)payload; /* a wake-up: the scans read the rows */
}

/* The read-backs due again go out (when stopping: dropped; the next life reads back). */
static void later_send(struct handoff *h, int stopping)
{
	int64_t now = mono_ms();

	for (struct exec **pp = &h->later; *pp;) {
		struct exec *e = *pp;

		if (!stopping && e->due_ms > now) {
			pp = &e->next;
			continue;
		}
		*pp = e->next;
		if (stopping)
			exec_free(e);
		else
			exec_send(h, e);
	}
}

static void *handoff_main(void *arg)
{
	struct handoff *h = arg;

	while (h->deferred) {
		struct exec *e = h->deferred;

		h->deferred = e->next;
		exec_send(h, e);
	}
	for (;;) {
		struct pollfd pfd[2] = { { .fd = h->wake[0], .events = POLLIN },
					 { .fd = h->listen_fd, .events = POLLIN } };
		struct exec *done;
		int stopping, quitting;
		char buf[64];

		poll(pfd, h->listen_fd >= 0 ? 2 : 1, SCAN_EVERY_MS);
		while (read(h->wake[0], buf, sizeof(buf)) > 0)
			;
		if (h->listen_fd >= 0 &&
		    store_notifications(h->st, ignore_notification, NULL) < 0) {
			store_warn(h, "notifications");
			h->listen_fd = -1;
		}
		pthread_mutex_lock(&h->lock);
		done = h->done;
		h->done = NULL;
		stopping = h->stopping;
		quitting = h->quitting;
		pthread_mutex_unlock(&h->lock);
		if (done)
			batch_begin(h);
		while (done) {
			struct exec *e = done;

			done = e->next;
			h->running--;
			exec_finish(h, e);
		}
		batch_end(h);
		if (quitting && h->running == 0)
			break;
		later_send(h, stopping);
		if (stopping)
			continue;
		relisten(h);
		scan_results(h, NODE_CALL_DONE);
		scan_results(h, NODE_CALL_INTERRUPTED);
		scan_pending(h, 0);
		if (mono_ms() - h->orphans_ms >= ORPHANS_EVERY_MS) {
			h->orphans_ms = mono_ms();
			scan_pending(h, 1);
		}
		scan_orphans(h, NODE_CALL_RUNNING, 0);
		scan_orphans(h, NODE_CALL_READBACK, 0);
		if (mono_ms() - h->pruned_ms >= PRUNE_EVERY_MS) {
			h->pruned_ms = mono_ms();
			if (store_node_call_prune(h->st, store_now(h->st) * 1000 - PRUNE_AFTER_MS) <
			    0)
				store_warn(h, "pruning the calls");
		}
	}
	return NULL;
}

int handoff_start(struct handoff **out, const struct handoff_options *opt)
{
	struct handoff *h = calloc(1, sizeof(*h));
	int rc;

	if (!h)
		return kiln_fail(KILN_ERROR, "out of memory");
	h->opt = *opt;
	h->listen_fd = -1;
	h->wake[0] = h->wake[1] = -1;
	pthread_mutex_init(&h->lock, NULL);
	snprintf(h->self, sizeof(h->self), "%s", cluster_self(opt->cluster));
	snprintf(h->done_channel, sizeof(h->done_channel), HANDOFF_DONE_CHANNEL "%s", h->self);
	if (pipe2(h->wake, O_NONBLOCK | O_CLOEXEC) < 0) {
		rc = kiln_fail(KILN_ERROR, "handoff: pipe: %s", strerror(errno));
		goto fail;
	}
	if ((rc = store_open(&h->st, opt->db_path)) < 0)
		goto fail;
	relisten(h);
	/* what an earlier life of this instance left: nothing of it is sent again */
	sweep_handed(h);
	scan_orphans(h, NODE_CALL_RUNNING, 1);
	scan_orphans(h, NODE_CALL_READBACK, 1);
	*out = h;
	return 0;
fail:
	handoff_free(h);
	return rc;
}

int handoff_run(struct handoff *h, handoff_observe_fn observe, void *observe_ud,
		handoff_result_fn on_result, void *ud)
{
	h->observe = observe;
	h->observe_ud = observe_ud;
	h->opt.on_result = on_result;
	h->opt.ud = ud;
	if (pthread_create(&h->thread, NULL, handoff_main, h) != 0)
		return kiln_fail(KILN_ERROR, "handoff: cannot start its thread");
	h->started = 1;
	return 0;
}

void handoff_stop(struct handoff *h)
{
	if (!h)
		return;
	pthread_mutex_lock(&h->lock);
	h->stopping = 1;
	h->observe = NULL;
	pthread_mutex_unlock(&h->lock);
	wake(h);
}

void handoff_free(struct handoff *h)
{
	if (!h)
		return;
	if (h->started) {
		pthread_mutex_lock(&h->lock);
		h->stopping = 1;
		h->quitting = 1;
		h->observe = NULL;
		pthread_mutex_unlock(&h->lock);
		wake(h);
		pthread_join(h->thread, NULL);
	}
	while (h->later) {
		struct exec *e = h->later;

		h->later = e->next;
		exec_free(e);
	}
	while (h->deferred) { /* a start that failed after its sweep */
		struct exec *e = h->deferred;

		h->deferred = e->next;
		exec_free(e);
	}
	store_close(h->st);
	if (h->wake[0] >= 0)
		close(h->wake[0]);
	if (h->wake[1] >= 0)
		close(h->wake[1]);
	pthread_mutex_destroy(&h->lock);
	free(h);
}
