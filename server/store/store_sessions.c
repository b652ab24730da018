/* Redfish sessions kept across restarts: one row per node, the token sealed by the caller. */
#include <stdlib.h>
#include <string.h>

#include "kiln/error.h"
#include "store/store_internal.h"

void bmc_session_row_clear(struct bmc_session_row *r)
{
	if (!r)
		return;
	if (r->token_enc)
		explicit_bzero(r->token_enc, r->token_enc_len);
	free(r->token_enc);
	free(r->uri);
	free(r->auth);
	memset(r, 0, sizeof(*r));
}

int store_bmc_session_get(struct store *st, struct bmc_session_row *out, int64_t node_id)
{
	struct bmc_session_row v = { .node_id = node_id };
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_BMC_SESSION_GET,
			      "SELECT credentials_version, token_enc, uri, auth, time"
			      " FROM bmc_sessions WHERE node_id = ?1")) < 0)
		return ret;
	sqlite3_bind_int64(s, 1, node_id);
	rc = sqlite3_step(s);
	if (rc == SQLITE_DONE) {
		ret = kiln_fail(KILN_ENOTFOUND, "no session kept for node %lld",
				(long long)node_id);
		goto cleanup;
	}
	if (rc != SQLITE_ROW) {
		ret = store_fail(st, rc, "reading a kept session");
		goto cleanup;
	}
	v.credentials_version = sqlite3_column_int64(s, 0);
	if (sqlite3_column_type(s, 1) == SQLITE_BLOB && sqlite3_column_bytes(s, 1) > 0) {
		v.token_enc_len = (size_t)sqlite3_column_bytes(s, 1);
		v.token_enc = malloc(v.token_enc_len);
		if (!v.token_enc) {
			ret = kiln_fail(KILN_ERROR, "out of memory");
			goto cleanup;
		}
		memcpy(v.token_enc, sqlite3_column_blob(s, 1), v.token_enc_len);
	}
	if ((ret = store_column_strdup(&v.uri, s, 2)) < 0 ||
	    (ret = store_column_strdup(&v.auth, s, 3)) < 0)
		goto cleanup;
	v.time = sqlite3_column_int64(s, 4);
	*out = v;
	memset(&v, 0, sizeof(v));
cleanup:
	store_stmt_done(s);
	bmc_session_row_clear(&v);
	return ret;
}

int store_bmc_session_put(struct store *st, const struct bmc_session_row *row)
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_BMC_SESSION_PUT,
			      "INSERT OR REPLACE INTO bmc_sessions (node_id, credentials_version,"
			      " token_enc, uri, auth, time) VALUES (?1, ?2, ?3, ?4, ?5, ?6)")) < 0)
		return ret;
	sqlite3_bind_int64(s, 1, row->node_id);
	sqlite3_bind_int64(s, 2, row->credentials_version);
	if (row->token_enc)
		sqlite3_bind_blob(s, 3, row->token_enc, (int)row->token_enc_len, SQLITE_STATIC);
	store_bind_text(s, 4, row->uri);
	store_bind_text(s, 5, row->auth ? row->auth : "session");
	sqlite3_bind_int64(s, 6, store_now(st));
	rc = sqlite3_step(s);
	if (rc != SQLITE_DONE) {
		ret = store_fail(st, rc, "keeping a session");
		if (ret == KILN_ENOTFOUND)
			kiln_fail(ret, "store: session for node id %lld: no such node",
				  (long long)row->node_id);
	}
	store_stmt_done(s);
	return ret;
}

int store_bmc_session_drop(struct store *st, int64_t node_id, const char *uri)
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_BMC_SESSION_DROP,
			      "DELETE FROM bmc_sessions WHERE node_id = ?1 AND uri IS ?2")) < 0)
		return ret;
	sqlite3_bind_int64(s, 1, node_id);
	store_bind_text(s, 2, uri);
	rc = sqlite3_step(s);
	if (rc != SQLITE_DONE)
		ret = store_fail(st, rc, "dropping a kept session");
	store_stmt_done(s);
	return ret;
}
