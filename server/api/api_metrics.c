/* SPDX-License-Identifier: Apache-2.0 */
/* GET /metrics: the Prometheus exposition of the fleet (metrics/scrape.c), streamed, gzipped
 * when the scraper asks, for a range of nodes with ?range=NODERANGE. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "api/handlers.h"
#include "kiln/error.h"
#include "kiln/noderange.h"
#include "metrics/metrics.h"

/* The answer is handed to libmicrohttpd this much at a time. */
#define METRICS_BLOCK (128 * 1024)

static struct api_metrics_config config = { .hung_intervals = 3, .agent_interval_s = 30 };

/* Between scrapes the kept series are brought up to date this often: with agents reporting
 * every 30 s, a scrape then finds a sixth of the nodes to make again at most. */
#define METRICS_WARM_EVERY_S 5
/* and not while nobody scraped for this long (a Prometheus scrapes every 15 s to 1 min) */
#define METRICS_WARM_IDLE_S 600

/* The nodes' kept series: one for the process, made when kilnd starts (so that the first
 * scrape finds them made) and kept up to date while scrapes come. */
static struct metrics_cache *cache;
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

static int cache_get(struct metrics_cache **out)
{
	struct metrics_options opt = { .silent_intervals = config.hung_intervals,
				       .default_interval_s = config.agent_interval_s };
	int rc = 0;

	pthread_mutex_lock(&cache_lock);
	if (!cache && (rc = metrics_cache_new(&cache)) == 0 && config.store_target &&
	    (rc = metrics_cache_warm(cache, config.store_target, &opt, METRICS_WARM_EVERY_S,
				     METRICS_WARM_IDLE_S)) < 0) {
		metrics_cache_free(cache);
		cache = NULL;
	}
	*out = cache;
	pthread_mutex_unlock(&cache_lock);
	return rc;
}

void api_metrics_stop(void)
{
	pthread_mutex_lock(&cache_lock);
	metrics_cache_free(cache);
	cache = NULL;
	pthread_mutex_unlock(&cache_lock);
}

void api_metrics_configure(const struct api_metrics_config *cfg)
{
	struct metrics_cache *c;

	config = *cfg;
	/* a failure here is the first scrape's to report, when it tries again */
	if (cache_get(&c) < 0)
		kiln_error_clear();
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

static int range_want(void *ud, const char *node)
{
	return api_fleet_range_has(ud, node);
}

static ssize_t answer_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	size_t n;

	(void)pos;
	if (metrics_scrape_read(cls, buf, max, &n) < 0)
		return MHD_CONTENT_READER_END_WITH_ERROR; /* the scraper sees the answer cut */
	return n ? (ssize_t)n : MHD_CONTENT_READER_END_OF_STREAM;
}

static void answer_free(void *cls)
{
	metrics_scrape_free(cls);
}

void api_metrics_get(struct api_ctx *c)
{
	const char *range = api_query(c, "range");
	const char *enc = MHD_lookup_connection_value(c->conn, MHD_HEADER_KIND,
						      MHD_HTTP_HEADER_ACCEPT_ENCODING);
	struct kiln_nodelist want = { 0 };
	struct metrics_options opt = { .silent_intervals = config.hung_intervals,
				       .default_interval_s = config.agent_interval_s };
	struct metrics_cache *mc;
	struct metrics_scrape *s = NULL;
	int rc, gz = accepts_gzip(enc);

	if (range && *range) {
		if (api_range_expand(c, &want, range, API_RANGE_SORTED) < 0)
			goto cleanup;
		opt.want = range_want;
		opt.want_ud = &want;
	}
	if ((rc = cache_get(&mc)) < 0 ||
	    (rc = metrics_scrape_open(&s, mc, c->st, &opt, (int64_t)time(NULL), gz)) < 0) {
		api_fail_code(c, rc, NULL);
		goto cleanup;
	}
	c->response = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, METRICS_BLOCK,
							answer_read, s, answer_free);
	if (!c->response) {
		metrics_scrape_free(s);
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
	kiln_nodelist_free(&want);
}
