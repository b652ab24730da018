/* SPDX-License-Identifier: Apache-2.0 */
/* The store's backend-neutral part: choosing the backend, transactions, the clock, lists. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kiln/error.h"
#include "store/store_internal.h"

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

/* "postgresql:[password_file=FILE;]CONNINFO" (or a postgresql:// URI): the PostgreSQL
 * backend; anything else is a SQLite path. */
static int open_target(struct store *st, const char *target)
{
	const char *rest, *semi;
	char *file;
	int ret;

	if (strncmp(target, STORE_PG_PREFIX, strlen(STORE_PG_PREFIX)) != 0)
		return store_sqlite_open(st, target);
	rest = target + strlen(STORE_PG_PREFIX);
	if (strncmp(rest, "//", 2) == 0) /* a URI: libpq reads it whole */
		return store_pg_open(st, target, NULL);
	if (strncmp(rest, "password_file=", 14) != 0 || !(semi = strchr(rest, ';')))
		return store_pg_open(st, rest, NULL);
	if (!(file = strndup(rest + 14, (size_t)(semi - rest - 14))))
		return kiln_fail(KILN_ERROR, "store: out of memory");
	ret = store_pg_open(st, semi + 1, file);
	free(file);
	return ret;
}

int store_open(struct store **out, const char *target)
{
	struct store *st = calloc(1, sizeof(*st));
	int ret;

	if (!st)
		return kiln_fail(KILN_ERROR, "store: out of memory");
	st->now = clock_time;
	if ((ret = open_target(st, target)) < 0) {
		store_close(st);
		return ret;
	}
	*out = st;
	return 0;
}

int store_target_is_pg(const char *target)
{
	return target && strncmp(target, STORE_PG_PREFIX, strlen(STORE_PG_PREFIX)) == 0;
}

void store_close(struct store *st)
{
	if (!st)
		return;
	if (st->be)
		st->be->close(st);
	free(st);
}

int store_schema_version(struct store *st, int *out)
{
	return st->be->schema_version(st, out);
}

int store_begin(struct store *st)
{
	return st->be->begin(st);
}

int store_begin_nodes(struct store *st, const int64_t *node_ids, size_t n)
{
	if (!st->be->begin_nodes)
		return st->be->begin(st);
	return st->be->begin_nodes(st, node_ids, n);
}

int store_commit(struct store *st)
{
	return st->be->commit(st);
}

int store_rollback(struct store *st)
{
	return st->be->rollback(st);
}

int store_savepoint(struct store *st)
{
	return st->be->savepoint(st);
}

int store_release(struct store *st)
{
	return st->be->release(st);
}

void store_rollback_to(struct store *st)
{
	char msg[512];

	/* Keep the caller's message: it says why we are rolling back. */
	snprintf(msg, sizeof(msg), "%s", kiln_error_last());
	st->be->rollback_to(st);
	kiln_fail(KILN_ERROR, "%s", msg);
}

int64_t store_round_trips(struct store *st)
{
	return st->be->round_trips ? st->be->round_trips(st) : 0;
}

int store_wal_checkpoint(struct store *st)
{
	return st->be->checkpoint(st);
}

void store_wal_frames_watch(struct store *st, int *frames)
{
	*frames = 0;
	if (st->be->log_watch)
		st->be->log_watch(st, frames);
}

int store_backup(struct store *st, const char *path)
{
	if (!st->be->backup)
		return kiln_fail(KILN_EINVAL,
				 "store: backup: kiln does not copy a %s store: back it up with "
				 "pg_dump, restore it with pg_restore (kilnd(8), BACKUP AND RESTORE)",
				 st->be->name);
	return st->be->backup(st, path);
}
