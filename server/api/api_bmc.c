/* SPDX-License-Identifier: Apache-2.0 */
/* Live BMC calls over a noderange: power, boot override, virtual media, sensors, event logs
 * and inventory, each one request fanned out by the BMC engine with a result per node. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/handlers.h"
#include "fleet/guard.h"
#include "bmc/bmc.h"
#include "bmc/target.h"
#include "kiln/error.h"
#include "kiln/noderange.h"
#include "kiln/parse.h"
#include "fleet/live.h"
#include "cluster/node_lock.h"

#define URL_MAX 2048

/* [power] batch and interval: the pacing of a power action that does not give its own. */
static pthread_mutex_t pacing_lock = PTHREAD_MUTEX_INITIALIZER;
static int pacing_batch;
static int64_t pacing_interval;

void api_power_pacing_set(int batch, int64_t interval_s)
{
	pthread_mutex_lock(&pacing_lock);
	pacing_batch = batch;
	pacing_interval = interval_s;
	pthread_mutex_unlock(&pacing_lock);
}

/* A paced action: size nodes at a time (0: all at once), interval_s between two batches. */
struct pacing {
	int size;
	int64_t interval_s;
};

/* A fan-out being built: the expanded range and the call it becomes. */
struct fan {
	struct kiln_nodelist range;
	struct live_call *call;
};

static void fan_free(struct fan *f)
{
	live_call_free(f->call);
	kiln_nodelist_free(&f->range);
}

static int cmp_node(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, (*(struct node *const *)b)->name);
}

static void node_error(struct live_node *n, const char *msg)
{
	json_object_set_new(n->out, "error", json_string(msg));
}

static int cmp_down(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = ((const struct fleet_down *)b)->node_id;

	return x < y ? -1 : x > y;
}

/*
 * A BMC the poller counts unreachable (in down[0..ndown), by node id) is answered at once
 * from its last error: a live call does not wait out the timeout again.
 */
static void fan_known_down(struct live_node *n, const struct fleet_down *down, size_t ndown)
{
	const struct fleet_down *d = ndown ? bsearch(&n->node->id, down, ndown, sizeof(*down),
						     cmp_down)
					   : NULL;
	char since[KILN_TIME_UTC_LEN], msg[700];

	if (!d)
		return;
	kiln_time_utc(since, d->down_since);
	snprintf(msg, sizeof(msg), "unreachable since %s: %.600s", since,
		 d->error ? d->error : "no answer");
	node_error(n, msg);
	json_object_set_new(n->out, "unreachable_since", json_integer(d->down_since));
	n->targeted = 0;
}

/*
 * Expands range (answers 400/404 itself) and builds each node's target: unknown nodes,
 * agent-only nodes, passwords that do not decrypt and (without retry) BMCs known to be down
 * become that node's answer. Returns 0 or a negative code with the answer set.
 */
static int fan_open(struct api_ctx *c, struct fan *f, const char *range, const char *field,
		    int retry, int flags)
{
	struct node **all = NULL;
	struct fleet_down *down = NULL;
	unsigned char *taken = NULL;
	size_t nall = 0, ndown = 0, found = 0;
	int rc;

	memset(f, 0, sizeof(*f));
	if (!range || !range[0]) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, field, "%s is required", field);
		return KILN_EINVAL;
	}
	if (!c->live) {
		api_fail(c, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, "kilnd runs without a BMC engine");
		return KILN_ERROR;
	}
	if ((rc = api_range_expand(c, &f->range, range, flags | API_RANGE_SORTED)) < 0) {
		if (c->reply && strcmp(field, "range") != 0) /* media's "node" */
			json_object_set_new(c->reply, "field", json_string(field));
		return rc;
	}
	if (f->range.count == 0) { /* a read whose exclusions left nothing: an empty answer */
		api_reply(c, MHD_HTTP_OK, json_array());
		return KILN_ENOTFOUND;
	}
	if ((rc = store_node_list(c->st, &all, &nall)) < 0 ||
	    (!retry && (rc = store_fleet_down_list(c->st, &down, &ndown)) < 0)) {
		api_fail_code(c, rc, NULL);
		goto cleanup;
	}
	f->call = live_call_new(f->range.count);
	taken = calloc(nall ? nall : 1, 1);
	if (!f->call || !taken) {
		rc = KILN_ERROR;
		api_fail(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
		goto cleanup;
	}
	f->call->count = 0;
	for (size_t i = 0; i < f->range.count; i++) {
		struct live_node *n = &f->call->nodes[f->call->count];
		struct node **hit = bsearch(&f->range.names[i], all, nall, sizeof(*all), cmp_node);

		n->name = strdup(f->range.names[i]);
		n->out = json_pack("{s:s}", "node", f->range.names[i]);
		n->batch = 1;
		if (!n->name || !n->out) {
			f->call->count++;
			rc = KILN_ERROR;
			api_fail(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
			goto cleanup;
		}
		f->call->count++;
		if (!hit) {
			node_error(n, "no such node");
			continue;
		}
		n->node = *hit; /* taken from the list below */
		taken[hit - all] = 1;
		found++;
		kiln_error_clear();
		rc = bmc_target_from_node(&n->target, &n->password, n->node, c->key);
		if (rc < 0) {
			node_error(n, rc == KILN_ENOTFOUND ? "no BMC" : kiln_error_last());
			continue;
		}
		n->targeted = 1;
		fan_known_down(n, down, ndown);
	}
	rc = 0;
	if (found == 0) {
		api_fail(c, MHD_HTTP_NOT_FOUND, field, "no node matches '%.200s'", range);
		rc = KILN_ENOTFOUND;
	}
cleanup:
	for (size_t j = 0; taken && j < nall; j++)
		if (taken[j])
			all[j] = NULL; /* the call's now */
	node_list_free(all, nall);
	fleet_down_list_free(down, ndown);
	free(taken);
	return rc;
}

/*
 * Marks the targeted nodes busy; a node already busy gets the error "action in flight".
 * When every targeted node was busy, answers 409 and returns KILN_EBUSY.
 */
static int fan_claim(struct api_ctx *c, struct fan *f)
{
	size_t want = 0;
	int64_t *ids = calloc(f->call->count ? f->call->count : 1, sizeof(*ids));
	int *claimed = calloc(f->call->count ? f->call->count : 1, sizeof(*claimed));
	int got = 0;

	for (size_t i = 0; ids && i < f->call->count; i++)
		if (f->call->nodes[i].targeted)
			ids[want++] = f->call->nodes[i].node->id;
	if (!ids || !claimed || (got = node_lock_claim_each(ids, want, claimed)) < 0) {
		free(ids);
		free(claimed);
		api_fail(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
		return KILN_ERROR;
	}
	for (size_t i = 0, k = 0; i < f->call->count; i++) {
		struct live_node *n = &f->call->nodes[i];

		if (!n->targeted)
			continue;
		if (claimed[k++]) {
			n->claimed = 1;
		} else {
			n->targeted = 0;
			node_error(n, "action in flight");
		}
	}
	free(ids);
	free(claimed);
	if (want > 0 && got == 0) {
		api_fail(c, MHD_HTTP_CONFLICT, "range", "an action is in flight on every node of "
			 "the range; nothing was sent");
		return KILN_EBUSY;
	}
	return 0;
}

/* Answers 200 at once with the array of per-node objects (a dry run). */
static void fan_reply_now(struct api_ctx *c, struct fan *f)
{
	json_t *arr = json_array();

	for (size_t i = 0; arr && i < f->call->count; i++)
		if (json_array_append(arr, f->call->nodes[i].out) < 0) {
			json_decref(arr);
			arr = NULL;
		}
	if (!arr) {
		api_fail(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
		return;
	}
	api_reply(c, MHD_HTTP_OK, arr);
}

/* The answer's reader: runs on the connection's thread as libmicrohttpd has room. */
static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	long n = live_call_read(cls, buf, max);

	(void)pos;
	if (n == LIVE_READ_END)
		return MHD_CONTENT_READER_END_OF_STREAM;
	if (n == LIVE_READ_ERROR)
		return MHD_CONTENT_READER_END_WITH_ERROR;
	return (ssize_t)n; /* 0: suspended until the live thread has more */
}

static void stream_free(void *cls)
{
	live_call_release(cls);
}

static void conn_suspend(void *ud)
{
	MHD_suspend_connection(ud);
}

static void conn_resume(void *ud)
{
	MHD_resume_connection(ud);
}

/* NDJSON when the client asks for it (Accept: application/x-ndjson). */
static enum live_form fan_form(struct api_ctx *c)
{
	const char *accept = MHD_lookup_connection_value(c->conn, MHD_HEADER_KIND,
							 MHD_HTTP_HEADER_ACCEPT);

	return accept && strstr(accept, "application/x-ndjson") ? LIVE_NDJSON : LIVE_ARRAY;
}

/*
 * Hands the call to the live thread and answers with its stream: 200 at once, then an
 * object per node as each finishes (NDJSON) or the array in node order. The request's
 * thread goes on serving others; the connection waits suspended between results.
 */
static void fan_start(struct api_ctx *c, struct fan *f)
{
	struct live_waker w = { conn_suspend, conn_resume, c->conn };
	struct live_call *call = f->call;
	struct MHD_Response *resp;
	char count[24];

	call->form = fan_form(c);
	if (c->caller.name && !(call->audit_actor = strdup(c->caller.name))) {
		api_fail(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
		return;
	}
	if (live_call_start(c->live, call, &w) < 0) {
		api_fail(c, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, "%s", kiln_error_last());
		return;
	}
	f->call = NULL; /* the live thread's and the stream's now */
	resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, stream_read, call,
						 stream_free);
	if (!resp) {
		/* the call runs to its end (audit rows) without a reader */
		live_call_release(call);
		api_fail(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
		return;
	}
	snprintf(count, sizeof(count), "%zu", call->count);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
				call->form == LIVE_NDJSON ? "application/x-ndjson"
							  : "application/json");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	MHD_add_response_header(resp, "X-Kiln-Nodes", count);
	c->status = MHD_HTTP_OK;
	c->response = resp;
}

/* GET's retry_unreachable=1|true. */
static int query_retry(struct api_ctx *c)
{
	const char *v = api_query(c, "retry_unreachable");

	return v && (strcmp(v, "1") == 0 || strcmp(v, "true") == 0);
}

/* A read over ?range=: no audit, no busy mark. */
static void fan_read(struct api_ctx *c, const struct bmc_op *op, const char *range,
		     const char *field)
{
	struct fan f;

	if (fan_open(c, &f, range, field, query_retry(c), 0) < 0)
		goto cleanup;
	f.call->op = *op;
	fan_start(c, &f);
cleanup:
	fan_free(&f);
}

/* Numbers the targeted nodes' batches in range order; returns the number of batches. */
static int fan_batches(struct fan *f, const struct pacing *pace)
{
	int k = 0;

	for (size_t i = 0; i < f->call->count; i++) {
		struct live_node *n = &f->call->nodes[i];

		if (!n->targeted)
			continue;
		n->batch = pace && pace->size > 0 ? k / pace->size + 1 : 1;
		k++;
		if (pace && pace->size > 0)
			json_object_set_new(n->out, "batch", json_integer(n->batch));
	}
	return k == 0 ? 0 : pace && pace->size > 0 ? (k - 1) / pace->size + 1 : 1;
}

/* A disruptive action's guard: the work on each node is looked at before it is sent. */
struct act_guard {
	int force;
	int drain;
	int64_t drain_timeout_s;
};

/*
 * An action: targets, the busy marks (every node of the range claimed before the first
 * batch), dry_run (the targets and the action, nothing sent, no audit row), an audit row per
 * node before its call and its outcome after (the live thread's); paced (pace not NULL,
 * size > 0): one batch after the other, interval_s apart; guard not NULL: a disruptive
 * action, the live module's guard looks at each node's work first (off this thread).
 */
static void fan_act(struct api_ctx *c, const struct bmc_op *op, const char *range,
		    const char *field, const char *audit_action, json_t *per_node, int dry_run,
		    int retry, const struct pacing *pace, const struct act_guard *guard)
{
	struct fan f;
	const char *key;
	json_t *v;
	int batches;

	if (fan_open(c, &f, range, field, retry, API_RANGE_ACTION) < 0)
		goto cleanup;
	if (dry_run) {
		for (size_t i = 0; i < f.call->count; i++) {
			struct live_node *n = &f.call->nodes[i];

			if (!n->targeted)
				continue;
			if (node_lock_held(n->node->id)) {
				node_error(n, "action in flight");
				n->targeted = 0;
				continue;
			}
			json_object_foreach(per_node, key, v)
				json_object_set(n->out, key, v);
			json_object_set_new(n->out, "dry_run", json_true());
		}
		fan_batches(&f, pace);
		fan_reply_now(c, &f);
		goto cleanup;
	}
	if (fan_claim(c, &f) < 0)
		goto cleanup;
	for (size_t i = 0; i < f.call->count; i++)
		if (f.call->nodes[i].targeted)
			json_object_foreach(per_node, key, v)
				json_object_set(f.call->nodes[i].out, key, v);
	batches = fan_batches(&f, pace);
	f.call->op = *op;
	if (op->media_url) {
		if (!(f.call->media_url = strdup(op->media_url)))
			goto oom;
		f.call->op.media_url = f.call->media_url;
	}
	f.call->batches = batches > 0 ? batches : 1;
	f.call->interval_s = pace ? pace->interval_s : 0;
	if (guard) {
		f.call->guard = 1;
		f.call->force = guard->force;
		f.call->drain = guard->drain;
		f.call->drain_timeout_s = guard->drain_timeout_s;
	}
	if (!(f.call->audit_action = strdup(audit_action)) ||
	    (per_node && !(f.call->audit_detail = json_dumps(per_node, JSON_COMPACT))))
		goto oom;
	fan_start(c, &f);
	goto cleanup;
oom:
	api_fail(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
cleanup:
	fan_free(&f);
}

/* An integer member of the body within lo..hi; *out keeps its value when absent. */
static int body_int(struct api_ctx *c, int64_t *out, const char *name, int64_t lo, int64_t hi)
{
	json_t *v = json_object_get(c->body, name);

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, name, "%s must be an integer from %lld to %lld",
			 name, (long long)lo, (long long)hi);
		return KILN_EINVAL;
	}
	*out = json_integer_value(v);
	return 0;
}

/* Members of the body other than the names given: 400 naming the first. */
static int body_only(struct api_ctx *c, const char *const *names)
{
	const char *key;
	json_t *v;

	json_object_foreach(c->body, key, v) {
		size_t i;

		for (i = 0; names[i] && strcmp(names[i], key) != 0; i++)
			;
		if (!names[i]) {
			api_fail(c, MHD_HTTP_BAD_REQUEST, key, "unknown field '%.60s'", key);
			return KILN_EINVAL;
		}
	}
	return 0;
}

static const struct {
	const char *name;
	enum bmc_power_action action;
} power_actions[] = {
	{ "on", BMC_ACT_ON },       { "off", BMC_ACT_OFF },     { "soft", BMC_ACT_SOFT },
	{ "reset", BMC_ACT_RESET }, { "cycle", BMC_ACT_CYCLE },
};

void api_power_get(struct api_ctx *c)
{
	struct bmc_op op = { .kind = BMC_OP_POWER_GET };

	fan_read(c, &op, api_query(c, "range"), "range");
}

void api_power_post(struct api_ctx *c)
{
	static const char *const fields[] = { "range", "action", "on_if_off", "dry_run",
					      "batch", "interval_s", "retry_unreachable", "force",
					      "drain", "drain_timeout_s", NULL };
	struct bmc_op op = { .kind = BMC_OP_POWER_ACTION };
	const char *range, *action;
	json_t *per_node = NULL;
	char audit_action[32];
	int dry_run, retry, found = 0;
	int64_t batch, interval_s;
	struct pacing pace;
	struct act_guard guard = { .drain_timeout_s = 3600 };

	pthread_mutex_lock(&pacing_lock);
	batch = pacing_batch;
	interval_s = pacing_interval;
	pthread_mutex_unlock(&pacing_lock);
	if (!api_body_require(c) || body_only(c, fields) < 0 ||
	    api_body_string(c, &range, "range") < 0 || api_body_string(c, &action, "action") < 0 ||
	    api_body_bool(c, &op.on_if_off, "on_if_off") < 0 || api_body_bool(c, &dry_run, "dry_run") < 0 ||
	    api_body_bool(c, &retry, "retry_unreachable") < 0 ||
	    body_int(c, &batch, "batch", 0, 100000) < 0 ||
	    body_int(c, &interval_s, "interval_s", 0, 3600) < 0 ||
	    api_body_bool(c, &guard.force, "force") < 0 || api_body_bool(c, &guard.drain, "drain") < 0 ||
	    body_int(c, &guard.drain_timeout_s, "drain_timeout_s", 1, 7 * 86400) < 0)
		return;
	if (guard.force && guard.drain) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, "drain", "drain and force exclude each other");
		return;
	}
	if (guard.drain && !guard_scheduler_on()) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, "drain", GUARD_DRAIN_NEEDS_SCHEDULER);
		return;
	}
	pace.size = (int)batch;
	pace.interval_s = interval_s;
	if (!action) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, "action",
			 "action is required: on, off, soft, reset or cycle");
		return;
	}
	for (size_t i = 0; i < sizeof(power_actions) / sizeof(power_actions[0]); i++) {
		if (strcmp(action, power_actions[i].name) == 0) {
			op.action = power_actions[i].action;
			found = 1;
		}
	}
	if (!found) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, "action", "action must be on, off, soft, reset or "
			 "cycle, not '%.40s' (power status is GET /power)", action);
		return;
	}
	snprintf(audit_action, sizeof(audit_action), "power.%s", action);
	per_node = op.on_if_off ? json_pack("{s:s, s:b}", "action", action, "on_if_off", 1)
				: json_pack("{s:s}", "action", action);
	if (per_node && pace.size > 0 &&
	    json_object_set_new(per_node, "interval_s", json_integer(interval_s)) < 0) {
		json_decref(per_node);
		per_node = NULL;
	}
	if (!per_node) {
		api_fail(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
		return;
	}
	/* Powering on destroys nothing; every other action is guarded. */
	fan_act(c, &op, range, "range", audit_action, per_node, dry_run, retry, &pace,
		op.action == BMC_ACT_ON ? NULL : &guard);
	json_decref(per_node);
}

static const struct {
	const char *name;
	enum bmc_boot_device dev;
} boot_devices[] = {
	{ "pxe", BMC_BOOT_PXE }, { "cd", BMC_BOOT_CD }, { "disk", BMC_BOOT_DISK },
	{ "bios", BMC_BOOT_BIOS },
};

void api_boot_post(struct api_ctx *c)
{
	static const char *const fields[] = { "range", "device", "persistent", "dry_run",
					      "retry_unreachable", NULL };
	struct bmc_op op = { .kind = BMC_OP_BOOT_SET };
	const char *range, *device;
	json_t *per_node = NULL;
	int dry_run, retry, found = 0;

	if (!api_body_require(c) || body_only(c, fields) < 0 ||
	    api_body_string(c, &range, "range") < 0 || api_body_string(c, &device, "device") < 0 ||
	    api_body_bool(c, &op.persistent, "persistent") < 0 || api_body_bool(c, &dry_run, "dry_run") < 0 ||
	    api_body_bool(c, &retry, "retry_unreachable") < 0)
		return;
	for (size_t i = 0; device && i < sizeof(boot_devices) / sizeof(boot_devices[0]); i++) {
		if (strcmp(device, boot_devices[i].name) == 0) {
			op.boot = boot_devices[i].dev;
			found = 1;
		}
	}
	if (!found) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, "device", "device must be pxe, cd, disk or bios");
		return;
	}
	per_node = json_pack("{s:s, s:s, s:b}", "action", "boot", "device", device, "persistent",
			     op.persistent);
	if (!per_node) {
		api_fail(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
		return;
	}
	fan_act(c, &op, range, "range", "boot.set", per_node, dry_run, retry, NULL, NULL);
	json_decref(per_node);
}

/* A media request names one node: its range must expand to exactly one name. */
static int one_node(struct api_ctx *c, const char *name)
{
	if (!name || !name[0]) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, "node", "node is required");
		return KILN_EINVAL;
	}
	if (!kiln_node_name_valid(name)) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, "node", "node must be one node name, not '%.60s'",
			 name);
		return KILN_EINVAL;
	}
	return 0;
}

static int url_valid(const char *url)
{
	static const char *const schemes[] = { "http://", "https://", "nfs://", "cifs://", "smb://" };

	if (!url || strlen(url) >= URL_MAX)
		return 0;
	for (const char *p = url; *p; p++)
		if ((unsigned char)*p <= ' ' || *p == 0x7f)
			return 0;
	for (size_t i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++)
		if (strncmp(url, schemes[i], strlen(schemes[i])) == 0 && url[strlen(schemes[i])])
			return 1;
	return 0;
}

void api_media_insert(struct api_ctx *c)
{
	static const char *const fields[] = { "node", "url", "force", "dry_run",
					      "retry_unreachable", NULL };
	struct bmc_op op = { .kind = BMC_OP_MEDIA_INSERT };
	const char *node, *url;
	json_t *per_node;
	int dry_run, retry;

	if (!api_body_require(c) || body_only(c, fields) < 0 || api_body_string(c, &node, "node") < 0 ||
	    api_body_string(c, &url, "url") < 0 || api_body_bool(c, &op.force, "force") < 0 ||
	    api_body_bool(c, &dry_run, "dry_run") < 0 ||
	    api_body_bool(c, &retry, "retry_unreachable") < 0 || one_node(c, node) < 0)
		return;
	if (!url_valid(url)) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, "url", "url must be an http, https, nfs or cifs URL "
			 "without spaces");
		return;
	}
	op.media_url = url;
	per_node = json_pack("{s:s, s:s}", "action", "media.insert", "url", url);
	if (!per_node) {
		api_fail(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
		return;
	}
	fan_act(c, &op, node, "node", "media.insert", per_node, dry_run, retry, NULL, NULL);
	json_decref(per_node);
}

void api_media_eject(struct api_ctx *c)
{
	static const char *const fields[] = { "node", "dry_run", "retry_unreachable", NULL };
	struct bmc_op op = { .kind = BMC_OP_MEDIA_EJECT };
	const char *node;
	json_t *per_node;
	int dry_run, retry;

	if (!api_body_require(c) || body_only(c, fields) < 0 || api_body_string(c, &node, "node") < 0 ||
	    api_body_bool(c, &dry_run, "dry_run") < 0 ||
	    api_body_bool(c, &retry, "retry_unreachable") < 0 || one_node(c, node) < 0)
		return;
	per_node = json_pack("{s:s}", "action", "media.eject");
	if (!per_node) {
		api_fail(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
		return;
	}
	fan_act(c, &op, node, "node", "media.eject", per_node, dry_run, retry, NULL, NULL);
	json_decref(per_node);
}

void api_media_get(struct api_ctx *c)
{
	struct bmc_op op = { .kind = BMC_OP_MEDIA_STATUS };
	const char *node = api_query(c, "node");

	if (one_node(c, node) < 0)
		return;
	fan_read(c, &op, node, "node");
}

void api_sensors_get(struct api_ctx *c)
{
	struct bmc_op op = { .kind = BMC_OP_SENSORS };

	fan_read(c, &op, api_query(c, "range"), "range");
}

void api_sel_get(struct api_ctx *c)
{
	struct bmc_op op = { .kind = BMC_OP_SEL };
	const char *since = api_query(c, "since");
	int64_t ago = 0;

	if (since && kiln_parse_duration(&ago, since) < 0) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, "since",
			 "since must be seconds or a duration like 12h, not '%.40s'", since);
		return;
	}
	if (since)
		op.sel_since = (int64_t)time(NULL) - ago;
	fan_read(c, &op, api_query(c, "range"), "range");
}

/* What the BMC says is kept by the poller (the inventory, and the serial agents enroll by). */
void api_inventory_get(struct api_ctx *c)
{
	struct bmc_op op = { .kind = BMC_OP_INVENTORY };

	fan_read(c, &op, api_query(c, "range"), "range");
}
