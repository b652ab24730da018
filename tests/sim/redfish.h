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

#endif
