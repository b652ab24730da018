/* SPDX-License-Identifier: Apache-2.0 */
/* The audit log: one row per action, written before it runs and finished after. */
#include <stdlib.h>
#include <string.h>

#include "kiln/error.h"
#include "store/store_internal.h"

static const struct sql_stmt BEGIN = {
	STMT_AUDIT_BEGIN, "writing the audit log",
	"INSERT INTO audit_log (time, actor, action, target, detail, outcome)"
	" VALUES (?1, ?2, ?3, ?4, ?5, 'pending') RETURNING id",
	NULL};

static const struct sql_stmt FINISH = {
	STMT_AUDIT_FINISH, "finishing an audit row",
	"UPDATE audit_log SET outcome = ?1, finished_at = ?2 WHERE id = ?3", NULL};

static const struct sql_stmt LIST = {
	STMT_AUDIT_LIST, "reading the audit log",
	"SELECT id, time, actor, action, target, detail, outcome FROM audit_log"
	" WHERE time >= ?1 ORDER BY time DESC, id DESC LIMIT ?2",
	NULL};

static const struct sql_stmt POWER_OFF = {
	STMT_AUDIT_POWER_OFF, "reading the audit log",
	"SELECT actor, time FROM audit_log WHERE time >= ?1 AND target = ?2"
	" AND action IN ('power.off', 'power.soft', 'power.cycle', 'power.reset')"
	" ORDER BY time DESC, id DESC LIMIT 1",
	NULL};

static const struct sql_stmt INTERRUPT = {
	STMT_AUDIT_INTERRUPT, "closing interrupted audit rows",
	"UPDATE audit_log SET outcome = '" STORE_AUDIT_INTERRUPTED "'"
	" WHERE outcome = 'pending' AND id NOT IN (SELECT audit_id FROM jobs"
	" WHERE state IN ('queued', 'running'))",
	NULL};

static const struct sql_stmt READBACK = {
	STMT_AUDIT_READBACK, "adding a power reading to interrupted audit rows",
	"UPDATE audit_log SET outcome = outcome || '; power read back: ' || ?2"
	" || ' at ' || ?3 WHERE target = ?1 AND outcome = '" STORE_AUDIT_INTERRUPTED "'",
	NULL};

int store_audit_begin(struct store *st, int64_t *out_id, const char *actor, const char *action,
		      const char *target, const char *detail_json)
{
	int64_t id = 0;
	int ret;

	if (!actor || !action)
		return kiln_fail(KILN_EINVAL, "store: audit row without actor or action");
	ret = sql_int(st, &BEGIN,
		      SQL_ARGS(SQL_INT(store_now(st)), SQL_TEXT(actor), SQL_TEXT(action),
			       SQL_TEXT(target), SQL_TEXT(detail_json)),
		      &id);
	if (ret < 0)
		return ret;
	if (ret == 0)
		return kiln_fail(KILN_ERROR, "store: writing the audit log: no id returned");
	*out_id = id;
	return 0;
}

int store_audit_finish(struct store *st, int64_t id, const char *outcome)
{
	int64_t ret;

	if (!outcome)
		return kiln_fail(KILN_EINVAL, "store: audit outcome missing");
	ret = sql_exec(st, &FINISH,
		       SQL_ARGS(SQL_TEXT(outcome), SQL_INT(store_now(st)), SQL_INT(id)));
	if (ret == 0)
		return kiln_fail(KILN_ENOTFOUND, "no audit row %lld", (long long)id);
	return ret < 0 ? (int)ret : 0;
}

static void entry_clear(void *elem)
{
	struct audit_entry *e = elem;

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

static int entry_read(const struct sql_row *r, void *elem)
{
	struct audit_entry *e = elem;
	int ret;

	e->id = sql_col_int(r, 0);
	e->time = sql_col_int(r, 1);
	if ((ret = sql_col_strdup(r, 2, &e->actor)) < 0 ||
	    (ret = sql_col_strdup(r, 3, &e->action)) < 0 ||
	    (ret = sql_col_strdup(r, 4, &e->target)) < 0 ||
	    (ret = sql_col_strdup(r, 5, &e->detail)) < 0)
		return ret;
	return sql_col_strdup(r, 6, &e->outcome);
}

int store_audit_list(struct store *st, struct audit_entry **out, size_t *out_count, int64_t since,
		     size_t limit)
{
	return sql_list(st, &LIST, SQL_ARGS(SQL_INT(since), SQL_LIMIT(limit)), out, out_count,
			sizeof(**out), entry_read, entry_clear);
}

struct power_off {
	char **actor;
	int64_t *time;
};

static int power_off_read(const struct sql_row *r, void *ctx)
{
	const struct power_off *p = ctx;

	*p->time = sql_col_int(r, 1);
	return sql_col_strdup(r, 0, p->actor);
}

int store_audit_power_off_find(struct store *st, char **out_actor, int64_t *out_time,
			       const char *target, int64_t since)
{
	struct power_off p = {out_actor, out_time};
	int ret = sql_one(st, &POWER_OFF, SQL_ARGS(SQL_INT(since), SQL_TEXT(target)),
			  power_off_read, &p);

	if (ret == 0)
		return kiln_fail(KILN_ENOTFOUND, "store: no kiln action turned %s off", target);
	return ret < 0 ? ret : 0;
}

int store_audit_interrupt(struct store *st, int *out_count)
{
	int64_t ret = sql_exec(st, &INTERRUPT, SQL_NO_ARGS);

	if (ret < 0)
		return (int)ret;
	*out_count = (int)ret;
	return 0;
}

int store_audit_readback(struct store *st, const char *target, const char *power,
			 const char *when)
{
	int64_t ret = sql_write(st, &READBACK,
			       SQL_ARGS(SQL_TEXT(target), SQL_TEXT(power), SQL_TEXT(when)));

	return ret < 0 ? (int)ret : 0;
}
