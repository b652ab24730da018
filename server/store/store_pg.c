/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The PostgreSQL backend (libpq): one connection per store handle, statements prepared once
 * per connection under their slot's name, parameters sent as text (blobs as binary),
 * results read as text.
 *
 * Writers are serialised the way SQLite's BEGIN IMMEDIATE serialises them: store_begin()
 * takes one transaction-scoped advisory lock right after BEGIN, so a read-modify-write inside
 * a transaction sees no other kiln transaction's writes between its read and its write,
 * across connections and kilnd processes alike. SERIALIZABLE would give the same atomicity
 * but fails a transaction at commit instead, and kilnd's callers have no retry loops; the lock
 * waits instead, at most lock_timeout (the busy timeout SQLite has), then KILN_EBUSY. A
 * single write outside store_begin() takes no lock (as on SQLite it is atomic by itself; it
 * is not ordered against another handle's read-modify-write the way SQLite's one writer
 * orders it: a read-modify-write that must be atomic belongs inside store_begin()).
 *
 * Unlike SQLite, PostgreSQL fails the whole transaction at a failed statement: what follows
 * fails until a rollback (to a savepoint: store_rollback_to() recovers), and store_commit()
 * of such a transaction rolls back and says so.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "kiln/error.h"
#include "kiln/escape.h"
#include "store/migrate.h"
#include "store/migrations.h"
#include "store/store_internal.h"

/* The advisory lock keys: kiln's writers, and the migrations at open. */
#define PG_LOCK_WRITERS STORE_PG_WRITER_LOCK
#define PG_LOCK_MIGRATE "7305874132"
#define LOCK_TIMEOUT "5s" /* SQLite's busy timeout */
#define PASSWORD_MAX 1024

/* PostgreSQL type OIDs (pg_type.dat): what the parameters are sent as. */
#define OID_BYTEA 17
#define OID_INT8 20
#define OID_TEXT 25
#define OID_FLOAT8 701

struct pg {
	PGconn *conn;
	unsigned char prepared[STMT_COUNT];
	int tx;          /* a transaction of ours is open (begun, not yet ended) */
	int sp_depth;    /* savepoints open */
	int sp_implicit; /* the outermost one began the transaction */
	void **blobs;    /* bytea values decoded for the current row */
	size_t nblobs, blobs_cap;
};

static struct pg *pg_of(struct store *st)
{
	return st->pg;
}

/* A libpq message on one line: its line breaks as "; ", none at the end. */
static const char *message(const char *m, char *buf, size_t len)
{
	size_t n, o = 0;

	if (!m || !*m)
		m = "unknown error";
	for (const char *p = m; *p && o + 3 < len; p++) {
		if (*p != '\n') {
			buf[o++] = *p;
		} else if (p[1]) {
			buf[o++] = ';';
			buf[o++] = ' ';
		}
	}
	buf[o] = '\0';
	n = strlen(buf);
	while (n > 0 && buf[n - 1] == ' ')
		buf[--n] = '\0';
	return buf;
}

static int code_of(const char *state)
{
	if (!state)
		return KILN_ERROR;
	if (strcmp(state, "23505") == 0)
		return KILN_EEXISTS;
	if (strcmp(state, "23503") == 0)
		return KILN_ENOTFOUND;
	if (strncmp(state, "23", 2) == 0)
		return KILN_EINVAL;
	if (strcmp(state, "40001") == 0 || strcmp(state, "40P01") == 0 ||
	    strcmp(state, "55P03") == 0)
		return KILN_EBUSY;
	return KILN_ERROR;
}

/* Maps a failed result (or, res NULL, the connection's error) to a kiln code with
 * "store: what: message"; clears res. */
static int pg_fail(struct store *st, PGresult *res, const char *what)
{
	char buf[512];
	/* the primary message alone ("duplicate key value violates ..."), without the
	 * "ERROR:" and the LINE/DETAIL lines of PQresultErrorMessage */
	const char *m = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
	int code = code_of(res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL);

	if (!m || !*m)
		m = PQerrorMessage(pg_of(st)->conn);
	code = kiln_fail(code, "store: %s: %s", what, message(m, buf, sizeof(buf)));
	PQclear(res);
	return code;
}

/* Runs a fixed command (no parameters, no rows kept). */
static int simple(struct store *st, const char *sql, const char *what)
{
	PGresult *res = PQexec(pg_of(st)->conn, sql);
	ExecStatusType s = PQresultStatus(res);

	if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK)
		return pg_fail(st, res, what);
	PQclear(res);
	return 0;
}

static int in_transaction(struct store *st)
{
	PGTransactionStatusType t = PQtransactionStatus(pg_of(st)->conn);

	return t == PQTRANS_INTRANS || t == PQTRANS_INERROR || t == PQTRANS_ACTIVE;
}

/* --- ?N -> $N ------------------------------------------------------------------------- */

/* A new copy of sql with each ?N outside string literals, quoted names and comments
 * written $N. */
static char *rewrite(const char *sql)
{
	size_t len = strlen(sql);
	char *out = malloc(len + 1), *o = out;
	const char *p = sql;

	if (!out)
		return NULL;
	while (*p) {
		if (*p == '\'' || *p == '"') {
			char q = *p;

			*o++ = *p++;
			while (*p && *p != q)
				*o++ = *p++;
			if (*p)
				*o++ = *p++; /* '' inside a literal reads as two literals */
		} else if (p[0] == '-' && p[1] == '-') {
			while (*p && *p != '\n')
				*o++ = *p++;
		} else if (*p == '?' && isdigit((unsigned char)p[1])) {
			*o++ = '$';
			p++;
		} else {
			*o++ = *p++;
		}
	}
	*o = '\0';
	return out;
}

/* --- running ---------------------------------------------------------------------------- */

static void blobs_free(struct pg *pg)
{
	for (size_t i = 0; i < pg->nblobs; i++)
		PQfreemem(pg->blobs[i]);
	pg->nblobs = 0;
}

static void stmt_name(char *buf, size_t len, int id)
{
	snprintf(buf, len, "kiln_%d", id);
}

/* The parameters as libpq wants them: text for numbers (into num), binary for blobs, text
 * that is not UTF-8 mended into fixed[i]. */
struct params {
	Oid *types;
	const char **values;
	int *lengths, *formats;
	char (*num)[32];
	char **fixed;
	size_t n;
};

/*
 * A copy of s with each byte that is not part of valid UTF-8 as U+FFFD, or NULL (s is valid,
 * or out of memory: *err set). PostgreSQL refuses such text in a UTF-8 database ("invalid
 * byte sequence", where SQLite stores or compares the bytes): a name looked up this way is
 * simply not found, and a message is stored with the replacement character.
 */
static char *utf8_mended(const char *s, int *err)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t bad = 0, len = 0;
	uint32_t cp;
	char *out, *o;

	*err = 0;
	while (*p) {
		size_t n = kiln_utf8_seq(p, &cp);

		bad += n == 0;
		len += n ? n : 3;
		p += n ? n : 1;
	}
	if (!bad)
		return NULL;
	if (!(out = o = malloc(len + 1))) {
		*err = 1;
		return NULL;
	}
	for (p = (const unsigned char *)s; *p;) {
		size_t n = kiln_utf8_seq(p, &cp);

		if (n) {
			memcpy(o, p, n);
			o += n, p += n;
		} else {
			memcpy(o, "\xEF\xBF\xBD", 3);
			o += 3, p++;
		}
	}
	*o = '\0';
	return out;
}

/* Whether sql tests placeholder ?idx (1-based) with IS [NOT] NULL. PostgreSQL cannot type a
 * parameter from "$3 IS NULL" when that comes before its other uses ("could not determine
 * data type of parameter $3"), so a NULL bound there is sent as text. */
static int null_tested(const char *sql, size_t idx)
{
	char pat[32];
	size_t len;

	snprintf(pat, sizeof(pat), "?%zu IS ", idx);
	len = strlen(pat);
	for (const char *p = strstr(sql, pat); p; p = strstr(p + 1, pat)) {
		if (strncmp(p + len, "NULL", 4) == 0 || strncmp(p + len, "NOT NULL", 8) == 0)
			return 1;
	}
	return 0;
}

static int params_fill(struct params *pp, const char *sql, const struct sql_arg *args,
		       size_t n)
{
	pp->types = calloc(n ? n : 1, sizeof(*pp->types));
	pp->values = calloc(n ? n : 1, sizeof(*pp->values));
	pp->lengths = calloc(n ? n : 1, sizeof(*pp->lengths));
	pp->formats = calloc(n ? n : 1, sizeof(*pp->formats));
	pp->num = calloc(n ? n : 1, sizeof(*pp->num));
	pp->fixed = calloc(n ? n : 1, sizeof(*pp->fixed));
	pp->n = n;
	if (!pp->types || !pp->values || !pp->lengths || !pp->formats || !pp->num || !pp->fixed)
		return kiln_fail(KILN_ERROR, "store: out of memory");
	for (size_t i = 0; i < n; i++) {
		switch (args[i].type) {
		case SQL_T_LIMIT:
			/* SQLite's -1 is PostgreSQL's NULL: no limit */
			pp->types[i] = OID_INT8;
			if (args[i].i < 0)
				break;
			/* fall through */
		case SQL_T_INT:
			pp->types[i] = OID_INT8;
			snprintf(pp->num[i], sizeof(pp->num[i]), "%lld", (long long)args[i].i);
			pp->values[i] = pp->num[i];
			break;
		case SQL_T_REAL:
			pp->types[i] = OID_FLOAT8;
			snprintf(pp->num[i], sizeof(pp->num[i]), "%.17g", args[i].r);
			pp->values[i] = pp->num[i];
			break;
		case SQL_T_TEXT: {
			int err;

			pp->types[i] = OID_TEXT;
			pp->fixed[i] = utf8_mended(args[i].p, &err);
			if (err)
				return kiln_fail(KILN_ERROR, "store: out of memory");
			pp->values[i] = pp->fixed[i] ? pp->fixed[i] : args[i].p;
			break;
		}
		case SQL_T_BLOB:
			if (args[i].len > (size_t)INT32_MAX)
				return kiln_fail(KILN_ETOOBIG, "store: a blob of %zu bytes",
						 args[i].len);
			pp->types[i] = OID_BYTEA;
			pp->values[i] = args[i].len ? args[i].p : "";
			pp->lengths[i] = (int)args[i].len;
			pp->formats[i] = 1;
			break;
		default: /* NULL: its type inferred from where it stands */
			if (null_tested(sql, i + 1))
				pp->types[i] = OID_TEXT;
			break;
		}
	}
	return 0;
}

static void params_clear(struct params *pp)
{
	free(pp->types);
	free(pp->values);
	free(pp->lengths);
	free(pp->formats);
	free(pp->num);
	for (size_t i = 0; pp->fixed && i < pp->n; i++)
		free(pp->fixed[i]);
	free(pp->fixed);
}

/* Prepares q on this connection under its slot's name unless it already is. */
static int prepare(struct store *st, const struct sql_stmt *q, const struct params *pp, int n)
{
	struct pg *pg = pg_of(st);
	char name[32], *sql;
	PGresult *res;

	if (pg->prepared[q->id])
		return 0;
	if (!(sql = rewrite(q->pg ? q->pg : q->sql)))
		return kiln_fail(KILN_ERROR, "store: out of memory");
	stmt_name(name, sizeof(name), q->id);
	res = PQprepare(pg->conn, name, sql, n, pp->types);
	free(sql);
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		return pg_fail(st, res, q->what);
	PQclear(res);
	pg->prepared[q->id] = 1;
	return 0;
}

/* A lost connection is opened again before the next statement, outside a transaction only:
 * one cut in the middle of a transaction fails every statement until the caller ends it. */
static int reconnect(struct store *st)
{
	struct pg *pg = pg_of(st);

	if (PQstatus(pg->conn) != CONNECTION_BAD)
		return 0;
	if (pg->tx)
		return kiln_fail(KILN_ERROR, "store: the connection to PostgreSQL was lost in a "
					     "transaction");
	PQreset(pg->conn);
	memset(pg->prepared, 0, sizeof(pg->prepared));
	pg->sp_depth = pg->sp_implicit = 0;
	return 0;
}

static int pg_run(struct store *st, const struct sql_stmt *q, const struct sql_arg *args,
		  size_t n, sql_row_fn fn, void *ctx, int64_t *changes)
{
	struct pg *pg = pg_of(st);
	struct params pp = {0};
	struct sql_row row = {st, NULL, 0};
	PGresult *res = NULL;
	ExecStatusType status;
	int ret, rows, seen = 0;

	if (n > 65535)
		return kiln_fail(KILN_EINVAL, "store: %s: %zu parameters", q->what, n);
	if ((ret = reconnect(st)) < 0)
		return ret;
	if ((ret = params_fill(&pp, q->pg ? q->pg : q->sql, args, n)) < 0)
		goto done;
	if (q->id == STMT_NONE) {
		char *sql = rewrite(q->pg ? q->pg : q->sql);

		if (!sql) {
			ret = kiln_fail(KILN_ERROR, "store: out of memory");
			goto done;
		}
		res = PQexecParams(pg->conn, sql, (int)n, pp.types, pp.values, pp.lengths,
				   pp.formats, 0);
		free(sql);
	} else {
		char name[32];

		if (q->id < 0 || q->id >= STMT_COUNT) {
			ret = kiln_fail(KILN_ERROR, "store: %s: statement slot %d", q->what, q->id);
			goto done;
		}
		if ((ret = prepare(st, q, &pp, (int)n)) < 0)
			goto done;
		stmt_name(name, sizeof(name), q->id);
		res = PQexecPrepared(pg->conn, name, (int)n, pp.values, pp.lengths, pp.formats, 0);
	}
	status = PQresultStatus(res);
	if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) {
		ret = pg_fail(st, res, q->what);
		res = NULL;
		goto done;
	}
	rows = PQntuples(res);
	row.h = res;
	ret = 0;
	for (int i = 0; i < rows; i++) {
		seen++;
		if (!fn)
			continue;
		row.row = i;
		ret = fn(&row, ctx);
		blobs_free(pg);
		if (ret < 0 || ret == SQL_STOP)
			break;
	}
	if (ret >= 0) {
		const char *c = PQcmdTuples(res);

		*changes = c && *c ? strtoll(c, NULL, 10) : 0;
		ret = seen;
	}
done:
	PQclear(res);
	params_clear(&pp);
	return ret;
}

/* --- columns ---------------------------------------------------------------------------- */

static int pg_col_null(const struct sql_row *r, int col)
{
	return col >= PQnfields(r->h) || PQgetisnull(r->h, r->row, col);
}

static int64_t pg_col_int(const struct sql_row *r, int col)
{
	const char *v = PQgetvalue(r->h, r->row, col);

	if (PQftype(r->h, col) == 16 /* bool */)
		return v[0] == 't';
	if (strpbrk(v, ".eEnN")) { /* a real (or numeric) read as an integer, as SQLite does */
		double d = strtod(v, NULL);

		if (isnan(d))
			return 0;
		if (d >= 9223372036854775807.0)
			return INT64_MAX;
		if (d <= -9223372036854775808.0)
			return INT64_MIN;
		return (int64_t)d;
	}
	return strtoll(v, NULL, 10);
}

static double pg_col_real(const struct sql_row *r, int col)
{
	const char *v = PQgetvalue(r->h, r->row, col);

	if (PQftype(r->h, col) == 16)
		return v[0] == 't';
	return strtod(v, NULL);
}

static const char *pg_col_text(const struct sql_row *r, int col)
{
	if (PQftype(r->h, col) == 16) /* SQLite reads a comparison as 1 or 0 */
		return PQgetvalue(r->h, r->row, col)[0] == 't' ? "1" : "0";
	return PQgetvalue(r->h, r->row, col);
}

static const void *pg_col_blob(const struct sql_row *r, int col, size_t *len)
{
	struct pg *pg = pg_of(r->st);
	const char *v = PQgetvalue(r->h, r->row, col);
	unsigned char *b;

	if (PQftype(r->h, col) != OID_BYTEA) {
		*len = (size_t)PQgetlength(r->h, r->row, col);
		return v;
	}
	if (pg->nblobs == pg->blobs_cap) {
		size_t cap = pg->blobs_cap ? pg->blobs_cap * 2 : 8;
		void **nb = realloc(pg->blobs, cap * sizeof(*nb));

		if (!nb)
			return NULL;
		pg->blobs = nb;
		pg->blobs_cap = cap;
	}
	if (!(b = PQunescapeBytea((const unsigned char *)v, len)))
		return NULL;
	pg->blobs[pg->nblobs++] = b;
	return b;
}

/* --- transactions ----------------------------------------------------------------------- */

/* BEGIN, with the writers' lock when locked (store_begin(); a savepoint outside a
 * transaction begins one without, as SQLite's deferred one takes its lock only to write). */
static int begin(struct store *st, int locked)
{
	int ret;

	pg_of(st)->tx = 0;
	if ((ret = reconnect(st)) < 0 || (ret = simple(st, "BEGIN", "beginning a transaction")) < 0)
		return ret;
	if (locked && (ret = simple(st, "SELECT pg_advisory_xact_lock(" PG_LOCK_WRITERS ")",
				    "beginning a transaction")) < 0) {
		simple(st, "ROLLBACK", "rolling back");
		return ret;
	}
	pg_of(st)->tx = 1;
	return 0;
}

static int pg_begin(struct store *st)
{
	pg_of(st)->sp_depth = pg_of(st)->sp_implicit = 0;
	return begin(st, 1);
}

static int pg_commit(struct store *st)
{
	struct pg *pg = pg_of(st);
	int aborted = PQtransactionStatus(pg->conn) == PQTRANS_INERROR;
	int ret;

	pg->sp_depth = pg->sp_implicit = pg->tx = 0;
	if (aborted) {
		simple(st, "ROLLBACK", "rolling back");
		return kiln_fail(KILN_ERROR, "store: committing: the transaction was rolled back "
					     "after an earlier error");
	}
	ret = simple(st, "COMMIT", "committing");
	if (ret < 0 && in_transaction(st))
		simple(st, "ROLLBACK", "rolling back");
	return ret;
}

static int pg_rollback(struct store *st)
{
	pg_of(st)->sp_depth = pg_of(st)->sp_implicit = pg_of(st)->tx = 0;
	if (!in_transaction(st))
		return 0;
	return simple(st, "ROLLBACK", "rolling back");
}

/* As in SQLite, a savepoint outside a transaction begins one (deferred: without the
 * writers' lock; its statements are atomic together, row locks order it against others),
 * and releasing it commits. */
static int pg_savepoint(struct store *st)
{
	struct pg *pg = pg_of(st);
	int ret;

	if (!in_transaction(st)) {
		if ((ret = begin(st, 0)) < 0)
			return ret;
		pg->sp_depth = 0;
		pg->sp_implicit = 1;
	} else if (pg->sp_depth == 0) {
		pg->sp_implicit = 0;
	}
	if ((ret = simple(st, "SAVEPOINT kiln_sp", "opening a savepoint")) < 0) {
		if (pg->sp_depth == 0 && pg->sp_implicit) {
			simple(st, "ROLLBACK", "rolling back");
			pg->sp_implicit = 0;
		}
		return ret;
	}
	pg->sp_depth++;
	return 0;
}

/* Closes the savepoint's bookkeeping; commits the transaction it began. */
static int savepoint_closed(struct store *st)
{
	struct pg *pg = pg_of(st);

	if (pg->sp_depth > 0)
		pg->sp_depth--;
	if (pg->sp_depth == 0 && pg->sp_implicit) {
		pg->sp_implicit = 0;
		return pg_commit(st);
	}
	return 0;
}

static int pg_release(struct store *st)
{
	int ret = simple(st, "RELEASE kiln_sp", "releasing a savepoint");

	if (ret < 0) {
		struct pg *pg = pg_of(st);

		if (pg->sp_depth <= 1 && pg->sp_implicit) {
			pg_rollback(st);
		} else if (pg->sp_depth > 0) {
			pg->sp_depth--;
		}
		return ret;
	}
	return savepoint_closed(st);
}

static int pg_rollback_to(struct store *st)
{
	int ret = simple(st, "ROLLBACK TO kiln_sp", "rolling back");

	if (ret < 0) {
		struct pg *pg = pg_of(st);

		if (pg->sp_depth <= 1 && pg->sp_implicit)
			pg_rollback(st);
		else if (pg->sp_depth > 0)
			pg->sp_depth--;
		return ret;
	}
	if ((ret = simple(st, "RELEASE kiln_sp", "releasing a savepoint")) < 0)
		return ret;
	return savepoint_closed(st);
}

/* --- schema ------------------------------------------------------------------------------ */

static int version_read(struct store *st, int *out)
{
	PGresult *res = PQexec(pg_of(st)->conn,
			       "SELECT CASE WHEN to_regclass('schema_version') IS NULL THEN 0 ELSE"
			       " (SELECT coalesce(max(version), 0) FROM schema_version) END");
	long long v;

	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
		return pg_fail(st, res, "reading schema_version");
	v = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
	PQclear(res);
	if (v < 0 || v > 999999)
		return kiln_fail(KILN_ERROR, "store: schema_version holds %lld, not a migration number",
				 v);
	*out = (int)v;
	return 0;
}

static int pg_schema_version(struct store *st, int *out)
{
	return version_read(st, out);
}

static int record(struct store *st, const struct kiln_migration *m)
{
	char num[16], at[32];
	const char *vals[3] = {num, m->name, at};
	PGresult *res;

	snprintf(num, sizeof(num), "%d", m->number);
	snprintf(at, sizeof(at), "%lld", (long long)time(NULL));
	res = PQexecParams(pg_of(st)->conn,
			   "INSERT INTO schema_version (version, name, applied_at) VALUES ($1, $2, $3)",
			   3, NULL, vals, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		return pg_fail(st, res, "recording a migration");
	PQclear(res);
	return 0;
}

/* Applies, in one transaction under the migration lock (kilnd's threads open at once), the
 * migrations newer than schema_version; a newer database is refused. */
static int migrate(struct store *st, const struct kiln_migration *list, unsigned count)
{
	int current = 0, known = count ? list[count - 1].number : 0, ret;

	if ((ret = simple(st, "BEGIN", "starting the migration transaction")) < 0)
		return ret;
	if ((ret = simple(st, "SELECT pg_advisory_xact_lock(" PG_LOCK_MIGRATE ")",
			  "starting the migration transaction")) < 0 ||
	    (ret = simple(st,
			  "CREATE TABLE IF NOT EXISTS schema_version (version bigint PRIMARY KEY,"
			  " name text NOT NULL, applied_at bigint NOT NULL)",
			  "creating schema_version")) < 0 ||
	    (ret = version_read(st, &current)) < 0)
		goto fail;
	if ((ret = migrate_check_newer(current, known)) < 0)
		goto fail;
	for (unsigned i = 0; i < count; i++) {
		char what[160];

		if (list[i].number <= current)
			continue;
		snprintf(what, sizeof(what), "migration %s", list[i].name);
		if ((ret = simple(st, list[i].sql, what)) < 0 || (ret = record(st, &list[i])) < 0)
			goto fail;
	}
	if ((ret = simple(st, "COMMIT", "committing migrations")) < 0)
		goto fail;
	return 0;
fail:
	if (in_transaction(st))
		simple(st, "ROLLBACK", "rolling back");
	return ret;
}

static int pg_checkpoint(struct store *st)
{
	(void)st;
	return 0;
}

static void pg_log_watch(struct store *st, int *frames)
{
	(void)st;
	*frames = 0;
}


/* --- notifications ---------------------------------------------------------------------- */

static int pg_listen(struct store *st, const char *channel)
{
	char *quoted, *sql;
	int ret;

	if ((ret = reconnect(st)) < 0)
		return ret;
	quoted = PQescapeIdentifier(pg_of(st)->conn, channel, strlen(channel));
	if (!quoted)
		return kiln_fail(KILN_ERROR, "store: listening on %s: out of memory", channel);
	if (asprintf(&sql, "LISTEN %s", quoted) < 0) {
		PQfreemem(quoted);
		return kiln_fail(KILN_ERROR, "out of memory");
	}
	PQfreemem(quoted);
	ret = simple(st, sql, "listening for notifications");
	free(sql);
	return ret;
}

static int pg_listen_fd(struct store *st)
{
	return PQsocket(pg_of(st)->conn);
}

static int pg_notifications(struct store *st,
			    void (*fn)(void *ud, const char *channel, const char *payload), void *ud)
{
	PGconn *conn = pg_of(st)->conn;
	PGnotify *n;

	if (!PQconsumeInput(conn)) {
		char buf[512];

		return kiln_fail(KILN_ERROR, "store: reading notifications: %s",
				 message(PQerrorMessage(conn), buf, sizeof(buf)));
	}
	while ((n = PQnotifies(conn))) {
		fn(ud, n->relname, n->extra);
		PQfreemem(n);
	}
	return 0;
}

static void pg_close(struct store *st)
{
	struct pg *pg = pg_of(st);

	if (!pg)
		return;
	blobs_free(pg);
	free(pg->blobs);
	PQfinish(pg->conn);
	free(pg);
	st->pg = NULL;
}

static const struct store_backend pg_backend = {
	.name = "postgresql",
	.run = pg_run,
	.col_null = pg_col_null,
	.col_int = pg_col_int,
	.col_real = pg_col_real,
	.col_text = pg_col_text,
	.col_blob = pg_col_blob,
	.begin = pg_begin,
	.commit = pg_commit,
	.rollback = pg_rollback,
	.savepoint = pg_savepoint,
	.release = pg_release,
	.rollback_to = pg_rollback_to,
	.schema_version = pg_schema_version,
	.checkpoint = pg_checkpoint,
	.log_watch = pg_log_watch,
	.listen = pg_listen,
	.listen_fd = pg_listen_fd,
	.notifications = pg_notifications,
	.close = pg_close,
};

/* --- connecting -------------------------------------------------------------------------- */

static void notice_drop(void *arg, const char *message)
{
	(void)arg;
	(void)message; /* "relation already exists, skipping" and the like */
}

/* Reads the password file: its first line. Refused when others may read it. */
static int password_read(const char *path, char *buf, size_t len)
{
	struct stat sb;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);

	if (fd < 0)
		return kiln_fail(KILN_ECONFIG, "store: password_file %s: %s", path, strerror(errno));
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
		close(fd);
		return kiln_fail(KILN_ECONFIG, "store: password_file %s: not a regular file", path);
	}
	if (sb.st_mode & S_IRWXO) {
		close(fd);
		return kiln_fail(KILN_ECONFIG,
				 "store: password_file %s: others may read it (mode %04o); "
				 "chmod o-rwx it", path, (unsigned)(sb.st_mode & 07777));
	}
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return kiln_fail(KILN_ECONFIG, "store: password_file %s: %s", path, strerror(errno));
	buf[n] = '\0';
	buf[strcspn(buf, "\r\n")] = '\0';
	return 0;
}

/*
 * Opens conninfo (a libpq connection string or URI); password_file, when not NULL, gives
 * the password, read now and handed to libpq as a parameter only.
 */
static int connect_db(struct store *st, const char *conninfo, const char *password_file)
{
	struct pg *pg = pg_of(st);
	char password[PASSWORD_MAX] = "", *err = NULL, buf[512];
	PQconninfoOption *opts = PQconninfoParse(conninfo, &err);
	const char **keys = NULL, **vals = NULL;
	size_t n = 0, i = 0;
	int ret = 0;

	if (!opts) {
		/* libpq's own message quotes the string around the fault, which may be a
		 * password: not repeated */
		ret = kiln_fail(KILN_ECONFIG, err ? "store: the PostgreSQL connection string does "
					      "not parse (keyword=value pairs, or a postgresql:// URI)"
						  : "store: out of memory");
		PQfreemem(err);
		return ret;
	}
	if (password_file && (ret = password_read(password_file, password, sizeof(password))) < 0)
		goto done;
	for (PQconninfoOption *o = opts; o->keyword; o++)
		n++;
	keys = calloc(n + 3, sizeof(*keys));
	vals = calloc(n + 3, sizeof(*vals));
	if (!keys || !vals) {
		ret = kiln_fail(KILN_ERROR, "store: out of memory");
		goto done;
	}
	for (PQconninfoOption *o = opts; o->keyword; o++) {
		if (!o->val || (password_file && strcmp(o->keyword, "password") == 0))
			continue;
		keys[i] = o->keyword;
		vals[i++] = o->val;
	}
	if (password_file) {
		keys[i] = "password";
		vals[i++] = password;
	}
	keys[i] = NULL;
	pg->conn = PQconnectdbParams(keys, vals, 0);
	explicit_bzero(password, sizeof(password));
	if (!pg->conn) {
		ret = kiln_fail(KILN_ERROR, "store: out of memory");
		goto done;
	}
	if (PQstatus(pg->conn) != CONNECTION_OK) {
		ret = kiln_fail(KILN_ERROR, "store: connecting to PostgreSQL: %s",
				message(PQerrorMessage(pg->conn), buf, sizeof(buf)));
		goto done;
	}
	PQsetNoticeProcessor(pg->conn, notice_drop, NULL);
done:
	explicit_bzero(password, sizeof(password));
	free(keys);
	free(vals);
	PQconninfoFree(opts);
	return ret;
}

int store_pg_open(struct store *st, const char *conninfo, const char *password_file)
{
	int ret;

	if (!(st->pg = calloc(1, sizeof(struct pg))))
		return kiln_fail(KILN_ERROR, "store: out of memory");
	if ((ret = connect_db(st, conninfo, password_file)) < 0)
		goto fail;
	if ((ret = simple(st,
			  "SET lock_timeout = '" LOCK_TIMEOUT "'; SET client_min_messages = warning",
			  "setting up the connection")) < 0)
		goto fail;
	if ((ret = migrate(st, kiln_pg_migrations, kiln_pg_migrations_count)) < 0) {
		kiln_fail_prefix(ret, "postgresql");
		goto fail;
	}
	st->be = &pg_backend;
	return 0;
fail:
	pg_close(st);
	return ret;
}
