/* SPDX-License-Identifier: Apache-2.0 */
/* A report's health cut (health_cut.h): each topic's part is made and read by the file of its
 * rules (rules.h). */
#include <stdlib.h>

#include "health/health_cut.h"
#include "health/rules.h"

char *health_cut_make(json_t *report, const char *prev_cut, int64_t now)
{
	json_t *prev = prev_cut ? json_loads(prev_cut, 0, NULL) : NULL;
	json_t *cut = json_object(), *part;
	char *text = NULL;

	if (!cut)
		goto done;
	if ((part = health_gpu_cut(report, json_object_get(prev, "gpu"), now)))
		json_object_set_new(cut, "gpu", part);
	if ((part = health_host_cut(report, json_object_get(prev, "host"), now)))
		json_object_set_new(cut, "host", part);
	text = json_dumps(cut, JSON_COMPACT);
done:
	json_decref(cut);
	json_decref(prev);
	return text;
}

void health_cut_facts(struct health_facts *f, const char *cut, json_t **keep)
{
	json_t *c = cut ? json_loads(cut, 0, NULL) : NULL;

	*keep = c;
	if (!json_is_object(c))
		return;
	health_gpu_cut_facts(f, json_object_get(c, "gpu"));
	health_host_cut_facts(f, json_object_get(c, "host"));
}
