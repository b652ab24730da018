/* SPDX-License-Identifier: Apache-2.0 */
/* Node inventory in the store: nodes with their BMC settings and groups. */
#include <stdlib.h>
#include <string.h>

#include "kiln/error.h"
#include "kiln/noderange.h"
#include "store/store_internal.h"

#define NODE_COLUMNS                                                                        \
	"id, name, rack, bmc_protocol, bmc_host, bmc_port, bmc_user, bmc_password_enc,"     \
	" tls_mode, tls_ca_file, tls_fingerprint, ipmi_cipher, ipmi_privilege,"             \
	" ipmi_workarounds, sol_host, sol_port, bmc_system, credentials_version,"           \
	" created_at, updated_at"

static const char *const protocol_names[] = {
	[BMC_NONE] = "none",
	[BMC_REDFISH] = "redfish",
	[BMC_REDFISH_HTTP] = "redfish+http",
	[BMC_IPMI] = "ipmi",
};

static const char *const tls_names[] = {
	[TLS_VERIFY] = "verify",
	[TLS_INSECURE] = "insecure",
	[TLS_CA] = "ca",
	[TLS_FINGERPRINT] = "fingerprint",
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static int name_to_enum(const char *const *names, size_t n, const char *v)
{
	for (size_t i = 0; v && i < n; i++) {
		if (names[i] && strcmp(names[i], v) == 0)
			return (int)i;
	}
	return -1;
}

static const struct sql_stmt INSERT = {
	STMT_NODE_INSERT, "adding a node",
	"INSERT INTO nodes (name, rack, bmc_protocol, bmc_host, bmc_port, bmc_user,"
	" bmc_password_enc, tls_mode, tls_ca_file, tls_fingerprint, ipmi_cipher, ipmi_privilege,"
	" ipmi_workarounds, sol_host, sol_port, bmc_system, credentials_version, created_at,"
	" updated_at)"
	" VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, 1, ?17, ?17)"
	" RETURNING id",
	NULL};

/* credentials_version moves when the user or the password changes, so that a node whose
 * credentials were rejected is tried again with the new ones. */
static const struct sql_stmt UPDATE = {
	STMT_NODE_UPDATE, "updating a node",
	"UPDATE nodes SET name = ?1, rack = ?2, bmc_protocol = ?3, bmc_host = ?4, bmc_port = ?5,"
	" bmc_user = ?6, bmc_password_enc = ?7, tls_mode = ?8, tls_ca_file = ?9,"
	" tls_fingerprint = ?10, ipmi_cipher = ?11, ipmi_privilege = ?12, ipmi_workarounds = ?13,"
	" sol_host = ?14, sol_port = ?15, bmc_system = ?16,"
	" credentials_version = credentials_version + CASE WHEN bmc_user IS DISTINCT FROM ?6"
	"   OR bmc_password_enc IS DISTINCT FROM ?7 THEN 1 ELSE 0 END,"
	" updated_at = ?17 WHERE id = ?18",
	NULL};

static const struct sql_stmt GET = {
	STMT_NODE_GET, "reading a node", "SELECT " NODE_COLUMNS " FROM nodes WHERE name = ?1",
	NULL};

static const struct sql_stmt DELETE = {
	STMT_NODE_DELETE, "deleting a node", "DELETE FROM nodes WHERE name = ?1", NULL};

static const struct sql_stmt LIST = {
	STMT_NODE_LIST, "listing nodes", "SELECT " NODE_COLUMNS " FROM nodes ORDER BY name", NULL};

static const struct sql_stmt GROUPS_GET = {
	STMT_NODE_GROUPS_GET, "reading groups",
	"SELECT name FROM node_groups WHERE node_id = ?1 ORDER BY position", NULL};

static const struct sql_stmt GROUPS_ALL = {
	STMT_NODE_GROUPS_ALL, "reading groups",
	"SELECT n.name, g.name FROM node_groups g JOIN nodes n ON n.id = g.node_id"
	" ORDER BY n.name, g.position",
	NULL};

static const struct sql_stmt GROUPS_CLEAR = {
	STMT_NODE_GROUPS_CLEAR, "clearing groups", "DELETE FROM node_groups WHERE node_id = ?1",
	NULL};

static const struct sql_stmt GROUP_ADD = {
	STMT_NODE_GROUP_ADD, "adding a group",
	"INSERT INTO node_groups (node_id, name, position) VALUES (?1, ?2, ?3)"
	" ON CONFLICT DO NOTHING",
	NULL};

static const struct sql_stmt GROUP_MEMBERS = {
	STMT_GROUP_MEMBERS, "listing node names",
	"SELECT n.name FROM node_groups g JOIN nodes n ON n.id = g.node_id WHERE g.name = ?1"
	" ORDER BY n.name",
	NULL};

static const struct sql_stmt NAMES = {
	STMT_NODE_NAMES, "listing node names", "SELECT name FROM nodes ORDER BY name", NULL};

void node_free(struct node *n)
{
	if (!n)
		return;
	free(n->name);
	for (size_t i = 0; i < n->ngroups; i++)
		free(n->groups[i]);
	free(n->groups);
	free(n->rack);
	free(n->bmc_host);
	free(n->bmc_user);
	free(n->bmc_password_enc);
	free(n->tls_ca_file);
	free(n->tls_fingerprint);
	free(n->ipmi_privilege);
	free(n->ipmi_workarounds);
	free(n->sol_host);
	free(n->bmc_system);
	free(n);
}

void node_list_free(struct node **nodes, size_t count)
{
	if (!nodes)
		return;
	for (size_t i = 0; i < count; i++)
		node_free(nodes[i]);
	free(nodes);
}

static int node_group_append(struct node *n, const char *group)
{
	char **g = realloc(n->groups, (n->ngroups + 1) * sizeof(*g));

	if (!g)
		return kiln_fail(KILN_ERROR, "store: out of memory");
	n->groups = g;
	g[n->ngroups] = strdup(group);
	if (!g[n->ngroups])
		return kiln_fail(KILN_ERROR, "store: out of memory");
	n->ngroups++;
	return 0;
}

/* Builds a node from a row of NODE_COLUMNS into *(struct node **)elem (groups are added
 * separately). */
static int node_read(const struct sql_row *r, void *elem)
{
	struct node *n = calloc(1, sizeof(*n));
	const void *password;
	size_t password_len;
	int proto, tls, ret = 0;

	if (!n)
		return kiln_fail(KILN_ERROR, "store: out of memory");
	n->id = sql_col_int(r, 0);
	proto = name_to_enum(protocol_names, COUNT(protocol_names), sql_col_text(r, 3));
	tls = name_to_enum(tls_names, COUNT(tls_names), sql_col_text(r, 8));
	if (proto < 0 || tls < 0) {
		ret = kiln_fail(KILN_ERROR, "store: node %lld: unknown BMC protocol or TLS mode",
				(long long)n->id);
		goto cleanup;
	}
	n->bmc_protocol = (enum node_bmc_protocol)proto;
	n->tls_mode = (enum node_tls_mode)tls;
	n->bmc_port = (int)sql_col_int(r, 5);
	n->ipmi_cipher = (int)sql_col_int(r, 11);
	n->sol_port = (int)sql_col_int(r, 15);
	n->credentials_version = sql_col_int(r, 17);
	n->created_at = sql_col_int(r, 18);
	n->updated_at = sql_col_int(r, 19);
	if ((ret = sql_col_strdup(r, 1, &n->name)) < 0 ||
	    (ret = sql_col_strdup(r, 2, &n->rack)) < 0 ||
	    (ret = sql_col_strdup(r, 4, &n->bmc_host)) < 0 ||
	    (ret = sql_col_strdup(r, 6, &n->bmc_user)) < 0 ||
	    (ret = sql_col_strdup(r, 9, &n->tls_ca_file)) < 0 ||
	    (ret = sql_col_strdup(r, 10, &n->tls_fingerprint)) < 0 ||
	    (ret = sql_col_strdup(r, 12, &n->ipmi_privilege)) < 0 ||
	    (ret = sql_col_strdup(r, 13, &n->ipmi_workarounds)) < 0 ||
	    (ret = sql_col_strdup(r, 14, &n->sol_host)) < 0 ||
	    (ret = sql_col_strdup(r, 16, &n->bmc_system)) < 0)
		goto cleanup;
	/* An empty password is none. */
	password = sql_col_blob(r, 7, &password_len);
	if (password && password_len > 0 &&
	    (ret = sql_col_blobdup(r, 7, &n->bmc_password_enc, &n->bmc_password_enc_len)) < 0)
		goto cleanup;
	*(struct node **)elem = n;
	n = NULL;
cleanup:
	node_free(n);
	return ret;
}

static void node_clear(void *elem)
{
	node_free(*(struct node **)elem);
}

/* The settable fields as ?1..?16, then now as ?17 and the node's id as ?18 (the update's). */
#define NODE_ARGS 18

static int node_args(struct store *st, const struct node *n, struct sql_arg a[NODE_ARGS])
{
	const unsigned char *password = n->bmc_password_enc_len > 0 ? n->bmc_password_enc : NULL;
	int i = 0;

	if ((unsigned)n->bmc_protocol >= COUNT(protocol_names) ||
	    (unsigned)n->tls_mode >= COUNT(tls_names))
		return kiln_fail(KILN_EINVAL, "store: node %s: bad BMC protocol or TLS mode",
				 n->name ? n->name : "(null)");
	if (!n->name)
		return kiln_fail(KILN_EINVAL, "store: node without a name");
	a[i++] = SQL_TEXT(n->name);
	a[i++] = SQL_TEXT(n->rack);
	a[i++] = SQL_TEXT(protocol_names[n->bmc_protocol]);
	a[i++] = SQL_TEXT(n->bmc_host);
	a[i++] = SQL_INT(n->bmc_port);
	a[i++] = SQL_TEXT(n->bmc_user);
	a[i++] = SQL_BLOB(password, n->bmc_password_enc_len);
	a[i++] = SQL_TEXT(tls_names[n->tls_mode]);
	a[i++] = SQL_TEXT(n->tls_ca_file);
	a[i++] = SQL_TEXT(n->tls_fingerprint);
	a[i++] = SQL_INT(n->ipmi_cipher);
	a[i++] = SQL_TEXT(n->ipmi_privilege ? n->ipmi_privilege : "admin");
	a[i++] = SQL_TEXT(n->ipmi_workarounds);
	a[i++] = SQL_TEXT(n->sol_host);
	a[i++] = SQL_INT(n->sol_port);
	a[i++] = SQL_TEXT(n->bmc_system);
	a[i++] = SQL_INT(store_now(st));
	a[i] = SQL_INT(n->id);
	return 0;
}

/* Replaces the node's groups with n's, in n's order; duplicates are kept once. */
static int groups_write(struct store *st, int64_t node_id, const struct node *n)
{
	int64_t ret;

	if ((ret = sql_exec(st, &GROUPS_CLEAR, SQL_ARGS(SQL_INT(node_id)))) < 0)
		return (int)ret;
	for (size_t i = 0; i < n->ngroups; i++) {
		ret = sql_exec(st, &GROUP_ADD,
			       SQL_ARGS(SQL_INT(node_id), SQL_TEXT(n->groups[i]), SQL_INT(i)));
		if (ret < 0)
			return kiln_fail_prefix((int)ret, "node %s: group '%s'", n->name,
						n->groups[i]);
	}
	return 0;
}

/* A unique violation of a write names the node. */
static int node_write_fail(int ret, const struct node *n)
{
	if (ret == KILN_EEXISTS)
		return kiln_fail(ret, "node '%s' already exists", n->name);
	return ret;
}

int store_node_insert(struct store *st, struct node *n)
{
	struct sql_arg args[NODE_ARGS];
	int64_t id = 0;
	int ret;

	if ((ret = node_args(st, n, args)) < 0)
		return ret;
	if ((ret = store_savepoint(st)) < 0)
		return ret;
	if ((ret = sql_int(st, &INSERT, args, NODE_ARGS - 1, &id)) < 0)
		ret = node_write_fail(ret, n);
	else if (ret == 0)
		ret = kiln_fail(KILN_ERROR, "store: adding a node: no id returned");
	else if ((ret = groups_write(st, id, n)) >= 0)
		ret = store_release(st);
	if (ret < 0) {
		store_rollback_to(st);
		return ret;
	}
	n->id = id;
	n->credentials_version = 1;
	return 0;
}

int store_node_update(struct store *st, const struct node *n)
{
	struct sql_arg args[NODE_ARGS];
	int64_t changed;
	int ret;

	if ((ret = node_args(st, n, args)) < 0)
		return ret;
	if ((ret = store_savepoint(st)) < 0)
		return ret;
	changed = sql_exec(st, &UPDATE, args, NODE_ARGS);
	if (changed < 0)
		ret = node_write_fail((int)changed, n);
	else if (changed == 0)
		ret = kiln_fail(KILN_ENOTFOUND, "no node with id %lld", (long long)n->id);
	else if ((ret = groups_write(st, n->id, n)) >= 0)
		ret = store_release(st);
	if (ret < 0)
		store_rollback_to(st);
	return ret;
}

static int group_read(const struct sql_row *r, void *ctx)
{
	return node_group_append(ctx, sql_col_text(r, 0));
}

int store_node_get(struct store *st, struct node **out, const char *name)
{
	struct node *n = NULL;
	int ret;

	/* One read snapshot for the row and its groups. */
	if ((ret = store_savepoint(st)) < 0)
		return ret;
	ret = sql_one(st, &GET, SQL_ARGS(SQL_TEXT(name)), node_read, &n);
	if (ret == 0)
		ret = kiln_fail(KILN_ENOTFOUND, "no node '%s'", name);
	else if (ret > 0 && (ret = sql_run(st, &GROUPS_GET, SQL_ARGS(SQL_INT(n->id)), group_read, n,
					   NULL)) >= 0)
		ret = store_release(st);
	if (ret < 0) {
		store_rollback_to(st);
		node_free(n);
		return ret;
	}
	*out = n;
	return 0;
}

int store_node_delete(struct store *st, const char *name)
{
	int64_t ret = sql_exec(st, &DELETE, SQL_ARGS(SQL_TEXT(name)));

	if (ret == 0)
		return kiln_fail(KILN_ENOTFOUND, "no node '%s'", name);
	return ret < 0 ? (int)ret : 0;
}

/* Walks the nodes (ordered by name) in step with the group rows (ordered by node name). */
struct groups_walk {
	struct node **nodes;
	size_t count, i;
};

static int group_attach(const struct sql_row *r, void *ctx)
{
	struct groups_walk *w = ctx;
	const char *node = sql_col_text(r, 0);

	/* BINARY collation on both sides, so strcmp walks them in step. */
	while (w->i < w->count && strcmp(w->nodes[w->i]->name, node) < 0)
		w->i++;
	if (w->i == w->count)
		return SQL_STOP;
	if (strcmp(w->nodes[w->i]->name, node) != 0)
		return 0;
	return node_group_append(w->nodes[w->i], sql_col_text(r, 1));
}

int store_node_list(struct store *st, struct node ***out, size_t *out_count)
{
	struct groups_walk w = {NULL, 0, 0};
	int ret;

	if ((ret = store_savepoint(st)) < 0)
		return ret;
	if ((ret = sql_list(st, &LIST, SQL_NO_ARGS, &w.nodes, &w.count, sizeof(*w.nodes), node_read,
			    node_clear)) >= 0 &&
	    (ret = sql_run(st, &GROUPS_ALL, SQL_NO_ARGS, group_attach, &w, NULL)) >= 0)
		ret = store_release(st);
	if (ret < 0) {
		store_rollback_to(st);
		node_list_free(w.nodes, w.count);
		return ret;
	}
	*out = w.nodes;
	*out_count = w.count;
	return 0;
}

static int nodelist_push(struct kiln_nodelist *l, const char *name)
{
	char *copy;
	int ret;

	if ((ret = store_list_grow((void **)&l->names, &l->cap, l->count, sizeof(*l->names))) < 0)
		return ret;
	copy = strdup(name);
	if (!copy)
		return kiln_fail(KILN_ERROR, "store: out of memory");
	l->names[l->count++] = copy;
	return 0;
}

/* Appends the names a query returns to a list. */
struct names {
	struct kiln_nodelist *out;
	size_t before;
};

static int name_append(const struct sql_row *r, void *ctx)
{
	struct names *a = ctx;
	const char *name = sql_col_text(r, 0);

	/* The rows are distinct: into an empty list they go without the linear duplicate
	 * check, which would make "all" quadratic in the fleet size. */
	if (a->before == 0)
		return nodelist_push(a->out, name);
	if (kiln_nodelist_add(a->out, name) < 0)
		return kiln_fail(KILN_ERROR, "store: out of memory");
	return 0;
}

/* Appends column 0 of every row of q to out: the rows read, or an error (out then keeps what
 * it had). */
static int names_append(struct store *st, const struct sql_stmt *q, const struct sql_arg *args,
			size_t n, struct kiln_nodelist *out)
{
	struct names a = {out, out->count};
	int ret = sql_run(st, q, args, n, name_append, &a, NULL);

	if (ret < 0) {
		while (out->count > a.before)
			free(out->names[--out->count]);
	}
	return ret;
}

int store_group_members(struct store *st, const char *group, struct kiln_nodelist *out)
{
	int ret = names_append(st, &GROUP_MEMBERS, SQL_ARGS(SQL_TEXT(group)), out);

	/* A group exists only through its members. */
	if (ret == 0)
		return kiln_fail(KILN_ENOTFOUND, "no group '%s'", group);
	return ret < 0 ? ret : 0;
}

int store_node_names(struct store *st, struct kiln_nodelist *out)
{
	int ret = names_append(st, &NAMES, SQL_NO_ARGS, out);

	return ret < 0 ? ret : 0;
}
