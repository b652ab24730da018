/* SPDX-License-Identifier: Apache-2.0 */
/* The fleet in the store: the poller's BMC readings per node, maintenance flags, the health
 * cache, and the event and history queries the health rules need. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "kiln/error.h"
#include "store/store_internal.h"

#define STATE_COLUMNS                                                                              \
	"b.node_id, n.name, b.power, b.power_time, b.power_changed, b.power_error, b.reachable,"  \
	" b.failures, b.down_since, b.circuit_open, b.next_try, b.last_ok, b.sensors,"             \
	" b.sensors_time, b.sel_cursor, b.health, b.reasons, b.health_time, b.hung_since,"         \
	" b.starved_since, b.remediated_at, b.power_off_by, b.power_off_time, b.boot_started,"    \
	" b.boot_state, b.boot_last_s, b.boot_faults"

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
	free(s->boot_state);
	free(s->boot_faults);
	s->node = s->power_error = s->sensors = s->reasons = s->power_off_by = NULL;
	s->boot_state = s->boot_faults = NULL;
}

void fleet_state_list_free(struct fleet_state *list, size_t count)
{
	if (!list)
		return;
	for (size_t i = 0; i < count; i++)
		fleet_state_clear(&list[i]);
	free(list);
}

/* The SQL of every statement here is common to both backends. */
#define STATE_SELECT                                                                               \
	"SELECT " STATE_COLUMNS " FROM node_bmc_state b JOIN nodes n ON n.id = b.node_id"

static const struct sql_stmt STATE_GET = {
	STMT_FLEET_STATE_GET, "reading a node's BMC state", STATE_SELECT " WHERE b.node_id = ?1",
	NULL};

/* Every column is written, so the update is the replace it was. */
static const struct sql_stmt STATE_PUT = {
	STMT_FLEET_STATE_PUT, "writing a node's BMC state",
	"INSERT INTO node_bmc_state (node_id, power, power_time, power_changed, power_error,"
	" reachable, failures, down_since, circuit_open, next_try, last_ok, sensors, sensors_time,"
	" sel_cursor, health, reasons, health_time, hung_since, starved_since, remediated_at,"
	" power_off_by, power_off_time, boot_started, boot_state, boot_last_s, boot_faults)"
	" VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18,"
	" ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26)"
	" ON CONFLICT (node_id) DO UPDATE SET power = excluded.power,"
	" power_time = excluded.power_time, power_changed = excluded.power_changed,"
	" power_error = excluded.power_error, reachable = excluded.reachable,"
	" failures = excluded.failures, down_since = excluded.down_since,"
	" circuit_open = excluded.circuit_open, next_try = excluded.next_try,"
	" last_ok = excluded.last_ok, sensors = excluded.sensors,"
	" sensors_time = excluded.sensors_time, sel_cursor = excluded.sel_cursor,"
	" health = excluded.health, reasons = excluded.reasons,"
	" health_time = excluded.health_time, hung_since = excluded.hung_since,"
	" starved_since = excluded.starved_since, remediated_at = excluded.remediated_at,"
	" power_off_by = excluded.power_off_by, power_off_time = excluded.power_off_time,"
	" boot_started = excluded.boot_started, boot_state = excluded.boot_state,"
	" boot_last_s = excluded.boot_last_s, boot_faults = excluded.boot_faults",
	NULL};

static const struct sql_stmt STATE_LIST = {
	STMT_FLEET_STATE_LIST, "reading the BMC states", STATE_SELECT " ORDER BY n.name", NULL};

static const struct sql_stmt DOWN_LIST = {
	STMT_FLEET_DOWN_LIST, "reading the BMCs that are down",
	"SELECT node_id, down_since, power_error FROM node_bmc_state"
	" WHERE failures > 0 AND down_since > 0 AND (reachable = 0 OR circuit_open = 1)"
	" ORDER BY node_id",
	NULL};

/* "by" is quoted: PostgreSQL reserves the word. */
static const struct sql_stmt MAINT_SET = {
	STMT_MAINT_SET, "setting maintenance",
	"INSERT INTO node_maintenance (node_id, reason, \"by\", since) VALUES (?1, ?2, ?3, ?4)"
	" ON CONFLICT (node_id) DO UPDATE SET reason = excluded.reason, \"by\" = excluded.\"by\"",
	NULL};

static const struct sql_stmt MAINT_CLEAR = {
	STMT_MAINT_CLEAR, "setting maintenance", "DELETE FROM node_maintenance WHERE node_id = ?1",
	NULL};

static const struct sql_stmt MAINT_LIST = {
	STMT_MAINT_LIST, "reading maintenance",
	"SELECT m.node_id, n.name, m.reason, m.\"by\", m.since FROM node_maintenance m"
	" JOIN nodes n ON n.id = m.node_id ORDER BY n.name",
	NULL};

static const struct sql_stmt ECC_WINDOW = {
	STMT_FLEET_ECC_WINDOW, "reading the ECC history",
	"SELECT (SELECT ecc_uncorrected FROM agent_history WHERE node_id = ?1"
	"  AND time >= ?2 AND ecc_uncorrected IS NOT NULL"
	"  ORDER BY time ASC, id ASC LIMIT 1),"
	" (SELECT ecc_uncorrected FROM agent_history WHERE node_id = ?1"
	"  AND time >= ?2 AND ecc_uncorrected IS NOT NULL"
	"  ORDER BY time DESC, id DESC LIMIT 1)",
	NULL};

/* One node: its own statement, so that SQLite uses events_by_node_time; with
 * "(?2 = 0 OR e.node_id = ?2)" it scanned every event since ?1 for each node (the health
 * sweep asks once per node). */
static const struct sql_stmt EVENT_QUERY_NODE = {
	STMT_EVENT_QUERY_NODE, "reading events",
	STORE_EVENT_SELECT " WHERE e.node_id = ?2 AND e.time >= ?1"
	" AND (CAST(?3 AS TEXT) IS NULL OR e.kind = ?3) AND e.severity >= ?4"
	" ORDER BY e.time DESC, e.id DESC LIMIT ?5",
	NULL};

static const struct sql_stmt EVENT_QUERY = {
	STMT_EVENT_QUERY, "reading events",
	STORE_EVENT_SELECT " WHERE e.time >= ?1 AND (?2 = 0 OR e.node_id = ?2)"
	" AND (CAST(?3 AS TEXT) IS NULL OR e.kind = ?3) AND e.severity >= ?4"
	" ORDER BY e.time DESC, e.id DESC LIMIT ?5",
	NULL};

/* bmc_firmware (?3) is cut out of the JSON in C: SQLite's json_extract() is not PostgreSQL's. */
static const struct sql_stmt INVENTORY_PUT = {
	STMT_INVENTORY_PUT, "writing a node's inventory",
	"INSERT INTO node_inventory (node_id, inventory, bmc_firmware, time)"
	" VALUES (?1, ?2, ?3, ?4) ON CONFLICT (node_id) DO UPDATE SET"
	" inventory = excluded.inventory, bmc_firmware = excluded.bmc_firmware,"
	" time = excluded.time",
	NULL};

static const struct sql_stmt INVENTORY_TIME = {
	STMT_INVENTORY_TIME, "reading a node's inventory time",
	"SELECT time FROM node_inventory WHERE node_id = ?1", NULL};

static const struct sql_stmt INVENTORY_FIRMWARE = {
	STMT_INVENTORY_FIRMWARE, "reading the BMC firmware versions",
	"SELECT node_id, bmc_firmware FROM node_inventory WHERE bmc_firmware IS NOT NULL"
	" ORDER BY node_id",
	NULL};

static const struct sql_stmt SAMPLE_INSERT = {
	STMT_BMC_SAMPLE_INSERT, "writing a BMC sample",
	"INSERT INTO bmc_history (node_id, time, power_w, inlet_c) VALUES (?1, ?2, ?3, ?4)"
	" ON CONFLICT (node_id, time) DO UPDATE SET power_w = excluded.power_w,"
	" inlet_c = excluded.inlet_c",
	NULL};

static const struct sql_stmt SAMPLES_LIST = {
	STMT_BMC_SAMPLES_LIST, "reading the BMC history",
	"SELECT node_id, time, inlet_c, power_w FROM bmc_history"
	" WHERE time >= ?1 AND time <= ?2 ORDER BY node_id, time",
	NULL};

static const struct sql_stmt NODE_BMC_SAMPLES = {
	STMT_NODE_BMC_SAMPLES, "reading the node's BMC history",
	"SELECT node_id, time, inlet_c, power_w FROM bmc_history"
	" WHERE node_id = ?1 AND time >= ?2 ORDER BY time LIMIT ?3",
	NULL};

static const struct sql_stmt NODE_AGENT_SAMPLES = {
	STMT_NODE_AGENT_SAMPLES, "reading the node's agent history",
	"SELECT node_id, time, temperature_max_c, power_draw_total_w FROM agent_history"
	" WHERE node_id = ?1 AND time >= ?2 ORDER BY time, id LIMIT ?3",
	NULL};

static const struct sql_stmt HISTORY_PRUNE = {
	STMT_BMC_HISTORY_PRUNE, "pruning the BMC history",
	"DELETE FROM bmc_history WHERE (node_id, time) IN (SELECT node_id, time"
	" FROM bmc_history WHERE time < ?1 LIMIT ?2)",
	NULL};

/* 0, or the error of a write; one that failed on its foreign key names the node. */
static int no_such_node(int64_t ret, const char *what, int64_t node_id)
{
	if (ret == KILN_ENOTFOUND)
		return kiln_fail(KILN_ENOTFOUND, "store: %s node id %lld: no such node", what,
				 (long long)node_id);
	return ret < 0 ? (int)ret : 0;
}

/* A row of STATE_COLUMNS into the zeroed *elem; on error it is cleared. */
static int state_read(const struct sql_row *r, void *elem)
{
	struct fleet_state *v = elem;
	int ret;

	fleet_state_init(v, sql_col_int(r, 0));
	sql_col_word(r, 2, v->power, sizeof(v->power), "unknown");
	v->power_time = sql_col_int(r, 3);
	v->power_changed = sql_col_int(r, 4);
	v->reachable = (int)sql_col_int(r, 6);
	v->failures = (int)sql_col_int(r, 7);
	v->down_since = sql_col_int(r, 8);
	v->circuit_open = (int)sql_col_int(r, 9);
	v->next_try = sql_col_int(r, 10);
	v->last_ok = sql_col_int(r, 11);
	v->sensors_time = sql_col_int(r, 13);
	v->sel_cursor = sql_col_int(r, 14);
	sql_col_word(r, 15, v->health, sizeof(v->health), "ok");
	v->health_time = sql_col_int(r, 17);
	v->hung_since = sql_col_int(r, 18);
	v->starved_since = sql_col_int(r, 19);
	v->remediated_at = sql_col_int(r, 20);
	v->power_off_time = sql_col_int(r, 22);
	v->boot_started = sql_col_int(r, 23);
	v->boot_last_s = sql_col_int(r, 25);
	if ((ret = sql_col_strdup(r, 1, &v->node)) < 0 ||
	    (ret = sql_col_strdup(r, 24, &v->boot_state)) < 0 ||
	    (ret = sql_col_strdup(r, 26, &v->boot_faults)) < 0 ||
	    (ret = sql_col_strdup(r, 21, &v->power_off_by)) < 0 ||
	    (ret = sql_col_strdup(r, 5, &v->power_error)) < 0 ||
	    (ret = sql_col_strdup(r, 12, &v->sensors)) < 0 ||
	    (ret = sql_col_strdup(r, 16, &v->reasons)) < 0) {
		fleet_state_clear(v);
		return ret;
	}
	return 0;
}

static void state_clear(void *elem)
{
	fleet_state_clear(elem);
}

int store_fleet_state_get(struct store *st, struct fleet_state *out, int64_t node_id)
{
	struct fleet_state v;
	int ret = sql_one(st, &STATE_GET, SQL_ARGS(SQL_INT(node_id)), state_read, &v);

	if (ret == 0)
		return kiln_fail(KILN_ENOTFOUND, "store: node id %lld was never polled",
				 (long long)node_id);
	if (ret < 0)
		return ret;
	*out = v;
	return 0;
}

int store_fleet_state_put(struct store *st, const struct fleet_state *v)
{
	int64_t ret = sql_write(
		st, &STATE_PUT,
		SQL_ARGS(SQL_INT(v->node_id), SQL_TEXT(v->power), SQL_INT(v->power_time),
			 SQL_INT(v->power_changed), SQL_TEXT(v->power_error), SQL_BOOL(v->reachable),
			 SQL_INT(v->failures), SQL_INT(v->down_since), SQL_BOOL(v->circuit_open),
			 SQL_INT(v->next_try), SQL_INT(v->last_ok), SQL_TEXT(v->sensors),
			 SQL_INT(v->sensors_time), SQL_INT(v->sel_cursor), SQL_TEXT(v->health),
			 SQL_TEXT(v->reasons), SQL_INT(v->health_time), SQL_INT(v->hung_since),
			 SQL_INT(v->starved_since), SQL_INT(v->remediated_at),
			 SQL_TEXT(v->power_off_by), SQL_INT(v->power_off_time),
			 SQL_INT(v->boot_started), SQL_TEXT(v->boot_state), SQL_INT(v->boot_last_s),
			 SQL_TEXT(v->boot_faults)));

	return no_such_node(ret, "BMC state for", v->node_id);
}

int store_fleet_state_list(struct store *st, struct fleet_state **out, size_t *out_count)
{
	return sql_list(st, &STATE_LIST, SQL_NO_ARGS, out, out_count, sizeof(**out), state_read,
			state_clear);
}

static int down_read(const struct sql_row *r, void *elem)
{
	struct fleet_down *d = elem;

	d->node_id = sql_col_int(r, 0);
	d->down_since = sql_col_int(r, 1);
	return sql_col_strdup(r, 2, &d->error);
}

static void down_clear(void *elem)
{
	free(((struct fleet_down *)elem)->error);
}

int store_fleet_down_list(struct store *st, struct fleet_down **out, size_t *out_count)
{
	return sql_list(st, &DOWN_LIST, SQL_NO_ARGS, out, out_count, sizeof(**out), down_read,
			down_clear);
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
	int64_t ret;

	if (reason)
		ret = sql_exec(st, &MAINT_SET,
			       SQL_ARGS(SQL_INT(node_id), SQL_TEXT(reason), SQL_TEXT(by ? by : "?"),
					SQL_INT(store_now(st))));
	else
		ret = sql_exec(st, &MAINT_CLEAR, SQL_ARGS(SQL_INT(node_id)));
	return no_such_node(ret, "maintenance of", node_id);
}

static void maintenance_clear(void *elem)
{
	struct maintenance *m = elem;

	free(m->node);
	free(m->reason);
	free(m->by);
}

void maintenance_list_free(struct maintenance *list, size_t count)
{
	if (!list)
		return;
	for (size_t i = 0; i < count; i++)
		maintenance_clear(&list[i]);
	free(list);
}

static int maintenance_read(const struct sql_row *r, void *elem)
{
	struct maintenance *m = elem;
	int ret;

	m->node_id = sql_col_int(r, 0);
	m->since = sql_col_int(r, 4);
	if ((ret = sql_col_strdup(r, 1, &m->node)) < 0 ||
	    (ret = sql_col_strdup(r, 2, &m->reason)) < 0 ||
	    (ret = sql_col_strdup(r, 3, &m->by)) < 0)
		return ret;
	return 0;
}

int store_maintenance_list(struct store *st, struct maintenance **out, size_t *out_count)
{
	return sql_list(st, &MAINT_LIST, SQL_NO_ARGS, out, out_count, sizeof(**out),
			maintenance_read, maintenance_clear);
}

/* --- history and events for the health rules ------------------------------------------- */

struct ecc_window {
	int64_t first, last;
};

static int ecc_read(const struct sql_row *r, void *ctx)
{
	struct ecc_window *w = ctx;

	w->first = sql_col_int_or(r, 0, -1);
	w->last = sql_col_int_or(r, 1, -1);
	return 0;
}

int store_fleet_ecc_window(struct store *st, int64_t *out_first, int64_t *out_last,
			   int64_t node_id, int64_t since)
{
	struct ecc_window w = {-1, -1};
	int ret = sql_one(st, &ECC_WINDOW, SQL_ARGS(SQL_INT(node_id), SQL_INT(since)), ecc_read,
			  &w);

	if (ret < 0)
		return ret;
	*out_first = w.first;
	*out_last = w.last;
	return 0;
}

int store_event_query(struct store *st, struct event **out, size_t *out_count, int64_t since,
		      int64_t node_id, const char *kind, enum event_severity min_severity,
		      size_t limit)
{
	return store_event_rows(st, node_id != 0 ? &EVENT_QUERY_NODE : &EVENT_QUERY,
				SQL_ARGS(SQL_INT(since), SQL_INT(node_id), SQL_TEXT(kind),
					 SQL_INT(min_severity), SQL_LIMIT(limit)),
				out, out_count);
}

/* --- the BMC inventory ------------------------------------------------------------------ */

/*
 * The inventory's bmc_firmware member as text (what SQLite's json_extract() stored before):
 * a string as it is, another value as its JSON; NULL when json is not JSON, not an object, or
 * has no such member. KILN_ERROR on ENOMEM.
 */
static int firmware_of(const char *json, char **out)
{
	json_t *root = json_loads(json, JSON_DECODE_ANY, NULL);
	json_t *v = json_object_get(root, "bmc_firmware");
	int ret = 0;

	*out = NULL;
	if (v && !json_is_null(v)) {
		*out = json_is_string(v) ? strdup(json_string_value(v))
					 : json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
		if (!*out)
			ret = kiln_fail(KILN_ERROR, "store: out of memory");
	}
	json_decref(root);
	return ret;
}

int store_node_inventory_put(struct store *st, int64_t node_id, const char *json, int64_t time)
{
	const char *text = json ? json : "{}";
	char *firmware;
	int64_t ret;

	if ((ret = firmware_of(text, &firmware)) < 0)
		return (int)ret;
	ret = sql_write(st, &INVENTORY_PUT,
		       SQL_ARGS(SQL_INT(node_id), SQL_TEXT(text), SQL_TEXT(firmware), SQL_INT(time)));
	free(firmware);
	return no_such_node(ret, "inventory of", node_id);
}

int store_node_inventory_time(struct store *st, int64_t node_id, int64_t *out_time)
{
	int64_t t = 0;
	int ret = sql_int(st, &INVENTORY_TIME, SQL_ARGS(SQL_INT(node_id)), &t);

	if (ret < 0)
		return ret;
	*out_time = ret ? t : 0;
	return 0;
}

static void firmware_clear(void *elem)
{
	free(((struct node_firmware *)elem)->bmc_firmware);
}

void node_firmware_list_free(struct node_firmware *list, size_t count)
{
	if (!list)
		return;
	for (size_t i = 0; i < count; i++)
		firmware_clear(&list[i]);
	free(list);
}

static int firmware_read(const struct sql_row *r, void *elem)
{
	struct node_firmware *f = elem;

	f->node_id = sql_col_int(r, 0);
	return sql_col_strdup(r, 1, &f->bmc_firmware);
}

int store_node_firmware_list(struct store *st, struct node_firmware **out, size_t *out_count)
{
	return sql_list(st, &INVENTORY_FIRMWARE, SQL_NO_ARGS, out, out_count, sizeof(**out),
			firmware_read, firmware_clear);
}

/* --- the BMC power and inlet history ------------------------------------------------------ */

int store_bmc_sample_insert(struct store *st, int64_t node_id, int64_t time, double power_w,
			    double inlet_c)
{
	int64_t ret = sql_write(st, &SAMPLE_INSERT,
			       SQL_ARGS(SQL_INT(node_id), SQL_INT(time), SQL_REAL(power_w),
					SQL_REAL(inlet_c)));

	return ret < 0 ? (int)ret : 0;
}

int store_bmc_samples_list(struct store *st, struct agent_sample **out, size_t *out_count,
			   int64_t since, int64_t until)
{
	return sql_list(st, &SAMPLES_LIST, SQL_ARGS(SQL_INT(since), SQL_INT(until)), out, out_count,
			sizeof(**out), store_sample_read, NULL);
}

int store_node_samples_list(struct store *st, struct agent_sample **out, size_t *out_count,
			    int64_t node_id, int bmc, int64_t since, size_t limit)
{
	/* A limit of 0 reads no rows, as it always did (SQL_LIMIT(0) would mean none). */
	return sql_list(st, bmc ? &NODE_BMC_SAMPLES : &NODE_AGENT_SAMPLES,
			SQL_ARGS(SQL_INT(node_id), SQL_INT(since),
				 limit ? SQL_LIMIT(limit) : SQL_INT(0)),
			out, out_count, sizeof(**out), store_sample_read, NULL);
}

int store_bmc_history_prune(struct store *st, int64_t before, int limit, int *out_deleted)
{
	/* A negative limit is none; PostgreSQL refuses LIMIT -1. */
	int64_t ret = sql_exec(st, &HISTORY_PRUNE,
			       SQL_ARGS(SQL_INT(before),
					limit < 0 ? SQL_LIMIT(0) : SQL_INT(limit)));

	if (ret < 0)
		return (int)ret;
	if (out_deleted)
		*out_deleted = (int)ret;
	return 0;
}
