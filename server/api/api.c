/* SPDX-License-Identifier: Apache-2.0 */
/* The REST API server: libmicrohttpd in epoll mode, dispatch through the route table, bearer
 * token authentication, the request body cap, per-thread store handles, JSON answers. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sodium.h>

#include "api/handlers.h"
#include "api/api_ui.h"
#include "api/conn_guard.h"
#include "kiln/buf.h"
#include "kiln/error.h"
#include "kiln/json.h"
#include "kiln/json_arena.h"
#include "kiln/log.h"
#include "kiln/parse.h"
#include "daemon/ratelimit.h"
#include "agents/receive_gap.h"

#define TOKEN_MAX 200

struct api_server {
	struct MHD_Daemon *mhd;
	char *db_path;
	const struct secret_key *key; /* the state dir's, which outlives the server */
	pthread_key_t store_key;  /* each server thread's own store handle */
	long connections_full;    /* open connections at which the listener counts as full */
	int store_key_made;
	struct bmc_engine *engine;
	struct live *live;
	struct cluster *cluster;
	struct ui_hub *hub;       /* the dashboard's live stream */
	struct ratelimit *enroll_limit;
	struct conn_guard *guard;       /* request deadlines; NULL: none */
};

/* One request, from its headers to its answer. */
struct call {
	struct api_server *srv;
	struct api_ctx ctx;
	struct kiln_buf body;
	int too_big;
	struct kiln_json_arena *arena; /* the body's tree, for routes that parse into one */
};

static void store_destroy(void *st)
{
	store_close(st);
}

/* This thread's store handle, opened on first use; NULL with kiln_fail() set. */
static struct store *thread_store(struct api_server *srv)
{
	struct store *st = pthread_getspecific(srv->store_key);

	if (st)
		return st;
	if (store_open(&st, srv->db_path) < 0)
		return NULL;
	if (pthread_setspecific(srv->store_key, st) != 0) {
		store_close(st);
		kiln_fail(KILN_ERROR, "cannot keep the store handle");
		return NULL;
	}
	return st;
}

/* Queues status and body (a JSON value, or an error object when NULL). */
static enum MHD_Result send_json(struct MHD_Connection *conn, unsigned status, const json_t *body,
				 const char *hname, const char *hval)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;
	char *text = body ? json_dumps(body, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	size_t len;

	if (!text) {
		status = MHD_HTTP_INTERNAL_SERVER_ERROR;
		text = strdup("{\"error\":\"internal error: no answer\"}");
		if (!text)
			return MHD_NO;
	}
	len = strlen(text);
	/* A newline ends the body, for people reading it with curl. */
	{
		char *grown = realloc(text, len + 2);

		if (!grown) {
			free(text);
			return MHD_NO;
		}
		text = grown;
		text[len++] = '\n';
		text[len] = '\0';
	}
	resp = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(text);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	if (hname)
		MHD_add_response_header(resp, hname, hval);
	ret = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static enum MHD_Result send_error(struct MHD_Connection *conn, unsigned status, const char *field,
				  const char *hname, const char *hval, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));

static enum MHD_Result send_error(struct MHD_Connection *conn, unsigned status, const char *field,
				  const char *hname, const char *hval, const char *fmt, ...)
{
	char msg[512];
	json_t *o;
	enum MHD_Result ret;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	o = api_error_json(msg, field, -1);
	ret = send_json(conn, status, o, hname, hval);
	json_decref(o);
	return ret;
}

/* A thread whose store handle cannot be opened (out of descriptors: EMFILE) answers 503 and
 * tries again on the next request; the store's own "store: " prefix is not repeated. */
static enum MHD_Result store_unavailable(struct MHD_Connection *conn)
{
	const char *why = kiln_error_last();

	if (strncmp(why, "store: ", 7) == 0)
		why += 7;
	return send_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, MHD_HTTP_HEADER_RETRY_AFTER,
			  "1", "the store cannot be opened now, try again: %s",
			  why[0] ? why : "unknown error");
}

static void log_request(const char *method, const char *url, unsigned status,
			const struct api_ctx *c)
{
	char qurl[256], qmsg[512];

	if (status >= 500) {
		const char *msg = c->reply ? json_string_value(json_object_get(c->reply, "error"))
					   : NULL;

		log_error("%s \"%s\" %u: %s", method, kiln_log_quote(qurl, sizeof(qurl), url),
			  status, kiln_log_quote(qmsg, sizeof(qmsg), msg ? msg : "no message"));
	} else if (kiln_log_get_level() >= KILN_LOG_DEBUG) {
		log_debug("%s \"%s\" %u token \"%s\"", method,
			  kiln_log_quote(qurl, sizeof(qurl), url), status,
			  kiln_log_quote(qmsg, sizeof(qmsg), c->caller.name ? c->caller.name : "-"));
	}
}

/* 1 when the connection's peer is 127.0.0.0/8 or ::1 (an IPv4-mapped one too). */
static int peer_loopback(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = ci ? ci->client_addr : NULL;

	if (!sa)
		return 0;
	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
	if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;

		return IN6_IS_ADDR_LOOPBACK(a) ||
		       (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
	}
	return 0;
}

static unsigned role_check(struct api_ctx *c, char *msg, size_t msglen);

/* Checks the bearer token (or the dashboard's session cookie) against the route's role; 0 to
 * go on, else the status to answer. */
static unsigned authenticate(struct call *call, const char *method, char *msg, size_t msglen)
{
	struct api_ctx *c = &call->ctx;
	const char *hdr, *tok, *cookie;
	unsigned char hash[32];
	int rc;

	hdr = MHD_lookup_connection_value(c->conn, MHD_HEADER_KIND,
					  MHD_HTTP_HEADER_AUTHORIZATION);
	/* [metrics] allow_unauthenticated_loopback: a Prometheus on this host scrapes without
	 * a token; a request that brings one is still checked */
	if (!hdr && c->route->role == ROLE_METRICS && api_metrics_loopback_open() &&
	    peer_loopback(c->conn))
		return 0;
	cookie = MHD_lookup_connection_value(c->conn, MHD_COOKIE_KIND, API_UI_COOKIE);
	if (!hdr && cookie && c->route->role >= ROLE_VIEWER && c->route->role <= ROLE_ADMIN) {
		/* the dashboard: its session stands for the token it logged in with */
		unsigned status = api_ui_authenticate(c, cookie, method, msg, msglen);

		return status ? status : role_check(c, msg, msglen);
	}
	if (!hdr) {
		snprintf(msg, msglen, "this endpoint needs a token (Authorization: Bearer TOKEN)");
		return MHD_HTTP_UNAUTHORIZED;
	}
	if (strncasecmp(hdr, "Bearer ", 7) != 0) {
		snprintf(msg, msglen, "the Authorization header must be 'Bearer TOKEN'");
		return MHD_HTTP_UNAUTHORIZED;
	}
	tok = hdr + 7;
	while (*tok == ' ')
		tok++;
	if (!*tok || strlen(tok) > TOKEN_MAX) {
		snprintf(msg, msglen, "unknown or revoked token");
		return MHD_HTTP_UNAUTHORIZED;
	}
	if (c->route->role == ROLE_AGENT || c->route->role == ROLE_ENROLL)
		return api_agent_authenticate(c, tok, msg, msglen);
	secret_token_hash(hash, tok);
	rc = store_token_lookup(c->st, &c->caller, hash);
	sodium_memzero(hash, sizeof(hash));
	if (rc == KILN_ENOTFOUND) {
		snprintf(msg, msglen, "unknown or revoked token");
		return MHD_HTTP_UNAUTHORIZED;
	}
	if (rc < 0) {
		snprintf(msg, msglen, "token lookup failed: %s", kiln_error_last());
		return MHD_HTTP_INTERNAL_SERVER_ERROR;
	}
	return role_check(c, msg, msglen);
}

/* The caller's role against the route's: 0, or 403 with msg. */
static unsigned role_check(struct api_ctx *c, char *msg, size_t msglen)
{
	if (!api_role_allows((int)c->caller.role, c->route->role)) {
		snprintf(msg, msglen, "this needs the %s role; token '%s' is %s",
			 api_role_name(c->route->role), c->caller.name ? c->caller.name : "",
			 api_role_name((int)c->caller.role));
		return MHD_HTTP_FORBIDDEN;
	}
	return 0;
}

/*
 * A token whose role falls short tried to change something: the audit log keeps who, what
 * and why it was refused (a read refused is not an action, and is not written).
 */
static void refusal_audit(struct api_ctx *c, const char *method, const char *url,
			  const char *msg)
{
	char target[300], outcome[600], *detail;
	json_t *roles;
	int64_t id;

	if (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0)
		return;
	snprintf(target, sizeof(target), "%s %.280s", method, url);
	snprintf(outcome, sizeof(outcome), "refused: %.500s", msg);
	roles = json_pack("{s:s, s:s}", "role", api_role_name((int)c->caller.role), "needs",
			  api_role_name(c->route->role));
	detail = roles ? json_dumps(roles, JSON_COMPACT) : NULL;
	json_decref(roles);
	if (store_audit_begin(c->st, &id, c->caller.name ? c->caller.name : "?", "denied", target,
			      detail) < 0 ||
	    store_audit_finish(c->st, id, outcome) < 0)
		log_warn("api: audit of a refused %s: %s", target, kiln_error_last());
	free(detail);
}

/* The first call for a request: route, token and declared size, before any body is read. */
static enum MHD_Result request_begin(struct call *call, const char *url, const char *method)
{
	struct api_ctx *c = &call->ctx;
	const char *cl;
	char msg[512];
	int path_known;
	unsigned status;
	int64_t declared;

	c->route = api_route_find(method, url, c->param, &path_known);
	if (!c->route && path_known) {
		char allow[64] = "";

		for (size_t i = 0; i < api_routes_count; i++) {
			char p[API_PARAM_MAX];
			int known;

			if (api_route_find(api_routes[i].method, url, p, &known) == &api_routes[i])
				snprintf(allow + strlen(allow), sizeof(allow) - strlen(allow), "%s%s",
					 allow[0] ? ", " : "", api_routes[i].method);
		}
		return send_error(c->conn, MHD_HTTP_METHOD_NOT_ALLOWED, NULL, MHD_HTTP_HEADER_ALLOW,
				  allow, "method %s is not allowed here", method);
	}
	if (!c->route)
		return send_error(c->conn, MHD_HTTP_NOT_FOUND, NULL, NULL, NULL, "no such endpoint");
	if (c->route->role != ROLE_NONE) {
		c->st = thread_store(call->srv);
		if (!c->st)
			return store_unavailable(c->conn);
		status = authenticate(call, method, msg, sizeof(msg));
		if (status == MHD_HTTP_UNAUTHORIZED)
			return send_error(c->conn, status, NULL, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
					  "Bearer", "%s", msg);
		if (status == MHD_HTTP_FORBIDDEN && c->route->role <= ROLE_ADMIN)
			refusal_audit(c, method, url, msg);
		if (status)
			return send_error(c->conn, status, NULL, NULL, NULL, "%s", msg);
	}
	cl = MHD_lookup_connection_value(c->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (cl && kiln_parse_int64(&declared, cl, 0, INT64_MAX) == 0 && declared > API_BODY_MAX)
		return send_error(c->conn, MHD_HTTP_CONTENT_TOO_LARGE, NULL, NULL, NULL,
				  "request body of %lld bytes exceeds the %d-byte limit",
				  (long long)declared, API_BODY_MAX);
	return MHD_YES;
}

static enum MHD_Result request_answer(struct call *call, const char *url, const char *method);

/* The connection's guard entry (conn_guard.h), or NULL. */
static struct conn_entry *guard_entry(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

/* The last call: the whole body is here; parse it and run the handler, which answers or
 * suspends the connection until its answer is ready (an agent report's commit). */
static enum MHD_Result request_finish(struct call *call, const char *url, const char *method)
{
	struct api_ctx *c = &call->ctx;

	conn_guard_request_done(call->srv->guard, guard_entry(c->conn));
	if (call->too_big)
		return send_error(c->conn, MHD_HTTP_CONTENT_TOO_LARGE, NULL, NULL, NULL,
				  "request body exceeds the %d-byte limit", API_BODY_MAX);
	if (!c->st) {
		c->st = thread_store(call->srv);
		if (!c->st)
			return store_unavailable(c->conn);
	}
	if ((strcmp(method, "POST") == 0 || strcmp(method, "PATCH") == 0 ||
	     strcmp(method, "PUT") == 0) &&
	    call->body.len > 0) {
		struct kiln_json_arena *prev = NULL;
		int rc;

		/* released with the request, after the tree's last use (on_completed) */
		if ((c->route->flags & ROUTE_BODY_ARENA) && (call->arena = kiln_json_arena_new()))
			prev = kiln_json_arena_enter(call->arena);
		rc = kiln_json_parse_object(&c->body, call->body.data, call->body.len);
		if (call->arena) {
			kiln_json_arena_leave(prev);
			c->body_tree_bytes = kiln_json_arena_bytes(call->arena);
		}
		if (rc < 0)
			return send_error(c->conn, MHD_HTTP_BAD_REQUEST, NULL, NULL, NULL,
					  "malformed JSON in the request body: %s", kiln_error_last());
		c->body_text = call->body.data;
		c->body_len = call->body.len;
	}
	kiln_error_clear();
	c->route->handler(c);
	if (c->suspended)
		return MHD_YES; /* answered once resumed */
	return request_answer(call, url, method);
}

/* The handler's answer (after it returned, or after its resumed function ran). */
static enum MHD_Result request_answer(struct call *call, const char *url, const char *method)
{
	struct api_ctx *c = &call->ctx;
	enum MHD_Result ret;
	char retry[24];

	if (c->response) {
		/* the handler's own response (the console's 101 Switching Protocols): a stream
		 * with no request deadline from now on */
		conn_guard_upgraded(call->srv->guard, guard_entry(c->conn));
		ret = MHD_queue_response(c->conn, c->status, c->response);
		MHD_destroy_response(c->response);
		c->response = NULL;
		log_request(method, url, c->status, c);
		return ret;
	}
	if (!c->reply)
		api_fail(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "internal error: %s",
			 kiln_error_last()[0] ? kiln_error_last() : "no answer");
	log_request(method, url, c->status, c);
	snprintf(retry, sizeof(retry), "%u", c->retry_after_s);
	ret = send_json(c->conn, c->status, c->reply,
			c->retry_after_s ? MHD_HTTP_HEADER_RETRY_AFTER : NULL,
			c->retry_after_s ? retry : NULL);
	return ret;
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *conn, const char *url,
				 const char *method, const char *version, const char *upload_data,
				 size_t *upload_data_size, void **con_cls)
{
	struct api_server *srv = cls;
	struct call *call = *con_cls;

	(void)version;
	if (!call) {
		call = calloc(1, sizeof(*call));
		if (!call)
			return MHD_NO;
		call->srv = srv;
		call->ctx.conn = conn;
		call->ctx.key = srv->key;
		call->ctx.engine = srv->engine;
		call->ctx.live = srv->live;
		call->ctx.cluster = srv->cluster;
		call->ctx.hub = srv->hub;
		call->ctx.enroll_limit = srv->enroll_limit;
		kiln_buf_init(&call->body, API_BODY_MAX);
		*con_cls = call;
		return request_begin(call, url, method);
	}
	if (call->ctx.suspended) {
		/* Resumed (api_resume): the handler's answer is ready. */
		call->ctx.suspended = 0;
		call->ctx.resumed(&call->ctx);
		return request_answer(call, url, method);
	}
	if (*upload_data_size > 0) {
		/* Over the cap (a chunked body): keep draining, answer 413 at the end. */
		if (!call->too_big &&
		    kiln_buf_append(&call->body, upload_data, *upload_data_size) == KILN_ETOOBIG) {
			call->too_big = 1;
			kiln_buf_free(&call->body);
		}
		*upload_data_size = 0;
		return MHD_YES;
	}
	return request_finish(call, url, method);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct call *call = *con_cls;
	struct api_server *srv = cls;

	(void)toe;
	/* the connection waits for its next request, under the deadline again */
	conn_guard_request_ended(srv->guard, guard_entry(conn));
	if (!call)
		return;
	if (call->body.data)
		sodium_memzero(call->body.data, call->body.len); /* it may hold a BMC password */
	kiln_buf_free(&call->body);
	if (call->ctx.pending_free)
		call->ctx.pending_free(call->ctx.pending);
	json_decref(call->ctx.body);
	json_decref(call->ctx.reply);
	kiln_json_arena_free(call->arena); /* the body's tree had its last use above */
	api_token_clear(&call->ctx.caller);
	free(call);
	*con_cls = NULL;
}

/* Counts the listener's connections: one held at its limit cannot receive reports, and the
 * agents' silence meanwhile is kilnd's, not theirs (receive_gap.h). */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	struct api_server *srv = cls;

	receive_gap_connections(code == MHD_CONNECTION_NOTIFY_STARTED ? 1 : -1,
				srv->connections_full, time(NULL));
	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci =
			MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);

		*socket_context = ci ? conn_guard_opened(srv->guard, ci->connect_fd) : NULL;
	} else {
		conn_guard_closed(srv->guard, *socket_context);
		*socket_context = NULL;
	}
}

/* libmicrohttpd's own messages come one per connection ("Server reached connection limit"):
 * a flood of connections would be a flood of lines. At most MHD_LOG_BURST a window; the rest
 * are counted into the next window's first line. */
#define MHD_LOG_WINDOW_S 60
#define MHD_LOG_BURST 5

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static time_t window;
	static unsigned in_window, held;
	char line[512], quoted[600];
	unsigned was_held = 0;
	time_t now = time(NULL);
	size_t n;
	int say;

	(void)cls;
	pthread_mutex_lock(&lock);
	if (now - window >= MHD_LOG_WINDOW_S) {
		window = now;
		in_window = 0;
		was_held = held;
		held = 0;
	}
	say = in_window < MHD_LOG_BURST;
	if (say)
		in_window++;
	else
		held++;
	pthread_mutex_unlock(&lock);
	if (!say)
		return;
	vsnprintf(line, sizeof(line), fmt, ap);
	n = strlen(line);
	while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
		line[--n] = '\0';
	if (was_held)
		log_warn("http: %u more libmicrohttpd messages in the last %d s were not logged",
			 was_held, MHD_LOG_WINDOW_S);
	log_warn("http: %s", kiln_log_quote(quoted, sizeof(quoted), line));
}

int api_server_start(struct api_server **out, const struct api_options *opt)
{
	struct api_server *srv = NULL;
	unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG | MHD_ALLOW_UPGRADE |
			 MHD_ALLOW_SUSPEND_RESUME;
	struct MHD_OptionItem ops[14];
	size_t n = 0;
	int rc = 0;

	if (!MHD_is_feature_supported(MHD_FEATURE_EPOLL))
		return kiln_fail(KILN_ERROR, "libmicrohttpd was built without epoll");
	if (opt->tls_cert_pem && !MHD_is_feature_supported(MHD_FEATURE_TLS))
		return kiln_fail(KILN_ERROR, "libmicrohttpd was built without TLS");
	srv = calloc(1, sizeof(*srv));
	if (!srv)
		return kiln_fail(KILN_ERROR, "out of memory");
	srv->db_path = strdup(opt->db_path);
	if (!srv->db_path) {
		rc = kiln_fail(KILN_ERROR, "out of memory");
		goto cleanup;
	}
	srv->key = opt->key;
	srv->engine = opt->engine;
	srv->live = opt->live;
	srv->cluster = opt->cluster;
	/* 4,096 addresses remembered: a fleet's NAT gateways and more */
	if ((rc = ratelimit_new(&srv->enroll_limit, opt->enroll_rate, opt->enroll_burst, 4096)) < 0)
		goto cleanup;
	if (pthread_key_create(&srv->store_key, store_destroy) != 0) {
		rc = kiln_fail(KILN_ERROR, "pthread_key_create failed");
		goto cleanup;
	}
	srv->store_key_made = 1;
	if ((rc = api_ui_hub_start(&srv->hub, opt->db_path)) < 0)
		goto cleanup;
	if (opt->ipv6)
		flags |= MHD_USE_IPv6;
	/* The logger first, or MHD prints what comes before it itself. */
	ops[n++] = (struct MHD_OptionItem){ MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)on_mhd_log,
					    NULL };
	ops[n++] = (struct MHD_OptionItem){ MHD_OPTION_LISTEN_SOCKET, opt->listen_fd, NULL };
	ops[n++] = (struct MHD_OptionItem){ MHD_OPTION_CONNECTION_LIMIT,
					    (intptr_t)opt->max_connections, NULL };
	ops[n++] = (struct MHD_OptionItem){ MHD_OPTION_CONNECTION_TIMEOUT,
					    (intptr_t)opt->connection_timeout, NULL };
	ops[n++] = (struct MHD_OptionItem){ MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed,
					    srv };
	if (opt->per_address_connections)
		ops[n++] = (struct MHD_OptionItem){ MHD_OPTION_PER_IP_CONNECTION_LIMIT,
						    (intptr_t)opt->per_address_connections, NULL };
	/* A pool divides the limit among its threads, and one full thread already refuses: a
	 * listener this close to the limit counts as full. */
	srv->connections_full = (long)opt->max_connections -
				(opt->threads > 1 ? (long)opt->threads - 1 : 0);
	ops[n++] = (struct MHD_OptionItem){ MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)on_connection,
					    srv };
	if (opt->threads > 1)
		ops[n++] = (struct MHD_OptionItem){ MHD_OPTION_THREAD_POOL_SIZE,
						    (intptr_t)opt->threads, NULL };
	if (opt->tls_cert_pem) {
		flags |= MHD_USE_TLS;
		ops[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_CERT, 0,
						    (void *)(uintptr_t)opt->tls_cert_pem };
		ops[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_KEY, 0,
						    (void *)(uintptr_t)opt->tls_key_pem };
	}
	ops[n++] = (struct MHD_OptionItem){ MHD_OPTION_END, 0, NULL };
	/* Connections still waiting for their request hold at most half of the listener: the
	 * other half answers whatever slow clients do. */
	if (opt->request_timeout &&
	    (rc = conn_guard_start(&srv->guard, opt->request_timeout, opt->connection_timeout,
				   opt->max_connections / 2)) < 0)
		goto cleanup;
	srv->mhd = MHD_start_daemon(flags, 0, NULL, NULL, on_access, srv, MHD_OPTION_ARRAY, ops,
				    MHD_OPTION_END);
	if (!srv->mhd) {
		rc = kiln_fail(KILN_ERROR, "libmicrohttpd did not start (see the lines above)");
		goto cleanup;
	}
	*out = srv;
	srv = NULL;
cleanup:
	api_server_stop(srv);
	return rc;
}

void api_server_stop(struct api_server *srv)
{
	if (!srv)
		return;
	api_node_checks_stop();
	api_ui_hub_end(srv->hub);
	if (srv->mhd)
		MHD_stop_daemon(srv->mhd);
	api_ui_hub_free(srv->hub);
	conn_guard_stop(srv->guard); /* after the server: its connections are closed */
	if (srv->store_key_made)
		pthread_key_delete(srv->store_key);
	ratelimit_free(srv->enroll_limit);
	free(srv->db_path);
	free(srv);
}
