/* SPDX-License-Identifier: Apache-2.0 */
/* Webhooks: events at or above a severity POSTed as JSON (with a Slack-compatible "text") to
 * configured URLs, from a thread of their own that follows the events table by id. */
#ifndef KILND_WEBHOOK_H
#define KILND_WEBHOOK_H

#include <stdint.h>

#include <jansson.h>

#include "store/store.h"

#define WEBHOOK_URLS_MAX 16
#define WEBHOOK_BACKOFF_MAX_S 300
#define WEBHOOK_RESPONSE_MAX 4096

struct webhook_options {
	const char *db_path;             /* the thread opens its own store handle on it */
	const char *urls;                /* comma-separated http(s) URLs */
	enum event_severity min_severity;
	int64_t timeout_s;               /* per POST */
	int retries;                     /* further attempts after a failure */
	int queue_max;                   /* deliveries waiting; the oldest is dropped beyond */
	int poll_ms;                     /* how often the events table is read; 0: 1000 */
};

struct webhook;

/*
 * Validates the options (each URL http:// or https://, at most WEBHOOK_URLS_MAX) and starts
 * the thread. Events already stored are not sent: only those inserted after the start.
 * Reading the events with its own connection, it never holds a lock the poller or the agent
 * ingest waits on. KILN_EINVAL names a bad URL.
 */
int webhook_start(struct webhook **out, const struct webhook_options *opt);

/* Stops the thread (a POST in flight ends at its timeout) and frees; accepts NULL. Deliveries
 * still queued are dropped. */
void webhook_stop(struct webhook *w);

/* Counts since the start, for logs and tests. */
struct webhook_stats {
	uint64_t sent;       /* POSTs answered 2xx */
	uint64_t failed;     /* attempts that failed (each retry counts) */
	uint64_t dropped;    /* deliveries given up (retries spent) or pushed out of the queue */
};
void webhook_stats_get(struct webhook *w, struct webhook_stats *out);

/* The body for one event: {"text": "...", "event": {...}}; the caller owns it. */
json_t *webhook_payload(const struct event *ev);

/* "info" | "warning" | "critical" -> severity; KILN_EINVAL otherwise. */
int webhook_severity_parse(enum event_severity *out, const char *text);

#endif
