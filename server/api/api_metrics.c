/* SPDX-License-Identifier: Apache-2.0 */
/* GET /metrics: the Prometheus exposition of the fleet (metrics/metrics.c), gzipped when the
 * scraper asks, for a range of nodes with ?range=NODERANGE. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <zlib.h>

#include "api/handlers.h"
#include "kiln/error.h"
#include "kiln/noderange.h"
#include "metrics/metrics.h"

/* 10,000 nodes of 8 GPUs are ~70 MB of text: the cap leaves room, and stops a runaway. */
#define METRICS_TEXT_MAX (512u * 1024 * 1024)

static struct api_metrics_config config = { .hung_intervals = 3, .agent_interval_s = 30 };

void api_metrics_configure(const struct api_metrics_config *cfg)
{
	config = *cfg;
}

int api_metrics_loopback_open(void)
{
	return config.allow_unauthenticated_loopback;
}

/* 1 when an Accept-Encoding value takes gzip (not with q=0). */
static int accepts_gzip(const char *h)
{
	while (h && *h) {
		size_t n = strcspn(h, ",");
		const char *p = h, *end = h + n, *semi;

		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		semi = memchr(p, ';', (size_t)(end - p));
		if ((semi ? semi : end) - p >= 4 && strncasecmp(p, "gzip", 4) == 0 &&
		    (p + 4 == (semi ? semi : end) || p[4] == ' ')) {
			const char *q = semi ? strstr(semi, "q=") : NULL;

			return !q || q >= end || strtod(q + 2, NULL) > 0;
		}
		h = *end ? end + 1 : end;
	}
	return 0;
}

/* text[0..len) gzipped into *out (malloc'd, *out_len bytes). Level 1: a scrape of 70 MB
 * compresses in well under a second and still shrinks ~15 times (tests/bench/RESULTS.md). */
static int gzip_text(char **out, size_t *out_len, const char *text, size_t len)
{
	z_stream z = { 0 };
	size_t cap = deflateBound(&z, len) + 64;
	char *buf;
	int zr;

	if (deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return kiln_fail(KILN_ERROR, "metrics: zlib: deflateInit2 failed");
	cap = deflateBound(&z, len) + 64;
	buf = malloc(cap);
	if (!buf) {
		deflateEnd(&z);
		return kiln_fail(KILN_ERROR, "metrics: out of memory");
	}
	z.next_in = (Bytef *)(uintptr_t)text;
	z.avail_in = (uInt)len;
	z.next_out = (Bytef *)buf;
	z.avail_out = (uInt)cap;
	zr = deflate(&z, Z_FINISH);
	*out_len = z.total_out;
	deflateEnd(&z);
	if (zr != Z_STREAM_END) {
		free(buf);
		return kiln_fail(KILN_ERROR, "metrics: zlib: deflate failed (%d)", zr);
	}
	*out = buf;
	return 0;
}

static int range_want(void *ud, const char *node)
{
	return api_fleet_range_has(ud, node);
}

void api_metrics_get(struct api_ctx *c)
{
	const char *range = api_query(c, "range");
	const char *enc = MHD_lookup_connection_value(c->conn, MHD_HEADER_KIND,
						      MHD_HTTP_HEADER_ACCEPT_ENCODING);
	struct kiln_nodelist want = { 0 };
	struct metrics_options opt = { .silent_intervals = config.hung_intervals,
				       .default_interval_s = config.agent_interval_s };
	struct expo e;
	char *body = NULL;
	size_t len = 0;
	int rc, gz = accepts_gzip(enc);

	expo_init(&e, METRICS_TEXT_MAX);
	if (range && *range) {
		if (api_range_expand(c, &want, range, API_RANGE_SORTED) < 0)
			goto cleanup;
		opt.want = range_want;
		opt.want_ud = &want;
	}
	if ((rc = metrics_write(&e, c->st, &opt, (int64_t)time(NULL))) < 0) {
		api_fail_code(c, rc, NULL);
		goto cleanup;
	}
	if (gz) {
		if ((rc = gzip_text(&body, &len, e.out.data ? e.out.data : "", e.out.len)) < 0) {
			api_fail_code(c, rc, NULL);
			goto cleanup;
		}
	} else {
		len = e.out.len;
		body = kiln_buf_steal(&e.out);
	}
	c->response = MHD_create_response_from_buffer(len, body ? body : (char *)"",
						      body ? MHD_RESPMEM_MUST_FREE
							   : MHD_RESPMEM_PERSISTENT);
	if (!c->response) {
		free(body);
		api_fail(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
		goto cleanup;
	}
	MHD_add_response_header(c->response, MHD_HTTP_HEADER_CONTENT_TYPE,
				"text/plain; version=0.0.4; charset=utf-8");
	MHD_add_response_header(c->response, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	MHD_add_response_header(c->response, MHD_HTTP_HEADER_VARY, "Accept-Encoding");
	if (gz)
		MHD_add_response_header(c->response, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
	c->status = MHD_HTTP_OK;
cleanup:
	expo_free(&e);
	kiln_nodelist_free(&want);
}
