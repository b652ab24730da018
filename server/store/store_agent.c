/* SPDX-License-Identifier: Apache-2.0 */
/* Agent reports in the store: seen report ids, each node's latest state and GPUs, the history.
 * How an agent finds its node (enrollment, pending agents, identity refusals):
 * store_enroll.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/error.h"
#include "store/store_internal.h"

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

int store_agent_report_claim_identity(struct store *st, int *out_new,
				      struct agent_identity *out, const char *report_id,
				      int64_t node_id)
{
	int64_t claimed = -1;
	int ret = sql_exec_later(st, &REPORT_CLAIM,
				 SQL_ARGS(SQL_TEXT(report_id), SQL_INT(node_id),
					  SQL_INT(store_now(st))),
				 &claimed);

	/* the identity read waits, and so the claim's answer has come before it returns */
	if (ret < 0 || (ret = store_agent_identity_get(st, out, node_id)) < 0)
		return ret;
	*out_new = claimed > 0;
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
	free(s->health_cut);
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

static const struct sql_stmt REPORT_GET = {
	STMT_AGENT_REPORT_GET, "reading an agent report",
	"SELECT report FROM node_agent_state WHERE node_id = ?1", NULL};

static const struct sql_stmt STATE_GET = {
	STMT_AGENT_STATE_GET, "reading agent state",
	"SELECT " STATE_COLUMNS ", a.report, a.health_facts, a.interval_s,"
	" a.cpu_iowait_pct, m.gpu_hottest_c, m.gpu_power_w,"
	" m.gpu_utilization_avg_pct, a.rejected_fields, a.health_cut FROM node_agent_state a"
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
	" audit_facts, health_facts, interval_s, cpu_iowait_pct, rejected_fields, health_cut)"
	" VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14,"
	" ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25)"
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
	" rejected_fields = excluded.rejected_fields, health_cut = excluded.health_cut",
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
	if ((ret = sql_col_strdup(r, 26, &g->o.rejected_fields)) < 0)
		return ret;
	return sql_col_strdup(r, 27, &g->o.health_cut);
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
	int ret;

	if (!a->report_id || !a->report)
		return kiln_fail(KILN_EINVAL, "store: agent state without report id or report");
	/* The version facts live in node_agent_summary (below): audit_facts (?20) is NULL. */
	ret = sql_write(st, &STATE_PUT,
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
				SQL_TEXT(a->rejected_fields), SQL_TEXT(a->health_cut)));
	if (ret == KILN_ENOTFOUND)
		return kiln_fail(KILN_ENOTFOUND, "store: agent state for node id %lld: no such node",
				 (long long)a->node_id);
	if (ret < 0)
		return ret;
	ret = sql_write(st, &SUMMARY_PUT,
		       SQL_ARGS(SQL_INT(a->node_id), SQL_INT(a->gpu_count_max),
				SQL_REAL(a->gpu_hottest_c), SQL_REAL(a->gpu_power_w),
				SQL_TEXT(a->audit_facts ? a->audit_facts : a->report),
				SQL_REAL(a->gpu_utilization_avg_pct), SQL_TEXT(a->gpu_processes)));
	return ret;
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
	int64_t n;

	if (!update) /* a new row: nothing to count */
		return sql_write(st, &GPU_INSERT, GPU_ARGS(node_id, g));
	n = sql_exec(st, &GPU_UPDATE, GPU_ARGS(node_id, g));
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
	if ((ret = sql_write(st, &GPUS_DELETE, SQL_ARGS(SQL_INT(node_id)))) < 0)
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
		size_t i = 0;

		while (i < count && gpu_same(&gpus[i], &prev[i]))
			i++;
		if (i == count) /* the usual report: no GPU row changes, no statement */
			goto done;
		if ((ret = store_savepoint(st)) < 0)
			return ret;
		for (; i < count; i++) {
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
done:
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
	int ret = sql_write(
		st, &HISTORY_INSERT,
		SQL_ARGS(SQL_INT(h->node_id), SQL_INT(h->time), SQL_INT(h->received_at),
			 SQL_TEXT(h->report_id), SQL_TEXT(h->boot_id), SQL_TEXT(h->nvidia_status),
			 SQL_TEXT(h->driver_version), SQL_TEXT(h->cuda_driver_version),
			 SQL_INT(h->gpu_count), SQL_REAL(h->temperature_max_c),
			 SQL_REAL(h->power_draw_total_w), SQL_REAL(h->utilization_avg_pct),
			 SQL_INT_KNOWN(h->ecc_uncorrected), SQL_INT(h->xid_count),
			 SQL_TEXT(h->gpus)));

	return ret;
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
