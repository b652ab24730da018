/* SPDX-License-Identifier: Apache-2.0 */
/* Reads for the overnight report and the webhooks: events after an id, agent power and
 * temperature samples over a window. Rarely run, so these statements are not cached. */
#include <stddef.h>
#include <stdlib.h>

#include "kiln/error.h"
#include "store/store_internal.h"

static const struct sql_stmt LAST_ID = {
	STMT_NONE, "reading the last event id", "SELECT coalesce(max(id), 0) FROM events", NULL};

static const struct sql_stmt EVENTS_AFTER = {
	STMT_NONE, "reading events",
	STORE_EVENT_SELECT " WHERE e.id > ?1 ORDER BY e.id LIMIT ?2", NULL};

static const struct sql_stmt SAMPLES = {
	STMT_NONE, "reading agent history",
	"SELECT node_id, time, temperature_max_c, power_draw_total_w FROM agent_history"
	" WHERE time >= ?1 AND time <= ?2 ORDER BY node_id, time, id",
	NULL};

int store_event_last_id(struct store *st, int64_t *out)
{
	int64_t id = 0;
	int ret = sql_int(st, &LAST_ID, SQL_NO_ARGS, &id);

	if (ret < 0)
		return ret;
	*out = id; /* an aggregate always has its row */
	return 0;
}

int store_event_list_after(struct store *st, struct event **out, size_t *out_count,
			   int64_t after_id, size_t limit)
{
	if (limit == 0 || limit > 100000)
		return kiln_fail(KILN_EINVAL, "store: event limit %zu out of range", limit);
	return store_event_rows(st, &EVENTS_AFTER, SQL_ARGS(SQL_INT(after_id), SQL_LIMIT(limit)),
				out, out_count);
}

int store_sample_read(const struct sql_row *r, void *elem)
{
	struct agent_sample *a = elem;

	a->node_id = sql_col_int(r, 0);
	a->time = sql_col_int(r, 1);
	a->temperature_max_c = sql_col_real(r, 2);
	a->power_draw_total_w = sql_col_real(r, 3);
	return 0;
}

int store_agent_samples_list(struct store *st, struct agent_sample **out, size_t *out_count,
			     int64_t since, int64_t until)
{
	return sql_list(st, &SAMPLES, SQL_ARGS(SQL_INT(since), SQL_INT(until)), out, out_count,
			sizeof(**out), store_sample_read, NULL);
}
