/* Images and reinstall jobs (tables images, jobs). Rarely called: no cached statements. */
#include <stdlib.h>
#include <string.h>

#include "kiln/error.h"
#include "store/store_internal.h"

static int prepare(struct store *st, sqlite3_stmt **out, const char *sql)
{
	int rc = sqlite3_prepare_v2(st->db, sql, -1, out, NULL);

	return rc == SQLITE_OK ? 0 : store_fail(st, rc, "preparing a jobs statement");
}

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

void image_list_free(struct image *list, size_t count)
{
	if (!list)
		return;
	for (size_t i = 0; i < count; i++)
		image_clear(&list[i]);
	free(list);
}

int store_image_insert(struct store *st, int64_t *out_id, const struct image *img)
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = prepare(st, &s,
			   "INSERT INTO images (name, kind, url, os, created_by, created_at)"
			   " VALUES (?1, ?2, ?3, ?4, ?5, ?6)")) < 0)
		return ret;
	store_bind_text(s, 1, img->name);
	store_bind_text(s, 2, img->kind);
	store_bind_text(s, 3, img->url);
	store_bind_text(s, 4, img->os);
	store_bind_text(s, 5, img->created_by ? img->created_by : "?");
	sqlite3_bind_int64(s, 6, store_now(st));
	rc = sqlite3_step(s);
	if (rc != SQLITE_DONE) {
		ret = store_fail(st, rc, "adding an image");
		if (ret == KILN_EEXISTS)
			kiln_fail(ret, "image '%s' exists", img->name);
	} else if (out_id) {
		*out_id = sqlite3_last_insert_rowid(st->db);
	}
	sqlite3_finalize(s);
	return ret;
}

#define IMAGE_COLUMNS "id, name, kind, url, os, created_by, created_at"

static int image_read(struct image *o, sqlite3_stmt *s)
{
	int ret;

	o->id = sqlite3_column_int64(s, 0);
	if ((ret = store_column_strdup(&o->name, s, 1)) < 0 ||
	    (ret = store_column_strdup(&o->kind, s, 2)) < 0 ||
	    (ret = store_column_strdup(&o->url, s, 3)) < 0 ||
	    (ret = store_column_strdup(&o->os, s, 4)) < 0 ||
	    (ret = store_column_strdup(&o->created_by, s, 5)) < 0)
		return ret;
	o->created_at = sqlite3_column_int64(s, 6);
	return 0;
}

int store_image_get(struct store *st, struct image *out, const char *name)
{
	struct image o = { 0 };
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = prepare(st, &s, "SELECT " IMAGE_COLUMNS " FROM images WHERE name = ?1")) < 0)
		return ret;
	store_bind_text(s, 1, name);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		ret = image_read(&o, s);
	else if (rc == SQLITE_DONE)
		ret = kiln_fail(KILN_ENOTFOUND, "image '%s' not found", name);
	else
		ret = store_fail(st, rc, "reading an image");
	sqlite3_finalize(s);
	if (ret < 0) {
		image_clear(&o);
		return ret;
	}
	*out = o;
	return 0;
}

int store_image_list(struct store *st, struct image **out, size_t *out_count)
{
	struct image *list = NULL;
	sqlite3_stmt *s = NULL;
	size_t n = 0, cap = 0;
	int rc, ret;

	if ((ret = prepare(st, &s, "SELECT " IMAGE_COLUMNS " FROM images ORDER BY name")) < 0)
		return ret;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if ((ret = store_list_grow((void **)&list, &cap, n, sizeof(*list))) < 0)
			goto cleanup;
		n++;
		if ((ret = image_read(&list[n - 1], s)) < 0)
			goto cleanup;
	}
	if (rc != SQLITE_DONE) {
		ret = store_fail(st, rc, "listing images");
		goto cleanup;
	}
	*out = list;
	*out_count = n;
	list = NULL;
cleanup:
	image_list_free(list, n);
	sqlite3_finalize(s);
	return ret;
}

int store_image_delete(struct store *st, const char *name)
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = prepare(st, &s, "DELETE FROM images WHERE name = ?1")) < 0)
		return ret;
	store_bind_text(s, 1, name);
	rc = sqlite3_step(s);
	if (rc != SQLITE_DONE)
		ret = store_fail(st, rc, "removing an image");
	else if (sqlite3_changes(st->db) == 0)
		ret = kiln_fail(KILN_ENOTFOUND, "image '%s' not found", name);
	sqlite3_finalize(s);
	return ret;
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

void job_list_free(struct job *list, size_t count)
{
	if (!list)
		return;
	for (size_t i = 0; i < count; i++)
		job_clear(&list[i]);
	free(list);
}

int store_job_insert(struct store *st, struct job *j)
{
	sqlite3_stmt *s = NULL;
	int64_t now = store_now(st);
	int rc, ret;

	if ((ret = prepare(st, &s,
			   "INSERT INTO jobs (kind, node_id, image, image_kind, image_url, image_os,"
			   " state, step, created_by, audit_id, created_at, updated_at, force, drain,"
			   " drain_timeout_s) VALUES ('reinstall', ?1, ?2, ?3, ?4, ?5, 'queued', ?6,"
			   " ?7, ?8, ?9, ?9, ?10, ?11, ?12)")) < 0)
		return ret;
	sqlite3_bind_int64(s, 1, j->node_id);
	store_bind_text(s, 2, j->image);
	store_bind_text(s, 3, j->image_kind);
	store_bind_text(s, 4, j->image_url);
	store_bind_text(s, 5, j->image_os);
	store_bind_text(s, 6, j->step ? j->step : "boot_id");
	store_bind_text(s, 7, j->created_by ? j->created_by : "?");
	sqlite3_bind_int64(s, 8, j->audit_id);
	sqlite3_bind_int64(s, 9, now);
	sqlite3_bind_int(s, 10, j->force ? 1 : 0);
	sqlite3_bind_int(s, 11, j->drain ? 1 : 0);
	sqlite3_bind_int64(s, 12, j->drain_timeout_s > 0 ? j->drain_timeout_s : 3600);
	rc = sqlite3_step(s);
	if (rc != SQLITE_DONE) {
		ret = store_fail(st, rc, "adding a job");
		if (ret == KILN_EEXISTS)
			ret = kiln_fail(KILN_EBUSY, "a job is already queued or running on node id %lld",
					(long long)j->node_id);
	} else {
		j->id = sqlite3_last_insert_rowid(st->db);
		j->created_at = now;
		j->updated_at = now;
	}
	sqlite3_finalize(s);
	return ret;
}

#define JOB_COLUMNS                                                                              \
	"j.id, j.node_id, n.name, j.image, j.image_kind, j.image_url, j.image_os, j.state,"       \
	" j.step, j.step_started, j.boot_id_before, j.cycle_sent_at, j.cycle_done, j.error,"      \
	" j.created_by, j.audit_id, j.created_at, j.started_at, j.finished_at, j.updated_at,"     \
	" j.force, j.drain, j.drain_timeout_s, j.drain_started, j.drained"

static int job_read(struct job *o, sqlite3_stmt *s)
{
	int ret;

	o->id = sqlite3_column_int64(s, 0);
	o->node_id = sqlite3_column_int64(s, 1);
	if ((ret = store_column_strdup(&o->node, s, 2)) < 0 ||
	    (ret = store_column_strdup(&o->image, s, 3)) < 0 ||
	    (ret = store_column_strdup(&o->image_kind, s, 4)) < 0 ||
	    (ret = store_column_strdup(&o->image_url, s, 5)) < 0 ||
	    (ret = store_column_strdup(&o->image_os, s, 6)) < 0 ||
	    (ret = store_column_strdup(&o->state, s, 7)) < 0 ||
	    (ret = store_column_strdup(&o->step, s, 8)) < 0)
		return ret;
	o->step_started = sqlite3_column_int64(s, 9);
	if ((ret = store_column_strdup(&o->boot_id_before, s, 10)) < 0)
		return ret;
	o->cycle_sent_at = sqlite3_column_int64(s, 11);
	o->cycle_done = sqlite3_column_int(s, 12);
	if ((ret = store_column_strdup(&o->error, s, 13)) < 0 ||
	    (ret = store_column_strdup(&o->created_by, s, 14)) < 0)
		return ret;
	o->audit_id = sqlite3_column_int64(s, 15);
	o->created_at = sqlite3_column_int64(s, 16);
	o->started_at = sqlite3_column_int64(s, 17);
	o->finished_at = sqlite3_column_int64(s, 18);
	o->updated_at = sqlite3_column_int64(s, 19);
	o->force = sqlite3_column_int(s, 20);
	o->drain = sqlite3_column_int(s, 21);
	o->drain_timeout_s = sqlite3_column_int64(s, 22);
	o->drain_started = sqlite3_column_int64(s, 23);
	o->drained = sqlite3_column_int(s, 24);
	return 0;
}

int store_job_get(struct store *st, struct job *out, int64_t id)
{
	struct job o = { 0 };
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = prepare(st, &s,
			   "SELECT " JOB_COLUMNS " FROM jobs j JOIN nodes n ON n.id = j.node_id"
			   " WHERE j.id = ?1")) < 0)
		return ret;
	sqlite3_bind_int64(s, 1, id);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		ret = job_read(&o, s);
	else if (rc == SQLITE_DONE)
		ret = kiln_fail(KILN_ENOTFOUND, "job %lld not found", (long long)id);
	else
		ret = store_fail(st, rc, "reading a job");
	sqlite3_finalize(s);
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
	struct job *list = NULL;
	sqlite3_stmt *s = NULL;
	size_t n = 0, cap = 0;
	int rc, ret;

	if ((ret = prepare(st, &s,
			   "SELECT " JOB_COLUMNS " FROM jobs j JOIN nodes n ON n.id = j.node_id"
			   " WHERE (?1 = 0 OR j.state IN ('queued', 'running'))"
			   " AND (?2 = 0 OR j.node_id = ?2) ORDER BY j.id")) < 0)
		return ret;
	sqlite3_bind_int(s, 1, active_only ? 1 : 0);
	sqlite3_bind_int64(s, 2, node_id);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if ((ret = store_list_grow((void **)&list, &cap, n, sizeof(*list))) < 0)
			goto cleanup;
		n++;
		if ((ret = job_read(&list[n - 1], s)) < 0)
			goto cleanup;
	}
	if (rc != SQLITE_DONE) {
		ret = store_fail(st, rc, "listing jobs");
		goto cleanup;
	}
	*out = list;
	*out_count = n;
	list = NULL;
cleanup:
	job_list_free(list, n);
	sqlite3_finalize(s);
	return ret;
}

int store_job_update(struct store *st, const struct job *j)
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = prepare(st, &s,
			   "UPDATE jobs SET state = ?2, step = ?3, step_started = ?4,"
			   " boot_id_before = ?5, cycle_sent_at = ?6, cycle_done = ?7, error = ?8,"
			   " audit_id = ?9, started_at = ?10, finished_at = ?11, updated_at = ?12,"
			   " drain_started = ?13, drained = ?14 WHERE id = ?1")) < 0)
		return ret;
	sqlite3_bind_int64(s, 1, j->id);
	store_bind_text(s, 2, j->state);
	store_bind_text(s, 3, j->step);
	sqlite3_bind_int64(s, 4, j->step_started);
	store_bind_text(s, 5, j->boot_id_before);
	sqlite3_bind_int64(s, 6, j->cycle_sent_at);
	sqlite3_bind_int(s, 7, j->cycle_done ? 1 : 0);
	store_bind_text(s, 8, j->error);
	sqlite3_bind_int64(s, 9, j->audit_id);
	sqlite3_bind_int64(s, 10, j->started_at);
	sqlite3_bind_int64(s, 11, j->finished_at);
	sqlite3_bind_int64(s, 12, store_now(st));
	sqlite3_bind_int64(s, 13, j->drain_started);
	sqlite3_bind_int(s, 14, j->drained ? 1 : 0);
	rc = sqlite3_step(s);
	if (rc != SQLITE_DONE)
		ret = store_fail(st, rc, "updating a job");
	else if (sqlite3_changes(st->db) == 0)
		ret = kiln_fail(KILN_ENOTFOUND, "job %lld not found", (long long)j->id);
	sqlite3_finalize(s);
	return ret;
}
