/* SPDX-License-Identifier: Apache-2.0 */
/* kilnd's own counters for GET /metrics: poll durations, BMC errors, ingest results, queue
 * depths, remediation actions. Lock-free (C11 atomics): any thread adds, a scrape reads. */
#ifndef KILND_METRICS_COUNTERS_H
#define KILND_METRICS_COUNTERS_H

#include <stdint.h>

#include "metrics/expo.h"

enum metrics_protocol { METRICS_REDFISH = 0, METRICS_IPMI, METRICS_PROTOCOLS };

enum metrics_ingest { METRICS_INGEST_STORED = 0, METRICS_INGEST_DUPLICATE,
		      METRICS_INGEST_IDENTITY, METRICS_INGEST_INVALID, METRICS_INGEST_QUEUE_FULL,
		      METRICS_INGEST_FAILED, METRICS_INGEST_KINDS };

enum metrics_remediation { METRICS_REMEDIATION_STARTED = 0, METRICS_REMEDIATION_DONE,
			   METRICS_REMEDIATION_FAILED, METRICS_REMEDIATION_LIMITED,
			   METRICS_REMEDIATION_KINDS };

/* One BMC poll (a background read) that took seconds; rc its outcome (0, or a kiln error
 * code, counted by kind: timeout, auth, tls, busy, protocol, other). */
void metrics_poll_observe(enum metrics_protocol proto, double seconds, int rc);
void metrics_ingest_count(enum metrics_ingest result);
void metrics_remediation_count(enum metrics_remediation what);
/* Round trips to the database server the ingest writer made (store_round_trips()). */
void metrics_ingest_round_trips_add(int64_t n);
/* The ingest writer's queue: reports waiting now. */
void metrics_ingest_queue_set(int64_t depth);

/* Writes kilnd's own families (build info included). */
int metrics_counters_write(struct expo *e);

#endif
