/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One way to run a statement on either backend (SQLite, PostgreSQL): a typed parameter list
 * in, a row callback out. Every store_*.c function is written on these; only the backend
 * files (store_sqlite.c, store_pg.c) see a driver's API.
 *
 * SQL is written once in the dialect both backends accept: numbered placeholders ?1..?N
 * (the PostgreSQL backend rewrites them to $1..$N), coalesce() rather than ifnull(),
 * INSERT ... ON CONFLICT rather than INSERT OR REPLACE/IGNORE, RETURNING id rather than
 * last_insert_rowid(), integers for booleans. A statement whose SQL cannot be common gives
 * its PostgreSQL text in .pg.
 *
 * Example:
 *	static const struct sql_stmt GET = {
 *		STMT_CONSOLE_GET, "reading console capture",
 *		"SELECT coalesce(c.enabled, 0) FROM nodes n ... WHERE n.name = ?1", NULL};
 *	int64_t on;
 *	ret = sql_int(st, &GET, SQL_ARGS(SQL_TEXT(node)), &on);   // 1 row, 0 none, < 0 error
 */
#ifndef KILN_STORE_SQL_H
#define KILN_STORE_SQL_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

struct store;

/* A statement: its slot in the cache (enum store_stmt_id, or STMT_NONE for one prepared per
 * call), what it does (for error messages: "store: reading X: ..."), its SQL. */
struct sql_stmt {
	int id;
	const char *what;
	const char *sql;
	const char *pg; /* the PostgreSQL text where it differs, else NULL */
};

enum sql_type { SQL_T_NULL, SQL_T_INT, SQL_T_REAL, SQL_T_TEXT, SQL_T_BLOB, SQL_T_LIMIT };

struct sql_arg {
	enum sql_type type;
	int64_t i;
	double r;
	const void *p; /* text (NUL-terminated) or blob bytes */
	size_t len;    /* blob length */
};

#define SQL_NULL ((struct sql_arg){.type = SQL_T_NULL})
#define SQL_INT(v) ((struct sql_arg){.type = SQL_T_INT, .i = (int64_t)(v)})
/* A boolean as 0/1. */
#define SQL_BOOL(v) ((struct sql_arg){.type = SQL_T_INT, .i = (v) ? 1 : 0})
/* An integer, or NULL when null is true. */
#define SQL_INT_OR_NULL(v, null)                                                                    \
	((struct sql_arg){.type = (null) ? SQL_T_NULL : SQL_T_INT, .i = (int64_t)(v)})
/* An integer, NULL when negative (unknown). */
#define SQL_INT_KNOWN(v) SQL_INT_OR_NULL((v), (v) < 0)
/* An id, NULL when not positive (none). */
#define SQL_ID_OR_NULL(v) SQL_INT_OR_NULL((v), (v) <= 0)
/* A double; NaN (and infinities) bind NULL. */
#define SQL_REAL(v) ((struct sql_arg){.type = isfinite(v) ? SQL_T_REAL : SQL_T_NULL, .r = (v)})
/* A string; NULL binds NULL. */
#define SQL_TEXT(v) ((struct sql_arg){.type = (v) ? SQL_T_TEXT : SQL_T_NULL, .p = (v)})
/* Bytes; a NULL pointer binds NULL. */
#define SQL_BLOB(v, n)                                                                              \
	((struct sql_arg){.type = (v) ? SQL_T_BLOB : SQL_T_NULL, .p = (v), .len = (n)})
/* A row limit: 0 (or beyond int64) means none. */
#define SQL_LIMIT(n) ((struct sql_arg){.type = SQL_T_LIMIT, .i = sql_limit_value(n)})

/* The argument list of a call: SQL_ARGS(SQL_INT(id), SQL_TEXT(name)), or SQL_NO_ARGS. */
#define SQL_ARGS(...)                                                                               \
	((const struct sql_arg[]){__VA_ARGS__}),                                                    \
		(sizeof((const struct sql_arg[]){__VA_ARGS__}) / sizeof(struct sql_arg))
#define SQL_NO_ARGS NULL, 0

static inline int64_t sql_limit_value(size_t n)
{
	return n == 0 || n > (size_t)INT64_MAX ? -1 : (int64_t)n;
}

/* --- reading a row (inside a callback; pointers stay valid until it returns) --------- */

struct sql_row; /* the backend's current row */

int sql_col_null(const struct sql_row *r, int col);
int64_t sql_col_int(const struct sql_row *r, int col); /* 0 when NULL */
int64_t sql_col_int_or(const struct sql_row *r, int col, int64_t dflt);
double sql_col_real(const struct sql_row *r, int col); /* NaN when NULL */
const char *sql_col_text(const struct sql_row *r, int col); /* NULL when NULL */
const void *sql_col_blob(const struct sql_row *r, int col, size_t *len); /* NULL when NULL */
/* A new copy of a text column (NULL stays NULL); KILN_ERROR on ENOMEM. */
int sql_col_strdup(const struct sql_row *r, int col, char **out);
/* A new copy of a blob column (*out NULL, *len 0 when NULL); KILN_ERROR on ENOMEM. */
int sql_col_blobdup(const struct sql_row *r, int col, unsigned char **out, size_t *len);
/* Copies the text columns first..first+n-1 into *dst[0..n-1] (sql_col_strdup each). */
int sql_col_strdups(const struct sql_row *r, int first, char **const dst[], size_t n);
/* Copies a text column into buf (truncating), dflt when NULL. */
void sql_col_word(const struct sql_row *r, int col, char *buf, size_t len, const char *dflt);

/* Called once a row. 0 goes on; SQL_STOP ends the statement early (the runner returns the
 * rows seen); a negative return stops it and is returned by the runner. */
#define SQL_STOP 1
typedef int (*sql_row_fn)(const struct sql_row *r, void *ctx);

/* --- running -------------------------------------------------------------------------- */

/*
 * Runs q with args, calling fn (may be NULL) for every row. Returns the number of rows seen,
 * or a kiln error with "store: <q->what>: <driver message>" set. *changes (may be NULL) is
 * the number of rows a write changed.
 */
int sql_run(struct store *st, const struct sql_stmt *q, const struct sql_arg *args, size_t n,
	    sql_row_fn fn, void *ctx, int64_t *changes);
/* A write: the number of rows it changed, or an error. */
int64_t sql_exec(struct store *st, const struct sql_stmt *q, const struct sql_arg *args,
		 size_t n);
/* A write whose count the caller does not need: 0 or an error. Inside store_begin_nodes()
 * on PostgreSQL it is sent without waiting, and a failure shows at a later statement or at
 * the commit (store.h). */
int sql_write(struct store *st, const struct sql_stmt *q, const struct sql_arg *args, size_t n);
/* sql_write whose count is read later: *changes (which must outlive the call) is set at once,
 * or in the pipeline when the next statement that waits has returned; the caller runs one
 * before it reads *changes. */
int sql_exec_later(struct store *st, const struct sql_stmt *q, const struct sql_arg *args,
		   size_t n, int64_t *changes);
/* The first row only (fn called once): 1 when there was one, 0 when none, or an error. */
int sql_one(struct store *st, const struct sql_stmt *q, const struct sql_arg *args, size_t n,
	    sql_row_fn fn, void *ctx);
/* The first column of the first row as an integer: 1 found (*out set), 0 none, or an error. */
int sql_int(struct store *st, const struct sql_stmt *q, const struct sql_arg *args, size_t n,
	    int64_t *out);
/* The first column of the first row as a new string (NULL for NULL): 1, 0 none, or an error. */
int sql_text(struct store *st, const struct sql_stmt *q, const struct sql_arg *args, size_t n,
	     char **out);

/* An INSERT ... RETURNING id: 0 with *out_id set (0 when no row came back), or an error. */
int sql_insert_id(struct store *st, const struct sql_stmt *q, const struct sql_arg *args,
		  size_t n, int64_t *out_id);

/*
 * Every row into a new array of elements of size elem: read fills one zeroed element from a
 * row; clear (may be NULL) frees what read put in one. On error the elements read so far are
 * cleared and freed and *out is unchanged. Returns 0 or an error.
 */
int sql_list(struct store *st, const struct sql_stmt *q, const struct sql_arg *args, size_t n,
	     void *out, size_t *out_count, size_t elem,
	     int (*read)(const struct sql_row *r, void *elem), void (*clear)(void *elem));
/* Clears each of list[0..count) (elements of size elem) with clear and frees list; NULL-safe. */
void sql_list_free(void *list, size_t count, size_t elem, void (*clear)(void *elem));

#endif
