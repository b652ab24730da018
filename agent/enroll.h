/* SPDX-License-Identifier: Apache-2.0 */
/* Enrollment: trade the fleet enrollment token for this node's own agent token. */
#ifndef KILN_AGENT_ENROLL_H
#define KILN_AGENT_ENROLL_H

#include "kiln/http.h"

/* The file in the state folder that holds the per-node token once enrolled. */
#define ENROLL_TOKEN_FILE "agent.token"

/*
 * POSTs {"dmi_serial","dmi_uuid","hostname","machine_id"} (a kilnd that refuses dmi_uuid
 * gets the others again) to /api/v1/agent/enroll on servers (the next
 * one when nobody answers at one) with the enrollment token. On 200/201 {"node","token"} sets *node and *token (caller frees). KILN_EBUSY when
 * kilnd holds the request for an admin (202, `kiln agent pending`) or asks to come back
 * later (429 or 503: *retry_after_s, else 0, says when), KILN_EAUTH when the enrollment
 * token is refused, KILN_EPROTO for a malformed answer.
 */
struct kiln_servers;
int enroll_request(char **node, char **token, long *retry_after_s, struct kiln_servers *servers,
		   const char *enroll_token, const struct kiln_tls_trust *trust,
		   const char *dmi_serial, const char *dmi_uuid, const char *hostname,
		   const char *machine_id);

/* Writes token to state_dir/agent.token (mode 0600, fsync'd, replaced atomically). */
int enroll_token_store(const char *state_dir, const char *token);

/* Reads state_dir/agent.token; KILN_ENOTFOUND when not enrolled yet. */
int enroll_token_load(char **out, const char *state_dir);

/* Forgets the stored token (kilnd refused it). */
int enroll_token_forget(const char *state_dir);

#endif
