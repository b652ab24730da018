/* SPDX-License-Identifier: Apache-2.0 */
/* GET /metrics' content: the fleet's BMC, health, agent and GPU state, and kilnd's own, as
 * Prometheus families (docs/metrics.md lists them and their cardinality). */
#ifndef KILND_METRICS_H
#define KILND_METRICS_H

#include <stdint.h>

#include "metrics/expo.h"
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
 * Writes every node's families (those opt wants) and kilnd's own into e, then expo_finish.
 * Reads the store only (never a BMC): one query over the nodes and one over the Xid events.
 * Returns 0, or a negative code with the message set.
 */
int metrics_write(struct expo *e, struct store *st, const struct metrics_options *opt,
		  int64_t now);

#endif
