/* SPDX-License-Identifier: Apache-2.0 */
/* The audit log over the API: GET /api/v1/audit, and the rows every changing handler writes. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "api/handlers.h"
#include "kiln/error.h"
#include "kiln/parse.h"

#define AUDIT_LIMIT_DEFAULT 1000
#define AUDIT_LIMIT_MAX 100000

int api_audit_begin(struct api_ctx *c, int64_t *out_id, const char *action, const char *target,
		    json_t *detail)
{
	char *text = detail ? json_dumps(detail, JSON_COMPACT) : NULL;
	int rc;

	json_decref(detail);
	rc = store_audit_begin(c->st, out_id, c->caller.name ? c->caller.name : "?", action, target,
			       text);
	free(text);
	if (rc < 0)
		api_fail(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "audit log: %s",
			 kiln_error_last());
	return rc;
}

void api_audit_finish(struct api_ctx *c, int64_t id, int rc)
{
	char outcome[600];

	if (rc == 0)
		snprintf(outcome, sizeof(outcome), "ok");
	else
		snprintf(outcome, sizeof(outcome), "failed: %s",
			 kiln_error_last()[0] ? kiln_error_last() : kiln_error_name(rc));
	/* The outcome is best effort: the action happened (or not) either way. Keep the
	 * action's own message for the answer. */
	{
		char saved[512];

		snprintf(saved, sizeof(saved), "%s", kiln_error_last());
		store_audit_finish(c->st, id, outcome);
		kiln_fail(rc, "%s", saved);
	}
}

void api_audit_list(struct api_ctx *c)
{
	const char *since_text = api_query(c, "since"), *limit_text = api_query(c, "limit");
	struct audit_entry *rows = NULL;
	size_t count = 0;
	int64_t since = 0, ago = 0, limit = AUDIT_LIMIT_DEFAULT;
	json_t *arr = NULL;
	int rc;

	if (since_text && kiln_parse_duration(&ago, since_text) < 0) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, "since",
			 "since must be seconds or a duration like 12h, not '%.40s'", since_text);
		return;
	}
	if (limit_text && kiln_parse_int64(&limit, limit_text, 1, AUDIT_LIMIT_MAX) < 0) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, "limit", "limit must be 1 to %d",
			 AUDIT_LIMIT_MAX);
		return;
	}
	if (since_text)
		since = (int64_t)time(NULL) - ago;
	rc = store_audit_list(c->st, &rows, &count, since, (size_t)limit);
	if (rc < 0) {
		api_fail_code(c, rc, NULL);
		return;
	}
	arr = json_array();
	for (size_t i = 0; arr && i < count; i++) {
		const struct audit_entry *e = &rows[i];
		json_t *detail = e->detail ? json_loads(e->detail, 0, NULL) : NULL;

		if (e->detail && !detail)
			detail = json_string(e->detail);
		json_array_append_new(
			arr, json_pack("{s:I, s:I, s:s?, s:s?, s:s?, s:o?, s:s?}", "id",
				       (json_int_t)e->id, "time", (json_int_t)e->time, "actor",
				       e->actor, "action", e->action, "target", e->target, "detail",
				       detail, "outcome", e->outcome));
	}
	audit_entry_list_free(rows, count);
	api_reply(c, MHD_HTTP_OK, arr);
}
