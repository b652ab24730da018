/* SPDX-License-Identifier: Apache-2.0 */
/* Applying schema migrations to an open SQLite connection (store.c and the tests use it). */
#ifndef KILN_STORE_MIGRATE_H
#define KILN_STORE_MIGRATE_H

#include <sqlite3.h>

#include "store/migrations.h"

/*
 * Applies, in one IMMEDIATE transaction, every migration of list (numbers strictly rising)
 * newer than the database's schema_version, recording each there. The database is left
 * unchanged on any failure. A database whose schema_version holds a number above the last
 * of list fails with KILN_ENEWER, naming both numbers. Must not run inside a transaction.
 */
int migrate_apply(sqlite3 *db, const struct kiln_migration *list, unsigned count);

/* KILN_ENEWER, naming both numbers, when the database's version current is above known,
 * the last migration this kiln has (both backends refuse such a database). */
int migrate_check_newer(int current, int known);

/* Highest number in schema_version; 0 for a database without one. */
int migrate_version(sqlite3 *db, int *out);

#endif
