/* The schema migrations embedded at build time from schema/NNN_name.sql. */
#ifndef KILN_MIGRATIONS_H
#define KILN_MIGRATIONS_H

struct kiln_migration {
	int number;       /* NNN */
	const char *name; /* "NNN_name" */
	const char *sql;
};

extern const struct kiln_migration kiln_migrations[];
extern const unsigned kiln_migrations_count;

#endif
