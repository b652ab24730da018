/* The Redfish driver's lifecycle, its loop thread, and operations as queues of steps. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>

#include "bmc/redfish/internal.h"
#include "kiln/error.h"
#include "kiln/parse.h"
#include "store/store.h"

#define RF_POLL_MAX_MS 1000
#define RF_HANDSHAKES_DEFAULT 64
#define RF_CONNECTIONS_MAX 100000

/* --- steps ------------------------------------------------------------------------------ */

void rf_step_free(struct rf_step *s)
{
	if (!s)
		return;
	free(s->method);
	free(s->path);
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

/* --- task monitors ---------------------------------------------------------------------- */

static int task_poll(struct rf_op *op, const struct rf_reply *r);

static void task_push_poll(struct rf_op *op, long retry_after_s)
{
	long delay = retry_after_s >= 0 ? retry_after_s * 1000 : 500;
	if (delay > 10000)
		delay = 10000;
	rf_push_delayed(op, "GET", op->task_uri, delay, task_poll);
	op->last_pushed->flags |= RF_ALLOW_ERROR;
}

int rf_task_follow(struct rf_op *op, const char *location, long retry_after_s, rf_call_fn then)
{
	if (!location || !location[0])
		return kiln_fail(KILN_EPROTO, "202 Accepted without a task monitor Location");
	op->task_then = then;
	free(op->task_uri);
	op->task_uri = xstrdup(location);
	task_push_poll(op, retry_after_s);
	return 0;
}

static int task_poll(struct rf_op *op, const struct rf_reply *r)
{
	const char *state = NULL;
	if (r->status >= 400)
		return rf_fail_reply("GET", "task monitor", r);
	if (r->json)
		state = json_string_value(json_object_get(r->json, "TaskState"));
	int running = r->status == 202 ||
		      (state && (strcmp(state, "New") == 0 || strcmp(state, "Running") == 0 ||
				 strcmp(state, "Pending") == 0 || strcmp(state, "Starting") == 0 ||
				 strcmp(state, "Stopping") == 0 || strcmp(state, "Service") == 0 ||
				 strcmp(state, "Suspended") == 0 || strcmp(state, "Interrupted") == 0));
	if (running) {
		if (rf_now_ms() > op->deadline_ms)
			return kiln_fail(KILN_ETIMEOUT, "task still %s after the action timeout",
					 state ? state : "running");
		task_push_poll(op, r->retry_after_s);
		return 0;
	}
	if (state && strcmp(state, "Completed") != 0) {
		char text[300] = "";
		json_t *msgs = json_object_get(r->json, "Messages");
		json_t *m = json_array_get(msgs, 0);
		if (m)
			snprintf(text, sizeof(text), ": %s: %s",
				 json_string_value(json_object_get(m, "MessageId"))
					 ? json_string_value(json_object_get(m, "MessageId")) : "",
				 json_string_value(json_object_get(m, "Message"))
					 ? json_string_value(json_object_get(m, "Message")) : "");
		return kiln_fail(KILN_ERROR, "task ended %s%s", state, text);
	}
	op->task_done = 1;
	if (op->task_then)
		rf_push_call(op, op->task_then);
	return 0;
}

/* --- errors ----------------------------------------------------------------------------- */

void rf_error_text(char *out, size_t n, const json_t *body)
{
	out[0] = '\0';
	json_t *err = json_object_get(body, "error");
	if (!json_is_object(err))
		return;
	const char *id = json_string_value(json_object_get(err, "code"));
	const char *msg = json_string_value(json_object_get(err, "message"));
	json_t *info = json_array_get(json_object_get(err, "@Message.ExtendedInfo"), 0);
	if (json_is_object(info)) {
		const char *iid = json_string_value(json_object_get(info, "MessageId"));
		const char *imsg = json_string_value(json_object_get(info, "Message"));
		if (iid)
			id = iid;
		if (imsg)
			msg = imsg;
	}
	snprintf(out, n, "%s%s%s", id ? id : "", id && msg ? ": " : "", msg ? msg : "");
}

int rf_fail_reply(const char *method, const char *path, const struct rf_reply *r)
{
	if (r->status == 0 && r->tls_pin_mismatch)
		return kiln_fail(KILN_ETLS, "%s %s: %s", method, path, r->curl_error);
	if (r->status == 0)
		return kiln_fail(r->curl_code == CURLE_OPERATION_TIMEDOUT ? KILN_ETIMEOUT : KILN_ERROR,
				 "%s %s: %s", method, path, r->curl_error ? r->curl_error : "no response");
	char text[400];
	json_t *body = r->json;
	json_t *parsed = NULL;
	if (!body && r->body_len)
		body = parsed = json_loadb(r->body, r->body_len, 0, NULL);
	rf_error_text(text, sizeof(text), body);
	json_decref(parsed);
	int code = KILN_ERROR;
	if (r->status == 401 || r->status == 403)
		code = KILN_EAUTH;
	else if (r->status == 404)
		code = KILN_ENOTFOUND;
	else if (r->status == 409 || r->status == 503)
		code = KILN_EBUSY;
	else if (r->status == 400)
		code = KILN_EINVAL;
	if (text[0])
		return kiln_fail(code, "%s %s: %ld '%s'", method, path, r->status, text);
	return kiln_fail(code, "%s %s: HTTP %ld", method, path, r->status);
}

const char *rf_profile_name(enum rf_profile p)
{
	switch (p) {
	case RF_DELL: return "dell";
	case RF_HPE: return "hpe";
	case RF_OPENBMC: return "openbmc";
	default: return "generic";
	}
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
	if (op->finished)
		return;
	op->finished = 1;
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
	if (op->done)
		op->done(op->ud, &res);
}

void rf_op_fail(struct rf_op *op, int code, const char *msg)
{
	op_done(op, code, msg);
}

/* Runs what can run now: call steps, the next request when it is due and a slot is free. */
void rf_op_advance(struct rf_op *op)
{
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
		if (s->not_before_ms > rf_now_ms() || op->rf->inflight >= op->rf->cfg.max_inflight)
			return;
		/* new TLS connections are CPU-bound on both ends: a few at a time finish sooner
		 * than thousands at once that all run into the connect timeout */
		if (!rf_bmc_connected(op->bmc) && !op->bmc->plain_http &&
		    op->rf->handshaking >= op->rf->cfg.max_handshakes)
			return;
		if (rf_step_needs_login(op, s)) {
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

/* When the op's next step may start (for the poll timeout); INT64_MAX when it waits on I/O
 * or for a request slot (a finishing transfer wakes the loop). */
static int64_t op_due_ms(const struct rf_op *op)
{
	if (op->finished || op->inflight || !op->queue || op->pushed)
		return op->finished || op->inflight ? INT64_MAX : 0;
	const struct redfish *rf = op->rf;
	if (!op->queue->call && (rf->inflight >= rf->cfg.max_inflight ||
				 (!rf_bmc_connected(op->bmc) && !op->bmc->plain_http &&
				  rf->handshaking >= rf->cfg.max_handshakes)))
		return INT64_MAX;
	return op->queue->not_before_ms;
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
	if (!op->bmc->discovered)
		return rf_discover_begin(op);
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
	if (b->password) {
		explicit_bzero(b->password, strlen(b->password));
		free(b->password);
	}
	free(b->ca_file);
	free(b->fingerprint);
	free(b->want_system);
	rf_session_forget(b);
	rf_bmc_forget_discovery(b);
	free(b);
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
	op->next = rf->ops;
	rf->ops = op;
	b->nops++;
	return 1;
}

/* --- the loop --------------------------------------------------------------------------- */

static void loop_take_inbox(struct redfish *rf, int *stopping)
{
	pthread_mutex_lock(&rf->lock);
	struct rf_op *in = rf->inbox;
	rf->inbox = NULL;
	*stopping = rf->stopping;
	pthread_mutex_unlock(&rf->lock);

	while (in) {
		struct rf_op *op = in;
		in = in->next;
		op->next = rf->ops;
		rf->ops = op;
		op->bmc->nops++;
		op->bmc_tried = op->bmc->tried;
		op->bmc->tried = 1;
		kiln_error_clear();
		int rc = *stopping ? kiln_fail(KILN_ERROR, "kilnd is stopping") : op_begin(op);
		if (rc < 0)
			rf_op_fail(op, rc, kiln_error_last());
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

static void *loop_main(void *arg)
{
	struct redfish *rf = arg;
	int stopping = 0;
	int failed_all = 0;

	for (;;) {
		loop_take_inbox(rf, &stopping);
		if (stopping && !failed_all) {
			for (struct rf_op *op = rf->ops; op; op = op->next)
				if (!op->logout)
					rf_op_fail(op, KILN_ERROR, "kilnd is stopping");
			failed_all = 1;
		}

		int running = 0;
		CURLMcode mc = curl_multi_perform(rf->multi, &running);
		(void)mc;
		CURLMsg *msg;
		int left;
		while ((msg = curl_multi_info_read(rf->multi, &left)))
			if (msg->msg == CURLMSG_DONE)
				rf_loop_complete(rf, msg);

		/* let waiting steps go, then drop finished operations */
		int64_t now = rf_now_ms();
		int64_t next_due = now + RF_POLL_MAX_MS;
		for (struct rf_op *op = rf->ops; op; op = op->next) {
			if (!op->finished && !op->inflight)
				rf_op_advance(op);
			int64_t due = op_due_ms(op);
			if (due < next_due)
				next_due = due;
		}
		struct rf_op **pp = &rf->ops;
		while (*pp) {
			struct rf_op *op = *pp;
			if (op->finished || (op->logout && !op->inflight && !op->queue)) {
				*pp = op->next;
				op->bmc->nops--;
				op_free(op);
			} else {
				pp = &op->next;
			}
		}
		if (loop_reap_retired(rf, stopping) > 0)
			next_due = 0; /* start the logouts now */
		if (stopping && !rf->ops) {
			pthread_mutex_lock(&rf->lock);
			int empty = rf->bmcs == NULL;
			pthread_mutex_unlock(&rf->lock);
			if (empty)
				break;
			continue;
		}
		int64_t wait = next_due - rf_now_ms();
		if (wait < 0)
			wait = 0;
		if (wait > RF_POLL_MAX_MS)
			wait = RF_POLL_MAX_MS;
		curl_multi_poll(rf->multi, NULL, 0, (int)wait, NULL);
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
	if (rf->cfg.max_handshakes <= 0)
		rf->cfg.max_handshakes = RF_HANDSHAKES_DEFAULT;
	if (rf->cfg.max_connections <= 0) {
		/* a kept TLS connection is a descriptor and ~72 kB: keep them for a fleet that
		 * fits in half the descriptors, so that steady sweeps need no handshakes */
		struct rlimit rl;
		rlim_t half = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? rl.rlim_cur / 2 : 512;
		rf->cfg.max_connections = half > RF_CONNECTIONS_MAX ? RF_CONNECTIONS_MAX
								     : half < 64 ? 64 : (int)half;
	}
	pthread_mutex_init(&rf->lock, NULL);
	rf->multi = curl_multi_init();
	if (!rf->multi) {
		redfish_stop(rf);
		return kiln_fail(KILN_ERROR, "curl_multi_init failed");
	}
	curl_multi_setopt(rf->multi, CURLMOPT_MAXCONNECTS, (long)rf->cfg.max_connections);
	if (pthread_create(&rf->thread, NULL, loop_main, rf) != 0) {
		redfish_stop(rf);
		return kiln_fail(KILN_ERROR, "cannot start the Redfish loop thread");
	}
	rf->thread_started = 1;
	*out = rf;
	return 0;
}

void redfish_stop(struct redfish *rf)
{
	if (!rf)
		return;
	if (rf->thread_started) {
		pthread_mutex_lock(&rf->lock);
		rf->stopping = 1;
		pthread_mutex_unlock(&rf->lock);
		curl_multi_wakeup(rf->multi);
		pthread_join(rf->thread, NULL);
	}
	while (rf->bmcs) {
		struct redfish_bmc *b = rf->bmcs;
		rf->bmcs = b->next;
		bmc_free(b);
	}
	if (rf->multi)
		curl_multi_cleanup(rf->multi);
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
	b->name = xstrdup(t->node_name ? t->node_name : t->host);
	b->base_url = xstrdup(base);
	b->user = xstrdup(t->user);
	b->password = xstrdup(t->password);
	b->plain_http = plain;
	b->tls_insecure = t->tls_mode == TLS_INSECURE;
	if (t->tls_mode == TLS_CA)
		b->ca_file = xstrdup(t->tls_ca_file);
	if (t->tls_mode == TLS_FINGERPRINT)
		b->fingerprint = xstrdup(t->tls_fingerprint);
	b->want_system = t->bmc_system && t->bmc_system[0] ? xstrdup(t->bmc_system) : NULL;

	pthread_mutex_lock(&rf->lock);
	b->next = rf->bmcs;
	rf->bmcs = b;
	pthread_mutex_unlock(&rf->lock);
	*out = b;
	return 0;
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
	curl_multi_wakeup(rf->multi);
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
	struct rf_op **pp = &rf->inbox; /* keep submission order */
	while (*pp)
		pp = &(*pp)->next;
	*pp = o;
	pthread_mutex_unlock(&rf->lock);
	curl_multi_wakeup(rf->multi);
	return 0;
}
