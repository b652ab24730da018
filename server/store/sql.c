/* SPDX-License-Identifier: Apache-2.0 */
/* The statement runners every store_*.c file uses, on whichever backend the store opened. */
#include <stdlib.h>
#include <string.h>

#include "kiln/error.h"
#include "store/store_internal.h"

int sql_col_null(const struct sql_row *r, int col)
{
	return r->st->be->col_null(r, col);
}

int64_t sql_col_int(const struct sql_row *r, int col)
{
	return r->st->be->col_null(r, col) ? 0 : r->st->be->col_int(r, col);
}

int64_t sql_col_int_or(const struct sql_row *r, int col, int64_t dflt)
{
	return r->st->be->col_null(r, col) ? dflt : r->st->be->col_int(r, col);
}

double sql_col_real(const struct sql_row *r, int col)
{
	return r->st->be->col_null(r, col) ? NAN : r->st->be->col_real(r, col);
}

const char *sql_col_text(const struct sql_row *r, int col)
{
	return r->st->be->col_null(r, col) ? NULL : r->st->be->col_text(r, col);
}

const void *sql_col_blob(const struct sql_row *r, int col, size_t *len)
{
	*len = 0;
	return r->st->be->col_null(r, col) ? NULL : r->st->be->col_blob(r, col, len);
}

int sql_col_strdup(const struct sql_row *r, int col, char **out)
{
	const char *v = sql_col_text(r, col);

	*out = NULL;
	if (!v) {
		if (!r->st->be->col_null(r, col))
			return kiln_fail(KILN_ERROR, "store: out of memory");
		return 0;
	}
	if (!(*out = strdup(v)))
		return kiln_fail(KILN_ERROR, "store: out of memory");
	return 0;
}

int sql_col_blobdup(const struct sql_row *r, int col, unsigned char **out, size_t *len)
{
	const void *v = sql_col_blob(r, col, len);

	*out = NULL;
	if (!v) {
		*len = 0;
		return 0;
	}
	if (!(*out = malloc(*len ? *len : 1)))
		return kiln_fail(KILN_ERROR, "store: out of memory");
	memcpy(*out, v, *len);
	return 0;
}

int sql_col_strdups(const struct sql_row *r, int first, char **const dst[], size_t n)
{
	int ret;

	for (size_t i = 0; i < n; i++)
		if ((ret = sql_col_strdup(r, first + (int)i, dst[i])) < 0)
			return ret;
	return 0;
}

void sql_col_word(const struct sql_row *r, int col, char *buf, size_t len, const char *dflt)
{
	const char *v = sql_col_text(r, col);

	snprintf(buf, len, "%s", v ? v : dflt);
}

int sql_run(struct store *st, const struct sql_stmt *q, const struct sql_arg *args, size_t n,
	    sql_row_fn fn, void *ctx, int64_t *changes)
{
	int64_t ignored;

	return st->be->run(st, q, args, n, fn, ctx, changes ? changes : &ignored);
}

int64_t sql_exec(struct store *st, const struct sql_stmt *q, const struct sql_arg *args,
		 size_t n)
{
	int64_t changes = 0;
	int ret = st->be->run(st, q, args, n, NULL, NULL, &changes);

	return ret < 0 ? ret : changes;
}

int sql_write(struct store *st, const struct sql_stmt *q, const struct sql_arg *args, size_t n)
{
	return sql_exec_later(st, q, args, n, NULL);
}

int sql_exec_later(struct store *st, const struct sql_stmt *q, const struct sql_arg *args,
		   size_t n, int64_t *changes)
{
	int64_t ret;

	if (st->be->write)
		return st->be->write(st, q, args, n, changes);
	ret = sql_exec(st, q, args, n);
	if (ret >= 0 && changes)
		*changes = ret;
	return ret < 0 ? (int)ret : 0;
}

/* The first row's callback, then a stop. */
struct first {
	sql_row_fn fn;
	void *ctx;
};

static int first_row(const struct sql_row *r, void *ctx)
{
	struct first *f = ctx;
	int ret = f->fn ? f->fn(r, f->ctx) : 0;

	return ret < 0 ? ret : SQL_STOP;
}

int sql_one(struct store *st, const struct sql_stmt *q, const struct sql_arg *args, size_t n,
	    sql_row_fn fn, void *ctx)
{
	struct first f = {fn, ctx};
	int64_t changes;
	int ret = st->be->run(st, q, args, n, first_row, &f, &changes);

	return ret < 0 ? ret : ret > 0;
}

static int int_row(const struct sql_row *r, void *ctx)
{
	*(int64_t *)ctx = sql_col_int(r, 0);
	return 0;
}

int sql_int(struct store *st, const struct sql_stmt *q, const struct sql_arg *args, size_t n,
	    int64_t *out)
{
	return sql_one(st, q, args, n, int_row, out);
}

static int text_row(const struct sql_row *r, void *ctx)
{
	return sql_col_strdup(r, 0, ctx);
}

int sql_text(struct store *st, const struct sql_stmt *q, const struct sql_arg *args, size_t n,
	     char **out)
{
	char *v = NULL;
	int ret = sql_one(st, q, args, n, text_row, &v);

	if (ret == 1)
		*out = v;
	return ret;
}

int sql_insert_id(struct store *st, const struct sql_stmt *q, const struct sql_arg *args,
		  size_t n, int64_t *out_id)
{
	int64_t id = 0;
	int ret = sql_int(st, q, args, n, &id);

	if (ret < 0)
		return ret;
	*out_id = id;
	return 0;
}

struct list {
	char *items;
	size_t count, cap, elem;
	int (*read)(const struct sql_row *r, void *elem);
	void (*clear)(void *elem);
};

static int list_row(const struct sql_row *r, void *ctx)
{
	struct list *l = ctx;
	int ret;

	if ((ret = store_list_grow((void **)&l->items, &l->cap, l->count, l->elem)) < 0)
		return ret;
	if ((ret = l->read(r, l->items + l->count * l->elem)) < 0) {
		if (l->clear)
			l->clear(l->items + l->count * l->elem);
		memset(l->items + l->count * l->elem, 0, l->elem);
		return ret;
	}
	l->count++;
	return 0;
}

int sql_list(struct store *st, const struct sql_stmt *q, const struct sql_arg *args, size_t n,
	     void *out, size_t *out_count, size_t elem,
	     int (*read)(const struct sql_row *r, void *elem), void (*clear)(void *elem))
{
	struct list l = {NULL, 0, 0, elem, read, clear};
	int64_t changes;
	int ret = st->be->run(st, q, args, n, list_row, &l, &changes);

	if (ret < 0) {
		sql_list_free(l.items, l.count, elem, clear);
		return ret;
	}
	*(void **)out = l.items;
	*out_count = l.count;
	return 0;
}

void sql_list_free(void *list, size_t count, size_t elem, void (*clear)(void *elem))
{
	for (size_t i = 0; list && clear && i < count; i++)
		clear((char *)list + i * elem);
	free(list);
}
