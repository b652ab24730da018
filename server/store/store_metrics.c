/* SPDX-License-Identifier: Apache-2.0 */
/* What GET /metrics reads: one query over the nodes' state rows, one over the Xid events. */
#include <string.h>

#include "kiln/error.h"
#include "store/store_internal.h"

/* A member of a JSON text column: JSON text for an array, the value for a scalar. */
#define JSON_SQLITE(col, key) "json_extract(" #col ", '$." #key "')"
#define JSON_PG(col, key) "(CAST(" #col " AS json) ->> '" #key "')"

/* Only the short columns, and of the report (4-5 KB a node) only what the metrics show, cut
 * out by the database (JSON(col, key) is the dialect's way), and only for an agent that is not
 * silent: a silent agent's numbers are stale and are not exported. */
#define METRICS_SQL(JSON)                                                                          \
	"SELECT n.id, n.name, n.rack,"                                                             \
	" CASE WHEN b.node_id IS NOT NULL THEN 1 ELSE 0 END, b.power, b.power_time, b.reachable,"  \
	" b.last_ok, CASE WHEN b.health_time != 0 THEN b.health END, b.reasons, b.hung_since,"     \
	" b.sensors, CASE WHEN m.node_id IS NOT NULL THEN 1 ELSE 0 END,"                           \
	" CASE WHEN EXISTS (SELECT 1 FROM jobs j WHERE j.node_id = n.id"                           \
	"  AND j.state IN ('queued', 'running')) THEN 1 ELSE 0 END,"                               \
	" " JSON(i.inventory, manufacturer) ", " JSON(i.inventory, model) ", i.bmc_firmware,"      \
	" CASE WHEN a.node_id IS NOT NULL THEN 1 ELSE 0 END, a.last_seen,"                         \
	" coalesce(a.interval_s, 0), f.fresh,"                                                     \
	" CASE WHEN f.fresh = 1 THEN a.nvidia_status END,"                                         \
	" CASE WHEN f.fresh = 1 THEN a.driver_version END,"                                        \
	" CASE WHEN f.fresh = 1 THEN a.kernel_module_version END,"                                 \
	" CASE WHEN f.fresh = 1 THEN a.cuda_driver_version END,"                                   \
	" CASE WHEN f.fresh = 1 THEN a.nvml_version END, CASE WHEN f.fresh = 1 THEN a.os END,"     \
	" CASE WHEN f.fresh = 1 THEN a.kernel END,"                                                \
	" CASE WHEN f.fresh = 1 THEN " JSON(a.report, cudnn_version) " END,"                       \
	" CASE WHEN f.fresh = 1 THEN " JSON(a.report, gpus) " END,"                                \
	" CASE WHEN f.fresh = 1 THEN " JSON(a.report, cuda_toolkits) " END,"                       \
	" CASE WHEN coalesce(a.nvidia_status, 'ok') = 'ok' THEN a.gpu_count END, a.gpu_count_max"  \
	" FROM nodes n"                                                                            \
	" LEFT JOIN node_bmc_state b ON b.node_id = n.id"                                          \
	" LEFT JOIN node_maintenance m ON m.node_id = n.id"                                        \
	" LEFT JOIN node_inventory i ON i.node_id = n.id"                                          \
	" LEFT JOIN node_agent_state a ON a.node_id = n.id"                                        \
	" LEFT JOIN (SELECT node_id, CASE WHEN ?1 - last_seen <= ?2 * (CASE WHEN"                  \
	"   coalesce(interval_s, 0) > 0 THEN interval_s ELSE ?3 END) THEN 1 ELSE 0 END AS fresh"   \
	"   FROM node_agent_state) f ON f.node_id = n.id"                                          \
	" ORDER BY n.name"

/* Prepared per call, as the status query: one scrape reads every node. */
static const struct sql_stmt ROWS = {STMT_NONE, "reading the metrics", METRICS_SQL(JSON_SQLITE),
				     METRICS_SQL(JSON_PG)};

/* The number after "Xid " in the messages ("Xid 79 on GPU 3 (...): ..."), -1 for none. */
#define XID_NUMBER_SQLITE "CAST(substr(e.message, 5) AS INTEGER)"
#define XID_NUMBER_PG "coalesce(CAST(substring(e.message from '^Xid ([0-9]+)') AS bigint), 0)"
/* events_by_kind_time finds the Xid events without reading the others */
#define XIDS_SQL(NUMBER)                                                                           \
	"SELECT x.node_id, x.n, CASE WHEN e.message LIKE 'Xid %' THEN " NUMBER " ELSE -1 END FROM" \
	" (SELECT node_id, count(*) AS n, max(id) AS last FROM events"                             \
	"  WHERE kind = 'xid' AND node_id IS NOT NULL GROUP BY node_id) x"                         \
	" JOIN events e ON e.id = x.last ORDER BY x.node_id"

static const struct sql_stmt XIDS = {STMT_NONE, "reading the Xid count",
				     XIDS_SQL(XID_NUMBER_SQLITE), XIDS_SQL(XID_NUMBER_PG)};

struct metrics_cb {
	store_metrics_fn fn;
	void *ud;
};

static int row_read(const struct sql_row *q, void *ctx)
{
	const struct metrics_cb *cb = ctx;
	struct metrics_row r;

	memset(&r, 0, sizeof(r));
	r.node_id = sql_col_int(q, 0);
	r.node = sql_col_text(q, 1);
	r.rack = sql_col_text(q, 2);
	r.has_state = (int)sql_col_int(q, 3);
	r.power = r.has_state ? sql_col_text(q, 4) : NULL;
	r.power_time = sql_col_int(q, 5);
	r.reachable = r.has_state ? (int)sql_col_int(q, 6) : 1;
	r.last_ok = sql_col_int(q, 7);
	r.health = sql_col_text(q, 8);
	r.reasons = sql_col_text(q, 9);
	r.hung_since = sql_col_int(q, 10);
	r.sensors = sql_col_text(q, 11);
	r.in_maintenance = (int)sql_col_int(q, 12);
	r.reinstalling = (int)sql_col_int(q, 13);
	r.bmc_manufacturer = sql_col_text(q, 14);
	r.bmc_model = sql_col_text(q, 15);
	r.bmc_firmware = sql_col_text(q, 16);
	r.has_agent = (int)sql_col_int(q, 17);
	r.agent_last_seen = sql_col_int(q, 18);
	r.agent_interval_s = sql_col_int(q, 19);
	r.agent_fresh = r.has_agent && sql_col_int(q, 20);
	if (r.agent_fresh) {
		r.nvidia_status = sql_col_text(q, 21);
		r.driver_version = sql_col_text(q, 22);
		r.kernel_module_version = sql_col_text(q, 23);
		r.cuda_driver_version = sql_col_text(q, 24);
		r.nvml_version = sql_col_text(q, 25);
		r.os = sql_col_text(q, 26);
		r.kernel = sql_col_text(q, 27);
		r.cudnn_version = sql_col_text(q, 28);
		r.gpus = sql_col_text(q, 29);
		r.toolkits = sql_col_text(q, 30);
		r.gpu_count = sql_col_int_or(q, 31, -1);
		r.gpu_count_max = sql_col_int(q, 32);
	}
	if (!r.node)
		return kiln_fail(KILN_ERROR, "store: reading the metrics: out of memory");
	return cb->fn(cb->ud, &r);
}

int store_metrics_rows(struct store *st, int64_t now, int silent_intervals,
		       int64_t default_interval_s, store_metrics_fn fn, void *ud)
{
	struct metrics_cb cb = {fn, ud};
	int ret = sql_run(st, &ROWS,
			  SQL_ARGS(SQL_INT(now), SQL_INT(silent_intervals),
				   SQL_INT(default_interval_s)),
			  row_read, &cb, NULL);

	return ret < 0 ? ret : 0;
}

static int xid_read(const struct sql_row *r, void *elem)
{
	struct metrics_xid *x = elem;

	x->node_id = sql_col_int(r, 0);
	x->count = sql_col_int(r, 1);
	x->last_xid = sql_col_int(r, 2);
	return 0;
}

int store_metrics_xids(struct store *st, struct metrics_xid **out, size_t *out_count)
{
	return sql_list(st, &XIDS, SQL_NO_ARGS, out, out_count, sizeof(**out), xid_read, NULL);
}
