/* SPDX-License-Identifier: Apache-2.0 */
/* Sends one report to kilnd and checks its acknowledgement (docs/agent-protocol.md). */
#ifndef KILN_AGENT_SEND_H
#define KILN_AGENT_SEND_H

#include <stddef.h>

#include "kiln/http.h"

/* The largest report the agent sends (kilnd's request body cap, API_BODY_MAX: a larger one
 * would only be answered 413), and the largest answer it reads. */
#define SEND_MAX_REPORT (1u << 20)
#define SEND_MAX_ANSWER 65536

/*
 * POSTs body (a report) to /api/v1/agent/report on servers (the next one when nobody answers
 * at one: kiln_http_request_any) with the agent token. Returns 0 only when
 * kilnd answered 200/201 with {"report_id": the report's id, "status": "stored"|"duplicate"};
 * *duplicate (may be NULL) tells which. KILN_EAUTH for 401/403 (keep the report),
 * KILN_EINVAL when kilnd refused the report itself (400, 413, 422: resending cannot help),
 * KILN_EPROTO for a malformed acknowledgement, KILN_ERROR/KILN_ETIMEOUT otherwise (retry later).
 */
struct kiln_servers;
int send_report(int *duplicate, struct kiln_servers *servers, const char *token,
		const struct kiln_tls_trust *trust, const char *body, size_t len);

#endif
