/* SPDX-License-Identifier: Apache-2.0 */
/* Redfish authentication and reply handling: one lazy session per BMC, kept across restarts
 * (the keeper), re-login once on 401, Basic where there are no sessions, where the BMC's
 * session limit is reached and as the one retry of a refused login; two rejections mark the
 * credentials; transient retries. */
#include <stdlib.h>
#include <string.h>

#include "bmc/redfish/budget.h"
#include "bmc/redfish/internal.h"
#include "kiln/error.h"
#include "kiln/json.h"

#define RF_RETRY_MAX 4
#define RF_BACKOFF_MS 500
#define RF_BACKOFF_MAX_MS 10000
/* After a login answered 503 (the session limit: iDRAC keeps a leaked session 30 min),
 * Basic for this long before a session is tried again. */
#define RF_BASIC_CAP_MS (10 * 60 * 1000)
#define RF_SESSION_MEMBERS_MAX 32

void rf_session_forget(struct redfish_bmc *b)
{
	if (!b)
		return;
	if (b->token)
		explicit_bzero(b->token, strlen(b->token));
	free(b->token);
	free(b->session_uri);
	free(b->session_candidate);
	b->token = NULL;
	b->session_uri = NULL;
	b->session_candidate = NULL;
	b->logout_sent = 0;
}

/* 1 while b is reached with Basic although it has a SessionService. */
static int basic_instead(struct redfish_bmc *b)
{
	if (b->basic_why == RF_BASIC_CAP && rf_now_ms() >= b->basic_until_ms)
		b->basic_why = RF_BASIC_NONE; /* its leaked sessions may have expired by now */
	return b->basic_why != RF_BASIC_NONE;
}

/* node add's check (a probe) tries Basic first: a session of its own would be one more the
 * BMC sees created (the node's poller opens the one it keeps), and a BMC that takes Basic
 * sees no login at all. A refused Basic is followed by one session login (the one retry),
 * for a BMC that takes sessions only. */
static int probe_basic(const struct rf_op *op)
{
	return op->op.probe && op->bmc->auth_failures == 0;
}

int rf_step_needs_login(struct rf_op *op, const struct rf_step *step)
{
	struct redfish_bmc *b = op->bmc;
	return !(step->flags & (RF_NOAUTH | RF_LOGIN)) && !b->token && !b->basic_only &&
	       b->sessions && b->user && !basic_instead(b) && !probe_basic(op);
}

static const struct bmc_session_keeper *keeper_of(const struct rf_op *op)
{
	return op->rf ? op->rf->cfg.keeper : NULL;
}

static void keeper_save(struct rf_op *op, const char *auth)
{
	const struct bmc_session_keeper *k = keeper_of(op);
	struct redfish_bmc *b = op->bmc;
	if (k && k->save)
		k->save(k->ud, b->node_id, b->name, b->cred_version, b->token, b->session_uri,
			auth);
}

/* The keeper forgets b's session (logged out, or found dead). */
static void keeper_drop(struct rf_op *op)
{
	const struct bmc_session_keeper *k = keeper_of(op);
	if (k && k->drop)
		k->drop(k->ud, op->bmc->node_id, op->bmc->session_uri);
}

int rf_session_recall(struct rf_op *op)
{
	const struct bmc_session_keeper *k = keeper_of(op);
	struct redfish_bmc *b = op->bmc;
	char *token = NULL, *uri = NULL;

	if (b->recalled || !k || !k->load)
		return 0;
	b->recalled = 1;
	if (k->load(k->ud, b->node_id, b->name, b->cred_version, &token, &uri) < 0 || !token) {
		free(uri);
		return 0;
	}
	rf_session_forget(b);
	b->token = token;
	b->session_uri = uri;
	/* One GET says whether the BMC still knows it: the session itself, or where its URI
	 * was never found, the collection (any authenticated GET would do). */
	rf_push(op, "GET", uri ? uri : b->sessions, NULL,
		RF_SESSION_CHECK | RF_ALLOW_ERROR | RF_NO_RETRY, NULL);
	return 1;
}

void rf_push_login(struct rf_op *op)
{
	const struct redfish_bmc *b = op->bmc;
	char *password = NULL, *text = NULL;
	json_t *body = NULL;

	/* the password exists in clear only while this body is built and sent */
	if (secret_unseal(&password, &b->password) == 0)
		body = json_pack("{s:s, s:s}", "UserName", b->user, "Password",
				 password ? password : "");
	secret_free_string(password);
	text = body ? json_dumps(body, JSON_COMPACT) : NULL;
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
	__atomic_store_n(&b->rejected, 1, __ATOMIC_RELAXED);
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

/* A Location-less login (an iLO emulator): the session is the member of the Sessions
 * collection that says it is ours (iLO's Oem.Hpe.MySession), else the last one of our user. */
static int oem_my_session(const json_t *session)
{
	const char *vendor;
	json_t *v;
	json_object_foreach(json_object_get(session, "Oem"), vendor, v)
		if (json_is_true(json_object_get(v, "MySession")))
			return 1;
	return 0;
}

static int session_member(struct rf_op *op, const struct rf_reply *r)
{
	struct redfish_bmc *b = op->bmc;
	const char *id = json_string_value(json_object_get(r->json, "@odata.id"));
	const char *user = json_string_value(json_object_get(r->json, "UserName"));
	if (r->status >= 300 || !id || b->session_uri)
		return 0;
	if (oem_my_session(r->json)) {
		b->session_uri = strdup(id);
	} else if (user && b->user && strcmp(user, b->user) == 0) {
		free(b->session_candidate);
		b->session_candidate = strdup(id);
	}
	return 0;
}

static int session_found(struct rf_op *op)
{
	struct redfish_bmc *b = op->bmc;
	if (!b->session_uri && b->session_candidate) {
		b->session_uri = b->session_candidate;
		b->session_candidate = NULL;
	}
	if (b->session_uri)
		keeper_save(op, NULL);
	return 0;
}

static int sessions_listed(struct rf_op *op, const struct rf_reply *r)
{
	json_t *members = json_object_get(r->json, "Members"), *m;
	size_t i;
	if (r->status >= 300 || !json_is_array(members))
		return 0; /* not found: the session ends when the BMC times it out */
	if (json_array_size(members) == 1) {
		const char *id = rf_link(json_array_get(members, 0), "@odata.id");
		if (id && !op->bmc->session_uri)
			op->bmc->session_uri = strdup(id);
		return session_found(op);
	}
	json_array_foreach(members, i, m) {
		const char *id = rf_link(m, "@odata.id");
		if (i >= RF_SESSION_MEMBERS_MAX)
			break;
		if (id)
			rf_push(op, "GET", id, NULL, RF_ALLOW_ERROR | RF_NO_RETRY, session_member);
	}
	rf_push_call(op, session_found);
	return 0;
}

/* The session resource a login created: Location, or the answer's @odata.id; without
 * either it is looked for in the Sessions collection (it must be deleted at shutdown). */
static void login_took(struct rf_op *op, const struct rf_reply *r)
{
	struct redfish_bmc *b = op->bmc;
	const char *uri = r->location;
	json_t *body = NULL;

	rf_session_forget(b);
	b->token = strdup(r->token);
	if (!uri && r->body_len) {
		body = json_loadb(r->body, r->body_len, 0, NULL);
		uri = json_string_value(json_object_get(body, "@odata.id"));
	}
	b->session_uri = uri ? strdup(uri) : NULL;
	json_decref(body);
	b->auth_failures = 0;
	b->basic_why = RF_BASIC_NONE;
	b->sessions_created++;
	if (b->session_uri)
		keeper_save(op, NULL);
	else
		rf_push(op, "GET", b->sessions, NULL, RF_ALLOW_ERROR | RF_NO_RETRY,
			sessions_listed);
}

/* The session POST was refused: Basic instead, the login's status saying why. */
static int login_basic(struct rf_op *op, struct rf_step *step, int why)
{
	struct redfish_bmc *b = op->bmc;
	b->basic_why = why;
	b->basic_until_ms = rf_now_ms() + RF_BASIC_CAP_MS;
	step_pop(op, step);
	rf_step_free(step);
	keeper_save(op, why == RF_BASIC_CAP ? "basic (BMC session limit)"
					    : "basic (session login refused)");
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
		login_took(op, r);
		return 1;
	}
	if (r->status == 401 || r->status == 403) {
		/* Some BMCs refuse the session POST but take the same credentials with Basic
		 * (which every Redfish service must accept): that is the one retry, so a BMC
		 * sees at most two failed logins before the credentials are marked. */
		if (b->auth_failures == 0) {
			b->auth_failures = 1;
			return login_basic(op, step, RF_BASIC_REFUSED);
		}
		int rc = credentials_rejected(op, "POST", b->sessions, r);
		return rc < 0 ? rc : 0;
	}
	if (r->status == 503)
		return login_basic(op, step, RF_BASIC_CAP); /* its session limit (RAC0218) */
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

/* The answer to the GET that checks a kept session, or to the DELETE of an unusable one. */
static int session_check_reply(struct rf_op *op, struct rf_step *step, struct rf_reply *r)
{
	struct redfish_bmc *b = op->bmc;

	if (strcmp(step->method, "DELETE") == 0 || r->status == 401 || r->status == 403 ||
	    r->status == 404) {
		/* deleted, or the BMC no longer knows it: a new login replaces it */
		step_pop(op, step);
		rf_step_free(step);
		keeper_drop(op);
		rf_session_forget(b);
		return 1;
	}
	if (r->status == 0 || r->status == 503 || r->status == 429)
		return rf_fail_reply(step->method, step->path, r); /* kept for the next try */
	if (r->status >= 300) {
		/* it answers, but not as a session we can use: deleted, then a new login */
		step_pop(op, step);
		rf_step_free(step);
		if (b->session_uri) {
			rf_push(op, "DELETE", b->session_uri, NULL,
				RF_SESSION_CHECK | RF_ALLOW_ERROR | RF_NO_RETRY, NULL);
		} else {
			keeper_drop(op);
			rf_session_forget(b);
		}
		return 1;
	}
	step_pop(op, step);
	rf_step_free(step);
	b->auth_failures = 0;
	return 1;
}

int rf_reply_process(struct rf_op *op, struct rf_step *step, struct rf_reply *r)
{
	struct redfish_bmc *b = op->bmc;

	if (step->flags & RF_LOGIN)
		return login_reply(op, step, r);
	if (step->flags & RF_SESSION_CHECK)
		return session_check_reply(op, step, r);
	if (op->logout) { /* whatever the answer (an expired session: 401), we are done */
		step_pop(op, step);
		rf_step_free(step);
		keeper_drop(op);
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
