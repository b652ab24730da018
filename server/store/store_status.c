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
	" CASE WHEN ifnull(a.nvidia_status, 'ok') = 'ok' THEN a.gpu_count END, a.gpu_count_max, a.driver_version,"
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

static const char *text(sqlite3_stmt *s, int idx)
{
	return (const char *)sqlite3_column_text(s, idx);
}

static void row_read(struct status_row *r, sqlite3_stmt *s)
{
	r->node = text(s, 0);
	r->has_state = sqlite3_column_int(s, 1);
	r->power = r->has_state ? text(s, 2) : NULL;
	r->power_time = sqlite3_column_int64(s, 3);
	r->reachable = r->has_state ? sqlite3_column_int(s, 4) : 1;
	r->health = sqlite3_column_int64(s, 6) != 0 ? text(s, 5) : NULL;
	r->reasons = text(s, 7);
	r->hung_since = sqlite3_column_int64(s, 8);
	r->has_agent = sqlite3_column_int(s, 9);
	r->agent_last_seen = sqlite3_column_int64(s, 10);
	r->gpu_count = sqlite3_column_type(s, 11) == SQLITE_NULL ? -1 : sqlite3_column_int64(s, 11);
	r->gpu_count_max = sqlite3_column_int64(s, 12);
	r->driver_version = text(s, 13);
	r->cuda_driver_version = text(s, 14);
	r->hottest_c = r->has_agent ? store_column_real_or_nan(s, 15) : NAN;
	r->power_w = r->has_agent ? store_column_real_or_nan(s, 16) : NAN;
	r->in_maintenance = sqlite3_column_int(s, 17);
	r->maint_reason = text(s, 18);
	r->bmc_busy = r->has_state && sqlite3_column_int(s, 19);
	r->bmc_misconfigured = r->has_state && sqlite3_column_int(s, 20);
	r->gpu_processes = r->has_agent ? text(s, 21) : NULL;
}

int store_status_rows(struct store *st, store_status_fn fn, void *ud)
{
	sqlite3_stmt *s = NULL;
	struct status_row r;
	int rc, ret = 0;

	/* Prepared per call: one request reads 10,000 rows, the prepare is noise beside it. */
	rc = sqlite3_prepare_v2(st->db, status_sql, (int)sizeof(status_sql), &s, NULL);
	if (rc != SQLITE_OK)
		return store_fail(st, rc, "preparing the status query");
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		row_read(&r, s);
		if (!r.node) {
			ret = kiln_fail(KILN_ERROR, "store: reading the status: out of memory");
			break;
		}
		if ((ret = fn(ud, &r)) < 0)
			break;
	}
	if (ret == 0 && rc != SQLITE_DONE)
		ret = store_fail(st, rc, "reading the status");
	sqlite3_finalize(s);
	return ret;
}
