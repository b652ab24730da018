/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the HTTP helpers: fingerprints, token files, and real TLS round trips
 * against an in-process OpenSSL server on 127.0.0.1 that records what it received; answers
 * read line by line as they arrive. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "kiln/error.h"
#include "kiln/http.h"

/* --- fingerprint normalisation --- */

#define FP "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static void test_fingerprint_normalize(void **state)
{
	static const struct {
		const char *in;
		int rc;
	} v[] = {
		{ FP, 0 },
		{ "0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF", 0 },
		{ "sha256:" FP, 0 },
		{ "SHA256:" FP, 0 },
		{ "01:23:45:67:89:AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:"
		  "89:AB:CD:EF", 0 },
		{ "SHA256:01:23:45:67:89:ab:cd:ef:01:23:45:67:89:ab:cd:ef:01:23:45:67:89:ab:cd:ef:01:"
		  "23:45:67:89:ab:cd:ef", 0 },
		{ "  " FP "\n", 0 },
		{ "", KILN_EINVAL },
		{ "sha256:", KILN_EINVAL },
		{ FP "00", KILN_EINVAL },
		{ "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde", KILN_EINVAL },
		{ "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdeg", KILN_EINVAL },
		{ "sha1:0123456789abcdef0123456789abcdef01234567", KILN_EINVAL },
		{ "0123456789abcdef 0123456789abcdef0123456789abcdef0123456789abcdef", KILN_EINVAL },
		{ "md5:" FP, KILN_EINVAL },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		char out[65] = "untouched";
		int rc = kiln_http_fingerprint_normalize(out, v[i].in);

		if (rc != v[i].rc)
			fail_msg("'%s': rc %d, want %d (%s)", v[i].in, rc, v[i].rc, kiln_error_last());
		if (rc == 0 && strcmp(out, FP) != 0)
			fail_msg("'%s': got '%s'", v[i].in, out);
		if (rc < 0 && strcmp(out, "untouched") != 0)
			fail_msg("'%s': out written on failure", v[i].in);
	}
	assert_int_equal(kiln_http_fingerprint_normalize((char[65]){ 0 }, NULL), KILN_EINVAL);
}

static void test_apply_trust_bad_fingerprint(void **state)
{
	struct kiln_tls_trust t = { .fingerprint = "nothex" };
	CURL *h = curl_easy_init();

	(void)state;
	assert_non_null(h);
	assert_int_equal(kiln_http_apply_trust(h, &t), KILN_EINVAL);
	assert_non_null(strstr(kiln_error_last(), "fingerprint"));
	curl_easy_cleanup(h);
}

/* --- token files --- */

static char tmp_path[64];

static const char *write_tmp(const char *data, size_t len)
{
	FILE *f;
	int fd;

	snprintf(tmp_path, sizeof(tmp_path), "/tmp/kiln-test-http-XXXXXX");
	fd = mkstemp(tmp_path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
	return tmp_path;
}

static void test_token_file(void **state)
{
	static const struct {
		const char *data;
		int rc;
		const char *want; /* token, or a substring of the message */
	} v[] = {
		{ "kiln_abc123\n", 0, "kiln_abc123" },
		{ "  \t kiln_abc123 \r\n\n", 0, "kiln_abc123" },
		{ "kiln_abc123", 0, "kiln_abc123" },
		{ "", KILN_EINVAL, "is empty" },
		{ " \n\t\n", KILN_EINVAL, "is empty" },
		{ "two words\n", KILN_EINVAL, "whitespace or control" },
		{ "line1\nline2\n", KILN_EINVAL, "whitespace or control" },
		{ "tok\x01\n", KILN_EINVAL, "whitespace or control" },
	};
	char big[5000];
	char *tok;

	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		const char *path = write_tmp(v[i].data, strlen(v[i].data));
		int rc;

		tok = NULL;
		rc = kiln_token_read_file(&tok, path);
		unlink(path);
		if (rc != v[i].rc)
			fail_msg("case %zu: rc %d, want %d (%s)", i, rc, v[i].rc, kiln_error_last());
		if (rc == 0 && strcmp(tok, v[i].want) != 0)
			fail_msg("case %zu: got '%s'", i, tok);
		if (rc < 0 && (tok || !strstr(kiln_error_last(), v[i].want)))
			fail_msg("case %zu: message '%s' lacks '%s'", i, kiln_error_last(), v[i].want);
		free(tok);
	}
	memset(big, 'a', sizeof(big));
	write_tmp(big, sizeof(big));
	assert_int_equal(kiln_token_read_file(&tok, tmp_path), KILN_ETOOBIG);
	unlink(tmp_path);
	assert_int_equal(kiln_token_read_file(&tok, "/nonexistent/token"), KILN_ENOTFOUND);
	assert_non_null(strstr(kiln_error_last(), "/nonexistent/token"));
}

/* --- an in-process TLS server --- */

struct tls_fixture {
	EVP_PKEY *key;
	X509 *cert;
	char fingerprint[65];
	char ca_path[64];
};

static struct tls_fixture fx;

/* A self-signed P-256 certificate for 127.0.0.1, like kilnd's generated one. */
static int fixture_setup(void **state)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	X509_EXTENSION *ext;
	X509V3_CTX v3;
	FILE *f;
	int fd;

	(void)state;
	fx.key = EVP_EC_gen("P-256");
	assert_non_null(fx.key);
	fx.cert = X509_new();
	assert_non_null(fx.cert);
	X509_set_version(fx.cert, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(fx.cert), 1);
	X509_gmtime_adj(X509_getm_notBefore(fx.cert), -60);
	X509_gmtime_adj(X509_getm_notAfter(fx.cert), 3600);
	X509_set_pubkey(fx.cert, fx.key);
	X509_NAME_add_entry_by_txt(X509_get_subject_name(fx.cert), "CN", MBSTRING_ASC,
				   (const unsigned char *)"kiln-test", -1, -1, 0);
	X509_set_issuer_name(fx.cert, X509_get_subject_name(fx.cert));
	X509V3_set_ctx(&v3, fx.cert, fx.cert, NULL, NULL, 0);
	ext = X509V3_EXT_conf_nid(NULL, &v3, NID_subject_alt_name, "IP:127.0.0.1");
	assert_non_null(ext);
	X509_add_ext(fx.cert, ext, -1);
	X509_EXTENSION_free(ext);
	ext = X509V3_EXT_conf_nid(NULL, &v3, NID_basic_constraints, "critical,CA:TRUE");
	assert_non_null(ext);
	X509_add_ext(fx.cert, ext, -1);
	X509_EXTENSION_free(ext);
	assert_true(X509_sign(fx.cert, fx.key, EVP_sha256()) > 0);
	assert_int_equal(X509_digest(fx.cert, EVP_sha256(), md, &mdlen), 1);
	for (unsigned i = 0; i < mdlen; i++)
		snprintf(fx.fingerprint + 2 * i, 3, "%02x", md[i]);
	snprintf(fx.ca_path, sizeof(fx.ca_path), "/tmp/kiln-test-ca-XXXXXX");
	fd = mkstemp(fx.ca_path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	assert_int_equal(PEM_write_X509(f, fx.cert), 1);
	assert_int_equal(fclose(f), 0);
	return 0;
}

static int fixture_teardown(void **state)
{
	(void)state;
	unlink(fx.ca_path);
	X509_free(fx.cert);
	EVP_PKEY_free(fx.key);
	return 0;
}

struct server {
	int lfd;
	int port;
	int tls;             /* serve TLS, else plain HTTP */
	const char *reply;   /* the full HTTP response */
	const char *const *parts; /* or: the response in pieces, written apart (NULL-terminated) */
	pthread_t thread;
	/* what it saw */
	int accepted;
	int handshake_ok;
	size_t received;     /* application bytes received */
	char request[4096];
};

/* Reads until the end of the headers (and a short body), or the peer stops. */
static void server_read(struct server *s, SSL *ssl, int fd)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int n;

		if (s->received >= sizeof(s->request) - 1)
			break;
		if ((!ssl || SSL_pending(ssl) == 0) && poll(&p, 1, 3000) <= 0)
			break;
		n = ssl ? SSL_read(ssl, s->request + s->received,
				   (int)(sizeof(s->request) - 1 - s->received)) :
			  (int)read(fd, s->request + s->received, sizeof(s->request) - 1 - s->received);
		if (n <= 0)
			break;
		s->received += (size_t)n;
		s->request[s->received] = '\0';
		if (strstr(s->request, "\r\n\r\n") &&
		    (!strstr(s->request, "Content-Length") || strstr(s->request, "\r\n\r\n{")))
			break;
	}
}

static void *server_main(void *arg)
{
	struct server *s = arg;
	struct pollfd p = { .fd = s->lfd, .events = POLLIN };
	SSL_CTX *ctx = NULL;
	SSL *ssl = NULL;
	int fd = -1;

	if (poll(&p, 1, 5000) <= 0)
		return NULL;
	fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return NULL;
	s->accepted = 1;
	if (s->tls) {
		ctx = SSL_CTX_new(TLS_server_method());
		if (!ctx || SSL_CTX_use_certificate(ctx, fx.cert) != 1 ||
		    SSL_CTX_use_PrivateKey(ctx, fx.key) != 1)
			goto cleanup;
		ssl = SSL_new(ctx);
		if (!ssl || SSL_set_fd(ssl, fd) != 1 || SSL_accept(ssl) != 1)
			goto cleanup;
		s->handshake_ok = 1;
	}
	server_read(s, ssl, fd);
	if (s->received && s->parts) {
		/* each piece its own segment, so that the client reads it on its own */
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
		for (size_t i = 0; s->parts[i]; i++) {
			size_t len = strlen(s->parts[i]);
			int n = ssl ? SSL_write(ssl, s->parts[i], (int)len) :
				      (int)write(fd, s->parts[i], len);

			if (n != (int)len)
				goto cleanup;
			usleep(20 * 1000);
		}
	} else if (s->received) {
		if (ssl)
			SSL_write(ssl, s->reply, (int)strlen(s->reply));
		else if (write(fd, s->reply, strlen(s->reply)) < 0)
			goto cleanup;
	}
	if (ssl)
		SSL_shutdown(ssl);
cleanup:
	SSL_free(ssl);
	SSL_CTX_free(ctx);
	close(fd);
	return NULL;
}

static const char reply_ok[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
			       "Content-Length: 11\r\nConnection: close\r\n\r\n{\"ok\":true}";

static void server_start(struct server *s, int tls, const char *reply)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t alen = sizeof(a);

	memset(s, 0, sizeof(*s));
	s->tls = tls;
	s->reply = reply;
	s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(s->lfd >= 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = 0; /* the kernel picks a free port */
	assert_int_equal(bind(s->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(s->lfd, 4), 0);
	assert_int_equal(getsockname(s->lfd, (struct sockaddr *)&a, &alen), 0);
	s->port = ntohs(a.sin_port);
	assert_int_equal(pthread_create(&s->thread, NULL, server_main, s), 0);
}

static void server_stop(struct server *s)
{
	pthread_join(s->thread, NULL);
	close(s->lfd);
}

static int request(struct server *s, struct kiln_http_response *resp, const char *method,
		   const char *body, const struct kiln_tls_trust *trust, size_t max_body)
{
	char url[64];

	snprintf(url, sizeof(url), "%s://127.0.0.1:%d/api/v1/x", s->tls ? "https" : "http",
		 s->port);
	return kiln_http_request(resp, method, url, "tok123", body, body ? strlen(body) : 0, trust,
				 5000, max_body);
}

static void test_tls_pinned_ok(void **state)
{
	struct kiln_tls_trust t = { 0 };
	struct kiln_http_response r;
	struct server s;
	char pin[80];
	int rc;

	(void)state;
	snprintf(pin, sizeof(pin), "SHA256:%s", fx.fingerprint);
	t.fingerprint = pin;
	server_start(&s, 1, reply_ok);
	rc = request(&s, &r, "POST", "{\"a\":1}", &t, 0);
	server_stop(&s);
	if (rc < 0)
		fail_msg("request: %s", kiln_error_last());
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "{\"ok\":true}");
	assert_int_equal(r.body_len, 11);
	assert_string_equal(r.content_type, "application/json");
	assert_non_null(strstr(s.request, "POST /api/v1/x HTTP/1.1\r\n"));
	assert_non_null(strstr(s.request, "Authorization: Bearer tok123\r\n"));
	assert_non_null(strstr(s.request, "Content-Type: application/json\r\n"));
	assert_non_null(strstr(s.request, "\r\n\r\n{\"a\":1}"));
	kiln_http_response_free(&r);
	kiln_http_response_free(&r);
}

/* A wrong pin fails in the handshake: the server never receives a request byte. */
static void test_tls_pinned_mismatch(void **state)
{
	struct kiln_tls_trust t = { .fingerprint = FP };
	struct kiln_http_response r;
	struct server s;
	int rc;

	(void)state;
	server_start(&s, 1, reply_ok);
	rc = request(&s, &r, "GET", NULL, &t, 0);
	server_stop(&s);
	assert_int_equal(rc, KILN_ERROR);
	assert_non_null(strstr(kiln_error_last(), "does not match the pinned fingerprint"));
	assert_non_null(strstr(kiln_error_last(), fx.fingerprint));
	assert_true(s.accepted);
	assert_false(s.handshake_ok);
	assert_int_equal(s.received, 0);
	assert_int_equal(r.status, 0);
	assert_null(r.body);
}

static void test_tls_ca_file(void **state)
{
	struct kiln_tls_trust t = { .ca_file = fx.ca_path };
	struct kiln_http_response r;
	struct server s;
	int rc;

	(void)state;
	server_start(&s, 1, reply_ok);
	rc = request(&s, &r, "GET", NULL, &t, 0);
	server_stop(&s);
	if (rc < 0)
		fail_msg("request: %s", kiln_error_last());
	assert_int_equal(r.status, 200);
	kiln_http_response_free(&r);
}

/* No CA file, no pin, no system store: the self-signed peer is refused. */
static void test_tls_no_trust(void **state)
{
	struct kiln_tls_trust t = { 0 };
	struct kiln_http_response r;
	struct server s;

	(void)state;
	server_start(&s, 1, reply_ok);
	assert_int_equal(request(&s, &r, "GET", NULL, &t, 0), KILN_ERROR);
	server_stop(&s);
	assert_int_equal(s.received, 0);
	/* the system store does not hold our test CA either */
	t.system_ca = 1;
	server_start(&s, 1, reply_ok);
	assert_int_equal(request(&s, &r, "GET", NULL, &t, 0), KILN_ERROR);
	server_stop(&s);
	assert_int_equal(s.received, 0);
}

static void test_tls_insecure(void **state)
{
	struct kiln_tls_trust t = { .insecure = 1 };
	struct kiln_http_response r;
	struct server s;

	(void)state;
	server_start(&s, 1, reply_ok);
	assert_int_equal(request(&s, &r, "DELETE", NULL, &t, 0), 0);
	server_stop(&s);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(s.request, "DELETE /api/v1/x HTTP/1.1\r\n"));
	kiln_http_response_free(&r);
}

static void test_body_cap(void **state)
{
	struct kiln_http_response r;
	struct server s;

	(void)state;
	server_start(&s, 0, reply_ok);
	assert_int_equal(request(&s, &r, "GET", NULL, NULL, 5), KILN_ETOOBIG);
	server_stop(&s);
	assert_non_null(strstr(kiln_error_last(), "exceeds 5 bytes"));
	assert_null(r.body);
	/* without Content-Length the cap holds while reading */
	server_start(&s, 0, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n0123456789abcdef");
	assert_int_equal(request(&s, &r, "GET", NULL, NULL, 5), KILN_ETOOBIG);
	server_stop(&s);
	/* exactly at the cap is fine */
	server_start(&s, 0, reply_ok);
	assert_int_equal(request(&s, &r, "GET", NULL, NULL, 11), 0);
	server_stop(&s);
	assert_string_equal(r.body, "{\"ok\":true}");
	kiln_http_response_free(&r);
}

static void test_plain_status_and_empty_body(void **state)
{
	struct kiln_http_response r;
	struct server s;

	(void)state;
	server_start(&s, 0, "HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
	assert_int_equal(request(&s, &r, "POST", NULL, NULL, 0), 0);
	server_stop(&s);
	assert_non_null(strstr(s.request, "POST /api/v1/x HTTP/1.1\r\n"));
	assert_non_null(strstr(s.request, "Content-Length: 0\r\n"));
	assert_int_equal(r.status, 401);
	assert_non_null(r.body);
	assert_int_equal(r.body_len, 0);
	assert_null(r.content_type);
	kiln_http_response_free(&r);
}

static void test_bad_token_and_refused(void **state)
{
	struct kiln_http_response r;
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t alen = sizeof(a);
	char url[64];
	int fd;

	(void)state;
	assert_int_equal(kiln_http_request(&r, "GET", "http://127.0.0.1:1/", "bad\r\nX-Evil: 1", NULL,
					   0, NULL, 1000, 0),
			 KILN_EINVAL);
	/* a port nobody listens on: bind one, then close it */
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
	close(fd);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/", ntohs(a.sin_port));
	assert_int_equal(kiln_http_request(&r, "GET", url, NULL, NULL, 0, NULL, 2000, 0), KILN_ERROR);
	assert_non_null(strstr(kiln_error_last(), url));
	assert_int_equal(kiln_http_request(&r, "GET", "ftp://127.0.0.1/", NULL, NULL, 0, NULL, 2000, 0),
			 KILN_ERROR);
}

/* --- answers line by line --- */

struct lines_seen {
	int starts;
	long status;
	char header[32];
	char ctype[64];
	char lines[8][128];
	size_t n;
	size_t stop_at; /* 1-based line whose callback fails, 0: none */
};

static int seen_start(void *ud, const struct kiln_http_head *head)
{
	struct lines_seen *l = ud;

	l->starts++;
	l->status = head->status;
	snprintf(l->header, sizeof(l->header), "%s", head->header ? head->header : "(none)");
	snprintf(l->ctype, sizeof(l->ctype), "%s", head->content_type ? head->content_type : "");
	return 0;
}

static int seen_line(void *ud, const char *line, size_t len)
{
	struct lines_seen *l = ud;

	assert_int_equal(strlen(line), len);
	if (l->n < 8)
		snprintf(l->lines[l->n], sizeof(l->lines[0]), "%s", line);
	l->n++;
	if (l->stop_at && l->n == l->stop_at)
		return kiln_fail(KILN_EPROTO, "line %zu refused", l->n);
	return 0;
}

static int request_lines(struct server *s, struct kiln_http_response *resp, struct lines_seen *l,
			 size_t max_line, size_t max_body)
{
	const struct kiln_http_lines lines = { .accept = "application/x-ndjson",
					       .header = "X-Kiln-Nodes", .max_line = max_line,
					       .start = seen_start, .line = seen_line, .ud = l };
	char url[64];

	memset(l->lines, 0, sizeof(l->lines));
	snprintf(url, sizeof(url), "%s://127.0.0.1:%d/api/v1/power?range=x",
		 s->tls ? "https" : "http", s->port);
	return kiln_http_request_lines(resp, "GET", url, "tok123", NULL, 0,
				       &(struct kiln_tls_trust){ .insecure = 1 }, 5000, max_body,
				       &lines);
}

#define NDJSON_HEAD "HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson; charset=utf-8\r\n" \
	"X-Kiln-Nodes: 4\r\nConnection: close\r\n"

/* Lines cut anywhere by the transport (chunk and segment boundaries, a CRLF split in two)
 * come out whole; empty lines are skipped; a last line without its newline is kept. */
static void test_lines_split(void **state)
{
	static const char *const parts[] = {
		NDJSON_HEAD "Transfer-Encoding: chunked\r\n\r\n",
		"f\r\n{\"node\":\"a\"}\n{\"\r\n",
		"4\r\nnode\r\n",
		"7\r\n\":\"b\"}\r\r\n",
		"3\r\n\n\n{\r\n",
		"c\r\n\"node\":\"c\"}\n\r\n",
		"c\r\n{\"node\":\"d\"}\r\n0\r\n\r\n",
		NULL,
	};
	struct kiln_http_response r;
	struct lines_seen l = { 0 };
	struct server s;
	int rc;

	(void)state;
	server_start(&s, 0, NULL);
	s.parts = parts;
	rc = request_lines(&s, &r, &l, 0, 0);
	server_stop(&s);
	if (rc < 0)
		fail_msg("request: %s", kiln_error_last());
	assert_non_null(strstr(s.request, "GET /api/v1/power?range=x HTTP/1.1\r\n"));
	assert_non_null(strstr(s.request, "\r\nAccept: application/x-ndjson\r\n"));
	assert_null(strstr(s.request, "application/json"));
	assert_int_equal(l.starts, 1);
	assert_int_equal(l.status, 200);
	assert_string_equal(l.header, "4");
	assert_string_equal(l.ctype, "application/x-ndjson; charset=utf-8");
	assert_int_equal(l.n, 4);
	assert_string_equal(l.lines[0], "{\"node\":\"a\"}");
	assert_string_equal(l.lines[1], "{\"node\":\"b\"}");
	assert_string_equal(l.lines[2], "{\"node\":\"c\"}");
	assert_string_equal(l.lines[3], "{\"node\":\"d\"}");
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "");
	assert_int_equal(r.body_len, 0);
	assert_string_equal(r.content_type, "application/x-ndjson; charset=utf-8");
	kiln_http_response_free(&r);
}

/* One byte a segment, over TLS; the header is optional. */
static void test_lines_bytewise_tls(void **state)
{
	static const char body[] = "{\"n\":1}\n{\"n\":22}\n";
	const char *parts[sizeof(body) + 1];
	char bytes[sizeof(body)][2];
	struct kiln_http_response r;
	struct lines_seen l = { 0 };
	struct server s;
	int rc;

	(void)state;
	parts[0] = "HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\n"
		   "Content-Length: 17\r\n\r\n";
	for (size_t i = 0; i + 1 < sizeof(body); i++) {
		bytes[i][0] = body[i];
		bytes[i][1] = '\0';
		parts[i + 1] = bytes[i];
	}
	parts[sizeof(body)] = NULL;
	server_start(&s, 1, NULL);
	s.parts = parts;
	rc = request_lines(&s, &r, &l, 0, 0);
	server_stop(&s);
	if (rc < 0)
		fail_msg("request: %s", kiln_error_last());
	assert_int_equal(l.starts, 1);
	assert_string_equal(l.header, "(none)");
	assert_int_equal(l.n, 2);
	assert_string_equal(l.lines[0], "{\"n\":1}");
	assert_string_equal(l.lines[1], "{\"n\":22}");
	kiln_http_response_free(&r);
}

/* The cap holds per line and for the whole streamed body. */
static void test_lines_caps(void **state)
{
	static const char *const parts[] = { NDJSON_HEAD "\r\n", "{\"node\":\"a\"}\n",
					     "{\"node\":\"b\",\"x\":\"0123456789\"}\n", NULL };
	struct kiln_http_response r;
	struct lines_seen l = { 0 };
	struct server s;

	(void)state;
	server_start(&s, 0, NULL);
	s.parts = parts;
	assert_int_equal(request_lines(&s, &r, &l, 28, 0), KILN_ETOOBIG);
	server_stop(&s);
	assert_non_null(strstr(kiln_error_last(), "a line of the response exceeds 28 bytes"));
	assert_int_equal(l.n, 1); /* the first line was delivered before */
	assert_null(r.body);
	/* exactly at the line cap is fine */
	memset(&l, 0, sizeof(l));
	server_start(&s, 0, NULL);
	s.parts = parts;
	assert_int_equal(request_lines(&s, &r, &l, 29, 0), 0);
	server_stop(&s);
	assert_int_equal(l.n, 2);
	kiln_http_response_free(&r);
	/* the whole body */
	memset(&l, 0, sizeof(l));
	server_start(&s, 0, NULL);
	s.parts = parts;
	assert_int_equal(request_lines(&s, &r, &l, 0, 30), KILN_ETOOBIG);
	server_stop(&s);
	assert_non_null(strstr(kiln_error_last(), "exceeds 30 bytes"));
	assert_int_equal(l.n, 1);
}

/* A callback's failure stops the transfer with its own code and message. */
static void test_lines_callback_stops(void **state)
{
	static const char *const parts[] = { NDJSON_HEAD "\r\n", "one\ntwo\nthree\n", NULL };
	struct kiln_http_response r;
	struct lines_seen l = { .stop_at = 2 };
	struct server s;

	(void)state;
	server_start(&s, 0, NULL);
	s.parts = parts;
	assert_int_equal(request_lines(&s, &r, &l, 0, 0), KILN_EPROTO);
	server_stop(&s);
	assert_string_equal(kiln_error_last(), "line 2 refused");
	assert_int_equal(l.n, 2);
}

/* Error answers, and a 2xx of another type (a server that does not stream), are buffered. */
static void test_lines_buffered_answers(void **state)
{
	static const char err[] = "HTTP/1.1 409 Conflict\r\nContent-Type: application/json\r\n"
				  "Content-Length: 16\r\nConnection: close\r\n\r\n{\"error\":\"busy\"}";
	static const char arr[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
				  "Content-Length: 14\r\nConnection: close\r\n\r\n[{\"node\":\"a\"}]";
	static const char nd_err[] = "HTTP/1.1 500 Oops\r\nContent-Type: application/x-ndjson\r\n"
				     "Content-Length: 6\r\nConnection: close\r\n\r\nx\ny\nz\n";
	struct kiln_http_response r;
	struct lines_seen l = { 0 };
	struct server s;

	(void)state;
	server_start(&s, 0, err);
	assert_int_equal(request_lines(&s, &r, &l, 0, 0), 0);
	server_stop(&s);
	assert_int_equal(r.status, 409);
	assert_string_equal(r.body, "{\"error\":\"busy\"}");
	assert_int_equal(l.starts + (int)l.n, 0);
	kiln_http_response_free(&r);

	server_start(&s, 0, arr);
	assert_int_equal(request_lines(&s, &r, &l, 0, 0), 0);
	server_stop(&s);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.content_type, "application/json");
	assert_string_equal(r.body, "[{\"node\":\"a\"}]");
	assert_int_equal(l.starts + (int)l.n, 0);
	kiln_http_response_free(&r);

	server_start(&s, 0, nd_err);
	assert_int_equal(request_lines(&s, &r, &l, 0, 0), 0);
	server_stop(&s);
	assert_int_equal(r.status, 500);
	assert_string_equal(r.body, "x\ny\nz\n");
	assert_int_equal(l.starts + (int)l.n, 0);
	kiln_http_response_free(&r);
	/* the buffered cap still holds */
	server_start(&s, 0, arr);
	assert_int_equal(request_lines(&s, &r, &l, 0, 10), KILN_ETOOBIG);
	server_stop(&s);
}

/* A streamed answer with no line at all still says its start. */
static void test_lines_empty(void **state)
{
	struct kiln_http_response r;
	struct lines_seen l = { 0 };
	struct server s;

	(void)state;
	server_start(&s, 0, "HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\n"
			    "X-Kiln-Nodes: 0\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
	assert_int_equal(request_lines(&s, &r, &l, 0, 0), 0);
	server_stop(&s);
	assert_int_equal(l.starts, 1);
	assert_string_equal(l.header, "0");
	assert_int_equal(l.n, 0);
	assert_string_equal(r.body, "");
	kiln_http_response_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fingerprint_normalize),
		cmocka_unit_test(test_apply_trust_bad_fingerprint),
		cmocka_unit_test(test_token_file),
		cmocka_unit_test(test_tls_pinned_ok),
		cmocka_unit_test(test_tls_pinned_mismatch),
		cmocka_unit_test(test_tls_ca_file),
		cmocka_unit_test(test_tls_no_trust),
		cmocka_unit_test(test_tls_insecure),
		cmocka_unit_test(test_body_cap),
		cmocka_unit_test(test_plain_status_and_empty_body),
		cmocka_unit_test(test_bad_token_and_refused),
		cmocka_unit_test(test_lines_split),
		cmocka_unit_test(test_lines_bytewise_tls),
		cmocka_unit_test(test_lines_caps),
		cmocka_unit_test(test_lines_callback_stops),
		cmocka_unit_test(test_lines_buffered_answers),
		cmocka_unit_test(test_lines_empty),
	};
	int rc;

	signal(SIGPIPE, SIG_IGN); /* a client that gives up must fail its test, not end the run */
	curl_global_init(CURL_GLOBAL_DEFAULT);
	rc = cmocka_run_group_tests(tests, fixture_setup, fixture_teardown);
	curl_global_cleanup();
	return rc;
}
