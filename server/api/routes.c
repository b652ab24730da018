/* SPDX-License-Identifier: Apache-2.0 */
/* The REST API's route table: the one list of endpoints, the role each needs and its handler. */
#include <stdio.h>
#include <string.h>

#include "api/handlers.h"
#include "kiln/error.h"

/* Literal paths before patterns that could also match them (nodes/import vs nodes/{name}). */
const struct api_route api_routes[] = {
	{ "GET", "/api/v1/health", ROLE_NONE, api_health_get, 0 },
	/* where Prometheus looks by default, outside /api/v1 */
	{ "GET", "/metrics", ROLE_METRICS, api_metrics_get, 0 },
	{ "GET", "/", ROLE_NONE, api_ui_index_get, 0 },
	{ "GET", "/ui/{file}", ROLE_NONE, api_ui_asset_get, 0 },
	{ "POST", "/api/v1/ui/login", ROLE_NONE, api_ui_login, 0 },
	{ "POST", "/api/v1/ui/logout", ROLE_VIEWER, api_ui_logout, 0 },
	{ "GET", "/api/v1/ui/session", ROLE_NONE, api_ui_session_get, 0 },
	{ "GET", "/api/v1/ui/stream", ROLE_VIEWER, api_ui_stream, 0 },
	{ "GET", "/api/v1/nodes", ROLE_VIEWER, api_nodes_list, 0 },
	{ "POST", "/api/v1/nodes", ROLE_ADMIN, api_nodes_create, 0 },
	{ "DELETE", "/api/v1/nodes", ROLE_ADMIN, api_nodes_delete_range, 0 },
	{ "POST", "/api/v1/nodes/import", ROLE_ADMIN, api_nodes_import, 0 },
	{ "POST", "/api/v1/nodes/maintenance", ROLE_OPERATOR, api_nodes_maintenance, 0 },
	{ "GET", "/api/v1/status", ROLE_VIEWER, api_status_get, 0 },
	{ "GET", "/api/v1/hung", ROLE_VIEWER, api_hung_list, 0 },
	{ "GET", "/api/v1/events", ROLE_VIEWER, api_events_list, 0 },
	{ "GET", "/api/v1/nodes/{name}", ROLE_VIEWER, api_node_get, 0 },
	{ "PATCH", "/api/v1/nodes/{name}", ROLE_ADMIN, api_node_patch, 0 },
	{ "DELETE", "/api/v1/nodes/{name}", ROLE_ADMIN, api_node_delete, 0 },
	{ "POST", "/api/v1/tokens", ROLE_ADMIN, api_tokens_create, 0 },
	{ "GET", "/api/v1/tokens", ROLE_ADMIN, api_tokens_list, 0 },
	{ "DELETE", "/api/v1/tokens/{id}", ROLE_ADMIN, api_token_revoke, 0 },
	{ "GET", "/api/v1/audit", ROLE_VIEWER, api_audit_list, 0 },
	{ "GET", "/api/v1/nodes/{name}/console", ROLE_OPERATOR, api_console_attach, 0 },
	{ "GET", "/api/v1/nodes/{name}/console/log", ROLE_VIEWER, api_console_log, 0 },
	{ "GET", "/api/v1/nodes/{name}/history", ROLE_VIEWER, api_node_history, 0 },
	{ "POST", "/api/v1/nodes/{name}/console/capture", ROLE_OPERATOR, api_console_capture, 0 },
	{ "POST", "/api/v1/console/capture", ROLE_OPERATOR, api_console_capture_range, 0 },
	{ "POST", "/api/v1/agent/report", ROLE_AGENT, api_agent_report, ROUTE_BODY_ARENA },
	{ "POST", "/api/v1/agent/enroll", ROLE_ENROLL, api_agent_enroll, 0 },
	{ "POST", "/api/v1/agent/tokens", ROLE_ADMIN, api_agent_token_create, 0 },
	{ "POST", "/api/v1/agent/enroll-tokens", ROLE_ADMIN, api_enroll_token_create, 0 },
	{ "GET", "/api/v1/agent/enroll-tokens", ROLE_ADMIN, api_enroll_tokens_list, 0 },
	{ "DELETE", "/api/v1/agent/enroll-tokens/{id}", ROLE_ADMIN, api_enroll_token_revoke, 0 },
	{ "GET", "/api/v1/agent/pending", ROLE_ADMIN, api_agent_pending_list, 0 },
	{ "POST", "/api/v1/agent/pending/{id}/accept", ROLE_ADMIN, api_agent_pending_accept, 0 },
	{ "DELETE", "/api/v1/agent/pending/{id}", ROLE_ADMIN, api_agent_pending_delete, 0 },
	{ "GET", "/api/v1/agent/identities", ROLE_ADMIN, api_agent_identity_list, 0 },
	{ "POST", "/api/v1/agent/identities/accept", ROLE_ADMIN, api_agent_identity_accept, 0 },
	{ "GET", "/api/v1/gpus", ROLE_VIEWER, api_gpus_list, 0 },
	{ "GET", "/api/v1/versions/audit", ROLE_VIEWER, api_versions_audit_get, 0 },
	{ "POST", "/api/v1/versions/audit", ROLE_VIEWER, api_versions_audit_post, 0 },
	{ "GET", "/api/v1/report", ROLE_VIEWER, api_report_get, 0 },
	{ "GET", "/api/v1/cluster", ROLE_VIEWER, api_cluster_get, 0 },
	{ "GET", "/api/v1/power", ROLE_VIEWER, api_power_get, 0 },
	{ "POST", "/api/v1/power", ROLE_OPERATOR, api_power_post, 0 },
	{ "POST", "/api/v1/boot", ROLE_OPERATOR, api_boot_post, 0 },
	{ "GET", "/api/v1/media", ROLE_VIEWER, api_media_get, 0 },
	{ "POST", "/api/v1/media/insert", ROLE_OPERATOR, api_media_insert, 0 },
	{ "POST", "/api/v1/media/eject", ROLE_OPERATOR, api_media_eject, 0 },
	{ "GET", "/api/v1/sensors", ROLE_VIEWER, api_sensors_get, 0 },
	{ "GET", "/api/v1/sel", ROLE_VIEWER, api_sel_get, 0 },
	{ "GET", "/api/v1/inventory", ROLE_VIEWER, api_inventory_get, 0 },
	{ "POST", "/api/v1/images", ROLE_ADMIN, api_images_create, 0 },
	{ "GET", "/api/v1/images", ROLE_VIEWER, api_images_list, 0 },
	{ "DELETE", "/api/v1/images/{name}", ROLE_ADMIN, api_image_delete, 0 },
	{ "POST", "/api/v1/reinstall", ROLE_OPERATOR, api_reinstall_post, 0 },
	{ "GET", "/api/v1/jobs", ROLE_VIEWER, api_jobs_list, 0 },
	{ "GET", "/api/v1/jobs/{id}", ROLE_VIEWER, api_job_get, 0 },
};

const size_t api_routes_count = sizeof(api_routes) / sizeof(api_routes[0]);

static const char *const role_names[] = { "none", "viewer", "operator", "admin", "metrics" };

const char *api_role_name(int role)
{
	if (role == ROLE_AGENT)
		return "agent";
	if (role == ROLE_ENROLL)
		return "enroll";
	if (role < 0 || role > ROLE_METRICS)
		return "?";
	return role_names[role];
}

int api_role_parse(const char *s)
{
	for (int r = ROLE_VIEWER; s && r <= ROLE_METRICS; r++)
		if (strcmp(s, role_names[r]) == 0)
			return r;
	return 0;
}

int api_role_allows(int have, int need)
{
	if (need == ROLE_METRICS)
		return have == ROLE_METRICS || (have >= ROLE_VIEWER && have <= ROLE_ADMIN);
	/* a Prometheus token reads the metrics, never a node, a console or a credential */
	if (have == ROLE_METRICS || have < ROLE_VIEWER || have > ROLE_ADMIN)
		return 0;
	return have >= need;
}

/* Matches path against pattern segment by segment; a {x} segment captures one segment. */
static int path_match(const char *pattern, const char *path, char param[API_PARAM_MAX])
{
	const char *p = pattern, *s = path;

	param[0] = '\0';
	while (*p && *s) {
		if (*p == '{') {
			size_t n = strcspn(s, "/");

			if (n == 0 || n >= API_PARAM_MAX)
				return 0;
			memcpy(param, s, n);
			param[n] = '\0';
			s += n;
			p = strchr(p, '}');
			if (!p)
				return 0;
			p++;
			continue;
		}
		if (*p != *s)
			return 0;
		p++;
		s++;
	}
	return *p == '\0' && *s == '\0';
}

const struct api_route *api_route_find(const char *method, const char *path,
				       char param[API_PARAM_MAX], int *out_path_known)
{
	*out_path_known = 0;
	for (size_t i = 0; i < api_routes_count; i++) {
		if (!path_match(api_routes[i].path, path, param))
			continue;
		if (strcmp(api_routes[i].method, method) == 0)
			return &api_routes[i];
		*out_path_known = 1;
	}
	param[0] = '\0';
	return NULL;
}

int api_routes_print(FILE *f)
{
	for (size_t i = 0; i < api_routes_count; i++)
		fprintf(f, "%s %s %s\n", api_routes[i].method, api_routes[i].path,
			api_role_name(api_routes[i].role));
	return ferror(f) ? kiln_fail(KILN_ERROR, "cannot print the routes") : 0;
}
