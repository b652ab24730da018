/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The PostgreSQL backend's statements: parameters sent as text (blobs as binary), statements
 * prepared once per connection under their slot's name, results read as text; and the
 * pipeline (libpq's pipeline mode) that store_begin_nodes() turns on, in which a write whose
 * answer nobody reads (sql_write()) is sent without waiting: its answer is read with the next
 * statement that waits, or at the commit, and a failure there loses the whole transaction.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "kiln/error.h"
#include "kiln/escape.h"
#include "store/store_pg_internal.h"

/* PostgreSQL type OIDs (pg_type.dat): what the parameters are sent as. */
#define OID_BYTEA 17
#define OID_INT8 20
#define OID_TEXT 25
#define OID_FLOAT8 701

/* A libpq message on one line: its line breaks as "; ", none at the end. */
const char *pg_message(const char *m, char *buf, size_t len)
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

int pg_fail(struct store *st, PGresult *res, const char *what)
{
	char buf[512];
	/* the primary message alone ("duplicate key value violates ..."), without the
	 * "ERROR:" and the LINE/DETAIL lines of PQresultErrorMessage */
	const char *m = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
	int code = code_of(res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL);

	if (!m || !*m)
		m = PQerrorMessage(pg_of(st)->conn);
	code = kiln_fail(code, "store: %s: %s", what, pg_message(m, buf, sizeof(buf)));
	PQclear(res);
	return code;
}

/* --- the pipeline ------------------------------------------------------------------------ */

/* A statement while the pipeline is lost: it is not sent. */
static int lost_fail(const char *what)
{
	return kiln_fail(KILN_ERROR, "store: %s: an earlier write of this transaction failed",
			 what);
}

/*
 * Syncs the pipeline and reads every owed answer, then (keep not NULL) the answer to the
 * command sent last, which its caller waits for: *keep is its result. The first failure is
 * returned. One of an owed command loses the transaction (what failed may belong to a
 * savepoint already released); one of the waited command leaves it as a failed statement
 * does outside the pipeline: to be rolled back to the savepoint.
 */
static int pipe_sync(struct store *st, const char *what, PGresult **keep)
{
	struct pg *pg = pg_of(st);
	int last = pg->owed + (keep ? 1 : 0) - 1, i = 0, ret = 0, lost = 0;
	PGresult *r;

	if (keep)
		*keep = NULL;
	pg->trips++;
	if (!PQpipelineSync(pg->conn)) {
		pg->owed = 0;
		pg->lost = 1;
		return pg_fail(st, NULL, what ? what : "writing");
	}
	/* each command's results end with a NULL; the sync's answer ends them all */
	for (;;) {
		ExecStatusType s;

		if (!(r = PQgetResult(pg->conn))) {
			if (PQstatus(pg->conn) == CONNECTION_BAD) {
				if (ret == 0)
					ret = pg_fail(st, NULL, what ? what : "writing");
				break;
			}
			i++;
			continue;
		}
		s = PQresultStatus(r);
		if (s == PGRES_PIPELINE_SYNC) {
			PQclear(r);
			break;
		}
		if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) {
			const char *w = i < pg->owed ? pg->owed_what[i] : what;

			if (ret == 0) {
				lost = i < pg->owed;
				ret = s == PGRES_PIPELINE_ABORTED ? lost_fail(w) : pg_fail(st, r, w);
				/* not the waiting caller's own failure: no code it could take for
				 * an answer (a "not found" of its own read) */
				if (lost) {
					char msg[512];

					snprintf(msg, sizeof(msg), "%s", kiln_error_last());
					ret = kiln_fail(KILN_ERROR, "%s", msg);
				}
			} else {
				PQclear(r);
			}
			continue;
		}
		if (keep && i == last && ret == 0) {
			*keep = r;
			continue;
		}
		if (i < pg->owed && pg->owed_changes[i]) {
			const char *c = PQcmdTuples(r);

			*pg->owed_changes[i] = c && *c ? strtoll(c, NULL, 10) : 0;
		}
		PQclear(r);
	}
	pg->owed = 0;
	if (ret < 0) {
		pg->lost |= lost || PQstatus(pg->conn) == CONNECTION_BAD;
		if (keep) {
			PQclear(*keep);
			*keep = NULL;
		}
	}
	return ret;
}

/* Notes a command sent whose answer is owed (its count to go to changes, or NULL); a full
 * pipeline is synced. */
static int owe(struct store *st, const char *what, int64_t *changes)
{
	struct pg *pg = pg_of(st);

	pg->owed_changes[pg->owed] = changes;
	pg->owed_what[pg->owed++] = what;
	return pg->owed == PG_PIPE_MAX ? pipe_sync(st, NULL, NULL) : 0;
}

int pg_pipe_enter(struct store *st)
{
	struct pg *pg = pg_of(st);

	if (!PQenterPipelineMode(pg->conn))
		return pg_fail(st, NULL, "entering pipeline mode");
	pg->pipe = 1;
	pg->owed = pg->lost = 0;
	return 0;
}

int pg_pipe_leave(struct store *st)
{
	struct pg *pg = pg_of(st);
	int ret = 0;

	if (!pg->pipe)
		return 0;
	if (pg->owed)
		ret = pipe_sync(st, NULL, NULL);
	pg->pipe = 0;
	if (!PQexitPipelineMode(pg->conn) && ret == 0)
		ret = pg_fail(st, NULL, "leaving pipeline mode");
	return ret;
}

int pg_pipe_commit(struct store *st)
{
	struct pg *pg = pg_of(st);
	PGresult *res = NULL;
	int ret;

	if (!PQsendQueryParams(pg->conn, "COMMIT", 0, NULL, NULL, NULL, NULL, 0)) {
		pg->lost = 1;
		return pg_fail(st, NULL, "committing");
	}
	if ((ret = pipe_sync(st, "committing", &res)) == 0 && strcmp(PQcmdStatus(res), "COMMIT"))
		ret = kiln_fail(KILN_ERROR, "store: committing: the transaction was rolled back "
					    "after an earlier error");
	PQclear(res);
	return ret;
}

/* Sends sql (no parameters) into the pipeline; waits for its answer when wait. */
static int pipe_simple(struct store *st, const char *sql, const char *what, int wait)
{
	PGresult *res = NULL;
	int ret;

	if (pg_of(st)->lost)
		return lost_fail(what);
	if (!PQsendQueryParams(pg_of(st)->conn, sql, 0, NULL, NULL, NULL, NULL, 0))
		return pg_fail(st, NULL, what);
	if (!wait)
		return owe(st, what, NULL);
	ret = pipe_sync(st, what, &res);
	PQclear(res);
	return ret;
}

int pg_simple(struct store *st, const char *sql, const char *what)
{
	PGresult *res;
	ExecStatusType s;

	if (pg_of(st)->pipe)
		return pipe_simple(st, sql, what, 1);
	pg_of(st)->trips++;
	res = PQexec(pg_of(st)->conn, sql);
	s = PQresultStatus(res);
	if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK)
		return pg_fail(st, res, what);
	PQclear(res);
	return 0;
}

int pg_simple_nowait(struct store *st, const char *sql, const char *what)
{
	if (pg_of(st)->pipe)
		return pipe_simple(st, sql, what, 0);
	return pg_simple(st, sql, what);
}

int pg_in_transaction(struct store *st)
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

void pg_blobs_free(struct pg *pg)
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

/* Prepares q on this connection under its slot's name unless it already is (in the
 * pipeline too: it waits for the answer, once a statement and connection). */
static int prepare(struct store *st, const struct sql_stmt *q, const struct params *pp, int n)
{
	struct pg *pg = pg_of(st);
	char name[32], *sql;
	PGresult *res = NULL;
	int ret = 0;

	if (pg->prepared[q->id])
		return 0;
	if (!(sql = rewrite(q->pg ? q->pg : q->sql)))
		return kiln_fail(KILN_ERROR, "store: out of memory");
	stmt_name(name, sizeof(name), q->id);
	if (pg->pipe) {
		if (!PQsendPrepare(pg->conn, name, sql, n, pp->types))
			ret = pg_fail(st, NULL, q->what);
		else
			ret = pipe_sync(st, q->what, &res);
	} else {
		pg->trips++;
		res = PQprepare(pg->conn, name, sql, n, pp->types);
		if (PQresultStatus(res) != PGRES_COMMAND_OK) {
			ret = pg_fail(st, res, q->what);
			res = NULL;
		}
	}
	free(sql);
	PQclear(res);
	if (ret == 0)
		pg->prepared[q->id] = 1;
	return ret;
}

/* A lost connection is opened again before the next statement, outside a transaction only:
 * one cut in the middle of a transaction fails every statement until the caller ends it. */
int pg_reconnect(struct store *st)
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

/*
 * Sends q with its parameters pp: outside the pipeline it waits, and *res is the answer; in
 * the pipeline it waits only when wait (a read, or a write whose count is wanted), else
 * the answer is owed and *res stays NULL.
 */
static int send_stmt(struct store *st, const struct sql_stmt *q, const struct params *pp,
		     int n, int wait, int64_t *changes, PGresult **res)
{
	struct pg *pg = pg_of(st);
	char name[32];
	int ret, sent = 0;

	*res = NULL;
	if (pg->pipe && pg->lost)
		return lost_fail(q->what);
	if (!pg->pipe)
		pg->trips++;
	if (q->id == STMT_NONE) {
		char *sql = rewrite(q->pg ? q->pg : q->sql);

		if (!sql)
			return kiln_fail(KILN_ERROR, "store: out of memory");
		if (pg->pipe)
			sent = PQsendQueryParams(pg->conn, sql, n, pp->types, pp->values,
						 pp->lengths, pp->formats, 0);
		else
			*res = PQexecParams(pg->conn, sql, n, pp->types, pp->values, pp->lengths,
					    pp->formats, 0);
		free(sql);
	} else {
		if (q->id < 0 || q->id >= STMT_COUNT)
			return kiln_fail(KILN_ERROR, "store: %s: statement slot %d", q->what, q->id);
		if ((ret = prepare(st, q, pp, n)) < 0)
			return ret;
		stmt_name(name, sizeof(name), q->id);
		if (pg->pipe)
			sent = PQsendQueryPrepared(pg->conn, name, n, pp->values, pp->lengths,
						   pp->formats, 0);
		else
			*res = PQexecPrepared(pg->conn, name, n, pp->values, pp->lengths,
					      pp->formats, 0);
	}
	if (!pg->pipe) {
		ExecStatusType s = PQresultStatus(*res);

		if (s != PGRES_TUPLES_OK && s != PGRES_COMMAND_OK) {
			ret = pg_fail(st, *res, q->what);
			*res = NULL;
			return ret;
		}
		return 0;
	}
	if (!sent) {
		pg->lost = 1;
		return pg_fail(st, NULL, q->what);
	}
	return wait ? pipe_sync(st, q->what, res) : owe(st, q->what, changes);
}

static int run(struct store *st, const struct sql_stmt *q, const struct sql_arg *args, size_t n,
	       sql_row_fn fn, void *ctx, int64_t *changes, int wait)
{
	struct pg *pg = pg_of(st);
	struct params pp = {0};
	struct sql_row row = {st, NULL, 0};
	PGresult *res = NULL;
	int ret, rows, seen = 0;

	if (n > 65535)
		return kiln_fail(KILN_EINVAL, "store: %s: %zu parameters", q->what, n);
	if ((ret = pg_reconnect(st)) < 0)
		return ret;
	if ((ret = params_fill(&pp, q->pg ? q->pg : q->sql, args, n)) < 0 ||
	    (ret = send_stmt(st, q, &pp, (int)n, wait, changes, &res)) < 0 || !res)
		goto done;
	rows = PQntuples(res);
	row.h = res;
	for (int i = 0; i < rows; i++) {
		seen++;
		if (!fn)
			continue;
		row.row = i;
		ret = fn(&row, ctx);
		pg_blobs_free(pg);
		if (ret < 0 || ret == SQL_STOP)
			break;
	}
	if (ret >= 0) {
		const char *c = PQcmdTuples(res);

		if (changes)
			*changes = c && *c ? strtoll(c, NULL, 10) : 0;
		ret = seen;
	}
done:
	PQclear(res);
	params_clear(&pp);
	return ret;
}

int pg_run(struct store *st, const struct sql_stmt *q, const struct sql_arg *args, size_t n,
	   sql_row_fn fn, void *ctx, int64_t *changes)
{
	return run(st, q, args, n, fn, ctx, changes, 1);
}

/* A write whose count nobody reads, or reads later: in the pipeline, its answer is owed. */
int pg_write(struct store *st, const struct sql_stmt *q, const struct sql_arg *args, size_t n,
	     int64_t *changes)
{
	int ret = run(st, q, args, n, NULL, NULL, changes, 0);

	return ret < 0 ? ret : 0;
}

/* --- columns ---------------------------------------------------------------------------- */

int pg_col_null(const struct sql_row *r, int col)
{
	return col >= PQnfields(r->h) || PQgetisnull(r->h, r->row, col);
}

int64_t pg_col_int(const struct sql_row *r, int col)
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

double pg_col_real(const struct sql_row *r, int col)
{
	const char *v = PQgetvalue(r->h, r->row, col);

	if (PQftype(r->h, col) == 16)
		return v[0] == 't';
	return strtod(v, NULL);
}

const char *pg_col_text(const struct sql_row *r, int col)
{
	if (PQftype(r->h, col) == 16) /* SQLite reads a comparison as 1 or 0 */
		return PQgetvalue(r->h, r->row, col)[0] == 't' ? "1" : "0";
	return PQgetvalue(r->h, r->row, col);
}

const void *pg_col_blob(const struct sql_row *r, int col, size_t *len)
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

