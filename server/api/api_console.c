/* SPDX-License-Identifier: Apache-2.0 */
/* The serial console over the REST API: attach (HTTP Upgrade), the captured log, capture on/off
 * per node or over a noderange. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/handlers.h"
#include "cluster/cluster.h"
#include "fleet/console.h"
#include "kiln/error.h"
#include "kiln/json.h"
#include "kiln/noderange.h"
#include "kiln/parse.h"

/* The protocol name a client asks for with "Upgrade:"; after the 101 answer the connection
 * carries raw console bytes both ways. */
#define CONSOLE_PROTOCOL "kiln-console"
#define TAIL_DEFAULT 20
#define INITIAL_MAX 65536

/* What the 101 response hands to the upgraded connection's thread. */
struct attach {
	struct console_target *t;
	int steal;
	int sock;
	struct MHD_UpgradeResponseHandle *urh;
	char *initial;
	size_t initial_len;
};

static void attach_release(void *arg)
{
	struct attach *a = arg;

	MHD_upgrade_action(a->urh, MHD_UPGRADE_ACTION_CLOSE);
}

static void *attach_thread(void *arg)
{
	struct attach *a = arg;

	console_client_run(a->t, a->sock, a->initial, a->initial_len, a->steal, attach_release, a);
	free(a->initial);
	free(a);
	return NULL;
}

/* MHD calls this once the 101 answer is out; the socket is ours until the close action. */
static void on_upgraded(void *cls, struct MHD_Connection *conn, void *con_cls, const char *extra_in,
			size_t extra_in_size, MHD_socket sock, struct MHD_UpgradeResponseHandle *urh)
{
	struct attach *a = cls;
	pthread_attr_t attr;
	pthread_t t;

	(void)conn;
	(void)con_cls;
	a->sock = sock;
	a->urh = urh;
	if (extra_in_size > 0 && extra_in_size <= INITIAL_MAX) {
		a->initial = malloc(extra_in_size);
		if (a->initial) {
			memcpy(a->initial, extra_in, extra_in_size);
			a->initial_len = extra_in_size;
		}
	}
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &attr, attach_thread, a) != 0) {
		MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
		console_target_free(a->t);
		free(a->initial);
		free(a);
	}
	pthread_attr_destroy(&attr);
}

/*
 * Several kilnd on one database: a node's console (its SOL session, its captured log) is on
 * the instance that owns the node. Another instance answers 421 with the owner's id and API
 * URL, which the CLI follows (it trusts every instance: one site CA, or their fingerprints);
 * 503 while no live instance owns it. 1 when answered so, 0 when the console is here.
 */
static int console_elsewhere(struct api_ctx *c, const char *name)
{
	char owner[CLUSTER_ID_LEN + 1], url[256];
	struct node *n = NULL;
	int o;

	if (!cluster_shared(c->cluster) || store_node_get(c->st, &n, name) < 0) {
		node_free(n);
		return 0; /* a node that is not there is answered as usual */
	}
	o = cluster_owner_url(c->cluster, n, owner, url, sizeof(url));
	node_free(n);
	if (o == 1)
		return 0;
	if (o < 0 || !url[0]) {
		api_fail(c, MHD_HTTP_SERVICE_UNAVAILABLE, NULL,
			 "no live kilnd instance owns %s right now (an owner's lease ran out): "
			 "try again within the lease",
			 name);
		return 1;
	}
	api_reply(c, 421,
		  json_pack("{s:s, s:s, s:s}", "error",
			    "this node's console is on the kilnd instance that owns it", "owner",
			    owner, "owner_url", url));
	return 1;
}

/* Does the comma-separated header value list contain token (case-insensitive)? */
static int header_has(const char *value, const char *token)
{
	size_t tlen = strlen(token);

	while (value && *value) {
		size_t n;

		while (*value == ' ' || *value == '\t' || *value == ',')
			value++;
		n = strcspn(value, ",");
		while (n > 0 && (value[n - 1] == ' ' || value[n - 1] == '\t'))
			n--;
		if (n == tlen && strncasecmp(value, token, tlen) == 0)
			return 1;
		value += strcspn(value, ",");
	}
	return 0;
}

void api_console_attach(struct api_ctx *c)
{
	const char *upgrade = MHD_lookup_connection_value(c->conn, MHD_HEADER_KIND,
							  MHD_HTTP_HEADER_UPGRADE);
	const char *connection = MHD_lookup_connection_value(c->conn, MHD_HEADER_KIND,
							     MHD_HTTP_HEADER_CONNECTION);
	const char *steal_arg = api_query(c, "steal");
	struct console_target *t = NULL;
	struct attach *a = NULL;
	struct MHD_Response *resp = NULL;
	int64_t audit_id;
	bool steal = false;
	int rc;

	if (!header_has(upgrade, CONSOLE_PROTOCOL) || !header_has(connection, "upgrade")) {
		api_fail(c, MHD_HTTP_UPGRADE_REQUIRED, NULL,
			 "the console is a byte stream: send 'Connection: Upgrade' and "
			 "'Upgrade: " CONSOLE_PROTOCOL "' (kiln console NODE does)");
		return;
	}
	if (steal_arg && kiln_parse_bool(&steal, steal_arg) < 0) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, "steal", "query 'steal' must be true or false");
		return;
	}
	if (console_elsewhere(c, c->param))
		return;
	rc = console_target_load(&t, c->st, c->key, c->param);
	if (rc < 0) {
		api_fail_code(c, rc, NULL);
		return;
	}
	if (api_audit_begin(c, &audit_id, "console.attach", c->param,
			    json_pack("{s:b}", "steal", steal)) < 0)
		goto cleanup;
	a = calloc(1, sizeof(*a));
	if (a)
		resp = MHD_create_response_for_upgrade(on_upgraded, a);
	if (!resp || MHD_add_response_header(resp, MHD_HTTP_HEADER_UPGRADE, CONSOLE_PROTOCOL) != MHD_YES) {
		rc = kiln_fail(KILN_ERROR, "cannot build the upgrade response");
		api_audit_finish(c, audit_id, rc);
		api_fail_code(c, rc, NULL);
		goto cleanup;
	}
	api_audit_finish(c, audit_id, 0);
	/* from here on the thread of the upgraded connection owns t and a; should the client
	 * vanish before the 101 is sent, MHD never calls on_upgraded and they are lost */
	a->t = t;
	a->steal = steal;
	t = NULL;
	a = NULL;
	c->status = MHD_HTTP_SWITCHING_PROTOCOLS;
	c->response = resp;
	resp = NULL;
cleanup:
	if (resp)
		MHD_destroy_response(resp);
	free(a);
	console_target_free(t);
}

void api_console_log(struct api_ctx *c)
{
	const char *lines_arg = api_query(c, "lines");
	int64_t lines = TAIL_DEFAULT;
	json_t *arr = NULL;
	int enabled = 0, rc;

	if (lines_arg && kiln_parse_int64(&lines, lines_arg, 1, 10000) < 0) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, "lines", "query 'lines' must be 1 to 10000");
		return;
	}
	if (console_elsewhere(c, c->param))
		return;
	if ((rc = store_console_capture_get(c->st, c->param, &enabled)) < 0 ||
	    (rc = console_log_tail(&arr, c->param, (long)lines)) < 0) {
		api_fail_code(c, rc, NULL);
		return;
	}
	{
		json_t *o = json_pack("{s:s, s:b, s:o}", "node", c->param, "capture", enabled,
				      "lines", arr);

		if (o)
			console_status(o, c->param);
		api_reply(c, MHD_HTTP_OK, o);
	}
}

void api_console_capture(struct api_ctx *c)
{
	static const char *const allowed[] = { "enabled", NULL };
	const char *bad = NULL;
	int64_t audit_id;
	bool enabled = false;
	int rc;

	if (!api_body_require(c))
		return;
	if (kiln_json_check_keys(c->body, allowed, &bad) < 0) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, bad, "unknown field '%s'", bad ? bad : "?");
		return;
	}
	if (kiln_json_get_bool(&enabled, c->body, "enabled", true) < 0) {
		api_fail_code(c, KILN_EINVAL, "enabled");
		return;
	}
	if (enabled) {
		/* a node without an IPMI address would only fail in the background */
		struct console_target *t = NULL;

		rc = console_target_load(&t, c->st, c->key, c->param);
		console_target_free(t);
		if (rc < 0) {
			api_fail_code(c, rc, NULL);
			return;
		}
	}
	if (api_audit_begin(c, &audit_id, enabled ? "console.capture.on" : "console.capture.off",
			    c->param, NULL) < 0)
		return;
	rc = console_capture_set(c->st, c->param, enabled);
	api_audit_finish(c, audit_id, rc);
	if (rc < 0) {
		api_fail_code(c, rc, NULL);
		return;
	}
	api_reply(c, MHD_HTTP_OK, json_pack("{s:s, s:b}", "node", c->param, "capture", enabled));
}

/* Capture on or off for one node of a range: fills o with "capture" or "error". Returns 1
 * for a node that does not exist, 0 otherwise, < 0 when the audit log cannot be written
 * (the request was answered then). */
static int capture_one(struct api_ctx *c, json_t *o, const char *node, bool enabled)
{
	struct console_target *t = NULL;
	int64_t audit_id;
	int rc;

	kiln_error_clear();
	rc = console_target_load(&t, c->st, c->key, node);
	console_target_free(t);
	if (rc == KILN_ENOTFOUND) {
		json_object_set_new(o, "error", json_string("no such node"));
		return 1;
	}
	/* switching off needs no console address */
	if (rc < 0 && enabled) {
		json_object_set_new(o, "error", json_string(kiln_error_last()));
		return 0;
	}
	if (api_audit_begin(c, &audit_id, enabled ? "console.capture.on" : "console.capture.off",
			    node, NULL) < 0)
		return KILN_ERROR;
	rc = console_capture_set(c->st, node, enabled);
	api_audit_finish(c, audit_id, rc);
	if (rc < 0)
		json_object_set_new(o, "error", json_string(kiln_error_last()));
	else
		json_object_set_new(o, "capture", json_boolean(enabled));
	return 0;
}

void api_console_capture_range(struct api_ctx *c)
{
	static const char *const allowed[] = { "range", "enabled", NULL };
	struct kiln_nodelist range = { 0 };
	const char *bad = NULL, *expr;
	json_t *arr = NULL;
	bool enabled = false;
	size_t found = 0;
	int rc;

	if (!api_body_require(c))
		return;
	if (kiln_json_check_keys(c->body, allowed, &bad) < 0) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, bad, "unknown field '%s'", bad ? bad : "?");
		return;
	}
	expr = json_string_value(json_object_get(c->body, "range"));
	if (!expr || !expr[0]) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, "range", "range is required (a noderange)");
		return;
	}
	if (kiln_json_get_bool(&enabled, c->body, "enabled", true) < 0) {
		api_fail_code(c, KILN_EINVAL, "enabled");
		return;
	}
	if (api_range_expand(c, &range, expr, API_RANGE_ACTION | API_RANGE_SORTED) < 0)
		return;
	arr = json_array();
	if (!arr) {
		api_fail(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
		goto cleanup;
	}
	for (size_t i = 0; i < range.count; i++) {
		json_t *o = json_pack("{s:s}", "node", range.names[i]);

		if (!o || json_array_append_new(arr, o) < 0) {
			api_fail(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
			goto cleanup;
		}
		rc = capture_one(c, o, range.names[i], enabled);
		if (rc < 0)
			goto cleanup;
		if (rc == 0)
			found++;
	}
	if (found == 0) {
		api_fail(c, MHD_HTTP_NOT_FOUND, "range", "no node matches '%.200s'", expr);
		goto cleanup;
	}
	api_reply(c, MHD_HTTP_OK, arr);
	arr = NULL;
cleanup:
	json_decref(arr);
	kiln_nodelist_free(&range);
}
