/* SPDX-License-Identifier: Apache-2.0 */
/* The schema migrations embedded at build time from schema/NNN_name.sql (and schema/pg/). */
#ifndef KILN_MIGRATIONS_H
#define KILN_MIGRATIONS_H

struct kiln_migration {
	int number;       /* NNN */
	const char *name; /* "NNN_name" */
	const char *sql;
};

extern const struct kiln_migration kiln_migrations[];
extern const unsigned kiln_migrations_count;
/* The same numbers for PostgreSQL: schema/pg/NNN_name.sql where the SQL differs, else the
 * common file. */
extern const struct kiln_migration kiln_pg_migrations[];
extern const unsigned kiln_pg_migrations_count;

#endif
