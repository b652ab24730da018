/* SPDX-License-Identifier: Apache-2.0 */
/* HTTP client helpers over libcurl for the CLI and the agent: JSON requests to kilnd,
 * TLS trust by CA file or pinned SHA-256 certificate fingerprint. */
#ifndef KILN_HTTP_H
#define KILN_HTTP_H

#include <stddef.h>

#include <curl/curl.h>

struct kiln_tls_trust {
	const char *ca_file;     /* PEM file of trusted CA(s), or NULL */
	const char *fingerprint; /* SHA-256 of the peer certificate (DER), hex with or without
				  * colons, optionally prefixed "sha256:" / "SHA256:"; or NULL */
	int insecure;            /* no verification at all (explicit opt-in only) */
	int system_ca;           /* also load the system CA bundle (default off) */
	CURL *reuse;             /* optional: a handle the caller keeps (and cleans up) so that
				  * kiln_http_request reuses its connection, TLS session and CA
				  * store between requests; NULL: a new handle per request */
};

/* Why a request got no HTTP answer, as far as a caller can act on it. */
enum kiln_http_failure {
	KILN_HTTP_ANSWERED = 0,  /* an answer came (or the failure is none of these) */
	KILN_HTTP_CONNECT,       /* nothing listens there, or the host is not found */
	KILN_HTTP_UNTRUSTED,     /* TLS: the certificate is not trusted (no CA, no pin) */
	KILN_HTTP_TLS_HANDSHAKE, /* TLS: the handshake failed (a plain HTTP port?) */
	KILN_HTTP_NOT_HTTP,      /* plain HTTP: closed or garbled (a TLS-only port?) */
};

struct kiln_http_response {
	long status;          /* HTTP status, 0 when no response */
	char *body;           /* NUL-terminated, capped by the max given to the request */
	size_t body_len;
	char *content_type;   /* or NULL */
	long retry_after_s;   /* the answer's Retry-After in seconds, 0 when none */
	enum kiln_http_failure failure; /* set when the request failed without an answer */
};

/*
 * Applies trust to a curl easy handle. With a fingerprint, the peer certificate is
 * checked against it during the handshake (before any request byte is sent) and the
 * connection fails on a mismatch. Returns 0 or KILN_EINVAL (bad fingerprint text).
 * A fingerprint replaces CA and host name checks; without one, only ca_file (and, with
 * system_ca, the system store) is trusted. trust->fingerprint is not copied: it must stay
 * valid while h makes connections.
 */
int kiln_http_apply_trust(CURL *h, const struct kiln_tls_trust *trust);

/* One connection's pin check, for callers that must tell a changed certificate from other
 * failures (the Redfish driver): the handshake fills mismatch and seen. */
struct kiln_tls_pin {
	const char *fingerprint; /* the pin, as in kiln_tls_trust (not copied) */
	int mismatch;            /* 1: the peer's certificate did not match */
	char seen[65];           /* its SHA-256, lowercase hex, when mismatch ("" if none) */
};

/* kiln_http_apply_trust with trust->fingerprint taken from pin (which must stay valid while
 * h makes connections) and its outcome recorded there. pin NULL: kiln_http_apply_trust. */
int kiln_http_apply_trust_pin(CURL *h, const struct kiln_tls_trust *trust,
			      struct kiln_tls_pin *pin);

/* Normalises a fingerprint to 64 lowercase hex chars in out[65]; KILN_EINVAL otherwise. */
int kiln_http_fingerprint_normalize(char out[65], const char *text);

/*
 * One blocking request: method to url, optional bearer token, optional body (JSON,
 * sent with Content-Type: application/json). The response body is capped at max_body
 * bytes (KILN_ETOOBIG beyond). Transport failures return KILN_ERROR/KILN_ETIMEOUT with
 * curl's message; any HTTP status is a success at this level (check resp->status).
 * timeout_ms 0 means 30 s; max_body 0 means 16 MiB. resp->body is never NULL on success.
 * The caller frees resp with kiln_http_response_free (also safe after a failure).
 */
int kiln_http_request(struct kiln_http_response *resp, const char *method, const char *url,
		      const char *bearer_token, const char *body, size_t body_len,
		      const struct kiln_tls_trust *trust, long timeout_ms, size_t max_body);

/* What the callbacks of a line-by-line request are told before the first line. */
struct kiln_http_head {
	long status;              /* 2xx */
	const char *content_type; /* as sent */
	const char *header;       /* the value of the header kiln_http_lines.header names, or
				   * NULL when the answer has none */
};

/*
 * How kiln_http_request_lines delivers a 2xx answer whose media type is accept (parameters
 * such as "; charset=utf-8" aside, case-insensitive): line by line as it arrives, each line
 * without its "\n" and a trailing "\r", NUL-terminated, empty lines skipped; a last line without
 * "\n" is delivered at the end. Pointers handed to the callbacks are valid during the call only.
 * A callback returning a negative code (with kiln_fail() set) stops the transfer, and the
 * request returns that code.
 */
struct kiln_http_lines {
	const char *accept;  /* sent as the Accept header: "application/x-ndjson" */
	const char *header;  /* a response header whose value start() gets ("X-Kiln-Nodes"), or NULL */
	size_t max_line;     /* longest line in bytes; 0 means 1 MiB; beyond: KILN_ETOOBIG */
	int (*start)(void *ud, const struct kiln_http_head *head); /* or NULL */
	int (*line)(void *ud, const char *line, size_t len);
	void *ud;
};

/*
 * kiln_http_request (same trust, timeouts and max_body, which caps the whole streamed body
 * too), asking for lines->accept: a 2xx answer of that type goes to the callbacks and
 * resp->body stays empty (""); any other answer (an error, or a 2xx of another type, e.g. the
 * application/json of a server that does not stream) is buffered in resp->body as by
 * kiln_http_request. resp->status and resp->content_type are set in both cases.
 */
int kiln_http_request_lines(struct kiln_http_response *resp, const char *method, const char *url,
			    const char *bearer_token, const char *body, size_t body_len,
			    const struct kiln_tls_trust *trust, long timeout_ms, size_t max_body,
			    const struct kiln_http_lines *lines);

/*
 * One request to path ("/api/v1/...") on the current server of servers, line by line when
 * lines is given: a server that nobody answers at (KILN_HTTP_CONNECT: the request reached no
 * kilnd, so nothing was done) is left for the next, each tried once; the one that answered
 * stays current for the next request. Otherwise as kiln_http_request(_lines).
 */
struct kiln_servers;
int kiln_http_request_any(struct kiln_http_response *resp, struct kiln_servers *servers,
			  const char *method, const char *path, const char *bearer_token,
			  const char *body, size_t body_len, const struct kiln_tls_trust *trust,
			  long timeout_ms, size_t max_body, const struct kiln_http_lines *lines);

void kiln_http_response_free(struct kiln_http_response *resp);

/* Reads a token file: trims whitespace; refuses empty files. Caller frees *out. */
int kiln_token_read_file(char **out, const char *path);

#endif
