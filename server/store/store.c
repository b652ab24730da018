/* The SQLite store: opening the database, the statement cache, transactions. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kiln/error.h"
#include "store/migrate.h"
#include "store/migrations.h"
#include "store/store_internal.h"

#define BUSY_TIMEOUT_MS 5000
/* After a checkpoint the -wal file is truncated to this: WAL keeps its largest size
 * otherwise (a burst of agent reports left hundreds of MB behind). */
#define WAL_SIZE_LIMIT "67108864"

static int64_t clock_time(void)
{
	return (int64_t)time(NULL);
}

int64_t store_now(struct store *st)
{
	return st->now();
}

void store_clock_set(struct store *st, int64_t (*now)(void))
{
	st->now = now ? now : clock_time;
}

int store_fail(struct store *st, int rc, const char *what)
{
	int code = KILN_ERROR;

	switch (rc & 0xff) {
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		code = KILN_EBUSY;
		break;
	case SQLITE_CONSTRAINT:
		if (rc == SQLITE_CONSTRAINT_UNIQUE || rc == SQLITE_CONSTRAINT_PRIMARYKEY)
			code = KILN_EEXISTS;
		else if (rc == SQLITE_CONSTRAINT_FOREIGNKEY)
			code = KILN_ENOTFOUND;
		else
			code = KILN_EINVAL;
		break;
	default:
		break;
	}
	return kiln_fail(code, "store: %s: %s", what, sqlite3_errmsg(st->db));
}

int store_stmt(struct store *st, sqlite3_stmt **out, enum store_stmt_id id, const char *sql)
{
	sqlite3_stmt *s = st->stmt[id];

	if (!s) {
		int rc = sqlite3_prepare_v3(st->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, NULL);

		if (rc != SQLITE_OK)
			return store_fail(st, rc, "preparing a statement");
		st->stmt[id] = s;
	} else {
		sqlite3_reset(s);
		sqlite3_clear_bindings(s);
	}
	*out = s;
	return 0;
}

void store_stmt_done(sqlite3_stmt *s)
{
	if (!s)
		return;
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
}

int store_bind_text(sqlite3_stmt *s, int idx, const char *v)
{
	if (!v)
		return sqlite3_bind_null(s, idx);
	return sqlite3_bind_text(s, idx, v, -1, SQLITE_STATIC);
}

double store_column_real_or_nan(sqlite3_stmt *s, int idx)
{
	return sqlite3_column_type(s, idx) == SQLITE_NULL ? NAN : sqlite3_column_double(s, idx);
}

int store_column_strdup(char **out, sqlite3_stmt *s, int idx)
{
	const unsigned char *v = sqlite3_column_text(s, idx);

	if (!v) {
		if (sqlite3_column_type(s, idx) != SQLITE_NULL)
			return kiln_fail(KILN_ERROR, "store: out of memory");
		*out = NULL;
		return 0;
	}
	*out = strdup((const char *)v);
	if (!*out)
		return kiln_fail(KILN_ERROR, "store: out of memory");
	return 0;
}

void store_bind_limit(sqlite3_stmt *s, int idx, size_t limit)
{
	sqlite3_bind_int64(s, idx, limit == 0 || limit > (size_t)INT64_MAX ? -1 : (sqlite3_int64)limit);
}

int store_list_grow(void **list, size_t *cap, size_t count, size_t sz)
{
	size_t ncap;
	void *nl;

	if (count < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 16;
	nl = realloc(*list, ncap * sz);
	if (!nl)
		return kiln_fail(KILN_ERROR, "store: out of memory");
	memset((char *)nl + *cap * sz, 0, (ncap - *cap) * sz);
	*list = nl;
	*cap = ncap;
	return 0;
}

/* Runs a cached statement that returns no rows. */
static int run_simple(struct store *st, enum store_stmt_id id, const char *sql, const char *what)
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, id, sql)) < 0)
		return ret;
	rc = sqlite3_step(s);
	ret = rc == SQLITE_DONE ? 0 : store_fail(st, rc, what);
	store_stmt_done(s);
	return ret;
}

int store_savepoint(struct store *st)
{
	return run_simple(st, STMT_SAVEPOINT, "SAVEPOINT kiln_sp", "opening a savepoint");
}

int store_release(struct store *st)
{
	return run_simple(st, STMT_RELEASE, "RELEASE kiln_sp", "releasing a savepoint");
}

void store_rollback_to(struct store *st)
{
	char msg[512];

	/* Keep the caller's message: it says why we are rolling back. */
	snprintf(msg, sizeof(msg), "%s", kiln_error_last());
	if (run_simple(st, STMT_ROLLBACK_TO, "ROLLBACK TO kiln_sp", "rolling back") == 0)
		run_simple(st, STMT_RELEASE, "RELEASE kiln_sp", "releasing a savepoint");
	kiln_fail(KILN_ERROR, "%s", msg);
}

int store_begin(struct store *st)
{
	/* IMMEDIATE takes the write lock now (waiting up to the busy timeout) rather than
	 * failing later when a read turns into a write. */
	return run_simple(st, STMT_BEGIN, "BEGIN IMMEDIATE", "beginning a transaction");
}

int store_commit(struct store *st)
{
	return run_simple(st, STMT_COMMIT, "COMMIT", "committing");
}

int store_rollback(struct store *st)
{
	if (sqlite3_get_autocommit(st->db))
		return 0; /* SQLite already rolled back (e.g. after SQLITE_FULL) */
	return run_simple(st, STMT_ROLLBACK, "ROLLBACK", "rolling back");
}

/* Runs a PRAGMA and copies its first column into buf ("" when no row). */
static int pragma(struct store *st, const char *sql, char *buf, size_t bufsz)
{
	sqlite3_stmt *s = NULL;
	int rc = sqlite3_prepare_v2(st->db, sql, -1, &s, NULL);

	if (rc != SQLITE_OK)
		return store_fail(st, rc, sql);
	buf[0] = '\0';
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		const unsigned char *v = sqlite3_column_text(s, 0);

		snprintf(buf, bufsz, "%s", v ? (const char *)v : "");
		while ((rc = sqlite3_step(s)) == SQLITE_ROW)
			;
	}
	if (rc != SQLITE_DONE) {
		int ret = store_fail(st, rc, sql);

		sqlite3_finalize(s);
		return ret;
	}
	sqlite3_finalize(s);
	return 0;
}

/* Creates the file 0600 before SQLite does (it would follow the umask); the -wal and -shm
 * files copy the database file's mode. An existing file is left alone: closing any descriptor
 * of a file drops every POSIX lock this process holds on it, so opening and closing it while
 * other handles of this process use it would let another process delete the live WAL. */
static int precreate(const char *path)
{
	struct stat sb;
	int fd;

	if (strcmp(path, ":memory:") == 0 || lstat(path, &sb) == 0)
		return 0;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return kiln_fail(KILN_ERROR, "store: %s: %s", path, strerror(errno));
	close(fd);
	return 0;
}

int store_open(struct store **out, const char *path)
{
	struct store *st = NULL;
	char val[64];
	int rc, ret;

	if ((ret = precreate(path)) < 0)
		return ret;
	st = calloc(1, sizeof(*st));
	if (!st)
		return kiln_fail(KILN_ERROR, "store: out of memory");
	st->now = clock_time;
	rc = sqlite3_open_v2(path, &st->db,
			     SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK) {
		ret = kiln_fail(KILN_ERROR, "store: opening %s: %s", path,
				st->db ? sqlite3_errmsg(st->db) : sqlite3_errstr(rc));
		goto cleanup;
	}
	sqlite3_extended_result_codes(st->db, 1);
	sqlite3_busy_timeout(st->db, BUSY_TIMEOUT_MS);
	if ((ret = pragma(st, "PRAGMA journal_mode = WAL", val, sizeof(val))) < 0)
		goto cleanup;
	if (strcmp(val, "wal") != 0 && strcmp(path, ":memory:") != 0) {
		ret = kiln_fail(KILN_ERROR, "store: %s: cannot switch to WAL mode (journal mode '%s')",
				path, val);
		goto cleanup;
	}
	if ((ret = pragma(st, "PRAGMA journal_size_limit = " WAL_SIZE_LIMIT, val, sizeof(val))) < 0)
		goto cleanup;
	if ((ret = pragma(st, "PRAGMA foreign_keys = ON", val, sizeof(val))) < 0 ||
	    (ret = pragma(st, "PRAGMA foreign_keys", val, sizeof(val))) < 0)
		goto cleanup;
	if (strcmp(val, "1") != 0) {
		ret = kiln_fail(KILN_ERROR, "store: this SQLite cannot enforce foreign keys");
		goto cleanup;
	}
	if ((ret = migrate_apply(st->db, kiln_migrations, kiln_migrations_count)) < 0) {
		kiln_fail_prefix(ret, "%s", path);
		goto cleanup;
	}
	*out = st;
	st = NULL;
cleanup:
	store_close(st);
	return ret;
}

void store_close(struct store *st)
{
	if (!st)
		return;
	for (int i = 0; i < STMT_COUNT; i++)
		sqlite3_finalize(st->stmt[i]);
	sqlite3_close(st->db);
	free(st);
}

int store_schema_version(struct store *st, int *out)
{
	return migrate_version(st->db, out);
}
