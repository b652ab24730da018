/* SPDX-License-Identifier: Apache-2.0 */
/* Copying a kiln SQLite database into an empty PostgreSQL store, table by table, row by row. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "kiln/error.h"
#include "store/migrate.h"
#include "store/migrations.h"
#include "store/store_internal.h"
#include "store/store_migrate.h"

/*
 * The tables that are not copied, and why: everything else in the SQLite file is, whatever
 * later migrations add.
 */
static const char *const SKIPPED[] = {
	"schema_version", /* bookkeeping: the target is migrated to the same version already */
	"key_check",      /* written from the new secret.key instead */
	"bmc_sessions",   /* kept Redfish session tokens, sealed and tied to the instance that
			   * opened them: the new instances log in afresh */
	"instances",      /* the kilnds alive on a shared database (empty on SQLite) */
	"node_calls",     /* calls handed between those instances (empty on SQLite) */
};

/* The columns that hold a value sealed with secret.key: re-sealed with the new key on the
 * way, with the row's ad_column as the associated data (secret_encrypt). */
static const struct sealed {
	const char *table, *column, *ad_column;
} SEALED[] = {
	{"nodes", "bmc_password_enc", "name"},
};

/* A PostgreSQL column type, as the schema's translation makes them (KilnEmbedRun.cmake). */
enum coltype { COL_BIGINT, COL_DOUBLE, COL_BYTEA, COL_TEXT };

struct column {
	char *name;
	enum coltype type;
	int identity; /* a GENERATED ... AS IDENTITY column: its sequence is set after */
	int sealed;   /* re-sealed, with column ad as associated data */
	int ad;
};

struct table {
	char *name;
	int done;
};

static int skipped(const char *table)
{
	for (size_t i = 0; i < sizeof(SKIPPED) / sizeof(SKIPPED[0]); i++)
		if (strcmp(SKIPPED[i], table) == 0)
			return 1;
	return 0;
}

static int src_fail(sqlite3 *db, const char *path, const char *what)
{
	return kiln_fail(KILN_ERROR, "migrate: %s: %s: %s", path, what, sqlite3_errmsg(db));
}

/* The first column of sql's first row as a new string ("" when no row); *out freed by the
 * caller. An argument, when not NULL, binds ?1. */
static int src_text(sqlite3 *db, const char *path, const char *sql, const char *arg,
		    char **out)
{
	sqlite3_stmt *s = NULL;
	const unsigned char *v;
	int rc = sqlite3_prepare_v2(db, sql, -1, &s, NULL);

	if (rc == SQLITE_OK && arg)
		rc = sqlite3_bind_text(s, 1, arg, -1, SQLITE_STATIC);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(s);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		int ret = src_fail(db, path, "reading");

		sqlite3_finalize(s);
		return ret;
	}
	v = rc == SQLITE_ROW ? sqlite3_column_text(s, 0) : NULL;
	*out = strdup(v ? (const char *)v : "");
	sqlite3_finalize(s);
	return *out ? 0 : kiln_fail(KILN_ERROR, "out of memory");
}

/*
 * Opens path read-only and starts a read transaction on it (one snapshot of every table,
 * even beside a running kilnd); refuses what is not a kiln database of this schema.
 */
static int src_open(sqlite3 **out, const char *path, const char *old_key_check)
{
	int version = 0, known = kiln_migrations[kiln_migrations_count - 1].number, ret;
	char *check = NULL;
	sqlite3 *db = NULL;

	if (access(path, R_OK) != 0)
		return kiln_fail(KILN_ENOTFOUND, "migrate: %s: no such readable file", path);
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) !=
	    SQLITE_OK) {
		ret = src_fail(db, path, "opening");
		goto fail;
	}
	sqlite3_busy_timeout(db, 5000);
	if (sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
		ret = src_fail(db, path, "beginning a read");
		goto fail;
	}
	if (migrate_version(db, &version) < 0 || version == 0) {
		ret = kiln_fail(KILN_EINVAL, "migrate: %s is not a kiln database (%s)", path,
				version == 0 ? "no schema_version" : sqlite3_errmsg(db));
		goto fail;
	}
	if ((ret = migrate_check_newer(version, known)) < 0) {
		kiln_fail_prefix(ret, "migrate: %s", path);
		goto fail;
	}
	if (version < known) {
		ret = kiln_fail(KILN_EINVAL,
				"migrate: %s has schema version %d, older than this kilnd's (%d): "
				"start this kilnd on it once (it migrates the file), stop it, and "
				"migrate again", path, version, known);
		goto fail;
	}
	if ((ret = src_text(db, path, "SELECT value FROM key_check", NULL, &check)) < 0)
		goto fail;
	if (*check && old_key_check && strcmp(check, old_key_check) != 0) {
		ret = kiln_fail(KILN_ECONFIG, "migrate: the secret.key beside %s is not the key "
					      "that database was used with (its check value differs)",
				path);
		goto fail;
	}
	free(check);
	*out = db;
	return 0;
fail:
	free(check);
	sqlite3_close(db);
	return ret;
}

/* The tables of the source, in an order where each comes after those its foreign keys
 * name (so the target's constraints hold at every insert). */
static int src_tables(sqlite3 *db, const char *path, struct table **out, size_t *out_n)
{
	struct table *t = NULL;
	size_t n = 0, cap = 0, placed = 0;
	sqlite3_stmt *s = NULL;
	int rc, ret = 0;

	rc = sqlite3_prepare_v2(db, "SELECT name FROM sqlite_master WHERE type = 'table'"
				    " AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name",
				-1, &s, NULL);
	while (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		if ((ret = store_list_grow((void **)&t, &cap, n, sizeof(*t))) < 0)
			goto done;
		if (!(t[n++].name = strdup((const char *)sqlite3_column_text(s, 0)))) {
			ret = kiln_fail(KILN_ERROR, "out of memory");
			goto done;
		}
		rc = SQLITE_OK;
	}
	sqlite3_finalize(s);
	s = NULL;
	if (rc != SQLITE_DONE) {
		ret = src_fail(db, path, "listing the tables");
		goto done;
	}
	/* Each pass moves forward the tables whose referenced tables are placed already. */
	while (placed < n) {
		size_t before = placed;

		for (size_t i = placed; i < n; i++) {
			int ready = 1;

			rc = sqlite3_prepare_v2(db, "SELECT \"table\" FROM pragma_foreign_key_list(?1)",
						-1, &s, NULL);
			if (rc == SQLITE_OK)
				sqlite3_bind_text(s, 1, t[i].name, -1, SQLITE_STATIC);
			while (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
				const char *ref = (const char *)sqlite3_column_text(s, 0);
				int found = strcmp(ref, t[i].name) == 0;

				for (size_t j = 0; j < placed && !found; j++)
					found = strcmp(t[j].name, ref) == 0;
				ready &= found;
				rc = SQLITE_OK;
			}
			sqlite3_finalize(s);
			s = NULL;
			if (rc != SQLITE_DONE) {
				ret = src_fail(db, path, "reading the foreign keys");
				goto done;
			}
			if (ready) {
				struct table tmp = t[placed];

				t[placed++] = t[i];
				t[i] = tmp;
			}
		}
		if (placed == before) {
			ret = kiln_fail(KILN_EINVAL, "migrate: %s: the foreign keys of table %s "
						     "name a table that is not there", path,
					t[placed].name);
			goto done;
		}
	}
done:
	sqlite3_finalize(s);
	if (ret < 0) {
		for (size_t i = 0; i < n; i++)
			free(t[i].name);
		free(t);
		return ret;
	}
	*out = t;
	*out_n = n;
	return 0;
}

static void columns_free(struct column *c, size_t n)
{
	for (size_t i = 0; c && i < n; i++)
		free(c[i].name);
	free(c);
}

/* The target's type of table.column (and whether it is an identity column). */
struct target_col {
	char type[32];
	int identity;
};

static int target_col_row(const struct sql_row *r, void *ctx)
{
	struct target_col *tc = ctx;

	sql_col_word(r, 0, tc->type, sizeof(tc->type), "");
	tc->identity = strcmp(sql_col_text(r, 1) ? sql_col_text(r, 1) : "", "YES") == 0;
	return 0;
}

static int target_col(struct store *st, const char *table, struct column *c)
{
	static const struct sql_stmt Q = {
		STMT_NONE, "reading the target's columns",
		"SELECT data_type, is_identity FROM information_schema.columns"
		" WHERE table_schema = current_schema() AND table_name = ?1 AND column_name = ?2",
		NULL};
	static const struct {
		const char *name;
		enum coltype type;
	} types[] = {
		{"bigint", COL_BIGINT},
		{"double precision", COL_DOUBLE},
		{"bytea", COL_BYTEA},
		{"text", COL_TEXT},
	};
	struct target_col tc = {"", 0};
	int ret = sql_one(st, &Q, SQL_ARGS(SQL_TEXT(table), SQL_TEXT(c->name)), target_col_row,
			  &tc);

	if (ret < 0)
		return ret;
	if (ret == 0)
		return kiln_fail(KILN_EINVAL, "migrate: the target has no column %s.%s", table,
				 c->name);
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		if (strcmp(types[i].name, tc.type) == 0) {
			c->type = types[i].type;
			c->identity = tc.identity;
			return 0;
		}
	}
	return kiln_fail(KILN_EINVAL, "migrate: the target's column %s.%s has type %s, which "
				      "kiln does not copy", table, c->name, tc.type);
}

/* The source columns of table, typed by the target's. */
static int table_columns(sqlite3 *db, const char *path, struct store *st, const char *table,
			 struct column **out, size_t *out_n)
{
	struct column *c = NULL;
	size_t n = 0, cap = 0;
	sqlite3_stmt *s = NULL;
	int rc, ret = 0;

	rc = sqlite3_prepare_v2(db, "SELECT name FROM pragma_table_info(?1) ORDER BY cid", -1, &s,
				NULL);
	if (rc == SQLITE_OK)
		sqlite3_bind_text(s, 1, table, -1, SQLITE_STATIC);
	while (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(s, 0);

		rc = SQLITE_OK;
		if ((ret = store_list_grow((void **)&c, &cap, n, sizeof(*c))) < 0)
			goto done;
		if (strchr(name, '"')) {
			ret = kiln_fail(KILN_EINVAL, "migrate: column %s.%s: a name kiln never "
						     "gives", table, name);
			goto done;
		}
		if (!(c[n].name = strdup(name))) {
			ret = kiln_fail(KILN_ERROR, "out of memory");
			goto done;
		}
		c[n].ad = -1;
		if ((ret = target_col(st, table, &c[n++])) < 0)
			goto done;
	}
	if (rc != SQLITE_DONE) {
		ret = src_fail(db, path, "reading the columns");
		goto done;
	}
	for (size_t i = 0; i < sizeof(SEALED) / sizeof(SEALED[0]); i++) {
		if (strcmp(SEALED[i].table, table) != 0)
			continue;
		for (size_t j = 0; j < n; j++)
			if (strcmp(c[j].name, SEALED[i].column) == 0)
				for (size_t k = 0; k < n; k++)
					if (strcmp(c[k].name, SEALED[i].ad_column) == 0) {
						c[j].sealed = 1;
						c[j].ad = (int)k;
					}
	}
done:
	sqlite3_finalize(s);
	if (ret < 0) {
		columns_free(c, n);
		return ret;
	}
	*out = c;
	*out_n = n;
	return 0;
}

/* "SELECT "a", "b" FROM "t"" (select) or "INSERT INTO "t" ("a", "b") VALUES (?1, ?2)";
 * NULL when out of memory. */
static char *statement(const char *table, const struct column *c, size_t n, int select)
{
	char *sql = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&sql, &len);

	if (!f)
		return NULL;
	if (select)
		fputs("SELECT ", f);
	else
		fprintf(f, "INSERT INTO \"%s\" (", table);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s\"%s\"", i ? ", " : "", c[i].name);
	if (select) {
		fprintf(f, " FROM \"%s\"", table);
	} else {
		fprintf(f, ") VALUES (");
		for (size_t i = 0; i < n; i++)
			fprintf(f, "%s?%zu", i ? ", " : "", i + 1);
		fprintf(f, ")");
	}
	if (fclose(f) != 0) {
		free(sql);
		return NULL;
	}
	return sql;
}

/* Row row's column i as the target's type wants it; a sealed value re-sealed into *sealed
 * (freed by the caller). */
static int arg_of(struct sql_arg *a, sqlite3_stmt *s, const struct column *c, int i,
		  const struct store_migrate_ops *ops, unsigned char **sealed,
		  const char *table)
{
	int kind = sqlite3_column_type(s, i);

	if (kind == SQLITE_NULL) {
		*a = SQL_NULL;
		return 0;
	}
	switch (c[i].type) {
	case COL_BIGINT:
		if (kind != SQLITE_INTEGER)
			return kiln_fail(KILN_EINVAL, "migrate: %s.%s holds '%s', not an integer",
					 table, c[i].name, sqlite3_column_text(s, i));
		*a = SQL_INT(sqlite3_column_int64(s, i));
		return 0;
	case COL_DOUBLE:
		*a = SQL_REAL(sqlite3_column_double(s, i));
		return 0;
	case COL_TEXT:
		*a = SQL_TEXT((const char *)sqlite3_column_text(s, i));
		return 0;
	case COL_BYTEA:
		break;
	}
	{
		const void *p = sqlite3_column_blob(s, i);
		size_t len = (size_t)sqlite3_column_bytes(s, i), out_len = 0;
		const char *ad = c[i].ad >= 0 ? (const char *)sqlite3_column_text(s, c[i].ad) : NULL;
		int ret;

		if (!c[i].sealed) {
			*a = SQL_BLOB(p ? p : "", len);
			return 0;
		}
		if ((ret = ops->reseal(ops->ud, sealed, &out_len, p ? p : "", len,
				       ad ? ad : "")) < 0) {
			kiln_fail_prefix(ret, "migrate: %s.%s of '%s'", table, c[i].name,
					 ad ? ad : "");
			return ret;
		}
		*a = SQL_BLOB(*sealed, out_len);
		return 0;
	}
}

/* Copies every row of one table; *out_rows is their count. */
static int copy_table(struct store *st, sqlite3 *db, const char *path, const char *table,
		      const struct store_migrate_ops *ops, int64_t *out_rows)
{
	struct column *c = NULL;
	struct sql_arg *args = NULL;
	unsigned char **sealed = NULL;
	char *select = NULL, *insert = NULL, *reset = NULL;
	sqlite3_stmt *s = NULL;
	size_t n = 0;
	int64_t rows = 0;
	int rc, ret;

	if ((ret = table_columns(db, path, st, table, &c, &n)) < 0)
		return ret;
	select = statement(table, c, n, 1);
	insert = statement(table, c, n, 0);
	args = calloc(n ? n : 1, sizeof(*args));
	sealed = calloc(n ? n : 1, sizeof(*sealed));
	if (!select || !insert || !args || !sealed) {
		ret = kiln_fail(KILN_ERROR, "out of memory");
		goto done;
	}
	if (sqlite3_prepare_v2(db, select, -1, &s, NULL) != SQLITE_OK) {
		ret = src_fail(db, path, table);
		goto done;
	}
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct sql_stmt q = {STMT_NONE, "copying a row", insert, NULL};

		for (size_t i = 0; i < n && ret == 0; i++)
			ret = arg_of(&args[i], s, c, (int)i, ops, &sealed[i], table);
		if (ret == 0 && (ret = (int)sql_exec(st, &q, args, n)) >= 0)
			ret = 0;
		for (size_t i = 0; i < n; i++) {
			free(sealed[i]);
			sealed[i] = NULL;
		}
		if (ret < 0) {
			kiln_fail_prefix(ret, "migrate: table %s", table);
			goto done;
		}
		rows++;
	}
	if (rc != SQLITE_DONE) {
		ret = src_fail(db, path, table);
		goto done;
	}
	/* The next id the target hands out comes after the copied ones. */
	for (size_t i = 0; i < n; i++) {
		struct sql_stmt q = {STMT_NONE, "setting an identity's sequence", NULL, NULL};

		if (!c[i].identity)
			continue;
		free(reset);
		if (asprintf(&reset, "SELECT setval(pg_get_serial_sequence(?1, ?2),"
				     " (SELECT max(\"%s\") FROM \"%s\"))", c[i].name, table) < 0) {
			reset = NULL;
			ret = kiln_fail(KILN_ERROR, "out of memory");
			goto done;
		}
		q.sql = reset;
		if ((ret = sql_run(st, &q, SQL_ARGS(SQL_TEXT(table), SQL_TEXT(c[i].name)), NULL,
				   NULL, NULL)) < 0)
			goto done;
	}
	ret = 0;
	*out_rows = rows;
done:
	sqlite3_finalize(s);
	free(select);
	free(insert);
	free(reset);
	free(args);
	free(sealed);
	columns_free(c, n);
	return ret;
}

/* Refuses a target that holds nodes or tokens: the copy is for a fresh database. */
static int target_empty(struct store *st)
{
	static const struct sql_stmt Q = {
		STMT_NONE, "counting the target's nodes and tokens",
		"SELECT (SELECT count(*) FROM nodes) + (SELECT count(*) FROM api_tokens) +"
		" (SELECT count(*) FROM agent_tokens) + (SELECT count(*) FROM enroll_tokens)",
		NULL};
	int64_t rows = 0;
	int ret = sql_int(st, &Q, SQL_NO_ARGS, &rows);

	if (ret < 0)
		return ret;
	if (rows > 0)
		return kiln_fail(KILN_EEXISTS,
				 "migrate: the PostgreSQL database already holds nodes or tokens "
				 "(%lld rows): migrate into an empty database, one no kilnd has "
				 "started on", (long long)rows);
	return 0;
}

static int key_check_set(struct store *st, const char *value)
{
	static const struct sql_stmt DEL = {STMT_NONE, "clearing the key check",
					    "DELETE FROM key_check", NULL};
	static const struct sql_stmt PUT = {
		STMT_NONE, "recording the secret.key check",
		"INSERT INTO key_check (one, value, created_at) VALUES (1, ?1, ?2)", NULL};
	int64_t ret = sql_exec(st, &DEL, SQL_NO_ARGS);

	if (ret >= 0)
		ret = sql_exec(st, &PUT, SQL_ARGS(SQL_TEXT(value), SQL_INT(store_now(st))));
	return ret < 0 ? (int)ret : 0;
}

int store_migrate_from_sqlite(struct store *st, const char *path,
			      const struct store_migrate_ops *ops)
{
	struct table *t = NULL;
	sqlite3 *db = NULL;
	size_t n = 0;
	int ret;

	if ((ret = src_open(&db, path, ops->old_key_check)) < 0)
		return ret;
	if (strcmp(st->be->name, "postgresql") != 0) {
		ret = kiln_fail(KILN_EINVAL, "migrate: the target store is %s, not PostgreSQL",
				st->be->name);
		goto done;
	}
	if ((ret = src_tables(db, path, &t, &n)) < 0 || (ret = store_begin(st)) < 0)
		goto done;
	if ((ret = target_empty(st)) < 0)
		goto rollback;
	for (size_t i = 0; i < n; i++) {
		int64_t rows = 0;

		if (skipped(t[i].name))
			continue;
		if ((ret = copy_table(st, db, path, t[i].name, ops, &rows)) < 0)
			goto rollback;
		if (ops->copied)
			ops->copied(ops->ud, t[i].name, rows);
	}
	if ((ret = key_check_set(st, ops->new_key_check)) < 0 || (ret = store_commit(st)) < 0)
		goto rollback;
	goto done;
rollback:
	store_rollback(st);
done:
	for (size_t i = 0; i < n; i++)
		free(t[i].name);
	free(t);
	sqlite3_close(db);
	return ret;
}
