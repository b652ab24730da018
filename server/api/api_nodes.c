/* SPDX-License-Identifier: Apache-2.0 */
/* /api/v1/nodes: list (with a noderange), create, show, update, delete one or a range, import. */
#include <stdlib.h>
#include <string.h>

#include "api/handlers.h"
#include "api/node_json.h"
#include "kiln/error.h"
#include "kiln/json.h"
#include "kiln/noderange.h"

#define IMPORT_MAX 100000

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int sorted_has(const struct kiln_nodelist *l, const char *name)
{
	return bsearch(&name, l->names, l->count, sizeof(l->names[0]), cmp_str) != NULL;
}

void api_nodes_list(struct api_ctx *c)
{
	const char *range = api_query(c, "range");
	struct kiln_nodelist want = { 0 };
	struct node **nodes = NULL;
	size_t count = 0;
	json_t *arr;
	int rc;

	if (range && api_range_expand(c, &want, range, API_RANGE_SORTED) < 0)
		return;
	rc = store_node_list(c->st, &nodes, &count);
	if (rc < 0) {
		api_fail_code(c, rc, NULL);
		goto cleanup;
	}
	arr = json_array();
	for (size_t i = 0; arr && i < count; i++) {
		if (range && !sorted_has(&want, nodes[i]->name))
			continue;
		if (json_array_append_new(arr, node_json_from(nodes[i])) < 0) {
			json_decref(arr);
			arr = NULL;
		}
	}
	api_reply(c, MHD_HTTP_OK, arr);
cleanup:
	node_list_free(nodes, count);
	kiln_nodelist_free(&want);
}

static json_t *create_detail(json_t *body)
{
	return json_pack("{s:o}", "fields", node_json_field_names(body));
}

/* What node add makes of the BMC check: a BMC that does not fit the node, or that rejected
 * its credentials, is refused (1, answered); one that did not answer is a warning on the
 * node's object. A rejection refuses because the check was the node's one retry already:
 * the poller of an added node would bring the BMC two more failed logins. */
static int check_refused(struct api_ctx *c)
{
	const char *msg;
	int rc = api_node_check_result(c, 0, &msg);

	if (rc == KILN_EAUTH)
		api_fail(c, MHD_HTTP_BAD_REQUEST, "bmc_password",
			 "the BMC rejected these credentials: %s; nothing added", msg);
	else if (rc == KILN_ECONFIG)
		api_fail(c, MHD_HTTP_BAD_REQUEST, "bmc_system", "%s", msg);
	return rc == KILN_EAUTH || rc == KILN_ECONFIG;
}

static json_t *checked_json(struct api_ctx *c, const struct node *n)
{
	const char *msg;
	json_t *o = node_json_from(n);
	char warning[700];

	if (o && api_node_check_result(c, 0, &msg) < 0) {
		snprintf(warning, sizeof(warning), "BMC not reachable now (%s); added anyway", msg);
		json_object_set_new(o, "warning", json_string(warning));
	}
	return o;
}

static void create_checked(struct api_ctx *c)
{
	size_t count;
	struct node *n = api_node_check_nodes(c, &count)[0];
	int64_t audit_id;
	int rc;

	if (check_refused(c))
		return;
	if (api_audit_begin(c, &audit_id, "node.add", n->name, create_detail(c->body)) < 0)
		return;
	rc = store_node_insert(c->st, n);
	if (rc == KILN_EEXISTS)
		rc = kiln_fail(KILN_EEXISTS, "node '%s' already exists", n->name);
	api_audit_finish(c, audit_id, rc);
	if (rc < 0) {
		api_fail_code(c, rc, rc == KILN_EEXISTS ? "name" : NULL);
		return;
	}
	api_reply(c, MHD_HTTP_CREATED, checked_json(c, n));
}

void api_nodes_create(struct api_ctx *c)
{
	struct node *n = NULL, *taken = NULL, **nodes;
	const char *field = NULL;
	int rc;

	if (!api_body_require(c))
		return;
	rc = node_json_create(&n, c->body, c->key, &field);
	if (rc < 0) {
		api_fail_code(c, rc, field);
		return;
	}
	if (store_node_get(c->st, &taken, n->name) == 0) {
		/* no BMC is asked for a node that cannot be added */
		api_fail(c, MHD_HTTP_CONFLICT, "name", "node '%s' already exists", n->name);
		node_free(taken);
		node_free(n);
		return;
	}
	if (!(nodes = malloc(sizeof(*nodes)))) {
		node_free(n);
		api_fail(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
		return;
	}
	nodes[0] = n;
	if (api_node_check(c, nodes, 1, create_checked) == 1)
		create_checked(c);
}

/* "bmc_session": how kilnd reaches the node's Redfish BMC ("session", or "basic (BMC
 * session limit)" and the like): best effort, the node shows regardless. */
static void session_attach(struct api_ctx *c, json_t *o, int64_t node_id)
{
	struct bmc_session_row row = { 0 };

	if (store_bmc_session_get(c->st, &row, node_id) == 0 && row.auth)
		json_object_set_new(o, "bmc_session", json_string(row.auth));
	bmc_session_row_clear(&row);
}

void api_node_get(struct api_ctx *c)
{
	struct node *n = NULL;
	json_t *o;
	int rc;

	rc = store_node_get(c->st, &n, c->param);
	if (rc == KILN_ENOTFOUND)
		rc = kiln_fail(KILN_ENOTFOUND, "no node '%s'", c->param);
	if (rc < 0) {
		api_fail_code(c, rc, NULL);
		return;
	}
	o = node_json_from(n);
	api_agent_state_attach(c, o, n->id); /* "agent": best effort, the node shows regardless */
	session_attach(c, o, n->id);
	api_reply(c, MHD_HTTP_OK, o);
	node_free(n);
}

void api_node_patch(struct api_ctx *c)
{
	struct node *n = NULL;
	const char *field = NULL;
	int64_t audit_id;
	int rc;

	if (!api_body_require(c))
		return;
	rc = store_node_get(c->st, &n, c->param);
	if (rc == KILN_ENOTFOUND)
		rc = kiln_fail(KILN_ENOTFOUND, "no node '%s'", c->param);
	if (rc < 0) {
		api_fail_code(c, rc, NULL);
		return;
	}
	rc = node_json_patch(n, c->body, c->key, &field);
	if (rc < 0) {
		api_fail_code(c, rc, field);
		goto cleanup;
	}
	if (api_audit_begin(c, &audit_id, "node.set", c->param, create_detail(c->body)) < 0)
		goto cleanup;
	rc = store_node_update(c->st, n);
	if (rc == KILN_EEXISTS)
		rc = kiln_fail(KILN_EEXISTS, "node '%s' already exists", n->name);
	api_audit_finish(c, audit_id, rc);
	if (rc < 0) {
		api_fail_code(c, rc, rc == KILN_EEXISTS ? "name" : NULL);
		goto cleanup;
	}
	api_reply(c, MHD_HTTP_OK, node_json_from(n));
cleanup:
	node_free(n);
}

static json_t *deleted_json(const char *name)
{
	return json_pack("{s:s, s:b}", "node", name, "deleted", 1);
}

void api_node_delete(struct api_ctx *c)
{
	struct node *n = NULL;
	int64_t audit_id;
	int rc;

	rc = store_node_get(c->st, &n, c->param);
	node_free(n);
	if (rc == KILN_ENOTFOUND)
		rc = kiln_fail(KILN_ENOTFOUND, "no node '%s'", c->param);
	if (rc < 0) {
		api_fail_code(c, rc, NULL);
		return;
	}
	if (api_audit_begin(c, &audit_id, "node.delete", c->param, NULL) < 0)
		return;
	rc = store_node_delete(c->st, c->param);
	api_audit_finish(c, audit_id, rc);
	if (rc < 0) {
		api_fail_code(c, rc, NULL);
		return;
	}
	api_reply(c, MHD_HTTP_OK, deleted_json(c->param));
}

void api_nodes_delete_range(struct api_ctx *c)
{
	const char *range = api_query(c, "range");
	struct kiln_nodelist want = { 0 }, have = { 0 };
	char *target = NULL;
	int64_t audit_id;
	json_t *arr = NULL;
	int rc, in_tx = 0;

	if (!range) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, "range",
			 "query argument 'range' is required (a NODERANGE, or 'all')");
		return;
	}
	if (api_range_expand(c, &want, range, API_RANGE_ACTION | API_RANGE_SORTED) < 0)
		return;
	if (want.count == 0) {
		api_fail(c, MHD_HTTP_NOT_FOUND, "range", "range '%.100s' matches no node", range);
		goto cleanup;
	}
	rc = store_node_names(c->st, &have);
	if (rc < 0) {
		api_fail_code(c, rc, NULL);
		goto cleanup;
	}
	if (have.count > 1)
		qsort(have.names, have.count, sizeof(have.names[0]), cmp_str);
	for (size_t i = 0; i < want.count; i++) {
		if (!sorted_has(&have, want.names[i])) {
			api_fail(c, MHD_HTTP_NOT_FOUND, "range", "no node '%s'; nothing was deleted",
				 want.names[i]);
			goto cleanup;
		}
	}
	target = noderange_compress(want.names, want.count);
	if (api_audit_begin(c, &audit_id, "node.delete", target ? target : range,
			    json_pack("{s:I}", "count", (json_int_t)want.count)) < 0)
		goto cleanup;
	arr = json_array();
	rc = store_begin(c->st);
	in_tx = rc == 0;
	for (size_t i = 0; rc == 0 && i < want.count; i++) {
		rc = store_node_delete(c->st, want.names[i]);
		if (rc == 0)
			json_array_append_new(arr, deleted_json(want.names[i]));
	}
	if (rc == 0) {
		rc = store_commit(c->st);
		in_tx = rc < 0;
	}
	if (in_tx && rc < 0) {
		char saved[512];

		snprintf(saved, sizeof(saved), "%s", kiln_error_last());
		store_rollback(c->st);
		kiln_fail(rc, "%s; nothing was deleted", saved);
	}
	api_audit_finish(c, audit_id, rc);
	if (rc < 0) {
		api_fail_code(c, rc, NULL);
		goto cleanup;
	}
	api_reply(c, MHD_HTTP_OK, arr);
	arr = NULL;
cleanup:
	json_decref(arr);
	free(target);
	kiln_nodelist_free(&want);
	kiln_nodelist_free(&have);
}

/*
 * Stores the import: all or nothing, in one transaction. No BMC is asked: the poller reads
 * each new node's BMC within its interval, and kiln status shows those that do not answer,
 * reject the credentials or do not fit the node (several systems and no bmc_system). Asking
 * them here made the request wait on the slowest BMC of thousands (issue 35).
 */
static void import_store(struct api_ctx *c, struct node **nodes, size_t count)
{
	char **names = calloc(count, sizeof(*names)), *target = NULL;
	json_t *arr = NULL;
	int64_t audit_id;
	size_t i;
	int rc, in_tx = 0;

	if (!names) {
		api_fail(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
		return;
	}
	for (i = 0; i < count; i++)
		names[i] = nodes[i]->name;
	target = noderange_compress(names, count);
	if (api_audit_begin(c, &audit_id, "node.import", target ? target : "?",
			    json_pack("{s:I}", "count", (json_int_t)count)) < 0)
		goto cleanup;
	arr = json_array();
	rc = store_begin(c->st);
	in_tx = rc == 0;
	for (i = 0; rc == 0 && i < count; i++) {
		rc = store_node_insert(c->st, nodes[i]);
		if (rc == 0)
			json_array_append_new(arr, node_json_from(nodes[i]));
	}
	if (rc == 0) {
		rc = store_commit(c->st);
		in_tx = rc < 0;
	}
	if (rc < 0) {
		size_t bad = i > 0 ? i - 1 : 0;
		char saved[512];

		if (rc == KILN_EEXISTS)
			kiln_fail(rc, "nodes[%zu]: node '%s' already exists", bad, names[bad]);
		snprintf(saved, sizeof(saved), "%s", kiln_error_last());
		if (in_tx)
			store_rollback(c->st);
		kiln_fail(rc, "%s; nothing was imported", saved);
		api_audit_finish(c, audit_id, rc);
		if (rc == KILN_EEXISTS)
			api_fail_index(c, MHD_HTTP_CONFLICT, (long)bad, "name", "%s",
				       kiln_error_last());
		else
			api_fail_code(c, rc, NULL);
		goto cleanup;
	}
	api_audit_finish(c, audit_id, 0);
	api_reply(c, MHD_HTTP_CREATED, arr);
	arr = NULL;
cleanup:
	json_decref(arr);
	free(names);
	free(target);
}

void api_nodes_import(struct api_ctx *c)
{
	static const char *const keys[] = { "nodes", NULL };
	struct node **nodes = NULL;
	size_t count = 0, i;
	const char *field = NULL;
	json_t *list, *item;
	int rc;

	if (!api_body_require(c))
		return;
	if (kiln_json_check_keys(c->body, keys, &field) < 0) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, field, "unknown field '%s'", field);
		return;
	}
	list = json_object_get(c->body, "nodes");
	if (!json_is_array(list) || json_array_size(list) == 0 ||
	    json_array_size(list) > IMPORT_MAX) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, "nodes",
			 "field 'nodes' must be an array of 1 to %d node objects", IMPORT_MAX);
		return;
	}
	nodes = calloc(json_array_size(list), sizeof(*nodes));
	if (!nodes) {
		api_fail(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
		return;
	}
	/* Every element is checked before anything is written. */
	json_array_foreach(list, i, item) {
		rc = node_json_create(&nodes[i], item, c->key, &field);
		if (rc < 0) {
			api_fail_index(c, api_status_of(rc), (long)i, field, "nodes[%zu]: %s", i,
				       kiln_error_last());
			goto fail;
		}
		count++;
		for (size_t j = 0; j < i; j++) {
			if (strcmp(nodes[j]->name, nodes[i]->name) == 0) {
				api_fail_index(c, MHD_HTTP_BAD_REQUEST, (long)i, "name",
					       "nodes[%zu]: node '%s' is also nodes[%zu]", i,
					       nodes[i]->name, j);
				goto fail;
			}
		}
	}
	import_store(c, nodes, count);
fail:
	for (i = 0; i < count; i++)
		node_free(nodes[i]);
	free(nodes);
}
