/* SPDX-License-Identifier: Apache-2.0 */
/* GET /api/v1/report?since=12h: the overnight report over a window ending now. */
#include <time.h>

#include "api/handlers.h"
#include "kiln/error.h"
#include "kiln/parse.h"
#include "reports/report.h"

#define REPORT_SINCE_DEFAULT_S (12 * 3600)
#define REPORT_SINCE_MAX_S (366LL * 86400)

void api_report_get(struct api_ctx *c)
{
	const char *since_text = api_query(c, "since");
	int64_t ago = REPORT_SINCE_DEFAULT_S, now = (int64_t)time(NULL);
	json_t *res = NULL;
	int rc;

	if (since_text && (kiln_parse_duration(&ago, since_text) < 0 || ago <= 0 ||
			   ago > REPORT_SINCE_MAX_S)) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, "since",
			 "since must be a duration like 12h (at most 366d), not '%.40s'", since_text);
		return;
	}
	rc = report_build(&res, c->st, now - ago, now);
	if (rc < 0) {
		api_fail_code(c, rc, NULL);
		return;
	}
	api_reply(c, MHD_HTTP_OK, res);
}
