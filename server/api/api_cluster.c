/* SPDX-License-Identifier: Apache-2.0 */
/* GET /api/v1/cluster: the kilnd instances on this store, their groups, the nodes each owns. */
#include <stdlib.h>
#include <string.h>

#include "api/handlers.h"
#include "cluster/cluster.h"
#include "kiln/error.h"

static json_t *instance_json(const struct instance_row *r, int live, int self, size_t nodes,
			     int64_t age_ms)
{
	return json_pack("{s:s, s:s, s:s, s:s?, s:b, s:b, s:I, s:f, s:I, s:f}", "id", r->id, "host",
			 r->host ? r->host : "", "listen", r->listen ? r->listen : "", "group",
			 r->group, "live", live, "self", self, "nodes", (json_int_t)nodes,
			 "heartbeat_age", (double)age_ms / 1000.0, "started",
			 (json_int_t)(r->started_ms / 1000), "lease", (double)r->lease_ms / 1000.0);
}

/*
 * The owners as every instance computes them: the live rows are the members, each node
 * goes to cluster_owner() of them. counts[i] is row i's share; *out_unowned the nodes no live
 * instance holds (none while one lives).
 */
static int owners_count(size_t *counts, const struct instance_row *rows, size_t n,
			struct node **nodes, size_t nn, size_t *out_unowned)
{
	struct cluster_member *m = calloc(n ? n : 1, sizeof(*m));
	size_t *row_of = calloc(n ? n : 1, sizeof(*row_of)), nm = 0;

	if (!m || !row_of) {
		free(m);
		free(row_of);
		return kiln_fail(KILN_ERROR, "out of memory");
	}
	for (size_t i = 0; i < n; i++)
		if (cluster_row_live(&rows[i])) {
			m[nm] = (struct cluster_member){ rows[i].id, rows[i].group };
			row_of[nm++] = i;
		}
	*out_unowned = 0;
	for (size_t k = 0; k < nn; k++) {
		int o = cluster_owner(m, nm, nodes[k]->id, nodes[k]->groups, nodes[k]->ngroups);

		if (o < 0)
			(*out_unowned)++;
		else
			counts[row_of[o]]++;
	}
	free(m);
	free(row_of);
	return 0;
}

void api_cluster_get(struct api_ctx *c)
{
	struct instance_row *rows = NULL;
	struct node **nodes = NULL;
	size_t n = 0, nn = 0, unowned = 0, *counts = NULL;
	const char *self = cluster_self(c->cluster);
	json_t *arr = json_array(), *o;
	int rc;

	if ((rc = store_node_list(c->st, &nodes, &nn)) < 0)
		goto fail;
	if (!cluster_shared(c->cluster)) {
		/* one kilnd on its own store: it owns every node */
		if (c->cluster)
			json_array_append_new(arr, instance_json(cluster_self_row(c->cluster), 1, 1,
								 nn, 0));
	} else {
		if ((rc = store_instance_list(c->st, &rows, &n)) < 0)
			goto fail;
		if (!(counts = calloc(n ? n : 1, sizeof(*counts)))) {
			rc = kiln_fail(KILN_ERROR, "out of memory");
			goto fail;
		}
		if ((rc = owners_count(counts, rows, n, nodes, nn, &unowned)) < 0)
			goto fail;
		for (size_t i = 0; i < n; i++)
			json_array_append_new(arr, instance_json(&rows[i], cluster_row_live(&rows[i]),
								 strcmp(rows[i].id, self) == 0,
								 counts[i],
								 rows[i].now_ms - rows[i].heartbeat_ms));
	}
	o = json_pack("{s:s, s:s, s:o, s:I, s:I}", "backend",
		      cluster_shared(c->cluster) ? "postgresql" : "sqlite",
		      "answered_by", self, "instances", arr, "nodes", (json_int_t)nn, "unowned",
		      (json_int_t)unowned);
	arr = NULL;
	api_reply(c, MHD_HTTP_OK, o);
	goto cleanup;
fail:
	api_fail_code(c, rc, NULL);
cleanup:
	json_decref(arr);
	free(counts);
	instance_list_free(rows, n);
	node_list_free(nodes, nn);
}
