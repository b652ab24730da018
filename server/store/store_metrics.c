/* SPDX-License-Identifier: Apache-2.0 */
/* What GET /metrics reads: every node's short columns at each scrape; the BMC sensors and
 * the agent's report only of the nodes whose markers moved; the Xid counts. */
#include <string.h>

#include "kiln/error.h"
#include "store/store_internal.h"

/* A member of a JSON text column: JSON text for an array, the value for a scalar. */
#define JSON_SQLITE(col, key) "json_extract(" #col ", '$." #key "')"
#define JSON_PG(col, key) "(CAST(" #col " AS json) ->> '" #key "')"

/* Only the short columns: the markers say whether the sensors (sensors_time), the inventory
 * (its time) or the report (report_id) moved since the node's series were last rendered. */
#define NODES_SQL                                                                                  \
	"SELECT n.id, n.name, n.rack,"                                                             \
	" CASE WHEN b.node_id IS NOT NULL THEN 1 ELSE 0 END, b.power, b.power_time, b.reachable,"  \
	" b.last_ok, CASE WHEN b.health_time != 0 THEN b.health END, b.reasons, b.hung_since,"     \
	" coalesce(b.sensors_time, 0), coalesce(i.time, 0),"                                       \
	" CASE WHEN m.node_id IS NOT NULL THEN 1 ELSE 0 END,"                                      \
	" CASE WHEN EXISTS (SELECT 1 FROM jobs j WHERE j.node_id = n.id"                           \
	"  AND j.state IN ('queued', 'running')) THEN 1 ELSE 0 END,"                               \
	" CASE WHEN a.node_id IS NOT NULL THEN 1 ELSE 0 END, a.last_seen,"                         \
	" coalesce(a.interval_s, 0), a.report_id, a.nvidia_status, a.driver_version,"              \
	" a.kernel_module_version, a.cuda_driver_version, a.nvml_version, a.os, a.kernel,"         \
	" CASE WHEN coalesce(a.nvidia_status, 'ok') = 'ok' THEN a.gpu_count END, a.gpu_count_max"  \
	" FROM nodes n"                                                                            \
	" LEFT JOIN node_bmc_state b ON b.node_id = n.id"                                          \
	" LEFT JOIN node_maintenance m ON m.node_id = n.id"                                        \
	" LEFT JOIN node_inventory i ON i.node_id = n.id"                                          \
	" LEFT JOIN node_agent_state a ON a.node_id = n.id"                                        \
	" ORDER BY n.name"

/* Prepared per call, as the status query: one scrape reads every node. */
static const struct sql_stmt NODES = {STMT_NONE, "reading the metrics", NODES_SQL, NODES_SQL};

/* The nodes of one detail query: STORE_METRICS_BATCH ids, unused ones bound to 0. */
#define IDS                                                                                        \
	" IN (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18,"   \
	" ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31, ?32)"
#define STORE_METRICS_BATCH 32

/* The BMC's sensors and inventory, with the markers they were read with. */
#define BMC_SQL(JSON)                                                                              \
	"SELECT n.id, coalesce(b.sensors_time, 0), b.sensors, coalesce(i.time, 0),"                \
	" " JSON(i.inventory, manufacturer) ", " JSON(i.inventory, model) ", i.bmc_firmware"       \
	" FROM nodes n LEFT JOIN node_bmc_state b ON b.node_id = n.id"                             \
	" LEFT JOIN node_inventory i ON i.node_id = n.id WHERE n.id" IDS

static const struct sql_stmt BMC = {STMT_NONE, "reading the metrics' sensors",
				    BMC_SQL(JSON_SQLITE), BMC_SQL(JSON_PG)};

/* Of the report (4-5 KB a node) only what the metrics show, cut out by the database. */
#define REPORTS_SQL(JSON)                                                                          \
	"SELECT a.node_id, a.report_id, " JSON(a.report, cudnn_version) ","                        \
	" " JSON(a.report, gpus) ", " JSON(a.report, cuda_toolkits)                                \
	" FROM node_agent_state a WHERE a.node_id" IDS

static const struct sql_stmt REPORTS = {STMT_NONE, "reading the metrics' reports",
					REPORTS_SQL(JSON_SQLITE), REPORTS_SQL(JSON_PG)};

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

/* The caller's function for the rows of one of the queries, and its argument. */
struct cb {
	store_metrics_node_fn node;
	store_metrics_bmc_fn bmc;
	store_metrics_report_fn report;
	void *ud;
};

static int node_read(const struct sql_row *q, void *ctx)
{
	const struct cb *cb = ctx;
	struct metrics_node r;

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
	r.sensors_time = sql_col_int(q, 11);
	r.inventory_time = sql_col_int(q, 12);
	r.in_maintenance = (int)sql_col_int(q, 13);
	r.reinstalling = (int)sql_col_int(q, 14);
	r.has_agent = (int)sql_col_int(q, 15);
	r.agent_last_seen = sql_col_int(q, 16);
	r.agent_interval_s = sql_col_int(q, 17);
	if (r.has_agent) {
		r.report_id = sql_col_text(q, 18);
		r.nvidia_status = sql_col_text(q, 19);
		r.driver_version = sql_col_text(q, 20);
		r.kernel_module_version = sql_col_text(q, 21);
		r.cuda_driver_version = sql_col_text(q, 22);
		r.nvml_version = sql_col_text(q, 23);
		r.os = sql_col_text(q, 24);
		r.kernel = sql_col_text(q, 25);
		r.gpu_count = sql_col_int_or(q, 26, -1);
		r.gpu_count_max = sql_col_int(q, 27);
	}
	if (!r.node)
		return kiln_fail(KILN_ERROR, "store: reading the metrics: out of memory");
	return cb->node(cb->ud, &r);
}

int store_metrics_nodes(struct store *st, store_metrics_node_fn fn, void *ud)
{
	struct cb cb = {.node = fn, .ud = ud};
	int ret = sql_run(st, &NODES, SQL_NO_ARGS, node_read, &cb, NULL);

	return ret < 0 ? ret : 0;
}

static int bmc_read(const struct sql_row *q, void *ctx)
{
	const struct cb *cb = ctx;
	struct metrics_bmc r = {
		.node_id = sql_col_int(q, 0),
		.sensors_time = sql_col_int(q, 1),
		.sensors = sql_col_text(q, 2),
		.inventory_time = sql_col_int(q, 3),
		.manufacturer = sql_col_text(q, 4),
		.model = sql_col_text(q, 5),
		.firmware = sql_col_text(q, 6),
	};

	return cb->bmc(cb->ud, &r);
}

static int report_read(const struct sql_row *q, void *ctx)
{
	const struct cb *cb = ctx;
	struct metrics_report r = {
		.node_id = sql_col_int(q, 0),
		.report_id = sql_col_text(q, 1),
		.cudnn_version = sql_col_text(q, 2),
		.gpus = sql_col_text(q, 3),
		.toolkits = sql_col_text(q, 4),
	};

	return cb->report(cb->ud, &r);
}

/* Runs q over ids, STORE_METRICS_BATCH at a time. */
static int by_ids(struct store *st, const struct sql_stmt *q, const int64_t *ids, size_t n,
		  sql_row_fn read, struct cb *cb)
{
	struct sql_arg args[STORE_METRICS_BATCH];

	for (size_t at = 0; at < n; at += STORE_METRICS_BATCH) {
		int ret;

		for (size_t k = 0; k < STORE_METRICS_BATCH; k++)
			args[k] = SQL_INT(at + k < n ? ids[at + k] : 0);
		if ((ret = sql_run(st, q, args, STORE_METRICS_BATCH, read, cb, NULL)) < 0)
			return ret;
	}
	return 0;
}

int store_metrics_bmc(struct store *st, const int64_t *ids, size_t n, store_metrics_bmc_fn fn,
		      void *ud)
{
	struct cb cb = {.bmc = fn, .ud = ud};

	return by_ids(st, &BMC, ids, n, bmc_read, &cb);
}

int store_metrics_reports(struct store *st, const int64_t *ids, size_t n,
			  store_metrics_report_fn fn, void *ud)
{
	struct cb cb = {.report = fn, .ud = ud};

	return by_ids(st, &REPORTS, ids, n, report_read, &cb);
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
