/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The PostgreSQL backend (libpq): one connection per store handle; this file connects,
 * migrates and keeps transactions, store_pg_run.c runs the statements (and the pipeline).
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
 * store_begin_nodes() holds the writers' lock shared and locks its nodes instead, and turns
 * the pipeline on (store.h).
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
#include "store/store_pg_internal.h"

/* The advisory lock keys: kiln's writers, and the migrations at open. */
#define PG_LOCK_WRITERS STORE_PG_WRITER_LOCK
#define PG_LOCK_MIGRATE "7305874132"
/* Each node's own lock (store_begin_nodes()): this key and the node id's low 31 bits. */
#define PG_LOCK_NODES "730587413"
#define LOCK_TIMEOUT "5s" /* SQLite's busy timeout */
#define PASSWORD_MAX 1024

/* --- transactions ----------------------------------------------------------------------- */

/* BEGIN, with the writers' lock when locked (store_begin(); a savepoint outside a
 * transaction begins one without, as SQLite's deferred one takes its lock only to write). */
static int begin(struct store *st, int locked)
{
	int ret;

	pg_of(st)->tx = 0;
	if ((ret = pg_reconnect(st)) < 0 ||
	    (ret = pg_simple(st, "BEGIN", "beginning a transaction")) < 0)
		return ret;
	if (locked && (ret = pg_simple(st, "SELECT pg_advisory_xact_lock(" PG_LOCK_WRITERS ")",
				       "beginning a transaction")) < 0) {
		pg_simple(st, "ROLLBACK", "rolling back");
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

static int cmp_id(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/*
 * BEGIN; the writers' lock shared (a store_begin() transaction still runs alone); each node's
 * own lock, in the order of their ids so that two such transactions never wait on each
 * other in a circle: one round trip. Then the pipeline.
 */
static int pg_begin_nodes(struct store *st, const int64_t *ids, size_t n)
{
	struct pg *pg = pg_of(st);
	int64_t *sorted = n ? malloc(n * sizeof(*sorted)) : NULL;
	size_t len = 256 + n * 24, o;
	char *sql = malloc(len);
	int ret;

	if ((n && !sorted) || !sql) {
		free(sorted);
		free(sql);
		return kiln_fail(KILN_ERROR, "store: out of memory");
	}
	if (n)
		memcpy(sorted, ids, n * sizeof(*sorted));
	qsort(sorted, n, sizeof(*sorted), cmp_id);
	o = (size_t)snprintf(sql, len, "BEGIN; SELECT pg_advisory_xact_lock_shared(" PG_LOCK_WRITERS
				       "); SELECT pg_advisory_xact_lock(" PG_LOCK_NODES
				       ", k) FROM unnest('{");
	for (size_t i = 0; i < n; i++)
		if (i == 0 || sorted[i] != sorted[i - 1])
			o += (size_t)snprintf(sql + o, len - o, "%s%d", i ? "," : "",
					      (int)(sorted[i] & 0x7fffffff));
	snprintf(sql + o, len - o, "}'::int4[]) AS k");
	free(sorted);
	pg->sp_depth = pg->sp_implicit = pg->tx = 0;
	if ((ret = pg_reconnect(st)) == 0)
		ret = pg_simple(st, sql, "beginning a transaction");
	free(sql);
	if (ret == 0 && (ret = pg_pipe_enter(st)) < 0)
		pg_simple(st, "ROLLBACK", "rolling back");
	if (ret < 0 && pg_in_transaction(st))
		pg_simple(st, "ROLLBACK", "rolling back");
	pg->tx = ret == 0;
	return ret;
}

/* Leaves the pipeline, its owed answers read and dropped; the caller's message (why the
 * transaction ends) is kept. */
static void pipe_drop(struct store *st)
{
	struct pg *pg = pg_of(st);
	char msg[512];

	if (!pg->pipe)
		return;
	snprintf(msg, sizeof(msg), "%s", kiln_error_last());
	pg_pipe_leave(st);
	pg->lost = 0;
	kiln_error_clear();
	if (msg[0])
		kiln_fail(KILN_ERROR, "%s", msg);
}

static int pg_commit(struct store *st)
{
	struct pg *pg = pg_of(st);
	int aborted, ret;

	pg->sp_depth = pg->sp_implicit = pg->tx = 0;
	if (pg->pipe) {
		/* the owed writes' answers and the COMMIT's in one round trip; a lost
		 * transaction's COMMIT is answered ROLLBACK, and fails */
		ret = pg_pipe_commit(st);
		pipe_drop(st);
		if (ret < 0 && pg_in_transaction(st))
			pg_simple(st, "ROLLBACK", "rolling back");
		return ret;
	}
	aborted = PQtransactionStatus(pg->conn) == PQTRANS_INERROR;
	if (aborted) {
		pg_simple(st, "ROLLBACK", "rolling back");
		return kiln_fail(KILN_ERROR, "store: committing: the transaction was rolled back "
					     "after an earlier error");
	}
	ret = pg_simple(st, "COMMIT", "committing");
	if (ret < 0 && pg_in_transaction(st))
		pg_simple(st, "ROLLBACK", "rolling back");
	return ret;
}

static int pg_rollback(struct store *st)
{
	struct pg *pg = pg_of(st);

	pg->sp_depth = pg->sp_implicit = pg->tx = 0;
	pipe_drop(st);
	if (!pg_in_transaction(st))
		return 0;
	return pg_simple(st, "ROLLBACK", "rolling back");
}

/* As in SQLite, a savepoint outside a transaction begins one (deferred: without the
 * writers' lock; its statements are atomic together, row locks order it against others),
 * and releasing it commits. In the pipeline, savepoints are sent without waiting. */
static int pg_savepoint(struct store *st)
{
	struct pg *pg = pg_of(st);
	int ret;

	if (!pg_in_transaction(st)) {
		if ((ret = begin(st, 0)) < 0)
			return ret;
		pg->sp_depth = 0;
		pg->sp_implicit = 1;
	} else if (pg->sp_depth == 0) {
		pg->sp_implicit = 0;
	}
	if ((ret = pg_simple_nowait(st, "SAVEPOINT kiln_sp", "opening a savepoint")) < 0) {
		if (pg->sp_depth == 0 && pg->sp_implicit) {
			pg_simple(st, "ROLLBACK", "rolling back");
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
	int ret = pg_simple_nowait(st, "RELEASE kiln_sp", "releasing a savepoint");

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

/* A lost pipeline cannot be rolled back to a savepoint (the failed write may be an earlier
 * savepoint's): it fails, and the transaction stays lost until it ends. */
static int pg_rollback_to(struct store *st)
{
	int ret = pg_simple_nowait(st, "ROLLBACK TO kiln_sp", "rolling back");

	if (ret < 0) {
		struct pg *pg = pg_of(st);

		if (pg->sp_depth <= 1 && pg->sp_implicit)
			pg_rollback(st);
		else if (pg->sp_depth > 0)
			pg->sp_depth--;
		return ret;
	}
	if ((ret = pg_simple_nowait(st, "RELEASE kiln_sp", "releasing a savepoint")) < 0)
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

	if ((ret = pg_simple(st, "BEGIN", "starting the migration transaction")) < 0)
		return ret;
	if ((ret = pg_simple(st, "SELECT pg_advisory_xact_lock(" PG_LOCK_MIGRATE ")",
			  "starting the migration transaction")) < 0 ||
	    (ret = pg_simple(st,
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
		if ((ret = pg_simple(st, list[i].sql, what)) < 0 || (ret = record(st, &list[i])) < 0)
			goto fail;
	}
	if ((ret = pg_simple(st, "COMMIT", "committing migrations")) < 0)
		goto fail;
	return 0;
fail:
	if (pg_in_transaction(st))
		pg_simple(st, "ROLLBACK", "rolling back");
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

	if ((ret = pg_reconnect(st)) < 0)
		return ret;
	quoted = PQescapeIdentifier(pg_of(st)->conn, channel, strlen(channel));
	if (!quoted)
		return kiln_fail(KILN_ERROR, "store: listening on %s: out of memory", channel);
	if (asprintf(&sql, "LISTEN %s", quoted) < 0) {
		PQfreemem(quoted);
		return kiln_fail(KILN_ERROR, "out of memory");
	}
	PQfreemem(quoted);
	ret = pg_simple(st, sql, "listening for notifications");
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
				 pg_message(PQerrorMessage(conn), buf, sizeof(buf)));
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
	pg_blobs_free(pg);
	free(pg->blobs);
	PQfinish(pg->conn);
	free(pg);
	st->pg = NULL;
}

static int64_t pg_round_trips(struct store *st)
{
	return pg_of(st)->trips;
}

static const struct store_backend pg_backend = {
	.name = "postgresql",
	.run = pg_run,
	.write = pg_write,
	.col_null = pg_col_null,
	.col_int = pg_col_int,
	.col_real = pg_col_real,
	.col_text = pg_col_text,
	.col_blob = pg_col_blob,
	.begin = pg_begin,
	.begin_nodes = pg_begin_nodes,
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
	.round_trips = pg_round_trips,
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
				pg_message(PQerrorMessage(pg->conn), buf, sizeof(buf)));
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
	if ((ret = pg_simple(st,
			  "SET lock_timeout = '" LOCK_TIMEOUT "'; SET client_min_messages = warning",
			  "setting up the connection")) < 0)
		goto fail;
	/* Reports and their history are large text values: LZ4 compresses them several times
	 * faster than PostgreSQL's own pglz. A server built without LZ4 refuses it: pglz then. */
	if (pg_simple(st, "SET default_toast_compression = lz4", "choosing compression") < 0)
		kiln_error_clear();
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
