/* SPDX-License-Identifier: Apache-2.0 */
/* Images and reinstall jobs: /images, /reinstall (a job per node) and /jobs with each job's
 * step and progress. The jobs thread (server/jobs.c) runs what is queued here. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/handlers.h"
#include "fleet/guard.h"
#include "fleet/jobs.h"
#include "kiln/error.h"
#include "kiln/noderange.h"
#include "kiln/parse.h"
#include "cluster/node_lock.h"

#define IMAGE_NAME_MAX 64
#define URL_MAX 2048
#define OS_MAX 128

static int url_valid(const char *url)
{
	static const char *const schemes[] = { "http://", "https://", "nfs://", "cifs://", "smb://" };

	if (!url || strlen(url) >= URL_MAX)
		return 0;
	for (const char *p = url; *p; p++)
		if ((unsigned char)*p <= ' ' || *p == 0x7f)
			return 0;
	for (size_t i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++)
		if (strncmp(url, schemes[i], strlen(schemes[i])) == 0 && url[strlen(schemes[i])])
			return 1;
	return 0;
}

/* Image names: like node names (letters, digits, '.', '_', '-'), at most 64. */
static int image_name_valid(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n == 0 || n > IMAGE_NAME_MAX)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
		      ((ch == '.' || ch == '_' || ch == '-') && i > 0)))
			return 0;
	}
	return 1;
}

static int text_printable(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < ' ' || *s == 0x7f)
			return 0;
	return 1;
}

static json_t *image_json(const struct image *img)
{
	return json_pack("{s:s, s:s, s:s?, s:s?, s:s?, s:I}", "name", img->name, "kind", img->kind,
			 "url", img->url, "os", img->os, "created_by", img->created_by,
			 "created_at", (json_int_t)img->created_at);
}

/* Members of the body other than the names given: 400 naming the first. */
static int body_only(struct api_ctx *c, const char *const *names)
{
	const char *key;
	json_t *v;

	json_object_foreach(c->body, key, v) {
		size_t i;

		for (i = 0; names[i] && strcmp(names[i], key) != 0; i++)
			;
		if (!names[i]) {
			api_fail(c, MHD_HTTP_BAD_REQUEST, key, "unknown field '%.60s'", key);
			return KILN_EINVAL;
		}
	}
	return 0;
}

void api_images_create(struct api_ctx *c)
{
	static const char *const fields[] = { "name", "iso", "pxe", "os", NULL };
	struct image img = { 0 };
	const char *name, *iso, *os;
	int pxe, rc;
	int64_t audit_id;

	if (!api_body_require(c) || body_only(c, fields) < 0 || api_body_string(c, &name, "name") < 0 ||
	    api_body_string(c, &iso, "iso") < 0 || api_body_bool(c, &pxe, "pxe") < 0 ||
	    api_body_string(c, &os, "os") < 0)
		return;
	if (!image_name_valid(name)) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, "name", "name must be 1-64 letters, digits, '.', "
			 "'_' or '-', starting with a letter or digit");
		return;
	}
	if (!iso == !pxe) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, iso ? "pxe" : "iso",
			 "give either iso (the image URL) or pxe: true");
		return;
	}
	if (iso && !url_valid(iso)) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, "iso", "iso must be an http, https, nfs or cifs URL "
			 "without spaces");
		return;
	}
	if (os && (!os[0] || strlen(os) > OS_MAX || !text_printable(os))) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, "os", "os must be 1-%d printable characters", OS_MAX);
		return;
	}
	img.name = (char *)name;
	img.kind = (char *)(iso ? "iso" : "pxe");
	img.url = (char *)iso;
	img.os = (char *)os;
	img.created_by = c->caller.name;
	if (api_audit_begin(c, &audit_id, "image.add", name, json_pack("{s:s, s:s?, s:s?}", "kind",
			    img.kind, "url", iso, "os", os)) < 0)
		return;
	rc = store_image_insert(c->st, &img.id, &img);
	api_audit_finish(c, audit_id, rc);
	if (rc < 0) {
		api_fail_code(c, rc, rc == KILN_EEXISTS ? "name" : NULL);
		return;
	}
	img.created_at = (int64_t)time(NULL);
	api_reply(c, MHD_HTTP_CREATED, image_json(&img));
}

void api_images_list(struct api_ctx *c)
{
	struct image *list = NULL;
	size_t n = 0;
	json_t *arr;
	int rc = store_image_list(c->st, &list, &n);

	if (rc < 0) {
		api_fail_code(c, rc, NULL);
		return;
	}
	arr = json_array();
	for (size_t i = 0; arr && i < n; i++)
		json_array_append_new(arr, image_json(&list[i]));
	image_list_free(list, n);
	if (!arr) {
		api_fail(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
		return;
	}
	api_reply(c, MHD_HTTP_OK, arr);
}

void api_image_delete(struct api_ctx *c)
{
	int64_t audit_id;
	int rc;

	if (api_audit_begin(c, &audit_id, "image.remove", c->param, NULL) < 0)
		return;
	rc = store_image_delete(c->st, c->param);
	api_audit_finish(c, audit_id, rc);
	if (rc < 0) {
		api_fail_code(c, rc, NULL);
		return;
	}
	api_reply(c, MHD_HTTP_OK, json_pack("{s:s, s:b}", "image", c->param, "deleted", 1));
}

static json_t *steps_json(int iso)
{
	json_t *arr = json_array();

	for (enum job_step s = JOB_STEP_BOOT_ID; arr && s != JOB_STEP_DONE;
	     s = job_step_after(s, iso))
		json_array_append_new(arr, json_string(job_step_name(s)));
	return arr;
}

static int cmp_node(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, (*(struct node *const *)b)->name);
}

/*
 * Queues a job on one node: the node must have a BMC, nothing in flight and no active job.
 * The node's in-flight mark is taken here and handed to the job (the jobs thread releases
 * it when the job ends). Returns the job id or a negative code with the message set.
 */
/* What a reinstall does about work on its node: act anyway, or drain and wait. */
struct work_choice {
	int force;
	int drain;
	int64_t drain_timeout_s;
};

static int job_queue(struct api_ctx *c, int64_t *out_id, const struct node *n,
		     const struct image *img, const struct work_choice *wc)
{
	struct job j = { 0 };
	int64_t audit_id = 0;
	int rc;

	if (n->bmc_protocol == BMC_NONE || !n->bmc_host)
		return kiln_fail(KILN_ENOTFOUND, "no BMC");
	rc = node_lock_claim(n->id);
	if (rc < 0)
		return rc;
	if (rc == 0)
		return kiln_fail(KILN_EBUSY, "action in flight");
	{
		json_t *d = json_pack("{s:s, s:s, s:s?}", "image", img->name, "kind", img->kind,
				      "url", img->url);

		if (d && wc->force)
			json_object_set_new(d, "force", json_true());
		if (d && wc->drain)
			json_object_set_new(d, "drain_timeout_s", json_integer(wc->drain_timeout_s));
		char *text = d ? json_dumps(d, JSON_COMPACT) : NULL;

		json_decref(d);
		rc = store_audit_begin(c->st, &audit_id, c->caller.name ? c->caller.name : "?",
				       "reinstall", n->name, text);
		free(text);
	}
	if (rc < 0)
		goto cleanup;
	j.node_id = n->id;
	j.image = img->name;
	j.image_kind = img->kind;
	j.image_url = img->url;
	j.image_os = img->os;
	j.created_by = c->caller.name;
	j.audit_id = audit_id;
	j.force = wc->force;
	j.drain = wc->drain;
	j.drain_timeout_s = wc->drain_timeout_s;
	rc = store_job_insert(c->st, &j);
	if (rc == KILN_EBUSY)
		rc = kiln_fail(KILN_EBUSY, "a reinstall job is already running on %s", n->name);
	if (rc < 0) {
		char outcome[600];

		snprintf(outcome, sizeof(outcome), "failed: %s", kiln_error_last());
		store_audit_finish(c->st, audit_id, outcome);
		goto cleanup;
	}
	*out_id = j.id;
	return 0;
cleanup:
	node_lock_release(n->id);
	return rc;
}

void api_reinstall_post(struct api_ctx *c)
{
	static const char *const fields[] = { "range", "image", "dry_run", "force", "drain",
					      "drain_timeout_s", NULL };
	struct kiln_nodelist range = { 0 };
	struct node **all = NULL;
	struct image img = { 0 };
	size_t nall = 0;
	const char *rng, *image;
	json_t *arr = NULL;
	struct work_choice wc = { .drain_timeout_s = 3600 };
	int dry_run, rc;
	json_t *timeout;

	if (!api_body_require(c) || body_only(c, fields) < 0 || api_body_string(c, &rng, "range") < 0 ||
	    api_body_string(c, &image, "image") < 0 || api_body_bool(c, &dry_run, "dry_run") < 0 ||
	    api_body_bool(c, &wc.force, "force") < 0 || api_body_bool(c, &wc.drain, "drain") < 0)
		return;
	timeout = json_object_get(c->body, "drain_timeout_s");
	if (timeout && (!json_is_integer(timeout) || json_integer_value(timeout) < 1 ||
			json_integer_value(timeout) > 7 * 86400)) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, "drain_timeout_s",
			 "drain_timeout_s must be an integer from 1 to 604800");
		return;
	}
	if (wc.drain && !guard_scheduler_on()) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, "drain", GUARD_DRAIN_NEEDS_SCHEDULER);
		return;
	}
	if (wc.force && wc.drain) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, "drain", "drain and force exclude each other");
		return;
	}
	if (timeout)
		wc.drain_timeout_s = json_integer_value(timeout);
	if (!rng || !rng[0]) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, "range", "range is required");
		return;
	}
	if (!image || !image[0]) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, "image", "image is required");
		return;
	}
	rc = store_image_get(c->st, &img, image);
	if (rc < 0) {
		api_fail_code(c, rc, "image");
		return;
	}
	if (!c->engine && !dry_run) {
		api_fail(c, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, "kilnd runs without a BMC engine");
		goto cleanup;
	}
	if (api_range_expand(c, &range, rng, API_RANGE_ACTION | API_RANGE_SORTED) < 0)
		goto cleanup;
	if ((rc = store_node_list(c->st, &all, &nall)) < 0) {
		api_fail_code(c, rc, NULL);
		goto cleanup;
	}
	arr = json_array();
	if (!arr) {
		api_fail(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
		goto cleanup;
	}
	for (size_t i = 0; i < range.count; i++) {
		struct node **hit = bsearch(&range.names[i], all, nall, sizeof(*all), cmp_node);
		json_t *o = json_pack("{s:s, s:s}", "node", range.names[i], "image", img.name);
		int64_t id = 0;

		if (!o)
			continue;
		json_array_append_new(arr, o);
		if (!hit) {
			json_object_set_new(o, "error", json_string("no such node"));
			continue;
		}
		if (dry_run) {
			if ((*hit)->bmc_protocol == BMC_NONE) {
				json_object_set_new(o, "error", json_string("no BMC"));
				continue;
			}
			json_object_set_new(o, "steps", steps_json(strcmp(img.kind, "iso") == 0));
			json_object_set_new(o, "dry_run", json_true());
			continue;
		}
		kiln_error_clear();
		if (job_queue(c, &id, *hit, &img, &wc) < 0) {
			json_object_set_new(o, "error", json_string(kiln_error_last()));
			continue;
		}
		json_object_set_new(o, "job", json_integer(id));
		json_object_set_new(o, "state", json_string("queued"));
	}
	api_reply(c, MHD_HTTP_OK, arr);
	arr = NULL;
cleanup:
	json_decref(arr);
	node_list_free(all, nall);
	kiln_nodelist_free(&range);
	image_clear(&img);
}

static json_t *job_json(const struct job *j, int64_t now)
{
	enum job_step step = JOB_STEP_BOOT_ID;
	int iso = j->image_kind && strcmp(j->image_kind, "iso") == 0;
	int index = 0, total = 0;
	json_t *o;

	job_step_parse(&step, j->step);
	job_step_progress(&index, &total, step, iso);
	if (strcmp(j->state, "queued") == 0)
		index = 0;
	else if (strcmp(j->state, "done") == 0)
		index = total;
	o = json_pack("{s:I, s:s, s:s, s:s, s:s, s:s, s:s, s:i, s:i, s:s, s:I, s:s?, s:s?, s:s, "
		      "s:I, s:I, s:I}",
		      "id", (json_int_t)j->id, "kind", "reinstall", "node", j->node, "image",
		      j->image, "image_kind", j->image_kind, "state", j->state, "step", j->step,
		      "step_index", index, "step_total", total, "steps",
		      iso ? "boot_id,media_insert,boot_set,power_cycle,wait_boot,media_eject"
			  : "boot_id,boot_set,power_cycle,wait_boot",
		      "step_started", (json_int_t)j->step_started, "error", j->error,
		      "boot_id_before", j->boot_id_before, "created_by", j->created_by,
		      "created_at", (json_int_t)j->created_at, "started_at",
		      (json_int_t)j->started_at, "finished_at", (json_int_t)j->finished_at);
	if (!o)
		return NULL;
	json_object_set_new(o, "progress", json_real(total ? (double)index / total : 0));
	json_object_set_new(o, "cycled", json_boolean(j->cycle_done));
	if (strcmp(j->state, "running") == 0 && j->step_started)
		json_object_set_new(o, "step_age_s", json_integer(now - j->step_started));
	return o;
}

void api_jobs_list(struct api_ctx *c)
{
	const char *rng = api_query(c, "range"), *active = api_query(c, "active");
	struct kiln_nodelist range = { 0 };
	struct job *list = NULL;
	size_t n = 0;
	json_t *arr = NULL;
	int64_t now = (int64_t)time(NULL);
	int rc;

	if (active && strcmp(active, "0") != 0 && strcmp(active, "1") != 0) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, "active", "active must be 0 or 1");
		return;
	}
	if (rng && rng[0] && api_range_expand(c, &range, rng, API_RANGE_SORTED) < 0)
		return;
	rc = store_job_list(c->st, &list, &n, active && strcmp(active, "1") == 0, 0);
	if (rc < 0) {
		api_fail_code(c, rc, NULL);
		goto cleanup;
	}
	arr = json_array();
	for (size_t i = 0; arr && i < n; i++) {
		if (rng && rng[0] && !api_fleet_range_has(&range, list[i].node))
			continue;
		json_array_append_new(arr, job_json(&list[i], now));
	}
	if (!arr) {
		api_fail(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
		goto cleanup;
	}
	api_reply(c, MHD_HTTP_OK, arr);
cleanup:
	job_list_free(list, n);
	kiln_nodelist_free(&range);
}

void api_job_get(struct api_ctx *c)
{
	struct job j = { 0 };
	int64_t id = 0;
	int rc;

	if (kiln_parse_int64(&id, c->param, 1, INT64_MAX) < 0) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, "id", "job id must be a positive number");
		return;
	}
	rc = store_job_get(c->st, &j, id);
	if (rc < 0) {
		api_fail_code(c, rc, NULL);
		return;
	}
	api_reply(c, MHD_HTTP_OK, job_json(&j, (int64_t)time(NULL)));
	job_clear(&j);
}
