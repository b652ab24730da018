/* SPDX-License-Identifier: Apache-2.0 */
/* GET /api/v1/events?since=&severity=&range=&kind=&limit=: events from the poller, the agents
 * and the actions, newest first. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/handlers.h"
#include "kiln/error.h"
#include "kiln/noderange.h"
#include "kiln/parse.h"

#define EVENTS_LIMIT_DEFAULT 1000
#define EVENTS_LIMIT_MAX 100000

static const char *const severity_names[] = { "info", "warning", "critical" };

static int severity_parse(enum event_severity *out, const char *s)
{
	for (int i = SEV_INFO; i <= SEV_CRITICAL; i++)
		if (strcmp(s, severity_names[i]) == 0) {
			*out = (enum event_severity)i;
			return 0;
		}
	return KILN_EINVAL;
}

void api_events_list(struct api_ctx *c)
{
	const char *since_text = api_query(c, "since"), *sev_text = api_query(c, "severity");
	const char *range = api_query(c, "range"), *kind = api_query(c, "kind");
	const char *limit_text = api_query(c, "limit");
	enum event_severity min = SEV_INFO;
	struct kiln_nodelist want = { 0 };
	struct event *ev = NULL;
	size_t n = 0;
	int64_t ago = 0, since = 0, limit = EVENTS_LIMIT_DEFAULT;
	json_t *arr;
	int rc;

	if (since_text && kiln_parse_duration(&ago, since_text) < 0) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, "since",
			 "since must be seconds or a duration like 12h, not '%.40s'", since_text);
		return;
	}
	if (sev_text && severity_parse(&min, sev_text) < 0) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, "severity",
			 "severity must be info, warning or critical, not '%.40s'", sev_text);
		return;
	}
	if (limit_text && kiln_parse_int64(&limit, limit_text, 1, EVENTS_LIMIT_MAX) < 0) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, "limit", "limit must be 1 to %d", EVENTS_LIMIT_MAX);
		return;
	}
	if (range && api_range_expand(c, &want, range, API_RANGE_SORTED) < 0)
		return;
	if (since_text)
		since = (int64_t)time(NULL) - ago;
	/* With a range the limit applies after filtering: read without one, then cut. */
	rc = store_event_query(c->st, &ev, &n, since, 0, kind, min, range ? 0 : (size_t)limit);
	if (rc < 0) {
		api_fail_code(c, rc, NULL);
		kiln_nodelist_free(&want);
		return;
	}
	arr = json_array();
	for (size_t i = 0; arr && i < n && (int64_t)json_array_size(arr) < limit; i++) {
		const struct event *e = &ev[i];

		if (range && (!e->node || !api_fleet_range_has(&want, e->node)))
			continue;
		json_t *o = json_pack("{s:I, s:I, s:s?, s:s, s:s?, s:s?, s:s?}", "id",
				      (json_int_t)e->id, "time", (json_int_t)e->time, "node",
				      e->node, "severity", severity_names[e->severity], "source",
				      e->source, "kind", e->kind, "message", e->message);

		/* a BMC log entry's own time: "time" is when kiln saw it */
		if (o && e->bmc_time)
			json_object_set_new(o, "bmc_time", json_integer(e->bmc_time));
		json_array_append_new(arr, o);
	}
	event_list_free(ev, n);
	kiln_nodelist_free(&want);
	api_reply(c, MHD_HTTP_OK, arr);
}
