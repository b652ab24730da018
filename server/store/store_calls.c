/* SPDX-License-Identifier: Apache-2.0 */
/* Live BMC calls handed to a node's owner, and the claims that send an action at most once
 * (schema 026 node_calls; server/handoff.c runs them). */
#include <stdlib.h>
#include <string.h>

#include "kiln/error.h"
#include "store/store_internal.h"

#define COLUMNS                                                                                     \
	"id, node_id, origin, owner, op, audit_id, state, claimed_by, created_ms, changed_ms,"      \
	" rc, error, data"

static const struct sql_stmt INSERT = {
	STMT_NODE_CALL_INSERT, "handing a call to a node's owner",
	"INSERT INTO node_calls (node_id, origin, owner, op, audit_id, state, claimed_by,"
	" created_ms, changed_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8) RETURNING id",
	NULL};

static const struct sql_stmt MOVE = {
	STMT_NODE_CALL_MOVE, "claiming a node call",
	"UPDATE node_calls SET state = ?4, claimed_by = ?5, changed_ms = ?6"
	" WHERE id = ?1 AND state = ?2 AND (?3 IS NULL OR claimed_by = ?3)",
	NULL};

static const struct sql_stmt FINISH = {
	STMT_NODE_CALL_FINISH, "storing a node call's result",
	"UPDATE node_calls SET state = ?4, rc = ?5, error = ?6, data = ?7, changed_ms = ?8"
	" WHERE id = ?1 AND state = ?2 AND claimed_by = ?3",
	NULL};

static const struct sql_stmt LIST = {
	STMT_NODE_CALL_LIST, "listing node calls",
	"SELECT " COLUMNS " FROM node_calls WHERE state = ?1 AND (?2 IS NULL OR origin = ?2)"
	" AND (?3 IS NULL OR owner = ?3) ORDER BY id",
	NULL};

static const struct sql_stmt GET = {
	STMT_NODE_CALL_GET, "reading a node call", "SELECT " COLUMNS " FROM node_calls WHERE id = ?1",
	NULL};

static const struct sql_stmt DELETE = {
	STMT_NODE_CALL_DELETE, "deleting a node call", "DELETE FROM node_calls WHERE id = ?1", NULL};

static const struct sql_stmt PRUNE = {
	STMT_NODE_CALL_PRUNE, "pruning node calls",
	"DELETE FROM node_calls WHERE state IN ('done', 'interrupted', 'cancelled')"
	" AND changed_ms < ?1 AND origin NOT IN (SELECT id FROM instances)",
	NULL};

static const struct sql_stmt NOTIFY = {
	STMT_NOTIFY, "notifying the other instances", "SELECT ?1, ?2", "SELECT pg_notify(?1, ?2)"};

static int64_t now_ms(struct store *st)
{
	return store_now(st) * 1000;
}

void node_call_row_clear(struct node_call_row *r)
{
	if (!r)
		return;
	free(r->origin);
	free(r->owner);
	free(r->op);
	free(r->state);
	free(r->claimed_by);
	free(r->error);
	free(r->data);
	memset(r, 0, sizeof(*r));
}

static void row_clear(void *elem)
{
	node_call_row_clear(elem);
}

void node_call_list_free(struct node_call_row *rows, size_t count)
{
	sql_list_free(rows, count, sizeof(*rows), row_clear);
}

static int row_read(const struct sql_row *r, void *elem)
{
	struct node_call_row *v = elem;
	int ret;

	v->id = sql_col_int(r, 0);
	v->node_id = sql_col_int(r, 1);
	if ((ret = sql_col_strdups(r, 2, (char **const[]){&v->origin, &v->owner, &v->op}, 3)) < 0)
		return ret;
	v->audit_id = sql_col_int(r, 5);
	if ((ret = sql_col_strdups(r, 6, (char **const[]){&v->state, &v->claimed_by}, 2)) < 0)
		return ret;
	v->created_ms = sql_col_int(r, 8);
	v->changed_ms = sql_col_int(r, 9);
	v->rc = (int)sql_col_int(r, 10);
	return sql_col_strdups(r, 11, (char **const[]){&v->error, &v->data}, 2);
}

int store_node_call_insert(struct store *st, struct node_call_row *r)
{
	return sql_insert_id(st, &INSERT,
			     SQL_ARGS(SQL_INT(r->node_id), SQL_TEXT(r->origin), SQL_TEXT(r->owner),
				      SQL_TEXT(r->op),
				      SQL_ID_OR_NULL(r->audit_id), SQL_TEXT(r->state),
				      SQL_TEXT(r->claimed_by), SQL_INT(now_ms(st))),
			     &r->id);
}

int store_node_call_move(struct store *st, int64_t id, const char *from, const char *claimed_by,
			 const char *to, const char *by, int *out_moved)
{
	int64_t n = sql_exec(st, &MOVE,
			     SQL_ARGS(SQL_INT(id), SQL_TEXT(from), SQL_TEXT(claimed_by), SQL_TEXT(to),
				      SQL_TEXT(by), SQL_INT(now_ms(st))));

	if (n < 0)
		return (int)n;
	*out_moved = n > 0;
	return 0;
}

int store_node_call_finish(struct store *st, int64_t id, const char *from, const char *claimed_by,
			   const char *to, int rc, const char *error, const char *data,
			   int *out_moved)
{
	int64_t n = sql_exec(st, &FINISH,
			     SQL_ARGS(SQL_INT(id), SQL_TEXT(from), SQL_TEXT(claimed_by), SQL_TEXT(to),
				      SQL_INT(rc), SQL_TEXT(error), SQL_TEXT(data),
				      SQL_INT(now_ms(st))));

	if (n < 0)
		return (int)n;
	*out_moved = n > 0;
	return 0;
}

int store_node_call_list(struct store *st, const char *state, const char *origin,
			 const char *owner, struct node_call_row **out, size_t *out_count)
{
	return sql_list(st, &LIST, SQL_ARGS(SQL_TEXT(state), SQL_TEXT(origin), SQL_TEXT(owner)),
			out, out_count, sizeof(**out), row_read, row_clear);
}

static int get_row(const struct sql_row *r, void *ctx)
{
	return row_read(r, ctx);
}

int store_node_call_get(struct store *st, int64_t id, struct node_call_row *out)
{
	int ret;

	memset(out, 0, sizeof(*out));
	ret = sql_one(st, &GET, SQL_ARGS(SQL_INT(id)), get_row, out);
	if (ret < 0) {
		node_call_row_clear(out);
		return ret;
	}
	if (ret == 0)
		return kiln_fail(KILN_ENOTFOUND, "store: node call %lld is gone", (long long)id);
	return 0;
}

int store_node_call_delete(struct store *st, int64_t id)
{
	int64_t n = sql_exec(st, &DELETE, SQL_ARGS(SQL_INT(id)));

	return n < 0 ? (int)n : 0;
}

int store_node_call_prune(struct store *st, int64_t before_ms)
{
	int64_t n = sql_exec(st, &PRUNE, SQL_ARGS(SQL_INT(before_ms)));

	return n < 0 ? (int)n : 0;
}

int store_notify(struct store *st, const char *channel, const char *payload)
{
	int ret = sql_run(st, &NOTIFY, SQL_ARGS(SQL_TEXT(channel), SQL_TEXT(payload)), NULL, NULL,
			  NULL);

	return ret < 0 ? ret : 0;
}

int store_listen(struct store *st, const char *channel)
{
	if (!st->be->listen)
		return kiln_fail(KILN_EINVAL, "store: the %s store has no notifications",
				 st->be->name);
	return st->be->listen(st, channel);
}

int store_listen_fd(struct store *st)
{
	return st->be->listen_fd ? st->be->listen_fd(st) : -1;
}

int store_notifications(struct store *st, void (*fn)(void *ud, const char *channel,
						    const char *payload),
			void *ud)
{
	return st->be->notifications ? st->be->notifications(st, fn, ud) : 0;
}
