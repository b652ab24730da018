/* Agent reports in the store: seen report ids, each node's latest state and GPUs, the history,
 * fleet enrollment tokens and pending agents. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/error.h"
#include "store/store_internal.h"

#define TOUCH_INTERVAL_S 60

/* Binds an integer, NULL when negative (unknown). */
static void bind_int_or_null(sqlite3_stmt *s, int idx, int64_t v)
{
	if (v < 0)
		sqlite3_bind_null(s, idx);
	else
		sqlite3_bind_int64(s, idx, v);
}

static void bind_real_or_null(sqlite3_stmt *s, int idx, double v)
{
	if (isnan(v))
		sqlite3_bind_null(s, idx);
	else
		sqlite3_bind_double(s, idx, v);
}

static int64_t column_int_or(sqlite3_stmt *s, int idx, int64_t dflt)
{
	return sqlite3_column_type(s, idx) == SQLITE_NULL ? dflt : sqlite3_column_int64(s, idx);
}

/* --- report ids ---------------------------------------------------------------------- */

int store_agent_report_claim(struct store *st, int *out_new, const char *report_id,
			     int64_t node_id)
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_AGENT_REPORT_CLAIM,
			      "INSERT INTO agent_reports_seen (report_id, node_id, time)"
			      " VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING")) < 0)
		return ret;
	store_bind_text(s, 1, report_id);
	sqlite3_bind_int64(s, 2, node_id);
	sqlite3_bind_int64(s, 3, store_now(st));
	rc = sqlite3_step(s);
	if (rc != SQLITE_DONE)
		ret = store_fail(st, rc, "recording a report id");
	else
		*out_new = sqlite3_changes(st->db) > 0;
	store_stmt_done(s);
	return ret;
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

void agent_state_list_free(struct agent_state *list, size_t count)
{
	if (!list)
		return;
	for (size_t i = 0; i < count; i++)
		agent_state_clear(&list[i]);
	free(list);
}

#define STATE_COLUMNS                                                                        \
	"a.node_id, n.name, a.report_id, a.last_seen, a.report_time, a.boot_id, a.hostname,"  \
	" a.machine_id, a.os, a.kernel, a.dmi_serial, a.agent_version, a.nvidia_status,"      \
	" a.driver_version, a.kernel_module_version, a.cuda_driver_version, a.nvml_version,"  \
	" a.gpu_count, a.gpu_count_max"

/* Reads the STATE_COLUMNS of the current row (and the report at column 19 when asked). */
static int state_read(struct agent_state *o, sqlite3_stmt *s, int with_report)
{
	char **text[] = { &o->node, &o->report_id, NULL, NULL, &o->boot_id, &o->hostname,
			  &o->machine_id, &o->os, &o->kernel, &o->dmi_serial, &o->agent_version,
			  &o->nvidia_status, &o->driver_version, &o->kernel_module_version,
			  &o->cuda_driver_version, &o->nvml_version };
	int ret;

	o->node_id = sqlite3_column_int64(s, 0);
	o->last_seen = sqlite3_column_int64(s, 3);
	o->report_time = sqlite3_column_int64(s, 4);
	o->gpu_count = sqlite3_column_int64(s, 17);
	o->gpu_count_max = sqlite3_column_int64(s, 18);
	for (int i = 0; i < (int)(sizeof(text) / sizeof(text[0])); i++)
		if (text[i] && (ret = store_column_strdup(text[i], s, i + 1)) < 0)
			return ret;
	if (with_report && (ret = store_column_strdup(&o->report, s, 19)) < 0)
		return ret;
	o->interval_s = -1;
	o->cpu_iowait_pct = NAN;
	return 0;
}

int store_agent_state_report_id(struct store *st, char *buf, size_t len, int64_t node_id)
{
	sqlite3_stmt *s = NULL;
	const unsigned char *id;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_AGENT_STATE_REPORT_ID,
			      "SELECT report_id FROM node_agent_state WHERE node_id = ?1")) < 0)
		return ret;
	sqlite3_bind_int64(s, 1, node_id);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		id = sqlite3_column_text(s, 0);
		snprintf(buf, len, "%s", id ? (const char *)id : "");
	} else if (rc == SQLITE_DONE) {
		ret = kiln_fail(KILN_ENOTFOUND, "store: node id %lld has no agent state",
				(long long)node_id);
	} else {
		ret = store_fail(st, rc, "reading agent state");
	}
	store_stmt_done(s);
	return ret;
}

int store_agent_report_get(struct store *st, char **out, int64_t node_id)
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	*out = NULL;
	if ((ret = store_stmt(st, &s, STMT_AGENT_REPORT_GET,
			      "SELECT report FROM node_agent_state WHERE node_id = ?1")) < 0)
		return ret;
	sqlite3_bind_int64(s, 1, node_id);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		ret = store_column_strdup(out, s, 0);
	else if (rc == SQLITE_DONE)
		ret = kiln_fail(KILN_ENOTFOUND, "no agent report from node id %lld",
				(long long)node_id);
	else
		ret = store_fail(st, rc, "reading an agent report");
	store_stmt_done(s);
	return ret;
}

int store_agent_state_get(struct store *st, struct agent_state *out, int64_t node_id,
			  int with_report)
{
	struct agent_state o = { 0 };
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_AGENT_STATE_GET,
			      "SELECT " STATE_COLUMNS ", a.report, a.health_facts, a.interval_s,"
			      " a.cpu_iowait_pct, m.gpu_hottest_c, m.gpu_power_w,"
			      " m.gpu_utilization_avg_pct, a.rejected_fields FROM node_agent_state a"
			      " JOIN nodes n ON n.id = a.node_id"
			      " LEFT JOIN node_agent_summary m ON m.node_id = a.node_id"
			      " WHERE a.node_id = ?1")) < 0)
		return ret;
	sqlite3_bind_int64(s, 1, node_id);
	rc = sqlite3_step(s);
	if (rc == SQLITE_DONE) {
		ret = kiln_fail(KILN_ENOTFOUND, "no agent report from node id %lld",
				(long long)node_id);
	} else if (rc != SQLITE_ROW) {
		ret = store_fail(st, rc, "reading agent state");
	} else {
		ret = state_read(&o, s, with_report);
		o.health_facts = sqlite3_column_int(s, 20) != 0;
		o.interval_s = column_int_or(s, 21, -1);
		o.cpu_iowait_pct = store_column_real_or_nan(s, 22);
		o.gpu_hottest_c = store_column_real_or_nan(s, 23);
		o.gpu_power_w = store_column_real_or_nan(s, 24);
		o.gpu_utilization_avg_pct = store_column_real_or_nan(s, 25);
		if (ret == 0)
			ret = store_column_strdup(&o.rejected_fields, s, 26);
	}
	store_stmt_done(s);
	if (ret < 0) {
		agent_state_clear(&o);
		return ret;
	}
	*out = o;
	return 0;
}

int store_agent_state_put(struct store *st, const struct agent_state *a)
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if (!a->report_id || !a->report)
		return kiln_fail(KILN_EINVAL, "store: agent state without report id or report");
	if ((ret = store_stmt(st, &s, STMT_AGENT_STATE_PUT,
			      "INSERT OR REPLACE INTO node_agent_state (node_id, report_id, last_seen,"
			      " report_time, boot_id, hostname, machine_id, os, kernel, dmi_serial,"
			      " agent_version, nvidia_status, driver_version, kernel_module_version,"
			      " cuda_driver_version, nvml_version, gpu_count, gpu_count_max, report,"
			      " audit_facts, health_facts, interval_s, cpu_iowait_pct, rejected_fields)"
			      " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14,"
			      " ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24)")) < 0)
		return ret;
	sqlite3_bind_int64(s, 1, a->node_id);
	store_bind_text(s, 2, a->report_id);
	sqlite3_bind_int64(s, 3, a->last_seen);
	sqlite3_bind_int64(s, 4, a->report_time);
	store_bind_text(s, 5, a->boot_id);
	store_bind_text(s, 6, a->hostname);
	store_bind_text(s, 7, a->machine_id);
	store_bind_text(s, 8, a->os);
	store_bind_text(s, 9, a->kernel);
	store_bind_text(s, 10, a->dmi_serial);
	store_bind_text(s, 11, a->agent_version);
	store_bind_text(s, 12, a->nvidia_status);
	store_bind_text(s, 13, a->driver_version);
	store_bind_text(s, 14, a->kernel_module_version);
	store_bind_text(s, 15, a->cuda_driver_version);
	store_bind_text(s, 16, a->nvml_version);
	sqlite3_bind_int64(s, 17, a->gpu_count);
	sqlite3_bind_int64(s, 18, a->gpu_count_max);
	store_bind_text(s, 19, a->report);
	/* The version facts live in node_agent_summary (below). */
	sqlite3_bind_null(s, 20);
	sqlite3_bind_int(s, 21, a->health_facts != 0);
	bind_int_or_null(s, 22, a->health_facts ? a->interval_s : -1);
	bind_real_or_null(s, 23, a->health_facts ? a->cpu_iowait_pct : NAN);
	store_bind_text(s, 24, a->rejected_fields);
	rc = sqlite3_step(s);
	if (rc != SQLITE_DONE) {
		ret = store_fail(st, rc, "storing agent state");
		if (ret == KILN_ENOTFOUND)
			kiln_fail(ret, "store: agent state for node id %lld: no such node",
				  (long long)a->node_id);
	}
	store_stmt_done(s);
	if (ret < 0)
		return ret;
	/* The narrow row `kiln status` and `kiln audit` read for every node. */
	if ((ret = store_stmt(st, &s, STMT_AGENT_SUMMARY_PUT,
			      "INSERT OR REPLACE INTO node_agent_summary (node_id, gpu_count_max,"
			      " gpu_hottest_c, gpu_power_w, audit_facts, gpu_utilization_avg_pct,"
			      " gpu_processes) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)")) < 0)
		return ret;
	sqlite3_bind_int64(s, 1, a->node_id);
	sqlite3_bind_int64(s, 2, a->gpu_count_max);
	bind_real_or_null(s, 3, a->gpu_hottest_c);
	bind_real_or_null(s, 4, a->gpu_power_w);
	store_bind_text(s, 5, a->audit_facts ? a->audit_facts : a->report);
	bind_real_or_null(s, 6, a->gpu_utilization_avg_pct);
	store_bind_text(s, 7, a->gpu_processes);
	rc = sqlite3_step(s);
	if (rc != SQLITE_DONE)
		ret = store_fail(st, rc, "storing agent summary");
	store_stmt_done(s);
	return ret;
}

int store_agent_state_list(struct store *st, struct agent_state **out, size_t *out_count)
{
	struct agent_state *list = NULL;
	size_t count = 0, cap = 0;
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_AGENT_STATE_LIST,
			      "SELECT " STATE_COLUMNS " FROM node_agent_state a"
			      " JOIN nodes n ON n.id = a.node_id ORDER BY n.name")) < 0)
		return ret;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if ((ret = store_list_grow((void **)&list, &cap, count, sizeof(*list))) < 0)
			goto cleanup;
		count++;
		if ((ret = state_read(&list[count - 1], s, 0)) < 0)
			goto cleanup;
	}
	if (rc != SQLITE_DONE)
		ret = store_fail(st, rc, "listing agent states");
cleanup:
	store_stmt_done(s);
	if (ret < 0) {
		agent_state_list_free(list, count);
		return ret;
	}
	*out = list;
	*out_count = count;
	return 0;
}

/* --- GPUs ---------------------------------------------------------------------------- */

void agent_gpu_list_free(struct agent_gpu *gpus, size_t count)
{
	if (!gpus)
		return;
	for (size_t i = 0; i < count; i++) {
		free(gpus[i].uuid);
		free(gpus[i].name);
		free(gpus[i].serial);
		free(gpus[i].pci_bus_id);
	}
	free(gpus);
}

int store_agent_gpus_get(struct store *st, struct agent_gpu **out, size_t *out_count,
			 int64_t node_id)
{
	struct agent_gpu *list = NULL;
	size_t count = 0, cap = 0;
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_AGENT_GPUS_GET,
			      "SELECT gpu_index, uuid, name, serial, pci_bus_id, memory_total_bytes,"
			      " ecc_volatile_uncorrected, ecc_aggregate_uncorrected,"
			      " remapped_rows_failure, retired_pages_pending, remapped_rows_pending,"
			      " remapped_rows_uncorrected, ecc_rose_at FROM node_gpus WHERE node_id = ?1"
			      " ORDER BY gpu_index")) < 0)
		return ret;
	sqlite3_bind_int64(s, 1, node_id);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct agent_gpu *g;

		if ((ret = store_list_grow((void **)&list, &cap, count, sizeof(*list))) < 0)
			goto cleanup;
		g = &list[count++];
		g->index = sqlite3_column_int64(s, 0);
		g->memory_total_bytes = column_int_or(s, 5, -1);
		g->ecc_volatile_uncorrected = column_int_or(s, 6, -1);
		g->ecc_aggregate_uncorrected = column_int_or(s, 7, -1);
		g->remapped_rows_failure = (int)column_int_or(s, 8, -1);
		g->retired_pages_pending = (int)column_int_or(s, 9, -1);
		g->remapped_rows_pending = (int)column_int_or(s, 10, -1);
		g->remapped_rows_uncorrected = column_int_or(s, 11, -1);
		g->ecc_rose_at = column_int_or(s, 12, 0);
		g->memory_used_bytes = -1; /* telemetry: the report's */
		g->temperature_c = g->power_draw_w = g->utilization_gpu_pct = NAN;
		if ((ret = store_column_strdup(&g->uuid, s, 1)) < 0 ||
		    (ret = store_column_strdup(&g->name, s, 2)) < 0 ||
		    (ret = store_column_strdup(&g->serial, s, 3)) < 0 ||
		    (ret = store_column_strdup(&g->pci_bus_id, s, 4)) < 0)
			goto cleanup;
	}
	if (rc != SQLITE_DONE)
		ret = store_fail(st, rc, "reading GPUs");
cleanup:
	store_stmt_done(s);
	if (ret < 0) {
		agent_gpu_list_free(list, count);
		return ret;
	}
	*out = list;
	*out_count = count;
	return 0;
}

/* Binds ?1..?14 of the GPU insert and update statements (same numbering in both). */
static void gpu_bind(sqlite3_stmt *s, int64_t node_id, const struct agent_gpu *g)
{
	sqlite3_bind_int64(s, 1, node_id);
	sqlite3_bind_int64(s, 2, g->index);
	store_bind_text(s, 3, g->uuid);
	store_bind_text(s, 4, g->name);
	store_bind_text(s, 5, g->serial);
	store_bind_text(s, 6, g->pci_bus_id);
	bind_int_or_null(s, 7, g->memory_total_bytes);
	bind_int_or_null(s, 8, g->ecc_volatile_uncorrected);
	bind_int_or_null(s, 9, g->ecc_aggregate_uncorrected);
	bind_int_or_null(s, 10, g->remapped_rows_failure);
	bind_int_or_null(s, 11, g->retired_pages_pending);
	bind_int_or_null(s, 12, g->remapped_rows_pending);
	bind_int_or_null(s, 13, g->remapped_rows_uncorrected);
	bind_int_or_null(s, 14, g->ecc_rose_at > 0 ? g->ecc_rose_at : -1);
}

/* Writes one GPU row: a new one, or (update) the stored row of its index, which must exist. */
static int gpu_write(struct store *st, int64_t node_id, const struct agent_gpu *g, int update)
{
	static const char insert_sql[] =
		"INSERT INTO node_gpus (node_id, gpu_index, uuid, name, serial, pci_bus_id,"
		" memory_total_bytes, ecc_volatile_uncorrected, ecc_aggregate_uncorrected,"
		" remapped_rows_failure, retired_pages_pending, remapped_rows_pending,"
		" remapped_rows_uncorrected, ecc_rose_at)"
		" VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)";
	static const char update_sql[] =
		"UPDATE node_gpus SET uuid = ?3, name = ?4, serial = ?5, pci_bus_id = ?6,"
		" memory_total_bytes = ?7, ecc_volatile_uncorrected = ?8,"
		" ecc_aggregate_uncorrected = ?9, remapped_rows_failure = ?10,"
		" retired_pages_pending = ?11, remapped_rows_pending = ?12,"
		" remapped_rows_uncorrected = ?13, ecc_rose_at = ?14"
		" WHERE node_id = ?1 AND gpu_index = ?2";
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, update ? STMT_AGENT_GPU_UPDATE : STMT_AGENT_GPU_INSERT,
			      update ? update_sql : insert_sql)) < 0)
		return ret;
	gpu_bind(s, node_id, g);
	rc = sqlite3_step(s);
	if (rc != SQLITE_DONE)
		ret = store_fail(st, rc, update ? "updating a GPU" : "storing a GPU");
	else if (update && sqlite3_changes(st->db) != 1)
		ret = kiln_fail(KILN_ENOTFOUND, "store: GPU %lld of node id %lld is not stored",
				(long long)g->index, (long long)node_id);
	store_stmt_done(s);
	return ret;
}

int store_agent_gpu_summary_list(struct store *st, struct agent_gpu_summary **out,
				 size_t *out_count)
{
	struct agent_gpu_summary *list = NULL;
	size_t count = 0, cap = 0;
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_AGENT_GPU_SUMMARY,
			      "SELECT node_id, gpu_hottest_c, gpu_power_w, gpu_processes"
			      " FROM node_agent_summary ORDER BY node_id")) < 0)
		return ret;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if ((ret = store_list_grow((void **)&list, &cap, count, sizeof(*list))) < 0)
			goto cleanup;
		list[count].node_id = sqlite3_column_int64(s, 0);
		list[count].hottest_c = store_column_real_or_nan(s, 1);
		list[count].power_w = store_column_real_or_nan(s, 2);
		list[count].gpu_processes = NULL;
		count++;
		if ((ret = store_column_strdup(&list[count - 1].gpu_processes, s, 3)) < 0)
			goto cleanup;
	}
	if (rc != SQLITE_DONE)
		ret = store_fail(st, rc, "summing GPUs");
cleanup:
	store_stmt_done(s);
	if (ret < 0) {
		agent_gpu_summary_list_free(list, count);
		return ret;
	}
	*out = list;
	*out_count = count;
	return 0;
}

void agent_gpu_summary_list_free(struct agent_gpu_summary *list, size_t count)
{
	if (!list)
		return;
	for (size_t i = 0; i < count; i++)
		free(list[i].gpu_processes);
	free(list);
}

void agent_audit_row_list_free(struct agent_audit_row *list, size_t count)
{
	if (!list)
		return;
	for (size_t i = 0; i < count; i++)
		free(list[i].facts);
	free(list);
}

int store_agent_audit_rows(struct store *st, struct agent_audit_row **out, size_t *out_count)
{
	struct agent_audit_row *list = NULL;
	size_t count = 0, cap = 0;
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_AGENT_AUDIT_ROWS,
			      "SELECT node_id, gpu_count_max, audit_facts FROM node_agent_summary"
			      " ORDER BY node_id")) < 0)
		return ret;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if ((ret = store_list_grow((void **)&list, &cap, count, sizeof(*list))) < 0)
			goto cleanup;
		list[count].node_id = sqlite3_column_int64(s, 0);
		list[count].gpu_count_max = sqlite3_column_int64(s, 1);
		count++;
		if ((ret = store_column_strdup(&list[count - 1].facts, s, 2)) < 0)
			goto cleanup;
	}
	if (rc != SQLITE_DONE)
		ret = store_fail(st, rc, "reading version facts");
cleanup:
	store_stmt_done(s);
	if (ret < 0) {
		agent_audit_row_list_free(list, count);
		return ret;
	}
	*out = list;
	*out_count = count;
	return 0;
}

int store_agent_seen_list(struct store *st, struct agent_seen **out, size_t *out_count)
{
	struct agent_seen *list = NULL;
	size_t count = 0, cap = 0;
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_AGENT_SEEN_LIST,
			      "SELECT node_id, last_seen, ifnull(interval_s, 0) FROM node_agent_state"
			      " ORDER BY node_id")) < 0)
		return ret;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if ((ret = store_list_grow((void **)&list, &cap, count, sizeof(*list))) < 0)
			break;
		list[count].node_id = sqlite3_column_int64(s, 0);
		list[count].last_seen = sqlite3_column_int64(s, 1);
		list[count].interval_s = sqlite3_column_int64(s, 2);
		count++;
	}
	if (ret == 0 && rc != SQLITE_DONE)
		ret = store_fail(st, rc, "reading when agents reported");
	store_stmt_done(s);
	if (ret < 0) {
		free(list);
		return ret;
	}
	*out = list;
	*out_count = count;
	return 0;
}

/* Replaces the node's GPUs with gpus[0..count) (atomic). */
static int gpus_replace(struct store *st, int64_t node_id, const struct agent_gpu *gpus,
			size_t count)
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_savepoint(st)) < 0)
		return ret;
	if ((ret = store_stmt(st, &s, STMT_AGENT_GPUS_DELETE,
			      "DELETE FROM node_gpus WHERE node_id = ?1")) < 0)
		goto fail;
	sqlite3_bind_int64(s, 1, node_id);
	rc = sqlite3_step(s);
	store_stmt_done(s);
	if (rc != SQLITE_DONE) {
		ret = store_fail(st, rc, "replacing GPUs");
		goto fail;
	}
	for (size_t i = 0; i < count; i++)
		if ((ret = gpu_write(st, node_id, &gpus[i], 0)) < 0)
			goto fail;
	return store_release(st);
fail:
	store_rollback_to(st);
	return ret;
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

int store_agent_history_insert(struct store *st, const struct agent_history_row *h)
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_AGENT_HISTORY_INSERT,
			      "INSERT INTO agent_history (node_id, time, received_at, report_id,"
			      " boot_id, nvidia_status, driver_version, cuda_driver_version,"
			      " gpu_count, temperature_max_c, power_draw_total_w,"
			      " utilization_avg_pct, ecc_uncorrected, xid_count, gpus)"
			      " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14,"
			      " ?15)")) < 0)
		return ret;
	sqlite3_bind_int64(s, 1, h->node_id);
	sqlite3_bind_int64(s, 2, h->time);
	sqlite3_bind_int64(s, 3, h->received_at);
	store_bind_text(s, 4, h->report_id);
	store_bind_text(s, 5, h->boot_id);
	store_bind_text(s, 6, h->nvidia_status);
	store_bind_text(s, 7, h->driver_version);
	store_bind_text(s, 8, h->cuda_driver_version);
	sqlite3_bind_int64(s, 9, h->gpu_count);
	bind_real_or_null(s, 10, h->temperature_max_c);
	bind_real_or_null(s, 11, h->power_draw_total_w);
	bind_real_or_null(s, 12, h->utilization_avg_pct);
	bind_int_or_null(s, 13, h->ecc_uncorrected);
	sqlite3_bind_int64(s, 14, h->xid_count);
	store_bind_text(s, 15, h->gpus);
	rc = sqlite3_step(s);
	if (rc != SQLITE_DONE)
		ret = store_fail(st, rc, "adding a history row");
	store_stmt_done(s);
	return ret;
}

/* Runs a DELETE with ?1 = before and ?2 = limit; adds the rows deleted to *deleted. */
static int prune_one(struct store *st, enum store_stmt_id id, const char *sql, int64_t before,
		     int limit, int *deleted)
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, id, sql)) < 0)
		return ret;
	sqlite3_bind_int64(s, 1, before);
	sqlite3_bind_int(s, 2, limit);
	rc = sqlite3_step(s);
	if (rc != SQLITE_DONE)
		ret = store_fail(st, rc, "pruning agent history");
	else
		*deleted += sqlite3_changes(st->db);
	store_stmt_done(s);
	return ret;
}

int store_agent_history_prune(struct store *st, int64_t before, int limit, int *out_deleted)
{
	int deleted = 0, ret;

	/* Bounded batches keep each write transaction short under constant ingest. */
	if ((ret = prune_one(st, STMT_AGENT_HISTORY_PRUNE,
			     "DELETE FROM agent_history WHERE id IN (SELECT id FROM agent_history"
			     " WHERE received_at < ?1 ORDER BY received_at LIMIT ?2)",
			     before, limit, &deleted)) < 0 ||
	    (ret = prune_one(st, STMT_AGENT_SEEN_PRUNE,
			     "DELETE FROM agent_reports_seen WHERE (node_id, report_id) IN (SELECT"
			     " node_id, report_id FROM agent_reports_seen WHERE time < ?1"
			     " ORDER BY time LIMIT ?2)",
			     before, limit, &deleted)) < 0)
		return ret;
	if (out_deleted)
		*out_deleted = deleted;
	return 0;
}

static int count_rows(struct store *st, enum store_stmt_id id, const char *sql, int64_t node_id,
		      int64_t *out)
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, id, sql)) < 0)
		return ret;
	sqlite3_bind_int64(s, 1, node_id);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		*out = sqlite3_column_int64(s, 0);
	else
		ret = store_fail(st, rc, "counting agent rows");
	store_stmt_done(s);
	return ret;
}

int store_agent_counts(struct store *st, int64_t node_id, int64_t *out_history,
		       int64_t *out_seen)
{
	int ret;

	if ((ret = count_rows(st, STMT_AGENT_COUNT_HISTORY,
			      "SELECT count(*) FROM agent_history WHERE node_id = ?1", node_id,
			      out_history)) < 0)
		return ret;
	return count_rows(st, STMT_AGENT_COUNT_SEEN,
			  "SELECT count(*) FROM agent_reports_seen WHERE node_id = ?1", node_id,
			  out_seen);
}

/* --- nodes as agents find them ------------------------------------------------------ */

int store_node_bmc_serial_set(struct store *st, const char *name, const char *serial)
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_NODE_BMC_SERIAL_SET,
			      "UPDATE nodes SET bmc_serial = ?1 WHERE name = ?2")) < 0)
		return ret;
	store_bind_text(s, 1, serial && *serial ? serial : NULL);
	store_bind_text(s, 2, name);
	rc = sqlite3_step(s);
	if (rc != SQLITE_DONE)
		ret = store_fail(st, rc, "setting a BMC serial");
	else if (sqlite3_changes(st->db) == 0)
		ret = kiln_fail(KILN_ENOTFOUND, "no node '%s'", name);
	store_stmt_done(s);
	return ret;
}

int store_node_find_by_serial(struct store *st, int64_t *out_id, char **out_name,
			      const char *serial)
{
	sqlite3_stmt *s = NULL;
	char *name = NULL;
	int64_t id = 0;
	int rc, ret, rows = 0;

	if ((ret = store_stmt(st, &s, STMT_NODE_FIND_BY_SERIAL,
			      "SELECT id, name FROM nodes WHERE bmc_serial = ?1 LIMIT 2")) < 0)
		return ret;
	store_bind_text(s, 1, serial);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if (rows++ == 0) {
			id = sqlite3_column_int64(s, 0);
			if ((ret = store_column_strdup(&name, s, 1)) < 0)
				goto cleanup;
		}
	}
	if (rc != SQLITE_DONE)
		ret = store_fail(st, rc, "finding a node by serial");
	else if (rows == 0)
		ret = kiln_fail(KILN_ENOTFOUND, "no node with BMC serial '%s'", serial);
	else if (rows > 1)
		ret = kiln_fail(KILN_EEXISTS, "several nodes have BMC serial '%s'", serial);
cleanup:
	store_stmt_done(s);
	if (ret < 0) {
		free(name);
		return ret;
	}
	*out_id = id;
	*out_name = name;
	return 0;
}

int store_agent_enroll_facts(struct store *st, int *out_has_token, int64_t *out_job,
			     int *out_job_enrolled, int64_t node_id)
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_ENROLL_FACTS,
			      "SELECT EXISTS (SELECT 1 FROM agent_tokens WHERE node_id = ?1"
			      " AND revoked_at IS NULL), ifnull(j.id, 0), ifnull(j.enrolled_at, 0)"
			      " FROM (SELECT 1) LEFT JOIN jobs j ON j.node_id = ?1"
			      " AND j.state = 'running'")) < 0)
		return ret;
	sqlite3_bind_int64(s, 1, node_id);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		*out_has_token = sqlite3_column_int(s, 0);
		*out_job = sqlite3_column_int64(s, 1);
		*out_job_enrolled = sqlite3_column_int64(s, 2) > 0;
	} else {
		ret = store_fail(st, rc, "reading a node's enrollment facts");
	}
	store_stmt_done(s);
	return ret;
}

int store_job_enroll_take(struct store *st, int64_t job_id)
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_JOB_ENROLL_TAKE,
			      "UPDATE jobs SET enrolled_at = ?2 WHERE id = ?1 AND enrolled_at = 0"
			      " AND state = 'running'")) < 0)
		return ret;
	sqlite3_bind_int64(s, 1, job_id);
	sqlite3_bind_int64(s, 2, store_now(st));
	rc = sqlite3_step(s);
	if (rc != SQLITE_DONE)
		ret = store_fail(st, rc, "using a reinstall job's enrollment");
	else if (sqlite3_changes(st->db) == 0)
		ret = kiln_fail(KILN_EEXISTS, "job %lld already took its enrollment",
				(long long)job_id);
	store_stmt_done(s);
	return ret;
}

/* --- enrollment tokens --------------------------------------------------------------- */

void enroll_token_list_free(struct enroll_token *list, size_t count)
{
	if (!list)
		return;
	for (size_t i = 0; i < count; i++)
		free(list[i].name);
	free(list);
}

int store_enroll_token_insert(struct store *st, int64_t *out_id, const char *name,
			      const unsigned char hash[32])
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_ENROLL_TOKEN_INSERT,
			      "INSERT INTO enroll_tokens (name, hash, created_at) VALUES (?1, ?2, ?3)")) < 0)
		return ret;
	store_bind_text(s, 1, name);
	sqlite3_bind_blob(s, 2, hash, 32, SQLITE_STATIC);
	sqlite3_bind_int64(s, 3, store_now(st));
	rc = sqlite3_step(s);
	if (rc != SQLITE_DONE)
		ret = store_fail(st, rc, "adding an enrollment token");
	else
		*out_id = sqlite3_last_insert_rowid(st->db);
	store_stmt_done(s);
	return ret;
}

int store_enroll_token_lookup(struct store *st, int64_t *out_id, const unsigned char hash[32])
{
	sqlite3_stmt *s = NULL;
	int64_t id = 0, now = store_now(st);
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_ENROLL_TOKEN_LOOKUP,
			      "SELECT id FROM enroll_tokens WHERE hash = ?1 AND revoked_at IS NULL")) < 0)
		return ret;
	sqlite3_bind_blob(s, 1, hash, 32, SQLITE_STATIC);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		id = sqlite3_column_int64(s, 0);
	else if (rc == SQLITE_DONE)
		ret = kiln_fail(KILN_ENOTFOUND, "unknown or revoked enrollment token");
	else
		ret = store_fail(st, rc, "looking up an enrollment token");
	store_stmt_done(s);
	if (ret < 0)
		return ret;
	/* A busy database only delays the record of use. */
	if ((ret = store_stmt(st, &s, STMT_ENROLL_TOKEN_TOUCH,
			      "UPDATE enroll_tokens SET last_used_at = ?1 WHERE id = ?2"
			      " AND (last_used_at IS NULL OR last_used_at <= ?3)")) < 0)
		return ret;
	sqlite3_bind_int64(s, 1, now);
	sqlite3_bind_int64(s, 2, id);
	sqlite3_bind_int64(s, 3, now - TOUCH_INTERVAL_S);
	rc = sqlite3_step(s);
	if (rc != SQLITE_DONE && (rc & 0xff) != SQLITE_BUSY && (rc & 0xff) != SQLITE_LOCKED)
		ret = store_fail(st, rc, "recording enrollment token use");
	store_stmt_done(s);
	if (ret < 0)
		return ret;
	*out_id = id;
	return 0;
}

int store_enroll_token_list(struct store *st, struct enroll_token **out, size_t *out_count)
{
	struct enroll_token *list = NULL;
	size_t count = 0, cap = 0;
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_ENROLL_TOKEN_LIST,
			      "SELECT id, name, created_at, ifnull(last_used_at, 0),"
			      " revoked_at IS NOT NULL FROM enroll_tokens ORDER BY id")) < 0)
		return ret;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct enroll_token *t;

		if ((ret = store_list_grow((void **)&list, &cap, count, sizeof(*list))) < 0)
			goto cleanup;
		t = &list[count++];
		t->id = sqlite3_column_int64(s, 0);
		t->created_at = sqlite3_column_int64(s, 2);
		t->last_used_at = sqlite3_column_int64(s, 3);
		t->revoked = sqlite3_column_int(s, 4);
		if ((ret = store_column_strdup(&t->name, s, 1)) < 0)
			goto cleanup;
	}
	if (rc != SQLITE_DONE)
		ret = store_fail(st, rc, "listing enrollment tokens");
cleanup:
	store_stmt_done(s);
	if (ret < 0) {
		enroll_token_list_free(list, count);
		return ret;
	}
	*out = list;
	*out_count = count;
	return 0;
}

int store_enroll_token_revoke(struct store *st, int64_t id)
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_ENROLL_TOKEN_REVOKE,
			      "UPDATE enroll_tokens SET revoked_at = ifnull(revoked_at, ?1)"
			      " WHERE id = ?2")) < 0)
		return ret;
	sqlite3_bind_int64(s, 1, store_now(st));
	sqlite3_bind_int64(s, 2, id);
	rc = sqlite3_step(s);
	if (rc != SQLITE_DONE)
		ret = store_fail(st, rc, "revoking an enrollment token");
	else if (sqlite3_changes(st->db) == 0)
		ret = kiln_fail(KILN_ENOTFOUND, "no enrollment token %lld", (long long)id);
	store_stmt_done(s);
	return ret;
}

/* --- pending agents ------------------------------------------------------------------ */

void pending_agent_list_free(struct pending_agent *list, size_t count)
{
	if (!list)
		return;
	for (size_t i = 0; i < count; i++) {
		free(list[i].dmi_serial);
		free(list[i].hostname);
		free(list[i].machine_id);
		free(list[i].node);
		free(list[i].candidate);
		free(list[i].reason);
	}
	free(list);
}

static int pending_count(struct store *st, int64_t *out)
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_PENDING_COUNT, "SELECT count(*) FROM pending_agents")) < 0)
		return ret;
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		*out = sqlite3_column_int64(s, 0);
	else
		ret = store_fail(st, rc, "counting pending agents");
	store_stmt_done(s);
	return ret;
}

int store_pending_agent_record(struct store *st, int64_t *out_id, int64_t *out_node_id,
			       const char *dmi_serial, const char *hostname,
			       const char *machine_id, int64_t enroll_token_id,
			       int64_t candidate_id, const char *reason, int max_rows)
{
	sqlite3_stmt *s = NULL;
	int64_t rows = 0, id = 0, node_id = 0;
	int rc, ret;

	if ((ret = pending_count(st, &rows)) < 0)
		return ret;
	/* The upsert below either updates an existing row or adds one; refuse only the adding. */
	if ((ret = store_stmt(st, &s, STMT_PENDING_UPSERT,
			      "INSERT INTO pending_agents (dmi_serial, hostname, machine_id,"
			      " enroll_token_id, first_seen, last_seen, candidate_id, reason)"
			      " SELECT ?1, ?2, ?3, ?4, ?5, ?5, ?7, ?8 WHERE ?6 OR EXISTS (SELECT 1 FROM"
			      " pending_agents WHERE dmi_serial = ?1 AND hostname = ?2 AND machine_id = ?3)"
			      " ON CONFLICT (dmi_serial, hostname, machine_id) DO UPDATE SET"
			      " last_seen = excluded.last_seen, attempts = attempts + 1,"
			      " enroll_token_id = excluded.enroll_token_id,"
			      " candidate_id = excluded.candidate_id, reason = excluded.reason"
			      " RETURNING id, ifnull(node_id, 0)")) < 0)
		return ret;
	store_bind_text(s, 1, dmi_serial ? dmi_serial : "");
	store_bind_text(s, 2, hostname ? hostname : "");
	store_bind_text(s, 3, machine_id ? machine_id : "");
	if (enroll_token_id > 0)
		sqlite3_bind_int64(s, 4, enroll_token_id);
	sqlite3_bind_int64(s, 5, store_now(st));
	sqlite3_bind_int(s, 6, rows < max_rows);
	if (candidate_id > 0)
		sqlite3_bind_int64(s, 7, candidate_id);
	store_bind_text(s, 8, reason);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		id = sqlite3_column_int64(s, 0);
		node_id = sqlite3_column_int64(s, 1);
		while ((rc = sqlite3_step(s)) == SQLITE_ROW)
			;
	}
	if (rc == SQLITE_DONE && id == 0)
		ret = kiln_fail(KILN_EBUSY, "%lld agents already wait for an admin; accept or"
				" delete some first", (long long)rows);
	else if (rc != SQLITE_DONE)
		ret = store_fail(st, rc, "recording a pending agent");
	store_stmt_done(s);
	if (ret < 0)
		return ret;
	*out_id = id;
	*out_node_id = node_id;
	return 0;
}

int store_pending_agent_list(struct store *st, struct pending_agent **out, size_t *out_count)
{
	struct pending_agent *list = NULL;
	size_t count = 0, cap = 0;
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_PENDING_LIST,
			      "SELECT p.id, p.dmi_serial, p.hostname, p.machine_id, p.first_seen,"
			      " p.last_seen, p.attempts, ifnull(p.node_id, 0), n.name, c.name, p.reason"
			      " FROM pending_agents p LEFT JOIN nodes n ON n.id = p.node_id"
			      " LEFT JOIN nodes c ON c.id = p.candidate_id"
			      " ORDER BY p.id")) < 0)
		return ret;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct pending_agent *p;

		if ((ret = store_list_grow((void **)&list, &cap, count, sizeof(*list))) < 0)
			goto cleanup;
		p = &list[count++];
		p->id = sqlite3_column_int64(s, 0);
		p->first_seen = sqlite3_column_int64(s, 4);
		p->last_seen = sqlite3_column_int64(s, 5);
		p->attempts = sqlite3_column_int64(s, 6);
		p->node_id = sqlite3_column_int64(s, 7);
		if ((ret = store_column_strdup(&p->dmi_serial, s, 1)) < 0 ||
		    (ret = store_column_strdup(&p->hostname, s, 2)) < 0 ||
		    (ret = store_column_strdup(&p->machine_id, s, 3)) < 0 ||
		    (ret = store_column_strdup(&p->node, s, 8)) < 0 ||
		    (ret = store_column_strdup(&p->candidate, s, 9)) < 0 ||
		    (ret = store_column_strdup(&p->reason, s, 10)) < 0)
			goto cleanup;
	}
	if (rc != SQLITE_DONE)
		ret = store_fail(st, rc, "listing pending agents");
cleanup:
	store_stmt_done(s);
	if (ret < 0) {
		pending_agent_list_free(list, count);
		return ret;
	}
	*out = list;
	*out_count = count;
	return 0;
}

int store_pending_agent_accept(struct store *st, int64_t id, int64_t node_id)
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_PENDING_ACCEPT,
			      "UPDATE pending_agents SET node_id = ?1, accepted_at = ?2 WHERE id = ?3")) < 0)
		return ret;
	sqlite3_bind_int64(s, 1, node_id);
	sqlite3_bind_int64(s, 2, store_now(st));
	sqlite3_bind_int64(s, 3, id);
	rc = sqlite3_step(s);
	if (rc != SQLITE_DONE)
		ret = store_fail(st, rc, "accepting a pending agent");
	else if (sqlite3_changes(st->db) == 0)
		ret = kiln_fail(KILN_ENOTFOUND, "no pending agent %lld", (long long)id);
	store_stmt_done(s);
	return ret;
}

int store_pending_agent_forget(struct store *st, const char *dmi_serial, const char *hostname,
			       const char *machine_id)
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_PENDING_FORGET,
			      "DELETE FROM pending_agents WHERE dmi_serial = ?1 AND hostname = ?2"
			      " AND machine_id = ?3")) < 0)
		return ret;
	store_bind_text(s, 1, dmi_serial ? dmi_serial : "");
	store_bind_text(s, 2, hostname ? hostname : "");
	store_bind_text(s, 3, machine_id ? machine_id : "");
	rc = sqlite3_step(s);
	if (rc != SQLITE_DONE)
		ret = store_fail(st, rc, "forgetting a pending agent");
	store_stmt_done(s);
	return ret;
}

int store_pending_agent_delete(struct store *st, int64_t id)
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_PENDING_DELETE, "DELETE FROM pending_agents WHERE id = ?1")) < 0)
		return ret;
	sqlite3_bind_int64(s, 1, id);
	rc = sqlite3_step(s);
	if (rc != SQLITE_DONE)
		ret = store_fail(st, rc, "deleting a pending agent");
	else if (sqlite3_changes(st->db) == 0)
		ret = kiln_fail(KILN_ENOTFOUND, "no pending agent %lld", (long long)id);
	store_stmt_done(s);
	return ret;
}

/* --- reports refused whole ------------------------------------------------------------ */

void agent_refusal_clear(struct agent_refusal *r)
{
	if (!r)
		return;
	free(r->reason);
	memset(r, 0, sizeof(*r));
}

int store_agent_refusal_note(struct store *st, int64_t node_id, const char *reason)
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_AGENT_REFUSAL_NOTE,
			      "INSERT INTO agent_refusals (node_id, reason, refused, first_at, last_at)"
			      " VALUES (?1, ?2, 1, ?3, ?3) ON CONFLICT (node_id) DO UPDATE SET"
			      " reason = ?2, refused = refused + 1, last_at = ?3")) < 0)
		return ret;
	sqlite3_bind_int64(s, 1, node_id);
	store_bind_text(s, 2, reason);
	sqlite3_bind_int64(s, 3, store_now(st));
	rc = sqlite3_step(s);
	if (rc != SQLITE_DONE)
		ret = store_fail(st, rc, "noting a refused agent report");
	store_stmt_done(s);
	return ret;
}

int store_agent_refusal_get(struct store *st, struct agent_refusal *out, int64_t node_id)
{
	struct agent_refusal o = { 0 };
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_AGENT_REFUSAL_GET,
			      "SELECT reason, refused, first_at, last_at FROM agent_refusals"
			      " WHERE node_id = ?1")) < 0)
		return ret;
	sqlite3_bind_int64(s, 1, node_id);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		ret = store_column_strdup(&o.reason, s, 0);
		o.refused = sqlite3_column_int64(s, 1);
		o.first_at = sqlite3_column_int64(s, 2);
		o.last_at = sqlite3_column_int64(s, 3);
	} else if (rc != SQLITE_DONE) {
		ret = store_fail(st, rc, "reading refused agent reports");
	}
	store_stmt_done(s);
	if (ret < 0) {
		agent_refusal_clear(&o);
		return ret;
	}
	*out = o;
	return 0;
}
