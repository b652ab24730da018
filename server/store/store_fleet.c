/* The fleet in the store: the poller's BMC readings per node, maintenance flags, the health
 * cache, and the event and history queries the health rules need. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/error.h"
#include "store/store_internal.h"

#define STATE_COLUMNS                                                                              \
	"b.node_id, n.name, b.power, b.power_time, b.power_changed, b.power_error, b.reachable,"  \
	" b.failures, b.down_since, b.circuit_open, b.next_try, b.last_ok, b.sensors,"             \
	" b.sensors_time, b.sel_cursor, b.health, b.reasons, b.health_time, b.hung_since,"         \
	" b.starved_since, b.remediated_at, b.power_off_by, b.power_off_time"

void fleet_state_init(struct fleet_state *s, int64_t node_id)
{
	memset(s, 0, sizeof(*s));
	s->node_id = node_id;
	snprintf(s->power, sizeof(s->power), "unknown");
	snprintf(s->health, sizeof(s->health), "ok");
	s->reachable = 1;
}

void fleet_state_clear(struct fleet_state *s)
{
	if (!s)
		return;
	free(s->node);
	free(s->power_error);
	free(s->sensors);
	free(s->reasons);
	free(s->power_off_by);
	s->node = s->power_error = s->sensors = s->reasons = s->power_off_by = NULL;
}

void fleet_state_list_free(struct fleet_state *list, size_t count)
{
	if (!list)
		return;
	for (size_t i = 0; i < count; i++)
		fleet_state_clear(&list[i]);
	free(list);
}

static void column_word(char *out, size_t len, sqlite3_stmt *s, int idx, const char *dflt)
{
	const unsigned char *t = sqlite3_column_text(s, idx);

	snprintf(out, len, "%s", t ? (const char *)t : dflt);
}

static int state_read(struct fleet_state *out, sqlite3_stmt *s)
{
	struct fleet_state v;
	int ret;

	fleet_state_init(&v, sqlite3_column_int64(s, 0));
	column_word(v.power, sizeof(v.power), s, 2, "unknown");
	v.power_time = sqlite3_column_int64(s, 3);
	v.power_changed = sqlite3_column_int64(s, 4);
	v.reachable = sqlite3_column_int(s, 6);
	v.failures = sqlite3_column_int(s, 7);
	v.down_since = sqlite3_column_int64(s, 8);
	v.circuit_open = sqlite3_column_int(s, 9);
	v.next_try = sqlite3_column_int64(s, 10);
	v.last_ok = sqlite3_column_int64(s, 11);
	v.sensors_time = sqlite3_column_int64(s, 13);
	v.sel_cursor = sqlite3_column_int64(s, 14);
	column_word(v.health, sizeof(v.health), s, 15, "ok");
	v.health_time = sqlite3_column_int64(s, 17);
	v.hung_since = sqlite3_column_int64(s, 18);
	v.starved_since = sqlite3_column_int64(s, 19);
	v.remediated_at = sqlite3_column_int64(s, 20);
	v.power_off_time = sqlite3_column_int64(s, 22);
	if ((ret = store_column_strdup(&v.node, s, 1)) < 0 ||
	    (ret = store_column_strdup(&v.power_off_by, s, 21)) < 0 ||
	    (ret = store_column_strdup(&v.power_error, s, 5)) < 0 ||
	    (ret = store_column_strdup(&v.sensors, s, 12)) < 0 ||
	    (ret = store_column_strdup(&v.reasons, s, 16)) < 0) {
		fleet_state_clear(&v);
		return ret;
	}
	*out = v;
	return 0;
}

int store_fleet_state_get(struct store *st, struct fleet_state *out, int64_t node_id)
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_FLEET_STATE_GET,
			      "SELECT " STATE_COLUMNS " FROM node_bmc_state b"
			      " JOIN nodes n ON n.id = b.node_id WHERE b.node_id = ?1")) < 0)
		return ret;
	sqlite3_bind_int64(s, 1, node_id);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		ret = state_read(out, s);
	else if (rc == SQLITE_DONE)
		ret = kiln_fail(KILN_ENOTFOUND, "store: node id %lld was never polled",
				(long long)node_id);
	else
		ret = store_fail(st, rc, "reading a node's BMC state");
	store_stmt_done(s);
	return ret;
}

int store_fleet_state_put(struct store *st, const struct fleet_state *v)
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_FLEET_STATE_PUT,
			      "INSERT OR REPLACE INTO node_bmc_state (node_id, power, power_time,"
			      " power_changed, power_error, reachable, failures, down_since,"
			      " circuit_open, next_try, last_ok, sensors, sensors_time, sel_cursor,"
			      " health, reasons, health_time, hung_since, starved_since, remediated_at,"
			      " power_off_by, power_off_time)"
			      " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14,"
			      " ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22)")) < 0)
		return ret;
	sqlite3_bind_int64(s, 1, v->node_id);
	store_bind_text(s, 2, v->power);
	sqlite3_bind_int64(s, 3, v->power_time);
	sqlite3_bind_int64(s, 4, v->power_changed);
	store_bind_text(s, 5, v->power_error);
	sqlite3_bind_int(s, 6, v->reachable ? 1 : 0);
	sqlite3_bind_int(s, 7, v->failures);
	sqlite3_bind_int64(s, 8, v->down_since);
	sqlite3_bind_int(s, 9, v->circuit_open ? 1 : 0);
	sqlite3_bind_int64(s, 10, v->next_try);
	sqlite3_bind_int64(s, 11, v->last_ok);
	store_bind_text(s, 12, v->sensors);
	sqlite3_bind_int64(s, 13, v->sensors_time);
	sqlite3_bind_int64(s, 14, v->sel_cursor);
	store_bind_text(s, 15, v->health);
	store_bind_text(s, 16, v->reasons);
	sqlite3_bind_int64(s, 17, v->health_time);
	sqlite3_bind_int64(s, 18, v->hung_since);
	sqlite3_bind_int64(s, 19, v->starved_since);
	sqlite3_bind_int64(s, 20, v->remediated_at);
	store_bind_text(s, 21, v->power_off_by);
	sqlite3_bind_int64(s, 22, v->power_off_time);
	rc = sqlite3_step(s);
	if (rc != SQLITE_DONE) {
		ret = store_fail(st, rc, "writing a node's BMC state");
		if (ret == KILN_ENOTFOUND)
			kiln_fail(ret, "store: BMC state for node id %lld: no such node",
				  (long long)v->node_id);
	}
	store_stmt_done(s);
	return ret;
}

int store_fleet_state_list(struct store *st, struct fleet_state **out, size_t *out_count)
{
	struct fleet_state *list = NULL;
	size_t count = 0, cap = 0;
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_FLEET_STATE_LIST,
			      "SELECT " STATE_COLUMNS " FROM node_bmc_state b"
			      " JOIN nodes n ON n.id = b.node_id ORDER BY n.name")) < 0)
		return ret;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if ((ret = store_list_grow((void **)&list, &cap, count, sizeof(*list))) < 0 ||
		    (ret = state_read(&list[count], s)) < 0)
			goto cleanup;
		count++;
	}
	if (rc != SQLITE_DONE)
		ret = store_fail(st, rc, "reading the BMC states");
cleanup:
	store_stmt_done(s);
	if (ret < 0) {
		fleet_state_list_free(list, count);
		return ret;
	}
	*out = list;
	*out_count = count;
	return 0;
}

int store_fleet_down_list(struct store *st, struct fleet_down **out, size_t *out_count)
{
	struct fleet_down *list = NULL;
	size_t count = 0, cap = 0;
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_FLEET_DOWN_LIST,
			      "SELECT node_id, down_since, power_error FROM node_bmc_state"
			      " WHERE failures > 0 AND down_since > 0"
			      " AND (reachable = 0 OR circuit_open = 1) ORDER BY node_id")) < 0)
		return ret;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if ((ret = store_list_grow((void **)&list, &cap, count, sizeof(*list))) < 0)
			goto cleanup;
		list[count].node_id = sqlite3_column_int64(s, 0);
		list[count].down_since = sqlite3_column_int64(s, 1);
		if ((ret = store_column_strdup(&list[count].error, s, 2)) < 0)
			goto cleanup;
		count++;
	}
	if (rc != SQLITE_DONE)
		ret = store_fail(st, rc, "reading the BMCs that are down");
cleanup:
	store_stmt_done(s);
	if (ret < 0) {
		fleet_down_list_free(list, count);
		return ret;
	}
	*out = list;
	*out_count = count;
	return 0;
}

void fleet_down_list_free(struct fleet_down *list, size_t count)
{
	if (!list)
		return;
	for (size_t i = 0; i < count; i++)
		free(list[i].error);
	free(list);
}

/* --- maintenance ----------------------------------------------------------------------- */

int store_maintenance_set(struct store *st, int64_t node_id, const char *reason, const char *by)
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if (reason) {
		ret = store_stmt(st, &s, STMT_MAINT_SET,
				 "INSERT INTO node_maintenance (node_id, reason, by, since)"
				 " VALUES (?1, ?2, ?3, ?4) ON CONFLICT (node_id) DO UPDATE SET"
				 " reason = excluded.reason, by = excluded.by");
		if (ret < 0)
			return ret;
		store_bind_text(s, 2, reason);
		store_bind_text(s, 3, by ? by : "?");
		sqlite3_bind_int64(s, 4, store_now(st));
	} else if ((ret = store_stmt(st, &s, STMT_MAINT_CLEAR,
				     "DELETE FROM node_maintenance WHERE node_id = ?1")) < 0) {
		return ret;
	}
	sqlite3_bind_int64(s, 1, node_id);
	rc = sqlite3_step(s);
	if (rc != SQLITE_DONE) {
		ret = store_fail(st, rc, "setting maintenance");
		if (ret == KILN_ENOTFOUND)
			kiln_fail(ret, "store: maintenance of node id %lld: no such node",
				  (long long)node_id);
	}
	store_stmt_done(s);
	return ret;
}

void maintenance_list_free(struct maintenance *list, size_t count)
{
	if (!list)
		return;
	for (size_t i = 0; i < count; i++) {
		free(list[i].node);
		free(list[i].reason);
		free(list[i].by);
	}
	free(list);
}

int store_maintenance_list(struct store *st, struct maintenance **out, size_t *out_count)
{
	struct maintenance *list = NULL;
	size_t count = 0, cap = 0;
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_MAINT_LIST,
			      "SELECT m.node_id, n.name, m.reason, m.by, m.since FROM node_maintenance m"
			      " JOIN nodes n ON n.id = m.node_id ORDER BY n.name")) < 0)
		return ret;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct maintenance *m;

		if ((ret = store_list_grow((void **)&list, &cap, count, sizeof(*list))) < 0)
			goto cleanup;
		m = &list[count++];
		m->node_id = sqlite3_column_int64(s, 0);
		m->since = sqlite3_column_int64(s, 4);
		if ((ret = store_column_strdup(&m->node, s, 1)) < 0 ||
		    (ret = store_column_strdup(&m->reason, s, 2)) < 0 ||
		    (ret = store_column_strdup(&m->by, s, 3)) < 0)
			goto cleanup;
	}
	if (rc != SQLITE_DONE)
		ret = store_fail(st, rc, "reading maintenance");
cleanup:
	store_stmt_done(s);
	if (ret < 0) {
		maintenance_list_free(list, count);
		return ret;
	}
	*out = list;
	*out_count = count;
	return 0;
}

/* --- history and events for the health rules ------------------------------------------- */

int store_fleet_ecc_window(struct store *st, int64_t *out_first, int64_t *out_last,
			   int64_t node_id, int64_t since)
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_FLEET_ECC_WINDOW,
			      "SELECT (SELECT ecc_uncorrected FROM agent_history WHERE node_id = ?1"
			      "  AND time >= ?2 AND ecc_uncorrected IS NOT NULL"
			      "  ORDER BY time ASC, id ASC LIMIT 1),"
			      " (SELECT ecc_uncorrected FROM agent_history WHERE node_id = ?1"
			      "  AND time >= ?2 AND ecc_uncorrected IS NOT NULL"
			      "  ORDER BY time DESC, id DESC LIMIT 1)")) < 0)
		return ret;
	sqlite3_bind_int64(s, 1, node_id);
	sqlite3_bind_int64(s, 2, since);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		*out_first = sqlite3_column_type(s, 0) == SQLITE_NULL ? -1
								       : sqlite3_column_int64(s, 0);
		*out_last = sqlite3_column_type(s, 1) == SQLITE_NULL ? -1
								      : sqlite3_column_int64(s, 1);
	} else {
		ret = store_fail(st, rc, "reading the ECC history");
	}
	store_stmt_done(s);
	return ret;
}

int store_event_query(struct store *st, struct event **out, size_t *out_count, int64_t since,
		      int64_t node_id, const char *kind, enum event_severity min_severity,
		      size_t limit)
{
	sqlite3_stmt *s = NULL;
	int ret;

	/* One node: its own statement, so that SQLite uses events_by_node_time; with
	 * "(?2 = 0 OR e.node_id = ?2)" it scanned every event since ?1 for each node (the health
	 * sweep asks once per node). */
	if (node_id != 0)
		ret = store_stmt(st, &s, STMT_EVENT_QUERY_NODE,
				 STORE_EVENT_SELECT
				 " WHERE e.node_id = ?2 AND e.time >= ?1"
				 " AND (?3 IS NULL OR e.kind = ?3) AND e.severity >= ?4"
				 " ORDER BY e.time DESC, e.id DESC LIMIT ?5");
	else
		ret = store_stmt(st, &s, STMT_EVENT_QUERY,
				 STORE_EVENT_SELECT
				 " WHERE e.time >= ?1 AND (?2 = 0 OR e.node_id = ?2)"
				 " AND (?3 IS NULL OR e.kind = ?3) AND e.severity >= ?4"
				 " ORDER BY e.time DESC, e.id DESC LIMIT ?5");
	if (ret < 0)
		return ret;
	sqlite3_bind_int64(s, 1, since);
	sqlite3_bind_int64(s, 2, node_id);
	store_bind_text(s, 3, kind);
	sqlite3_bind_int(s, 4, (int)min_severity);
	store_bind_limit(s, 5, limit);
	return store_event_rows(st, s, out, out_count, "reading events");
}

/* --- the BMC inventory ------------------------------------------------------------------ */

int store_node_inventory_put(struct store *st, int64_t node_id, const char *json, int64_t time)
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_INVENTORY_PUT,
			      "INSERT OR REPLACE INTO node_inventory (node_id, inventory, bmc_firmware,"
			      " time) VALUES (?1, ?2, CASE WHEN json_valid(?2) THEN"
			      " json_extract(?2, '$.bmc_firmware') END, ?3)")) < 0)
		return ret;
	sqlite3_bind_int64(s, 1, node_id);
	store_bind_text(s, 2, json ? json : "{}");
	sqlite3_bind_int64(s, 3, time);
	rc = sqlite3_step(s);
	if (rc != SQLITE_DONE) {
		ret = store_fail(st, rc, "writing a node's inventory");
		if (ret == KILN_ENOTFOUND)
			kiln_fail(ret, "store: inventory of node id %lld: no such node",
				  (long long)node_id);
	}
	store_stmt_done(s);
	return ret;
}

int store_node_inventory_time(struct store *st, int64_t node_id, int64_t *out_time)
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_INVENTORY_TIME,
			      "SELECT time FROM node_inventory WHERE node_id = ?1")) < 0)
		return ret;
	sqlite3_bind_int64(s, 1, node_id);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		*out_time = sqlite3_column_int64(s, 0);
	else if (rc == SQLITE_DONE)
		*out_time = 0;
	else
		ret = store_fail(st, rc, "reading a node's inventory time");
	store_stmt_done(s);
	return ret;
}

void node_firmware_list_free(struct node_firmware *list, size_t count)
{
	if (!list)
		return;
	for (size_t i = 0; i < count; i++)
		free(list[i].bmc_firmware);
	free(list);
}

int store_node_firmware_list(struct store *st, struct node_firmware **out, size_t *out_count)
{
	struct node_firmware *list = NULL;
	size_t count = 0, cap = 0;
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_INVENTORY_FIRMWARE,
			      "SELECT node_id, bmc_firmware FROM node_inventory"
			      " WHERE bmc_firmware IS NOT NULL ORDER BY node_id")) < 0)
		return ret;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if ((ret = store_list_grow((void **)&list, &cap, count, sizeof(*list))) < 0)
			goto cleanup;
		list[count].node_id = sqlite3_column_int64(s, 0);
		if ((ret = store_column_strdup(&list[count++].bmc_firmware, s, 1)) < 0)
			goto cleanup;
	}
	if (rc != SQLITE_DONE)
		ret = store_fail(st, rc, "reading the BMC firmware versions");
cleanup:
	store_stmt_done(s);
	if (ret < 0) {
		node_firmware_list_free(list, count);
		return ret;
	}
	*out = list;
	*out_count = count;
	return 0;
}

/* --- the BMC power and inlet history ------------------------------------------------------ */

static void bind_real_or_null(sqlite3_stmt *s, int idx, double v)
{
	if (isnan(v))
		sqlite3_bind_null(s, idx);
	else
		sqlite3_bind_double(s, idx, v);
}

int store_bmc_sample_insert(struct store *st, int64_t node_id, int64_t time, double power_w,
			    double inlet_c)
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_BMC_SAMPLE_INSERT,
			      "INSERT OR REPLACE INTO bmc_history (node_id, time, power_w, inlet_c)"
			      " VALUES (?1, ?2, ?3, ?4)")) < 0)
		return ret;
	sqlite3_bind_int64(s, 1, node_id);
	sqlite3_bind_int64(s, 2, time);
	bind_real_or_null(s, 3, power_w);
	bind_real_or_null(s, 4, inlet_c);
	rc = sqlite3_step(s);
	if (rc != SQLITE_DONE)
		ret = store_fail(st, rc, "writing a BMC sample");
	store_stmt_done(s);
	return ret;
}

/* Steps s (node_id, time, temperature, power per row) into *out; what names it in errors. */
static int samples_collect(struct store *st, sqlite3_stmt *s, struct agent_sample **out,
			   size_t *out_count, const char *what)
{
	struct agent_sample *list = NULL;
	size_t count = 0, cap = 0;
	int rc, ret = 0;

	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct agent_sample *a;

		if ((ret = store_list_grow((void **)&list, &cap, count, sizeof(*list))) < 0)
			goto cleanup;
		a = &list[count++];
		a->node_id = sqlite3_column_int64(s, 0);
		a->time = sqlite3_column_int64(s, 1);
		a->temperature_max_c = sqlite3_column_type(s, 2) == SQLITE_NULL
					       ? NAN
					       : sqlite3_column_double(s, 2);
		a->power_draw_total_w = sqlite3_column_type(s, 3) == SQLITE_NULL
						? NAN
						: sqlite3_column_double(s, 3);
	}
	if (rc != SQLITE_DONE)
		ret = store_fail(st, rc, what);
cleanup:
	store_stmt_done(s);
	if (ret < 0) {
		free(list);
		return ret;
	}
	*out = list;
	*out_count = count;
	return 0;
}

int store_bmc_samples_list(struct store *st, struct agent_sample **out, size_t *out_count,
			   int64_t since, int64_t until)
{
	sqlite3_stmt *s = NULL;
	int ret;

	if ((ret = store_stmt(st, &s, STMT_BMC_SAMPLES_LIST,
			      "SELECT node_id, time, inlet_c, power_w FROM bmc_history"
			      " WHERE time >= ?1 AND time <= ?2 ORDER BY node_id, time")) < 0)
		return ret;
	sqlite3_bind_int64(s, 1, since);
	sqlite3_bind_int64(s, 2, until);
	return samples_collect(st, s, out, out_count, "reading the BMC history");
}

int store_node_samples_list(struct store *st, struct agent_sample **out, size_t *out_count,
			    int64_t node_id, int bmc, int64_t since, size_t limit)
{
	sqlite3_stmt *s = NULL;
	int ret;

	if (bmc)
		ret = store_stmt(st, &s, STMT_NODE_BMC_SAMPLES,
				 "SELECT node_id, time, inlet_c, power_w FROM bmc_history"
				 " WHERE node_id = ?1 AND time >= ?2 ORDER BY time LIMIT ?3");
	else
		ret = store_stmt(st, &s, STMT_NODE_AGENT_SAMPLES,
				 "SELECT node_id, time, temperature_max_c, power_draw_total_w"
				 " FROM agent_history WHERE node_id = ?1 AND time >= ?2"
				 " ORDER BY time, id LIMIT ?3");
	if (ret < 0)
		return ret;
	sqlite3_bind_int64(s, 1, node_id);
	sqlite3_bind_int64(s, 2, since);
	sqlite3_bind_int64(s, 3, (sqlite3_int64)limit);
	return samples_collect(st, s, out, out_count,
			       bmc ? "reading the node's BMC history" : "reading the node's agent history");
}

int store_bmc_history_prune(struct store *st, int64_t before, int limit, int *out_deleted)
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_BMC_HISTORY_PRUNE,
			      "DELETE FROM bmc_history WHERE (node_id, time) IN (SELECT node_id, time"
			      " FROM bmc_history WHERE time < ?1 LIMIT ?2)")) < 0)
		return ret;
	sqlite3_bind_int64(s, 1, before);
	sqlite3_bind_int(s, 2, limit);
	rc = sqlite3_step(s);
	if (rc != SQLITE_DONE)
		ret = store_fail(st, rc, "pruning the BMC history");
	else if (out_deleted)
		*out_deleted = sqlite3_changes(st->db);
	store_stmt_done(s);
	return ret;
}
