/* SPDX-License-Identifier: Apache-2.0 */
/* libcurl client helpers: TLS trust by CA file or pinned certificate, capped JSON requests,
 * answers delivered whole or line by line. */
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "kiln/buf.h"
#include "kiln/error.h"
#include "kiln/http.h"
#include "kiln/servers.h"

#define DEFAULT_TIMEOUT_MS 30000L
#define CONNECT_TIMEOUT_MS 10000L /* a server that does not accept within 10 s is down */
#define DEFAULT_MAX_BODY (16u * 1024 * 1024)
#define DEFAULT_MAX_LINE (1u * 1024 * 1024)
#define TOKEN_FILE_MAX 4096

/* The last pin mismatch on this thread, filled by the verify callback for the error message. */
static _Thread_local char pin_mismatch[200];

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)tolower((unsigned char)c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

int kiln_http_fingerprint_normalize(char out[65], const char *text)
{
	const char *p = text;
	char hex[65];
	size_t n = 0;

	if (!text)
		return kiln_fail(KILN_EINVAL, "fingerprint: empty");
	while (*p == ' ' || *p == '\t')
		p++;
	if (strncasecmp(p, "sha256:", 7) == 0)
		p += 7;
	for (; *p; p++) {
		if (*p == ':')
			continue;
		if (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') {
			/* trailing whitespace only */
			while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
				p++;
			if (*p)
				return kiln_fail(KILN_EINVAL, "fingerprint: unexpected whitespace");
			break;
		}
		if (hexval(*p) < 0)
			return kiln_fail(KILN_EINVAL,
					 "fingerprint: expected 64 hex digits (SHA-256), got a non-hex character");
		if (n == 64)
			return kiln_fail(KILN_EINVAL, "fingerprint: more than 64 hex digits (SHA-256)");
		hex[n++] = (char)tolower((unsigned char)*p);
	}
	if (n != 64)
		return kiln_fail(KILN_EINVAL, "fingerprint: %zu hex digits, a SHA-256 has 64", n);
	hex[64] = '\0';
	memcpy(out, hex, sizeof(hex));
	return 0;
}

static void hex_encode(char *out, const unsigned char *md, size_t len)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < len; i++) {
		out[2 * i] = digits[md[i] >> 4];
		out[2 * i + 1] = digits[md[i] & 15];
	}
	out[2 * len] = '\0';
}

/* Decodes a normalised fingerprint into 32 bytes. */
static void hex_decode(unsigned char out[32], const char hex[65])
{
	for (size_t i = 0; i < 32; i++)
		out[i] = (unsigned char)(hexval(hex[2 * i]) << 4 | hexval(hex[2 * i + 1]));
}

/*
 * The next of a comma-separated list of fingerprints, normalised: 1 (*list moved past it,
 * NULL after the last), 0 when *list is NULL, or KILN_EINVAL (message set) for a malformed one.
 */
static int pin_next(const char **list, char norm[65])
{
	const char *p = *list;
	size_t n;
	char one[200];

	if (!p)
		return 0;
	n = strcspn(p, ",");
	if (n >= sizeof(one))
		return kiln_fail(KILN_EINVAL, "fingerprint: too long");
	snprintf(one, sizeof(one), "%.*s", (int)n, p);
	if (kiln_http_fingerprint_normalize(norm, one) < 0)
		return KILN_EINVAL;
	*list = p[n] == ',' ? p + n + 1 : NULL;
	return 1;
}

/*
 * OpenSSL certificate verification, replacing the chain check: the leaf's SHA-256 (DER)
 * must equal the pin (arg: the caller's fingerprint text). It runs inside the handshake,
 * so a wrong peer never sees a request byte.
 */
static int pin_check(X509_STORE_CTX *ctx, const char *fingerprint, char got[65])
{
	unsigned char md[EVP_MAX_MD_SIZE], want[32];
	unsigned int len = 0;
	X509 *cert = X509_STORE_CTX_get0_cert(ctx);
	char norm[65];
	int match = 0, rc;

	got[0] = '\0';
	if (!cert || !X509_digest(cert, EVP_sha256(), md, &len) || len != 32) {
		snprintf(pin_mismatch, sizeof(pin_mismatch), "no peer certificate to check");
		X509_STORE_CTX_set_error(ctx, X509_V_ERR_UNSPECIFIED);
		return 0;
	}
	/* Several pins, comma-separated (the instances of one fleet): any one matches. */
	for (const char *p = fingerprint; (rc = pin_next(&p, norm)) > 0;) {
		hex_decode(want, norm);
		match |= CRYPTO_memcmp(md, want, 32) == 0;
	}
	if (rc < 0) {
		snprintf(pin_mismatch, sizeof(pin_mismatch), "bad pinned fingerprint");
		X509_STORE_CTX_set_error(ctx, X509_V_ERR_UNSPECIFIED);
		return 0;
	}
	if (!match) {
		hex_encode(got, md, 32);
		snprintf(pin_mismatch, sizeof(pin_mismatch),
			 "server certificate sha256:%s does not match the pinned fingerprint", got);
		X509_STORE_CTX_set_error(ctx, X509_V_ERR_CERT_REJECTED);
		return 0;
	}
	X509_STORE_CTX_set_error(ctx, X509_V_OK);
	return 1;
}

static int pin_verify(X509_STORE_CTX *ctx, void *arg)
{
	char got[65];

	return pin_check(ctx, arg, got);
}

/* The same check, recording a mismatch in the caller's struct kiln_tls_pin. */
static int pin_verify_record(X509_STORE_CTX *ctx, void *arg)
{
	struct kiln_tls_pin *pin = arg;
	int ok = pin_check(ctx, pin->fingerprint, pin->seen);

	pin->mismatch = !ok;
	return ok;
}

/* curl hands us each new connection's SSL_CTX before the handshake. */
static CURLcode ssl_ctx_pin(CURL *h, void *sslctx, void *arg)
{
	(void)h;
	SSL_CTX_set_cert_verify_callback(sslctx, pin_verify, arg);
	return CURLE_OK;
}

static CURLcode ssl_ctx_pin_record(CURL *h, void *sslctx, void *arg)
{
	(void)h;
	SSL_CTX_set_cert_verify_callback(sslctx, pin_verify_record, arg);
	return CURLE_OK;
}

static int setopt_failed(CURLcode c, const char *what)
{
	return kiln_fail(KILN_EINVAL, "TLS setup: %s: %s", what, curl_easy_strerror(c));
}

int kiln_http_apply_trust_pin(CURL *h, const struct kiln_tls_trust *trust,
			      struct kiln_tls_pin *pin)
{
	struct kiln_tls_trust t = { 0 };
	char norm[65];
	CURLcode c;
	int rc;

	if (!pin || !pin->fingerprint || (trust && trust->insecure))
		return kiln_http_apply_trust(h, trust);
	if (kiln_http_fingerprint_normalize(norm, pin->fingerprint) < 0)
		return KILN_EINVAL;
	if (trust)
		t = *trust;
	t.fingerprint = pin->fingerprint;
	pin->mismatch = 0;
	pin->seen[0] = '\0';
	if ((rc = kiln_http_apply_trust(h, &t)) < 0)
		return rc;
	if ((c = curl_easy_setopt(h, CURLOPT_SSL_CTX_FUNCTION, ssl_ctx_pin_record)) != CURLE_OK ||
	    (c = curl_easy_setopt(h, CURLOPT_SSL_CTX_DATA, (void *)pin)) != CURLE_OK)
		return setopt_failed(c, "certificate pinning");
	return 0;
}

int kiln_http_apply_trust(CURL *h, const struct kiln_tls_trust *trust)
{
	static const struct kiln_tls_trust none = { 0 };
	char norm[65];
	CURLcode c;

	if (!trust)
		trust = &none;
	if (trust->insecure) {
		if ((c = curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L)) != CURLE_OK ||
		    (c = curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L)) != CURLE_OK)
			return setopt_failed(c, "insecure");
		return 0;
	}
	if (trust->fingerprint) {
		const char *p = trust->fingerprint;
		int rc;

		while ((rc = pin_next(&p, norm)) > 0)
			;
		if (rc < 0)
			return rc;
		/*
		 * The pin replaces CA and host name checks (kilnd's self-signed certificate
		 * names no address). VERIFYPEER stays on so that a failed check aborts the
		 * handshake; no CA store is loaded.
		 */
		char key[80];

		/*
		 * curl reuses a kept connection (or TLS session) for a request whose CA file and
		 * CA path match, and knows nothing of the pin: a CA path naming the pin keeps
		 * connections checked against different pins apart. OpenSSL only records it as a
		 * hashed-directory lookup that nothing reads (the pin replaces verification).
		 */
		snprintf(key, sizeof(key), "kiln-pin:%s", norm);
		if ((c = curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L)) != CURLE_OK ||
		    (c = curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L)) != CURLE_OK ||
		    (c = curl_easy_setopt(h, CURLOPT_CAINFO, NULL)) != CURLE_OK ||
		    (c = curl_easy_setopt(h, CURLOPT_CAPATH, key)) != CURLE_OK ||
		    (c = curl_easy_setopt(h, CURLOPT_SSL_CTX_FUNCTION, ssl_ctx_pin)) != CURLE_OK ||
		    (c = curl_easy_setopt(h, CURLOPT_SSL_CTX_DATA, (void *)trust->fingerprint)) !=
			    CURLE_OK)
			return setopt_failed(c, "certificate pinning");
		return 0;
	}
	if ((c = curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L)) != CURLE_OK ||
	    (c = curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L)) != CURLE_OK)
		return setopt_failed(c, "verification");
	if (trust->ca_file) {
		if ((c = curl_easy_setopt(h, CURLOPT_CAINFO, trust->ca_file)) != CURLE_OK)
			return setopt_failed(c, "CA file");
		/* curl's default CA path is the system store: keep it only when asked. */
		if (!trust->system_ca && (c = curl_easy_setopt(h, CURLOPT_CAPATH, NULL)) != CURLE_OK)
			return setopt_failed(c, "CA path");
	} else if (!trust->system_ca) {
		/* No anchor at all: every HTTPS peer fails verification, by design. */
		if ((c = curl_easy_setopt(h, CURLOPT_CAINFO, NULL)) != CURLE_OK ||
		    (c = curl_easy_setopt(h, CURLOPT_CAPATH, NULL)) != CURLE_OK)
			return setopt_failed(c, "CA store");
	}
	return 0;
}

enum sink_mode { SINK_UNDECIDED, SINK_BUFFER, SINK_LINES };

struct sink {
	struct kiln_buf body;  /* the buffered answer */
	int toobig;
	/* line by line (kiln_http_request_lines): decided at the first byte of the answer */
	const struct kiln_http_lines *lines; /* NULL: always buffered */
	CURL *h;
	enum sink_mode mode;
	struct kiln_buf line;  /* the line being received */
	size_t streamed;       /* bytes of the streamed body so far (capped like body) */
	int line_toobig;
	int cb_rc;             /* a callback's negative code, which stopped the transfer */
};

/* The media type of ctype (before any ';' parameter) equals want, case-insensitive. */
static int media_type_is(const char *ctype, const char *want)
{
	size_t n = strlen(want);

	if (!ctype || strncasecmp(ctype, want, n) != 0)
		return 0;
	ctype += n;
	while (*ctype == ' ' || *ctype == '\t')
		ctype++;
	return *ctype == '\0' || *ctype == ';';
}

/* Once the headers are in: a 2xx answer of the asked type is streamed, anything else buffered. */
static int sink_decide(struct sink *s)
{
	struct kiln_http_head head = { 0 };
	struct curl_header *hdr = NULL;
	int rc;

	s->mode = SINK_BUFFER;
	if (!s->lines)
		return 0;
	curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &head.status);
	if (curl_easy_getinfo(s->h, CURLINFO_CONTENT_TYPE, &head.content_type) != CURLE_OK)
		head.content_type = NULL;
	if (head.status < 200 || head.status > 299 ||
	    !media_type_is(head.content_type, s->lines->accept))
		return 0;
	s->mode = SINK_LINES;
	if (s->lines->header &&
	    curl_easy_header(s->h, s->lines->header, 0, CURLH_HEADER, -1, &hdr) == CURLHE_OK)
		head.header = hdr->value;
	if (s->lines->start && (rc = s->lines->start(s->lines->ud, &head)) < 0) {
		s->cb_rc = rc;
		return rc;
	}
	return 0;
}

/* Hands the line received so far to the callback (empty lines skipped) and starts the next. */
static int line_emit(struct sink *s)
{
	size_t len = s->line.len;
	int rc = 0;

	if (len > 0 && s->line.data[len - 1] == '\r')
		s->line.data[--len] = '\0';
	if (len > 0 && (rc = s->lines->line(s->lines->ud, s->line.data, len)) < 0)
		s->cb_rc = rc;
	kiln_buf_reset(&s->line);
	return rc;
}

static int lines_feed(struct sink *s, const char *p, size_t n)
{
	if (n > s->body.max - s->streamed) {
		s->toobig = 1;
		return KILN_ETOOBIG;
	}
	s->streamed += n;
	while (n > 0) {
		const char *nl = memchr(p, '\n', n);
		size_t part = nl ? (size_t)(nl - p) : n;
		int rc;

		if (kiln_buf_append(&s->line, p, part) < 0) {
			s->line_toobig = s->line.max && s->line.len + part > s->line.max;
			return KILN_ETOOBIG;
		}
		if (!nl)
			break;
		if ((rc = line_emit(s)) < 0)
			return rc;
		p += part + 1;
		n -= part + 1;
	}
	return 0;
}

static size_t body_write(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	struct sink *s = userdata;
	size_t n = size * nmemb;

	if (s->mode == SINK_UNDECIDED && sink_decide(s) < 0)
		return 0;
	if (s->mode == SINK_LINES)
		return lines_feed(s, ptr, n) < 0 ? 0 : n; /* 0 aborts the transfer */
	if (kiln_buf_append(&s->body, ptr, n) < 0) {
		s->toobig = s->body.max && s->body.len + n > s->body.max;
		return 0;
	}
	return n;
}

static int header_value_valid(const char *s)
{
	for (; *s; s++) {
		if ((unsigned char)*s < 0x21 || (unsigned char)*s == 0x7f)
			return 0;
	}
	return 1;
}

/* One request, buffered (lines NULL) or line by line: what both public calls share. */
/* What a caller can tell a person about a transfer that got no answer. */
static enum kiln_http_failure failure_of(CURLcode c)
{
	switch (c) {
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
		return KILN_HTTP_CONNECT;
	case CURLE_PEER_FAILED_VERIFICATION:
		return KILN_HTTP_UNTRUSTED;
	case CURLE_SSL_CONNECT_ERROR:
		return KILN_HTTP_TLS_HANDSHAKE;
	case CURLE_GOT_NOTHING:
	case CURLE_RECV_ERROR:
	case CURLE_WEIRD_SERVER_REPLY:
		return KILN_HTTP_NOT_HTTP;
	default:
		return KILN_HTTP_ANSWERED;
	}
}

static int perform(struct kiln_http_response *resp, const char *method, const char *url,
		   const char *bearer_token, const char *body, size_t body_len,
		   const struct kiln_tls_trust *trust, long timeout_ms, size_t max_body,
		   const struct kiln_http_lines *lines)
{
	struct sink sink = { .lines = lines };
	struct curl_slist *headers = NULL, *tmp;
	char errbuf[CURL_ERROR_SIZE] = "", auth[4200], accept[128];
	const char *ctype = NULL;
	CURL *h = NULL;
	CURLcode c = CURLE_OK;
	int rc = 0;

	memset(resp, 0, sizeof(*resp));
	kiln_buf_init(&sink.body, max_body ? max_body : DEFAULT_MAX_BODY);
	kiln_buf_init(&sink.line, lines && lines->max_line ? lines->max_line : DEFAULT_MAX_LINE);
	assert(!lines || (lines->accept && lines->line && !strpbrk(lines->accept, "\r\n")));
	snprintf(accept, sizeof(accept), "Accept: %s", lines ? lines->accept : "application/json");
	if (!timeout_ms)
		timeout_ms = DEFAULT_TIMEOUT_MS;
	if (trust && trust->reuse) {
		h = trust->reuse;
		curl_easy_reset(h); /* options only: the connection and caches stay */
	} else {
		h = curl_easy_init();
	}
	if (!h) {
		rc = kiln_fail(KILN_ERROR, "curl: cannot create a handle");
		goto cleanup;
	}
	sink.h = h;
	if (!(tmp = curl_slist_append(headers, accept))) {
		rc = kiln_fail(KILN_ERROR, "out of memory");
		goto cleanup;
	}
	headers = tmp;
	if (bearer_token) {
		if (!bearer_token[0] || !header_value_valid(bearer_token) ||
		    strlen(bearer_token) > sizeof(auth) - 32) {
			rc = kiln_fail(KILN_EINVAL, "the token has invalid characters or is too long");
			goto cleanup;
		}
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s", bearer_token);
		tmp = curl_slist_append(headers, auth);
		explicit_bzero(auth, sizeof(auth));
		if (!tmp) {
			rc = kiln_fail(KILN_ERROR, "out of memory");
			goto cleanup;
		}
		headers = tmp;
	}
	if (body) {
		if (!(tmp = curl_slist_append(headers, "Content-Type: application/json"))) {
			rc = kiln_fail(KILN_ERROR, "out of memory");
			goto cleanup;
		}
		headers = tmp;
	}
	if ((rc = kiln_http_apply_trust(h, trust)) < 0)
		goto cleanup;
#if LIBCURL_VERSION_NUM >= 0x075700
	/* a kept handle caches the CA store: re-read the file every 5 minutes, not every day */
	if (trust && trust->reuse)
		curl_easy_setopt(h, CURLOPT_CA_CACHE_TIMEOUT, 300L);
#endif
	if ((c = curl_easy_setopt(h, CURLOPT_URL, url)) != CURLE_OK ||
	    (c = curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https")) != CURLE_OK ||
	    (c = curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L)) != CURLE_OK ||
	    (c = curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf)) != CURLE_OK ||
	    (c = curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms)) != CURLE_OK ||
	    (c = curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
				  timeout_ms < CONNECT_TIMEOUT_MS ? timeout_ms : CONNECT_TIMEOUT_MS)) != CURLE_OK ||
	    (c = curl_easy_setopt(h, CURLOPT_USERAGENT, "kiln/" "0.1")) != CURLE_OK ||
	    (c = curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers)) != CURLE_OK ||
	    (c = curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, body_write)) != CURLE_OK ||
	    (c = curl_easy_setopt(h, CURLOPT_WRITEDATA, &sink)) != CURLE_OK ||
	    (c = curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE,
				  (curl_off_t)sink.body.max)) != CURLE_OK ||
	    (c = curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method)) != CURLE_OK) {
		rc = kiln_fail(KILN_EINVAL, "%s %s: %s", method, url, curl_easy_strerror(c));
		goto cleanup;
	}
	if (body) {
		if ((c = curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len)) !=
			    CURLE_OK ||
		    (c = curl_easy_setopt(h, CURLOPT_POSTFIELDS, body)) != CURLE_OK) {
			rc = kiln_fail(KILN_EINVAL, "%s %s: %s", method, url, curl_easy_strerror(c));
			goto cleanup;
		}
	} else if (strcmp(method, "HEAD") == 0) {
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	} else if (strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0 ||
		   strcmp(method, "PATCH") == 0) {
		/* an empty body still says Content-Length: 0, which servers expect */
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)0);
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, "");
	}
	pin_mismatch[0] = '\0';
	c = curl_easy_perform(h);
	if (c != CURLE_OK) {
		const char *why = pin_mismatch[0] ? pin_mismatch : errbuf[0] ? errbuf :
			curl_easy_strerror(c);

		if (sink.cb_rc < 0)
			rc = sink.cb_rc; /* the callback's own message */
		else if (sink.line_toobig)
			rc = kiln_fail(KILN_ETOOBIG, "%s %s: a line of the response exceeds %zu bytes",
				       method, url, sink.line.max);
		else if (sink.toobig || c == CURLE_FILESIZE_EXCEEDED)
			rc = kiln_fail(KILN_ETOOBIG, "%s %s: response body exceeds %zu bytes", method,
				       url, sink.body.max);
		else if (c == CURLE_OPERATION_TIMEDOUT)
			rc = kiln_fail(KILN_ETIMEOUT, "%s %s: no answer within %ld ms", method, url,
				       timeout_ms);
		else
			rc = kiln_fail(KILN_ERROR, "%s %s: %s", method, url, why);
		goto cleanup;
	}
	/* an answer without a body: no write came to decide; a last line without its "\n" */
	if (sink.mode == SINK_UNDECIDED && (rc = sink_decide(&sink)) < 0)
		goto cleanup;
	if (sink.mode == SINK_LINES && sink.line.len > 0 && (rc = line_emit(&sink)) < 0)
		goto cleanup;
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &resp->status);
	{
		curl_off_t ra = 0;

		if (curl_easy_getinfo(h, CURLINFO_RETRY_AFTER, &ra) == CURLE_OK && ra > 0)
			resp->retry_after_s = ra > 86400 ? 86400 : (long)ra;
	}
	if (curl_easy_getinfo(h, CURLINFO_CONTENT_TYPE, &ctype) == CURLE_OK && ctype) {
		resp->content_type = strdup(ctype);
		if (!resp->content_type) {
			rc = kiln_fail(KILN_ERROR, "out of memory");
			goto cleanup;
		}
	}
	if (kiln_buf_puts(&sink.body, "") < 0) { /* a body, even when empty */
		rc = kiln_fail(KILN_ERROR, "out of memory");
		goto cleanup;
	}
	resp->body_len = sink.body.len;
	resp->body = kiln_buf_steal(&sink.body);
cleanup:
	if (rc < 0) {
		kiln_http_response_free(resp);
		resp->failure = pin_mismatch[0] ? KILN_HTTP_ANSWERED : failure_of(c);
		if (c == CURLE_OPERATION_TIMEDOUT && h) {
			curl_off_t connected = 0;

			/* no connection within the time: nobody there, as good as refused */
			curl_easy_getinfo(h, CURLINFO_CONNECT_TIME_T, &connected);
			if (connected == 0)
				resp->failure = KILN_HTTP_CONNECT;
		}
	}
	kiln_buf_free(&sink.body);
	kiln_buf_free(&sink.line);
	curl_slist_free_all(headers);
	if (!trust || h != trust->reuse)
		curl_easy_cleanup(h);
	return rc;
}

int kiln_http_request(struct kiln_http_response *resp, const char *method, const char *url,
		      const char *bearer_token, const char *body, size_t body_len,
		      const struct kiln_tls_trust *trust, long timeout_ms, size_t max_body)
{
	return perform(resp, method, url, bearer_token, body, body_len, trust, timeout_ms, max_body,
		       NULL);
}

int kiln_http_request_lines(struct kiln_http_response *resp, const char *method, const char *url,
			    const char *bearer_token, const char *body, size_t body_len,
			    const struct kiln_tls_trust *trust, long timeout_ms, size_t max_body,
			    const struct kiln_http_lines *lines)
{
	return perform(resp, method, url, bearer_token, body, body_len, trust, timeout_ms, max_body,
		       lines);
}

int kiln_http_request_any(struct kiln_http_response *resp, struct kiln_servers *servers,
			  const char *method, const char *path, const char *bearer_token,
			  const char *body, size_t body_len, const struct kiln_tls_trust *trust,
			  long timeout_ms, size_t max_body, const struct kiln_http_lines *lines)
{
	struct kiln_buf url;
	int rc;

	for (size_t tries = 0;; tries++) {
		kiln_buf_init(&url, 0);
		if (kiln_buf_printf(&url, "%s%s", kiln_servers_current(servers), path) < 0) {
			kiln_buf_free(&url);
			return kiln_fail(KILN_ERROR, "out of memory");
		}
		rc = perform(resp, method, url.data, bearer_token, body, body_len, trust, timeout_ms,
			     max_body, lines);
		kiln_buf_free(&url);
		if (rc >= 0 || resp->failure != KILN_HTTP_CONNECT ||
		    !kiln_servers_failover(servers, tries))
			return rc;
		kiln_http_response_free(resp);
	}
}

void kiln_http_response_free(struct kiln_http_response *resp)
{
	if (!resp)
		return;
	free(resp->body);
	free(resp->content_type);
	memset(resp, 0, sizeof(*resp));
}

int kiln_token_read_file(char **out, const char *path)
{
	char buf[TOKEN_FILE_MAX + 1];
	size_t len = 0, start = 0;
	char *tok;
	int fd, rc = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return kiln_fail(errno == ENOENT ? KILN_ENOTFOUND : KILN_ERROR, "token file %s: %s",
				 path, strerror(errno));
	while (len < sizeof(buf)) {
		ssize_t n = read(fd, buf + len, sizeof(buf) - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = kiln_fail(KILN_ERROR, "token file %s: %s", path, strerror(errno));
			goto cleanup;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (len > TOKEN_FILE_MAX) {
		rc = kiln_fail(KILN_ETOOBIG, "token file %s: larger than %d bytes", path,
			       TOKEN_FILE_MAX);
		goto cleanup;
	}
	while (start < len && isspace((unsigned char)buf[start]))
		start++;
	while (len > start && isspace((unsigned char)buf[len - 1]))
		len--;
	if (len == start) {
		rc = kiln_fail(KILN_EINVAL, "token file %s is empty", path);
		goto cleanup;
	}
	for (size_t i = start; i < len; i++) {
		unsigned char ch = (unsigned char)buf[i];

		if (ch < 0x21 || ch == 0x7f) {
			rc = kiln_fail(KILN_EINVAL,
				       "token file %s: the token has whitespace or control characters",
				       path);
			goto cleanup;
		}
	}
	tok = strndup(buf + start, len - start);
	if (!tok) {
		rc = kiln_fail(KILN_ERROR, "out of memory");
		goto cleanup;
	}
	*out = tok;
cleanup:
	explicit_bzero(buf, sizeof(buf));
	close(fd);
	return rc;
}
