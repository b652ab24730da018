/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for the schema migrations: fresh apply, reopen, newer database, failed migration. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "kiln/error.h"
#include "store/migrate.h"
#include "store/migrations.h"
#include "store/store.h"
#include "store_db.h"

struct tmp {
	char dir[64];
	char db[128];
};

static void rm_db(const struct tmp *t)
{
	char p[160];

	unlink(t->db);
	snprintf(p, sizeof(p), "%s-wal", t->db);
	unlink(p);
	snprintf(p, sizeof(p), "%s-shm", t->db);
	unlink(p);
}

static int tmp_setup(void **state)
{
	struct tmp *t = calloc(1, sizeof(*t));

	assert_non_null(t);
	snprintf(t->dir, sizeof(t->dir), "/tmp/kiln-migr-XXXXXX");
	assert_non_null(mkdtemp(t->dir));
	snprintf(t->db, sizeof(t->db), "%s/kiln.db", t->dir);
	*state = t;
	return 0;
}

static int tmp_teardown(void **state)
{
	struct tmp *t = *state;

	rm_db(t);
	assert_int_equal(rmdir(t->dir), 0);
	free(t);
	return 0;
}

/* One integer from a query on a raw connection (the test inspects what the store wrote). */
static int64_t query_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *s = NULL;
	int64_t v;

	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(s), SQLITE_ROW);
	v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return v;
}

static void exec_ok(sqlite3 *db, const char *sql)
{
	assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
}

static int table_exists(sqlite3 *db, const char *name)
{
	char sql[160];

	snprintf(sql, sizeof(sql), "SELECT count(*) FROM sqlite_master WHERE type = 'table'"
		 " AND name = '%s'", name);
	return (int)query_int(db, sql);
}

static void test_fresh_and_reopen(void **state)
{
	struct tmp *t = *state;
	struct store *st = NULL;
	sqlite3 *db = NULL;
	int v = -1;
	int64_t applied;

	assert_true(kiln_migrations_count >= 1);
	assert_int_equal(store_open(&st, t->db), 0);
	assert_int_equal(store_schema_version(st, &v), 0);
	assert_int_equal(v, kiln_migrations[kiln_migrations_count - 1].number);
	store_close(st);
	st = NULL;

	assert_int_equal(sqlite3_open(t->db, &db), SQLITE_OK);
	assert_int_equal(query_int(db, "SELECT count(*) FROM schema_version"), kiln_migrations_count);
	for (unsigned i = 0; i < kiln_migrations_count; i++) {
		char sql[160];

		snprintf(sql, sizeof(sql), "SELECT count(*) FROM schema_version WHERE version = %d"
			 " AND name = '%s'", kiln_migrations[i].number, kiln_migrations[i].name);
		assert_int_equal(query_int(db, sql), 1);
	}
	assert_int_equal(table_exists(db, "nodes"), 1);
	assert_int_equal(table_exists(db, "events"), 1);
	exec_ok(db, "UPDATE schema_version SET applied_at = 42");
	sqlite3_close(db);
	db = NULL;

	/* Reopening applies nothing again. */
	assert_int_equal(store_open(&st, t->db), 0);
	store_close(st);
	assert_int_equal(sqlite3_open(t->db, &db), SQLITE_OK);
	assert_int_equal(query_int(db, "SELECT count(*) FROM schema_version"), kiln_migrations_count);
	applied = query_int(db, "SELECT min(applied_at) FROM schema_version");
	assert_int_equal(applied, 42);
	sqlite3_close(db);
}

static void test_database_mode(void **state)
{
	struct tmp *t = *state;
	struct store *st = NULL;
	sqlite3 *db = NULL;
	sqlite3_stmt *s = NULL;

	assert_int_equal(store_open(&st, t->db), 0);
	store_close(st);
	assert_int_equal(sqlite3_open(t->db, &db), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &s, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(s), SQLITE_ROW);
	assert_string_equal((const char *)sqlite3_column_text(s, 0), "wal");
	sqlite3_finalize(s);
	sqlite3_close(db);
}

static void test_newer_refused(void **state)
{
	struct tmp *t = *state;
	struct store *st = NULL;
	sqlite3 *db = NULL;
	char known[16];

	assert_int_equal(store_open(&st, t->db), 0);
	store_close(st);
	st = NULL;
	assert_int_equal(sqlite3_open(t->db, &db), SQLITE_OK);
	exec_ok(db, "INSERT INTO schema_version VALUES (999, '999_future', 0)");
	sqlite3_close(db);

	assert_int_equal(store_open(&st, t->db), KILN_ENEWER);
	assert_null(st);
	snprintf(known, sizeof(known), "(%d)", kiln_migrations[kiln_migrations_count - 1].number);
	assert_non_null(strstr(kiln_error_last(), "999"));
	assert_non_null(strstr(kiln_error_last(), known));
	assert_non_null(strstr(kiln_error_last(), "newer"));

	/* Refusing changed nothing. */
	assert_int_equal(sqlite3_open(t->db, &db), SQLITE_OK);
	assert_int_equal(query_int(db, "SELECT max(version) FROM schema_version"), 999);
	sqlite3_close(db);
}

static void test_failing_migration_rolls_back(void **state)
{
	struct tmp *t = *state;
	const struct kiln_migration bad[] = {
		{ 1, "001_a", "CREATE TABLE a (x INTEGER); INSERT INTO a VALUES (1);" },
		{ 2, "002_b", "CREATE TABLE b (x INTEGER);\n-- comment\nINSERT INTO nosuch VALUES (1);" },
	};
	const struct kiln_migration good[] = {
		{ 1, "001_a", "CREATE TABLE a (x INTEGER); INSERT INTO a VALUES (1);" },
		{ 2, "002_b", "CREATE TABLE b (x INTEGER);\n-- trailing comment only\n" },
	};
	sqlite3 *db = NULL;
	int v = -1;

	assert_int_equal(sqlite3_open(t->db, &db), SQLITE_OK);
	assert_int_equal(migrate_apply(db, bad, 2), KILN_ERROR);
	assert_non_null(strstr(kiln_error_last(), "002_b"));
	assert_non_null(strstr(kiln_error_last(), "nosuch"));
	/* Neither the good first migration nor half of the second remains. */
	assert_int_equal(table_exists(db, "a"), 0);
	assert_int_equal(table_exists(db, "b"), 0);
	assert_int_equal(migrate_version(db, &v), 0);
	assert_int_equal(v, 0);
	assert_true(sqlite3_get_autocommit(db));

	/* Step by step: 1 alone, then the fixed list adds only 2. */
	assert_int_equal(migrate_apply(db, good, 1), 0);
	assert_int_equal(migrate_version(db, &v), 0);
	assert_int_equal(v, 1);
	assert_int_equal(migrate_apply(db, good, 2), 0);
	assert_int_equal(migrate_version(db, &v), 0);
	assert_int_equal(v, 2);
	assert_int_equal(query_int(db, "SELECT count(*) FROM a"), 1);
	assert_int_equal(table_exists(db, "b"), 1);

	/* A failure after a success keeps the earlier migrations. */
	assert_int_equal(migrate_apply(db, (const struct kiln_migration[]){
		good[0], good[1], { 3, "003_c", "CREATE TABLE c (x); SELEC 1;" } }, 3), KILN_ERROR);
	assert_non_null(strstr(kiln_error_last(), "003_c"));
	assert_int_equal(migrate_version(db, &v), 0);
	assert_int_equal(v, 2);
	assert_int_equal(table_exists(db, "c"), 0);

	/* This list knows only 1: the database at 2 is newer. */
	assert_int_equal(migrate_apply(db, good, 1), KILN_ENEWER);
	assert_non_null(strstr(kiln_error_last(), "2"));
	sqlite3_close(db);
}

static void test_bad_lists(void **state)
{
	struct tmp *t = *state;
	const struct kiln_migration unordered[] = {
		{ 2, "002_b", "CREATE TABLE b (x);" },
		{ 1, "001_a", "CREATE TABLE a (x);" },
	};
	sqlite3 *db = NULL;

	assert_int_equal(sqlite3_open(t->db, &db), SQLITE_OK);
	assert_int_equal(migrate_apply(db, unordered, 2), KILN_ERROR);
	assert_non_null(strstr(kiln_error_last(), "out of order"));
	assert_int_equal(table_exists(db, "b"), 0);

	/* Not inside someone else's transaction. */
	exec_ok(db, "BEGIN");
	assert_int_equal(migrate_apply(db, unordered + 1, 1), KILN_ERROR);
	exec_ok(db, "ROLLBACK");
	assert_int_equal(table_exists(db, "a"), 0);
	sqlite3_close(db);
}

/* 011: a database of 010 with GPU rows keeps their identity and ECC counts, loses their
 * telemetry and detail, and its summary gets the utilisation the rows held. */
static void test_gpu_telemetry_moved(void **state)
{
	struct tmp *t = *state;
	sqlite3 *db = NULL;
	unsigned upto10 = 0;
	int v = -1;

	while (upto10 < kiln_migrations_count && kiln_migrations[upto10].number <= 10)
		upto10++;
	assert_int_equal(kiln_migrations[upto10 - 1].number, 10);
	assert_int_equal(sqlite3_open(t->db, &db), SQLITE_OK);
	assert_int_equal(migrate_apply(db, kiln_migrations, upto10), 0);
	exec_ok(db, "INSERT INTO nodes (id, name, created_at, updated_at) VALUES (1, 'gpu01', 1, 1),"
		    " (2, 'gpu02', 1, 1);"
		    "INSERT INTO node_agent_state (node_id, report_id, last_seen, report_time,"
		    " gpu_count, gpu_count_max, report) VALUES (1, 'r1', 10, 10, 2, 2, '{}'),"
		    " (2, 'r2', 10, 10, 0, 0, '{}');"
		    "INSERT INTO node_agent_summary (node_id, gpu_count_max, gpu_hottest_c,"
		    " gpu_power_w, audit_facts) VALUES (1, 2, 60, 500, '{}'), (2, 0, NULL, NULL, '{}');"
		    "INSERT INTO node_gpus (node_id, gpu_index, uuid, memory_total_bytes,"
		    " memory_used_bytes, temperature_c, power_draw_w, utilization_gpu_pct,"
		    " ecc_aggregate_uncorrected, detail) VALUES"
		    " (1, 0, 'GPU-a', 80, 5, 50, 250, 20, 3, '{}'),"
		    " (1, 1, 'GPU-b', 80, 6, 60, 250, 40, 0, '{}');");
	assert_int_equal(migrate_apply(db, kiln_migrations, kiln_migrations_count), 0);
	assert_int_equal(migrate_version(db, &v), 0);
	assert_int_equal(v, kiln_migrations[kiln_migrations_count - 1].number);
	assert_int_equal(query_int(db, "SELECT gpu_utilization_avg_pct FROM node_agent_summary"
				       " WHERE node_id = 1"), 30);
	assert_int_equal(query_int(db, "SELECT gpu_utilization_avg_pct IS NULL"
				       " FROM node_agent_summary WHERE node_id = 2"), 1);
	assert_int_equal(query_int(db, "SELECT count(*) FROM node_gpus WHERE node_id = 1"
				       " AND uuid IN ('GPU-a', 'GPU-b')"), 2);
	assert_int_equal(query_int(db, "SELECT ecc_aggregate_uncorrected FROM node_gpus"
				       " WHERE uuid = 'GPU-a'"), 3);
	assert_int_equal(query_int(db, "SELECT count(*) FROM pragma_table_info('node_gpus')"
				       " WHERE name IN ('memory_used_bytes', 'temperature_c',"
				       " 'power_draw_w', 'utilization_gpu_pct', 'detail')"), 0);
	sqlite3_close(db);
}

static void test_embedded_list_in_order(void **state)
{
	(void)state;
	for (unsigned i = 0; i < kiln_migrations_count; i++) {
		char prefix[8];

		snprintf(prefix, sizeof(prefix), "%03d_", kiln_migrations[i].number);
		assert_int_equal(strncmp(kiln_migrations[i].name, prefix, 4), 0);
		if (i > 0)
			assert_true(kiln_migrations[i].number > kiln_migrations[i - 1].number);
	}
	assert_int_equal(kiln_migrations[0].number, 1);
}

/* PostgreSQL's list has the SQLite list's numbers and names, one for one (a number is one
 * change on both backends, recorded in the same schema_version). */
static void test_pg_list_matches(void **state)
{
	(void)state;
	assert_int_equal(kiln_pg_migrations_count, kiln_migrations_count);
	for (unsigned i = 0; i < kiln_migrations_count; i++) {
		assert_int_equal(kiln_pg_migrations[i].number, kiln_migrations[i].number);
		assert_string_equal(kiln_pg_migrations[i].name, kiln_migrations[i].name);
	}
}

/* On PostgreSQL (KILN_TEST_PG): every migration applies and is recorded; a database written
 * by a newer kiln is refused with KILN_ENEWER and left as it was. */
static void test_pg_newer_refused(void **state)
{
	char dir[64], target[FX_TARGET_MAX], known[16];
	struct store *st = NULL;
	PGconn *c;
	PGresult *res;
	int v = 0;

	(void)state;
	if (!fx_pg()) {
		print_message("skipped: KILN_TEST_PG names no PostgreSQL server\n");
		skip();
	}
	fx_db_make(dir, sizeof(dir), target, sizeof(target), "kiln-migr-pg");
	assert_int_equal(store_open(&st, target), 0);
	assert_int_equal(store_schema_version(st, &v), 0);
	assert_int_equal(v, kiln_migrations[kiln_migrations_count - 1].number);
	store_close(st);
	st = NULL;

	c = PQconnectdb(target + strlen(STORE_PG_PREFIX));
	res = PQexec(c, "SELECT count(*) FROM schema_version");
	assert_int_equal(atoi(PQgetvalue(res, 0, 0)), (int)kiln_migrations_count);
	PQclear(res);
	res = PQexec(c, "INSERT INTO schema_version VALUES (999, '999_future', 0)");
	assert_int_equal(PQresultStatus(res), PGRES_COMMAND_OK);
	PQclear(res);

	assert_int_equal(store_open(&st, target), KILN_ENEWER);
	assert_null(st);
	snprintf(known, sizeof(known), "(%d)", kiln_migrations[kiln_migrations_count - 1].number);
	assert_non_null(strstr(kiln_error_last(), "999"));
	assert_non_null(strstr(kiln_error_last(), known));
	assert_non_null(strstr(kiln_error_last(), "newer"));
	res = PQexec(c, "SELECT max(version) FROM schema_version");
	assert_int_equal(atoi(PQgetvalue(res, 0, 0)), 999);
	PQclear(res);
	PQfinish(c);
	fx_db_remove(dir, target);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_fresh_and_reopen, tmp_setup, tmp_teardown),
		cmocka_unit_test_setup_teardown(test_database_mode, tmp_setup, tmp_teardown),
		cmocka_unit_test_setup_teardown(test_newer_refused, tmp_setup, tmp_teardown),
		cmocka_unit_test_setup_teardown(test_failing_migration_rolls_back, tmp_setup,
						tmp_teardown),
		cmocka_unit_test_setup_teardown(test_bad_lists, tmp_setup, tmp_teardown),
		cmocka_unit_test_setup_teardown(test_gpu_telemetry_moved, tmp_setup, tmp_teardown),
		cmocka_unit_test(test_embedded_list_in_order),
		cmocka_unit_test(test_pg_list_matches),
		cmocka_unit_test(test_pg_newer_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
