/* Reads for the overnight report and the webhooks: events after an id, agent power and
 * temperature samples over a window. Rarely run, so these statements are not cached. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/error.h"
#include "store/store_internal.h"

static int prepare(struct store *st, sqlite3_stmt **out, const char *sql)
{
	int rc = sqlite3_prepare_v2(st->db, sql, -1, out, NULL);

	if (rc != SQLITE_OK)
		return store_fail(st, rc, "preparing a report query");
	return 0;
}

int store_event_last_id(struct store *st, int64_t *out)
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = prepare(st, &s, "SELECT ifnull(max(id), 0) FROM events")) < 0)
		return ret;
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		*out = sqlite3_column_int64(s, 0);
	else
		ret = store_fail(st, rc, "reading the last event id");
	sqlite3_finalize(s);
	return ret;
}

int store_event_list_after(struct store *st, struct event **out, size_t *out_count,
			   int64_t after_id, size_t limit)
{
	struct event *list = NULL;
	size_t count = 0;
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if (limit == 0 || limit > 100000)
		return kiln_fail(KILN_EINVAL, "store: event limit %zu out of range", limit);
	if ((ret = prepare(st, &s,
			   "SELECT e.id, e.time, ifnull(e.node_id, 0), n.name, e.severity, e.source,"
			   " e.kind, e.message, e.dedup_key FROM events e"
			   " LEFT JOIN nodes n ON n.id = e.node_id"
			   " WHERE e.id > ?1 ORDER BY e.id LIMIT ?2")) < 0)
		return ret;
	sqlite3_bind_int64(s, 1, after_id);
	sqlite3_bind_int64(s, 2, (sqlite3_int64)limit);
	list = calloc(limit, sizeof(*list));
	if (!list) {
		ret = kiln_fail(KILN_ERROR, "store: out of memory");
		goto cleanup;
	}
	while ((rc = sqlite3_step(s)) == SQLITE_ROW && count < limit) {
		struct event *e = &list[count++];
		int sev = sqlite3_column_int(s, 4);

		e->id = sqlite3_column_int64(s, 0);
		e->time = sqlite3_column_int64(s, 1);
		e->node_id = sqlite3_column_int64(s, 2);
		e->severity = sev <= SEV_INFO ? SEV_INFO : sev >= SEV_CRITICAL ? SEV_CRITICAL :
										 SEV_WARNING;
		if ((ret = store_column_strdup(&e->node, s, 3)) < 0 ||
		    (ret = store_column_strdup(&e->source, s, 5)) < 0 ||
		    (ret = store_column_strdup(&e->kind, s, 6)) < 0 ||
		    (ret = store_column_strdup(&e->message, s, 7)) < 0 ||
		    (ret = store_column_strdup(&e->dedup_key, s, 8)) < 0)
			goto cleanup;
	}
	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
		ret = store_fail(st, rc, "reading events");
cleanup:
	sqlite3_finalize(s);
	if (ret < 0) {
		event_list_free(list, count);
		return ret;
	}
	*out = list;
	*out_count = count;
	return 0;
}

int store_agent_samples_list(struct store *st, struct agent_sample **out, size_t *out_count,
			     int64_t since, int64_t until)
{
	struct agent_sample *list = NULL;
	size_t count = 0, cap = 0;
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = prepare(st, &s,
			   "SELECT node_id, time, temperature_max_c, power_draw_total_w"
			   " FROM agent_history WHERE time >= ?1 AND time <= ?2"
			   " ORDER BY node_id, time, id")) < 0)
		return ret;
	sqlite3_bind_int64(s, 1, since);
	sqlite3_bind_int64(s, 2, until);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct agent_sample *a;

		if ((ret = store_list_grow((void **)&list, &cap, count, sizeof(*list))) < 0)
			goto cleanup;
		a = &list[count++];
		a->node_id = sqlite3_column_int64(s, 0);
		a->time = sqlite3_column_int64(s, 1);
		a->temperature_max_c = sqlite3_column_type(s, 2) == SQLITE_NULL ?
					       NAN : sqlite3_column_double(s, 2);
		a->power_draw_total_w = sqlite3_column_type(s, 3) == SQLITE_NULL ?
						NAN : sqlite3_column_double(s, 3);
	}
	if (rc != SQLITE_DONE)
		ret = store_fail(st, rc, "reading agent history");
cleanup:
	sqlite3_finalize(s);
	if (ret < 0) {
		free(list);
		return ret;
	}
	*out = list;
	*out_count = count;
	return 0;
}
