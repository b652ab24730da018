/* SPDX-License-Identifier: Apache-2.0 */
/* Noderanges in requests: every endpoint that takes one expands it here, so that a name or
 * @group that matches no stored node stops the request before anything is read or sent. */
#include <stdlib.h>
#include <string.h>

#include "api/handlers.h"
#include "kiln/error.h"
#include "kiln/noderange.h"

/* At most this many unknown names go into the answer's "unknown" list and message. */
#define UNKNOWN_SHOWN 50

struct resolve {
	struct store *st;
	struct kiln_nodelist unknown; /* "@group" for each group with no member */
};

/* @group and "all", answered from the store. A group exists only through its members, so a
 * group nobody belongs to is unknown, the same as a mistyped one. */
static int resolve(void *ud, const char *name, int is_group, struct kiln_nodelist *out)
{
	struct resolve *r = ud;
	char at[80];
	int rc;

	if (is_group) {
		rc = store_group_members(r->st, name, out);
		if (rc != KILN_ENOTFOUND)
			return rc;
		kiln_error_clear();
		snprintf(at, sizeof(at), "@%.70s", name);
		return kiln_nodelist_add(&r->unknown, at);
	}
	if (strcmp(name, "all") == 0)
		return store_node_names(r->st, out);
	return kiln_fail(KILN_EINVAL, "'%s' is not a node range", name);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Adds to r->unknown each name of l that is not a stored node. */
static int unknown_find(struct resolve *r, const struct kiln_nodelist *l)
{
	struct kiln_nodelist known = { 0 };
	int rc;

	if ((rc = store_node_names(r->st, &known)) < 0)
		return rc;
	/* the store gives them ORDER BY name: SQLite's binary order, strcmp's */
	for (size_t i = 0; i < l->count && rc == 0; i++)
		if (known.count == 0 || !bsearch(&l->names[i], known.names, known.count,
						 sizeof(known.names[0]), cmp_str))
			rc = kiln_nodelist_add(&r->unknown, l->names[i]);
	kiln_nodelist_free(&known);
	return rc;
}

/* 404 {"error","field":"range","unknown":[...]}: the names, nothing done. */
static void unknown_fail(struct api_ctx *c, const struct kiln_nodelist *unknown)
{
	char names[600] = "";
	size_t used = 0, shown = unknown->count < UNKNOWN_SHOWN ? unknown->count : UNKNOWN_SHOWN;
	json_t *arr = json_array();

	for (size_t i = 0; i < shown; i++) {
		int n = snprintf(names + used, sizeof(names) - used, "%s%s", i ? ", " : "",
				 unknown->names[i]);

		if (n > 0 && (size_t)n < sizeof(names) - used)
			used += (size_t)n;
		json_array_append_new(arr, json_string(unknown->names[i]));
	}
	api_fail(c, MHD_HTTP_NOT_FOUND, "range", "no such node%s: %s%s; nothing was done",
		 unknown->count > 1 ? "s" : "", names,
		 unknown->count > shown ? ", ..." : "");
	if (c->reply && arr) {
		json_object_set_new(c->reply, "unknown", arr);
		arr = NULL;
	}
	json_decref(arr);
}

int api_range_expand(struct api_ctx *c, struct kiln_nodelist *out, const char *range, int flags)
{
	struct resolve r = { .st = c->st };
	struct kiln_nodelist l = { 0 };
	int rc;

	rc = noderange_expand(&l, range, resolve, &r);
	if (rc < 0) {
		api_fail(c, api_status_of(rc), "range", "range: %s", kiln_error_last());
		goto cleanup;
	}
	if ((rc = unknown_find(&r, &l)) < 0) {
		api_fail_code(c, rc, NULL);
		goto cleanup;
	}
	if (r.unknown.count > 0) {
		unknown_fail(c, &r.unknown);
		rc = KILN_ENOTFOUND;
		goto cleanup;
	}
	/* Only exclusions can empty a range of known names ("@rack1,-@gpu"): nothing to read is
	 * an answer, nothing to act on is a mistake. */
	if (l.count == 0 && (flags & API_RANGE_ACTION)) {
		api_fail(c, MHD_HTTP_NOT_FOUND, "range", "range '%.200s' matches no node; "
			 "nothing was done", range);
		rc = KILN_ENOTFOUND;
		goto cleanup;
	}
	if ((flags & API_RANGE_SORTED) && l.count > 1)
		qsort(l.names, l.count, sizeof(l.names[0]), cmp_str);
	kiln_nodelist_free(out);
	*out = l;
	l = (struct kiln_nodelist){ 0 };
cleanup:
	kiln_nodelist_free(&l);
	kiln_nodelist_free(&r.unknown);
	return rc;
}

int api_fleet_range_has(const struct kiln_nodelist *l, const char *name)
{
	/* bsearch over an empty (NULL) array is undefined */
	return l->count > 0 &&
	       bsearch(&name, l->names, l->count, sizeof(l->names[0]), cmp_str) != NULL;
}
