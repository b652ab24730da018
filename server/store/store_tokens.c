/* API tokens (with a role) and per-node agent tokens, stored as SHA-256 hashes. */
#include <stdlib.h>
#include <string.h>

#include "kiln/error.h"
#include "kiln/parse.h"
#include "store/store_internal.h"

/* last_used_at is written at most once a minute per token, not on every request. */
#define TOUCH_INTERVAL_S 60

static const char *const role_names[] = {
	[ROLE_VIEWER] = "viewer",
	[ROLE_OPERATOR] = "operator",
	[ROLE_ADMIN] = "admin",
	[ROLE_METRICS] = "metrics",
};

static int role_from_text(enum token_role *out, const unsigned char *v)
{
	for (int r = ROLE_VIEWER; r <= ROLE_METRICS; r++) {
		if (v && strcmp((const char *)v, role_names[r]) == 0) {
			*out = (enum token_role)r;
			return 0;
		}
	}
	return kiln_fail(KILN_ERROR, "store: token with unknown role '%s'", v ? (const char *)v : "");
}

void api_token_clear(struct api_token *t)
{
	if (!t)
		return;
	free(t->name);
	memset(t, 0, sizeof(*t));
}

int store_token_insert(struct store *st, int64_t *out_id, const char *name, enum token_role role,
		       const unsigned char hash[32])
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if (role < ROLE_VIEWER || role > ROLE_METRICS)
		return kiln_fail(KILN_EINVAL, "store: token role %d out of range", (int)role);
	if ((ret = store_stmt(st, &s, STMT_TOKEN_INSERT,
			      "INSERT INTO api_tokens (name, role, hash, created_at)"
			      " VALUES (?1, ?2, ?3, ?4)")) < 0)
		return ret;
	store_bind_text(s, 1, name);
	store_bind_text(s, 2, role_names[role]);
	sqlite3_bind_blob(s, 3, hash, 32, SQLITE_STATIC);
	sqlite3_bind_int64(s, 4, store_now(st));
	rc = sqlite3_step(s);
	if (rc != SQLITE_DONE)
		ret = store_fail(st, rc, "adding a token");
	else
		*out_id = sqlite3_last_insert_rowid(st->db);
	store_stmt_done(s);
	return ret;
}

/* Records that a token was used. A busy database only delays the record: not an error. */
static int touch(struct store *st, enum store_stmt_id id, const char *sql, int64_t row)
{
	sqlite3_stmt *s = NULL;
	int64_t now = store_now(st);
	int rc, ret;

	if ((ret = store_stmt(st, &s, id, sql)) < 0)
		return ret;
	sqlite3_bind_int64(s, 1, now);
	sqlite3_bind_int64(s, 2, row);
	sqlite3_bind_int64(s, 3, now - TOUCH_INTERVAL_S);
	rc = sqlite3_step(s);
	if (rc != SQLITE_DONE && (rc & 0xff) != SQLITE_BUSY && (rc & 0xff) != SQLITE_LOCKED)
		ret = store_fail(st, rc, "recording token use");
	store_stmt_done(s);
	return ret;
}

int store_token_lookup(struct store *st, struct api_token *out, const unsigned char hash[32])
{
	struct api_token t = { 0 };
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_TOKEN_LOOKUP,
			      "SELECT id, name, role, created_at, ifnull(last_used_at, 0) FROM api_tokens"
			      " WHERE hash = ?1 AND revoked_at IS NULL")) < 0)
		return ret;
	sqlite3_bind_blob(s, 1, hash, 32, SQLITE_STATIC);
	rc = sqlite3_step(s);
	if (rc == SQLITE_DONE) {
		ret = kiln_fail(KILN_ENOTFOUND, "unknown or revoked token");
		goto cleanup;
	}
	if (rc != SQLITE_ROW) {
		ret = store_fail(st, rc, "looking up a token");
		goto cleanup;
	}
	t.id = sqlite3_column_int64(s, 0);
	t.created_at = sqlite3_column_int64(s, 3);
	t.last_used_at = sqlite3_column_int64(s, 4);
	if ((ret = role_from_text(&t.role, sqlite3_column_text(s, 2))) < 0 ||
	    (ret = store_column_strdup(&t.name, s, 1)) < 0)
		goto cleanup;
	store_stmt_done(s);
	s = NULL;
	if ((ret = touch(st, STMT_TOKEN_TOUCH,
			 "UPDATE api_tokens SET last_used_at = ?1 WHERE id = ?2"
			 " AND (last_used_at IS NULL OR last_used_at <= ?3)", t.id)) < 0)
		goto cleanup;
	*out = t;
	memset(&t, 0, sizeof(t));
cleanup:
	store_stmt_done(s);
	api_token_clear(&t);
	return ret;
}

int store_token_list(struct store *st, struct api_token **out, size_t *out_count)
{
	struct api_token *list = NULL;
	size_t count = 0, cap = 0;
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_TOKEN_LIST,
			      "SELECT id, name, role, created_at, ifnull(last_used_at, 0),"
			      " revoked_at IS NOT NULL FROM api_tokens ORDER BY id")) < 0)
		return ret;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct api_token *t;

		if ((ret = store_list_grow((void **)&list, &cap, count, sizeof(*list))) < 0)
			goto cleanup;
		t = &list[count];
		count++;
		t->id = sqlite3_column_int64(s, 0);
		t->created_at = sqlite3_column_int64(s, 3);
		t->last_used_at = sqlite3_column_int64(s, 4);
		t->revoked = sqlite3_column_int(s, 5);
		if ((ret = role_from_text(&t->role, sqlite3_column_text(s, 2))) < 0 ||
		    (ret = store_column_strdup(&t->name, s, 1)) < 0)
			goto cleanup;
	}
	if (rc != SQLITE_DONE)
		ret = store_fail(st, rc, "listing tokens");
cleanup:
	store_stmt_done(s);
	if (ret < 0) {
		for (size_t i = 0; i < count; i++)
			api_token_clear(&list[i]);
		free(list);
		return ret;
	}
	*out = list;
	*out_count = count;
	return 0;
}

int store_token_revoke(struct store *st, int64_t id)
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	/* Revoking twice keeps the first time and succeeds. */
	if ((ret = store_stmt(st, &s, STMT_TOKEN_REVOKE,
			      "UPDATE api_tokens SET revoked_at = ifnull(revoked_at, ?1) WHERE id = ?2")) < 0)
		return ret;
	sqlite3_bind_int64(s, 1, store_now(st));
	sqlite3_bind_int64(s, 2, id);
	rc = sqlite3_step(s);
	if (rc != SQLITE_DONE)
		ret = store_fail(st, rc, "revoking a token");
	else if (sqlite3_changes(st->db) == 0)
		ret = kiln_fail(KILN_ENOTFOUND, "no token %lld", (long long)id);
	store_stmt_done(s);
	return ret;
}

int store_agent_token_insert(struct store *st, int64_t *out_id, int64_t node_id,
			     const unsigned char hash[32])
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_AGENT_TOKEN_INSERT,
			      "INSERT INTO agent_tokens (node_id, hash, created_at) VALUES (?1, ?2, ?3)")) < 0)
		return ret;
	sqlite3_bind_int64(s, 1, node_id);
	sqlite3_bind_blob(s, 2, hash, 32, SQLITE_STATIC);
	sqlite3_bind_int64(s, 3, store_now(st));
	rc = sqlite3_step(s);
	if (rc != SQLITE_DONE) {
		ret = store_fail(st, rc, "adding an agent token");
		if (ret == KILN_ENOTFOUND)
			kiln_fail(ret, "no node with id %lld", (long long)node_id);
	} else {
		*out_id = sqlite3_last_insert_rowid(st->db);
	}
	store_stmt_done(s);
	return ret;
}

int store_agent_token_lookup(struct store *st, int64_t *out_node_id, const unsigned char hash[32])
{
	sqlite3_stmt *s = NULL;
	int64_t id = 0, node_id = 0;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_AGENT_TOKEN_LOOKUP,
			      "SELECT id, node_id FROM agent_tokens WHERE hash = ?1 AND revoked_at IS NULL")) < 0)
		return ret;
	sqlite3_bind_blob(s, 1, hash, 32, SQLITE_STATIC);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		id = sqlite3_column_int64(s, 0);
		node_id = sqlite3_column_int64(s, 1);
	} else if (rc == SQLITE_DONE) {
		ret = kiln_fail(KILN_ENOTFOUND, "unknown or revoked agent token");
	} else {
		ret = store_fail(st, rc, "looking up an agent token");
	}
	store_stmt_done(s);
	if (ret < 0)
		return ret;
	if ((ret = touch(st, STMT_AGENT_TOKEN_TOUCH,
			 "UPDATE agent_tokens SET last_used_at = ?1 WHERE id = ?2"
			 " AND (last_used_at IS NULL OR last_used_at <= ?3)", id)) < 0)
		return ret;
	*out_node_id = node_id;
	return 0;
}

int store_agent_token_find(struct store *st, int64_t *out_id, int64_t *out_node_id,
			   int *out_stale, const unsigned char hash[32])
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_AGENT_TOKEN_FIND,
			      "SELECT id, node_id, last_used_at IS NULL OR last_used_at <= ?2"
			      " FROM agent_tokens WHERE hash = ?1 AND revoked_at IS NULL")) < 0)
		return ret;
	sqlite3_bind_blob(s, 1, hash, 32, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, store_now(st) - TOUCH_INTERVAL_S);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		*out_id = sqlite3_column_int64(s, 0);
		*out_node_id = sqlite3_column_int64(s, 1);
		*out_stale = sqlite3_column_int(s, 2);
	} else if (rc == SQLITE_DONE) {
		ret = kiln_fail(KILN_ENOTFOUND, "unknown or revoked agent token");
	} else {
		ret = store_fail(st, rc, "looking up an agent token");
	}
	store_stmt_done(s);
	return ret;
}

int store_agent_token_touch(struct store *st, int64_t id)
{
	return touch(st, STMT_AGENT_TOKEN_TOUCH,
		     "UPDATE agent_tokens SET last_used_at = ?1 WHERE id = ?2"
		     " AND (last_used_at IS NULL OR last_used_at <= ?3)", id);
}

int store_agent_token_revoke_node(struct store *st, int64_t node_id, int *out_revoked)
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_AGENT_TOKEN_REVOKE_NODE,
			      "UPDATE agent_tokens SET revoked_at = ?1"
			      " WHERE node_id = ?2 AND revoked_at IS NULL")) < 0)
		return ret;
	sqlite3_bind_int64(s, 1, store_now(st));
	sqlite3_bind_int64(s, 2, node_id);
	rc = sqlite3_step(s);
	if (rc != SQLITE_DONE)
		ret = store_fail(st, rc, "revoking agent tokens");
	else if (out_revoked)
		*out_revoked = sqlite3_changes(st->db);
	store_stmt_done(s);
	return ret;
}

/* --- dashboard sessions ---------------------------------------------------------------- */

int store_session_insert(struct store *st, int64_t *out_id, const unsigned char hash[32],
			 int64_t token_id, const char *csrf, int64_t expires_at)
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_SESSION_INSERT,
			      "INSERT INTO ui_sessions (hash, token_id, csrf, created_at, expires_at)"
			      " VALUES (?1, ?2, ?3, ?4, ?5)")) < 0)
		return ret;
	sqlite3_bind_blob(s, 1, hash, 32, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, token_id);
	store_bind_text(s, 3, csrf);
	sqlite3_bind_int64(s, 4, store_now(st));
	sqlite3_bind_int64(s, 5, expires_at);
	rc = sqlite3_step(s);
	if (rc != SQLITE_DONE)
		ret = store_fail(st, rc, "adding a session");
	else
		*out_id = sqlite3_last_insert_rowid(st->db);
	store_stmt_done(s);
	return ret;
}

int store_session_lookup(struct store *st, struct ui_session *out, const unsigned char hash[32])
{
	struct ui_session u = { 0 };
	sqlite3_stmt *s = NULL;
	const unsigned char *csrf;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_SESSION_LOOKUP,
			      "SELECT s.id, s.csrf, s.expires_at, t.id, t.name, t.role, t.created_at,"
			      " ifnull(t.last_used_at, 0) FROM ui_sessions s"
			      " JOIN api_tokens t ON t.id = s.token_id"
			      " WHERE s.hash = ?1 AND s.ended_at IS NULL AND s.expires_at > ?2"
			      " AND t.revoked_at IS NULL")) < 0)
		return ret;
	sqlite3_bind_blob(s, 1, hash, 32, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, store_now(st));
	rc = sqlite3_step(s);
	if (rc == SQLITE_DONE) {
		ret = kiln_fail(KILN_ENOTFOUND, "no such session, or it ended: log in again");
		goto cleanup;
	}
	if (rc != SQLITE_ROW) {
		ret = store_fail(st, rc, "looking up a session");
		goto cleanup;
	}
	u.id = sqlite3_column_int64(s, 0);
	csrf = sqlite3_column_text(s, 1);
	kiln_strlcpy(u.csrf, csrf ? (const char *)csrf : "", sizeof(u.csrf));
	u.expires_at = sqlite3_column_int64(s, 2);
	u.token.id = sqlite3_column_int64(s, 3);
	u.token.created_at = sqlite3_column_int64(s, 6);
	u.token.last_used_at = sqlite3_column_int64(s, 7);
	if ((ret = role_from_text(&u.token.role, sqlite3_column_text(s, 5))) < 0 ||
	    (ret = store_column_strdup(&u.token.name, s, 4)) < 0)
		goto cleanup;
	*out = u;
	memset(&u, 0, sizeof(u));
cleanup:
	store_stmt_done(s);
	api_token_clear(&u.token);
	return ret;
}

int store_session_end(struct store *st, int64_t id)
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_SESSION_END,
			      "UPDATE ui_sessions SET ended_at = ?2 WHERE id = ?1 AND ended_at IS NULL")) <
	    0)
		return ret;
	sqlite3_bind_int64(s, 1, id);
	sqlite3_bind_int64(s, 2, store_now(st));
	rc = sqlite3_step(s);
	if (rc != SQLITE_DONE)
		ret = store_fail(st, rc, "ending a session");
	store_stmt_done(s);
	return ret;
}

int store_session_prune(struct store *st, int64_t cutoff)
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_SESSION_PRUNE,
			      "DELETE FROM ui_sessions WHERE expires_at < ?1 OR ended_at < ?1")) < 0)
		return ret;
	sqlite3_bind_int64(s, 1, cutoff);
	rc = sqlite3_step(s);
	if (rc != SQLITE_DONE)
		ret = store_fail(st, rc, "pruning sessions");
	store_stmt_done(s);
	return ret;
}
