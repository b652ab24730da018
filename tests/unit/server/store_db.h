/* SPDX-License-Identifier: Apache-2.0 */
/* The database under a unit test: a SQLite file in a new temporary folder, or, when
 * KILN_TEST_PG names a PostgreSQL server (tests/pg/pg-server.sh), a fresh database there
 * whose store target goes where the path would. Included by the test files that use it. */
#ifndef KILN_TEST_STORE_DB_H
#define KILN_TEST_STORE_DB_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#define FX_TARGET_MAX 512

/* The PostgreSQL server of this run, or NULL on SQLite. */
static const char *fx_pg(void)
{
	const char *pg = getenv("KILN_TEST_PG");

	return pg && *pg ? pg : NULL;
}

/* Runs one command on the server as the test role. */
static void fx_pg_exec(const char *sql)
{
	PGconn *c = PQconnectdb(fx_pg());
	PGresult *res;

	if (PQstatus(c) != CONNECTION_OK)
		fail_msg("KILN_TEST_PG: %s", PQerrorMessage(c));
	res = PQexec(c, sql);
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		fail_msg("%s: %s", sql, PQresultErrorMessage(res));
	PQclear(res);
	PQfinish(c);
}

/* Makes dir (a /tmp folder named after prefix) and the store target: dir/kiln.db, or a
 * new PostgreSQL database. */
static void fx_db_make(char *dir, size_t dirlen, char *target, size_t len, const char *prefix)
{
	static unsigned seq;

	snprintf(dir, dirlen, "/tmp/%s-XXXXXX", prefix);
	assert_non_null(mkdtemp(dir));
	if (fx_pg()) {
		char name[64], sql[128];

		snprintf(name, sizeof(name), "kiln_unit_%ld_%u_%ld", (long)getpid(), seq++,
			 (long)time(NULL));
		snprintf(sql, sizeof(sql), "CREATE DATABASE %s", name);
		fx_pg_exec(sql);
		snprintf(target, len, "postgresql:%s dbname=%s", fx_pg(), name);
	} else {
		snprintf(target, len, "%s/kiln.db", dir);
	}
}

/* Removes what fx_db_make made (the store closed first). */
static void fx_db_remove(const char *dir, const char *target)
{
	const char *name = strstr(target, " dbname=kiln_unit_");
	char p[FX_TARGET_MAX + 8];

	if (fx_pg() && name) {
		/* no FORCE: that would signal an autovacuum worker, which the test role may not;
		 * a plain DROP stops those, and every store of the test is closed by now */
		snprintf(p, sizeof(p), "DROP DATABASE IF EXISTS %s", name + 8);
		fx_pg_exec(p);
	} else {
		unlink(target);
		snprintf(p, sizeof(p), "%s-wal", target);
		unlink(p);
		snprintf(p, sizeof(p), "%s-shm", target);
		unlink(p);
	}
	assert_int_equal(rmdir(dir), 0);
}

/* Skips the rest of a test that reads the SQLite file itself, saying so. */
#define FX_SQLITE_ONLY()                                                                            \
	do {                                                                                        \
		if (fx_pg()) {                                                                      \
			print_message("skipped on PostgreSQL: %s reads the SQLite file itself\n",  \
				      __func__);                                                    \
			skip();                                                                     \
		}                                                                                   \
	} while (0)

#endif
