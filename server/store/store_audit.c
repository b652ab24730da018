/* The audit log: one row per action, written before it runs and finished after. */
#include <stdlib.h>
#include <string.h>

#include "kiln/error.h"
#include "store/store_internal.h"

int store_audit_begin(struct store *st, int64_t *out_id, const char *actor, const char *action,
		      const char *target, const char *detail_json)
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if (!actor || !action)
		return kiln_fail(KILN_EINVAL, "store: audit row without actor or action");
	if ((ret = store_stmt(st, &s, STMT_AUDIT_BEGIN,
			      "INSERT INTO audit_log (time, actor, action, target, detail, outcome)"
			      " VALUES (?1, ?2, ?3, ?4, ?5, 'pending')")) < 0)
		return ret;
	sqlite3_bind_int64(s, 1, store_now(st));
	store_bind_text(s, 2, actor);
	store_bind_text(s, 3, action);
	store_bind_text(s, 4, target);
	store_bind_text(s, 5, detail_json);
	rc = sqlite3_step(s);
	if (rc != SQLITE_DONE)
		ret = store_fail(st, rc, "writing the audit log");
	else
		*out_id = sqlite3_last_insert_rowid(st->db);
	store_stmt_done(s);
	return ret;
}

int store_audit_finish(struct store *st, int64_t id, const char *outcome)
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if (!outcome)
		return kiln_fail(KILN_EINVAL, "store: audit outcome missing");
	if ((ret = store_stmt(st, &s, STMT_AUDIT_FINISH,
			      "UPDATE audit_log SET outcome = ?1, finished_at = ?2 WHERE id = ?3")) < 0)
		return ret;
	store_bind_text(s, 1, outcome);
	sqlite3_bind_int64(s, 2, store_now(st));
	sqlite3_bind_int64(s, 3, id);
	rc = sqlite3_step(s);
	if (rc != SQLITE_DONE)
		ret = store_fail(st, rc, "finishing an audit row");
	else if (sqlite3_changes(st->db) == 0)
		ret = kiln_fail(KILN_ENOTFOUND, "no audit row %lld", (long long)id);
	store_stmt_done(s);
	return ret;
}

static void entry_clear(struct audit_entry *e)
{
	free(e->actor);
	free(e->action);
	free(e->target);
	free(e->detail);
	free(e->outcome);
}

void audit_entry_list_free(struct audit_entry *entries, size_t count)
{
	if (!entries)
		return;
	for (size_t i = 0; i < count; i++)
		entry_clear(&entries[i]);
	free(entries);
}

int store_audit_list(struct store *st, struct audit_entry **out, size_t *out_count, int64_t since,
		     size_t limit)
{
	struct audit_entry *list = NULL;
	size_t count = 0, cap = 0;
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_AUDIT_LIST,
			      "SELECT id, time, actor, action, target, detail, outcome FROM audit_log"
			      " WHERE time >= ?1 ORDER BY time DESC, id DESC LIMIT ?2")) < 0)
		return ret;
	sqlite3_bind_int64(s, 1, since);
	store_bind_limit(s, 2, limit);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct audit_entry *e;

		if ((ret = store_list_grow((void **)&list, &cap, count, sizeof(*list))) < 0)
			goto cleanup;
		e = &list[count++];
		e->id = sqlite3_column_int64(s, 0);
		e->time = sqlite3_column_int64(s, 1);
		if ((ret = store_column_strdup(&e->actor, s, 2)) < 0 ||
		    (ret = store_column_strdup(&e->action, s, 3)) < 0 ||
		    (ret = store_column_strdup(&e->target, s, 4)) < 0 ||
		    (ret = store_column_strdup(&e->detail, s, 5)) < 0 ||
		    (ret = store_column_strdup(&e->outcome, s, 6)) < 0)
			goto cleanup;
	}
	if (rc != SQLITE_DONE)
		ret = store_fail(st, rc, "reading the audit log");
cleanup:
	store_stmt_done(s);
	if (ret < 0) {
		audit_entry_list_free(list, count);
		return ret;
	}
	*out = list;
	*out_count = count;
	return 0;
}

int store_audit_power_off_find(struct store *st, char **out_actor, int64_t *out_time,
			       const char *target, int64_t since)
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_AUDIT_POWER_OFF,
			      "SELECT actor, time FROM audit_log WHERE time >= ?1 AND target = ?2"
			      " AND action IN ('power.off', 'power.soft', 'power.cycle',"
			      " 'power.reset') ORDER BY time DESC, id DESC LIMIT 1")) < 0)
		return ret;
	sqlite3_bind_int64(s, 1, since);
	store_bind_text(s, 2, target);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		*out_time = sqlite3_column_int64(s, 1);
		ret = store_column_strdup(out_actor, s, 0);
	} else if (rc == SQLITE_DONE) {
		ret = kiln_fail(KILN_ENOTFOUND, "store: no kiln action turned %s off", target);
	} else {
		ret = store_fail(st, rc, "reading the audit log");
	}
	store_stmt_done(s);
	return ret;
}

int store_audit_interrupt(struct store *st, int *out_count)
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_AUDIT_INTERRUPT,
			      "UPDATE audit_log SET outcome = '" STORE_AUDIT_INTERRUPTED "'"
			      " WHERE outcome = 'pending' AND id NOT IN (SELECT audit_id FROM jobs"
			      " WHERE state IN ('queued', 'running'))")) < 0)
		return ret;
	rc = sqlite3_step(s);
	if (rc != SQLITE_DONE)
		ret = store_fail(st, rc, "closing interrupted audit rows");
	else
		*out_count = sqlite3_changes(st->db);
	store_stmt_done(s);
	return ret;
}

int store_audit_readback(struct store *st, const char *target, const char *power,
			 const char *when)
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_AUDIT_READBACK,
			      "UPDATE audit_log SET outcome = outcome || '; power read back: ' || ?2"
			      " || ' at ' || ?3 WHERE target = ?1 AND outcome = '"
			      STORE_AUDIT_INTERRUPTED "'")) < 0)
		return ret;
	store_bind_text(s, 1, target);
	store_bind_text(s, 2, power);
	store_bind_text(s, 3, when);
	rc = sqlite3_step(s);
	if (rc != SQLITE_DONE)
		ret = store_fail(st, rc, "adding a power reading to interrupted audit rows");
	store_stmt_done(s);
	return ret;
}
