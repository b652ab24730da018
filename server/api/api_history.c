/* SPDX-License-Identifier: Apache-2.0 */
/* GET /api/v1/nodes/{name}/history: one node's readings over time (the dashboard's charts). */
#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "api/handlers.h"
#include "kiln/error.h"
#include "kiln/parse.h"

/* A day of 30 s readings is 2,880; a week of them fits too, more is cut (oldest kept). */
#define HISTORY_ROWS_MAX 20000
#define HISTORY_SINCE_MAX (31 * 86400)

static json_t *num_or_null(double v)
{
	return isnan(v) ? json_null() : json_real(round(v * 10) / 10);
}

/* The samples as [{"time", t_key, p_key}] (NULL on ENOMEM). */
static json_t *samples_json(const struct agent_sample *a, size_t n, const char *t_key,
			    const char *p_key)
{
	json_t *arr = json_array();

	for (size_t i = 0; arr && i < n; i++)
		json_array_append_new(arr, json_pack("{s:I, s:o, s:o}", "time", (json_int_t)a[i].time,
						     t_key, num_or_null(a[i].temperature_max_c),
						     p_key, num_or_null(a[i].power_draw_total_w)));
	return arr;
}

void api_node_history(struct api_ctx *c)
{
	const char *since_text = api_query(c, "since");
	struct agent_sample *bmc = NULL, *agent = NULL;
	size_t nbmc = 0, nagent = 0;
	struct node *n = NULL;
	int64_t ago = 86400, since;
	int rc;

	if (since_text && (kiln_parse_duration(&ago, since_text) < 0 || ago <= 0 ||
			   ago > HISTORY_SINCE_MAX)) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, "since",
			 "since must be a duration like 24h (at most 31d), not '%.40s'", since_text);
		return;
	}
	since = (int64_t)time(NULL) - ago;
	rc = store_node_get(c->st, &n, c->param);
	if (rc == 0)
		rc = store_node_samples_list(c->st, &bmc, &nbmc, n->id, 1, since, HISTORY_ROWS_MAX);
	if (rc == 0)
		rc = store_node_samples_list(c->st, &agent, &nagent, n->id, 0, since,
					     HISTORY_ROWS_MAX);
	if (rc < 0)
		api_fail_code(c, rc, rc == KILN_ENOTFOUND ? "name" : NULL);
	else
		api_reply(c, MHD_HTTP_OK,
			  json_pack("{s:s, s:I, s:o, s:o}", "node", n->name, "since", (json_int_t)since,
				    "bmc", samples_json(bmc, nbmc, "inlet_c", "power_w"), "agent",
				    samples_json(agent, nagent, "hottest_c", "power_w")));
	free(bmc);
	free(agent);
	node_free(n);
}
