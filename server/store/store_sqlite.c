/* SPDX-License-Identifier: Apache-2.0 */
/* The SQLite backend: opening the database in WAL mode, the statement cache, transactions. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kiln/error.h"
#include "store/migrate.h"
#include "store/migrations.h"
#include "store/store_internal.h"

#define BUSY_TIMEOUT_MS 5000
/* After a checkpoint the -wal file is truncated to this: WAL keeps its largest size
 * otherwise (a burst of agent reports left hundreds of MB behind). */
#define WAL_SIZE_LIMIT "67108864"

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

static int sqlite_savepoint(struct store *st)
{
	return run_simple(st, STMT_SAVEPOINT, "SAVEPOINT kiln_sp", "opening a savepoint");
}

static int sqlite_release(struct store *st)
{
	return run_simple(st, STMT_RELEASE, "RELEASE kiln_sp", "releasing a savepoint");
}

static int sqlite_rollback_to(struct store *st)
{
	int ret = run_simple(st, STMT_ROLLBACK_TO, "ROLLBACK TO kiln_sp", "rolling back");

	return ret < 0 ? ret : run_simple(st, STMT_RELEASE, "RELEASE kiln_sp", "releasing a savepoint");
}

static int sqlite_begin(struct store *st)
{
	/* IMMEDIATE takes the write lock now (waiting up to the busy timeout) rather than
	 * failing later when a read turns into a write. */
	return run_simple(st, STMT_BEGIN, "BEGIN IMMEDIATE", "beginning a transaction");
}

static int sqlite_commit(struct store *st)
{
	return run_simple(st, STMT_COMMIT, "COMMIT", "committing");
}

static int sqlite_rollback(struct store *st)
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

static int bind(struct store *st, sqlite3_stmt *s, const struct sql_arg *args, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int idx = (int)i + 1, rc;

		switch (args[i].type) {
		case SQL_T_INT:
		case SQL_T_LIMIT:
			rc = sqlite3_bind_int64(s, idx, args[i].i);
			break;
		case SQL_T_REAL:
			rc = sqlite3_bind_double(s, idx, args[i].r);
			break;
		case SQL_T_TEXT:
			rc = sqlite3_bind_text(s, idx, args[i].p, -1, SQLITE_STATIC);
			break;
		case SQL_T_BLOB:
			rc = sqlite3_bind_blob64(s, idx, args[i].p, args[i].len, SQLITE_STATIC);
			break;
		default:
			rc = sqlite3_bind_null(s, idx);
			break;
		}
		if (rc != SQLITE_OK)
			return store_fail(st, rc, "binding a parameter");
	}
	return 0;
}

static int sqlite_run(struct store *st, const struct sql_stmt *q, const struct sql_arg *args,
		      size_t n, sql_row_fn fn, void *ctx, int64_t *changes)
{
	struct sql_row row = {st, NULL, 0};
	sqlite3_stmt *s = NULL;
	int rc, ret, rows = 0;

	if (q->id == STMT_NONE) {
		rc = sqlite3_prepare_v2(st->db, q->sql, -1, &s, NULL);
		if (rc != SQLITE_OK)
			return store_fail(st, rc, q->what);
	} else if ((ret = store_stmt(st, &s, (enum store_stmt_id)q->id, q->sql)) < 0) {
		return ret;
	}
	row.h = s;
	if ((ret = bind(st, s, args, n)) < 0)
		goto done;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		rows++;
		if (!fn)
			continue;
		if ((ret = fn(&row, ctx)) < 0)
			goto done;
		if (ret == SQL_STOP)
			break;
	}
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		ret = store_fail(st, rc, q->what);
		goto done;
	}
	*changes = sqlite3_changes64(st->db);
	ret = rows;
done:
	if (q->id == STMT_NONE)
		sqlite3_finalize(s);
	else
		store_stmt_done(s);
	return ret;
}

static int sqlite_col_null(const struct sql_row *r, int col)
{
	return sqlite3_column_type(r->h, col) == SQLITE_NULL;
}

static int64_t sqlite_col_int(const struct sql_row *r, int col)
{
	return sqlite3_column_int64(r->h, col);
}

static double sqlite_col_real(const struct sql_row *r, int col)
{
	return sqlite3_column_double(r->h, col);
}

static const char *sqlite_col_text(const struct sql_row *r, int col)
{
	return (const char *)sqlite3_column_text(r->h, col);
}

static const void *sqlite_col_blob(const struct sql_row *r, int col, size_t *len)
{
	const void *v = sqlite3_column_blob(r->h, col);

	*len = (size_t)sqlite3_column_bytes(r->h, col);
	return v ? v : "";
}

static int sqlite_schema_version(struct store *st, int *out)
{
	return migrate_version(st->db, out);
}

static int sqlite_checkpoint(struct store *st)
{
	int rc;

	if (!sqlite3_get_autocommit(st->db))
		return kiln_fail(KILN_EINVAL, "store: checkpoint inside a transaction");
	rc = sqlite3_wal_checkpoint_v2(st->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
	if (rc != SQLITE_OK && (rc & 0xff) != SQLITE_BUSY && (rc & 0xff) != SQLITE_LOCKED)
		return store_fail(st, rc, "checkpointing the WAL");
	return 0;
}

static int wal_frames_note(void *arg, sqlite3 *db, const char *name, int frames)
{
	(void)db;
	(void)name;
	*(int *)arg = frames;
	return SQLITE_OK;
}

static void sqlite_log_watch(struct store *st, int *frames)
{
	*frames = 0;
	sqlite3_wal_hook(st->db, wal_frames_note, frames);
}

/* Syncs the folder that holds path, so that a rename into it survives a crash. */
static int dir_sync(const char *path)
{
	char dir[4096];
	const char *slash = strrchr(path, '/');
	int fd, ret = 0;

	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if ((size_t)snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path + 1), path) >=
		 sizeof(dir))
		return kiln_fail(KILN_EINVAL, "store: backup: path too long");
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fsync(fd) < 0)
		ret = kiln_fail(KILN_ERROR, "store: backup: syncing %s: %s", dir, strerror(errno));
	if (fd >= 0)
		close(fd);
	return ret;
}

/*
 * The online backup API copies one read snapshot in a single step (a WAL reader does not
 * stop the writers of other processes), into path.partial first: a failed or interrupted
 * backup never leaves a half copy under the name. The copy is checked (quick_check) and made
 * a plain rollback-journal file, so that it is one self-contained file.
 */
static int sqlite_backup(struct store *st, const char *path)
{
	char tmp[4096], val[64];
	sqlite3 *dst = NULL;
	sqlite3_backup *b;
	struct store copy = { 0 };
	int fd, rc, tries = 0, ret = 0;

	const char *live = sqlite3_db_filename(st->db, "main");
	struct stat a, bs;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.partial", path) >= sizeof(tmp))
		return kiln_fail(KILN_EINVAL, "store: backup: path too long");
	/* Renaming a copy over the live database would lose the writes since the copy. */
	if (live && *live && stat(live, &a) == 0 && stat(path, &bs) == 0 && a.st_dev == bs.st_dev &&
	    a.st_ino == bs.st_ino)
		return kiln_fail(KILN_EINVAL, "store: backup: %s is the database itself", path);
	fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return kiln_fail(KILN_ERROR, "store: backup: %s: %s", tmp, strerror(errno));
	close(fd);
	rc = sqlite3_open_v2(tmp, &dst, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK) {
		ret = kiln_fail(KILN_ERROR, "store: backup: opening %s: %s", tmp,
				dst ? sqlite3_errmsg(dst) : sqlite3_errstr(rc));
		goto cleanup;
	}
	b = sqlite3_backup_init(dst, "main", st->db, "main");
	if (!b) {
		ret = kiln_fail(KILN_ERROR, "store: backup: %s", sqlite3_errmsg(dst));
		goto cleanup;
	}
	/* A writer holding the lock past the busy timeout: wait and copy again, 30 s at most. */
	while ((rc = sqlite3_backup_step(b, -1)) == SQLITE_BUSY || rc == SQLITE_LOCKED) {
		if (++tries > 300)
			break;
		sqlite3_sleep(100);
	}
	sqlite3_backup_finish(b);
	if (rc != SQLITE_DONE) {
		ret = kiln_fail(rc == SQLITE_BUSY || rc == SQLITE_LOCKED ? KILN_EBUSY : KILN_ERROR,
				"store: backup: copying into %s: %s", tmp, sqlite3_errstr(rc));
		goto cleanup;
	}
	copy.db = dst;
	if ((ret = pragma(&copy, "PRAGMA journal_mode = DELETE", val, sizeof(val))) < 0 ||
	    (ret = pragma(&copy, "PRAGMA quick_check", val, sizeof(val))) < 0)
		goto cleanup;
	if (strcmp(val, "ok") != 0) {
		ret = kiln_fail(KILN_ERROR, "store: backup: %s fails its check: %s", tmp, val);
		goto cleanup;
	}
	rc = sqlite3_close(dst);
	dst = NULL;
	if (rc != SQLITE_OK) {
		ret = kiln_fail(KILN_ERROR, "store: backup: closing %s: %s", tmp, sqlite3_errstr(rc));
		goto cleanup;
	}
	fd = open(tmp, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 || fsync(fd) < 0)
		ret = kiln_fail(KILN_ERROR, "store: backup: syncing %s: %s", tmp, strerror(errno));
	if (fd >= 0)
		close(fd);
	if (ret < 0)
		goto cleanup;
	if (rename(tmp, path) < 0) {
		ret = kiln_fail(KILN_ERROR, "store: backup: renaming %s to %s: %s", tmp, path,
				strerror(errno));
		goto cleanup;
	}
	ret = dir_sync(path);
cleanup:
	if (dst)
		sqlite3_close(dst);
	if (ret < 0)
		unlink(tmp);
	return ret;
}

static void sqlite_close(struct store *st)
{
	for (int i = 0; i < STMT_COUNT; i++)
		sqlite3_finalize(st->stmt[i]);
	sqlite3_close(st->db);
	st->db = NULL;
}

static const struct store_backend sqlite_backend = {
	.name = "sqlite",
	.run = sqlite_run,
	.col_null = sqlite_col_null,
	.col_int = sqlite_col_int,
	.col_real = sqlite_col_real,
	.col_text = sqlite_col_text,
	.col_blob = sqlite_col_blob,
	.begin = sqlite_begin,
	.commit = sqlite_commit,
	.rollback = sqlite_rollback,
	.savepoint = sqlite_savepoint,
	.release = sqlite_release,
	.rollback_to = sqlite_rollback_to,
	.schema_version = sqlite_schema_version,
	.checkpoint = sqlite_checkpoint,
	.log_watch = sqlite_log_watch,
	.backup = sqlite_backup,
	.close = sqlite_close,
};

int store_sqlite_open(struct store *st, const char *path)
{
	char val[64];
	int rc, ret;

	if ((ret = precreate(path)) < 0)
		return ret;
	rc = sqlite3_open_v2(path, &st->db,
			     SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK) {
		ret = kiln_fail(KILN_ERROR, "store: opening %s: %s", path,
				st->db ? sqlite3_errmsg(st->db) : sqlite3_errstr(rc));
		sqlite_close(st);
		return ret;
	}
	sqlite3_extended_result_codes(st->db, 1);
	sqlite3_busy_timeout(st->db, BUSY_TIMEOUT_MS);
	if ((ret = pragma(st, "PRAGMA journal_mode = WAL", val, sizeof(val))) < 0)
		goto fail;
	if (strcmp(val, "wal") != 0 && strcmp(path, ":memory:") != 0) {
		ret = kiln_fail(KILN_ERROR, "store: %s: cannot switch to WAL mode (journal mode '%s')",
				path, val);
		goto fail;
	}
	if ((ret = pragma(st, "PRAGMA journal_size_limit = " WAL_SIZE_LIMIT, val, sizeof(val))) < 0)
		goto fail;
	if ((ret = pragma(st, "PRAGMA foreign_keys = ON", val, sizeof(val))) < 0 ||
	    (ret = pragma(st, "PRAGMA foreign_keys", val, sizeof(val))) < 0)
		goto fail;
	if (strcmp(val, "1") != 0) {
		ret = kiln_fail(KILN_ERROR, "store: this SQLite cannot enforce foreign keys");
		goto fail;
	}
	if ((ret = migrate_apply(st->db, kiln_migrations, kiln_migrations_count)) < 0) {
		kiln_fail_prefix(ret, "%s", path);
		goto fail;
	}
	st->be = &sqlite_backend;
	return 0;
fail:
	sqlite_close(st);
	return ret;
}
