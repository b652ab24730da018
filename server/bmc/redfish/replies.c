/* SPDX-License-Identifier: Apache-2.0 */
/* What a BMC answers beside the resource asked for: a task monitor to follow (202 Accepted)
 * until the task ends, and an error reply read into a message kiln can show. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bmc/redfish/budget.h"
#include "bmc/redfish/internal.h"
#include "kiln/error.h"
#include "kiln/parse.h"

/* --- task monitors ---------------------------------------------------------------------- */

static int task_poll(struct rf_op *op, const struct rf_reply *r);

static void task_push_poll(struct rf_op *op, long retry_after_s)
{
	long delay = retry_after_s >= 0 ? retry_after_s * 1000 : 500;
	if (delay > 10000)
		delay = 10000;
	rf_push_delayed(op, "GET", op->task_uri, delay, task_poll);
	op->last_pushed->flags |= RF_ALLOW_ERROR;
}

int rf_task_follow(struct rf_op *op, const char *location, long retry_after_s, rf_call_fn then)
{
	if (!location || !location[0])
		return kiln_fail(KILN_EPROTO, "202 Accepted without a task monitor Location");
	op->task_then = then;
	free(op->task_uri);
	if (!(op->task_uri = strdup(location)))
		return kiln_fail(KILN_ERROR, "out of memory");
	task_push_poll(op, retry_after_s);
	return 0;
}

static int task_poll(struct rf_op *op, const struct rf_reply *r)
{
	const char *state = NULL;
	if (r->status >= 400)
		return rf_fail_reply("GET", "task monitor", r);
	if (r->json)
		state = json_string_value(json_object_get(r->json, "TaskState"));
	int running = r->status == 202 ||
		      (state && (strcmp(state, "New") == 0 || strcmp(state, "Running") == 0 ||
				 strcmp(state, "Pending") == 0 || strcmp(state, "Starting") == 0 ||
				 strcmp(state, "Stopping") == 0 || strcmp(state, "Service") == 0 ||
				 strcmp(state, "Suspended") == 0 || strcmp(state, "Interrupted") == 0));
	if (running) {
		if (rf_now_ms() > op->deadline_ms)
			return kiln_fail(KILN_ETIMEOUT, "task still %s after the action timeout",
					 state ? state : "running");
		task_push_poll(op, r->retry_after_s);
		return 0;
	}
	if (state && strcmp(state, "Completed") != 0) {
		char text[300] = "";
		json_t *msgs = json_object_get(r->json, "Messages");
		json_t *m = json_array_get(msgs, 0);
		if (m)
			snprintf(text, sizeof(text), ": %s: %s",
				 json_string_value(json_object_get(m, "MessageId"))
					 ? json_string_value(json_object_get(m, "MessageId")) : "",
				 json_string_value(json_object_get(m, "Message"))
					 ? json_string_value(json_object_get(m, "Message")) : "");
		return kiln_fail(KILN_ERROR, "task ended %s%s", state, text);
	}
	op->task_done = 1;
	if (op->task_then)
		rf_push_call(op, op->task_then);
	return 0;
}

/* --- errors ----------------------------------------------------------------------------- */

void rf_error_text(char *out, size_t n, const json_t *body)
{
	out[0] = '\0';
	json_t *err = json_object_get(body, "error");
	if (!json_is_object(err))
		return;
	const char *id = json_string_value(json_object_get(err, "code"));
	const char *msg = json_string_value(json_object_get(err, "message"));
	json_t *info = json_array_get(json_object_get(err, "@Message.ExtendedInfo"), 0);
	if (json_is_object(info)) {
		const char *iid = json_string_value(json_object_get(info, "MessageId"));
		const char *imsg = json_string_value(json_object_get(info, "Message"));
		if (iid)
			id = iid;
		if (imsg)
			msg = imsg;
	}
	snprintf(out, n, "%s%s%s", id ? id : "", id && msg ? ": " : "", msg ? msg : "");
}

void rf_skip_note(json_t *skipped, const char *path, const struct rf_reply *r)
{
	char text[400], line[700];

	if (!json_is_array(skipped))
		return;
	rf_error_text(text, sizeof(text), r->json);
	if (r->status == 0)
		snprintf(text, sizeof(text), "%s", r->curl_error ? r->curl_error : "no response");
	snprintf(line, sizeof(line), "%s: %ld%s%s%s", path ? path : "?", r->status,
		 text[0] ? " '" : "", text, text[0] ? "'" : "");
	json_array_append_new(skipped, json_string(line));
}

int rf_reply_usable(const struct rf_reply *r, json_t *skipped)
{
	if (r->status == 503 || r->status == 429)
		return rf_fail_reply("GET", r->path ? r->path : "?", r);
	if (r->status >= 300 || !json_is_object(r->json) || rf_body_is_error(r->json)) {
		rf_skip_note(skipped, r->path, r);
		return 0;
	}
	return 1;
}

int rf_fail_reply(const char *method, const char *path, const struct rf_reply *r)
{
	if (r->status == 0 && r->tls_pin_mismatch)
		return kiln_fail(KILN_ETLS, "%s %s: %s", method, path, r->curl_error);
	if (r->status == 0)
		return kiln_fail(r->curl_code == CURLE_OPERATION_TIMEDOUT ? KILN_ETIMEOUT : KILN_ERROR,
				 "%s %s: %s", method, path, r->curl_error ? r->curl_error : "no response");
	char text[400];
	json_t *body = r->json;
	json_t *parsed = NULL;
	/* an error's message is short: a huge error body is not parsed for it */
	if (!body && r->body_len && r->body_len <= RF_BODY_ERROR_PARSE_MAX)
		body = parsed = json_loadb(r->body, r->body_len, 0, NULL);
	rf_error_text(text, sizeof(text), body);
	json_decref(parsed);
	int code = KILN_ERROR;
	if (r->status == 401 || r->status == 403)
		code = KILN_EAUTH;
	else if (r->status == 404)
		code = KILN_ENOTFOUND;
	else if (r->status == 409 || r->status == 503 || r->status == 429)
		code = KILN_EBUSY;
	else if (r->status == 400)
		code = KILN_EINVAL;
	/* A busy BMC's Retry-After is part of what it said (the health reason shows it). */
	char later[40] = "";
	if ((r->status == 503 || r->status == 429) && r->retry_after_s >= 0)
		snprintf(later, sizeof(later), " (Retry-After %lds)", r->retry_after_s);
	if (text[0])
		return kiln_fail(code, "%s %s: %ld '%s'%s", method, path, r->status, text, later);
	return kiln_fail(code, "%s %s: HTTP %ld%s", method, path, r->status, later);
}

const char *rf_profile_name(enum rf_profile p)
{
	switch (p) {
	case RF_DELL: return "dell";
	case RF_HPE: return "hpe";
	case RF_OPENBMC: return "openbmc";
	default: return "generic";
	}
}
