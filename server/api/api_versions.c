/* SPDX-License-Identifier: Apache-2.0 */
/* /api/v1/versions/audit: the fleet version audit over a noderange, with an optional policy. */
#include <stdlib.h>
#include <string.h>

#include "api/handlers.h"
#include "kiln/error.h"
#include "kiln/json.h"
#include "kiln/noderange.h"
#include "reports/versions_audit.h"

/* range NULL or "": every node. */
static void audit_answer(struct api_ctx *c, const char *range, const json_t *policy)
{
	struct kiln_nodelist names = { 0 };
	json_t *res = NULL;
	int rc;

	if (policy && vaudit_policy_check(policy) < 0) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, "policy", "%s", kiln_error_last());
		return;
	}
	if (range && range[0] && api_range_expand(c, &names, range, 0) < 0)
		goto cleanup;
	rc = vaudit_store_run(&res, c->st, range && range[0] ? &names : NULL, policy);
	if (rc < 0) {
		api_fail_code(c, rc, rc == KILN_ENOTFOUND ? "range" : NULL);
		goto cleanup;
	}
	api_reply(c, MHD_HTTP_OK, res);
cleanup:
	kiln_nodelist_free(&names);
}

void api_versions_audit_get(struct api_ctx *c)
{
	audit_answer(c, api_query(c, "range"), NULL);
}

void api_versions_audit_post(struct api_ctx *c)
{
	static const char *const allowed[] = { "range", "policy", NULL };
	const char *bad = NULL, *range = NULL;
	json_t *policy;

	if (!api_body_require(c))
		return;
	if (kiln_json_check_keys(c->body, allowed, &bad) < 0) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, bad, "unknown field '%s' (range, policy)", bad);
		return;
	}
	if (kiln_json_get_string(&range, c->body, "range", false) < 0) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, "range", "%s", kiln_error_last());
		return;
	}
	policy = json_object_get(c->body, "policy");
	audit_answer(c, range, json_is_null(policy) ? NULL : policy);
}
