/* BMC log history: every entry read from a node's BMC log once, with the BMC's own time, and
 * what the last read saw (to tell a cleared log). Events for new entries are store_events.c's. */
#include <string.h>

#include "kiln/error.h"
#include "store/store_internal.h"

int store_bmc_log_state_get(struct store *st, struct bmc_log_state *out, int64_t node_id)
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_BMC_LOG_STATE_GET,
			      "SELECT baselined, count, newest FROM bmc_log_state"
			      " WHERE node_id = ?1")) < 0)
		return ret;
	sqlite3_bind_int64(s, 1, node_id);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		out->baselined = sqlite3_column_int64(s, 0);
		out->count = sqlite3_column_int64(s, 1);
		out->newest = sqlite3_column_int64(s, 2);
	} else if (rc == SQLITE_DONE) {
		out->baselined = 0;
		out->count = -1;
		out->newest = 0;
	} else {
		ret = store_fail(st, rc, "reading a node's BMC log state");
	}
	store_stmt_done(s);
	return ret;
}

int store_bmc_log_state_put(struct store *st, int64_t node_id, const struct bmc_log_state *v)
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_BMC_LOG_STATE_PUT,
			      "INSERT OR REPLACE INTO bmc_log_state (node_id, baselined, count, newest)"
			      " VALUES (?1, ?2, ?3, ?4)")) < 0)
		return ret;
	sqlite3_bind_int64(s, 1, node_id);
	sqlite3_bind_int64(s, 2, v->baselined);
	sqlite3_bind_int64(s, 3, v->count);
	sqlite3_bind_int64(s, 4, v->newest);
	rc = sqlite3_step(s);
	if (rc != SQLITE_DONE)
		ret = store_fail(st, rc, "writing a node's BMC log state");
	store_stmt_done(s);
	return ret;
}

int store_bmc_log_add(struct store *st, int *out_inserted, int64_t node_id, const char *key,
		      int64_t bmc_time, enum event_severity sev, const char *message, int history)
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if (!key || !message)
		return kiln_fail(KILN_EINVAL, "store: BMC log entry without key or message");
	if ((ret = store_stmt(st, &s, STMT_BMC_LOG_ADD,
			      "INSERT INTO bmc_log (node_id, entry_key, bmc_time, seen, severity,"
			      " message, history) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
			      " ON CONFLICT DO NOTHING")) < 0)
		return ret;
	sqlite3_bind_int64(s, 1, node_id);
	store_bind_text(s, 2, key);
	sqlite3_bind_int64(s, 3, bmc_time);
	sqlite3_bind_int64(s, 4, store_now(st));
	sqlite3_bind_int(s, 5, (int)sev);
	store_bind_text(s, 6, message);
	sqlite3_bind_int(s, 7, history ? 1 : 0);
	rc = sqlite3_step(s);
	if (rc != SQLITE_DONE)
		ret = store_fail(st, rc, "storing a BMC log entry");
	else
		*out_inserted = sqlite3_changes(st->db) > 0;
	store_stmt_done(s);
	return ret;
}

int store_bmc_log_prune(struct store *st, int64_t cutoff)
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	/* Only what the next read cannot bring back as new: an entry the cursor still reaches
	 * (at the newest time), one without a real date (IPMI's seconds since the BMC started)
	 * or without a time at all is read again at every poll and must stay known. */
	if ((ret = store_stmt(st, &s, STMT_BMC_LOG_PRUNE,
			      "DELETE FROM bmc_log WHERE seen < ?1 AND bmc_time >= 946684800"
			      " AND bmc_time < ifnull((SELECT newest FROM bmc_log_state b"
			      " WHERE b.node_id = bmc_log.node_id), 0)")) < 0)
		return ret;
	sqlite3_bind_int64(s, 1, cutoff);
	rc = sqlite3_step(s);
	if (rc != SQLITE_DONE)
		ret = store_fail(st, rc, "pruning the BMC log history");
	store_stmt_done(s);
	return ret;
}
