/* SPDX-License-Identifier: Apache-2.0 */
/* kiln-bmcsim: Redfish semantics of one request against one BMC (auth, GET, actions, PATCH, sessions). */
#ifndef SIM_REDFISH_H
#define SIM_REDFISH_H

#include <stddef.h>
#include <stdint.h>

#include "bmc.h"
#include "sim.h"

struct sim_request {
	const char *method;
	const char *path;        /* without the query */
	const char *skip;        /* $skip query value or NULL */
	const char *authorization;
	const char *token;       /* X-Auth-Token */
	const char *if_match;
	const char *body;
	size_t body_len;
	uint64_t now;
	const char *select;      /* $select query value or NULL */
	const char *expand;      /* $expand query value or NULL */
	const char *unsupported; /* a "$" query parameter this service does not support, or NULL:
				  * answered 501 QueryNotSupported (DSP0266) */
};

/* Fills out (zeroed by the caller) with the answer to req. Never fails: errors become replies. */
void redfish_handle(struct sim_reply *out, struct bmc *b, const struct sim_request *req);

/* Sets out to a Redfish error body. */
void redfish_error(struct sim_reply *out, int status, const char *message_id, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Between redfish.c (auth, sessions, tasks, actions, PATCH, the dispatch) and redfish_get.c
 * (GET answers, $select, $expand); nothing else calls these. */

/* Sets out to status with doc (stolen; NULL: no body) as compact JSON. */
void redfish_reply_json(struct sim_reply *out, int status, json_t *doc);

/* Answers a GET of the session collection: the tree's, with the live sessions as members. */
void redfish_sessions_list(struct sim_reply *out, struct bmc *b, const struct sim_request *req);

/* Answers a GET of req->path (key: its tree_key); true when select (when not NULL) was
 * applied already. */
bool redfish_get(struct sim_reply *out, struct bmc *b, const struct sim_request *req, const char *key,
		 const char *select);

/* $expand=. over a collection already answered in out: the members' own answers in place
 * of their links. */
void redfish_expand_after(struct sim_reply *out, struct bmc *b, const struct sim_request *req);

/* $select over a JSON answer already in out (any resource but a system). */
void redfish_select_after(struct sim_reply *out, const char *select);

#endif
