/* SPDX-License-Identifier: Apache-2.0 */
/* API tokens (with a role) and per-node agent tokens, stored as SHA-256 hashes. */
#include <stdlib.h>
#include <string.h>

#include "kiln/error.h"
#include "store/store_internal.h"

/* last_used_at is written at most once a minute per token, not on every request. */
#define TOUCH_INTERVAL_S 60

static const char *const role_names[] = {
	[ROLE_VIEWER] = "viewer",
	[ROLE_OPERATOR] = "operator",
	[ROLE_ADMIN] = "admin",
	[ROLE_METRICS] = "metrics",
};

/* The columns token_read() reads first, from api_tokens t. */
#define TOKEN_COLUMNS "t.id, t.name, t.role, t.created_at, coalesce(t.last_used_at, 0)"

static const struct sql_stmt TOKEN_INSERT = {
	STMT_TOKEN_INSERT, "adding a token",
	"INSERT INTO api_tokens (name, role, hash, created_at) VALUES (?1, ?2, ?3, ?4)"
	" RETURNING id",
	NULL};

static const struct sql_stmt TOKEN_LOOKUP = {
	STMT_TOKEN_LOOKUP, "looking up a token",
	"SELECT " TOKEN_COLUMNS " FROM api_tokens t WHERE t.hash = ?1 AND t.revoked_at IS NULL",
	NULL};

/* Records a use of the token id ?2 at ?1 unless one was recorded after ?3 (touch()). */
#define TOUCH_SQL(table)                                                                           \
	"UPDATE " table " SET last_used_at = ?1 WHERE id = ?2"                                    \
	" AND (last_used_at IS NULL OR last_used_at <= ?3)"

static const struct sql_stmt TOKEN_TOUCH = {
	STMT_TOKEN_TOUCH, "recording token use", TOUCH_SQL("api_tokens"), NULL};

static const struct sql_stmt TOKEN_LIST = {
	STMT_TOKEN_LIST, "listing tokens",
	"SELECT " TOKEN_COLUMNS ", CASE WHEN t.revoked_at IS NOT NULL THEN 1 ELSE 0 END"
	" FROM api_tokens t ORDER BY t.id",
	NULL};

/* Revoking twice keeps the first time and succeeds. */
static const struct sql_stmt TOKEN_REVOKE = {
	STMT_TOKEN_REVOKE, "revoking a token",
	"UPDATE api_tokens SET revoked_at = coalesce(revoked_at, ?1) WHERE id = ?2", NULL};

static const struct sql_stmt AGENT_TOKEN_INSERT = {
	STMT_AGENT_TOKEN_INSERT, "adding an agent token",
	"INSERT INTO agent_tokens (node_id, hash, created_at) VALUES (?1, ?2, ?3) RETURNING id",
	NULL};

static const struct sql_stmt AGENT_TOKEN_FIND = {
	STMT_AGENT_TOKEN_FIND, "looking up an agent token",
	"SELECT id, node_id, CASE WHEN last_used_at IS NULL OR last_used_at <= ?2 THEN 1 ELSE 0 END"
	" FROM agent_tokens WHERE hash = ?1 AND revoked_at IS NULL",
	NULL};

static const struct sql_stmt AGENT_TOKEN_TOUCH = {
	STMT_AGENT_TOKEN_TOUCH, "recording token use", TOUCH_SQL("agent_tokens"), NULL};

static const struct sql_stmt AGENT_TOKEN_REVOKE_NODE = {
	STMT_AGENT_TOKEN_REVOKE_NODE, "revoking agent tokens",
	"UPDATE agent_tokens SET revoked_at = ?1 WHERE node_id = ?2 AND revoked_at IS NULL", NULL};

static const struct sql_stmt SESSION_INSERT = {
	STMT_SESSION_INSERT, "adding a session",
	"INSERT INTO ui_sessions (hash, token_id, csrf, created_at, expires_at)"
	" VALUES (?1, ?2, ?3, ?4, ?5) RETURNING id",
	NULL};

/* The token's columns first (token_read()), then the session's. */
static const struct sql_stmt SESSION_LOOKUP = {
	STMT_SESSION_LOOKUP, "looking up a session",
	"SELECT " TOKEN_COLUMNS ", s.id, s.csrf, s.expires_at FROM ui_sessions s"
	" JOIN api_tokens t ON t.id = s.token_id"
	" WHERE s.hash = ?1 AND s.ended_at IS NULL AND s.expires_at > ?2"
	" AND t.revoked_at IS NULL",
	NULL};

static const struct sql_stmt SESSION_END = {
	STMT_SESSION_END, "ending a session",
	"UPDATE ui_sessions SET ended_at = ?2 WHERE id = ?1 AND ended_at IS NULL", NULL};

static const struct sql_stmt SESSION_PRUNE = {
	STMT_SESSION_PRUNE, "pruning sessions",
	"DELETE FROM ui_sessions WHERE expires_at < ?1 OR ended_at < ?1", NULL};

static int role_from_text(enum token_role *out, const char *v)
{
	for (int r = ROLE_VIEWER; r <= ROLE_METRICS; r++) {
		if (v && strcmp(v, role_names[r]) == 0) {
			*out = (enum token_role)r;
			return 0;
		}
	}
	return kiln_fail(KILN_ERROR, "store: token with unknown role '%s'", v ? v : "");
}

void api_token_clear(struct api_token *t)
{
	if (!t)
		return;
	free(t->name);
	memset(t, 0, sizeof(*t));
}

static void token_clear(void *elem)
{
	api_token_clear(elem);
}

/* Reads TOKEN_COLUMNS (columns 0-4) into the struct api_token elem. */
static int token_read(const struct sql_row *r, void *elem)
{
	struct api_token *t = elem;
	int ret;

	t->id = sql_col_int(r, 0);
	t->created_at = sql_col_int(r, 3);
	t->last_used_at = sql_col_int(r, 4);
	if ((ret = role_from_text(&t->role, sql_col_text(r, 2))) < 0)
		return ret;
	return sql_col_strdup(r, 1, &t->name);
}

static int token_list_read(const struct sql_row *r, void *elem)
{
	struct api_token *t = elem;

	t->revoked = (int)sql_col_int(r, 5);
	return token_read(r, t);
}

int store_token_insert(struct store *st, int64_t *out_id, const char *name, enum token_role role,
		       const unsigned char hash[32])
{
	if (role < ROLE_VIEWER || role > ROLE_METRICS)
		return kiln_fail(KILN_EINVAL, "store: token role %d out of range", (int)role);
	return sql_insert_id(st, &TOKEN_INSERT,
			 SQL_ARGS(SQL_TEXT(name), SQL_TEXT(role_names[role]), SQL_BLOB(hash, 32),
				  SQL_INT(store_now(st))),
			 out_id);
}

/* Records that a token was used. A busy database only delays the record: not an error. */
static int touch(struct store *st, const struct sql_stmt *q, int64_t id)
{
	int64_t now = store_now(st);
	int ret = sql_write(st, q, SQL_ARGS(SQL_INT(now), SQL_INT(id),
					    SQL_INT(now - TOUCH_INTERVAL_S)));

	return ret < 0 && ret != KILN_EBUSY ? ret : 0;
}

int store_token_lookup(struct store *st, struct api_token *out, const unsigned char hash[32])
{
	struct api_token t = { 0 };
	int ret = sql_one(st, &TOKEN_LOOKUP, SQL_ARGS(SQL_BLOB(hash, 32)), token_read, &t);

	if (ret == 0)
		ret = kiln_fail(KILN_ENOTFOUND, "unknown or revoked token");
	if (ret < 0 || (ret = touch(st, &TOKEN_TOUCH, t.id)) < 0) {
		api_token_clear(&t);
		return ret;
	}
	*out = t;
	return 0;
}

int store_token_list(struct store *st, struct api_token **out, size_t *out_count)
{
	return sql_list(st, &TOKEN_LIST, SQL_NO_ARGS, out, out_count, sizeof(**out),
			token_list_read, token_clear);
}

int store_token_revoke(struct store *st, int64_t id)
{
	int64_t ret = sql_exec(st, &TOKEN_REVOKE, SQL_ARGS(SQL_INT(store_now(st)), SQL_INT(id)));

	if (ret == 0)
		return kiln_fail(KILN_ENOTFOUND, "no token %lld", (long long)id);
	return ret < 0 ? (int)ret : 0;
}

int store_agent_token_insert(struct store *st, int64_t *out_id, int64_t node_id,
			     const unsigned char hash[32])
{
	int ret = sql_insert_id(st, &AGENT_TOKEN_INSERT,
			    SQL_ARGS(SQL_INT(node_id), SQL_BLOB(hash, 32), SQL_INT(store_now(st))),
			    out_id);

	if (ret == KILN_ENOTFOUND)
		kiln_fail(ret, "no node with id %lld", (long long)node_id);
	return ret;
}

struct agent_token {
	int64_t id, node_id;
	int stale;
};

static int agent_token_read(const struct sql_row *r, void *ctx)
{
	struct agent_token *a = ctx;

	a->id = sql_col_int(r, 0);
	a->node_id = sql_col_int(r, 1);
	a->stale = (int)sql_col_int(r, 2);
	return 0;
}

int store_agent_token_find(struct store *st, int64_t *out_id, int64_t *out_node_id,
			   int *out_stale, const unsigned char hash[32])
{
	struct agent_token a = { 0 };
	int ret = sql_one(st, &AGENT_TOKEN_FIND,
			  SQL_ARGS(SQL_BLOB(hash, 32), SQL_INT(store_now(st) - TOUCH_INTERVAL_S)),
			  agent_token_read, &a);

	if (ret == 0)
		return kiln_fail(KILN_ENOTFOUND, "unknown or revoked agent token");
	if (ret < 0)
		return ret;
	*out_id = a.id;
	*out_node_id = a.node_id;
	*out_stale = a.stale;
	return 0;
}

int store_agent_token_touch(struct store *st, int64_t id)
{
	return touch(st, &AGENT_TOKEN_TOUCH, id);
}

int store_agent_token_lookup(struct store *st, int64_t *out_node_id, const unsigned char hash[32])
{
	int64_t id, node_id;
	int stale, ret;

	if ((ret = store_agent_token_find(st, &id, &node_id, &stale, hash)) < 0 ||
	    (ret = store_agent_token_touch(st, id)) < 0)
		return ret;
	*out_node_id = node_id;
	return 0;
}

int store_agent_token_revoke_node(struct store *st, int64_t node_id, int *out_revoked)
{
	int64_t ret = sql_exec(st, &AGENT_TOKEN_REVOKE_NODE,
			       SQL_ARGS(SQL_INT(store_now(st)), SQL_INT(node_id)));

	if (ret < 0)
		return (int)ret;
	if (out_revoked)
		*out_revoked = (int)ret;
	return 0;
}

/* --- dashboard sessions ---------------------------------------------------------------- */

int store_session_insert(struct store *st, int64_t *out_id, const unsigned char hash[32],
			 int64_t token_id, const char *csrf, int64_t expires_at)
{
	return sql_insert_id(st, &SESSION_INSERT,
			 SQL_ARGS(SQL_BLOB(hash, 32), SQL_INT(token_id), SQL_TEXT(csrf),
				  SQL_INT(store_now(st)), SQL_INT(expires_at)),
			 out_id);
}

static int session_read(const struct sql_row *r, void *ctx)
{
	struct ui_session *u = ctx;

	u->id = sql_col_int(r, 5);
	sql_col_word(r, 6, u->csrf, sizeof(u->csrf), "");
	u->expires_at = sql_col_int(r, 7);
	return token_read(r, &u->token);
}

int store_session_lookup(struct store *st, struct ui_session *out, const unsigned char hash[32])
{
	struct ui_session u = { 0 };
	int ret = sql_one(st, &SESSION_LOOKUP,
			  SQL_ARGS(SQL_BLOB(hash, 32), SQL_INT(store_now(st))), session_read, &u);

	if (ret == 0)
		ret = kiln_fail(KILN_ENOTFOUND, "no such session, or it ended: log in again");
	if (ret < 0) {
		api_token_clear(&u.token);
		return ret;
	}
	*out = u;
	return 0;
}

int store_session_end(struct store *st, int64_t id)
{
	int64_t ret = sql_exec(st, &SESSION_END, SQL_ARGS(SQL_INT(id), SQL_INT(store_now(st))));

	return ret < 0 ? (int)ret : 0;
}

int store_session_prune(struct store *st, int64_t cutoff)
{
	int64_t ret = sql_exec(st, &SESSION_PRUNE, SQL_ARGS(SQL_INT(cutoff)));

	return ret < 0 ? (int)ret : 0;
}
