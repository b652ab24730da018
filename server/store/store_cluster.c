/* SPDX-License-Identifier: Apache-2.0 */
/* The instances sharing one database (schema 025) and the database's secret.key check. */
#include <stdlib.h>
#include <string.h>

#include "kiln/error.h"
#include "store/store_internal.h"

/* The database's clock in milliseconds: PostgreSQL's own (every kilnd judges heartbeats on
 * one clock, not its host's); SQLite's backend passes store_now() in ?N. */
#define PG_NOW_MS "(extract(epoch from clock_timestamp()) * 1000)::bigint"

static const struct sql_stmt REGISTER = {
	STMT_INSTANCE_REGISTER, "registering this instance",
	"INSERT INTO instances (id, host, listen, grp, lease_ms, started_ms, heartbeat_ms)"
	" VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6) ON CONFLICT (id) DO UPDATE SET host = excluded.host,"
	" listen = excluded.listen, grp = excluded.grp, lease_ms = excluded.lease_ms,"
	" started_ms = excluded.started_ms, heartbeat_ms = excluded.heartbeat_ms",
	"INSERT INTO instances (id, host, listen, grp, lease_ms, started_ms, heartbeat_ms)"
	" VALUES (?1, ?2, ?3, ?4, ?5, " PG_NOW_MS ", " PG_NOW_MS ") ON CONFLICT (id) DO UPDATE"
	" SET host = excluded.host, listen = excluded.listen, grp = excluded.grp,"
	" lease_ms = excluded.lease_ms, started_ms = excluded.started_ms,"
	" heartbeat_ms = excluded.heartbeat_ms"};

static const struct sql_stmt HEARTBEAT = {
	STMT_INSTANCE_HEARTBEAT, "writing this instance's heartbeat",
	"UPDATE instances SET heartbeat_ms = ?2 WHERE id = ?1",
	"UPDATE instances SET heartbeat_ms = " PG_NOW_MS " WHERE id = ?1"};

static const struct sql_stmt REMOVE = {
	STMT_INSTANCE_REMOVE, "removing this instance", "DELETE FROM instances WHERE id = ?1",
	NULL};

static const struct sql_stmt LIST = {
	STMT_INSTANCE_LIST, "listing the instances",
	"SELECT id, host, listen, grp, lease_ms, started_ms, heartbeat_ms, ?1 FROM instances"
	" ORDER BY id",
	"SELECT id, host, listen, grp, lease_ms, started_ms, heartbeat_ms, " PG_NOW_MS
	" FROM instances ORDER BY id"};

static const struct sql_stmt PRUNE = {
	STMT_INSTANCE_PRUNE, "pruning dead instances",
	"DELETE FROM instances WHERE heartbeat_ms < ?2 - ?1",
	"DELETE FROM instances WHERE heartbeat_ms < " PG_NOW_MS " - ?1"};

static const struct sql_stmt KEY_PUT = {
	STMT_KEY_CHECK_PUT, "recording the secret.key check",
	"INSERT INTO key_check (one, value, created_at) VALUES (1, ?1, ?2)"
	" ON CONFLICT (one) DO NOTHING",
	NULL};

static const struct sql_stmt KEY_GET = {
	STMT_KEY_CHECK_GET, "reading the secret.key check", "SELECT value FROM key_check", NULL};

/* The clock the SQLite statements are given (PostgreSQL's ignore it). */
static int64_t now_ms(struct store *st)
{
	return store_now(st) * 1000;
}

void instance_row_clear(struct instance_row *r)
{
	if (!r)
		return;
	free(r->id);
	free(r->host);
	free(r->listen);
	free(r->group);
	memset(r, 0, sizeof(*r));
}

static void row_clear(void *elem)
{
	instance_row_clear(elem);
}

void instance_list_free(struct instance_row *rows, size_t count)
{
	sql_list_free(rows, count, sizeof(*rows), row_clear);
}

int store_instance_register(struct store *st, const struct instance_row *r)
{
	int64_t ret = sql_exec(st, &REGISTER,
			       SQL_ARGS(SQL_TEXT(r->id), SQL_TEXT(r->host ? r->host : ""),
					SQL_TEXT(r->listen ? r->listen : ""), SQL_TEXT(r->group),
					SQL_INT(r->lease_ms), SQL_INT(now_ms(st))));

	return ret < 0 ? (int)ret : 0;
}

int store_instance_heartbeat(struct store *st, const char *id)
{
	int64_t ret = sql_exec(st, &HEARTBEAT, SQL_ARGS(SQL_TEXT(id), SQL_INT(now_ms(st))));

	if (ret == 0)
		return kiln_fail(KILN_ENOTFOUND, "store: instance '%s' is not registered", id);
	return ret < 0 ? (int)ret : 0;
}

int store_instance_remove(struct store *st, const char *id)
{
	int64_t ret = sql_exec(st, &REMOVE, SQL_ARGS(SQL_TEXT(id)));

	return ret < 0 ? (int)ret : 0;
}

static int instance_read(const struct sql_row *r, void *elem)
{
	struct instance_row *v = elem;
	int ret;

	if ((ret = sql_col_strdups(r, 0, (char **const[]){&v->id, &v->host, &v->listen, &v->group},
				   4)) < 0)
		return ret;
	v->lease_ms = sql_col_int(r, 4);
	v->started_ms = sql_col_int(r, 5);
	v->heartbeat_ms = sql_col_int(r, 6);
	v->now_ms = sql_col_int(r, 7);
	return 0;
}

int store_instance_list(struct store *st, struct instance_row **out, size_t *out_count)
{
	return sql_list(st, &LIST, SQL_ARGS(SQL_INT(now_ms(st))), out, out_count, sizeof(**out),
			instance_read, row_clear);
}

int store_instance_prune(struct store *st, int64_t older_ms, int *out_deleted)
{
	int64_t ret = sql_exec(st, &PRUNE, SQL_ARGS(SQL_INT(older_ms), SQL_INT(now_ms(st))));

	if (ret < 0)
		return (int)ret;
	if (out_deleted)
		*out_deleted = (int)ret;
	return 0;
}

int store_key_check(struct store *st, const char *value, int *out_match, int *out_first)
{
	char *recorded = NULL;
	int64_t added;
	int ret;

	added = sql_exec(st, &KEY_PUT, SQL_ARGS(SQL_TEXT(value), SQL_INT(store_now(st))));
	if (added < 0)
		return (int)added;
	ret = sql_text(st, &KEY_GET, SQL_NO_ARGS, &recorded);
	if (ret < 0)
		return ret;
	if (ret == 0)
		return kiln_fail(KILN_ERROR, "store: the secret.key check is missing after writing it");
	*out_match = recorded && strcmp(recorded, value) == 0;
	if (out_first)
		*out_first = added > 0;
	free(recorded);
	return 0;
}
