/* Redfish authentication and reply handling: one lazy session per BMC, re-login once on 401,
 * Basic where there are no sessions, two rejections mark the credentials, transient retries. */
#include <stdlib.h>
#include <string.h>

#include "bmc/redfish/budget.h"
#include "bmc/redfish/internal.h"
#include "kiln/error.h"
#include "kiln/json.h"

#define RF_RETRY_MAX 4
#define RF_BACKOFF_MS 500
#define RF_BACKOFF_MAX_MS 10000

void rf_session_forget(struct redfish_bmc *b)
{
	if (!b)
		return;
	free(b->token);
	free(b->session_uri);
	b->token = NULL;
	b->session_uri = NULL;
	b->logout_sent = 0;
}

int rf_step_needs_login(struct rf_op *op, const struct rf_step *step)
{
	const struct redfish_bmc *b = op->bmc;
	return !(step->flags & (RF_NOAUTH | RF_LOGIN)) && !b->token && !b->basic_only &&
	       b->sessions && b->user;
}

void rf_push_login(struct rf_op *op)
{
	const struct redfish_bmc *b = op->bmc;
	json_t *body = json_pack("{s:s, s:s}", "UserName", b->user, "Password",
				 b->password ? b->password : "");
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	rf_push(op, "POST", b->sessions, text, RF_LOGIN | RF_ALLOW_ERROR, NULL);
	if (text) {
		explicit_bzero(text, strlen(text));
		free(text);
	}
	kiln_json_wipe_string(body, "Password");
	json_decref(body);
}

/* A vendor's "busy, try again" answer: 503, 429, iDRAC SYS518 (job/lock busy), and on
 * iDRAC a 409 to a power action that comes right after another one. */
static int reply_transient(const struct rf_op *op, const struct rf_step *step,
			   const struct rf_reply *r)
{
	if (r->status == 503 || r->status == 429)
		return 1;
	if (r->status != 400 && r->status != 409 && r->status != 500)
		return 0;
	if (r->body_len && memmem(r->body, r->body_len, "SYS518", 6))
		return 1;
	if (r->status == 409 && op->bmc->profile == RF_DELL && strcmp(step->method, "POST") == 0 &&
	    strstr(step->path, "Reset"))
		return 1;
	return 0;
}

static int credentials_rejected(struct rf_op *op, const char *method, const char *path,
				const struct rf_reply *r)
{
	struct redfish_bmc *b = op->bmc;
	b->auth_failures++;
	if (b->auth_failures < 2)
		return 0; /* one more try */
	b->rejected = 1;
	rf_session_forget(b);
	rf_fail_reply(method, path, r);
	return kiln_fail_prefix(KILN_EAUTH, "credentials rejected twice; not tried again until "
				"they change");
}

static void step_pop(struct rf_op *op, struct rf_step *step)
{
	if (op->queue == step)
		op->queue = step->next;
}

static int retry_later(struct rf_op *op, struct rf_step *step, const struct rf_reply *r)
{
	/* The poller's read does not press a BMC that says it is busy: its next interval is the
	 * retry, and the busy answer reaches it now (not after seconds of backoff here). */
	if (op->op.background && (r->status == 503 || r->status == 429))
		return 0;
	long delay = RF_BACKOFF_MS << step->retries;
	if (r->retry_after_s >= 0)
		delay = r->retry_after_s * 1000;
	if (delay > RF_BACKOFF_MAX_MS)
		delay = RF_BACKOFF_MAX_MS;
	if (step->retries >= RF_RETRY_MAX || step->flags & RF_NO_RETRY ||
	    rf_now_ms() + delay > op->deadline_ms)
		return 0;
	step->retries++;
	step->not_before_ms = rf_now_ms() + delay;
	return 1;
}

static int login_reply(struct rf_op *op, struct rf_step *step, struct rf_reply *r)
{
	struct redfish_bmc *b = op->bmc;

	if (r->status >= 200 && r->status < 300) {
		step_pop(op, step);
		rf_step_free(step);
		if (!r->token) {
			b->basic_only = 1; /* a session without a token is no use */
			return 1;
		}
		rf_session_forget(b);
		b->token = strdup(r->token);
		const char *uri = r->location;
		json_t *body = NULL;
		if (!uri && r->body_len) {
			body = json_loadb(r->body, r->body_len, 0, NULL);
			uri = json_string_value(json_object_get(body, "@odata.id"));
		}
		b->session_uri = uri ? strdup(uri) : NULL;
		json_decref(body);
		b->auth_failures = 0;
		b->sessions_created++;
		return 1;
	}
	if (r->status == 401 || r->status == 403) {
		int rc = credentials_rejected(op, "POST", b->sessions, r);
		return rc < 0 ? rc : 0;
	}
	if (r->status == 404 || r->status == 405 || r->status == 501) {
		b->basic_only = 1;
		step_pop(op, step);
		rf_step_free(step);
		return 1;
	}
	if (r->status && reply_transient(op, step, r) && retry_later(op, step, r))
		return 0;
	return rf_fail_reply("POST", b->sessions, r);
}

int rf_reply_process(struct rf_op *op, struct rf_step *step, struct rf_reply *r)
{
	struct redfish_bmc *b = op->bmc;

	if (step->flags & RF_LOGIN)
		return login_reply(op, step, r);
	if (op->logout) { /* whatever the answer (an expired session: 401), we are done */
		step_pop(op, step);
		rf_step_free(step);
		rf_session_forget(b);
		return 1;
	}
	if (r->status == 0)
		return rf_fail_reply(step->method, step->path, r);

	if (r->status == 401 && !(step->flags & RF_NOAUTH)) {
		if (b->token && !op->relogged) {
			op->relogged = 1; /* our session expired or was deleted: log in again once */
			rf_session_forget(b);
			return 0;
		}
		if (!b->token) {
			int rc = credentials_rejected(op, step->method, step->path, r);
			return rc < 0 ? rc : 0;
		}
		return rf_fail_reply(step->method, step->path, r);
	}
	if (reply_transient(op, step, r) && retry_later(op, step, r))
		return 0;
	if (r->status >= 400 && !(step->flags & RF_ALLOW_ERROR))
		return rf_fail_reply(step->method, step->path, r);

	if (r->status < 300 && !b->token && !(step->flags & RF_NOAUTH))
		b->auth_failures = 0; /* Basic worked */
	if (r->body_len) {
		json_error_t jerr;
		r->json = rf_json_load(r->body, r->body_len, &r->parse_cost, &jerr);
		if (!r->json && r->status < 300 && strcmp(step->method, "GET") == 0 &&
		    jerr.line == 0) /* not parsed: too costly (budget.h) */
			return kiln_fail(KILN_ETOOBIG, "%s %s: %s", step->method, step->path,
					 jerr.text);
		if (!r->json && r->status < 300 && strcmp(step->method, "GET") == 0)
			return kiln_fail(KILN_EPROTO, "%s %s: malformed JSON (line %d: %s)",
					 step->method, step->path, jerr.line, jerr.text);
		if (r->json && !json_is_object(r->json) && strcmp(step->method, "GET") == 0)
			return kiln_fail(KILN_EPROTO, "%s %s: response is not a JSON object",
					 step->method, step->path);
	} else if (r->status < 300 && strcmp(step->method, "GET") == 0) {
		return kiln_fail(KILN_EPROTO, "%s %s: empty response body", step->method,
				 step->path);
	}

	step_pop(op, step);
	int rc = 0;
	if (step->handler) {
		kiln_error_clear();
		rc = step->handler(op, r);
	}
	rf_step_free(step);
	return rc < 0 ? rc : 1;
}
