/* SPDX-License-Identifier: Apache-2.0 */
/* GET /api/v1/health: answers without a token once kilnd can reach its store. */
#include "api/handlers.h"
#include "kiln/version.h"

void api_health_get(struct api_ctx *c)
{
	int version = 0, rc;
	json_t *o;

	rc = store_schema_version(c->st, &version);
	if (rc < 0) {
		api_fail_code(c, rc, NULL);
		return;
	}
	/* the same strings as kilnd --version, so that a client can tell which build answers */
	o = json_pack("{s:s, s:s, s:s, s:i}", "status", "ok", "version", kiln_version, "revision",
		      kiln_revision, "schema", version);
	api_reply(c, MHD_HTTP_OK, o);
}
