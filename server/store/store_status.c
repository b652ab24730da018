/* SPDX-License-Identifier: Apache-2.0 */
/* The fleet status table in one query: every node's BMC, agent, GPU summary and maintenance rows. */
#include <math.h>

#include "kiln/error.h"
#include "store/store_internal.h"

/* Only the columns the status reads (the GPUs seen only where NVML counted them: a driver
 * mismatch or a missing driver counts none, and none is known missing): the report (4-5 KB a node) and the sensors stay on disk.
 * A LEFT JOIN per table keeps nodes that the poller, an agent or maintenance never touched. */
static const char status_sql[] =
	"SELECT n.name,"
	" b.node_id IS NOT NULL, b.power, b.power_time, b.reachable, b.health, b.health_time,"
	" b.reasons, b.hung_since,"
	" a.node_id IS NOT NULL, a.last_seen,"
	" CASE WHEN coalesce(a.nvidia_status, 'ok') = 'ok' THEN a.gpu_count END, a.gpu_count_max, a.driver_version,"
	" a.cuda_driver_version, s.gpu_hottest_c, s.gpu_power_w,"
	" m.node_id IS NOT NULL, m.reason,"
	" b.reachable = 1 AND b.power_error LIKE 'bmc busy: %',"
	" b.reachable = 0 AND b.power_error LIKE 'configuration error: %', s.gpu_processes"
	" FROM nodes n"
	" LEFT JOIN node_bmc_state b ON b.node_id = n.id"
	" LEFT JOIN node_agent_state a ON a.node_id = n.id"
	" LEFT JOIN node_agent_summary s ON s.node_id = n.id"
	" LEFT JOIN node_maintenance m ON m.node_id = n.id"
	" ORDER BY n.name";

struct status_cb {
	store_status_fn fn;
	void *ud;
};

static int row_read(const struct sql_row *q, void *ctx)
{
	const struct status_cb *cb = ctx;
	struct status_row r;

	r.node = sql_col_text(q, 0);
	r.has_state = (int)sql_col_int(q, 1);
	r.power = r.has_state ? sql_col_text(q, 2) : NULL;
	r.power_time = sql_col_int(q, 3);
	r.reachable = r.has_state ? (int)sql_col_int(q, 4) : 1;
	r.health = sql_col_int(q, 6) != 0 ? sql_col_text(q, 5) : NULL;
	r.reasons = sql_col_text(q, 7);
	r.hung_since = sql_col_int(q, 8);
	r.has_agent = (int)sql_col_int(q, 9);
	r.agent_last_seen = sql_col_int(q, 10);
	r.gpu_count = sql_col_int_or(q, 11, -1);
	r.gpu_count_max = sql_col_int(q, 12);
	r.driver_version = sql_col_text(q, 13);
	r.cuda_driver_version = sql_col_text(q, 14);
	r.hottest_c = r.has_agent ? sql_col_real(q, 15) : NAN;
	r.power_w = r.has_agent ? sql_col_real(q, 16) : NAN;
	r.in_maintenance = (int)sql_col_int(q, 17);
	r.maint_reason = sql_col_text(q, 18);
	r.bmc_busy = r.has_state && sql_col_int(q, 19);
	r.bmc_misconfigured = r.has_state && sql_col_int(q, 20);
	r.gpu_processes = r.has_agent ? sql_col_text(q, 21) : NULL;
	if (!r.node)
		return kiln_fail(KILN_ERROR, "store: reading the status: out of memory");
	return cb->fn(cb->ud, &r);
}

int store_status_rows(struct store *st, store_status_fn fn, void *ud)
{
	/* Prepared per call: one request reads 10,000 rows, the prepare is noise beside it. */
	static const struct sql_stmt q = {STMT_NONE, "reading the status", status_sql, NULL};
	struct status_cb cb = {fn, ud};
	int ret = sql_run(st, &q, SQL_NO_ARGS, row_read, &cb, NULL);

	return ret < 0 ? ret : 0;
}
