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

static int name_to_enum(const char *const *names, size_t n, const unsigned char *v)
{
	for (size_t i = 0; v && i < n; i++) {
		if (names[i] && strcmp(names[i], (const char *)v) == 0)
			return (int)i;
	}
	return -1;
}

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

/* Builds a node from a row of NODE_COLUMNS (groups are added separately). */
static int node_from_row(struct node **out, sqlite3_stmt *s)
{
	struct node *n = calloc(1, sizeof(*n));
	int proto, tls, ret = 0;

	if (!n)
		return kiln_fail(KILN_ERROR, "store: out of memory");
	n->id = sqlite3_column_int64(s, 0);
	proto = name_to_enum(protocol_names, COUNT(protocol_names), sqlite3_column_text(s, 3));
	tls = name_to_enum(tls_names, COUNT(tls_names), sqlite3_column_text(s, 8));
	if (proto < 0 || tls < 0) {
		ret = kiln_fail(KILN_ERROR, "store: node %lld: unknown BMC protocol or TLS mode",
				(long long)n->id);
		goto cleanup;
	}
	n->bmc_protocol = (enum node_bmc_protocol)proto;
	n->tls_mode = (enum node_tls_mode)tls;
	n->bmc_port = sqlite3_column_int(s, 5);
	n->ipmi_cipher = sqlite3_column_int(s, 11);
	n->sol_port = sqlite3_column_int(s, 15);
	n->credentials_version = sqlite3_column_int64(s, 17);
	n->created_at = sqlite3_column_int64(s, 18);
	n->updated_at = sqlite3_column_int64(s, 19);
	if ((ret = store_column_strdup(&n->name, s, 1)) < 0 ||
	    (ret = store_column_strdup(&n->rack, s, 2)) < 0 ||
	    (ret = store_column_strdup(&n->bmc_host, s, 4)) < 0 ||
	    (ret = store_column_strdup(&n->bmc_user, s, 6)) < 0 ||
	    (ret = store_column_strdup(&n->tls_ca_file, s, 9)) < 0 ||
	    (ret = store_column_strdup(&n->tls_fingerprint, s, 10)) < 0 ||
	    (ret = store_column_strdup(&n->ipmi_privilege, s, 12)) < 0 ||
	    (ret = store_column_strdup(&n->ipmi_workarounds, s, 13)) < 0 ||
	    (ret = store_column_strdup(&n->sol_host, s, 14)) < 0 ||
	    (ret = store_column_strdup(&n->bmc_system, s, 16)) < 0)
		goto cleanup;
	if (sqlite3_column_type(s, 7) == SQLITE_BLOB) {
		const void *blob = sqlite3_column_blob(s, 7);
		int len = sqlite3_column_bytes(s, 7);

		if (len > 0) {
			n->bmc_password_enc = malloc((size_t)len);
			if (!n->bmc_password_enc) {
				ret = kiln_fail(KILN_ERROR, "store: out of memory");
				goto cleanup;
			}
			memcpy(n->bmc_password_enc, blob, (size_t)len);
			n->bmc_password_enc_len = (size_t)len;
		}
	}
	*out = n;
	n = NULL;
cleanup:
	node_free(n);
	return ret;
}

/* Binds the settable fields as ?1..?16 (shared by insert and update). */
static int node_bind(struct store *st, sqlite3_stmt *s, const struct node *n)
{
	int rc = SQLITE_OK;

	if ((unsigned)n->bmc_protocol >= COUNT(protocol_names) ||
	    (unsigned)n->tls_mode >= COUNT(tls_names))
		return kiln_fail(KILN_EINVAL, "store: node %s: bad BMC protocol or TLS mode",
				 n->name ? n->name : "(null)");
	if (!n->name)
		return kiln_fail(KILN_EINVAL, "store: node without a name");
	if (rc == SQLITE_OK)
		rc = store_bind_text(s, 1, n->name);
	if (rc == SQLITE_OK)
		rc = store_bind_text(s, 2, n->rack);
	if (rc == SQLITE_OK)
		rc = store_bind_text(s, 3, protocol_names[n->bmc_protocol]);
	if (rc == SQLITE_OK)
		rc = store_bind_text(s, 4, n->bmc_host);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int(s, 5, n->bmc_port);
	if (rc == SQLITE_OK)
		rc = store_bind_text(s, 6, n->bmc_user);
	if (rc == SQLITE_OK && n->bmc_password_enc && n->bmc_password_enc_len > 0)
		rc = sqlite3_bind_blob64(s, 7, n->bmc_password_enc, n->bmc_password_enc_len,
					 SQLITE_STATIC);
	if (rc == SQLITE_OK)
		rc = store_bind_text(s, 8, tls_names[n->tls_mode]);
	if (rc == SQLITE_OK)
		rc = store_bind_text(s, 9, n->tls_ca_file);
	if (rc == SQLITE_OK)
		rc = store_bind_text(s, 10, n->tls_fingerprint);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int(s, 11, n->ipmi_cipher);
	if (rc == SQLITE_OK)
		rc = store_bind_text(s, 12, n->ipmi_privilege ? n->ipmi_privilege : "admin");
	if (rc == SQLITE_OK)
		rc = store_bind_text(s, 13, n->ipmi_workarounds);
	if (rc == SQLITE_OK)
		rc = store_bind_text(s, 14, n->sol_host);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int(s, 15, n->sol_port);
	if (rc == SQLITE_OK)
		rc = store_bind_text(s, 16, n->bmc_system);
	if (rc != SQLITE_OK)
		return store_fail(st, rc, "binding a node");
	return 0;
}

/* Replaces the node's groups with n's, in n's order; duplicates are kept once. */
static int groups_write(struct store *st, int64_t node_id, const struct node *n)
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_NODE_GROUPS_CLEAR,
			      "DELETE FROM node_groups WHERE node_id = ?1")) < 0)
		return ret;
	sqlite3_bind_int64(s, 1, node_id);
	rc = sqlite3_step(s);
	store_stmt_done(s);
	if (rc != SQLITE_DONE)
		return store_fail(st, rc, "clearing groups");
	for (size_t i = 0; i < n->ngroups; i++) {
		if ((ret = store_stmt(st, &s, STMT_NODE_GROUP_ADD,
				      "INSERT INTO node_groups (node_id, name, position)"
				      " VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING")) < 0)
			return ret;
		sqlite3_bind_int64(s, 1, node_id);
		store_bind_text(s, 2, n->groups[i]);
		sqlite3_bind_int64(s, 3, (sqlite3_int64)i);
		rc = sqlite3_step(s);
		store_stmt_done(s);
		if (rc != SQLITE_DONE) {
			ret = store_fail(st, rc, "adding a group");
			return kiln_fail_prefix(ret, "node %s: group '%s'", n->name, n->groups[i]);
		}
	}
	return 0;
}

int store_node_insert(struct store *st, struct node *n)
{
	sqlite3_stmt *s = NULL;
	int64_t id = 0;
	int rc, ret;

	if ((ret = store_savepoint(st)) < 0)
		return ret;
	if ((ret = store_stmt(st, &s, STMT_NODE_INSERT,
		"INSERT INTO nodes (name, rack, bmc_protocol, bmc_host, bmc_port, bmc_user,"
		" bmc_password_enc, tls_mode, tls_ca_file, tls_fingerprint, ipmi_cipher,"
		" ipmi_privilege, ipmi_workarounds, sol_host, sol_port, bmc_system,"
		" credentials_version, created_at, updated_at)"
		" VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16,"
		" 1, ?17, ?17)")) < 0)
		goto cleanup;
	if ((ret = node_bind(st, s, n)) < 0)
		goto cleanup;
	sqlite3_bind_int64(s, 17, store_now(st));
	rc = sqlite3_step(s);
	if (rc != SQLITE_DONE) {
		ret = store_fail(st, rc, "adding a node");
		if (ret == KILN_EEXISTS)
			kiln_fail(ret, "node '%s' already exists", n->name);
		goto cleanup;
	}
	id = sqlite3_last_insert_rowid(st->db);
	store_stmt_done(s);
	s = NULL;
	if ((ret = groups_write(st, id, n)) < 0)
		goto cleanup;
	ret = store_release(st);
cleanup:
	store_stmt_done(s);
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
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_savepoint(st)) < 0)
		return ret;
	/* credentials_version moves when the user or the password changes, so that a node
	 * whose credentials were rejected is tried again with the new ones. */
	if ((ret = store_stmt(st, &s, STMT_NODE_UPDATE,
		"UPDATE nodes SET name = ?1, rack = ?2, bmc_protocol = ?3, bmc_host = ?4,"
		" bmc_port = ?5, bmc_user = ?6, bmc_password_enc = ?7, tls_mode = ?8,"
		" tls_ca_file = ?9, tls_fingerprint = ?10, ipmi_cipher = ?11, ipmi_privilege = ?12,"
		" ipmi_workarounds = ?13, sol_host = ?14, sol_port = ?15, bmc_system = ?16,"
		" credentials_version = credentials_version"
		"   + (bmc_user IS NOT ?6 OR bmc_password_enc IS NOT ?7),"
		" updated_at = ?17 WHERE id = ?18")) < 0)
		goto cleanup;
	if ((ret = node_bind(st, s, n)) < 0)
		goto cleanup;
	sqlite3_bind_int64(s, 17, store_now(st));
	sqlite3_bind_int64(s, 18, n->id);
	rc = sqlite3_step(s);
	if (rc != SQLITE_DONE) {
		ret = store_fail(st, rc, "updating a node");
		if (ret == KILN_EEXISTS)
			kiln_fail(ret, "node '%s' already exists", n->name);
		goto cleanup;
	}
	if (sqlite3_changes(st->db) == 0) {
		ret = kiln_fail(KILN_ENOTFOUND, "no node with id %lld", (long long)n->id);
		goto cleanup;
	}
	store_stmt_done(s);
	s = NULL;
	if ((ret = groups_write(st, n->id, n)) < 0)
		goto cleanup;
	ret = store_release(st);
cleanup:
	store_stmt_done(s);
	if (ret < 0)
		store_rollback_to(st);
	return ret;
}

static int groups_read(struct store *st, struct node *n)
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_NODE_GROUPS_GET,
			      "SELECT name FROM node_groups WHERE node_id = ?1 ORDER BY position")) < 0)
		return ret;
	sqlite3_bind_int64(s, 1, n->id);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if ((ret = node_group_append(n, (const char *)sqlite3_column_text(s, 0))) < 0)
			goto cleanup;
	}
	if (rc != SQLITE_DONE)
		ret = store_fail(st, rc, "reading groups");
cleanup:
	store_stmt_done(s);
	return ret;
}

int store_node_get(struct store *st, struct node **out, const char *name)
{
	sqlite3_stmt *s = NULL;
	struct node *n = NULL;
	int rc, ret;

	/* One read snapshot for the row and its groups. */
	if ((ret = store_savepoint(st)) < 0)
		return ret;
	if ((ret = store_stmt(st, &s, STMT_NODE_GET,
			      "SELECT " NODE_COLUMNS " FROM nodes WHERE name = ?1")) < 0)
		goto cleanup;
	store_bind_text(s, 1, name);
	rc = sqlite3_step(s);
	if (rc == SQLITE_DONE) {
		ret = kiln_fail(KILN_ENOTFOUND, "no node '%s'", name);
		goto cleanup;
	}
	if (rc != SQLITE_ROW) {
		ret = store_fail(st, rc, "reading a node");
		goto cleanup;
	}
	if ((ret = node_from_row(&n, s)) < 0)
		goto cleanup;
	store_stmt_done(s);
	s = NULL;
	if ((ret = groups_read(st, n)) < 0)
		goto cleanup;
	ret = store_release(st);
cleanup:
	store_stmt_done(s);
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
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_NODE_DELETE, "DELETE FROM nodes WHERE name = ?1")) < 0)
		return ret;
	store_bind_text(s, 1, name);
	rc = sqlite3_step(s);
	if (rc != SQLITE_DONE)
		ret = store_fail(st, rc, "deleting a node");
	else if (sqlite3_changes(st->db) == 0)
		ret = kiln_fail(KILN_ENOTFOUND, "no node '%s'", name);
	store_stmt_done(s);
	return ret;
}

/* Attaches every group to its node: both queries are ordered by node name. */
static int groups_attach(struct store *st, struct node **nodes, size_t count)
{
	sqlite3_stmt *s = NULL;
	size_t i = 0;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_NODE_GROUPS_ALL,
			      "SELECT n.name, g.name FROM node_groups g JOIN nodes n ON n.id = g.node_id"
			      " ORDER BY n.name, g.position")) < 0)
		return ret;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		const char *node = (const char *)sqlite3_column_text(s, 0);

		/* BINARY collation on both sides, so strcmp walks them in step. */
		while (i < count && strcmp(nodes[i]->name, node) < 0)
			i++;
		if (i == count)
			break;
		if (strcmp(nodes[i]->name, node) != 0)
			continue;
		if ((ret = node_group_append(nodes[i], (const char *)sqlite3_column_text(s, 1))) < 0)
			goto cleanup;
	}
	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
		ret = store_fail(st, rc, "reading groups");
cleanup:
	store_stmt_done(s);
	return ret;
}

int store_node_list(struct store *st, struct node ***out, size_t *out_count)
{
	sqlite3_stmt *s = NULL;
	struct node **nodes = NULL;
	size_t count = 0, cap = 0;
	int rc, ret;

	if ((ret = store_savepoint(st)) < 0)
		return ret;
	if ((ret = store_stmt(st, &s, STMT_NODE_LIST,
			      "SELECT " NODE_COLUMNS " FROM nodes ORDER BY name")) < 0)
		goto cleanup;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if ((ret = store_list_grow((void **)&nodes, &cap, count, sizeof(*nodes))) < 0)
			goto cleanup;
		if ((ret = node_from_row(&nodes[count], s)) < 0)
			goto cleanup;
		count++;
	}
	if (rc != SQLITE_DONE) {
		ret = store_fail(st, rc, "listing nodes");
		goto cleanup;
	}
	store_stmt_done(s);
	s = NULL;
	if ((ret = groups_attach(st, nodes, count)) < 0)
		goto cleanup;
	ret = store_release(st);
cleanup:
	store_stmt_done(s);
	if (ret < 0) {
		store_rollback_to(st);
		node_list_free(nodes, count);
		return ret;
	}
	*out = nodes;
	*out_count = count;
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

/* Appends column 0 of every row to out (*out_rows: rows read); on failure out keeps what it
 * had. */
static int names_append(struct store *st, sqlite3_stmt *s, struct kiln_nodelist *out,
			size_t *out_rows)
{
	size_t before = out->count, rows = 0;
	int rc, ret = 0;

	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(s, 0);

		rows++;
		/* The rows are distinct: into an empty list they go without the linear
		 * duplicate check, which would make "all" quadratic in the fleet size. */
		if (before == 0)
			ret = nodelist_push(out, name);
		else if (kiln_nodelist_add(out, name) < 0)
			ret = kiln_fail(KILN_ERROR, "store: out of memory");
		if (ret < 0)
			goto cleanup;
	}
	if (rc != SQLITE_DONE)
		ret = store_fail(st, rc, "listing node names");
cleanup:
	if (ret < 0) {
		while (out->count > before)
			free(out->names[--out->count]);
	}
	*out_rows = rows;
	return ret;
}

int store_group_members(struct store *st, const char *group, struct kiln_nodelist *out)
{
	sqlite3_stmt *s = NULL;
	size_t rows = 0;
	int ret;

	if ((ret = store_stmt(st, &s, STMT_GROUP_MEMBERS,
			      "SELECT n.name FROM node_groups g JOIN nodes n ON n.id = g.node_id"
			      " WHERE g.name = ?1 ORDER BY n.name")) < 0)
		return ret;
	store_bind_text(s, 1, group);
	ret = names_append(st, s, out, &rows);
	store_stmt_done(s);
	if (ret < 0)
		return ret;
	/* A group exists only through its members. */
	if (rows == 0)
		return kiln_fail(KILN_ENOTFOUND, "no group '%s'", group);
	return 0;
}

int store_node_names(struct store *st, struct kiln_nodelist *out)
{
	sqlite3_stmt *s = NULL;
	size_t rows = 0;
	int ret;

	if ((ret = store_stmt(st, &s, STMT_NODE_NAMES, "SELECT name FROM nodes ORDER BY name")) < 0)
		return ret;
	ret = names_append(st, s, out, &rows);
	store_stmt_done(s);
	return ret;
}
