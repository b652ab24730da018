/* SPDX-License-Identifier: Apache-2.0 */
/* Schema migrations: applies the embedded schema/NNN_name.sql files in order, once each. */
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "kiln/error.h"
#include "store/migrate.h"

static const char sql_version_table[] =
	"CREATE TABLE IF NOT EXISTS schema_version ("
	" version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)";

static int sqlfail(sqlite3 *db, const char *what)
{
	int code = KILN_ERROR;
	int rc = sqlite3_errcode(db);

	if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED)
		code = KILN_EBUSY;
	return kiln_fail(code, "store: %s: %s", what, sqlite3_errmsg(db));
}

/* Runs every statement of a trusted script (the embedded migrations), discarding rows. */
static int exec_script(sqlite3 *db, const char *sql)
{
	const char *tail = sql;

	while (*tail) {
		sqlite3_stmt *s = NULL;
		int rc = sqlite3_prepare_v2(db, tail, -1, &s, &tail);

		if (rc != SQLITE_OK)
			return rc;
		if (!s) /* whitespace or a comment */
			continue;
		while ((rc = sqlite3_step(s)) == SQLITE_ROW)
			;
		sqlite3_finalize(s);
		if (rc != SQLITE_DONE)
			return rc;
	}
	return SQLITE_OK;
}

static int exec_one(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *s = NULL;
	int rc = sqlite3_prepare_v2(db, sql, -1, &s, NULL);

	if (rc == SQLITE_OK) {
		while ((rc = sqlite3_step(s)) == SQLITE_ROW)
			;
		if (rc == SQLITE_DONE)
			rc = SQLITE_OK;
	}
	sqlite3_finalize(s);
	return rc;
}

static int table_exists(sqlite3 *db, const char *name, int *out)
{
	sqlite3_stmt *s = NULL;
	int rc = sqlite3_prepare_v2(db,
		"SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1", -1, &s, NULL);

	if (rc == SQLITE_OK)
		rc = sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
	if (rc == SQLITE_OK) {
		rc = sqlite3_step(s);
		if (rc == SQLITE_ROW || rc == SQLITE_DONE) {
			*out = rc == SQLITE_ROW;
			rc = SQLITE_OK;
		}
	}
	sqlite3_finalize(s);
	return rc;
}

int migrate_version(sqlite3 *db, int *out)
{
	sqlite3_stmt *s = NULL;
	int exists = 0, rc;
	int64_t v = 0;

	if (table_exists(db, "schema_version", &exists) != SQLITE_OK)
		return sqlfail(db, "reading schema_version");
	if (!exists) {
		*out = 0;
		return 0;
	}
	rc = sqlite3_prepare_v2(db, "SELECT ifnull(max(version), 0) FROM schema_version", -1, &s,
				NULL);
	if (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		v = sqlite3_column_int64(s, 0);
		rc = SQLITE_OK;
	}
	if (rc != SQLITE_OK) {
		int ret = sqlfail(db, "reading schema_version");

		sqlite3_finalize(s);
		return ret;
	}
	sqlite3_finalize(s);
	if (v < 0 || v > 999999)
		return kiln_fail(KILN_ERROR, "store: schema_version holds %lld, not a migration number",
				 (long long)v);
	*out = (int)v;
	return 0;
}

static int record(sqlite3 *db, const struct kiln_migration *m)
{
	sqlite3_stmt *s = NULL;
	int rc = sqlite3_prepare_v2(db,
		"INSERT INTO schema_version (version, name, applied_at) VALUES (?1, ?2, ?3)", -1, &s,
		NULL);

	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int(s, 1, m->number);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_text(s, 2, m->name, -1, SQLITE_STATIC);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int64(s, 3, (sqlite3_int64)time(NULL));
	if (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_DONE)
		rc = SQLITE_OK;
	sqlite3_finalize(s);
	return rc;
}

int migrate_check_newer(int current, int known)
{
	if (current <= known)
		return 0;
	return kiln_fail(KILN_ENEWER,
			 "store: the database has schema version %d, newer than this kiln knows "
			 "(%d): it was written by a newer kiln; upgrade kiln", current, known);
}

int migrate_apply(sqlite3 *db, const struct kiln_migration *list, unsigned count)
{
	int current = 0, known = count ? list[count - 1].number : 0;
	int ret = 0;

	for (unsigned i = 0; i < count; i++) {
		if (list[i].number <= 0 || (i > 0 && list[i].number <= list[i - 1].number))
			return kiln_fail(KILN_ERROR, "store: migration %s is out of order",
					 list[i].name);
	}
	if (!sqlite3_get_autocommit(db))
		return kiln_fail(KILN_ERROR, "store: migrations must not run inside a transaction");
	/* IMMEDIATE: two kilnd threads opening at once serialise here, and the second sees
	 * the first one's work when it reads the version below. */
	if (exec_one(db, "BEGIN IMMEDIATE") != SQLITE_OK)
		return sqlfail(db, "starting the migration transaction");
	if (exec_one(db, sql_version_table) != SQLITE_OK) {
		ret = sqlfail(db, "creating schema_version");
		goto cleanup;
	}
	if ((ret = migrate_version(db, &current)) < 0)
		goto cleanup;
	if ((ret = migrate_check_newer(current, known)) < 0)
		goto cleanup;
	for (unsigned i = 0; i < count; i++) {
		const struct kiln_migration *m = &list[i];

		if (m->number <= current)
			continue;
		if (exec_script(db, m->sql) != SQLITE_OK || record(db, m) != SQLITE_OK) {
			char what[160];

			snprintf(what, sizeof(what), "migration %s", m->name);
			ret = sqlfail(db, what);
			goto cleanup;
		}
	}
	if (exec_one(db, "COMMIT") != SQLITE_OK)
		ret = sqlfail(db, "committing migrations");
cleanup:
	if (ret < 0 && !sqlite3_get_autocommit(db))
		exec_one(db, "ROLLBACK");
	return ret;
}
