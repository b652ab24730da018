/* SPDX-License-Identifier: Apache-2.0 */
/* BMC log history: every entry read from a node's BMC log once, with the BMC's own time, and
 * what the last read saw (to tell a cleared log). Events for new entries are store_events.c's. */
#include <string.h>

#include "kiln/error.h"
#include "store/store_internal.h"

static const struct sql_stmt STATE_GET = {
	STMT_BMC_LOG_STATE_GET, "reading a node's BMC log state",
	"SELECT baselined, count, newest FROM bmc_log_state WHERE node_id = ?1", NULL};

/* Every column is written, so updating in place is what INSERT OR REPLACE did. */
static const struct sql_stmt STATE_PUT = {
	STMT_BMC_LOG_STATE_PUT, "writing a node's BMC log state",
	"INSERT INTO bmc_log_state (node_id, baselined, count, newest) VALUES (?1, ?2, ?3, ?4)"
	" ON CONFLICT (node_id) DO UPDATE SET baselined = excluded.baselined,"
	" count = excluded.count, newest = excluded.newest",
	NULL};

static const struct sql_stmt ADD = {
	STMT_BMC_LOG_ADD, "storing a BMC log entry",
	"INSERT INTO bmc_log (node_id, entry_key, bmc_time, seen, severity, message, history)"
	" VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT (node_id, entry_key) DO NOTHING",
	NULL};

/* Only what the next read cannot bring back as new: an entry the cursor still reaches (at the
 * newest time), one without a real date (IPMI's seconds since the BMC started) or without a
 * time at all is read again at every poll and must stay known. */
static const struct sql_stmt PRUNE = {
	STMT_BMC_LOG_PRUNE, "pruning the BMC log history",
	"DELETE FROM bmc_log WHERE seen < ?1 AND bmc_time >= 946684800"
	" AND bmc_time < coalesce((SELECT newest FROM bmc_log_state b"
	" WHERE b.node_id = bmc_log.node_id), 0)",
	NULL};

/* A prefix compared with substr: LIKE would read the '_' of "HGX_GPU_0" as a wildcard. */
static const struct sql_stmt KNOWN = {
	STMT_BMC_LOG_KNOWN, "looking up a node's BMC log entries",
	"SELECT 1 FROM bmc_log WHERE node_id = ?1 AND substr(entry_key, 1, length(?2)) = ?2"
	" LIMIT 1",
	NULL};

static int state_read(const struct sql_row *r, void *ctx)
{
	struct bmc_log_state *out = ctx;

	out->baselined = sql_col_int(r, 0);
	out->count = sql_col_int(r, 1);
	out->newest = sql_col_int(r, 2);
	return 0;
}

int store_bmc_log_state_get(struct store *st, struct bmc_log_state *out, int64_t node_id)
{
	int ret = sql_one(st, &STATE_GET, SQL_ARGS(SQL_INT(node_id)), state_read, out);

	if (ret == 0) {
		out->baselined = 0;
		out->count = -1;
		out->newest = 0;
	}
	return ret < 0 ? ret : 0;
}

int store_bmc_log_state_put(struct store *st, int64_t node_id, const struct bmc_log_state *v)
{
	int64_t ret = sql_write(st, &STATE_PUT,
			       SQL_ARGS(SQL_INT(node_id), SQL_INT(v->baselined), SQL_INT(v->count),
					SQL_INT(v->newest)));

	return ret < 0 ? (int)ret : 0;
}

int store_bmc_log_add(struct store *st, int *out_inserted, int64_t node_id, const char *key,
		      int64_t bmc_time, enum event_severity sev, const char *message, int history)
{
	int64_t ret;

	if (!key || !message)
		return kiln_fail(KILN_EINVAL, "store: BMC log entry without key or message");
	ret = sql_exec(st, &ADD,
		       SQL_ARGS(SQL_INT(node_id), SQL_TEXT(key), SQL_INT(bmc_time),
				SQL_INT(store_now(st)), SQL_INT(sev), SQL_TEXT(message),
				SQL_BOOL(history)));
	if (ret < 0)
		return (int)ret;
	*out_inserted = ret > 0;
	return 0;
}

int store_bmc_log_known(struct store *st, int *out_known, int64_t node_id, const char *prefix)
{
	int64_t one = 0;
	int ret;

	if (!prefix || !*prefix)
		return kiln_fail(KILN_EINVAL, "store: BMC log lookup without a prefix");
	ret = sql_int(st, &KNOWN, SQL_ARGS(SQL_INT(node_id), SQL_TEXT(prefix)), &one);
	if (ret < 0)
		return ret;
	*out_known = ret > 0;
	return 0;
}

int store_bmc_log_prune(struct store *st, int64_t cutoff)
{
	int64_t ret = sql_exec(st, &PRUNE, SQL_ARGS(SQL_INT(cutoff)));

	return ret < 0 ? (int)ret : 0;
}
