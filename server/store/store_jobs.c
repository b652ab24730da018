/* SPDX-License-Identifier: Apache-2.0 */
/* Images and reinstall jobs (tables images, jobs). Rarely called: no cached statements. */
#include <stdlib.h>
#include <string.h>

#include "kiln/error.h"
#include "store/store_internal.h"

/* The images' columns: the strings first (sql_col_strdups()), then the numbers. */
#define IMAGE_COLUMNS "name, kind, url, os, created_by, id, created_at"

static const struct sql_stmt IMAGE_INSERT = {
	STMT_NONE, "adding an image",
	"INSERT INTO images (name, kind, url, os, created_by, created_at)"
	" VALUES (?1, ?2, ?3, ?4, ?5, ?6) RETURNING id",
	NULL};

static const struct sql_stmt IMAGE_GET = {
	STMT_NONE, "reading an image", "SELECT " IMAGE_COLUMNS " FROM images WHERE name = ?1", NULL};

static const struct sql_stmt IMAGE_LIST = {
	STMT_NONE, "listing images", "SELECT " IMAGE_COLUMNS " FROM images ORDER BY name", NULL};

static const struct sql_stmt IMAGE_DELETE = {
	STMT_NONE, "removing an image", "DELETE FROM images WHERE name = ?1", NULL};

/* The jobs' columns with the node's name, strings first (sql_col_strdups()), and their join. */
#define JOB_COLUMNS                                                                              \
	"n.name, j.image, j.image_kind, j.image_url, j.image_os, j.state, j.step,"              \
	" j.boot_id_before, j.error, j.created_by,"                                               \
	" j.id, j.node_id, j.step_started, j.cycle_sent_at, j.cycle_done, j.audit_id,"            \
	" j.created_at, j.started_at, j.finished_at, j.updated_at, j.force, j.drain,"             \
	" j.drain_timeout_s, j.drain_started, j.drained"                                          \
	" FROM jobs j JOIN nodes n ON n.id = j.node_id"

static const struct sql_stmt JOB_INSERT = {
	STMT_NONE, "adding a job",
	"INSERT INTO jobs (kind, node_id, image, image_kind, image_url, image_os,"
	" state, step, created_by, audit_id, created_at, updated_at, force, drain,"
	" drain_timeout_s) VALUES ('reinstall', ?1, ?2, ?3, ?4, ?5, 'queued', ?6,"
	" ?7, ?8, ?9, ?9, ?10, ?11, ?12) RETURNING id",
	NULL};

static const struct sql_stmt JOB_GET = {
	STMT_NONE, "reading a job", "SELECT " JOB_COLUMNS " WHERE j.id = ?1", NULL};

static const struct sql_stmt JOB_LIST = {
	STMT_NONE, "listing jobs",
	"SELECT " JOB_COLUMNS " WHERE (?1 = 0 OR j.state IN ('queued', 'running'))"
	" AND (j.node_id = ?2 OR ?2 = 0) ORDER BY j.id",
	NULL};

static const struct sql_stmt JOB_UPDATE = {
	STMT_NONE, "updating a job",
	"UPDATE jobs SET state = ?2, step = ?3, step_started = ?4,"
	" boot_id_before = ?5, cycle_sent_at = ?6, cycle_done = ?7, error = ?8,"
	" audit_id = ?9, started_at = ?10, finished_at = ?11, updated_at = ?12,"
	" drain_started = ?13, drained = ?14 WHERE id = ?1",
	NULL};

/* --- images -------------------------------------------------------------------------- */

void image_clear(struct image *img)
{
	if (!img)
		return;
	free(img->name);
	free(img->kind);
	free(img->url);
	free(img->os);
	free(img->created_by);
	memset(img, 0, sizeof(*img));
}

static void image_clear_elem(void *elem)
{
	image_clear(elem);
}

void image_list_free(struct image *list, size_t count)
{
	sql_list_free(list, count, sizeof(*list), image_clear_elem);
}

int store_image_insert(struct store *st, int64_t *out_id, const struct image *img)
{
	int64_t id = 0;
	int ret = sql_int(st, &IMAGE_INSERT,
			  SQL_ARGS(SQL_TEXT(img->name), SQL_TEXT(img->kind), SQL_TEXT(img->url),
				   SQL_TEXT(img->os), SQL_TEXT(img->created_by ? img->created_by : "?"),
				   SQL_INT(store_now(st))),
			  &id);

	if (ret == KILN_EEXISTS)
		return kiln_fail(ret, "image '%s' exists", img->name);
	if (ret < 0)
		return ret;
	if (out_id)
		*out_id = id;
	return 0;
}

static int image_read(const struct sql_row *r, void *elem)
{
	struct image *o = elem;
	char **const text[] = {&o->name, &o->kind, &o->url, &o->os, &o->created_by};

	o->id = sql_col_int(r, 5);
	o->created_at = sql_col_int(r, 6);
	return sql_col_strdups(r, 0, text, sizeof(text) / sizeof(text[0]));
}

int store_image_get(struct store *st, struct image *out, const char *name)
{
	struct image o = { 0 };
	int ret = sql_one(st, &IMAGE_GET, SQL_ARGS(SQL_TEXT(name)), image_read, &o);

	if (ret == 0)
		ret = kiln_fail(KILN_ENOTFOUND, "image '%s' not found", name);
	if (ret < 0) {
		image_clear(&o);
		return ret;
	}
	*out = o;
	return 0;
}

int store_image_list(struct store *st, struct image **out, size_t *out_count)
{
	return sql_list(st, &IMAGE_LIST, SQL_NO_ARGS, out, out_count, sizeof(**out), image_read,
			image_clear_elem);
}

int store_image_delete(struct store *st, const char *name)
{
	int64_t ret = sql_exec(st, &IMAGE_DELETE, SQL_ARGS(SQL_TEXT(name)));

	if (ret == 0)
		return kiln_fail(KILN_ENOTFOUND, "image '%s' not found", name);
	return ret < 0 ? (int)ret : 0;
}

/* --- jobs ---------------------------------------------------------------------------- */

void job_clear(struct job *j)
{
	if (!j)
		return;
	free(j->node);
	free(j->image);
	free(j->image_kind);
	free(j->image_url);
	free(j->image_os);
	free(j->state);
	free(j->step);
	free(j->boot_id_before);
	free(j->error);
	free(j->created_by);
	memset(j, 0, sizeof(*j));
}

static void job_clear_elem(void *elem)
{
	job_clear(elem);
}

void job_list_free(struct job *list, size_t count)
{
	sql_list_free(list, count, sizeof(*list), job_clear_elem);
}

int store_job_insert(struct store *st, struct job *j)
{
	int64_t now = store_now(st), id = 0;
	int ret = sql_int(st, &JOB_INSERT,
			  SQL_ARGS(SQL_INT(j->node_id), SQL_TEXT(j->image), SQL_TEXT(j->image_kind),
				   SQL_TEXT(j->image_url), SQL_TEXT(j->image_os),
				   SQL_TEXT(j->step ? j->step : "boot_id"),
				   SQL_TEXT(j->created_by ? j->created_by : "?"), SQL_INT(j->audit_id),
				   SQL_INT(now), SQL_BOOL(j->force), SQL_BOOL(j->drain),
				   SQL_INT(j->drain_timeout_s > 0 ? j->drain_timeout_s : 3600)),
			  &id);

	if (ret == KILN_EEXISTS)
		return kiln_fail(KILN_EBUSY, "a job is already queued or running on node id %lld",
				 (long long)j->node_id);
	if (ret < 0)
		return ret;
	j->id = id;
	j->created_at = now;
	j->updated_at = now;
	return 0;
}

static int job_read(const struct sql_row *r, void *elem)
{
	struct job *o = elem;
	char **const text[] = {&o->node, &o->image, &o->image_kind, &o->image_url,
			       &o->image_os, &o->state, &o->step, &o->boot_id_before,
			       &o->error, &o->created_by};

	o->id = sql_col_int(r, 10);
	o->node_id = sql_col_int(r, 11);
	o->step_started = sql_col_int(r, 12);
	o->cycle_sent_at = sql_col_int(r, 13);
	o->cycle_done = (int)sql_col_int(r, 14);
	o->audit_id = sql_col_int(r, 15);
	o->created_at = sql_col_int(r, 16);
	o->started_at = sql_col_int(r, 17);
	o->finished_at = sql_col_int(r, 18);
	o->updated_at = sql_col_int(r, 19);
	o->force = (int)sql_col_int(r, 20);
	o->drain = (int)sql_col_int(r, 21);
	o->drain_timeout_s = sql_col_int(r, 22);
	o->drain_started = sql_col_int(r, 23);
	o->drained = (int)sql_col_int(r, 24);
	return sql_col_strdups(r, 0, text, sizeof(text) / sizeof(text[0]));
}

int store_job_get(struct store *st, struct job *out, int64_t id)
{
	struct job o = { 0 };
	int ret = sql_one(st, &JOB_GET, SQL_ARGS(SQL_INT(id)), job_read, &o);

	if (ret == 0)
		ret = kiln_fail(KILN_ENOTFOUND, "job %lld not found", (long long)id);
	if (ret < 0) {
		job_clear(&o);
		return ret;
	}
	*out = o;
	return 0;
}

int store_job_list(struct store *st, struct job **out, size_t *out_count, int active_only,
		   int64_t node_id)
{
	return sql_list(st, &JOB_LIST, SQL_ARGS(SQL_BOOL(active_only), SQL_INT(node_id)), out,
			out_count, sizeof(**out), job_read, job_clear_elem);
}

int store_job_update(struct store *st, const struct job *j)
{
	int64_t ret = sql_exec(
		st, &JOB_UPDATE,
		SQL_ARGS(SQL_INT(j->id), SQL_TEXT(j->state), SQL_TEXT(j->step),
			 SQL_INT(j->step_started), SQL_TEXT(j->boot_id_before),
			 SQL_INT(j->cycle_sent_at), SQL_BOOL(j->cycle_done), SQL_TEXT(j->error),
			 SQL_INT(j->audit_id), SQL_INT(j->started_at), SQL_INT(j->finished_at),
			 SQL_INT(store_now(st)), SQL_INT(j->drain_started), SQL_BOOL(j->drained)));

	if (ret == 0)
		return kiln_fail(KILN_ENOTFOUND, "job %lld not found", (long long)j->id);
	return ret < 0 ? (int)ret : 0;
}
