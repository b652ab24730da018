/* SPDX-License-Identifier: Apache-2.0 */
/* The Redfish driver's lifecycle, its loop thread, and operations as queues of steps. Task
 * monitors and error replies: replies.c. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

#include "bmc/redfish/budget.h"
#include "bmc/redfish/internal.h"
#include "kiln/error.h"
#include "kiln/parse.h"
#include "store/store.h"

#define RF_POLL_MAX_MS 1000
#define RF_EVENTS 512
#define RF_SHARDS 64
#define RF_WAKE_KEY UINT64_MAX
#define RF_HANDSHAKES_DEFAULT 64
#define RF_CONNECTIONS_MAX 100000

/* --- steps ------------------------------------------------------------------------------ */

void rf_step_free(struct rf_step *s)
{
	if (!s)
		return;
	free(s->method);
	free(s->path);
	if (s->body)
		explicit_bzero(s->body, strlen(s->body)); /* a login body holds the password */
	free(s->body);
	free(s->if_match);
	free(s);
}

static struct rf_step *step_new(struct rf_op *op)
{
	struct rf_step *s = calloc(1, sizeof(*s));
	if (!s)
		abort(); /* out of memory in the loop thread: nothing sensible to do */
	if (!op->pushed_tail)
		op->pushed_tail = &op->pushed;
	*op->pushed_tail = s;
	op->pushed_tail = &s->next;
	op->last_pushed = s;
	return s;
}

static char *xstrdup(const char *s)
{
	if (!s)
		return NULL;
	char *d = strdup(s);
	if (!d)
		abort();
	return d;
}

void rf_push(struct rf_op *op, const char *method, const char *path, const char *body, int flags,
	     rf_handler handler)
{
	struct rf_step *s = step_new(op);
	s->method = xstrdup(method);
	s->path = xstrdup(path);
	s->body = xstrdup(body);
	s->flags = flags;
	s->handler = handler;
}

void rf_push_delayed(struct rf_op *op, const char *method, const char *path, long delay_ms,
		     rf_handler handler)
{
	rf_push(op, method, path, NULL, 0, handler);
	op->last_pushed->not_before_ms = rf_now_ms() + delay_ms;
}

void rf_push_if_match(struct rf_op *op, const char *etag)
{
	if (!op->last_pushed || !etag)
		return;
	free(op->last_pushed->if_match);
	op->last_pushed->if_match = xstrdup(etag);
}

void rf_push_call(struct rf_op *op, rf_call_fn call)
{
	struct rf_step *s = step_new(op);
	s->call = call;
}

/* Puts the steps pushed by the last handler in front of the queue, in push order. */
static void splice_pushed(struct rf_op *op)
{
	if (!op->pushed)
		return;
	*op->pushed_tail = op->queue;
	op->queue = op->pushed;
	op->pushed = NULL;
	op->pushed_tail = &op->pushed;
	op->last_pushed = NULL;
}

/* --- operations ------------------------------------------------------------------------- */

static void op_free(struct rf_op *op)
{
	if (!op)
		return;
	rf_request_free(op->inflight);
	splice_pushed(op);
	while (op->queue) {
		struct rf_step *s = op->queue;
		op->queue = s->next;
		rf_step_free(s);
	}
	json_decref(op->data);
	json_decref(op->scratch);
	free(op->media_url);
	free(op->etag);
	free(op->device);
	free(op->task_uri);
	free(op);
}

static void op_done(struct rf_op *op, int rc, const char *msg)
{
	struct bmc_result res = {.rc = rc};
	struct redfish_bmc *b = op->bmc;
	struct rf_op *joined = NULL;
	if (op->finished)
		return;
	op->finished = 1;
	op->fin_next = op->rf->finished;
	op->rf->finished = op;
	if (op->inflight) {
		op->rf->inflight--;
		rf_request_free(op->inflight);
		op->inflight = NULL;
	}
	if (rc < 0) {
		snprintf(res.error, sizeof(res.error), "redfish: %s: %s", op->bmc->name,
			 msg && msg[0] ? msg : kiln_error_name(rc));
	} else {
		res.data = op->data;
	}
	if (b->background == op || b->foreground == op) {
		struct rf_op **mine = b->background == op ? &b->background : &b->foreground;
		struct rf_op *other = b->background == op ? b->foreground : b->background;
		*mine = NULL;
		if (other && other->joined == op)
			joined = other;
		else if (other)
			op->rf->walk_due_ms = 0; /* it goes on */
	}
	if (joined) { /* answered by this read (msg is still intact: nothing ran since) */
		joined->joined = NULL;
		joined->data = json_incref(op->data);
		op_done(joined, rc, msg);
	}
	if (op->done)
		op->done(op->ud, &res);
}

void rf_op_fail(struct rf_op *op, int code, const char *msg)
{
	op_done(op, code, msg);
}

/* --- waiting for a request slot -------------------------------------------------------- */

static void wait_remove(struct rf_op *op)
{
	struct redfish *rf = op->rf;
	int q = op->waitq;
	if (q == RF_WAIT_NONE)
		return;
	if (op->wait_prev)
		op->wait_prev->wait_next = op->wait_next;
	else
		rf->wait_head[q] = op->wait_next;
	if (op->wait_next)
		op->wait_next->wait_prev = op->wait_prev;
	else
		rf->wait_tail[q] = op->wait_prev;
	op->wait_next = op->wait_prev = NULL;
	op->waitq = RF_WAIT_NONE;
}

/* Queues op (FIFO) until a request slot, or a handshake slot, is free: the loop wakes the
 * waiters as transfers end instead of looking at every operation on every event. */
static void wait_push(struct rf_op *op, int q)
{
	struct redfish *rf = op->rf;
	if (op->waitq == q)
		return;
	wait_remove(op);
	op->waitq = q;
	op->wait_prev = rf->wait_tail[q];
	op->wait_next = NULL;
	if (rf->wait_tail[q])
		rf->wait_tail[q]->wait_next = op;
	else
		rf->wait_head[q] = op;
	rf->wait_tail[q] = op;
}

/* A step due at due_ms: the loop walks the operations then. */
static void timer_note(struct redfish *rf, int64_t due_ms)
{
	if (due_ms < rf->walk_due_ms)
		rf->walk_due_ms = due_ms;
}

/* A background read (the poller's) and another operation on one BMC, started beside it by the
 * engine so that a sweep does not wait behind an inventory read: the other one goes first,
 * the read waits between two of its requests; one request at a time reaches the BMC, and an
 * operation that would have to discover the BMC again begins once the other one has ended.
 * 1 while op has to wait; the loop walks both when the other one's request or life ends. */
static int op_held(const struct rf_op *op)
{
	const struct redfish_bmc *b = op->bmc;
	if (op->joined)
		return 1;
	if (op == b->background && b->foreground) /* unless it waits for this one */
		return !b->foreground->begin_later && !b->foreground->joined;
	if (op == b->foreground && b->background)
		return op->begin_later || b->background->inflight;
	return 0;
}

static int op_begin(struct rf_op *op);

/* Runs what can run now: call steps, the next request when it is due and a slot is free. */
void rf_op_advance(struct rf_op *op)
{
	wait_remove(op);
	if (op->finished || op_held(op))
		return;
	if (op->begin_later) {
		op->begin_later = 0;
		kiln_error_clear();
		int rc = op_begin(op);
		if (rc < 0) {
			rf_op_fail(op, rc, kiln_error_last());
			return;
		}
	}
	while (!op->finished && !op->inflight) {
		splice_pushed(op);
		struct rf_step *s = op->queue;
		if (!s) {
			if (op->finish) {
				rf_call_fn f = op->finish;
				op->finish = NULL;
				kiln_error_clear();
				int rc = f(op);
				if (rc < 0) {
					rf_op_fail(op, rc, kiln_error_last());
					return;
				}
				continue;
			}
			op_done(op, 0, NULL);
			return;
		}
		if (s->call) {
			op->queue = s->next;
			kiln_error_clear();
			int rc = s->call(op);
			rf_step_free(s);
			if (rc < 0) {
				rf_op_fail(op, rc, kiln_error_last());
				return;
			}
			continue;
		}
		if (s->not_before_ms > rf_now_ms()) {
			timer_note(op->rf, s->not_before_ms);
			return;
		}
		if (op->rf->inflight >= op->rf->cfg.max_inflight) {
			wait_push(op, RF_WAIT_SLOT);
			return;
		}
		/* new TLS connections are CPU-bound on both ends: a few at a time finish sooner
		 * than thousands at once that all run into the connect timeout */
		if (rf_handshake_counted(op->bmc) && op->rf->handshaking >= op->rf->cfg.max_handshakes) {
			wait_push(op, RF_WAIT_HANDSHAKE);
			return;
		}
		if (rf_step_needs_login(op, s)) {
			if (!rf_session_recall(op))
				rf_push_login(op);
			continue;
		}
		kiln_error_clear();
		int rc = rf_request_start(op, s);
		if (rc < 0) {
			rf_op_fail(op, rc, kiln_error_last());
			return;
		}
	}
}

/* A power read needs the system only: its discovery stops there (half the requests of a
 * first sweep); anything else goes on to the manager and chassis, once. */
static int op_discover_full(const struct rf_op *op)
{
	return op->op.kind != BMC_OP_POWER_GET;
}

static int op_discovered(const struct rf_op *op)
{
	return op->bmc->discovered && (!op_discover_full(op) || op->bmc->discovered_full);
}

static int op_begin(struct rf_op *op)
{
	if (op->logout)
		return 0;
	if (op->bmc->rejected)
		return kiln_fail(KILN_EAUTH,
				 "credentials rejected twice; not tried again until they change");
	op->deadline_ms = rf_now_ms() + op->rf->cfg.action_timeout_ms;
	switch (op->op.kind) {
	case BMC_OP_POWER_GET:
	case BMC_OP_POWER_ACTION: op->start = rf_power_start; break;
	case BMC_OP_BOOT_SET: op->start = rf_boot_start; break;
	case BMC_OP_MEDIA_INSERT:
	case BMC_OP_MEDIA_EJECT:
	case BMC_OP_MEDIA_STATUS: op->start = rf_media_start; break;
	case BMC_OP_SENSORS: op->start = rf_sensors_start; break;
	case BMC_OP_SEL: op->start = rf_logs_start; break;
	case BMC_OP_INVENTORY: op->start = rf_inventory_start; break;
	default: return kiln_fail(KILN_EINVAL, "operation %d not supported", op->op.kind);
	}
	op->discover_full = op_discover_full(op);
	if (!op->bmc->discovered)
		return rf_discover_begin(op);
	if (op->discover_full && !op->bmc->discovered_full)
		return rf_discover_extend(op);
	return op->start(op);
}

/* --- logout ----------------------------------------------------------------------------- */

static int logout_done(struct rf_op *op, const struct rf_reply *r)
{
	(void)r;
	rf_session_forget(op->bmc);
	return 0;
}

static void bmc_free(struct redfish_bmc *b)
{
	if (!b)
		return;
	free(b->name);
	free(b->base_url);
	free(b->user);
	secret_sealed_clear(&b->password);
	free(b->ca_file);
	free(b->fingerprint);
	free(b->want_system);
	rf_session_forget(b);
	rf_bmc_forget_discovery(b);
	free(b->log_seen);
	json_decref(b->system_doc);
	free(b);
}

/* Adds op to the driver's list of operations (loop thread). */
static void ops_link(struct redfish *rf, struct rf_op *op)
{
	op->prev = NULL;
	op->next = rf->ops;
	if (rf->ops)
		rf->ops->prev = op;
	rf->ops = op;
	op->bmc->nops++;
}

static void ops_unlink_free(struct redfish *rf, struct rf_op *op)
{
	wait_remove(op);
	if (op->prev)
		op->prev->next = op->next;
	else
		rf->ops = op->next;
	if (op->next)
		op->next->prev = op->prev;
	op->bmc->nops--;
	op_free(op);
}

/* Starts a logout operation for b when it holds a session; returns 1 when one started. */
static int logout_start(struct redfish *rf, struct redfish_bmc *b)
{
	if (!b->token || !b->session_uri || b->logout_sent)
		return 0;
	b->logout_sent = 1;
	struct rf_op *op = calloc(1, sizeof(*op));
	if (!op)
		return 0;
	op->rf = rf;
	op->bmc = b;
	op->logout = 1;
	rf_push(op, "DELETE", b->session_uri, NULL, RF_ALLOW_ERROR | RF_NO_RETRY, logout_done);
	ops_link(rf, op);
	return 1;
}

/* --- the loop --------------------------------------------------------------------------- */

static void loop_wake(struct redfish *rf)
{
	uint64_t one = 1;
	ssize_t n = write(rf->wakefd, &one, sizeof(one));
	(void)n; /* a full counter is as good as a write: the loop wakes either way */
}

/* Notes op as its BMC's background read or as the operation beside one (op_held());
 * returns 1 when it does not begin now: a power read beside a background power read is
 * answered by that read, already under way (it began after any action of ours on the BMC:
 * an action holds the background read's requests); another operation begins later when the
 * BMC would have to be discovered (again) while the other operation uses it. */
static int op_share(struct rf_op *op)
{
	struct redfish_bmc *b = op->bmc;
	struct rf_op *other = op->op.background ? b->foreground : b->background;
	if (op->op.background)
		b->background = op;
	else
		b->foreground = op;
	if (!other)
		return 0;
	if (!op->op.background && op->op.kind == BMC_OP_POWER_GET &&
	    other->op.kind == BMC_OP_POWER_GET && !other->begin_later) {
		op->joined = other;
		return 1;
	}
	if (op_discovered(op))
		return 0;
	op->begin_later = 1;
	return 1;
}

static void loop_take_inbox(struct redfish *rf, int *stopping)
{
	pthread_mutex_lock(&rf->lock);
	struct rf_op *in = rf->inbox;
	rf->inbox = NULL;
	rf->inbox_tail = &rf->inbox;
	*stopping = rf->stopping;
	pthread_mutex_unlock(&rf->lock);

	while (in) {
		struct rf_op *op = in;
		in = in->next;
		ops_link(rf, op);
		if (!*stopping && op_share(op))
			continue;
		kiln_error_clear();
		int rc = *stopping ? kiln_fail(KILN_ERROR, "kilnd is stopping") : op_begin(op);
		if (rc < 0)
			rf_op_fail(op, rc, kiln_error_last());
		else
			rf_op_advance(op);
	}
}

/* Logs out and frees retired BMC states that no operation uses; returns how many logouts
 * it started. Finished operations are gone from the list by now, so a BMC's count of
 * listed operations says whether one still uses it (scanning the list per BMC made a
 * stop after 10,000 sessions quadratic: minutes). */
static int loop_reap_retired(struct redfish *rf, int stopping)
{
	int started = 0;
	pthread_mutex_lock(&rf->lock);
	if (!stopping && rf->retired_count == 0) {
		/* nothing to reap: walking 10,000 states on every loop turn cost a third of
		 * the loop thread's time in a sweep */
		pthread_mutex_unlock(&rf->lock);
		return 0;
	}
	struct redfish_bmc **pp = &rf->bmcs;
	while (*pp) {
		struct redfish_bmc *b = *pp;
		if (!b->retired && !stopping) {
			pp = &b->next;
			continue;
		}
		if (b->nops > 0) {
			pp = &b->next;
			continue;
		}
		if (logout_start(rf, b)) {
			started++;
			pp = &b->next; /* freed once logged out */
			continue;
		}
		*pp = b->next;
		if (b->retired)
			rf->retired_count--;
		bmc_free(b);
	}
	pthread_mutex_unlock(&rf->lock);
	return started;
}

/* curl tells which sockets to watch for what (CURLMOPT_SOCKETFUNCTION). */
static int loop_on_socket(CURL *easy, curl_socket_t fd, int what, void *ud, void *sockp)
{
	struct rf_shard *sh = ud;
	struct redfish *rf = sh->rf;
	struct epoll_event ev = {.data.u64 = (uint64_t)sh->index << 32 | (uint32_t)fd};
	(void)easy;

	if (what == CURL_POLL_REMOVE) {
		if (sockp) {
			epoll_ctl(rf->epfd, EPOLL_CTL_DEL, fd, NULL);
			curl_multi_assign(sh->multi, fd, NULL);
		}
		return 0;
	}
	ev.events = ((what & CURL_POLL_IN) ? EPOLLIN : 0u) | ((what & CURL_POLL_OUT) ? EPOLLOUT : 0u);
	int op = sockp ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
	if (epoll_ctl(rf->epfd, op, fd, &ev) < 0) {
		/* a descriptor number reused behind curl's back: the other operation fits */
		op = op == EPOLL_CTL_ADD ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
		if (epoll_ctl(rf->epfd, op, fd, &ev) < 0)
			return -1;
	}
	if (!sockp)
		curl_multi_assign(sh->multi, fd, sh);
	return 0;
}

/* curl's single timer (CURLMOPT_TIMERFUNCTION): -1 deletes it. */
static int loop_on_timer(CURLM *multi, long timeout_ms, void *ud)
{
	struct rf_shard *sh = ud;
	(void)multi;
	sh->due_ms = timeout_ms < 0 ? INT64_MAX : rf_now_ms() + timeout_ms;
	return 0;
}

static void loop_read_done(struct redfish *rf)
{
	CURLMsg *msg;
	int left;
	for (int i = 0; i < rf->nshards; i++) {
		struct rf_shard *sh = &rf->shards[i];
		if (!sh->dirty)
			continue;
		sh->dirty = 0;
		while ((msg = curl_multi_info_read(sh->multi, &left)))
			if (msg->msg == CURLMSG_DONE)
				rf_loop_complete(rf, msg);
	}
}

/* The earliest of the shards' curl timers. */
static int64_t loop_curl_due(const struct redfish *rf)
{
	int64_t due = INT64_MAX;
	for (int i = 0; i < rf->nshards; i++)
		if (rf->shards[i].due_ms < due)
			due = rf->shards[i].due_ms;
	return due;
}

/* Starts waiting operations while request (and handshake) slots are free. Each turn either
 * starts a request, moves an operation to the handshake queue, or drops it from waiting. */
static void loop_drain_waiting(struct redfish *rf)
{
	while (rf->inflight < rf->cfg.max_inflight) {
		struct rf_op *op;
		if (rf->wait_head[RF_WAIT_HANDSHAKE] && rf->handshaking < rf->cfg.max_handshakes)
			op = rf->wait_head[RF_WAIT_HANDSHAKE];
		else if (rf->wait_head[RF_WAIT_SLOT])
			op = rf->wait_head[RF_WAIT_SLOT];
		else
			return;
		rf_op_advance(op);
	}
}

/* Every operation once: delayed steps that are due go (and set the next walk), the rest is
 * left to the wait queues and to transfers that end. */
static void loop_walk(struct redfish *rf)
{
	rf->walk_due_ms = rf_now_ms() + RF_POLL_MAX_MS;
	for (struct rf_op *op = rf->ops; op; op = op->next)
		if (!op->finished && !op->inflight && op->waitq == RF_WAIT_NONE)
			rf_op_advance(op);
}

static void loop_free_finished(struct redfish *rf)
{
	while (rf->finished) {
		struct rf_op *op = rf->finished;
		rf->finished = op->fin_next;
		ops_unlink_free(rf, op);
	}
}

static void loop_events(struct redfish *rf, int wait_ms)
{
	struct epoll_event evs[RF_EVENTS];
	int running = 0;
	int n = epoll_wait(rf->epfd, evs, RF_EVENTS, wait_ms);
	for (int i = 0; i < n; i++) {
		if (evs[i].data.u64 == RF_WAKE_KEY) {
			uint64_t v;
			ssize_t r = read(rf->wakefd, &v, sizeof(v));
			(void)r;
			continue;
		}
		struct rf_shard *sh = &rf->shards[evs[i].data.u64 >> 32];
		int fd = (int)(uint32_t)evs[i].data.u64;
		int flags = 0;
		if (evs[i].events & (EPOLLIN | EPOLLHUP))
			flags |= CURL_CSELECT_IN;
		if (evs[i].events & EPOLLOUT)
			flags |= CURL_CSELECT_OUT;
		if (evs[i].events & EPOLLERR)
			flags |= CURL_CSELECT_ERR;
		sh->dirty = 1;
		curl_multi_socket_action(sh->multi, fd, flags, &running);
	}
	int64_t now = rf_now_ms();
	for (int i = 0; i < rf->nshards; i++) {
		struct rf_shard *sh = &rf->shards[i];
		if (now >= sh->due_ms) {
			sh->due_ms = INT64_MAX;
			sh->dirty = 1;
			curl_multi_socket_action(sh->multi, CURL_SOCKET_TIMEOUT, 0, &running);
		}
	}
}

static void *loop_main(void *arg)
{
	struct redfish *rf = arg;
	int stopping = 0;
	int failed_all = 0;
	int wait_ms = 0;

	for (;;) {
		loop_events(rf, wait_ms);
		loop_read_done(rf);
		loop_take_inbox(rf, &stopping);
		if (stopping && !failed_all) {
			for (struct rf_op *op = rf->ops; op; op = op->next)
				if (!op->logout)
					rf_op_fail(op, KILN_ERROR, "kilnd is stopping");
			failed_all = 1;
		}
		loop_drain_waiting(rf);
		if (rf_now_ms() >= rf->walk_due_ms)
			loop_walk(rf);
		loop_free_finished(rf);
		if (loop_reap_retired(rf, stopping) > 0)
			rf->walk_due_ms = 0; /* start the logouts now */
		if (stopping && !rf->ops) {
			pthread_mutex_lock(&rf->lock);
			int empty = rf->bmcs == NULL;
			pthread_mutex_unlock(&rf->lock);
			if (empty)
				break;
			wait_ms = 0;
			continue;
		}
		int64_t curl_due = loop_curl_due(rf);
		int64_t next = rf->walk_due_ms < curl_due ? rf->walk_due_ms : curl_due;
		int64_t wait = next - rf_now_ms();
		wait_ms = wait < 0 ? 0 : wait > RF_POLL_MAX_MS ? RF_POLL_MAX_MS : (int)wait;
	}
	return NULL;
}

/* --- the public interface ---------------------------------------------------------------- */

int redfish_start(struct redfish **out, const struct redfish_config *cfg)
{
	struct redfish *rf = calloc(1, sizeof(*rf));
	if (!rf)
		return kiln_fail(KILN_ERROR, "out of memory");
	rf->cfg = *cfg;
	if (rf->cfg.max_inflight <= 0)
		rf->cfg.max_inflight = 64;
	if (rf->cfg.connect_timeout_ms <= 0)
		rf->cfg.connect_timeout_ms = 5000;
	if (rf->cfg.request_timeout_ms <= 0)
		rf->cfg.request_timeout_ms = 30000;
	if (rf->cfg.action_timeout_ms <= 0)
		rf->cfg.action_timeout_ms = 120000;
	if (rf->cfg.max_body == 0)
		rf->cfg.max_body = 16u << 20;
	if (rf->cfg.status_timeout_ms <= 0 || rf->cfg.status_timeout_ms > rf->cfg.request_timeout_ms)
		rf->cfg.status_timeout_ms = rf->cfg.request_timeout_ms;
	if (rf->cfg.share < 1)
		rf->cfg.share = 1;
	if (rf->cfg.max_handshakes <= 0)
		rf->cfg.max_handshakes = RF_HANDSHAKES_DEFAULT / rf->cfg.share < 8
						 ? 8
						 : RF_HANDSHAKES_DEFAULT / rf->cfg.share;
	if (rf->cfg.max_connections <= 0) {
		/* a kept TLS connection is a descriptor and ~72 kB: keep them for a fleet that
		 * fits in three quarters of the descriptors (the soft limit raised to the hard
		 * one), so that steady sweeps need no handshakes; the rest is the API's */
		struct rlimit rl;
		rlim_t lim = 683;
		if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
			if (rl.rlim_cur < rl.rlim_max) {
				rlim_t cur = rl.rlim_cur;
				rl.rlim_cur = rl.rlim_max;
				if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
					rl.rlim_cur = cur;
			}
			lim = rl.rlim_cur;
		}
		lim = lim / 4 * 3 / (rlim_t)rf->cfg.share;
		rf->cfg.max_connections = lim > RF_CONNECTIONS_MAX ? RF_CONNECTIONS_MAX
								   : lim < 64 ? 64 : (int)lim;
	}
	pthread_mutex_init(&rf->lock, NULL);
	rf->inbox_tail = &rf->inbox;
	rf->wakefd = -1;
	rf->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (rf->epfd < 0) {
		redfish_stop(rf);
		return kiln_fail(KILN_ERROR, "epoll_create1: %s", strerror(errno));
	}
	rf->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = RF_WAKE_KEY};
	if (rf->wakefd < 0 || epoll_ctl(rf->epfd, EPOLL_CTL_ADD, rf->wakefd, &ev) < 0) {
		redfish_stop(rf);
		return kiln_fail(KILN_ERROR, "eventfd: %s", strerror(errno));
	}
	rf->shards = calloc(RF_SHARDS, sizeof(*rf->shards));
	if (!rf->shards) {
		redfish_stop(rf);
		return kiln_fail(KILN_ERROR, "out of memory");
	}
	rf->nshards = RF_SHARDS;
	for (int i = 0; i < rf->nshards; i++) {
		struct rf_shard *sh = &rf->shards[i];
		sh->rf = rf;
		sh->index = i;
		sh->due_ms = INT64_MAX;
		sh->multi = curl_multi_init();
		if (!sh->multi) {
			redfish_stop(rf);
			return kiln_fail(KILN_ERROR, "curl_multi_init failed");
		}
		long keep = rf->cfg.max_connections / rf->nshards;
		curl_multi_setopt(sh->multi, CURLMOPT_MAXCONNECTS, keep < 8 ? 8L : keep);
		/* the socket interface: curl looks only at sockets that have events, where
		 * curl_multi_perform polled every transfer on every turn (a poll() each) */
		curl_multi_setopt(sh->multi, CURLMOPT_SOCKETFUNCTION, loop_on_socket);
		curl_multi_setopt(sh->multi, CURLMOPT_SOCKETDATA, sh);
		curl_multi_setopt(sh->multi, CURLMOPT_TIMERFUNCTION, loop_on_timer);
		curl_multi_setopt(sh->multi, CURLMOPT_TIMERDATA, sh);
	}
	if (pthread_create(&rf->thread, NULL, loop_main, rf) != 0) {
		redfish_stop(rf);
		return kiln_fail(KILN_ERROR, "cannot start the Redfish loop thread");
	}
	rf->thread_started = 1;
	*out = rf;
	return 0;
}

void redfish_stop_begin(struct redfish *rf)
{
	if (!rf || !rf->thread_started)
		return;
	pthread_mutex_lock(&rf->lock);
	rf->stopping = 1;
	pthread_mutex_unlock(&rf->lock);
	loop_wake(rf);
}

void redfish_stop(struct redfish *rf)
{
	if (!rf)
		return;
	if (rf->thread_started) {
		redfish_stop_begin(rf);
		pthread_join(rf->thread, NULL);
	}
	while (rf->bmcs) {
		struct redfish_bmc *b = rf->bmcs;
		rf->bmcs = b->next;
		bmc_free(b);
	}
	for (int i = 0; rf->shards && i < rf->nshards; i++)
		if (rf->shards[i].multi)
			curl_multi_cleanup(rf->shards[i].multi);
	free(rf->shards);
	rf_ca_free_all(rf);
	if (rf->wakefd >= 0)
		close(rf->wakefd);
	if (rf->epfd >= 0)
		close(rf->epfd);
	pthread_mutex_destroy(&rf->lock);
	free(rf);
}

int redfish_bmc_new(struct redfish *rf, struct redfish_bmc **out, const struct bmc_target *t)
{
	struct redfish_bmc *b = NULL;
	char base[600];
	int plain = t->protocol == BMC_REDFISH_HTTP;

	if (t->protocol != BMC_REDFISH && !plain)
		return kiln_fail(KILN_EINVAL, "not a Redfish target");
	if (!t->host || !t->host[0])
		return kiln_fail(KILN_EINVAL, "node '%s' has no BMC host", t->node_name);
	int port = t->port > 0 ? t->port : (plain ? 80 : 443);
	int bracket = strchr(t->host, ':') != NULL; /* IPv6 literal */
	snprintf(base, sizeof(base), "%s://%s%s%s:%d", plain ? "http" : "https",
		 bracket ? "[" : "", t->host, bracket ? "]" : "", port);

	b = calloc(1, sizeof(*b));
	if (!b)
		return kiln_fail(KILN_ERROR, "out of memory");
	b->node_id = t->node_id;
	b->cred_version = t->credentials_version;
	b->name = xstrdup(t->node_name ? t->node_name : t->host);
	b->base_url = xstrdup(base);
	b->user = xstrdup(t->user);
	if (secret_seal(&b->password, t->password) < 0) {
		bmc_free(b);
		return kiln_fail_prefix(KILN_ERROR, "redfish: %s", t->node_name);
	}
	b->plain_http = plain;
	unsigned char addr[16];
	b->ip_literal = inet_pton(AF_INET, t->host, addr) == 1 || inet_pton(AF_INET6, t->host, addr) == 1;
	b->tls_insecure = t->tls_mode == TLS_INSECURE;
	if (t->tls_mode == TLS_CA)
		b->ca_file = xstrdup(t->tls_ca_file);
	if (t->tls_mode == TLS_FINGERPRINT)
		b->fingerprint = xstrdup(t->tls_fingerprint);
	b->want_system = t->bmc_system && t->bmc_system[0] ? xstrdup(t->bmc_system) : NULL;

	pthread_mutex_lock(&rf->lock);
	b->shard = rf->next_shard++ % rf->nshards;
	if (rf->next_shard >= rf->nshards)
		rf->next_shard = 0;
	b->next = rf->bmcs;
	rf->bmcs = b;
	pthread_mutex_unlock(&rf->lock);
	*out = b;
	return 0;
}

int redfish_bmc_rejected(const struct redfish_bmc *bmc)
{
	return __atomic_load_n(&bmc->rejected, __ATOMIC_RELAXED);
}

void redfish_bmc_retire(struct redfish *rf, struct redfish_bmc *bmc)
{
	if (!rf || !bmc)
		return;
	pthread_mutex_lock(&rf->lock);
	if (!bmc->retired)
		rf->retired_count++;
	bmc->retired = 1;
	pthread_mutex_unlock(&rf->lock);
	loop_wake(rf);
}

int redfish_submit(struct redfish *rf, struct redfish_bmc *bmc, const struct bmc_op *op,
		   bmc_done_fn done, void *ud)
{
	struct rf_op *o = calloc(1, sizeof(*o));
	if (!o)
		return kiln_fail(KILN_ERROR, "out of memory");
	o->rf = rf;
	o->bmc = bmc;
	o->op = *op;
	o->media_url = xstrdup(op->media_url);
	o->op.media_url = o->media_url;
	o->done = done;
	o->ud = ud;
	o->pushed_tail = &o->pushed;

	pthread_mutex_lock(&rf->lock);
	*rf->inbox_tail = o; /* keep submission order */
	rf->inbox_tail = &o->next;
	pthread_mutex_unlock(&rf->lock);
	loop_wake(rf);
	return 0;
}
