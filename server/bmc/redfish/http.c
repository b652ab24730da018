/* SPDX-License-Identifier: Apache-2.0 */
/* The Redfish driver's event loop: one thread, one curl multi handle, every BMC's requests. */
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>
#include <sodium.h>

#include "bmc/redfish/budget.h"
#include "bmc/redfish/internal.h"
#include "kiln/error.h"
#include "kiln/http.h"
#include "kiln/parse.h"

#define RF_HEADER_MAX 4096
#define RF_CA_CHECK_MS 1000           /* a CA file's stat, to see it changed, at most this often */

struct rf_ca {
	struct rf_ca *next;           /* the bucket's chain */
	char *path;
	X509_STORE *store;            /* NULL: the file did not load; curl reads it (and says why) */
	struct stat st;               /* of the file as loaded */
	int64_t checked_ms;
};

struct rf_request {
	struct rf_op *op;
	struct rf_step *step;
	CURL *easy;
	CURLM *multi;                 /* the shard's multi handle it was added to, or NULL */
	struct curl_slist *headers;
	struct kiln_buf body;
	size_t cap;                   /* the body's cap: its kind's, within the driver's max_body */
	int too_big;
	char errbuf[CURL_ERROR_SIZE];
	char *location, *etag, *token;
	long retry_after_s;
	int handshake;                /* counted in the driver's handshaking */
	struct kiln_tls_pin pin;      /* a pinned node's certificate check, per connection */
};

int64_t rf_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* BMCs close idle connections after a while (kiln-bmcsim 60 s, some BMCs sooner): past this,
 * a request is counted as a new handshake so that a sweep's reconnects stay under the cap. */
#define RF_KEPT_MS 20000

/* 1 when b's next request probably reuses a kept connection (no TLS handshake): it got an
 * answer recently, before a BMC or curl would have closed an idle connection. */
static int rf_bmc_connected(const struct redfish_bmc *b)
{
	return b->answered_ms > 0 && rf_now_ms() - b->answered_ms < RF_KEPT_MS;
}

/* A BMC whose last request timed out reconnects outside the cap: a hung one would hold a slot
 * for its whole timeout, and its timeout should overlap the healthy BMCs' answers, not wait
 * behind their handshakes (a batch starts such BMCs first, yet a sweep's hung 1 % started up
 * to 0.5 s late and ended it). */
int rf_handshake_counted(const struct redfish_bmc *b)
{
	return !b->plain_http && !b->timed_out && !rf_bmc_connected(b);
}

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
	struct rf_request *req = ud;
	if (kiln_buf_append(&req->body, p, size * n) < 0) {
		req->too_big = 1;
		return 0; /* curl aborts the transfer */
	}
	return size * n;
}

/* Copies a header's value (trimmed) when name matches. */
static void header_take(char **dst, const char *line, size_t len, const char *name)
{
	size_t nl = strlen(name);
	if (len <= nl + 1 || strncasecmp(line, name, nl) != 0 || line[nl] != ':')
		return;
	const char *v = line + nl + 1;
	const char *end = line + len;
	while (v < end && (*v == ' ' || *v == '\t'))
		v++;
	while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
		end--;
	free(*dst);
	*dst = strndup(v, (size_t)(end - v));
}

static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
	struct rf_request *req = ud;
	size_t len = size * n;
	if (len > RF_HEADER_MAX)
		return len; /* ignore absurd headers rather than storing them */
	header_take(&req->location, p, len, "Location");
	header_take(&req->etag, p, len, "ETag");
	header_take(&req->token, p, len, "X-Auth-Token");
	char *ra = NULL;
	header_take(&ra, p, len, "Retry-After");
	if (ra) {
		int v;
		if (kiln_parse_int(&v, ra, 0, 3600) == 0)
			req->retry_after_s = v;
		free(ra);
	}
	return len;
}

/* The connection is up (TLS handshake done): the request leaves the handshake count. */
static int on_prereq(void *ud, char *conn_primary_ip, char *conn_local_ip, int conn_primary_port,
		     int conn_local_port)
{
	struct rf_request *req = ud;
	(void)conn_primary_ip;
	(void)conn_local_ip;
	(void)conn_primary_port;
	(void)conn_local_port;
	if (req->handshake && req->op && req->op->rf) {
		req->handshake = 0;
		req->op->rf->handshaking--;
	}
	return CURL_PREREQFUNC_OK;
}

/* --- CA files, loaded once ------------------------------------------------------------- */

static unsigned ca_hash(const char *s)
{
	unsigned h = 2166136261u;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h % RF_CA_BUCKETS;
}

static int ca_same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* (Re)loads ca's file when it changed on disk (looked at once a second at most). */
static void ca_refresh(struct rf_ca *ca)
{
	struct stat st;
	int64_t now = rf_now_ms();

	if (ca->checked_ms && now - ca->checked_ms < RF_CA_CHECK_MS)
		return;
	ca->checked_ms = now;
	if (stat(ca->path, &st) < 0) {
		X509_STORE_free(ca->store); /* connections made with it keep their reference */
		ca->store = NULL;
		return;
	}
	if (ca->store && ca_same_file(&st, &ca->st))
		return;
	X509_STORE_free(ca->store);
	ca->store = X509_STORE_new();
	/* as curl sets up the store it loads from CAINFO */
	if (!ca->store || X509_STORE_load_file(ca->store, ca->path) != 1 ||
	    X509_STORE_set_flags(ca->store, X509_V_FLAG_TRUSTED_FIRST | X509_V_FLAG_PARTIAL_CHAIN) != 1) {
		X509_STORE_free(ca->store);
		ca->store = NULL;
		return;
	}
	ca->st = st;
}

/* b's loaded CA file, or NULL (curl then loads it per connection as CAINFO). */
static struct rf_ca *ca_get(struct redfish *rf, struct redfish_bmc *b)
{
	if (!b->ca) {
		unsigned h = ca_hash(b->ca_file);
		struct rf_ca *ca = rf->cas[h];
		while (ca && strcmp(ca->path, b->ca_file) != 0)
			ca = ca->next;
		if (!ca) {
			ca = calloc(1, sizeof(*ca));
			if (!ca || !(ca->path = strdup(b->ca_file))) {
				free(ca);
				return NULL;
			}
			ca->next = rf->cas[h];
			rf->cas[h] = ca;
		}
		b->ca = ca;
	}
	ca_refresh(b->ca);
	return b->ca->store ? b->ca : NULL;
}

void rf_ca_free_all(struct redfish *rf)
{
	for (int i = 0; i < RF_CA_BUCKETS; i++) {
		while (rf->cas[i]) {
			struct rf_ca *ca = rf->cas[i];
			rf->cas[i] = ca->next;
			X509_STORE_free(ca->store);
			free(ca->path);
			free(ca);
		}
	}
}

/* The connection's SSL_CTX trusts the shared store (curl loaded none: CAINFO is unset). A
 * store gone since the request started leaves the context's empty one: verification fails. */
static CURLcode on_ssl_ctx(CURL *h, void *sslctx, void *ud)
{
	struct rf_ca *ca = ud;
	(void)h;
	if (ca->store)
		SSL_CTX_set1_cert_store(sslctx, ca->store); /* takes a reference */
	return CURLE_OK;
}

/* Verification against b's CA file through the shared store: 0, or < 0 when it is not
 * loaded (the caller lets curl load the file). */
static int trust_ca_store(CURL *h, struct redfish *rf, struct redfish_bmc *b)
{
	struct rf_ca *ca = ca_get(rf, b);
	if (!ca)
		return -1;
	if (curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_CAINFO, NULL) != CURLE_OK ||
	    /* curl reuses a kept connection (or TLS session) only for a request whose CA file
	     * and CA path match; with CAINFO unset that would join BMC entries that trust
	     * different files. The file's name as CA path keeps them apart: OpenSSL only
	     * records a hashed-directory lookup (nothing is read), and on_ssl_ctx replaces the
	     * store that holds it. */
	    curl_easy_setopt(h, CURLOPT_CAPATH, ca->path) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_CA_CACHE_TIMEOUT, 0L) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_SSL_CTX_FUNCTION, on_ssl_ctx) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_SSL_CTX_DATA, (void *)ca) != CURLE_OK) {
		curl_easy_setopt(h, CURLOPT_SSL_CTX_FUNCTION, NULL);
		return -1;
	}
	return 0;
}

void rf_request_free(struct rf_request *req)
{
	if (!req)
		return;
	if (req->handshake && req->op && req->op->rf)
		req->op->rf->handshaking--;
	if (req->easy) {
		if (req->multi)
			curl_multi_remove_handle(req->multi, req->easy);
		curl_easy_cleanup(req->easy);
	}
	curl_slist_free_all(req->headers);
	kiln_buf_free(&req->body);
	free(req->location);
	free(req->etag);
	free(req->token);
	free(req);
}

/* The URL for path: our base joined with the path; an absolute URL (a Location header)
 * keeps only its path, so that a BMC cannot send us to another host. */
static int url_build(struct kiln_buf *out, const struct redfish_bmc *b, const char *path)
{
	if (strncasecmp(path, "http://", 7) == 0 || strncasecmp(path, "https://", 8) == 0) {
		const char *rest = strstr(path, "://") + 3;
		path = strchr(rest, '/');
		if (!path)
			path = "/";
	}
	if (path[0] != '/')
		return kiln_fail(KILN_EPROTO, "link '%.80s' is not a path", path);
	if (kiln_buf_puts(out, b->base_url) < 0 || kiln_buf_puts(out, path) < 0)
		return kiln_fail(KILN_ETOOBIG, "URL too long");
	return 0;
}

/* What a step's answer may hold: a log page more than a resource (budget.h), and never more
 * than the driver's max_body. A hostile BMC's 100 MB or endless body ends there. */
static size_t body_cap(const struct redfish *rf, const struct rf_step *step)
{
	size_t cap = step->flags & RF_LOG_PAGE ? RF_BODY_LOG_MAX : RF_BODY_RESOURCE_MAX;

	return rf->cfg.max_body < cap ? rf->cfg.max_body : cap;
}

/* Appends "Authorization: Basic ..." for user and the sealed password to *headers. Not
 * CURLOPT_USERNAME/PASSWORD: curl copies those into the connection, which its cache keeps
 * (with the password in clear) as long as the BMC keeps it alive. curl wipes the list's
 * copy when it frees it (secret_curl_init); the local ones are wiped here. */
static int basic_header(struct curl_slist **headers, const char *user,
			const struct secret_sealed *sealed)
{
	static const char prefix[] = "Authorization: Basic ";
	char pair[1024];
	char line[sizeof(prefix) + sodium_base64_ENCODED_LEN(sizeof(pair),
							     sodium_base64_VARIANT_ORIGINAL)];
	char *password = NULL;
	struct curl_slist *grown;
	int n, rc;

	if ((rc = secret_unseal(&password, sealed)) < 0)
		return rc;
	n = snprintf(pair, sizeof(pair), "%s:%s", user, password ? password : "");
	secret_free_string(password);
	if (n < 0 || (size_t)n >= sizeof(pair)) {
		rc = kiln_fail(KILN_EINVAL, "BMC user and password too long for Basic");
		goto cleanup;
	}
	memcpy(line, prefix, sizeof(prefix) - 1);
	sodium_bin2base64(line + sizeof(prefix) - 1, sizeof(line) - (sizeof(prefix) - 1),
			  (const unsigned char *)pair, (size_t)n, sodium_base64_VARIANT_ORIGINAL);
	grown = curl_slist_append(*headers, line);
	if (!grown)
		rc = kiln_fail(KILN_ERROR, "out of memory");
	else
		*headers = grown;
cleanup:
	sodium_memzero(pair, sizeof(pair));
	sodium_memzero(line, sizeof(line));
	return rc;
}

int rf_request_start(struct rf_op *op, struct rf_step *step)
{
	struct redfish *rf = op->rf;
	struct redfish_bmc *b = op->bmc;
	struct rf_request *req = calloc(1, sizeof(*req));
	struct kiln_buf url;
	struct kiln_buf hdr;
	int rc = KILN_ERROR;

	kiln_buf_init(&url, 8192);
	kiln_buf_init(&hdr, 8192);
	if (!req)
		goto cleanup;
	req->op = op;
	req->step = step;
	req->retry_after_s = -1;
	req->cap = body_cap(rf, step);
	kiln_buf_init(&req->body, req->cap);
	req->easy = curl_easy_init();
	if (!req->easy)
		goto cleanup;
	if ((rc = url_build(&url, b, step->path)) < 0)
		goto cleanup;
	rc = KILN_ERROR;

	CURL *h = req->easy;
	curl_easy_setopt(h, CURLOPT_URL, url.data);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, step->method);
	if (strcmp(step->method, "GET") == 0)
		curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_PRIVATE, req);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, req->errbuf);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, req);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, req);
	curl_easy_setopt(h, CURLOPT_PREREQFUNCTION, on_prereq);
	curl_easy_setopt(h, CURLOPT_PREREQDATA, req);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, rf->cfg.connect_timeout_ms);
	/* A power-state read is quick on a healthy BMC: a hung one must not hold a fleet-wide
	 * sweep for the request timeout, first contact included (the service root, Systems and
	 * the system are GETs like the read itself; the handshake waits for its slot before the
	 * transfer starts). A login keeps the full timeout: a session the BMC creates after we
	 * gave up on its answer would be one we hold no token for and cannot delete. */
	long timeout = rf->cfg.request_timeout_ms;
	if (op->op.kind == BMC_OP_POWER_GET && !(step->flags & RF_LOGIN))
		timeout = rf->cfg.status_timeout_ms;
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout);
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	/* a Content-Length over the cap ends the transfer before any of it is read */
	curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)req->cap);
	/* libcurl (7.88) prunes its DNS cache, one entry per host:port, at the end of every
	 * transfer by walking all of it: over 10,000 BMCs that walk took most of kilnd's CPU
	 * (perf). An address never resolves differently: cached for good, nothing to prune. */
	if (b->ip_literal)
		curl_easy_setopt(h, CURLOPT_DNS_CACHE_TIMEOUT, -1L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");

	if (!b->plain_http && b->ca_file && !b->fingerprint && !b->tls_insecure &&
	    trust_ca_store(h, rf, b) == 0) {
		/* the node's CA file, loaded once for every connection that trusts it */
	} else if (!b->plain_http) {
		struct kiln_tls_trust trust = {
			.ca_file = b->ca_file,
			.fingerprint = b->fingerprint,
			.insecure = b->tls_insecure,
			.system_ca = !b->ca_file && !b->fingerprint,
		};
		req->pin.fingerprint = b->tls_insecure ? NULL : b->fingerprint;
		if ((rc = kiln_http_apply_trust_pin(h, &trust, req->pin.fingerprint ? &req->pin
										    : NULL)) < 0)
			goto cleanup;
		rc = KILN_ERROR;
	}

	req->headers = curl_slist_append(NULL, "Accept: application/json");
	req->headers = curl_slist_append(req->headers, "OData-Version: 4.0");
	if (step->body) {
		req->headers = curl_slist_append(req->headers, "Content-Type: application/json");
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, step->body);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(step->body));
	}
	if (step->if_match) {
		kiln_buf_reset(&hdr);
		kiln_buf_printf(&hdr, "If-Match: %s", step->if_match);
		req->headers = curl_slist_append(req->headers, hdr.data);
	}
	if (!(step->flags & (RF_NOAUTH | RF_LOGIN))) {
		if (b->token) {
			kiln_buf_reset(&hdr);
			kiln_buf_printf(&hdr, "X-Auth-Token: %s", b->token);
			req->headers = curl_slist_append(req->headers, hdr.data);
		} else if (b->user && (rc = basic_header(&req->headers, b->user, &b->password)) < 0) {
			goto cleanup;
		}
	}
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, req->headers);

	if (curl_multi_add_handle(rf->shards[b->shard].multi, h) != CURLM_OK) {
		rc = kiln_fail(KILN_ERROR, "curl_multi_add_handle failed");
		goto cleanup;
	}
	req->multi = rf->shards[b->shard].multi;
	op->inflight = req;
	rf->inflight++;
	if (rf_handshake_counted(b)) {
		req->handshake = 1;
		rf->handshaking++;
	}
	req = NULL;
	rc = 0;
cleanup:
	if (req && rc < 0 && !kiln_error_last()[0])
		kiln_fail(rc, "cannot start request");
	if (req)
		req->op = NULL; /* not added to the multi handle */
	rf_request_free(req);
	kiln_buf_free(&url);
	kiln_buf_free(&hdr);
	return rc;
}

/* A finished transfer: builds the reply and lets session.c and the step's handler decide. */
void rf_loop_complete(struct redfish *rf, CURLMsg *msg)
{
	struct rf_request *req = NULL;
	curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&req);
	struct rf_op *op = req->op;
	struct rf_step *step = req->step;
	struct rf_reply r = {.path = step->path, .retry_after_s = req->retry_after_s};
	char cerr[CURL_ERROR_SIZE + 64];

	rf->inflight--;
	op->inflight = NULL;
	if (op == op->bmc->background && op->bmc->foreground)
		rf->walk_due_ms = 0; /* the operation held for this request goes now (op_held) */
	r.curl_code = (int)msg->data.result;
	if (msg->data.result == CURLE_OK)
		curl_easy_getinfo(req->easy, CURLINFO_RESPONSE_CODE, &r.status);
	op->bmc->answered_ms = r.status != 0 ? rf_now_ms() : 0; /* curl keeps its connection */
	op->bmc->timed_out = msg->data.result == CURLE_OPERATION_TIMEDOUT;
	if (req->too_big || msg->data.result == CURLE_FILESIZE_EXCEEDED) {
		r.status = 0;
		snprintf(cerr, sizeof(cerr), "response body over the %zu-byte cap for %s",
			 req->cap, step->flags & RF_LOG_PAGE ? "a log page" : "a resource");
		r.curl_error = cerr;
	} else if (msg->data.result != CURLE_OK && req->pin.mismatch) {
		char want[65];

		if (kiln_http_fingerprint_normalize(want, req->pin.fingerprint) < 0)
			snprintf(want, sizeof(want), "?");
		snprintf(cerr, sizeof(cerr),
			 "TLS certificate refused: the BMC shows sha256:%s, the node is pinned to"
			 " sha256:%s", req->pin.seen[0] ? req->pin.seen : "(none)", want);
		r.curl_error = cerr;
		r.tls_pin_mismatch = 1;
	} else if (msg->data.result != CURLE_OK) {
		if (msg->data.result == CURLE_PARTIAL_FILE)
			snprintf(cerr, sizeof(cerr), "truncated response body (%s)", req->errbuf);
		else
			snprintf(cerr, sizeof(cerr), "%s",
				 req->errbuf[0] ? req->errbuf
						: curl_easy_strerror(msg->data.result));
		r.curl_error = cerr;
	}
	r.body = req->body.data ? req->body.data : "";
	r.body_len = req->body.len;
	r.location = req->location;
	r.etag = req->etag;
	r.token = req->token;

	int rc = rf_reply_process(op, step, &r);
	/* a body near its cap (a hostile BMC's, most likely) leaves its memory to the system */
	int trim = req->body.len >= RF_BODY_RESOURCE_MAX;
	json_decref(r.json);
	rf_json_release(r.parse_cost);
	rf_request_free(req);
	if (trim && r.parse_cost < RF_TRIM_AFTER)
		malloc_trim(0);
	if (rc < 0) {
		rf_op_fail(op, rc, kiln_error_last());
		return;
	}
	rf_op_advance(op);
}
