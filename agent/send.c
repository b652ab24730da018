/* SPDX-License-Identifier: Apache-2.0 */
/* POSTs reports to kilnd; only a well-formed acknowledgement counts as delivered. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "kiln/error.h"
#include "kiln/json.h"
#include "send.h"

#define SEND_TIMEOUT_MS 30000

/* A short, printable excerpt of an error body for the message. */
static const char *answer_error(const struct kiln_http_response *resp)
{
	json_t *o;
	static __thread char msg[200];
	const char *e;

	msg[0] = '\0';
	if (!resp->body || kiln_json_parse_object(&o, resp->body, resp->body_len) < 0) {
		kiln_error_clear();
		return "";
	}
	e = json_string_value(json_object_get(o, "error"));
	if (e)
		snprintf(msg, sizeof msg, ": %s", e);
	json_decref(o);
	return msg;
}

int send_report(int *duplicate, struct kiln_servers *servers, const char *token,
		const struct kiln_tls_trust *trust, const char *body, size_t len)
{
	struct kiln_http_response resp = { 0 };
	json_t *report = NULL, *ack = NULL;
	const char *id = NULL, *ack_id = NULL, *status = NULL;
	int rc;

	if (len > SEND_MAX_REPORT)
		return kiln_fail(KILN_EINVAL, "report of %zu bytes exceeds %u", len, SEND_MAX_REPORT);
	rc = kiln_json_parse_object(&report, body, len);
	if (rc < 0)
		return kiln_fail_prefix(KILN_EINVAL, "report");
	rc = kiln_json_get_string(&id, report, "report_id", true);
	if (rc < 0)
		goto cleanup;
	rc = kiln_http_request_any(&resp, servers, "POST", "/api/v1/agent/report", token, body, len,
				   trust, SEND_TIMEOUT_MS, SEND_MAX_ANSWER, NULL);
	if (rc < 0)
		goto cleanup;
	if (resp.status == 401 || resp.status == 403) {
		rc = kiln_fail(KILN_EAUTH, "kilnd refused the agent token (HTTP %ld%s)", resp.status,
			       answer_error(&resp));
		goto cleanup;
	}
	if (resp.status == 409) {
		/* the host is not the node's, in kilnd's eyes: an admin decides */
		rc = kiln_fail(KILN_EIDENTITY, "refused by kilnd (HTTP 409)%s", answer_error(&resp));
		goto cleanup;
	}
	if (resp.status == 400 || resp.status == 413 || resp.status == 422) {
		rc = kiln_fail(KILN_EINVAL, "kilnd refused report %s (HTTP %ld%s)", id, resp.status,
			       answer_error(&resp));
		goto cleanup;
	}
	if (resp.status != 200 && resp.status != 201) {
		rc = kiln_fail(KILN_ERROR, "kilnd answered HTTP %ld%s", resp.status, answer_error(&resp));
		goto cleanup;
	}
	rc = kiln_json_parse_object(&ack, resp.body, resp.body_len);
	if (rc < 0 || kiln_json_get_string(&ack_id, ack, "report_id", true) < 0 ||
	    kiln_json_get_string(&status, ack, "status", true) < 0) {
		rc = kiln_fail_prefix(KILN_EPROTO, "acknowledgement");
		goto cleanup;
	}
	if (strcmp(ack_id, id) != 0) {
		rc = kiln_fail(KILN_EPROTO, "acknowledgement names report %.40s, not %s", ack_id, id);
		goto cleanup;
	}
	if (strcmp(status, "stored") != 0 && strcmp(status, "duplicate") != 0) {
		rc = kiln_fail(KILN_EPROTO, "acknowledgement status '%.40s' is neither stored nor duplicate",
			       status);
		goto cleanup;
	}
	if (duplicate)
		*duplicate = strcmp(status, "duplicate") == 0;
	rc = 0;
cleanup:
	json_decref(report);
	json_decref(ack);
	kiln_http_response_free(&resp);
	return rc;
}
