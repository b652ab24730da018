/* SPDX-License-Identifier: Apache-2.0 */
/* Events from the poller, the agents and the actions, stored once per dedup key. */
#include <stdlib.h>
#include <string.h>

#include "kiln/error.h"
#include "store/store_internal.h"

/* IS NOT DISTINCT FROM: a fleet-wide event (node NULL) matches NULL. */
static const struct sql_stmt EXISTS = {
	STMT_EVENT_EXISTS, "looking an event up",
	"SELECT CASE WHEN EXISTS (SELECT 1 FROM events WHERE node_id IS NOT DISTINCT FROM ?1"
	" AND dedup_key = ?2) THEN 1 ELSE 0 END",
	NULL};

/* DO NOTHING covers only the uniqueness of (node, dedup_key): a node that does not exist is
 * still an error. */
static const struct sql_stmt INSERT = {
	STMT_EVENT_INSERT, "adding an event",
	"INSERT INTO events (time, node_id, severity, source, kind, message, dedup_key, bmc_time)"
	" VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT DO NOTHING",
	NULL};

static const struct sql_stmt LIST = {
	STMT_EVENT_LIST, "reading events",
	STORE_EVENT_SELECT " WHERE e.time >= ?1 ORDER BY e.time DESC, e.id DESC LIMIT ?2", NULL};

int store_event_exists(struct store *st, int *out, int64_t node_id, const char *dedup_key)
{
	int64_t found = 0;
	int ret = sql_int(st, &EXISTS,
			  SQL_ARGS(SQL_INT_OR_NULL(node_id, node_id == 0), SQL_TEXT(dedup_key)),
			  &found);

	if (ret < 0)
		return ret;
	*out = found != 0;
	return 0;
}

int store_event_insert(struct store *st, const struct event *ev, int *out_inserted)
{
	int64_t changed;

	if (ev->severity < SEV_INFO || ev->severity > SEV_CRITICAL)
		return kiln_fail(KILN_EINVAL, "store: event severity %d out of range",
				 (int)ev->severity);
	if (!ev->source || !ev->kind || !ev->message)
		return kiln_fail(KILN_EINVAL, "store: event without source, kind or message");
	changed = sql_exec(st, &INSERT,
			   SQL_ARGS(SQL_INT(ev->time ? ev->time : store_now(st)),
				    SQL_INT_OR_NULL(ev->node_id, ev->node_id == 0),
				    SQL_INT(ev->severity), SQL_TEXT(ev->source), SQL_TEXT(ev->kind),
				    SQL_TEXT(ev->message), SQL_TEXT(ev->dedup_key),
				    SQL_INT_OR_NULL(ev->bmc_time, ev->bmc_time == 0)));
	if (changed == KILN_ENOTFOUND)
		return kiln_fail(KILN_ENOTFOUND, "store: event for node id %lld: no such node",
				 (long long)ev->node_id);
	if (changed < 0)
		return (int)changed;
	if (out_inserted)
		*out_inserted = changed > 0;
	return 0;
}

static void event_clear(void *elem)
{
	struct event *e = elem;

	free(e->node);
	free(e->source);
	free(e->kind);
	free(e->message);
	free(e->dedup_key);
}

void event_list_free(struct event *events, size_t count)
{
	if (!events)
		return;
	for (size_t i = 0; i < count; i++)
		event_clear(&events[i]);
	free(events);
}

/* One row of STORE_EVENT_SELECT. */
static int event_read(const struct sql_row *r, void *elem)
{
	struct event *e = elem;
	int64_t sev = sql_col_int(r, 4);
	int ret;

	e->id = sql_col_int(r, 0);
	e->time = sql_col_int(r, 1);
	e->node_id = sql_col_int(r, 2);
	e->bmc_time = sql_col_int(r, 9);
	e->severity = sev <= SEV_INFO ? SEV_INFO : sev >= SEV_CRITICAL ? SEV_CRITICAL : SEV_WARNING;
	if ((ret = sql_col_strdup(r, 3, &e->node)) < 0 ||
	    (ret = sql_col_strdup(r, 5, &e->source)) < 0 ||
	    (ret = sql_col_strdup(r, 6, &e->kind)) < 0 ||
	    (ret = sql_col_strdup(r, 7, &e->message)) < 0 ||
	    (ret = sql_col_strdup(r, 8, &e->dedup_key)) < 0)
		return ret;
	return 0;
}

int store_event_rows(struct store *st, const struct sql_stmt *q, const struct sql_arg *args,
		     size_t n, struct event **out, size_t *out_count)
{
	return sql_list(st, q, args, n, out, out_count, sizeof(**out), event_read, event_clear);
}

int store_event_list(struct store *st, struct event **out, size_t *out_count, int64_t since,
		     size_t limit)
{
	return store_event_rows(st, &LIST, SQL_ARGS(SQL_INT(since), SQL_LIMIT(limit)), out,
				out_count);
}
