/* Live BMC calls over a noderange: power, boot override, virtual media, sensors, event logs
 * and inventory, each one request fanned out by the BMC engine with a result per node. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/api_internal.h"
#include "bmc/bmc.h"
#include "bmc/target.h"
#include "kiln/error.h"
#include "kiln/noderange.h"
#include "kiln/parse.h"

#define URL_MAX 2048

/*
 * Nodes with an action (power, boot, media) running through this API: a second action on
 * one of them is refused, never queued behind the first. Reads are not tracked (the engine
 * runs them after the action, one at a time per node).
 */
static pthread_mutex_t busy_lock = PTHREAD_MUTEX_INITIALIZER;
static int64_t *busy_ids;
static size_t busy_count, busy_cap;

static int busy_find(int64_t id)
{
	for (size_t i = 0; i < busy_count; i++)
		if (busy_ids[i] == id)
			return (int)i;
	return -1;
}

/* Claims id; 1 when claimed, 0 when it was busy, negative on ENOMEM. Caller holds the lock. */
static int busy_claim_locked(int64_t id)
{
	if (busy_find(id) >= 0)
		return 0;
	if (busy_count == busy_cap) {
		size_t cap = busy_cap ? busy_cap * 2 : 64;
		int64_t *ids = realloc(busy_ids, cap * sizeof(*ids));

		if (!ids)
			return kiln_fail(KILN_ERROR, "out of memory");
		busy_ids = ids;
		busy_cap = cap;
	}
	busy_ids[busy_count++] = id;
	return 1;
}

static void busy_release(int64_t id)
{
	int i;

	pthread_mutex_lock(&busy_lock);
	i = busy_find(id);
	if (i >= 0)
		busy_ids[i] = busy_ids[--busy_count];
	pthread_mutex_unlock(&busy_lock);
}

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

int api_node_busy_claim(int64_t node_id)
{
	int rc;

	pthread_mutex_lock(&busy_lock);
	rc = busy_claim_locked(node_id);
	pthread_mutex_unlock(&busy_lock);
	return rc;
}

void api_node_busy_release(int64_t node_id)
{
	busy_release(node_id);
}

/* One node of a fan-out: its stored row, its answer so far, its target when it has one. */
struct fan_node {
	const char *name;      /* borrowed from the range */
	struct node *node;     /* NULL: no such node */
	json_t *out;           /* {"node", ...} */
	int targeted;          /* a BMC call goes out for it */
	int claimed;           /* holds the busy mark */
	int batch;             /* 1-based batch of a paced action; 0 when not paced */
	int64_t audit_id;
	char *password;
	struct bmc_target target;
	struct bmc_result result;
};

struct fan {
	struct kiln_nodelist range;
	struct fan_node *nodes;
	size_t count;
	struct node **all;
	size_t nall;
};

static void fan_free(struct fan *f)
{
	for (size_t i = 0; i < f->count; i++) {
		struct fan_node *fn = &f->nodes[i];

		if (fn->claimed)
			busy_release(fn->node->id);
		secret_free_string(fn->password);
		json_decref(fn->result.data);
		json_decref(fn->out);
	}
	free(f->nodes);
	node_list_free(f->all, f->nall);
	kiln_nodelist_free(&f->range);
}

static int cmp_node(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, (*(struct node *const *)b)->name);
}

static void node_error(struct fan_node *fn, const char *msg)
{
	json_object_set_new(fn->out, "error", json_string(msg));
}

/*
 * Expands range (answers 400/404 itself) and builds each node's target: unknown nodes,
 * agent-only nodes and passwords that do not decrypt become that node's error. Returns 0
 * or a negative code with the answer set.
 */
static int fan_open(struct api_ctx *c, struct fan *f, const char *range, const char *field)
{
	int rc;

	memset(f, 0, sizeof(*f));
	if (!range || !range[0]) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, field, "%s is required", field);
		return KILN_EINVAL;
	}
	if (!c->engine) {
		api_fail(c, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, "kilnd runs without a BMC engine");
		return KILN_ERROR;
	}
	if ((rc = api_fleet_range_expand(c, &f->range, range)) < 0)
		return rc;
	if ((rc = store_node_list(c->st, &f->all, &f->nall)) < 0) {
		api_fail_code(c, rc, NULL);
		return rc;
	}
	f->nodes = calloc(f->range.count ? f->range.count : 1, sizeof(*f->nodes));
	if (!f->nodes) {
		api_fail(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
		return KILN_ERROR;
	}
	for (size_t i = 0; i < f->range.count; i++) {
		struct fan_node *fn = &f->nodes[f->count];
		struct node **hit = bsearch(&f->range.names[i], f->all, f->nall, sizeof(*f->all),
					    cmp_node);

		fn->name = f->range.names[i];
		fn->node = hit ? *hit : NULL;
		fn->out = json_pack("{s:s}", "node", fn->name);
		if (!fn->out) {
			api_fail(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
			return KILN_ERROR;
		}
		f->count++;
		if (!fn->node) {
			node_error(fn, "no such node");
			continue;
		}
		kiln_error_clear();
		rc = bmc_target_from_node(&fn->target, &fn->password, fn->node, c->key);
		if (rc < 0) {
			node_error(fn, rc == KILN_ENOTFOUND ? "no BMC" : kiln_error_last());
			continue;
		}
		fn->targeted = 1;
	}
	for (size_t i = 0; i < f->count; i++)
		if (f->nodes[i].node)
			return 0;
	api_fail(c, MHD_HTTP_NOT_FOUND, field, "no node matches '%.200s'", range);
	return KILN_ENOTFOUND;
}

/*
 * Marks the targeted nodes busy; a node already busy gets the error "action in flight".
 * When every targeted node was busy, answers 409 and returns KILN_EBUSY.
 */
static int fan_claim(struct api_ctx *c, struct fan *f)
{
	size_t want = 0, got = 0;
	int rc = 0;

	pthread_mutex_lock(&busy_lock);
	for (size_t i = 0; i < f->count && rc >= 0; i++) {
		struct fan_node *fn = &f->nodes[i];

		if (!fn->targeted)
			continue;
		want++;
		rc = busy_claim_locked(fn->node->id);
		if (rc == 1) {
			fn->claimed = 1;
			got++;
		} else if (rc == 0) {
			fn->targeted = 0;
			node_error(fn, "action in flight");
		}
	}
	pthread_mutex_unlock(&busy_lock);
	if (rc < 0) {
		api_fail_code(c, rc, NULL);
		return rc;
	}
	if (want > 0 && got == 0) {
		api_fail(c, MHD_HTTP_CONFLICT, "range", "an action is in flight on every node of "
			 "the range; nothing was sent");
		return KILN_EBUSY;
	}
	return 0;
}

/* Writes the audit row of each targeted node (of batch, when not 0) before the call; a node
 * whose row cannot be written is not called. detail is borrowed. */
static void fan_audit_begin(struct api_ctx *c, struct fan *f, const char *action,
			    const json_t *detail, int batch)
{
	for (size_t i = 0; i < f->count; i++) {
		struct fan_node *fn = &f->nodes[i];
		char *text;

		if (!fn->targeted || (batch && fn->batch != batch))
			continue;
		text = detail ? json_dumps(detail, JSON_COMPACT) : NULL;
		if (store_audit_begin(c->st, &fn->audit_id, c->caller.name ? c->caller.name : "?",
				      action, fn->name, text) < 0) {
			fn->targeted = 0;
			node_error(fn, "audit log unavailable; nothing sent");
		}
		free(text);
	}
}

/* Runs op on every targeted node (of batch, when not 0) as one engine batch, then merges
 * each result into its node's answer and, for actions, finishes its audit row. */
static int fan_run(struct api_ctx *c, struct fan *f, const struct bmc_op *op, int audited,
		   int batch)
{
	struct bmc_target *targets = NULL;
	struct bmc_result *results = NULL;
	size_t *index = NULL, n = 0;
	int rc = 0;

	targets = calloc(f->count ? f->count : 1, sizeof(*targets));
	results = calloc(f->count ? f->count : 1, sizeof(*results));
	index = calloc(f->count ? f->count : 1, sizeof(*index));
	if (!targets || !results || !index) {
		rc = kiln_fail(KILN_ERROR, "out of memory");
		goto cleanup;
	}
	for (size_t i = 0; i < f->count; i++) {
		if (!f->nodes[i].targeted || (batch && f->nodes[i].batch != batch))
			continue;
		targets[n] = f->nodes[i].target;
		index[n++] = i;
	}
	if (n > 0 && (rc = bmc_run_batch(c->engine, targets, n, op, results)) < 0)
		goto cleanup;
	for (size_t k = 0; k < n; k++) {
		struct fan_node *fn = &f->nodes[index[k]];
		const char *key;
		json_t *v;

		fn->result = results[k];
		results[k].data = NULL;
		if (fn->result.data)
			json_object_foreach(fn->result.data, key, v)
				json_object_set(fn->out, key, v);
		if (fn->result.rc < 0)
			node_error(fn, fn->result.error[0] ? fn->result.error
							   : kiln_error_name(fn->result.rc));
		if (audited) {
			char outcome[600];

			if (fn->result.rc == 0)
				snprintf(outcome, sizeof(outcome), "ok");
			else
				snprintf(outcome, sizeof(outcome), "failed: %s",
					 fn->result.error[0] ? fn->result.error
							     : kiln_error_name(fn->result.rc));
			store_audit_finish(c->st, fn->audit_id, outcome); /* best effort */
		}
	}
cleanup:
	/* Not sent (out of memory): the audit rows begun for this batch get their end. */
	for (size_t i = 0; rc < 0 && audited && i < f->count; i++)
		if (f->nodes[i].targeted && (!batch || f->nodes[i].batch == batch))
			store_audit_finish(c->st, f->nodes[i].audit_id, "failed: not sent");
	for (size_t k = 0; results && k < n; k++)
		json_decref(results[k].data);
	free(targets);
	free(results);
	free(index);
	return rc;
}

/* Answers 200 with the array of per-node objects (which it takes). */
static void fan_reply(struct api_ctx *c, struct fan *f)
{
	json_t *arr = json_array();

	for (size_t i = 0; arr && i < f->count; i++) {
		if (json_array_append_new(arr, f->nodes[i].out) < 0) {
			f->nodes[i].out = NULL;
			json_decref(arr);
			arr = NULL;
			break;
		}
		f->nodes[i].out = NULL;
	}
	if (!arr) {
		api_fail(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
		return;
	}
	api_reply(c, MHD_HTTP_OK, arr);
}

/* A read over ?range=: one batch, no audit, no busy mark. */
static void fan_read(struct api_ctx *c, const struct bmc_op *op, const char *range,
		     const char *field)
{
	struct fan f;
	int rc;

	if (fan_open(c, &f, range, field) < 0)
		goto cleanup;
	rc = fan_run(c, &f, op, 0, 0);
	if (rc < 0) {
		api_fail_code(c, rc, NULL);
		goto cleanup;
	}
	fan_reply(c, &f);
cleanup:
	fan_free(&f);
}

/* Numbers the targeted nodes' batches in range order; returns the number of batches. */
static int fan_batches(struct fan *f, const struct pacing *pace)
{
	int k = 0;

	for (size_t i = 0; i < f->count; i++) {
		struct fan_node *fn = &f->nodes[i];

		if (!fn->targeted)
			continue;
		fn->batch = pace && pace->size > 0 ? k / pace->size + 1 : 1;
		k++;
		if (pace && pace->size > 0)
			json_object_set_new(fn->out, "batch", json_integer(fn->batch));
	}
	return k == 0 ? 0 : pace && pace->size > 0 ? (k - 1) / pace->size + 1 : 1;
}

static void pause_s(int64_t seconds)
{
	struct timespec ts = { .tv_sec = (time_t)seconds };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/*
 * An action: targets, the busy marks (every node of the range claimed before the first
 * batch), dry_run (the targets and the action, nothing sent, no audit row), an audit row per
 * node before its call and its outcome after; paced (pace not NULL, size > 0): one engine
 * batch after the other, interval_s apart.
 */
static void fan_act(struct api_ctx *c, const struct bmc_op *op, const char *range,
		    const char *field, const char *audit_action, json_t *per_node, int dry_run,
		    const struct pacing *pace)
{
	struct fan f;
	const char *key;
	json_t *v;
	int rc, batches;

	if (fan_open(c, &f, range, field) < 0)
		goto cleanup;
	if (dry_run) {
		pthread_mutex_lock(&busy_lock);
		for (size_t i = 0; i < f.count; i++) {
			struct fan_node *fn = &f.nodes[i];

			if (!fn->targeted)
				continue;
			if (busy_find(fn->node->id) >= 0) {
				node_error(fn, "action in flight");
				continue;
			}
			json_object_foreach(per_node, key, v)
				json_object_set(fn->out, key, v);
			json_object_set_new(fn->out, "dry_run", json_true());
		}
		pthread_mutex_unlock(&busy_lock);
		for (size_t i = 0; i < f.count; i++)
			if (json_object_get(f.nodes[i].out, "error"))
				f.nodes[i].targeted = 0;
		fan_batches(&f, pace);
		fan_reply(c, &f);
		goto cleanup;
	}
	if (fan_claim(c, &f) < 0)
		goto cleanup;
	for (size_t i = 0; i < f.count; i++)
		if (f.nodes[i].targeted)
			json_object_foreach(per_node, key, v)
				json_object_set(f.nodes[i].out, key, v);
	batches = fan_batches(&f, pace);
	for (int b = 1; b <= batches; b++) {
		if (b > 1 && pace->interval_s > 0)
			pause_s(pace->interval_s);
		fan_audit_begin(c, &f, audit_action, per_node, b);
		rc = fan_run(c, &f, op, 1, b);
		if (rc < 0) {
			api_fail_code(c, rc, NULL);
			goto cleanup;
		}
	}
	fan_reply(c, &f);
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
					      "batch", "interval_s", NULL };
	struct bmc_op op = { .kind = BMC_OP_POWER_ACTION };
	const char *range, *action;
	json_t *per_node = NULL;
	char audit_action[32];
	int dry_run, found = 0;
	int64_t batch, interval_s;
	struct pacing pace;

	pthread_mutex_lock(&pacing_lock);
	batch = pacing_batch;
	interval_s = pacing_interval;
	pthread_mutex_unlock(&pacing_lock);
	if (!api_body_require(c) || body_only(c, fields) < 0 ||
	    api_body_string(c, &range, "range") < 0 || api_body_string(c, &action, "action") < 0 ||
	    api_body_bool(c, &op.on_if_off, "on_if_off") < 0 || api_body_bool(c, &dry_run, "dry_run") < 0 ||
	    body_int(c, &batch, "batch", 0, 100000) < 0 ||
	    body_int(c, &interval_s, "interval_s", 0, 3600) < 0)
		return;
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
	fan_act(c, &op, range, "range", audit_action, per_node, dry_run, &pace);
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
	static const char *const fields[] = { "range", "device", "persistent", "dry_run", NULL };
	struct bmc_op op = { .kind = BMC_OP_BOOT_SET };
	const char *range, *device;
	json_t *per_node = NULL;
	int dry_run, found = 0;

	if (!api_body_require(c) || body_only(c, fields) < 0 ||
	    api_body_string(c, &range, "range") < 0 || api_body_string(c, &device, "device") < 0 ||
	    api_body_bool(c, &op.persistent, "persistent") < 0 || api_body_bool(c, &dry_run, "dry_run") < 0)
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
	fan_act(c, &op, range, "range", "boot.set", per_node, dry_run, NULL);
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
	static const char *const fields[] = { "node", "url", "dry_run", NULL };
	struct bmc_op op = { .kind = BMC_OP_MEDIA_INSERT };
	const char *node, *url;
	json_t *per_node;
	int dry_run;

	if (!api_body_require(c) || body_only(c, fields) < 0 || api_body_string(c, &node, "node") < 0 ||
	    api_body_string(c, &url, "url") < 0 || api_body_bool(c, &dry_run, "dry_run") < 0 ||
	    one_node(c, node) < 0)
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
	fan_act(c, &op, node, "node", "media.insert", per_node, dry_run, NULL);
	json_decref(per_node);
}

void api_media_eject(struct api_ctx *c)
{
	static const char *const fields[] = { "node", "dry_run", NULL };
	struct bmc_op op = { .kind = BMC_OP_MEDIA_EJECT };
	const char *node;
	json_t *per_node;
	int dry_run;

	if (!api_body_require(c) || body_only(c, fields) < 0 || api_body_string(c, &node, "node") < 0 ||
	    api_body_bool(c, &dry_run, "dry_run") < 0 || one_node(c, node) < 0)
		return;
	per_node = json_pack("{s:s}", "action", "media.eject");
	if (!per_node) {
		api_fail(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
		return;
	}
	fan_act(c, &op, node, "node", "media.eject", per_node, dry_run, NULL);
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

void api_inventory_get(struct api_ctx *c)
{
	struct bmc_op op = { .kind = BMC_OP_INVENTORY };
	struct fan f;
	int rc;

	if (fan_open(c, &f, api_query(c, "range"), "range") < 0)
		goto cleanup;
	rc = fan_run(c, &f, &op, 0, 0);
	if (rc < 0) {
		api_fail_code(c, rc, NULL);
		goto cleanup;
	}
	/* What the BMC said is kept (best effort): agents enrolling are matched on the serial,
	 * the audit groups by the BMC firmware; the poller refreshes it on its own too. */
	for (size_t i = 0; i < f.count; i++) {
		const char *serial = json_string_value(json_object_get(f.nodes[i].out, "serial"));
		char *text;

		if (!f.nodes[i].targeted || f.nodes[i].result.rc != 0)
			continue;
		if (serial && serial[0])
			store_node_bmc_serial_set(c->st, f.nodes[i].name, serial);
		text = f.nodes[i].result.data ? json_dumps(f.nodes[i].result.data, JSON_COMPACT)
					      : NULL;
		if (text && f.nodes[i].node)
			store_node_inventory_put(c->st, f.nodes[i].node->id, text, time(NULL));
		free(text);
	}
	fan_reply(c, &f);
cleanup:
	fan_free(&f);
}
