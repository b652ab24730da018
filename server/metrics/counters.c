/* SPDX-License-Identifier: Apache-2.0 */
/* kilnd's own counters: relaxed atomics, read once a scrape. */
#include <stdatomic.h>

#include "kiln/error.h"
#include "kiln/version.h"
#include "metrics/counters.h"

/* Seconds: a power read on a LAN BMC is 0.05-1 s, a slow iLO's sensors several. */
static const double poll_bounds[] = { 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30 };
#define POLL_BUCKETS (sizeof(poll_bounds) / sizeof(poll_bounds[0]))

static const char *const protocol_names[METRICS_PROTOCOLS] = { "redfish", "ipmi" };

enum { ERR_TIMEOUT, ERR_AUTH, ERR_TLS, ERR_BUSY, ERR_PROTOCOL, ERR_OTHER, ERR_KINDS };
static const char *const error_names[ERR_KINDS] = { "timeout", "auth", "tls", "busy",
						    "protocol", "other" };
static const char *const ingest_names[METRICS_INGEST_KINDS] = {
	"stored", "duplicate", "identity_refused", "invalid", "queue_full", "failed",
};
static const char *const remediation_names[METRICS_REMEDIATION_KINDS] = {
	"started", "done", "failed", "limited",
};

static struct {
	/* per bucket, not cumulative (made cumulative when written); the last is +Inf */
	atomic_uint_fast64_t buckets[METRICS_PROTOCOLS][POLL_BUCKETS + 1];
	atomic_uint_fast64_t sum_us[METRICS_PROTOCOLS];
	atomic_uint_fast64_t errors[METRICS_PROTOCOLS][ERR_KINDS];
	atomic_uint_fast64_t ingest[METRICS_INGEST_KINDS];
	atomic_uint_fast64_t remediation[METRICS_REMEDIATION_KINDS];
	atomic_int_fast64_t ingest_queue;
	atomic_uint_fast64_t ingest_round_trips;
} counters;

static int error_kind(int rc)
{
	switch (rc) {
	case KILN_ETIMEOUT: return ERR_TIMEOUT;
	case KILN_EAUTH: return ERR_AUTH;
	case KILN_ETLS: return ERR_TLS;
	case KILN_EBUSY: return ERR_BUSY;
	case KILN_EPROTO: return ERR_PROTOCOL;
	default: return ERR_OTHER;
	}
}

void metrics_poll_observe(enum metrics_protocol proto, double seconds, int rc)
{
	size_t b = 0;

	if ((unsigned)proto >= METRICS_PROTOCOLS)
		return;
	if (seconds < 0)
		seconds = 0;
	while (b < POLL_BUCKETS && seconds > poll_bounds[b])
		b++;
	atomic_fetch_add_explicit(&counters.buckets[proto][b], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&counters.sum_us[proto], (uint_fast64_t)(seconds * 1e6),
				  memory_order_relaxed);
	if (rc < 0)
		atomic_fetch_add_explicit(&counters.errors[proto][error_kind(rc)], 1,
					  memory_order_relaxed);
}

void metrics_ingest_count(enum metrics_ingest result)
{
	if ((unsigned)result < METRICS_INGEST_KINDS)
		atomic_fetch_add_explicit(&counters.ingest[result], 1, memory_order_relaxed);
}

void metrics_remediation_count(enum metrics_remediation what)
{
	if ((unsigned)what < METRICS_REMEDIATION_KINDS)
		atomic_fetch_add_explicit(&counters.remediation[what], 1, memory_order_relaxed);
}

void metrics_ingest_round_trips_add(int64_t n)
{
	if (n > 0)
		atomic_fetch_add_explicit(&counters.ingest_round_trips, (uint_fast64_t)n,
					  memory_order_relaxed);
}

void metrics_ingest_queue_set(int64_t depth)
{
	atomic_store_explicit(&counters.ingest_queue, depth, memory_order_relaxed);
}

static uint64_t load(atomic_uint_fast64_t *v)
{
	return atomic_load_explicit(v, memory_order_relaxed);
}

static int polls_write(struct expo *e)
{
	struct expo_family *f;
	int rc;

	if ((rc = expo_family(e, &f, "kiln_bmc_poll_duration_seconds", EXPO_HISTOGRAM,
			      "Time of one background BMC read by the poller (power, sensors, "
			      "log or inventory), by protocol.")) < 0)
		return rc;
	for (int p = 0; p < METRICS_PROTOCOLS; p++) {
		const char *l[] = { "protocol", protocol_names[p], NULL };
		uint64_t cum[POLL_BUCKETS + 1], n = 0;

		for (size_t b = 0; b <= POLL_BUCKETS; b++) {
			n += load(&counters.buckets[p][b]);
			cum[b] = n;
		}
		if ((rc = expo_histogram(f, l, poll_bounds, cum, POLL_BUCKETS,
					 (double)load(&counters.sum_us[p]) / 1e6)) < 0)
			return rc;
	}
	if ((rc = expo_family(e, &f, "kiln_bmc_errors_total", EXPO_COUNTER,
			      "Failed background BMC reads, by protocol and kind of error.")) < 0)
		return rc;
	for (int p = 0; p < METRICS_PROTOCOLS; p++)
		for (int k = 0; k < ERR_KINDS; k++) {
			const char *l[] = { "protocol", protocol_names[p], "kind", error_names[k],
					    NULL };

			if ((rc = expo_sample(f, NULL, l, (double)load(&counters.errors[p][k]))) < 0)
				return rc;
		}
	return 0;
}

int metrics_counters_write(struct expo *e)
{
	const char *build[] = { "version", kiln_version, "revision", kiln_revision, NULL };
	struct expo_family *f;
	int rc;

	if ((rc = expo_family(e, &f, "kiln_build_info", EXPO_INFO,
			      "kilnd's version and revision (value 1).")) < 0 ||
	    (rc = expo_sample(f, NULL, build, 1)) < 0 || (rc = polls_write(e)) < 0)
		return rc;
	if ((rc = expo_family(e, &f, "kiln_ingest_reports_total", EXPO_COUNTER,
			      "Agent reports received since kilnd started, by result.")) < 0)
		return rc;
	for (int k = 0; k < METRICS_INGEST_KINDS; k++) {
		const char *l[] = { "result", ingest_names[k], NULL };

		if ((rc = expo_sample(f, NULL, l, (double)load(&counters.ingest[k]))) < 0)
			return rc;
	}
	if ((rc = expo_family(e, &f, "kiln_ingest_store_round_trips_total", EXPO_COUNTER,
			      "Round trips to the database server the ingest writer made (0 on "
			      "SQLite, which runs in kilnd).")) < 0 ||
	    (rc = expo_sample(f, NULL, NULL, (double)load(&counters.ingest_round_trips))) < 0)
		return rc;
	if ((rc = expo_family(e, &f, "kiln_ingest_queue_reports", EXPO_GAUGE,
			      "Agent reports waiting for the ingest writer.")) < 0 ||
	    (rc = expo_sample(f, NULL, NULL,
			      (double)atomic_load_explicit(&counters.ingest_queue,
							   memory_order_relaxed))) < 0)
		return rc;
	if ((rc = expo_family(e, &f, "kiln_remediation_actions_total", EXPO_COUNTER,
			      "Automatic power cycles of hung nodes since kilnd started: started, "
			      "done, failed, and refused by the hourly limit.")) < 0)
		return rc;
	for (int k = 0; k < METRICS_REMEDIATION_KINDS; k++) {
		const char *l[] = { "result", remediation_names[k], NULL };

		if ((rc = expo_sample(f, NULL, l, (double)load(&counters.remediation[k]))) < 0)
			return rc;
	}
	return 0;
}
