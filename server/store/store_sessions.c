/* SPDX-License-Identifier: Apache-2.0 */
/* Redfish sessions kept across restarts: one row per node, the token sealed by the caller. */
#include <stdlib.h>
#include <string.h>

#include "kiln/error.h"
#include "store/store_internal.h"

static const struct sql_stmt GET = {
	STMT_BMC_SESSION_GET, "reading a kept session",
	"SELECT credentials_version, token_enc, uri, auth, time FROM bmc_sessions"
	" WHERE node_id = ?1",
	NULL};

/* Every column is written, so updating in place is what INSERT OR REPLACE did. */
static const struct sql_stmt PUT = {
	STMT_BMC_SESSION_PUT, "keeping a session",
	"INSERT INTO bmc_sessions (node_id, credentials_version, token_enc, uri, auth, time)"
	" VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (node_id) DO UPDATE SET"
	" credentials_version = excluded.credentials_version, token_enc = excluded.token_enc,"
	" uri = excluded.uri, auth = excluded.auth, time = excluded.time",
	NULL};

static const struct sql_stmt DROP = {
	STMT_BMC_SESSION_DROP, "dropping a kept session",
	"DELETE FROM bmc_sessions WHERE node_id = ?1 AND uri IS NOT DISTINCT FROM ?2", NULL};

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

static int session_read(const struct sql_row *r, void *ctx)
{
	struct bmc_session_row *v = ctx;
	size_t len = 0;
	int ret;

	v->credentials_version = sql_col_int(r, 0);
	/* an empty token is no token */
	if (sql_col_blob(r, 1, &len) && len > 0 &&
	    (ret = sql_col_blobdup(r, 1, &v->token_enc, &v->token_enc_len)) < 0)
		return ret;
	if ((ret = sql_col_strdup(r, 2, &v->uri)) < 0 || (ret = sql_col_strdup(r, 3, &v->auth)) < 0)
		return ret;
	v->time = sql_col_int(r, 4);
	return 0;
}

int store_bmc_session_get(struct store *st, struct bmc_session_row *out, int64_t node_id)
{
	struct bmc_session_row v = {.node_id = node_id};
	int ret = sql_one(st, &GET, SQL_ARGS(SQL_INT(node_id)), session_read, &v);

	if (ret == 1) {
		*out = v;
		return 0;
	}
	bmc_session_row_clear(&v);
	if (ret == 0)
		return kiln_fail(KILN_ENOTFOUND, "no session kept for node %lld",
				 (long long)node_id);
	return ret;
}

int store_bmc_session_put(struct store *st, const struct bmc_session_row *row)
{
	int64_t ret = sql_exec(st, &PUT,
			       SQL_ARGS(SQL_INT(row->node_id), SQL_INT(row->credentials_version),
					SQL_BLOB(row->token_enc, row->token_enc_len),
					SQL_TEXT(row->uri),
					SQL_TEXT(row->auth ? row->auth : "session"),
					SQL_INT(store_now(st))));

	if (ret == KILN_ENOTFOUND)
		return kiln_fail(KILN_ENOTFOUND, "store: session for node id %lld: no such node",
				 (long long)row->node_id);
	return ret < 0 ? (int)ret : 0;
}

int store_bmc_session_drop(struct store *st, int64_t node_id, const char *uri)
{
	int64_t ret = sql_exec(st, &DROP, SQL_ARGS(SQL_INT(node_id), SQL_TEXT(uri)));

	return ret < 0 ? (int)ret : 0;
}
