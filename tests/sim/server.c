/* SPDX-License-Identifier: Apache-2.0 */
/* kiln-bmcsim: one epoll loop accepts on every BMC's port and hands connections to one
 * libmicrohttpd daemon (no listen socket, external epoll); delays and faults use suspend/resume. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include "bmc.h"
#include "kiln/buf.h"
#include "kiln/error.h"
#include "redfish.h"
#include "server.h"
#include "simctl.h"
#include "tls.h"

#define BODY_MAX (64u << 10)
#define TAG_SIGNAL 0xffffffffu
#define TAG_MHD 0xfffffffeu
#define SLOW_CHUNK 64

/* A suspended connection, so that shutdown can resume it before stopping the daemon. */
struct susp {
	struct susp *prev, *next;
	struct MHD_Connection *conn;
	struct req *req;        /* the request waiting, or NULL for a slow body */
	bool linked;
};

struct sim_server {
	const struct tree *tree;
	const struct sim_config *cfg;
	struct bmc *bmcs;
	int count;
	int *listen_fds;
	int *ports;
	int ep, sigfd;
	int *fd_bmc;            /* accepted descriptor -> BMC index + 1 */
	size_t fd_max;
	struct MHD_Daemon *daemon;
	struct susp suspended;  /* list head */
	char *cert, *key;
	char fingerprint[100];
	bool stopping;
};

enum req_state { REQ_NEW, REQ_WAITING, REQ_READY, REQ_HUNG, REQ_ABORT };

struct req {
	struct susp link;
	struct sim_server *srv;
	struct bmc *bmc;
	struct kiln_buf body;
	bool too_big;
	enum req_state state;
	struct sim_reply reply;
	struct sim_fault fault;
};

struct slow {
	struct susp link;
	struct sim_server *srv;
	char *data;
	size_t len;
	bool ready;
	int ms;
};

struct trunc {
	char *data;
	size_t len, cut;
};

static void susp_add(struct sim_server *s, struct susp *n, struct MHD_Connection *c)
{
	n->conn = c;
	n->next = s->suspended.next;
	n->prev = &s->suspended;
	s->suspended.next->prev = n;
	s->suspended.next = n;
	n->linked = true;
	MHD_suspend_connection(c);
}

static void susp_resume(struct susp *n)
{
	if (!n->linked)
		return;
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->linked = false;
	MHD_resume_connection(n->conn);
}

int server_port(const struct sim_server *s, int index)
{
	return s->ports[index];
}

const char *server_fingerprint(const struct sim_server *s)
{
	return s->cert ? s->fingerprint : NULL;
}

/* ---- responses ---- */

static void slow_wake(void *arg, uint64_t data);

static ssize_t slow_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct slow *sl = cls;
	if (pos >= sl->len)
		return MHD_CONTENT_READER_END_OF_STREAM;
	if (!sl->ready) {
		if (sl->srv->stopping)
			return MHD_CONTENT_READER_END_WITH_ERROR;
		/* pause: suspended until the timer, as MHD asks of a reader that returns 0 */
		susp_add(sl->srv, &sl->link, sl->link.conn);
		if (sim_timer_add(sim_now_ms() + (uint64_t)sl->ms, slow_wake, sl, 0) < 0)
			sl->ready = true;
		return 0;
	}
	size_t n = sl->len - (size_t)pos;
	if (n > SLOW_CHUNK)
		n = SLOW_CHUNK;
	if (n > max)
		n = max;
	memcpy(buf, sl->data + pos, n);
	sl->ready = false;
	return (ssize_t)n;
}

static void slow_wake(void *arg, uint64_t data)
{
	(void)data;
	struct slow *sl = arg;
	sl->ready = true;
	susp_resume(&sl->link);
}

static void slow_free(void *cls)
{
	struct slow *sl = cls;
	free(sl->data);
	free(sl);
}

static ssize_t trunc_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct trunc *t = cls;
	if (pos >= t->cut)
		return MHD_CONTENT_READER_END_WITH_ERROR;
	size_t n = t->cut - (size_t)pos;
	if (n > max)
		n = max;
	memcpy(buf, t->data + pos, n);
	return (ssize_t)n;
}

static void trunc_free(void *cls)
{
	struct trunc *t = cls;
	free(t->data);
	free(t);
}

/* Copies the reply body (owned or borrowed) into a fresh allocation. */
static char *body_copy(const struct sim_reply *r, size_t *len)
{
	const char *src = r->body ? r->body : r->text;
	char *d = malloc(r->len + 1);
	if (!d)
		return NULL;
	if (r->len)
		memcpy(d, src, r->len);
	d[r->len] = '\0';
	*len = r->len;
	return d;
}

static struct MHD_Response *response_build(struct req *r, struct MHD_Connection *c)
{
	struct sim_reply *rp = &r->reply;
	struct MHD_Response *resp = NULL;
	size_t len = 0;
	if (r->fault.kind == FAULT_MALFORMED) {
		struct kiln_buf b;
		kiln_buf_init(&b, 0);
		if (rp->len > 1)
			kiln_buf_append(&b, rp->body ? rp->body : rp->text, rp->len / 2);
		else
			kiln_buf_puts(&b, "{\"error\": ");
		kiln_buf_puts(&b, "\x01}}]]<malformed");
		if (rp->status == 204)
			rp->status = 200;
		len = b.len;
		resp = MHD_create_response_from_buffer(len, kiln_buf_steal(&b), MHD_RESPMEM_MUST_FREE);
	} else if (r->fault.kind == FAULT_TRUNCATED && rp->len > 1) {
		struct trunc *t = calloc(1, sizeof(*t));
		if (!t || !(t->data = body_copy(rp, &t->len))) {
			free(t);
			return NULL;
		}
		t->cut = t->len / 2;
		resp = MHD_create_response_from_callback(t->len, 4096, trunc_read, t, trunc_free);
		if (!resp)
			trunc_free(t);
	} else if (r->fault.kind == FAULT_SLOW && rp->len > 0) {
		struct slow *sl = calloc(1, sizeof(*sl));
		if (!sl || !(sl->data = body_copy(rp, &sl->len))) {
			free(sl);
			return NULL;
		}
		sl->srv = r->srv;
		sl->ready = true;
		sl->ms = r->fault.ms ? r->fault.ms : r->srv->cfg->slow_ms;
		sl->link.conn = c;
		resp = MHD_create_response_from_callback(sl->len, SLOW_CHUNK, slow_read, sl, slow_free);
		if (!resp)
			slow_free(sl);
	} else if (rp->body) {
		resp = MHD_create_response_from_buffer(rp->len, rp->body, MHD_RESPMEM_MUST_FREE);
		if (resp)
			rp->body = NULL;
	} else {
		resp = MHD_create_response_from_buffer(rp->len, (void *)(uintptr_t)rp->text,
						       MHD_RESPMEM_PERSISTENT);
	}
	if (!resp)
		return NULL;
	if (rp->ctype && (rp->len || r->fault.kind == FAULT_MALFORMED))
		MHD_add_response_header(resp, "Content-Type", rp->ctype);
	MHD_add_response_header(resp, "OData-Version", "4.0");
	MHD_add_response_header(resp, "Cache-Control", "no-cache");
	if (rp->location)
		MHD_add_response_header(resp, "Location", rp->location);
	if (rp->token)
		MHD_add_response_header(resp, "X-Auth-Token", rp->token);
	if (rp->etag)
		MHD_add_response_header(resp, "ETag", rp->etag);
	if (rp->www_auth)
		MHD_add_response_header(resp, "WWW-Authenticate", "Basic realm=\"kiln-bmcsim\"");
	if (rp->retry_after) {
		char ra[16];
		snprintf(ra, sizeof(ra), "%d", rp->retry_after);
		MHD_add_response_header(resp, "Retry-After", ra);
	}
	return resp;
}

static enum MHD_Result queue(struct req *r, struct MHD_Connection *c)
{
	struct MHD_Response *resp = response_build(r, c);
	if (!resp)
		return MHD_NO;
	enum MHD_Result ok = MHD_queue_response(c, (unsigned)r->reply.status, resp);
	MHD_destroy_response(resp);
	return ok;
}

/* ---- request handling ---- */

static void req_wake(void *arg, uint64_t data)
{
	struct req *r = arg;
	r->state = data ? REQ_ABORT : REQ_READY;
	susp_resume(&r->link);
}

static struct bmc *conn_bmc(struct sim_server *s, struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (!ci || ci->connect_fd < 0 || (size_t)ci->connect_fd >= s->fd_max)
		return NULL;
	int idx = s->fd_bmc[ci->connect_fd];
	return idx > 0 ? &s->bmcs[idx - 1] : NULL;
}

static void count_method(struct bmc *b, const char *m)
{
	if (strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0)
		b->n_get++;
	else if (strcmp(m, "POST") == 0)
		b->n_post++;
	else if (strcmp(m, "PATCH") == 0)
		b->n_patch++;
	else if (strcmp(m, "DELETE") == 0)
		b->n_delete++;
	else
		b->n_other++;
}

static void conn_reset(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	struct linger lg = { 1, 0 };
	if (ci && ci->connect_fd >= 0)
		setsockopt(ci->connect_fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
}

/* The first query parameter starting with "$" that this simulator does not implement ($skip
 * always is, $select and $expand when the root advertises them): DSP0266 wants 501 for those. */
struct query_scan {
	bool select_query; /* the root advertises SelectQuery */
	bool expand_query; /* ... and ExpandQuery */
	const char *unsupported;
};

static enum MHD_Result query_scan_one(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	(void)kind;
	(void)value;
	struct query_scan *q = cls;
	if (key[0] == '$' && strcmp(key, "$skip") != 0 && !(q->select_query && strcmp(key, "$select") == 0) &&
	    !(q->expand_query && strcmp(key, "$expand") == 0)) {
		q->unsupported = key;
		return MHD_NO;
	}
	return MHD_YES;
}

/* Redfish request, body complete: decide fault, compute the reply, delay or queue it. */
static enum MHD_Result redfish_request(struct req *r, struct MHD_Connection *c, const char *url,
				       const char *method)
{
	struct bmc *b = r->bmc;
	uint64_t now = sim_now_ms();
	const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
	const char *token = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Auth-Token");
	const char *if_match = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "If-Match");
	const char *skip = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "$skip");
	const char *select = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "$select");
	const char *expand = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "$expand");
	struct query_scan qs = { b->tree->select_query, b->tree->expand_query, NULL };
	MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, query_scan_one, &qs);
	char path[2048];
	snprintf(path, sizeof(path), "%s%s%s%s%s%s%s", url, skip ? "?$skip=" : "", skip ? skip : "",
		 select ? (skip ? "&$select=" : "?$select=") : "", select ? select : "",
		 expand ? (skip || select ? "&$expand=" : "?$expand=") : "", expand ? expand : "");

	count_method(b, method);
	bool get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
	if (select && qs.unsupported == NULL && get)
		b->n_selected++;
	if (expand && qs.unsupported == NULL && get)
		b->n_expanded++;
	struct bmc_record *rec = bmc_record_add(b, method, path, auth, token != NULL, if_match, r->body.data,
						r->body.len);
	r->fault = bmc_fault_take(b, false);
	if (r->fault.kind == FAULT_HANG) {
		if (rec)
			rec->status = 0;
		r->state = REQ_HUNG;
		susp_add(r->srv, &r->link, c);
		if (sim_timer_add(now + (uint64_t)r->srv->cfg->hang_ms, req_wake, r, 1) < 0)
			req_wake(r, 1);
		return MHD_YES;
	}
	if (r->fault.kind == FAULT_RESET) {
		if (rec)
			rec->status = 0;
		conn_reset(c);
		return MHD_NO;
	}
	if (r->too_big) {
		redfish_error(&r->reply, 413, "Base.1.8.PayloadTooLarge", "The request body is too large.");
	} else if (r->fault.kind == FAULT_STATUS) {
		redfish_error(&r->reply, r->fault.status, r->fault.status == 503 ? "Base.1.8.ServiceTemporarilyUnavailable"
				: "Base.1.8.InternalError", "Simulated fault: the service answered %d.", r->fault.status);
		if (r->fault.status == 503)
			r->reply.retry_after = 1;
	} else if (r->fault.kind == FAULT_BUSY) {
		/* as an iDRAC with every session taken answers (RAC0218) */
		redfish_error(&r->reply, 503, "IDRAC.2.8.RAC0218",
			      "The maximum number of user sessions is reached.");
		r->reply.retry_after = r->fault.retry_s > 0 ? r->fault.retry_s : 30;
	} else {
		struct sim_request q = { method, url, skip, auth, token, if_match, r->body.data, r->body.len, now,
					 select, expand, qs.unsupported };
		redfish_handle(&r->reply, b, &q);
	}
	if (rec)
		rec->status = r->reply.status;
	int delay = r->srv->cfg->latency_ms;
	if (r->srv->cfg->jitter_ms > 0)
		delay += rand() % (r->srv->cfg->jitter_ms + 1);
	if (delay > 0) {
		r->state = REQ_WAITING;
		susp_add(r->srv, &r->link, c);
		if (sim_timer_add(now + (uint64_t)delay, req_wake, r, 0) < 0)
			req_wake(r, 0);
		return MHD_YES;
	}
	return queue(r, c);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
				  const char *version, const char *upload, size_t *upload_size, void **req_cls)
{
	(void)version;
	struct sim_server *s = cls;
	struct req *r = *req_cls;
	if (!r) {
		r = calloc(1, sizeof(*r));
		if (!r)
			return MHD_NO;
		r->srv = s;
		r->link.req = r;
		r->bmc = conn_bmc(s, c);
		kiln_buf_init(&r->body, BODY_MAX);
		*req_cls = r;
		return r->bmc ? MHD_YES : MHD_NO;
	}
	if (*upload_size) {
		if (!r->too_big && kiln_buf_append(&r->body, upload, *upload_size) < 0)
			r->too_big = true;
		*upload_size = 0;
		return MHD_YES;
	}
	switch (r->state) {
	case REQ_READY:
		r->state = REQ_NEW;
		return queue(r, c);
	case REQ_ABORT:
		conn_reset(c);
		return MHD_NO;
	case REQ_WAITING:
	case REQ_HUNG:
		return MHD_YES;
	case REQ_NEW:
		break;
	}
	if (strncmp(url, "/_sim/", 6) == 0) {
		simctl_handle(&r->reply, r->bmc, method, url, r->body.data, r->body.len, sim_now_ms(),
			      server_fingerprint(s));
		return queue(r, c);
	}
	return redfish_request(r, c, url, method);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **req_cls, enum MHD_RequestTerminationCode toe)
{
	(void)cls;
	(void)c;
	(void)toe;
	struct req *r = *req_cls;
	if (!r)
		return;
	kiln_buf_free(&r->body);
	sim_reply_free(&r->reply);
	free(r);
	*req_cls = NULL;
}

/* ---- setup and loop ---- */

static int listen_one(int *out_fd, int *out_port, const char *host, int port)
{
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return kiln_fail(KILN_ERROR, "socket: %s", strerror(errno));
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
		close(fd);
		return kiln_fail(KILN_EINVAL, "listen: '%s' is not a numeric IPv4 address", host);
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, 1024) != 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &sl) != 0) {
		int e = errno;
		close(fd);
		return kiln_fail(KILN_ERROR, "listen on %s:%d: %s", host, port, strerror(e));
	}
	*out_fd = fd;
	*out_port = ntohs(sa.sin_port);
	return 0;
}

static int write_file(const char *path, const char *data, size_t len)
{
	char tmp[4096];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return kiln_fail(KILN_ERROR, "%s: %s", tmp, strerror(errno));
	bool ok = write(fd, data, len) == (ssize_t)len;
	ok = close(fd) == 0 && ok;
	if (!ok || rename(tmp, path) != 0)
		return kiln_fail(KILN_ERROR, "%s: %s", path, strerror(errno));
	return 0;
}

int server_create(struct sim_server **out, const struct tree *t, const struct sim_config *cfg,
		  const struct fault_spec *faults, size_t nfaults, const struct server_options *o)
{
	struct sim_server *s = calloc(1, sizeof(*s));
	struct rlimit rl;
	int rc = KILN_ERROR;
	if (!s)
		return KILN_ERROR;
	s->tree = t;
	s->cfg = cfg;
	s->count = o->count;
	s->ep = s->sigfd = -1;
	s->suspended.next = s->suspended.prev = &s->suspended;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		rl.rlim_cur = 1024;
	s->fd_max = rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > 1048576 ? 1048576 : (size_t)rl.rlim_cur;
	if ((size_t)o->count + 64 > s->fd_max) {
		rc = kiln_fail(KILN_EINVAL, "--count %d needs more descriptors than the limit %zu: run several processes",
			       o->count, s->fd_max);
		goto fail;
	}
	s->bmcs = calloc((size_t)o->count, sizeof(*s->bmcs));
	s->listen_fds = calloc((size_t)o->count, sizeof(int));
	s->ports = calloc((size_t)o->count, sizeof(int));
	s->fd_bmc = calloc(s->fd_max, sizeof(int));
	if (!s->bmcs || !s->listen_fds || !s->ports || !s->fd_bmc)
		goto fail;
	for (int i = 0; i < o->count; i++)
		s->listen_fds[i] = -1;
	s->ep = epoll_create1(EPOLL_CLOEXEC);
	if (s->ep < 0) {
		rc = kiln_fail(KILN_ERROR, "epoll_create1: %s", strerror(errno));
		goto fail;
	}
	for (int i = 0; i < o->count; i++) {
		rc = listen_one(&s->listen_fds[i], &s->ports[i], o->host, o->port ? o->port + i : 0);
		if (rc < 0)
			goto fail;
		rc = KILN_ERROR;
		struct epoll_event ev = { .events = EPOLLIN, .data.u64 = (uint64_t)i };
		if (epoll_ctl(s->ep, EPOLL_CTL_ADD, s->listen_fds[i], &ev) != 0)
			goto fail;
		if (bmc_init(&s->bmcs[i], i, s->ports[i], t, cfg) < 0)
			goto fail;
		for (size_t f = 0; f < nfaults; f++)
			if (fault_targets(&faults[f], i, s->ports[i]))
				bmc_fault_add(&s->bmcs[i], &faults[f].fault);
	}
	if (o->tls) {
		rc = tls_cert_generate(&s->cert, &s->key, s->fingerprint, sizeof(s->fingerprint));
		if (rc < 0)
			goto fail;
		if (o->cert_out && (rc = write_file(o->cert_out, s->cert, strlen(s->cert))) < 0)
			goto fail;
		rc = KILN_ERROR;
	}
	unsigned flags = MHD_USE_EPOLL | MHD_USE_NO_LISTEN_SOCKET | MHD_ALLOW_SUSPEND_RESUME;
	unsigned limit = (unsigned)(s->fd_max - (size_t)o->count - 32);
	if (o->tls)
		flags |= MHD_USE_TLS;
	s->daemon = o->tls
		? MHD_start_daemon(flags, 0, NULL, NULL, on_request, s, MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
				   MHD_OPTION_CONNECTION_LIMIT, limit, MHD_OPTION_CONNECTION_TIMEOUT, 60u,
				   MHD_OPTION_HTTPS_MEM_KEY, s->key, MHD_OPTION_HTTPS_MEM_CERT, s->cert, MHD_OPTION_END)
		: MHD_start_daemon(flags, 0, NULL, NULL, on_request, s, MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
				   MHD_OPTION_CONNECTION_LIMIT, limit, MHD_OPTION_CONNECTION_TIMEOUT, 60u, MHD_OPTION_END);
	if (!s->daemon) {
		rc = kiln_fail(KILN_ERROR, "libmicrohttpd: the daemon did not start");
		goto fail;
	}
	const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_EPOLL_FD);
	struct epoll_event mev = { .events = EPOLLIN, .data.u64 = TAG_MHD };
	if (!di || epoll_ctl(s->ep, EPOLL_CTL_ADD, di->epoll_fd, &mev) != 0) {
		rc = kiln_fail(KILN_ERROR, "libmicrohttpd: no epoll descriptor");
		goto fail;
	}
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_BLOCK, &set, NULL);
	s->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	struct epoll_event sev = { .events = EPOLLIN, .data.u64 = TAG_SIGNAL };
	if (s->sigfd < 0 || epoll_ctl(s->ep, EPOLL_CTL_ADD, s->sigfd, &sev) != 0) {
		rc = kiln_fail(KILN_ERROR, "signalfd: %s", strerror(errno));
		goto fail;
	}
	signal(SIGCHLD, SIG_IGN); /* power hooks are never waited for */
	signal(SIGPIPE, SIG_IGN);
	if (o->ports_file) {
		struct kiln_buf pb;
		kiln_buf_init(&pb, 0);
		for (int i = 0; i < o->count; i++)
			kiln_buf_printf(&pb, "%d\n", s->ports[i]);
		rc = write_file(o->ports_file, pb.data ? pb.data : "", pb.len);
		kiln_buf_free(&pb);
		if (rc < 0)
			goto fail;
	}
	*out = s;
	return 0;
fail:
	server_free(s);
	return rc;
}

static void accept_all(struct sim_server *s, int i)
{
	for (int n = 0; n < 256; n++) {
		struct sockaddr_storage sa;
		socklen_t sl = sizeof(sa);
		int fd = accept4(s->listen_fds[i], (struct sockaddr *)&sa, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return; /* EAGAIN, or out of descriptors: retried on the next event */
		if ((size_t)fd >= s->fd_max) {
			close(fd);
			continue;
		}
		s->fd_bmc[fd] = i + 1;
		s->bmcs[i].connections++;
		if (MHD_add_connection(s->daemon, fd, (struct sockaddr *)&sa, sl) != MHD_YES)
			s->fd_bmc[fd] = 0; /* MHD closed it */
	}
}

int server_run(struct sim_server *s)
{
	struct epoll_event evs[64];
	while (!s->stopping) {
		uint64_t now = sim_now_ms();
		int64_t wait = sim_timer_next(now);
		MHD_UNSIGNED_LONG_LONG mt;
		if (MHD_get_timeout(s->daemon, &mt) == MHD_YES && (wait < 0 || (int64_t)mt < wait))
			wait = (int64_t)mt;
		if (wait < 0 || wait > 1000)
			wait = 1000;
		int n = epoll_wait(s->ep, evs, 64, (int)wait);
		if (n < 0 && errno != EINTR)
			return kiln_fail(KILN_ERROR, "epoll_wait: %s", strerror(errno));
		for (int k = 0; k < n; k++) {
			uint64_t tag = evs[k].data.u64;
			if (tag == TAG_SIGNAL) {
				struct signalfd_siginfo si;
				while (read(s->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
					s->stopping = true;
			} else if (tag != TAG_MHD) {
				accept_all(s, (int)tag);
			}
		}
		sim_timer_run(sim_now_ms());
		MHD_run(s->daemon);
	}
	return 0;
}

void server_free(struct sim_server *s)
{
	if (!s)
		return;
	s->stopping = true;
	if (s->daemon) {
		while (s->suspended.next != &s->suspended) {
			struct susp *n = s->suspended.next;
			if (n->req) /* slow bodies end themselves when stopping */
				n->req->state = REQ_ABORT;
			susp_resume(n);
		}
		MHD_run(s->daemon);
		MHD_stop_daemon(s->daemon);
	}
	sim_timer_clear();
	for (int i = 0; s->bmcs && i < s->count; i++)
		bmc_fini(&s->bmcs[i]);
	for (int i = 0; s->listen_fds && i < s->count; i++)
		if (s->listen_fds[i] >= 0)
			close(s->listen_fds[i]);
	if (s->ep >= 0)
		close(s->ep);
	if (s->sigfd >= 0)
		close(s->sigfd);
	free(s->bmcs);
	free(s->listen_fds);
	free(s->ports);
	free(s->fd_bmc);
	free(s->cert);
	free(s->key);
	free(s);
}
