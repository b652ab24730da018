/* SPDX-License-Identifier: Apache-2.0 */
/* The route table and the handlers it names (routes.c), and what the handler files offer
 * each other (a node check, a noderange, the dashboard's session): the server (api.c) and
 * each api_*.c include it with reply.h. */
#ifndef KILND_API_HANDLERS_H
#define KILND_API_HANDLERS_H

#include "api/reply.h"

typedef void (*api_handler_fn)(struct api_ctx *c);

/* Route flags. ROUTE_BODY_ARENA: the body's JSON tree comes from a jansson arena of the
 * request's own (kiln/json_arena.h), released when the request completes: for bodies of
 * hundreds of values on a hot route (an agent report). */
#define ROUTE_BODY_ARENA 1

struct api_route {
	const char *method;
	const char *path;  /* "/api/v1/nodes/{name}": a {x} segment is captured into param */
	int role;          /* ROLE_NONE, ROLE_VIEWER, ROLE_OPERATOR, ROLE_ADMIN */
	api_handler_fn handler;
	int flags;         /* ROUTE_* */
};

extern const struct api_route api_routes[];
extern const size_t api_routes_count;

/*
 * Finds the route for method and path; fills param. Returns the route, or NULL with
 * *out_path_known set when the path exists under another method (405).
 */
const struct api_route *api_route_find(const char *method, const char *path,
				       char param[API_PARAM_MAX], int *out_path_known);

/* Handlers, one per route. */
void api_health_get(struct api_ctx *c);
/* GET /metrics: the Prometheus exposition (api_metrics.c). */
void api_metrics_get(struct api_ctx *c);
/* [metrics] allow_unauthenticated_loopback is on. */
int api_metrics_loopback_open(void);
void api_nodes_list(struct api_ctx *c);
void api_nodes_create(struct api_ctx *c);
void api_nodes_delete_range(struct api_ctx *c);
void api_nodes_import(struct api_ctx *c);

/*
 * node add (api_node_check.c; not import): asks each Redfish node's BMC for its system, off
 * the request thread, before anything is stored. Takes nodes (the array and each node; freed
 * when the request ends). Returns 1 when there is nothing to ask (no engine, no Redfish
 * node): the caller calls then(c) itself; 0 when c is suspended until every BMC answered or
 * failed (within the engine's timeouts), then(c) runs on resumption; < 0 answered (ENOMEM).
 */
int api_node_check(struct api_ctx *c, struct node **nodes, size_t count,
		   void (*then)(struct api_ctx *c));
/* In then: the nodes, and what node i's BMC said: 0 (or not asked), KILN_ECONFIG when it does
 * not fit the node (several systems and no --bmc-system, or no such system: *msg names
 * the ids), another code when it could not be asked now (*msg why). */
struct node **api_node_check_nodes(struct api_ctx *c, size_t *count);
int api_node_check_result(struct api_ctx *c, size_t i, const char **msg);
/* Answers every check still waiting ("kilnd is stopping"): no connection stays suspended
 * when the HTTP server stops. */
void api_node_checks_stop(void);
void api_node_get(struct api_ctx *c);
void api_node_patch(struct api_ctx *c);
void api_node_delete(struct api_ctx *c);
void api_tokens_create(struct api_ctx *c);
void api_tokens_list(struct api_ctx *c);
void api_token_revoke(struct api_ctx *c);
void api_audit_list(struct api_ctx *c);
void api_console_attach(struct api_ctx *c);
void api_console_log(struct api_ctx *c);
void api_console_capture(struct api_ctx *c);
/* POST /api/v1/console/capture {"range","enabled"}: capture over a noderange. */
void api_console_capture_range(struct api_ctx *c);

/* Agents (api_agent.c). Checks an agent or enrollment token for a ROLE_AGENT/ROLE_ENROLL
 * route: 0 to go on, else the status to answer with msg. */
unsigned api_agent_authenticate(struct api_ctx *c, const char *token, char *msg, size_t msglen);
/* Adds "agent" (the latest state and GPUs, or null) to a node's JSON object. */
int api_agent_state_attach(struct api_ctx *c, json_t *node_obj, int64_t node_id);
void api_agent_report(struct api_ctx *c);
void api_agent_enroll(struct api_ctx *c);
void api_agent_token_create(struct api_ctx *c);
void api_enroll_token_create(struct api_ctx *c);
void api_enroll_tokens_list(struct api_ctx *c);
void api_enroll_token_revoke(struct api_ctx *c);
void api_agent_pending_list(struct api_ctx *c);
void api_agent_pending_accept(struct api_ctx *c);
void api_agent_pending_delete(struct api_ctx *c);
void api_agent_identity_list(struct api_ctx *c);
void api_agent_identity_accept(struct api_ctx *c);
void api_gpus_list(struct api_ctx *c);
/* GET /nodes/{name}/history?since=24h: its BMC's and agent's readings (api_history.c). */
void api_node_history(struct api_ctx *c);
void api_versions_audit_get(struct api_ctx *c);
void api_versions_audit_post(struct api_ctx *c);
void api_report_get(struct api_ctx *c);
/* GET /cluster: the instances on this store and the nodes each owns (api_cluster.c). */
void api_cluster_get(struct api_ctx *c);

/* Fleet status, hung nodes, maintenance and events (api_status.c, api_events.c). */
void api_status_get(struct api_ctx *c);
void api_hung_list(struct api_ctx *c);
void api_nodes_maintenance(struct api_ctx *c);
void api_events_list(struct api_ctx *c);
struct kiln_nodelist;
/* api_range_expand flags. */
#define API_RANGE_ACTION 1 /* a range that comes out empty is 404: nothing to act on */
#define API_RANGE_SORTED 2 /* names sorted for api_fleet_range_has, not in range order */
/*
 * Expands a request's noderange (with @group and all, from the store) into *out, which the
 * caller zeroed. A malformed range answers 400; a name or @group that matches no stored node
 * answers 404 {"error","field":"range","unknown":[names]} before anything is done; an empty
 * result is 200's business for a read and 404 with API_RANGE_ACTION. Returns 0, or the
 * negative code with the answer set.
 */
int api_range_expand(struct api_ctx *c, struct kiln_nodelist *out, const char *range, int flags);
int api_fleet_range_has(const struct kiln_nodelist *l, const char *name);

/* The web dashboard (api_ui.c): page and assets, log-in, log-out, the session. */
void api_ui_index_get(struct api_ctx *c);
void api_ui_asset_get(struct api_ctx *c);
void api_ui_login(struct api_ctx *c);
void api_ui_logout(struct api_ctx *c);
void api_ui_session_get(struct api_ctx *c);
/*
 * Authenticates a request by its dashboard session cookie: fills c->caller and the session's
 * fields; a state-changing method must carry the session's X-CSRF-Token. 0 to go on, else
 * the status to answer with msg (401 unknown or ended session, 403 CSRF).
 */
unsigned api_ui_authenticate(struct api_ctx *c, const char *cookie, const char *method,
			     char *msg, size_t msglen);
/* GET /api/v1/ui/stream: server-sent events of the fleet rows that changed. */
void api_ui_stream(struct api_ctx *c);
/* The stream's hub: a thread of its own (and its own store handle) that compares the rows
 * while someone listens. end closes every stream (before libmicrohttpd stops: it must not
 * stop with suspended connections); free joins the thread, after libmicrohttpd stopped. */
struct ui_hub;
int api_ui_hub_start(struct ui_hub **out, const char *db_path);
void api_ui_hub_end(struct ui_hub *h);
void api_ui_hub_free(struct ui_hub *h);

/* Live BMC calls over a noderange (api_bmc.c): a result per node, actions audited. */
void api_power_get(struct api_ctx *c);
void api_power_post(struct api_ctx *c);
void api_boot_post(struct api_ctx *c);
void api_media_get(struct api_ctx *c);
void api_media_insert(struct api_ctx *c);
void api_media_eject(struct api_ctx *c);
void api_sensors_get(struct api_ctx *c);
void api_sel_get(struct api_ctx *c);
void api_inventory_get(struct api_ctx *c);

/* Images and reinstall jobs (api_jobs.c). */
void api_images_create(struct api_ctx *c);
void api_images_list(struct api_ctx *c);
void api_image_delete(struct api_ctx *c);
void api_reinstall_post(struct api_ctx *c);
void api_jobs_list(struct api_ctx *c);
void api_job_get(struct api_ctx *c);

#endif
