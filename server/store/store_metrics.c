/* What GET /metrics reads: one query over the nodes' state rows, one over the Xid events. */
#include <stdlib.h>
#include <string.h>

#include "kiln/error.h"
#include "store/store_internal.h"

/* Only the short columns, and of the report (4-5 KB a node) only what the metrics show,
 * cut out by SQLite, and only for an agent that is not silent: a silent agent's numbers
 * are stale and are not exported. */
static const char metrics_sql[] =
	"SELECT n.id, n.name, n.rack,"
	" b.node_id IS NOT NULL, b.power, b.power_time, b.reachable, b.last_ok,"
	" CASE WHEN b.health_time != 0 THEN b.health END, b.reasons, b.hung_since, b.sensors,"
	" m.node_id IS NOT NULL,"
	" EXISTS (SELECT 1 FROM jobs j WHERE j.node_id = n.id AND j.state IN ('queued', 'running')),"
	" json_extract(i.inventory, '$.manufacturer'), json_extract(i.inventory, '$.model'),"
	" i.bmc_firmware,"
	" a.node_id IS NOT NULL, a.last_seen, ifnull(a.interval_s, 0), f.fresh,"
	" CASE WHEN f.fresh THEN a.nvidia_status END, CASE WHEN f.fresh THEN a.driver_version END,"
	" CASE WHEN f.fresh THEN a.kernel_module_version END,"
	" CASE WHEN f.fresh THEN a.cuda_driver_version END,"
	" CASE WHEN f.fresh THEN a.nvml_version END, CASE WHEN f.fresh THEN a.os END,"
	" CASE WHEN f.fresh THEN a.kernel END,"
	" CASE WHEN f.fresh THEN json_extract(a.report, '$.cudnn_version') END,"
	" CASE WHEN f.fresh THEN json_extract(a.report, '$.gpus') END,"
	" CASE WHEN f.fresh THEN json_extract(a.report, '$.cuda_toolkits') END,"
	" CASE WHEN ifnull(a.nvidia_status, 'ok') = 'ok' THEN a.gpu_count END, a.gpu_count_max"
	" FROM nodes n"
	" LEFT JOIN node_bmc_state b ON b.node_id = n.id"
	" LEFT JOIN node_maintenance m ON m.node_id = n.id"
	" LEFT JOIN node_inventory i ON i.node_id = n.id"
	" LEFT JOIN node_agent_state a ON a.node_id = n.id"
	" LEFT JOIN (SELECT node_id, ?1 - last_seen <= ?2 * (CASE WHEN ifnull(interval_s, 0) > 0"
	"   THEN interval_s ELSE ?3 END) AS fresh FROM node_agent_state) f ON f.node_id = n.id"
	" ORDER BY n.name";

static const char *text(sqlite3_stmt *s, int idx)
{
	return (const char *)sqlite3_column_text(s, idx);
}

static void row_read(struct metrics_row *r, sqlite3_stmt *s)
{
	memset(r, 0, sizeof(*r));
	r->node_id = sqlite3_column_int64(s, 0);
	r->node = text(s, 1);
	r->rack = text(s, 2);
	r->has_state = sqlite3_column_int(s, 3);
	r->power = r->has_state ? text(s, 4) : NULL;
	r->power_time = sqlite3_column_int64(s, 5);
	r->reachable = r->has_state ? sqlite3_column_int(s, 6) : 1;
	r->last_ok = sqlite3_column_int64(s, 7);
	r->health = text(s, 8);
	r->reasons = text(s, 9);
	r->hung_since = sqlite3_column_int64(s, 10);
	r->sensors = text(s, 11);
	r->in_maintenance = sqlite3_column_int(s, 12);
	r->reinstalling = sqlite3_column_int(s, 13);
	r->bmc_manufacturer = text(s, 14);
	r->bmc_model = text(s, 15);
	r->bmc_firmware = text(s, 16);
	r->has_agent = sqlite3_column_int(s, 17);
	r->agent_last_seen = sqlite3_column_int64(s, 18);
	r->agent_interval_s = sqlite3_column_int64(s, 19);
	r->agent_fresh = r->has_agent && sqlite3_column_int(s, 20);
	if (!r->agent_fresh)
		return;
	r->nvidia_status = text(s, 21);
	r->driver_version = text(s, 22);
	r->kernel_module_version = text(s, 23);
	r->cuda_driver_version = text(s, 24);
	r->nvml_version = text(s, 25);
	r->os = text(s, 26);
	r->kernel = text(s, 27);
	r->cudnn_version = text(s, 28);
	r->gpus = text(s, 29);
	r->toolkits = text(s, 30);
	r->gpu_count = sqlite3_column_type(s, 31) == SQLITE_NULL ? -1 : sqlite3_column_int64(s, 31);
	r->gpu_count_max = sqlite3_column_int64(s, 32);
}

int store_metrics_rows(struct store *st, int64_t now, int silent_intervals,
		       int64_t default_interval_s, store_metrics_fn fn, void *ud)
{
	sqlite3_stmt *s = NULL;
	struct metrics_row r;
	int rc, ret = 0;

	/* Prepared per call, as the status query: one scrape reads every node. */
	rc = sqlite3_prepare_v2(st->db, metrics_sql, (int)sizeof(metrics_sql), &s, NULL);
	if (rc != SQLITE_OK)
		return store_fail(st, rc, "preparing the metrics query");
	sqlite3_bind_int64(s, 1, now);
	sqlite3_bind_int64(s, 2, silent_intervals);
	sqlite3_bind_int64(s, 3, default_interval_s);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		row_read(&r, s);
		if (!r.node) {
			ret = kiln_fail(KILN_ERROR, "store: reading the metrics: out of memory");
			break;
		}
		if ((ret = fn(ud, &r)) < 0)
			break;
	}
	if (ret == 0 && rc != SQLITE_DONE)
		ret = store_fail(st, rc, "reading the metrics");
	sqlite3_finalize(s);
	return ret;
}

int store_metrics_xids(struct store *st, struct metrics_xid **out, size_t *out_count)
{
	/* events_by_kind_time finds the Xid events without reading the others */
	static const char sql[] =
		"SELECT x.node_id, x.n,"
		/* the messages read "Xid 79 on GPU 3 (...): ...": the number after "Xid " */
		" CASE WHEN e.message LIKE 'Xid %' THEN CAST(substr(e.message, 5) AS INTEGER)"
		" ELSE -1 END FROM"
		" (SELECT node_id, count(*) AS n, max(id) AS last FROM events"
		"  WHERE kind = 'xid' AND node_id IS NOT NULL GROUP BY node_id) x"
		" JOIN events e ON e.id = x.last ORDER BY x.node_id";
	sqlite3_stmt *s = NULL;
	struct metrics_xid *list = NULL;
	size_t n = 0, cap = 0;
	int rc, ret = 0;

	rc = sqlite3_prepare_v2(st->db, sql, (int)sizeof(sql), &s, NULL);
	if (rc != SQLITE_OK)
		return store_fail(st, rc, "preparing the Xid count");
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			struct metrics_xid *grown = realloc(list, ncap * sizeof(*list));

			if (!grown) {
				ret = kiln_fail(KILN_ERROR, "store: out of memory");
				break;
			}
			list = grown;
			cap = ncap;
		}
		list[n].node_id = sqlite3_column_int64(s, 0);
		list[n].count = sqlite3_column_int64(s, 1);
		list[n].last_xid = sqlite3_column_int64(s, 2);
		n++;
	}
	if (ret == 0 && rc != SQLITE_DONE)
		ret = store_fail(st, rc, "reading the Xid count");
	sqlite3_finalize(s);
	if (ret < 0) {
		free(list);
		return ret;
	}
	*out = list;
	*out_count = n;
	return 0;
}
