/* Events from the poller, the agents and the actions, stored once per dedup key. */
#include <stdlib.h>
#include <string.h>

#include "kiln/error.h"
#include "store/store_internal.h"

int store_event_exists(struct store *st, int *out, int64_t node_id, const char *dedup_key)
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_EVENT_EXISTS,
			      "SELECT EXISTS (SELECT 1 FROM events WHERE node_id IS ?1"
			      " AND dedup_key = ?2)")) < 0)
		return ret;
	if (node_id)
		sqlite3_bind_int64(s, 1, node_id);
	store_bind_text(s, 2, dedup_key);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		*out = sqlite3_column_int(s, 0);
	else
		ret = store_fail(st, rc, "looking an event up");
	store_stmt_done(s);
	return ret;
}

int store_event_insert(struct store *st, const struct event *ev, int *out_inserted)
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if (ev->severity < SEV_INFO || ev->severity > SEV_CRITICAL)
		return kiln_fail(KILN_EINVAL, "store: event severity %d out of range",
				 (int)ev->severity);
	if (!ev->source || !ev->kind || !ev->message)
		return kiln_fail(KILN_EINVAL, "store: event without source, kind or message");
	/* DO NOTHING covers only the uniqueness of (node, dedup_key): a node that does not
	 * exist is still an error. */
	if ((ret = store_stmt(st, &s, STMT_EVENT_INSERT,
			      "INSERT INTO events (time, node_id, severity, source, kind, message,"
			      " dedup_key, bmc_time) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"
			      " ON CONFLICT DO NOTHING")) < 0)
		return ret;
	sqlite3_bind_int64(s, 1, ev->time ? ev->time : store_now(st));
	if (ev->node_id)
		sqlite3_bind_int64(s, 2, ev->node_id);
	sqlite3_bind_int(s, 3, (int)ev->severity);
	store_bind_text(s, 4, ev->source);
	store_bind_text(s, 5, ev->kind);
	store_bind_text(s, 6, ev->message);
	store_bind_text(s, 7, ev->dedup_key);
	if (ev->bmc_time)
		sqlite3_bind_int64(s, 8, ev->bmc_time);
	rc = sqlite3_step(s);
	if (rc != SQLITE_DONE) {
		ret = store_fail(st, rc, "adding an event");
		if (ret == KILN_ENOTFOUND)
			kiln_fail(ret, "store: event for node id %lld: no such node",
				  (long long)ev->node_id);
	} else if (out_inserted) {
		*out_inserted = sqlite3_changes(st->db) > 0;
	}
	store_stmt_done(s);
	return ret;
}

static void event_clear(struct event *e)
{
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

int store_event_rows(struct store *st, sqlite3_stmt *s, struct event **out, size_t *out_count,
		     const char *what)
{
	struct event *list = NULL;
	size_t count = 0, cap = 0;
	int rc, ret = 0;

	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct event *e;
		int sev;

		if ((ret = store_list_grow((void **)&list, &cap, count, sizeof(*list))) < 0)
			goto cleanup;
		e = &list[count++];
		e->id = sqlite3_column_int64(s, 0);
		e->time = sqlite3_column_int64(s, 1);
		e->node_id = sqlite3_column_int64(s, 2);
		e->bmc_time = sqlite3_column_int64(s, 9);
		sev = sqlite3_column_int(s, 4);
		e->severity = sev <= SEV_INFO ? SEV_INFO : sev >= SEV_CRITICAL ? SEV_CRITICAL :
										 SEV_WARNING;
		if ((ret = store_column_strdup(&e->node, s, 3)) < 0 ||
		    (ret = store_column_strdup(&e->source, s, 5)) < 0 ||
		    (ret = store_column_strdup(&e->kind, s, 6)) < 0 ||
		    (ret = store_column_strdup(&e->message, s, 7)) < 0 ||
		    (ret = store_column_strdup(&e->dedup_key, s, 8)) < 0)
			goto cleanup;
	}
	if (rc != SQLITE_DONE)
		ret = store_fail(st, rc, what);
cleanup:
	store_stmt_done(s);
	if (ret < 0) {
		event_list_free(list, count);
		return ret;
	}
	*out = list;
	*out_count = count;
	return 0;
}

int store_event_list(struct store *st, struct event **out, size_t *out_count, int64_t since,
		     size_t limit)
{
	sqlite3_stmt *s = NULL;
	int ret;

	if ((ret = store_stmt(st, &s, STMT_EVENT_LIST,
			      STORE_EVENT_SELECT
			      " WHERE e.time >= ?1 ORDER BY e.time DESC, e.id DESC LIMIT ?2")) < 0)
		return ret;
	sqlite3_bind_int64(s, 1, since);
	store_bind_limit(s, 2, limit);
	return store_event_rows(st, s, out, out_count, "reading events");
}
