/* SPDX-License-Identifier: Apache-2.0 */
/* GET /metrics' content: the fleet's BMC, health, agent and GPU state, and kilnd's own, as
 * Prometheus families (docs/metrics.md lists them and their cardinality). */
#ifndef KILND_METRICS_H
#define KILND_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

struct metrics_options {
	int silent_intervals;       /* [health] hung_intervals: an agent silent for more than
				     * this many report intervals exports no agent series */
	int64_t default_interval_s; /* [health] agent_interval: for a report without one */
	/* The nodes to export: 1 to take the node, NULL for all. */
	int (*want)(void *ud, const char *node);
	void *want_ud;
};

/* Cardinality bounds (docs/metrics.md). */
#define METRICS_SENSORS_MAX 64       /* BMC sensors exported per node */
#define METRICS_GPUS_MAX 64          /* GPUs per node (INGEST_GPUS_MAX) */
#define METRICS_TOOLKITS_MAX 8       /* CUDA toolkits per node */
#define METRICS_THROTTLE_MAX 16      /* clock event reasons per GPU */

/*
 * The nodes' series kept between scrapes (one per kilnd, shared by the API's threads): per
 * node, the series made from its BMC sensors and inventory and those made from its agent's
 * report, each family's lines a compressed block, made again when the node's markers in the
 * store move (another kilnd on the same store may have written them). Its size follows the
 * fleet: a node's blocks are bounded by the cardinality bounds above, and a node deleted is
 * dropped at the next scrape.
 */
struct metrics_cache;

int metrics_cache_new(struct metrics_cache **out);
void metrics_cache_free(struct metrics_cache *c); /* accepts NULL; no scrape may be open */

/*
 * Keeps c up to date between scrapes: a thread that makes every node's blocks at once, then
 * every every_s seconds makes again those of the nodes whose markers moved (opt->want must
 * be NULL), at most a few hundred nodes a hold of the cache's lock, through its own store
 * handle on store_target (what store_open takes). A scrape then finds little left to make,
 * however often the agents report. Once every node was made, it makes nothing while no
 * scrape came for idle_s seconds (0: it goes on). A failure is tried again at the next round
 * (a scrape reports its own). Stopped by metrics_cache_free. Returns 0 or an error.
 */
int metrics_cache_warm(struct metrics_cache *c, const char *store_target,
		       const struct metrics_options *opt, int64_t every_s, int64_t idle_s);

struct metrics_cache_stats {
	size_t nodes;            /* nodes kept */
	size_t bytes;            /* their compressed blocks */
	uint64_t bmc_renders;    /* times a node's BMC series were made, since the start */
	uint64_t report_renders; /* times a node's report series were made */
};
void metrics_cache_stats(struct metrics_cache *c, struct metrics_cache_stats *out);

/*
 * One scrape: metrics_scrape_open reads the store (every node's short columns, the Xid
 * counts, and the long columns of the nodes whose markers moved, to make their blocks again)
 * and holds what the answer needs; metrics_scrape_read then writes the answer piece by piece
 * (family after family, each node's lines in name order, kilnd's own families last), plain
 * text or gzip, without reading the store or holding the whole text. Returns 0, or a
 * negative code with the message set.
 */
struct metrics_scrape;

int metrics_scrape_open(struct metrics_scrape **out, struct metrics_cache *c, struct store *st,
			const struct metrics_options *opt, int64_t now, int gzip);
/* Up to max bytes of the answer into buf, *out_n of them; 0 bytes once it is all written. */
int metrics_scrape_read(struct metrics_scrape *s, char *buf, size_t max, size_t *out_n);
void metrics_scrape_free(struct metrics_scrape *s); /* accepts NULL */

#endif
