/* SPDX-License-Identifier: Apache-2.0 */
/* The web dashboard's side of the API: its page and assets (embedded in kilnd), log-in with an
 * API token exchanged for a server-side session cookie, the session's CSRF check, log-out. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "api/handlers.h"
#include "api/api_ui.h"
#include "kiln/error.h"
#include "kiln/json.h"
#include "kiln/parse.h"

#define TOKEN_MAX 200

/* Scripts, styles, images and requests only from kilnd itself; no inline script, no frame. */
#define UI_CSP                                                                                     \
	"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "         \
	"connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; "             \
	"frame-ancestors 'none'"

static const char *content_type(const char *name)
{
	const char *dot = strrchr(name, '.');

	if (!dot)
		return "application/octet-stream";
	if (strcmp(dot, ".html") == 0)
		return "text/html; charset=utf-8";
	if (strcmp(dot, ".js") == 0)
		return "text/javascript; charset=utf-8";
	if (strcmp(dot, ".css") == 0)
		return "text/css; charset=utf-8";
	return "application/octet-stream";
}

/* The headers every dashboard answer carries, the page's and the API's it calls alike. */
static void ui_headers(struct MHD_Response *resp)
{
	MHD_add_response_header(resp, "Content-Security-Policy", UI_CSP);
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
	MHD_add_response_header(resp, "X-Frame-Options", "DENY");
}

static void asset_reply(struct api_ctx *c, const char *name)
{
	struct MHD_Response *resp;

	for (unsigned i = 0; i < api_ui_assets_count; i++) {
		const struct api_ui_asset *a = &api_ui_assets[i];

		if (strcmp(a->name, name) != 0)
			continue;
		resp = MHD_create_response_from_buffer(a->len, (void *)(uintptr_t)a->data,
						       MHD_RESPMEM_PERSISTENT);
		if (!resp) {
			api_fail(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
			return;
		}
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type(name));
		/* The assets change with kilnd: revalidate rather than keep an old page. */
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
		ui_headers(resp);
		c->status = MHD_HTTP_OK;
		c->response = resp;
		return;
	}
	api_fail(c, MHD_HTTP_NOT_FOUND, NULL, "no such dashboard file");
}

void api_ui_index_get(struct api_ctx *c)
{
	asset_reply(c, "index.html");
}

void api_ui_asset_get(struct api_ctx *c)
{
	asset_reply(c, c->param);
}

/* A JSON answer of the handler's own, with a Set-Cookie header when cookie is not NULL. */
static void json_cookie_reply(struct api_ctx *c, unsigned status, json_t *body,
			      const char *cookie)
{
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	struct MHD_Response *resp;

	json_decref(body);
	if (!text) {
		api_fail(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
		return;
	}
	resp = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(text);
		api_fail(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
		return;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	if (cookie)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_SET_COOKIE, cookie);
	c->status = status;
	c->response = resp;
}

/* The connection came over TLS: the cookie is then marked Secure. */
static int conn_tls(struct api_ctx *c)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c->conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);

	return ci && ci->tls_session;
}

static void cookie_text(char *out, size_t outlen, struct api_ctx *c, const char *value,
			long max_age)
{
	snprintf(out, outlen, "%s=%s; Path=/; Max-Age=%ld; HttpOnly; SameSite=Strict%s",
		 API_UI_COOKIE, value, max_age, conn_tls(c) ? "; Secure" : "");
}

/* The last second a refused log-in was written: anyone can try to log in, and a flood of
 * tries must not flood the audit log (one row a second says enough). */
static _Atomic int64_t refused_logged_at;

static void login_audit(struct api_ctx *c, const char *actor, const char *target,
			const char *detail, const char *outcome)
{
	int64_t id, now = time(NULL);

	if (strncmp(outcome, "refused", 7) == 0 && atomic_exchange(&refused_logged_at, now) == now)
		return;

	if (store_audit_begin(c->st, &id, actor, "session.login", target, detail) < 0 ||
	    store_audit_finish(c->st, id, outcome) < 0)
		kiln_error_clear(); /* the answer goes out either way; the log line is api.c's */
}

void api_ui_login(struct api_ctx *c)
{
	static const char *const keys[] = { "token", NULL };
	const char *ctype, *token = NULL, *field = NULL;
	unsigned char hash[32], sid_raw[32], csrf_raw[16];
	char sid[65], csrf[33], cookie[256], target[48], detail[64];
	struct api_token t = { 0 };
	int64_t id = 0, expires = time(NULL) + API_UI_SESSION_S;
	int rc;

	/* A form of another site can post text/plain, never application/json without a
	 * preflight kilnd does not answer: no log-in forced on a browser from elsewhere. */
	ctype = MHD_lookup_connection_value(c->conn, MHD_HEADER_KIND,
					    MHD_HTTP_HEADER_CONTENT_TYPE);
	if (!ctype || strncmp(ctype, "application/json", 16) != 0) {
		api_fail(c, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, NULL,
			 "log-in takes Content-Type: application/json");
		return;
	}
	if (!api_body_require(c))
		return;
	if (kiln_json_check_keys(c->body, keys, &field) < 0) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, field, "unknown field '%s'", field);
		return;
	}
	if (kiln_json_get_string(&token, c->body, "token", true) < 0 || !token[0] ||
	    strlen(token) > TOKEN_MAX) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, "token", "field 'token' must be an API token");
		return;
	}
	secret_token_hash(hash, token);
	rc = store_token_lookup(c->st, &t, hash);
	sodium_memzero(hash, sizeof(hash));
	if (rc == KILN_ENOTFOUND) {
		login_audit(c, "?", "dashboard", NULL, "refused: unknown or revoked token");
		api_fail(c, MHD_HTTP_UNAUTHORIZED, "token", "unknown or revoked token");
		return;
	}
	if (rc < 0) {
		api_fail_code(c, rc, NULL);
		return;
	}
	randombytes_buf(sid_raw, sizeof(sid_raw));
	randombytes_buf(csrf_raw, sizeof(csrf_raw));
	sodium_bin2hex(sid, sizeof(sid), sid_raw, sizeof(sid_raw));
	sodium_bin2hex(csrf, sizeof(csrf), csrf_raw, sizeof(csrf_raw));
	secret_token_hash(hash, sid);
	if (store_session_prune(c->st, time(NULL)) < 0 ||
	    (rc = store_session_insert(c->st, &id, hash, t.id, csrf, expires)) < 0) {
		api_fail(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "cannot keep the session: %s",
			 kiln_error_last());
		goto cleanup;
	}
	snprintf(target, sizeof(target), "session %lld", (long long)id);
	snprintf(detail, sizeof(detail), "{\"role\":\"%s\",\"expires_at\":%lld}",
		 api_role_name((int)t.role), (long long)expires);
	login_audit(c, t.name, target, detail, "ok");
	cookie_text(cookie, sizeof(cookie), c, sid, API_UI_SESSION_S);
	json_cookie_reply(c, MHD_HTTP_OK,
			  json_pack("{s:s, s:s, s:s, s:I}", "name", t.name, "role",
				    api_role_name((int)t.role), "csrf", csrf, "expires_at",
				    (json_int_t)expires),
			  cookie);
cleanup:
	sodium_memzero(sid, sizeof(sid));
	sodium_memzero(sid_raw, sizeof(sid_raw));
	sodium_memzero(hash, sizeof(hash));
	api_token_clear(&t);
}

void api_ui_logout(struct api_ctx *c)
{
	char cookie[256], target[48];
	int64_t audit_id;
	int rc;

	if (c->ui_session_id <= 0) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, NULL,
			 "log-out ends a dashboard session; this request came with a bearer token");
		return;
	}
	snprintf(target, sizeof(target), "session %lld", (long long)c->ui_session_id);
	if (api_audit_begin(c, &audit_id, "session.logout", target, NULL) < 0)
		return;
	rc = store_session_end(c->st, c->ui_session_id);
	api_audit_finish(c, audit_id, rc);
	if (rc < 0) {
		api_fail_code(c, rc, NULL);
		return;
	}
	cookie_text(cookie, sizeof(cookie), c, "", 0);
	json_cookie_reply(c, MHD_HTTP_OK, json_pack("{s:s}", "status", "logged out"), cookie);
}

/* The page asks at its start whether its cookie still holds a session: 200 either way (a
 * 401 would be a console error on every log-in page), {"session": null} without one. */
void api_ui_session_get(struct api_ctx *c)
{
	const char *cookie = MHD_lookup_connection_value(c->conn, MHD_COOKIE_KIND, API_UI_COOKIE);
	char msg[256];
	unsigned status = cookie ? api_ui_authenticate(c, cookie, "GET", msg, sizeof(msg))
				 : MHD_HTTP_UNAUTHORIZED;

	if (status == MHD_HTTP_UNAUTHORIZED) {
		api_reply(c, MHD_HTTP_OK, json_pack("{s:n}", "session"));
		return;
	}
	if (status) {
		api_fail(c, status, NULL, "%s", msg);
		return;
	}
	api_reply(c, MHD_HTTP_OK,
		  json_pack("{s:{s:s?, s:s, s:s, s:I}}", "session", "name", c->caller.name, "role",
			    api_role_name((int)c->caller.role), "csrf", c->ui_csrf, "expires_at",
			    (json_int_t)c->ui_expires_at));
}

unsigned api_ui_authenticate(struct api_ctx *c, const char *cookie, const char *method,
			     char *msg, size_t msglen)
{
	struct ui_session s = { 0 };
	unsigned char hash[32];
	const char *sent;
	int rc;

	if (strlen(cookie) != 64) {
		snprintf(msg, msglen, "no such session, or it ended: log in again");
		return MHD_HTTP_UNAUTHORIZED;
	}
	secret_token_hash(hash, cookie);
	rc = store_session_lookup(c->st, &s, hash);
	sodium_memzero(hash, sizeof(hash));
	if (rc == KILN_ENOTFOUND) {
		snprintf(msg, msglen, "%s", kiln_error_last());
		return MHD_HTTP_UNAUTHORIZED;
	}
	if (rc < 0) {
		snprintf(msg, msglen, "session lookup failed: %s", kiln_error_last());
		return MHD_HTTP_INTERNAL_SERVER_ERROR;
	}
	c->caller = s.token; /* the context owns the name now */
	c->ui_session_id = s.id;
	c->ui_expires_at = s.expires_at;
	kiln_strlcpy(c->ui_csrf, s.csrf, sizeof(c->ui_csrf));
	sodium_memzero(s.csrf, sizeof(s.csrf));
	if (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0)
		return 0;
	/* A cookie goes with every request the browser sends, a site's forged one included;
	 * the CSRF value only with those the dashboard's own script makes. */
	sent = MHD_lookup_connection_value(c->conn, MHD_HEADER_KIND, "X-CSRF-Token");
	if (!sent || strlen(sent) != strlen(c->ui_csrf) ||
	    sodium_memcmp(sent, c->ui_csrf, strlen(c->ui_csrf)) != 0) {
		snprintf(msg, msglen, "refused: a dashboard session's %s needs its X-CSRF-Token header",
			 method);
		return MHD_HTTP_FORBIDDEN;
	}
	return 0;
}
