/* Agent reports in the store: seen report ids, each node's latest state and GPUs, the history,
 * fleet enrollment tokens and pending agents. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/error.h"
#include "store/store_internal.h"

#define TOUCH_INTERVAL_S 60

/* --- report ids ---------------------------------------------------------------------- */

static const struct sql_stmt REPORT_CLAIM = {
	STMT_AGENT_REPORT_CLAIM, "recording a report id",
	"INSERT INTO agent_reports_seen (report_id, node_id, time)"
	" VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING",
	NULL};

int store_agent_report_claim(struct store *st, int *out_new, const char *report_id,
			     int64_t node_id)
{
	int64_t n = sql_exec(st, &REPORT_CLAIM,
			     SQL_ARGS(SQL_TEXT(report_id), SQL_INT(node_id), SQL_INT(store_now(st))));

	if (n < 0)
		return (int)n;
	*out_new = n > 0;
	return 0;
}

/* --- latest state -------------------------------------------------------------------- */

void agent_state_clear(struct agent_state *s)
{
	if (!s)
		return;
	free(s->node);
	free(s->report_id);
	free(s->boot_id);
	free(s->hostname);
	free(s->machine_id);
	free(s->os);
	free(s->kernel);
	free(s->dmi_serial);
	free(s->agent_version);
	free(s->nvidia_status);
	free(s->driver_version);
	free(s->kernel_module_version);
	free(s->cuda_driver_version);
	free(s->nvml_version);
	free(s->report);
	free(s->audit_facts);
	free(s->rejected_fields);
	memset(s, 0, sizeof(*s));
}

static void state_clear(void *elem)
{
	agent_state_clear(elem);
}

void agent_state_list_free(struct agent_state *list, size_t count)
{
	sql_list_free(list, count, sizeof(*list), state_clear);
}

#define STATE_COLUMNS                                                                        \
	"a.node_id, n.name, a.report_id, a.last_seen, a.report_time, a.boot_id, a.hostname,"  \
	" a.machine_id, a.os, a.kernel, a.dmi_serial, a.agent_version, a.nvidia_status,"      \
	" a.driver_version, a.kernel_module_version, a.cuda_driver_version, a.nvml_version,"  \
	" a.gpu_count, a.gpu_count_max"

static const struct sql_stmt STATE_REPORT_ID = {
	STMT_AGENT_STATE_REPORT_ID, "reading agent state",
	"SELECT report_id FROM node_agent_state WHERE node_id = ?1", NULL};

static const struct sql_stmt REPORT_GET = {
	STMT_AGENT_REPORT_GET, "reading an agent report",
	"SELECT report FROM node_agent_state WHERE node_id = ?1", NULL};

static const struct sql_stmt STATE_GET = {
	STMT_AGENT_STATE_GET, "reading agent state",
	"SELECT " STATE_COLUMNS ", a.report, a.health_facts, a.interval_s,"
	" a.cpu_iowait_pct, m.gpu_hottest_c, m.gpu_power_w,"
	" m.gpu_utilization_avg_pct, a.rejected_fields FROM node_agent_state a"
	" JOIN nodes n ON n.id = a.node_id"
	" LEFT JOIN node_agent_summary m ON m.node_id = a.node_id"
	" WHERE a.node_id = ?1",
	NULL};

/* Every column is written: the upsert leaves nothing of the row it replaces (as the
 * INSERT OR REPLACE it was did). */
static const struct sql_stmt STATE_PUT = {
	STMT_AGENT_STATE_PUT, "storing agent state",
	"INSERT INTO node_agent_state (node_id, report_id, last_seen,"
	" report_time, boot_id, hostname, machine_id, os, kernel, dmi_serial,"
	" agent_version, nvidia_status, driver_version, kernel_module_version,"
	" cuda_driver_version, nvml_version, gpu_count, gpu_count_max, report,"
	" audit_facts, health_facts, interval_s, cpu_iowait_pct, rejected_fields)"
	" VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14,"
	" ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24)"
	" ON CONFLICT (node_id) DO UPDATE SET report_id = excluded.report_id,"
	" last_seen = excluded.last_seen, report_time = excluded.report_time,"
	" boot_id = excluded.boot_id, hostname = excluded.hostname,"
	" machine_id = excluded.machine_id, os = excluded.os, kernel = excluded.kernel,"
	" dmi_serial = excluded.dmi_serial, agent_version = excluded.agent_version,"
	" nvidia_status = excluded.nvidia_status, driver_version = excluded.driver_version,"
	" kernel_module_version = excluded.kernel_module_version,"
	" cuda_driver_version = excluded.cuda_driver_version,"
	" nvml_version = excluded.nvml_version, gpu_count = excluded.gpu_count,"
	" gpu_count_max = excluded.gpu_count_max, report = excluded.report,"
	" audit_facts = excluded.audit_facts, health_facts = excluded.health_facts,"
	" interval_s = excluded.interval_s, cpu_iowait_pct = excluded.cpu_iowait_pct,"
	" rejected_fields = excluded.rejected_fields",
	NULL};

/* The narrow row `kiln status` and `kiln audit` read for every node; every column written. */
static const struct sql_stmt SUMMARY_PUT = {
	STMT_AGENT_SUMMARY_PUT, "storing agent summary",
	"INSERT INTO node_agent_summary (node_id, gpu_count_max,"
	" gpu_hottest_c, gpu_power_w, audit_facts, gpu_utilization_avg_pct,"
	" gpu_processes) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
	" ON CONFLICT (node_id) DO UPDATE SET gpu_count_max = excluded.gpu_count_max,"
	" gpu_hottest_c = excluded.gpu_hottest_c, gpu_power_w = excluded.gpu_power_w,"
	" audit_facts = excluded.audit_facts,"
	" gpu_utilization_avg_pct = excluded.gpu_utilization_avg_pct,"
	" gpu_processes = excluded.gpu_processes",
	NULL};

static const struct sql_stmt STATE_LIST = {
	STMT_AGENT_STATE_LIST, "listing agent states",
	"SELECT " STATE_COLUMNS " FROM node_agent_state a"
	" JOIN nodes n ON n.id = a.node_id ORDER BY n.name",
	NULL};

/* Reads the STATE_COLUMNS of the row (and the report at column 19 when asked). */
static int state_read(struct agent_state *o, const struct sql_row *r, int with_report)
{
	char **text[] = { &o->node, &o->report_id, NULL, NULL, &o->boot_id, &o->hostname,
			  &o->machine_id, &o->os, &o->kernel, &o->dmi_serial, &o->agent_version,
			  &o->nvidia_status, &o->driver_version, &o->kernel_module_version,
			  &o->cuda_driver_version, &o->nvml_version };
	int ret;

	o->node_id = sql_col_int(r, 0);
	o->last_seen = sql_col_int(r, 3);
	o->report_time = sql_col_int(r, 4);
	o->gpu_count = sql_col_int(r, 17);
	o->gpu_count_max = sql_col_int(r, 18);
	o->interval_s = -1;
	o->cpu_iowait_pct = NAN;
	for (int i = 0; i < (int)(sizeof(text) / sizeof(text[0])); i++)
		if (text[i] && (ret = sql_col_strdup(r, i + 1, text[i])) < 0)
			return ret;
	if (with_report && (ret = sql_col_strdup(r, 19, &o->report)) < 0)
		return ret;
	return 0;
}

static int state_list_read(const struct sql_row *r, void *elem)
{
	return state_read(elem, r, 0);
}

struct state_get {
	struct agent_state o;
	int with_report;
};

static int state_get_read(const struct sql_row *r, void *ctx)
{
	struct state_get *g = ctx;
	int ret;

	if ((ret = state_read(&g->o, r, g->with_report)) < 0)
		return ret;
	g->o.health_facts = sql_col_int(r, 20) != 0;
	g->o.interval_s = sql_col_int_or(r, 21, -1);
	g->o.cpu_iowait_pct = sql_col_real(r, 22);
	g->o.gpu_hottest_c = sql_col_real(r, 23);
	g->o.gpu_power_w = sql_col_real(r, 24);
	g->o.gpu_utilization_avg_pct = sql_col_real(r, 25);
	return sql_col_strdup(r, 26, &g->o.rejected_fields);
}

struct word {
	char *buf;
	size_t len;
};

static int word_read(const struct sql_row *r, void *ctx)
{
	struct word *w = ctx;

	sql_col_word(r, 0, w->buf, w->len, "");
	return 0;
}

int store_agent_state_report_id(struct store *st, char *buf, size_t len, int64_t node_id)
{
	struct word w = {buf, len};
	int ret = sql_one(st, &STATE_REPORT_ID, SQL_ARGS(SQL_INT(node_id)), word_read, &w);

	if (ret == 0)
		return kiln_fail(KILN_ENOTFOUND, "store: node id %lld has no agent state",
				 (long long)node_id);
	return ret < 0 ? ret : 0;
}

int store_agent_report_get(struct store *st, char **out, int64_t node_id)
{
	int ret;

	*out = NULL;
	ret = sql_text(st, &REPORT_GET, SQL_ARGS(SQL_INT(node_id)), out);
	if (ret == 0)
		return kiln_fail(KILN_ENOTFOUND, "no agent report from node id %lld",
				 (long long)node_id);
	return ret < 0 ? ret : 0;
}

int store_agent_state_get(struct store *st, struct agent_state *out, int64_t node_id,
			  int with_report)
{
	struct state_get g = {.with_report = with_report};
	int ret = sql_one(st, &STATE_GET, SQL_ARGS(SQL_INT(node_id)), state_get_read, &g);

	if (ret == 0)
		ret = kiln_fail(KILN_ENOTFOUND, "no agent report from node id %lld",
				(long long)node_id);
	if (ret < 0) {
		agent_state_clear(&g.o);
		return ret;
	}
	*out = g.o;
	return 0;
}

int store_agent_state_put(struct store *st, const struct agent_state *a)
{
	int64_t ret;

	if (!a->report_id || !a->report)
		return kiln_fail(KILN_EINVAL, "store: agent state without report id or report");
	/* The version facts live in node_agent_summary (below): audit_facts (?20) is NULL. */
	ret = sql_exec(st, &STATE_PUT,
		       SQL_ARGS(SQL_INT(a->node_id), SQL_TEXT(a->report_id), SQL_INT(a->last_seen),
				SQL_INT(a->report_time), SQL_TEXT(a->boot_id), SQL_TEXT(a->hostname),
				SQL_TEXT(a->machine_id), SQL_TEXT(a->os), SQL_TEXT(a->kernel),
				SQL_TEXT(a->dmi_serial), SQL_TEXT(a->agent_version),
				SQL_TEXT(a->nvidia_status), SQL_TEXT(a->driver_version),
				SQL_TEXT(a->kernel_module_version),
				SQL_TEXT(a->cuda_driver_version), SQL_TEXT(a->nvml_version),
				SQL_INT(a->gpu_count), SQL_INT(a->gpu_count_max),
				SQL_TEXT(a->report), SQL_NULL, SQL_BOOL(a->health_facts),
				SQL_INT_KNOWN(a->health_facts ? a->interval_s : -1),
				SQL_REAL(a->health_facts ? a->cpu_iowait_pct : NAN),
				SQL_TEXT(a->rejected_fields)));
	if (ret == KILN_ENOTFOUND)
		return kiln_fail(KILN_ENOTFOUND, "store: agent state for node id %lld: no such node",
				 (long long)a->node_id);
	if (ret < 0)
		return (int)ret;
	ret = sql_exec(st, &SUMMARY_PUT,
		       SQL_ARGS(SQL_INT(a->node_id), SQL_INT(a->gpu_count_max),
				SQL_REAL(a->gpu_hottest_c), SQL_REAL(a->gpu_power_w),
				SQL_TEXT(a->audit_facts ? a->audit_facts : a->report),
				SQL_REAL(a->gpu_utilization_avg_pct), SQL_TEXT(a->gpu_processes)));
	return ret < 0 ? (int)ret : 0;
}

int store_agent_state_list(struct store *st, struct agent_state **out, size_t *out_count)
{
	return sql_list(st, &STATE_LIST, SQL_NO_ARGS, out, out_count, sizeof(**out),
			state_list_read, state_clear);
}

/* --- GPUs ---------------------------------------------------------------------------- */

static void gpu_clear(void *elem)
{
	struct agent_gpu *g = elem;

	free(g->uuid);
	free(g->name);
	free(g->serial);
	free(g->pci_bus_id);
}

void agent_gpu_list_free(struct agent_gpu *gpus, size_t count)
{
	sql_list_free(gpus, count, sizeof(*gpus), gpu_clear);
}

static const struct sql_stmt GPUS_GET = {
	STMT_AGENT_GPUS_GET, "reading GPUs",
	"SELECT gpu_index, uuid, name, serial, pci_bus_id, memory_total_bytes,"
	" ecc_volatile_uncorrected, ecc_aggregate_uncorrected,"
	" remapped_rows_failure, retired_pages_pending, remapped_rows_pending,"
	" remapped_rows_uncorrected, ecc_rose_at FROM node_gpus WHERE node_id = ?1"
	" ORDER BY gpu_index",
	NULL};

/* The insert and the update bind the same ?1..?14 (GPU_ARGS). */
static const struct sql_stmt GPU_INSERT = {
	STMT_AGENT_GPU_INSERT, "storing a GPU",
	"INSERT INTO node_gpus (node_id, gpu_index, uuid, name, serial, pci_bus_id,"
	" memory_total_bytes, ecc_volatile_uncorrected, ecc_aggregate_uncorrected,"
	" remapped_rows_failure, retired_pages_pending, remapped_rows_pending,"
	" remapped_rows_uncorrected, ecc_rose_at)"
	" VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
	NULL};

static const struct sql_stmt GPU_UPDATE = {
	STMT_AGENT_GPU_UPDATE, "updating a GPU",
	"UPDATE node_gpus SET uuid = ?3, name = ?4, serial = ?5, pci_bus_id = ?6,"
	" memory_total_bytes = ?7, ecc_volatile_uncorrected = ?8,"
	" ecc_aggregate_uncorrected = ?9, remapped_rows_failure = ?10,"
	" retired_pages_pending = ?11, remapped_rows_pending = ?12,"
	" remapped_rows_uncorrected = ?13, ecc_rose_at = ?14"
	" WHERE node_id = ?1 AND gpu_index = ?2",
	NULL};

static const struct sql_stmt GPUS_DELETE = {
	STMT_AGENT_GPUS_DELETE, "replacing GPUs", "DELETE FROM node_gpus WHERE node_id = ?1",
	NULL};

#define GPU_ARGS(node_id, g)                                                                     \
	SQL_ARGS(SQL_INT(node_id), SQL_INT((g)->index), SQL_TEXT((g)->uuid), SQL_TEXT((g)->name), \
		 SQL_TEXT((g)->serial), SQL_TEXT((g)->pci_bus_id),                              \
		 SQL_INT_KNOWN((g)->memory_total_bytes),                                          \
		 SQL_INT_KNOWN((g)->ecc_volatile_uncorrected),                                    \
		 SQL_INT_KNOWN((g)->ecc_aggregate_uncorrected),                                   \
		 SQL_INT_KNOWN((g)->remapped_rows_failure),                                       \
		 SQL_INT_KNOWN((g)->retired_pages_pending),                                       \
		 SQL_INT_KNOWN((g)->remapped_rows_pending),                                       \
		 SQL_INT_KNOWN((g)->remapped_rows_uncorrected), SQL_ID_OR_NULL((g)->ecc_rose_at))

static int gpu_read(const struct sql_row *r, void *elem)
{
	struct agent_gpu *g = elem;
	int ret;

	g->index = sql_col_int(r, 0);
	g->memory_total_bytes = sql_col_int_or(r, 5, -1);
	g->ecc_volatile_uncorrected = sql_col_int_or(r, 6, -1);
	g->ecc_aggregate_uncorrected = sql_col_int_or(r, 7, -1);
	g->remapped_rows_failure = (int)sql_col_int_or(r, 8, -1);
	g->retired_pages_pending = (int)sql_col_int_or(r, 9, -1);
	g->remapped_rows_pending = (int)sql_col_int_or(r, 10, -1);
	g->remapped_rows_uncorrected = sql_col_int_or(r, 11, -1);
	g->ecc_rose_at = sql_col_int(r, 12);
	g->memory_used_bytes = -1; /* telemetry: the report's */
	g->temperature_c = g->power_draw_w = g->utilization_gpu_pct = NAN;
	if ((ret = sql_col_strdup(r, 1, &g->uuid)) < 0 ||
	    (ret = sql_col_strdup(r, 2, &g->name)) < 0 ||
	    (ret = sql_col_strdup(r, 3, &g->serial)) < 0)
		return ret;
	return sql_col_strdup(r, 4, &g->pci_bus_id);
}

int store_agent_gpus_get(struct store *st, struct agent_gpu **out, size_t *out_count,
			 int64_t node_id)
{
	return sql_list(st, &GPUS_GET, SQL_ARGS(SQL_INT(node_id)), out, out_count, sizeof(**out),
			gpu_read, gpu_clear);
}

/* Writes one GPU row: a new one, or (update) the stored row of its index, which must exist. */
static int gpu_write(struct store *st, int64_t node_id, const struct agent_gpu *g, int update)
{
	int64_t n = sql_exec(st, update ? &GPU_UPDATE : &GPU_INSERT, GPU_ARGS(node_id, g));

	if (n < 0)
		return (int)n;
	if (update && n != 1)
		return kiln_fail(KILN_ENOTFOUND, "store: GPU %lld of node id %lld is not stored",
				 (long long)g->index, (long long)node_id);
	return 0;
}

static const struct sql_stmt GPU_SUMMARY = {
	STMT_AGENT_GPU_SUMMARY, "summing GPUs",
	"SELECT node_id, gpu_hottest_c, gpu_power_w, gpu_processes"
	" FROM node_agent_summary ORDER BY node_id",
	NULL};

static int gpu_summary_read(const struct sql_row *r, void *elem)
{
	struct agent_gpu_summary *s = elem;

	s->node_id = sql_col_int(r, 0);
	s->hottest_c = sql_col_real(r, 1);
	s->power_w = sql_col_real(r, 2);
	return sql_col_strdup(r, 3, &s->gpu_processes);
}

static void gpu_summary_clear(void *elem)
{
	free(((struct agent_gpu_summary *)elem)->gpu_processes);
}

int store_agent_gpu_summary_list(struct store *st, struct agent_gpu_summary **out,
				 size_t *out_count)
{
	return sql_list(st, &GPU_SUMMARY, SQL_NO_ARGS, out, out_count, sizeof(**out),
			gpu_summary_read, gpu_summary_clear);
}

void agent_gpu_summary_list_free(struct agent_gpu_summary *list, size_t count)
{
	sql_list_free(list, count, sizeof(*list), gpu_summary_clear);
}

static const struct sql_stmt AUDIT_ROWS = {
	STMT_AGENT_AUDIT_ROWS, "reading version facts",
	"SELECT node_id, gpu_count_max, audit_facts FROM node_agent_summary ORDER BY node_id",
	NULL};

static int audit_row_read(const struct sql_row *r, void *elem)
{
	struct agent_audit_row *a = elem;

	a->node_id = sql_col_int(r, 0);
	a->gpu_count_max = sql_col_int(r, 1);
	return sql_col_strdup(r, 2, &a->facts);
}

static void audit_row_clear(void *elem)
{
	free(((struct agent_audit_row *)elem)->facts);
}

void agent_audit_row_list_free(struct agent_audit_row *list, size_t count)
{
	sql_list_free(list, count, sizeof(*list), audit_row_clear);
}

int store_agent_audit_rows(struct store *st, struct agent_audit_row **out, size_t *out_count)
{
	return sql_list(st, &AUDIT_ROWS, SQL_NO_ARGS, out, out_count, sizeof(**out),
			audit_row_read, audit_row_clear);
}

static const struct sql_stmt SEEN_LIST = {
	STMT_AGENT_SEEN_LIST, "reading when agents reported",
	"SELECT node_id, last_seen, coalesce(interval_s, 0) FROM node_agent_state"
	" ORDER BY node_id",
	NULL};

static int seen_read(const struct sql_row *r, void *elem)
{
	struct agent_seen *s = elem;

	s->node_id = sql_col_int(r, 0);
	s->last_seen = sql_col_int(r, 1);
	s->interval_s = sql_col_int(r, 2);
	return 0;
}

int store_agent_seen_list(struct store *st, struct agent_seen **out, size_t *out_count)
{
	return sql_list(st, &SEEN_LIST, SQL_NO_ARGS, out, out_count, sizeof(**out), seen_read,
			NULL);
}

/* Replaces the node's GPUs with gpus[0..count) (atomic). */
static int gpus_replace(struct store *st, int64_t node_id, const struct agent_gpu *gpus,
			size_t count)
{
	int64_t ret;

	if ((ret = store_savepoint(st)) < 0)
		return (int)ret;
	if ((ret = sql_exec(st, &GPUS_DELETE, SQL_ARGS(SQL_INT(node_id)))) < 0)
		goto fail;
	for (size_t i = 0; i < count; i++)
		if ((ret = gpu_write(st, node_id, &gpus[i], 0)) < 0)
			goto fail;
	return store_release(st);
fail:
	store_rollback_to(st);
	return (int)ret;
}

static int str_same(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

/* An integer as its NULL-when-negative column reads back: -1 for every unknown. */
static int64_t int_stored(int64_t v)
{
	return v < 0 ? -1 : v;
}

/* The row g would write equals the stored row p (read back: -1 for NULL integers, 0 for a
 * NULL ecc_rose_at); the telemetry is not compared: it is not stored. */
static int gpu_same(const struct agent_gpu *g, const struct agent_gpu *p)
{
	return g->index == p->index && str_same(g->uuid, p->uuid) && str_same(g->name, p->name) &&
	       str_same(g->serial, p->serial) && str_same(g->pci_bus_id, p->pci_bus_id) &&
	       int_stored(g->memory_total_bytes) == p->memory_total_bytes &&
	       int_stored(g->ecc_volatile_uncorrected) == p->ecc_volatile_uncorrected &&
	       int_stored(g->ecc_aggregate_uncorrected) == p->ecc_aggregate_uncorrected &&
	       int_stored(g->remapped_rows_failure) == p->remapped_rows_failure &&
	       int_stored(g->retired_pages_pending) == p->retired_pages_pending &&
	       int_stored(g->remapped_rows_pending) == p->remapped_rows_pending &&
	       int_stored(g->remapped_rows_uncorrected) == p->remapped_rows_uncorrected &&
	       (g->ecc_rose_at > 0 ? g->ecc_rose_at : 0) == p->ecc_rose_at;
}

int store_agent_gpus_update(struct store *st, int64_t node_id, const struct agent_gpu *gpus,
			    size_t count, const struct agent_gpu *prev, size_t nprev,
			    size_t *out_written)
{
	size_t written = 0;
	int ret;

	for (size_t i = 0; count == nprev && i < count; i++)
		if (gpus[i].index != prev[i].index)
			nprev = count + 1; /* another set or order of GPUs: replace them all */
	if (count != nprev) {
		if ((ret = gpus_replace(st, node_id, gpus, count)) < 0)
			return ret;
		written = count;
	} else {
		if ((ret = store_savepoint(st)) < 0)
			return ret;
		for (size_t i = 0; i < count; i++) {
			if (gpu_same(&gpus[i], &prev[i]))
				continue;
			if ((ret = gpu_write(st, node_id, &gpus[i], 1)) < 0) {
				store_rollback_to(st);
				return ret;
			}
			written++;
		}
		if ((ret = store_release(st)) < 0) {
			store_rollback_to(st);
			return ret;
		}
	}
	if (out_written)
		*out_written = written;
	return 0;
}

/* --- history ------------------------------------------------------------------------- */

static const struct sql_stmt HISTORY_INSERT = {
	STMT_AGENT_HISTORY_INSERT, "adding a history row",
	"INSERT INTO agent_history (node_id, time, received_at, report_id,"
	" boot_id, nvidia_status, driver_version, cuda_driver_version,"
	" gpu_count, temperature_max_c, power_draw_total_w,"
	" utilization_avg_pct, ecc_uncorrected, xid_count, gpus)"
	" VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
	NULL};

/* Bounded batches keep each write transaction short under constant ingest: ?1 = before,
 * ?2 = the batch. */
static const struct sql_stmt HISTORY_PRUNE = {
	STMT_AGENT_HISTORY_PRUNE, "pruning agent history",
	"DELETE FROM agent_history WHERE id IN (SELECT id FROM agent_history"
	" WHERE received_at < ?1 ORDER BY received_at LIMIT ?2)",
	NULL};

/* report_id is the key of agent_reports_seen. */
static const struct sql_stmt SEEN_PRUNE = {
	STMT_AGENT_SEEN_PRUNE, "pruning agent history",
	"DELETE FROM agent_reports_seen WHERE report_id IN (SELECT report_id"
	" FROM agent_reports_seen WHERE time < ?1 ORDER BY time LIMIT ?2)",
	NULL};

static const struct sql_stmt COUNT_HISTORY = {
	STMT_AGENT_COUNT_HISTORY, "counting agent rows",
	"SELECT count(*) FROM agent_history WHERE node_id = ?1", NULL};

static const struct sql_stmt COUNT_SEEN = {
	STMT_AGENT_COUNT_SEEN, "counting agent rows",
	"SELECT count(*) FROM agent_reports_seen WHERE node_id = ?1", NULL};

int store_agent_history_insert(struct store *st, const struct agent_history_row *h)
{
	int64_t ret = sql_exec(
		st, &HISTORY_INSERT,
		SQL_ARGS(SQL_INT(h->node_id), SQL_INT(h->time), SQL_INT(h->received_at),
			 SQL_TEXT(h->report_id), SQL_TEXT(h->boot_id), SQL_TEXT(h->nvidia_status),
			 SQL_TEXT(h->driver_version), SQL_TEXT(h->cuda_driver_version),
			 SQL_INT(h->gpu_count), SQL_REAL(h->temperature_max_c),
			 SQL_REAL(h->power_draw_total_w), SQL_REAL(h->utilization_avg_pct),
			 SQL_INT_KNOWN(h->ecc_uncorrected), SQL_INT(h->xid_count),
			 SQL_TEXT(h->gpus)));

	return ret < 0 ? (int)ret : 0;
}

int store_agent_history_prune(struct store *st, int64_t before, int limit, int *out_deleted)
{
	/* "At most limit": 0 deletes nothing; a negative limit (none) binds no limit. */
	const struct sql_stmt *q[] = {&HISTORY_PRUNE, &SEEN_PRUNE};
	int64_t deleted = 0, n;

	for (size_t i = 0; limit != 0 && i < sizeof(q) / sizeof(q[0]); i++) {
		n = sql_exec(st, q[i],
			     SQL_ARGS(SQL_INT(before), SQL_LIMIT(limit < 0 ? 0 : (size_t)limit)));
		if (n < 0)
			return (int)n;
		deleted += n;
	}
	if (out_deleted)
		*out_deleted = (int)deleted;
	return 0;
}

int store_agent_counts(struct store *st, int64_t node_id, int64_t *out_history,
		       int64_t *out_seen)
{
	int ret;

	if ((ret = sql_int(st, &COUNT_HISTORY, SQL_ARGS(SQL_INT(node_id)), out_history)) < 0 ||
	    (ret = sql_int(st, &COUNT_SEEN, SQL_ARGS(SQL_INT(node_id)), out_seen)) < 0)
		return ret;
	return 0;
}

/* --- nodes as agents find them ------------------------------------------------------ */

static const struct sql_stmt BMC_SERIAL_SET = {
	STMT_NODE_BMC_SERIAL_SET, "setting a BMC serial",
	"UPDATE nodes SET bmc_serial = ?1 WHERE name = ?2", NULL};

static const struct sql_stmt FIND_BY_SERIAL = {
	STMT_NODE_FIND_BY_SERIAL, "finding a node by serial",
	"SELECT id, name FROM nodes WHERE bmc_serial = ?1 LIMIT 2", NULL};

static const struct sql_stmt BMC_IDS_SET = {
	STMT_NODE_BMC_IDS_SET, "setting a node's BMC identity",
	"UPDATE nodes SET bmc_serial = ?1, bmc_uuid = lower(CAST(?2 AS TEXT)), bmc_sku = ?3,"
	" bmc_chassis_serial = ?4 WHERE name = ?5",
	NULL};

static const struct sql_stmt FIND_BY_UUID = {
	STMT_NODE_FIND_BY_UUID, "finding a node by system UUID",
	"SELECT id, name FROM nodes WHERE bmc_uuid IN (?1, ?2, ?3) LIMIT 2", NULL};

/* The UUID's IN list and the serials' OR: each value once per node. */
static const struct sql_stmt FIND_BY_BMC_SERIAL = {
	STMT_NODE_FIND_BY_BMC_SERIAL, "finding a node by BMC serial",
	"SELECT id, name FROM nodes WHERE lower(bmc_serial) = lower(?1)"
	" OR lower(bmc_sku) = lower(?1) OR lower(bmc_chassis_serial) = lower(?1) LIMIT 2",
	NULL};

/* A node with agent tokens or a running reinstall job: always one row. */
static const struct sql_stmt ENROLL_FACTS = {
	STMT_ENROLL_FACTS, "reading a node's enrollment facts",
	"SELECT CASE WHEN EXISTS (SELECT 1 FROM agent_tokens WHERE node_id = ?1"
	" AND revoked_at IS NULL) THEN 1 ELSE 0 END, coalesce(j.id, 0),"
	" coalesce(j.enrolled_at, 0) FROM (SELECT 1 AS one) AS o"
	" LEFT JOIN jobs j ON j.node_id = ?1 AND j.state = 'running'",
	NULL};

static const struct sql_stmt JOB_ENROLL_TAKE = {
	STMT_JOB_ENROLL_TAKE, "using a reinstall job's enrollment",
	"UPDATE jobs SET enrolled_at = ?2 WHERE id = ?1 AND enrolled_at = 0"
	" AND state = 'running'",
	NULL};

int store_node_bmc_serial_set(struct store *st, const char *name, const char *serial)
{
	int64_t n = sql_exec(st, &BMC_SERIAL_SET,
			     SQL_ARGS(SQL_TEXT(serial && *serial ? serial : NULL), SQL_TEXT(name)));

	if (n == 0)
		return kiln_fail(KILN_ENOTFOUND, "no node '%s'", name);
	return n < 0 ? (int)n : 0;
}

/* The first of the rows (id, name) a statement returns, and how many it returned. */
struct node_found {
	int64_t id;
	char *name;
	int rows;
};

static int node_found_read(const struct sql_row *r, void *ctx)
{
	struct node_found *f = ctx;

	if (f->rows++ > 0)
		return 0;
	f->id = sql_col_int(r, 0);
	return sql_col_strdup(r, 1, &f->name);
}

static const char *text_or_null(const char *s)
{
	return s && *s ? s : NULL;
}

int store_node_bmc_ids_set(struct store *st, const char *name, const struct node_bmc_ids *ids)
{
	int64_t n = sql_exec(st, &BMC_IDS_SET,
			     SQL_ARGS(SQL_TEXT(text_or_null(ids->serial)),
				      SQL_TEXT(text_or_null(ids->uuid)),
				      SQL_TEXT(text_or_null(ids->sku)),
				      SQL_TEXT(text_or_null(ids->chassis_serial)), SQL_TEXT(name)));

	if (n == 0)
		return kiln_fail(KILN_ENOTFOUND, "no node '%s'", name);
	return n < 0 ? (int)n : 0;
}

/* The one node a find statement returns: see store_node_find_by_bmc. */
static int find_one(struct store *st, int64_t *out_id, char **out_name, const struct sql_stmt *q,
		    const struct sql_arg *args, size_t nargs, const char *what)
{
	struct node_found f = {0, NULL, 0};
	int ret = sql_run(st, q, args, nargs, node_found_read, &f, NULL);

	if (ret == 0)
		ret = kiln_fail(KILN_ENOTFOUND, "no node with BMC %s", what);
	else if (ret > 1)
		ret = kiln_fail(KILN_EEXISTS, "several nodes have BMC %s", what);
	if (ret < 0) {
		free(f.name);
		return ret;
	}
	*out_id = f.id;
	*out_name = f.name;
	return 0;
}

int store_node_find_by_serial(struct store *st, int64_t *out_id, char **out_name,
			      const char *serial)
{
	return find_one(st, out_id, out_name, &FIND_BY_SERIAL, SQL_ARGS(SQL_TEXT(serial)),
			"serial");
}

int store_node_find_by_bmc(struct store *st, int64_t *out_id, char **out_name,
			   const char *const uuid_forms[3], const char *serial)
{
	int ret = KILN_ENOTFOUND;

	if (uuid_forms && (uuid_forms[0] || uuid_forms[1] || uuid_forms[2])) {
		ret = find_one(st, out_id, out_name, &FIND_BY_UUID,
			       SQL_ARGS(SQL_TEXT(uuid_forms[0]), SQL_TEXT(uuid_forms[1]),
					SQL_TEXT(uuid_forms[2])), "system UUID");
		if (ret != KILN_ENOTFOUND)
			return ret;
	}
	if (serial && *serial) {
		if (ret == KILN_ENOTFOUND)
			kiln_error_clear();
		ret = find_one(st, out_id, out_name, &FIND_BY_BMC_SERIAL,
			       SQL_ARGS(SQL_TEXT(serial)), "serial, SKU or chassis serial");
	}
	return ret;
}

struct enroll_facts {
	int has_token;
	int64_t job;
	int job_enrolled;
};

static int enroll_facts_read(const struct sql_row *r, void *ctx)
{
	struct enroll_facts *e = ctx;

	e->has_token = (int)sql_col_int(r, 0);
	e->job = sql_col_int(r, 1);
	e->job_enrolled = sql_col_int(r, 2) > 0;
	return 0;
}

int store_agent_enroll_facts(struct store *st, int *out_has_token, int64_t *out_job,
			     int *out_job_enrolled, int64_t node_id)
{
	struct enroll_facts e = {0, 0, 0};
	int ret = sql_one(st, &ENROLL_FACTS, SQL_ARGS(SQL_INT(node_id)), enroll_facts_read, &e);

	if (ret == 0)
		return kiln_fail(KILN_ERROR, "store: reading a node's enrollment facts: no row");
	if (ret < 0)
		return ret;
	*out_has_token = e.has_token;
	*out_job = e.job;
	*out_job_enrolled = e.job_enrolled;
	return 0;
}

int store_job_enroll_take(struct store *st, int64_t job_id)
{
	int64_t n = sql_exec(st, &JOB_ENROLL_TAKE,
			     SQL_ARGS(SQL_INT(job_id), SQL_INT(store_now(st))));

	if (n == 0)
		return kiln_fail(KILN_EEXISTS, "job %lld already took its enrollment",
				 (long long)job_id);
	return n < 0 ? (int)n : 0;
}

/* --- enrollment tokens --------------------------------------------------------------- */

static void enroll_token_clear(void *elem)
{
	free(((struct enroll_token *)elem)->name);
}

void enroll_token_list_free(struct enroll_token *list, size_t count)
{
	sql_list_free(list, count, sizeof(*list), enroll_token_clear);
}

static const struct sql_stmt ENROLL_TOKEN_INSERT = {
	STMT_ENROLL_TOKEN_INSERT, "adding an enrollment token",
	"INSERT INTO enroll_tokens (name, hash, created_at) VALUES (?1, ?2, ?3) RETURNING id",
	NULL};

static const struct sql_stmt ENROLL_TOKEN_LOOKUP = {
	STMT_ENROLL_TOKEN_LOOKUP, "looking up an enrollment token",
	"SELECT id FROM enroll_tokens WHERE hash = ?1 AND revoked_at IS NULL", NULL};

static const struct sql_stmt ENROLL_TOKEN_TOUCH = {
	STMT_ENROLL_TOKEN_TOUCH, "recording enrollment token use",
	"UPDATE enroll_tokens SET last_used_at = ?1 WHERE id = ?2"
	" AND (last_used_at IS NULL OR last_used_at <= ?3)",
	NULL};

static const struct sql_stmt ENROLL_TOKEN_LIST = {
	STMT_ENROLL_TOKEN_LIST, "listing enrollment tokens",
	"SELECT id, name, created_at, coalesce(last_used_at, 0),"
	" CASE WHEN revoked_at IS NOT NULL THEN 1 ELSE 0 END FROM enroll_tokens ORDER BY id",
	NULL};

static const struct sql_stmt ENROLL_TOKEN_REVOKE = {
	STMT_ENROLL_TOKEN_REVOKE, "revoking an enrollment token",
	"UPDATE enroll_tokens SET revoked_at = coalesce(revoked_at, ?1) WHERE id = ?2", NULL};

int store_enroll_token_insert(struct store *st, int64_t *out_id, const char *name,
			      const unsigned char hash[32])
{
	int64_t id = 0;
	int ret = sql_int(st, &ENROLL_TOKEN_INSERT,
			  SQL_ARGS(SQL_TEXT(name), SQL_BLOB(hash, 32), SQL_INT(store_now(st))), &id);

	if (ret < 0)
		return ret;
	*out_id = id;
	return 0;
}

int store_enroll_token_lookup(struct store *st, int64_t *out_id, const unsigned char hash[32])
{
	int64_t id = 0, now = store_now(st), n;
	int ret = sql_int(st, &ENROLL_TOKEN_LOOKUP, SQL_ARGS(SQL_BLOB(hash, 32)), &id);

	if (ret == 0)
		return kiln_fail(KILN_ENOTFOUND, "unknown or revoked enrollment token");
	if (ret < 0)
		return ret;
	/* A busy database only delays the record of use. */
	n = sql_exec(st, &ENROLL_TOKEN_TOUCH,
		     SQL_ARGS(SQL_INT(now), SQL_INT(id), SQL_INT(now - TOUCH_INTERVAL_S)));
	if (n < 0 && n != KILN_EBUSY)
		return (int)n;
	*out_id = id;
	return 0;
}

static int enroll_token_read(const struct sql_row *r, void *elem)
{
	struct enroll_token *t = elem;

	t->id = sql_col_int(r, 0);
	t->created_at = sql_col_int(r, 2);
	t->last_used_at = sql_col_int(r, 3);
	t->revoked = (int)sql_col_int(r, 4);
	return sql_col_strdup(r, 1, &t->name);
}

int store_enroll_token_list(struct store *st, struct enroll_token **out, size_t *out_count)
{
	return sql_list(st, &ENROLL_TOKEN_LIST, SQL_NO_ARGS, out, out_count, sizeof(**out),
			enroll_token_read, enroll_token_clear);
}

/* A write's outcome: changing no row is KILN_ENOTFOUND, "no <noun> <id>". */
static int changed(int64_t n, const char *noun, int64_t id)
{
	if (n == 0)
		return kiln_fail(KILN_ENOTFOUND, "no %s %lld", noun, (long long)id);
	return n < 0 ? (int)n : 0;
}

int store_enroll_token_revoke(struct store *st, int64_t id)
{
	return changed(sql_exec(st, &ENROLL_TOKEN_REVOKE,
				SQL_ARGS(SQL_INT(store_now(st)), SQL_INT(id))),
		       "enrollment token", id);
}

/* --- pending agents ------------------------------------------------------------------ */

static void pending_agent_clear(void *elem)
{
	struct pending_agent *p = elem;

	free(p->dmi_serial);
	free(p->hostname);
	free(p->machine_id);
	free(p->node);
	free(p->candidate);
	free(p->reason);
}

void pending_agent_list_free(struct pending_agent *list, size_t count)
{
	sql_list_free(list, count, sizeof(*list), pending_agent_clear);
}

static const struct sql_stmt PENDING_COUNT = {
	STMT_PENDING_COUNT, "counting pending agents", "SELECT count(*) FROM pending_agents", NULL};

/* The upsert either updates an existing row or adds one; ?6 = 0 refuses only the adding. */
static const struct sql_stmt PENDING_UPSERT = {
	STMT_PENDING_UPSERT, "recording a pending agent",
	"INSERT INTO pending_agents (dmi_serial, hostname, machine_id,"
	" enroll_token_id, first_seen, last_seen, candidate_id, reason)"
	" SELECT ?1, ?2, ?3, ?4, ?5, ?5, ?7, ?8 WHERE ?6 = 1 OR EXISTS (SELECT 1 FROM"
	" pending_agents WHERE dmi_serial = ?1 AND hostname = ?2 AND machine_id = ?3)"
	" ON CONFLICT (dmi_serial, hostname, machine_id) DO UPDATE SET"
	" last_seen = excluded.last_seen, attempts = pending_agents.attempts + 1,"
	" enroll_token_id = excluded.enroll_token_id,"
	" candidate_id = excluded.candidate_id, reason = excluded.reason"
	" RETURNING id, coalesce(node_id, 0)",
	NULL};

static const struct sql_stmt PENDING_LIST = {
	STMT_PENDING_LIST, "listing pending agents",
	"SELECT p.id, p.dmi_serial, p.hostname, p.machine_id, p.first_seen,"
	" p.last_seen, p.attempts, coalesce(p.node_id, 0), n.name, c.name, p.reason"
	" FROM pending_agents p LEFT JOIN nodes n ON n.id = p.node_id"
	" LEFT JOIN nodes c ON c.id = p.candidate_id ORDER BY p.id",
	NULL};

static const struct sql_stmt PENDING_ACCEPT = {
	STMT_PENDING_ACCEPT, "accepting a pending agent",
	"UPDATE pending_agents SET node_id = ?1, accepted_at = ?2 WHERE id = ?3", NULL};

static const struct sql_stmt PENDING_FORGET = {
	STMT_PENDING_FORGET, "forgetting a pending agent",
	"DELETE FROM pending_agents WHERE dmi_serial = ?1 AND hostname = ?2 AND machine_id = ?3",
	NULL};

static const struct sql_stmt PENDING_DELETE = {
	STMT_PENDING_DELETE, "deleting a pending agent", "DELETE FROM pending_agents WHERE id = ?1",
	NULL};

/* The id and node id (0 when none) of the row a pending upsert returned. */
struct pending_ids {
	int64_t id, node_id;
};

static int pending_ids_read(const struct sql_row *r, void *ctx)
{
	struct pending_ids *p = ctx;

	p->id = sql_col_int(r, 0);
	p->node_id = sql_col_int(r, 1);
	return 0;
}

int store_pending_agent_record(struct store *st, int64_t *out_id, int64_t *out_node_id,
			       const char *dmi_serial, const char *hostname,
			       const char *machine_id, int64_t enroll_token_id,
			       int64_t candidate_id, const char *reason, int max_rows)
{
	struct pending_ids p = {0, 0};
	int64_t rows = 0;
	int ret;

	if ((ret = sql_int(st, &PENDING_COUNT, SQL_NO_ARGS, &rows)) < 0)
		return ret;
	ret = sql_one(st, &PENDING_UPSERT,
		      SQL_ARGS(SQL_TEXT(dmi_serial ? dmi_serial : ""),
			       SQL_TEXT(hostname ? hostname : ""),
			       SQL_TEXT(machine_id ? machine_id : ""),
			       SQL_ID_OR_NULL(enroll_token_id), SQL_INT(store_now(st)),
			       SQL_BOOL(rows < max_rows), SQL_ID_OR_NULL(candidate_id),
			       SQL_TEXT(reason)),
		      pending_ids_read, &p);
	if (ret == 0)
		return kiln_fail(KILN_EBUSY, "%lld agents already wait for an admin; accept or"
				 " delete some first", (long long)rows);
	if (ret < 0)
		return ret;
	*out_id = p.id;
	*out_node_id = p.node_id;
	return 0;
}

static int pending_agent_read(const struct sql_row *r, void *elem)
{
	struct pending_agent *p = elem;
	int ret;

	p->id = sql_col_int(r, 0);
	p->first_seen = sql_col_int(r, 4);
	p->last_seen = sql_col_int(r, 5);
	p->attempts = sql_col_int(r, 6);
	p->node_id = sql_col_int(r, 7);
	if ((ret = sql_col_strdup(r, 1, &p->dmi_serial)) < 0 ||
	    (ret = sql_col_strdup(r, 2, &p->hostname)) < 0 ||
	    (ret = sql_col_strdup(r, 3, &p->machine_id)) < 0 ||
	    (ret = sql_col_strdup(r, 8, &p->node)) < 0 ||
	    (ret = sql_col_strdup(r, 9, &p->candidate)) < 0)
		return ret;
	return sql_col_strdup(r, 10, &p->reason);
}

int store_pending_agent_list(struct store *st, struct pending_agent **out, size_t *out_count)
{
	return sql_list(st, &PENDING_LIST, SQL_NO_ARGS, out, out_count, sizeof(**out),
			pending_agent_read, pending_agent_clear);
}

int store_pending_agent_accept(struct store *st, int64_t id, int64_t node_id)
{
	return changed(sql_exec(st, &PENDING_ACCEPT,
				SQL_ARGS(SQL_INT(node_id), SQL_INT(store_now(st)), SQL_INT(id))),
		       "pending agent", id);
}

int store_pending_agent_forget(struct store *st, const char *dmi_serial, const char *hostname,
			       const char *machine_id)
{
	int64_t n = sql_exec(st, &PENDING_FORGET,
			     SQL_ARGS(SQL_TEXT(dmi_serial ? dmi_serial : ""),
				      SQL_TEXT(hostname ? hostname : ""),
				      SQL_TEXT(machine_id ? machine_id : "")));

	return n < 0 ? (int)n : 0;
}

int store_pending_agent_delete(struct store *st, int64_t id)
{
	return changed(sql_exec(st, &PENDING_DELETE, SQL_ARGS(SQL_INT(id))), "pending agent", id);
}

/* --- reports refused whole ------------------------------------------------------------ */

void agent_refusal_clear(struct agent_refusal *r)
{
	if (!r)
		return;
	free(r->reason);
	memset(r, 0, sizeof(*r));
}

static const struct sql_stmt REFUSAL_NOTE = {
	STMT_AGENT_REFUSAL_NOTE, "noting a refused agent report",
	"INSERT INTO agent_refusals (node_id, reason, refused, first_at, last_at)"
	" VALUES (?1, ?2, 1, ?3, ?3) ON CONFLICT (node_id) DO UPDATE SET"
	" reason = excluded.reason, refused = agent_refusals.refused + 1,"
	" last_at = excluded.last_at",
	NULL};

static const struct sql_stmt REFUSAL_GET = {
	STMT_AGENT_REFUSAL_GET, "reading refused agent reports",
	"SELECT reason, refused, first_at, last_at FROM agent_refusals WHERE node_id = ?1", NULL};

int store_agent_refusal_note(struct store *st, int64_t node_id, const char *reason)
{
	int64_t n = sql_exec(st, &REFUSAL_NOTE,
			     SQL_ARGS(SQL_INT(node_id), SQL_TEXT(reason), SQL_INT(store_now(st))));

	return n < 0 ? (int)n : 0;
}

static int refusal_read(const struct sql_row *r, void *ctx)
{
	struct agent_refusal *o = ctx;

	o->refused = sql_col_int(r, 1);
	o->first_at = sql_col_int(r, 2);
	o->last_at = sql_col_int(r, 3);
	return sql_col_strdup(r, 0, &o->reason);
}

int store_agent_refusal_get(struct store *st, struct agent_refusal *out, int64_t node_id)
{
	struct agent_refusal o = {0};
	int ret = sql_one(st, &REFUSAL_GET, SQL_ARGS(SQL_INT(node_id)), refusal_read, &o);

	if (ret < 0) {
		agent_refusal_clear(&o);
		return ret;
	}
	*out = o;
	return 0;
}
