/* SPDX-License-Identifier: Apache-2.0 */
/* What a handler works with: the request's context and the helpers that answer it (reply.c),
 * the audit rows around an action (api_audit.c), the token roles (routes.c). The one header
 * the api/ files share besides the route table (handlers.h). */
#ifndef KILND_API_REPLY_H
#define KILND_API_REPLY_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <microhttpd.h>

#include "api/api.h"
#include "daemon/secret.h"
#include "store/store.h"

#define API_PARAM_MAX 256

/* 0: no token needed; otherwise the least enum token_role that may call the route, or
 * ROLE_METRICS (store.h): a metrics token or any of viewer, operator and admin. */
#define ROLE_NONE 0
/* Route kinds outside the role ladder (api_agent.c checks them): a per-node agent token,
 * which reaches only agent routes and writes only its own node, and a fleet enrollment token. */
#define ROLE_AGENT 10
#define ROLE_ENROLL 11

struct api_ctx {
	struct MHD_Connection *conn;
	const struct api_route *route;
	char param[API_PARAM_MAX];     /* the {name} or {id} path segment, "" when none */
	int64_t agent_node_id;         /* ROLE_AGENT: the node the agent token belongs to */
	int64_t agent_token_touch;     /* ROLE_AGENT: the token's id when its use is to be recorded */
	int64_t enroll_token_id;       /* ROLE_ENROLL: the enrollment token's id */
	struct store *st;              /* this thread's store handle */
	const struct secret_key *key;
	struct bmc_engine *engine;     /* NULL when kilnd runs without one */
	struct live *live;             /* live BMC calls; NULL without an engine */
	struct cluster *cluster;       /* this instance among those on the store; NULL: none */
	struct ratelimit *enroll_limit; /* enrollments per client address; NULL: none */
	struct api_token caller;       /* the token's name is the audit actor */
	int64_t ui_session_id;         /* > 0: authenticated by a dashboard session's cookie */
	int64_t ui_expires_at;         /* that session's end */
	char ui_csrf[64];              /* and its CSRF value */
	struct ui_hub *hub;            /* the dashboard's live stream (api_ui_stream.c) */
	json_t *body;                  /* parsed request body, or NULL when empty */
	const char *body_text;         /* that body as received (valid JSON, not NUL-terminated), */
	size_t body_len;               /* for a handler that stores it as it is; NULL/0 when empty */
	size_t body_tree_bytes;        /* memory of body's tree when known (an arena), else 0 */
	unsigned status;               /* the answer the handler sets */
	json_t *reply;
	struct MHD_Response *response; /* a handler's own response (an upgrade), queued with
					* status instead of reply; the server destroys it */
	unsigned retry_after_s;        /* > 0: a Retry-After header goes with the answer */
	/* A handler that answers later (api_suspend): */
	int suspended;
	void (*resumed)(struct api_ctx *c); /* sets the answer once api_resume was called */
	void *pending;                 /* the handler's state meanwhile */
	void (*pending_free)(void *);  /* frees it when the request ends, answered or not */
};

const char *api_role_name(int role);
/* "viewer|operator|admin|metrics" -> role; 0 otherwise. */
int api_role_parse(const char *s);
/* 1 when a token of role have may call a route that needs need (ROLE_VIEWER ...
 * ROLE_ADMIN, or ROLE_METRICS: a metrics token or any of the ladder). A metrics token may
 * call nothing else. */
int api_role_allows(int have, int need);

/* The JSON of an error answer: {"error": msg, "field": field, "index": index}, field and
 * index left out when NULL and negative; the message's bytes that are not UTF-8 replaced. */
json_t *api_error_json(const char *msg, const char *field, long index);

/* Sets the answer (takes the reference to body). */
void api_reply(struct api_ctx *c, unsigned status, json_t *body);

/* Sets an error answer {"error": msg, "field": field} (field may be NULL). */
void api_fail(struct api_ctx *c, unsigned status, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* The same with "index" (an element of an import), index >= 0. */
void api_fail_index(struct api_ctx *c, unsigned status, long index, const char *field,
		    const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Answers a kiln error code with its status (404, 409, 400, ...) and kiln_error_last(). */
void api_fail_code(struct api_ctx *c, int rc, const char *field);

/* The body's member name as a string (*out NULL when absent or null) or a boolean (0 when
 * absent); a present value of another type answers 400 naming it and returns KILN_EINVAL. */
int api_body_string(struct api_ctx *c, const char **out, const char *name);
int api_body_bool(struct api_ctx *c, int *out, const char *name);

/* The HTTP status a kiln error code maps to. */
unsigned api_status_of(int rc);

/* A query-string argument, or NULL. */
const char *api_query(struct api_ctx *c, const char *name);

/* The body must be a JSON object: answers 400 and returns 0 when it is not. */
int api_body_require(struct api_ctx *c);

/* Audit rows around an action; detail is consumed (may be NULL). */
int api_audit_begin(struct api_ctx *c, int64_t *out_id, const char *action, const char *target,
		    json_t *detail);
void api_audit_finish(struct api_ctx *c, int64_t id, int rc);

/*
 * Answers later: suspends the request's connection (its thread serves others meanwhile).
 * The handler sets c->resumed (and c->pending, c->pending_free) before and returns without
 * an answer; once api_resume(c) is called, from any thread, c->resumed(c) runs on the
 * connection's thread and sets the answer. Only from a handler, at most once per request.
 */
void api_suspend(struct api_ctx *c);
void api_resume(struct api_ctx *c);

#endif
