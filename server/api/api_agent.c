/* SPDX-License-Identifier: Apache-2.0 */
/* /api/v1/agent/...: reports (agent token), enrollment (fleet token), agent and enrollment tokens
 * and pending agents (admin); /api/v1/gpus and the agent part of a node's object (viewer). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sodium.h>

#include "api/handlers.h"
#include "metrics/counters.h"
#include "workload/work.h"
#include "agents/identity.h"
#include "agents/ingest.h"
#include "kiln/error.h"
#include "kiln/json.h"
#include "kiln/log.h"
#include "kiln/noderange.h"
#include "kiln/parse.h"
#include "daemon/ratelimit.h"

#define ENROLL_FIELD_MAX 255
#define PENDING_MAX 10000
#define TOKEN_NAME_MAX 64

/* --- authentication ------------------------------------------------------------------ */

unsigned api_agent_authenticate(struct api_ctx *c, const char *token, char *msg, size_t msglen)
{
	unsigned char hash[32];
	char who[48];
	int64_t id = 0, token_id = 0;
	int rc, stale = 0;

	secret_token_hash(hash, token);
	/* An agent token's use is recorded with its report, in the batch's transaction: a write
	 * of its own per report would contend with the ingest for SQLite's write lock. */
	if (c->route->role == ROLE_AGENT)
		rc = store_agent_token_find(c->st, &token_id, &id, &stale, hash);
	else
		rc = store_enroll_token_lookup(c->st, &id, hash);
	sodium_memzero(hash, sizeof(hash));
	if (rc == KILN_ENOTFOUND) {
		snprintf(msg, msglen, "unknown or revoked %s token",
			 c->route->role == ROLE_AGENT ? "agent" : "enrollment");
		return MHD_HTTP_UNAUTHORIZED;
	}
	if (rc < 0) {
		snprintf(msg, msglen, "token lookup failed: %s", kiln_error_last());
		return MHD_HTTP_INTERNAL_SERVER_ERROR;
	}
	if (c->route->role == ROLE_AGENT) {
		c->agent_node_id = id;
		c->agent_token_touch = stale ? token_id : 0;
		snprintf(who, sizeof(who), "agent:node%lld", (long long)id);
	} else {
		c->enroll_token_id = id;
		snprintf(who, sizeof(who), "enroll-token:%lld", (long long)id);
	}
	/* The audit actor and the request log name the caller. */
	c->caller.name = strdup(who);
	return 0;
}

/* --- reports ------------------------------------------------------------------------- */

/* A report waiting for the ingest writer's commit while its connection is suspended. */
struct report_wait {
	struct ingest_item item;
	struct ingest_report *report;
};

static void report_wait_free(void *arg)
{
	struct report_wait *w = arg;

	if (!w)
		return;
	ingest_report_free(w->report);
	free(w);
}

static void report_answer(struct api_ctx *c, const struct ingest_item *it,
			  const struct ingest_report *r)
{
	if (it->rc < 0) {
		/* a refused identity (409) names the field that differs */
		api_fail(c, api_status_of(it->rc), it->field[0] ? it->field : NULL, "%s",
			 it->error[0] ? it->error : kiln_error_name(it->rc));
		return;
	}
	/* whoever sent it learns which fields were refused (curl, a debugging admin) */
	api_reply(c, it->duplicate ? MHD_HTTP_OK : MHD_HTTP_CREATED,
		  json_pack("{s:s, s:s, s:O?}", "report_id", ingest_report_id(r), "status",
			    it->duplicate ? "duplicate" : "stored", "rejected_fields",
			    it->duplicate ? NULL : ingest_report_rejected(r)));
}

/* Runs on the connection's thread once the writer resumed it. */
static void report_resumed(struct api_ctx *c)
{
	struct report_wait *w = c->pending;

	report_answer(c, &w->item, w->report);
}

/* Under the writer's queue lock, before the writer can see the item. */
static void report_queued(void *arg)
{
	api_suspend(arg);
}

/* On the writer's thread, after the commit. */
static void report_committed(struct ingest_item *it, void *arg)
{
	(void)it;
	api_resume(arg);
}

void api_agent_report(struct api_ctx *c)
{
	struct report_wait *w;
	char field[INGEST_FIELD_MAX];
	int rc;

	if (!api_body_require(c))
		return;
	w = calloc(1, sizeof(*w));
	if (!w) {
		api_fail(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
		return;
	}
	/* The body is stored as it came: no dump of the parsed report. */
	rc = ingest_report_parse_text(&w->report, c->body, c->body_text, c->body_len, field,
				      sizeof(field));
	if (rc < 0) {
		metrics_ingest_count(METRICS_INGEST_INVALID);
		/* Noted on the node: an agent whose every report is refused is alive, and its
		 * node must not be taken for hung (and cycled) for its silence. */
		if (rc == KILN_EINVAL || rc == KILN_ETOOBIG) {
			char why[256];

			snprintf(why, sizeof(why), "%s", kiln_error_last());
			if (store_agent_refusal_note(c->st, c->agent_node_id, why) < 0)
				kiln_fail(rc, "%s", why);
		}
		api_fail_code(c, rc, field[0] ? field : NULL);
		if (c->agent_token_touch)
			store_agent_token_touch(c->st, c->agent_token_touch);
		report_wait_free(w);
		return;
	}
	w->item.node_id = c->agent_node_id;
	w->item.token_touch = c->agent_token_touch;
	w->item.report = w->report;
	/* What the waiting request holds, for the writer's byte cap: the body as received, its
	 * stored copy and the parsed tree: its arena, or when there is none an estimate
	 * (jansson's tree of a 4.7 KB report is ~32 KB in 649 allocations: about 8 bytes per
	 * body byte with malloc's overhead). */
	w->item.bytes = 2 * c->body_len + (c->body_tree_bytes ? c->body_tree_bytes
							       : 8 * c->body_len);
	/* Answered only once the report is committed (with everything queued meanwhile) by
	 * the ingest writer; the connection waits suspended, its thread serves others. */
	c->resumed = report_resumed;
	c->pending = w;
	c->pending_free = report_wait_free;
	rc = ingest_enqueue(&w->item, report_queued, report_committed, c);
	if (rc == 0)
		return;
	/* A full queue, or no writer (it stops before the server: kilnd is stopping): the
	 * agent keeps the report spooled and sends it again. */
	c->retry_after_s = 1;
	if (rc == KILN_EBUSY)
		api_fail_code(c, rc, NULL);
	else
		api_fail(c, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, "kilnd is stopping");
}

/* --- tokens -------------------------------------------------------------------------- */

/* The enrollment decision over a node's facts as they are now. */
static int enroll_judge(struct api_ctx *c, struct enroll_decision *out, int64_t node_id,
			const char *name, int by_serial, int64_t *out_job)
{
	struct enroll_facts f = { .node = name, .by_serial = by_serial };
	int rc;

	*out_job = 0;
	if (node_id && (rc = store_agent_enroll_facts(c->st, &f.has_token, &f.reinstall_running,
						      &f.reinstall_enrolled, node_id)) < 0)
		return rc;
	enroll_decide(out, &f);
	*out_job = f.reinstall_running;
	return 0;
}

/* What an enrollment decided outside the transaction, judged again inside it. */
struct enroll_recheck {
	struct enroll_decision *d;
	const char *name;
	int by_serial;
};

/* Inside the token's transaction: another enrollment may have just taken the node. KILN_EEXISTS
 * when the verdict changed (re->d is the new one); a reinstall's one enrollment is used. */
static int enroll_recheck(struct api_ctx *c, const struct enroll_recheck *re, int64_t node_id)
{
	enum enroll_verdict was = re->d->verdict;
	int64_t job = 0;
	int rc;

	if ((rc = enroll_judge(c, re->d, node_id, re->name, re->by_serial, &job)) < 0)
		return rc;
	if (re->d->verdict != was)
		return kiln_fail(KILN_EEXISTS, "%s", re->d->reason);
	return re->d->verdict == ENROLL_REINSTALL ? store_job_enroll_take(c->st, job) : 0;
}

/* Makes a new agent token for node_id in one transaction, revoking the node's older ones when
 * revoke says so (an admin's new token; an enrollment never revokes): *out_revoked says how
 * many were. A pending agent's row (pending_id > 0) goes with it; an enrollment's decision
 * (re, or NULL) is checked again inside. token receives the bare token. */
static int agent_token_issue(struct api_ctx *c, char token[64], int *out_revoked,
			     int64_t node_id, int64_t pending_id, int revoke,
			     const struct enroll_recheck *re)
{
	unsigned char hash[32];
	int64_t id = 0;
	int rc;

	if ((rc = secret_token_generate(token)) < 0)
		return rc;
	secret_token_hash(hash, token);
	if ((rc = store_begin(c->st)) < 0)
		goto cleanup;
	if ((re && (rc = enroll_recheck(c, re, node_id)) < 0) ||
	    (revoke && (rc = store_agent_token_revoke_node(c->st, node_id, out_revoked)) < 0) ||
	    (rc = store_agent_token_insert(c->st, &id, node_id, hash)) < 0 ||
	    (pending_id > 0 && (rc = store_pending_agent_delete(c->st, pending_id)) < 0) ||
	    (rc = store_commit(c->st)) < 0)
		store_rollback(c->st);
cleanup:
	sodium_memzero(hash, sizeof(hash));
	if (rc < 0)
		sodium_memzero(token, 64);
	return rc;
}

/* The body's "node": an existing node; answers 400/404 and returns NULL otherwise. */
static struct node *body_node(struct api_ctx *c, const char *const *keys)
{
	const char *name = NULL, *field = NULL;
	struct node *n = NULL;
	int rc;

	if (!api_body_require(c))
		return NULL;
	if (kiln_json_check_keys(c->body, keys, &field) < 0) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, field, "unknown field '%s'", field);
		return NULL;
	}
	if (kiln_json_get_string(&name, c->body, "node", true) < 0) {
		api_fail_code(c, KILN_EINVAL, "node");
		return NULL;
	}
	rc = store_node_get(c->st, &n, name);
	if (rc == KILN_ENOTFOUND)
		rc = kiln_fail(KILN_ENOTFOUND, "no node '%s'", name);
	if (rc < 0) {
		api_fail_code(c, rc, "node");
		return NULL;
	}
	return n;
}

void api_agent_token_create(struct api_ctx *c)
{
	static const char *const keys[] = { "node", NULL };
	struct node *n = body_node(c, keys);
	char token[64];
	int64_t audit_id;
	int revoked = 0, rc;

	if (!n)
		return;
	if (api_audit_begin(c, &audit_id, "agent.token", n->name, NULL) < 0)
		goto cleanup;
	rc = agent_token_issue(c, token, &revoked, n->id, 0, 1, NULL);
	api_audit_finish(c, audit_id, rc);
	if (rc < 0) {
		api_fail_code(c, rc, NULL);
		goto cleanup;
	}
	api_reply(c, MHD_HTTP_CREATED, json_pack("{s:s, s:s, s:i}", "node", n->name, "token", token,
						 "revoked", revoked));
	sodium_memzero(token, sizeof(token));
cleanup:
	node_free(n);
}

static int token_name_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > TOKEN_NAME_MAX)
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		      *s == '.' || *s == '_' || *s == '-' || *s == '@'))
			return 0;
	return 1;
}

void api_enroll_token_create(struct api_ctx *c)
{
	static const char *const keys[] = { "name", NULL };
	const char *name = NULL, *field = NULL;
	unsigned char hash[32];
	char token[64];
	int64_t id = 0, audit_id;
	int rc;

	if (c->body && kiln_json_check_keys(c->body, keys, &field) < 0) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, field, "unknown field '%s'", field);
		return;
	}
	if (c->body && (kiln_json_get_string(&name, c->body, "name", false) < 0 ||
			(name && !token_name_valid(name)))) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, "name",
			 "field 'name' must be 1 to %d characters of [A-Za-z0-9._@-]", TOKEN_NAME_MAX);
		return;
	}
	if ((rc = secret_token_generate(token)) < 0) {
		api_fail_code(c, rc, NULL);
		return;
	}
	secret_token_hash(hash, token);
	if (api_audit_begin(c, &audit_id, "agent.enroll-token.create", name ? name : "-", NULL) < 0)
		goto cleanup;
	rc = store_enroll_token_insert(c->st, &id, name, hash);
	api_audit_finish(c, audit_id, rc);
	if (rc < 0) {
		api_fail_code(c, rc, NULL);
		goto cleanup;
	}
	api_reply(c, MHD_HTTP_CREATED, json_pack("{s:I, s:s, s:s?}", "id", (json_int_t)id, "token",
						 token, "name", name));
cleanup:
	sodium_memzero(hash, sizeof(hash));
	sodium_memzero(token, sizeof(token));
}

void api_enroll_tokens_list(struct api_ctx *c)
{
	struct enroll_token *t = NULL;
	size_t n = 0;
	json_t *arr;
	int rc;

	if ((rc = store_enroll_token_list(c->st, &t, &n)) < 0) {
		api_fail_code(c, rc, NULL);
		return;
	}
	arr = json_array();
	for (size_t i = 0; arr && i < n; i++)
		json_array_append_new(arr, json_pack("{s:I, s:s?, s:I, s:I, s:b}", "id",
						     (json_int_t)t[i].id, "name", t[i].name,
						     "created_at", (json_int_t)t[i].created_at,
						     "last_used_at", (json_int_t)t[i].last_used_at,
						     "revoked", t[i].revoked));
	enroll_token_list_free(t, n);
	api_reply(c, MHD_HTTP_OK, arr);
}

/* The {id} path segment as a positive integer; answers 400 and returns 0 otherwise. */
static int64_t param_id(struct api_ctx *c)
{
	int64_t id;

	if (kiln_parse_int64(&id, c->param, 1, INT64_MAX) < 0) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, "id", "id must be a positive integer");
		return 0;
	}
	return id;
}

void api_enroll_token_revoke(struct api_ctx *c)
{
	int64_t id = param_id(c), audit_id;
	int rc;

	if (!id)
		return;
	if (api_audit_begin(c, &audit_id, "agent.enroll-token.revoke", c->param, NULL) < 0)
		return;
	rc = store_enroll_token_revoke(c->st, id);
	api_audit_finish(c, audit_id, rc);
	if (rc < 0) {
		api_fail_code(c, rc, "id");
		return;
	}
	api_reply(c, MHD_HTTP_OK, json_pack("{s:I, s:b}", "id", (json_int_t)id, "revoked", 1));
}

/* --- enrollment ---------------------------------------------------------------------- */

/* A node named after the host name, or after its first label ("gpu01.lab" -> "gpu01"). */
static int node_by_hostname(struct store *st, struct node **out, const char *hostname)
{
	char shortname[64];
	size_t n;
	int rc;

	if (!hostname || !*hostname)
		return KILN_ENOTFOUND;
	rc = store_node_get(st, out, hostname);
	if (rc != KILN_ENOTFOUND)
		return rc;
	n = strcspn(hostname, ".");
	if (hostname[n] != '.' || n == 0 || n >= sizeof(shortname))
		return KILN_ENOTFOUND;
	memcpy(shortname, hostname, n);
	shortname[n] = '\0';
	return store_node_get(st, out, shortname);
}

/* The name of the node a pending agent was accepted as (caller frees). */
static int pending_node_name(struct store *st, char **out, int64_t pending_id)
{
	struct pending_agent *p = NULL;
	size_t n = 0;
	int rc;

	if ((rc = store_pending_agent_list(st, &p, &n)) < 0)
		return rc;
	rc = KILN_ENOTFOUND;
	for (size_t i = 0; i < n; i++)
		if (p[i].id == pending_id && p[i].node) {
			*out = strdup(p[i].node);
			rc = *out ? 0 : kiln_fail(KILN_ERROR, "out of memory");
		}
	pending_agent_list_free(p, n);
	return rc;
}

static double monotonic_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The client's address as text, the rate limit's key ("?" when unknown). */
static void client_address(char *buf, size_t len, struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = ci ? ci->client_addr : NULL;

	snprintf(buf, len, "?");
	if (sa && sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, buf,
			  (socklen_t)len);
	else if (sa && sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, buf,
			  (socklen_t)len);
}

/*
 * The node an enrollment resembles: the only node whose BMC vouches for this host (its
 * system UUID, else its DMI serial as the BMC's serial, SKU or chassis serial:
 * identity_bmc_vouch), else the node named after its host name or the name's first label.
 * *out_id stays 0 when none; *out_name is the caller's to free.
 */
static int enroll_match(struct store *st, int64_t *out_id, char **out_name, int *out_by_serial,
			const char *serial, const char *uuid, const char *hostname)
{
	struct node *n = NULL;
	char forms[3][37];
	const char *uuids[3] = { NULL, NULL, NULL };
	int rc = KILN_ENOTFOUND;

	*out_id = 0;
	*out_name = NULL;
	*out_by_serial = 0;
	if (identity_uuid_forms(forms, uuid) == 0)
		for (int i = 0; i < 3; i++)
			uuids[i] = forms[i];
	if (uuids[0] || identity_serial_useful(serial)) {
		rc = store_node_find_by_bmc(st, out_id, out_name, uuids,
					    identity_serial_useful(serial) ? serial : NULL);
		if (rc == 0) {
			*out_by_serial = 1;
			return 0;
		}
		if (rc != KILN_ENOTFOUND && rc != KILN_EEXISTS)
			return rc;
		kiln_error_clear();
	}
	rc = node_by_hostname(st, &n, hostname);
	if (rc == KILN_ENOTFOUND)
		return 0;
	if (rc < 0)
		return rc;
	*out_id = n->id;
	*out_name = strdup(n->name);
	node_free(n);
	return *out_name ? 0 : kiln_fail(KILN_ERROR, "out of memory");
}

void api_agent_enroll(struct api_ctx *c)
{
	static const char *const keys[] = { "schema", "dmi_serial", "hostname", "machine_id",
					    "dmi_uuid", NULL };
	static const char *const fields[] = { "dmi_serial", "hostname", "machine_id", "schema",
					      "dmi_uuid" };
	const char *val[5] = { NULL, NULL, NULL, NULL, NULL }, *field = NULL, *how = NULL;
	struct enroll_decision d;
	char *name = NULL, token[64] = "", addr[64];
	int64_t node_id = 0, pending_id = 0, accepted_id = 0, job, audit_id;
	int by_serial = 0, revoked = 0, rc;
	unsigned wait;

	/* Per address, before anything is read or written: a flood of enrollments fills
	 * neither the pending list nor the write lock. */
	client_address(addr, sizeof(addr), c->conn);
	if ((wait = ratelimit_take(c->enroll_limit, addr, monotonic_s())) > 0) {
		c->retry_after_s = wait;
		api_fail(c, MHD_HTTP_TOO_MANY_REQUESTS, NULL,
			 "too many enrollments from %s; try again in %u s", addr, wait);
		return;
	}
	if (!api_body_require(c))
		return;
	if (kiln_json_check_keys(c->body, keys, &field) < 0) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, field, "unknown field '%s'", field);
		return;
	}
	for (size_t i = 0; i < 5; i++) {
		/* a field the host could not read may come as null: absent (docs/agent-protocol) */
		if (json_is_null(json_object_get(c->body, fields[i])))
			continue;
		if (kiln_json_get_string(&val[i], c->body, fields[i], false) < 0) {
			api_fail_code(c, KILN_EINVAL, fields[i]);
			return;
		}
		if (val[i] && strlen(val[i]) > ENROLL_FIELD_MAX) {
			api_fail(c, MHD_HTTP_BAD_REQUEST, fields[i],
				 "field '%s' is longer than %d bytes", fields[i], ENROLL_FIELD_MAX);
			return;
		}
	}
	if (!identity_serial_useful(val[0]) && !(val[1] && *val[1])) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, "hostname",
			 "an enrollment needs a 'dmi_serial' or a 'hostname'");
		return;
	}
	if ((rc = enroll_match(c->st, &node_id, &name, &by_serial, val[0], val[4], val[1])) < 0 ||
	    (rc = enroll_judge(c, &d, node_id, name, by_serial, &job)) < 0)
		goto fail;
	if (d.verdict != ENROLL_PENDING) {
		struct enroll_recheck re = { &d, name, by_serial };

		how = d.verdict == ENROLL_REINSTALL ? "reinstall" : "serial";
		if (api_audit_begin(c, &audit_id, "agent.enroll", name,
				    json_pack("{s:s, s:s?, s:s?}", "matched_by", how, "dmi_serial",
					      val[0], "hostname", val[1])) < 0)
			goto cleanup;
		rc = agent_token_issue(c, token, &revoked, node_id, 0, 0, &re);
		api_audit_finish(c, audit_id, rc);
		if (rc == 0) {
			/* it may have waited before its BMC's serial was known */
			if (store_pending_agent_forget(c->st, val[0], val[1], val[2]) < 0)
				log_warn("api: forgetting %s's pending enrollment: %s", name,
					 kiln_error_last());
			goto issued;
		}
		if (rc != KILN_EEXISTS || d.verdict != ENROLL_PENDING)
			goto fail;
	}
	/* An admin decides; one who already accepted this agent as a node lets it in now. */
	rc = store_pending_agent_record(c->st, &pending_id, &accepted_id, val[0], val[1], val[2],
					c->enroll_token_id, node_id, d.reason, PENDING_MAX);
	if (rc < 0)
		goto fail;
	if (accepted_id == 0) {
		api_reply(c, MHD_HTTP_ACCEPTED,
			  json_pack("{s:s, s:I, s:s?, s:s}", "status", "pending", "id",
				    (json_int_t)pending_id, "node", name, "message", d.reason));
		goto cleanup;
	}
	free(name);
	name = NULL;
	how = "accepted";
	if ((rc = pending_node_name(c->st, &name, pending_id)) < 0)
		goto fail;
	if (api_audit_begin(c, &audit_id, "agent.enroll", name,
			    json_pack("{s:s, s:s?, s:s?}", "matched_by", how, "dmi_serial", val[0],
				      "hostname", val[1])) < 0)
		goto cleanup;
	rc = agent_token_issue(c, token, &revoked, accepted_id, pending_id, 0, NULL);
	api_audit_finish(c, audit_id, rc);
	if (rc < 0)
		goto fail;
issued:
	api_reply(c, MHD_HTTP_CREATED, json_pack("{s:s, s:s, s:s}", "node", name, "token", token,
						 "matched_by", how));
	goto cleanup;
fail:
	api_fail_code(c, rc, NULL);
cleanup:
	sodium_memzero(token, sizeof(token));
	free(name);
}

/* --- pending agents ------------------------------------------------------------------ */

void api_agent_pending_list(struct api_ctx *c)
{
	struct pending_agent *p = NULL;
	size_t n = 0;
	json_t *arr;
	int rc;

	if ((rc = store_pending_agent_list(c->st, &p, &n)) < 0) {
		api_fail_code(c, rc, NULL);
		return;
	}
	arr = json_array();
	for (size_t i = 0; arr && i < n; i++)
		json_array_append_new(arr, json_pack("{s:I, s:s, s:s, s:s, s:I, s:I, s:I, s:s?, s:s,"
						     " s:s?, s:s?}",
						     "id", (json_int_t)p[i].id, "dmi_serial",
						     p[i].dmi_serial, "hostname", p[i].hostname,
						     "machine_id", p[i].machine_id, "first_seen",
						     (json_int_t)p[i].first_seen, "last_seen",
						     (json_int_t)p[i].last_seen, "attempts",
						     (json_int_t)p[i].attempts, "node", p[i].node,
						     "status", p[i].node_id ? "accepted" : "pending",
						     "candidate", p[i].candidate, "reason",
						     p[i].reason));
	pending_agent_list_free(p, n);
	api_reply(c, MHD_HTTP_OK, arr);
}

void api_agent_pending_accept(struct api_ctx *c)
{
	static const char *const keys[] = { "node", NULL };
	int64_t id = param_id(c), audit_id;
	struct node *n;
	int rc;

	if (!id)
		return;
	n = body_node(c, keys);
	if (!n)
		return;
	if (api_audit_begin(c, &audit_id, "agent.accept", n->name,
			    json_pack("{s:I}", "pending_id", (json_int_t)id)) < 0)
		goto cleanup;
	/* The admin says this agent is the node: its first report's host identity binds (the
	 * identity check would refuse a new machine id or host name otherwise). */
	if ((rc = store_begin(c->st)) == 0) {
		if ((rc = store_pending_agent_accept(c->st, id, n->id)) < 0 ||
		    (rc = store_agent_identity_accept(c->st, n->id, c->caller.name ? c->caller.name
										  : "?")) < 0 ||
		    (rc = store_commit(c->st)) < 0)
			store_rollback(c->st);
	}
	api_audit_finish(c, audit_id, rc);
	if (rc < 0) {
		api_fail_code(c, rc, "id");
		goto cleanup;
	}
	api_reply(c, MHD_HTTP_OK, json_pack("{s:I, s:s, s:s}", "id", (json_int_t)id, "node", n->name,
					    "status", "accepted"));
cleanup:
	node_free(n);
}

void api_agent_pending_delete(struct api_ctx *c)
{
	int64_t id = param_id(c), audit_id;
	int rc;

	if (!id)
		return;
	if (api_audit_begin(c, &audit_id, "agent.pending.delete", c->param, NULL) < 0)
		return;
	rc = store_pending_agent_delete(c->st, id);
	api_audit_finish(c, audit_id, rc);
	if (rc < 0) {
		api_fail_code(c, rc, "id");
		return;
	}
	api_reply(c, MHD_HTTP_OK, json_pack("{s:I, s:b}", "id", (json_int_t)id, "deleted", 1));
}

/* --- agent identities --------------------------------------------------------------- */

void api_agent_identity_list(struct api_ctx *c)
{
	struct agent_identity *a = NULL;
	size_t n = 0;
	json_t *arr;
	int rc;

	if ((rc = store_agent_identity_list(c->st, &a, &n)) < 0) {
		api_fail_code(c, rc, NULL);
		return;
	}
	arr = json_array();
	for (size_t i = 0; arr && i < n; i++)
		json_array_append_new(arr, json_pack("{s:s, s:s?, s:s?, s:I, s:I, s:I, s:s?, s:I,"
						     " s:b, s:s?, s:I}",
						     "node", a[i].node, "mismatch", a[i].mismatch,
						     "field", a[i].mismatch_field, "since",
						     (json_int_t)a[i].mismatch_since, "last",
						     (json_int_t)a[i].mismatch_last, "refused",
						     (json_int_t)a[i].refused, "reports_with_token_of",
						     a[i].elsewhere_node, "reports_elsewhere_last",
						     (json_int_t)a[i].elsewhere_last, "accept_next",
						     a[i].accept_next, "accepted_by", a[i].accepted_by,
						     "accepted_at", (json_int_t)a[i].accepted_at));
	agent_identity_list_free(a, n);
	api_reply(c, MHD_HTTP_OK, arr);
}

void api_agent_identity_accept(struct api_ctx *c)
{
	static const char *const keys[] = { "node", NULL };
	struct node *n = body_node(c, keys);
	int64_t audit_id;
	int rc;

	if (!n)
		return;
	if (api_audit_begin(c, &audit_id, "agent.accept-identity", n->name, NULL) < 0)
		goto cleanup;
	rc = store_agent_identity_accept(c->st, n->id, c->caller.name ? c->caller.name : "?");
	api_audit_finish(c, audit_id, rc);
	if (rc < 0) {
		api_fail_code(c, rc, "node");
		goto cleanup;
	}
	api_reply(c, MHD_HTTP_OK, json_pack("{s:s, s:s}", "node", n->name, "status",
					    "the next report's identity is taken"));
cleanup:
	node_free(n);
}

/* --- fleet views --------------------------------------------------------------------- */

static json_t *str_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
}

/* The GPU objects of the node's latest report (the report a's GPU rows come from), and in
 * *rejected the fields ingest refused of it (an array, empty when none); NULL with
 * kiln_fail() set. */
static json_t *agent_gpus_json(json_t **rejected, struct store *st, const struct agent_state *a)
{
	char *text = NULL;
	json_t *report, *gpus, *rej;

	if (!a->report && store_agent_report_get(st, &text, a->node_id) < 0)
		return NULL;
	report = json_loads(a->report ? a->report : text, 0, NULL);
	free(text);
	gpus = json_object_get(report, "gpus");
	gpus = json_is_array(gpus) ? json_incref(gpus) : json_array();
	rej = json_object_get(report, "rejected_fields");
	*rejected = json_is_array(rej) ? json_incref(rej) : json_array();
	json_decref(report);
	if (!gpus || !*rejected) {
		json_decref(gpus);
		json_decref(*rejected);
		kiln_fail(KILN_ERROR, "out of memory");
		return NULL;
	}
	return gpus;
}

/* The GPU processes of the node's latest report as work (work_json): the ignored ones left
 * out, "report_fresh" false when they no longer count. Slurm is asked by the guard only. */
static json_t *agent_work_json(struct store *st, const struct agent_state *a)
{
	struct node_work w;
	char *text = NULL, *procs;
	json_t *report, *o;

	if (!a->report && store_agent_report_get(st, &text, a->node_id) < 0) {
		kiln_error_clear();
		return json_null();
	}
	report = json_loads(a->report ? a->report : text, 0, NULL);
	free(text);
	procs = work_procs_extract(report);
	json_decref(report);
	work_from_summary(&w, procs, store_now(st) - a->last_seen);
	free(procs);
	o = work_json(&w);
	return o ? o : json_null();
}

/* A node's agent state and GPUs as JSON (no "node" key); NULL with kiln_fail() set. */
static json_t *agent_json(struct store *st, const struct agent_state *a)
{
	json_t *o = NULL, *gpus, *rejected = NULL;
	int64_t now = store_now(st);

	if (!(gpus = agent_gpus_json(&rejected, st, a)))
		return NULL;
	o = json_pack("{s:s?, s:I, s:I, s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o,"
		      " s:o, s:o, s:I, s:I, s:o, s:o}",
		      "report_id", a->report_id, "last_seen", (json_int_t)a->last_seen, "age_s",
		      (json_int_t)(now - a->last_seen), "report_time", (json_int_t)a->report_time,
		      "nvidia_status", str_or_null(a->nvidia_status), "driver_version",
		      str_or_null(a->driver_version), "kernel_module_version",
		      str_or_null(a->kernel_module_version), "cuda_driver_version",
		      str_or_null(a->cuda_driver_version), "nvml_version", str_or_null(a->nvml_version),
		      "hostname", str_or_null(a->hostname), "boot_id", str_or_null(a->boot_id), "os",
		      str_or_null(a->os), "kernel", str_or_null(a->kernel), "dmi_serial",
		      str_or_null(a->dmi_serial), "machine_id", str_or_null(a->machine_id),
		      "agent_version", str_or_null(a->agent_version), "gpu_count",
		      (json_int_t)a->gpu_count, "gpu_count_max", (json_int_t)a->gpu_count_max, "gpus",
		      gpus, "rejected_fields", rejected);
	if (!o)
		kiln_fail(KILN_ERROR, "out of memory");
	return o;
}

/* How the agent is bound to its node: what of the BMC's vouched for its host, what the BMC
 * states (null where it states nothing, or where several nodes share the value), and a
 * refusal pending. */
static int identity_attach(struct store *st, json_t *agent, int64_t node_id)
{
	struct agent_identity f = { 0 };
	json_t *o;
	int rc = store_agent_identity_get(st, &f, node_id);

	if (rc < 0)
		return rc;
	o = json_pack("{s:o, s:{s:o, s:o, s:o, s:o}, s:o, s:o}", "bound_by", str_or_null(f.bound_by),
		      "bmc", "uuid", str_or_null(f.bmc_uuid), "serial", str_or_null(f.bmc_serial),
		      "sku", str_or_null(f.bmc_sku), "chassis_serial",
		      str_or_null(f.bmc_chassis_serial), "refused", str_or_null(f.mismatch),
		      "accepted_by", str_or_null(f.accepted_by));
	agent_identity_clear(&f);
	if (!o)
		return kiln_fail(KILN_ERROR, "out of memory");
	return json_object_set_new(agent, "identity", o) < 0 ? KILN_ERROR : 0;
}

int api_agent_state_attach(struct api_ctx *c, json_t *node_obj, int64_t node_id)
{
	struct agent_state a = { 0 };
	json_t *o;
	int rc;

	if (!node_obj)
		return 0;
	rc = store_agent_state_get(c->st, &a, node_id, 1);
	if (rc == KILN_ENOTFOUND) {
		kiln_error_clear();
		return json_object_set_new(node_obj, "agent", json_null()) < 0 ? KILN_ERROR : 0;
	}
	if (rc < 0)
		return rc;
	o = agent_json(c->st, &a);
	agent_state_clear(&a);
	if (!o)
		return KILN_ERROR;
	if ((rc = identity_attach(c->st, o, node_id)) < 0) {
		json_decref(o);
		return rc;
	}
	return json_object_set_new(node_obj, "agent", o) < 0 ? KILN_ERROR : 0;
}

static int cmp_state(const void *key, const void *elem)
{
	return strcmp(key, ((const struct agent_state *)elem)->node);
}

void api_gpus_list(struct api_ctx *c)
{
	const char *range = api_query(c, "range");
	struct kiln_nodelist want = { 0 };
	struct agent_state *states = NULL;
	size_t ns = 0;
	json_t *arr = NULL;
	int rc;

	if (api_range_expand(c, &want, range && *range ? range : "all", 0) < 0)
		return;
	if ((rc = store_agent_state_list(c->st, &states, &ns)) < 0) {
		api_fail_code(c, rc, NULL);
		goto cleanup;
	}
	arr = json_array();
	if (!arr) {
		api_fail(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
		goto cleanup;
	}
	/* One object per node of the range, in the range's order (states are sorted by name). */
	for (size_t i = 0; i < want.count; i++) {
		/* no agent reported yet: states is NULL, which bsearch must not be given */
		const struct agent_state *a = ns == 0 ? NULL : bsearch(want.names[i], states, ns,
								       sizeof(*states), cmp_state);
		json_t *o;

		if (a) {
			o = agent_json(c->st, a);
			if (!o) {
				api_fail_code(c, KILN_ERROR, NULL);
				goto cleanup;
			}
			json_object_set_new(o, "node", json_string(a->node));
			json_object_set_new(o, "work", agent_work_json(c->st, a));
		} else {
			struct node *n = NULL;

			rc = store_node_get(c->st, &n, want.names[i]);
			node_free(n);
			if (rc < 0 && rc != KILN_ENOTFOUND) {
				api_fail_code(c, rc, NULL);
				goto cleanup;
			}
			o = json_pack("{s:s, s:s}", "node", want.names[i], "error",
				      rc == 0 ? "no agent report yet" : "no such node");
		}
		json_array_append_new(arr, o);
	}
	api_reply(c, MHD_HTTP_OK, arr);
	arr = NULL;
cleanup:
	json_decref(arr);
	agent_state_list_free(states, ns);
	kiln_nodelist_free(&want);
}
