/* SPDX-License-Identifier: Apache-2.0 */
/* A budget of events per node: one agent's flood (256 Xids a report) is not thousands of
 * events and webhook POSTs; what is held back becomes one summary event. */
#ifndef KILND_EVENT_LIMIT_H
#define KILND_EVENT_LIMIT_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

/* Held back events end in a summary once none was held for this long, or at the latest
 * this long after the first (a flood that goes on gives one summary a minute). */
#define EVENT_HELD_QUIET_S 10
#define EVENT_HELD_MAX_S 60

/* Each node may add per_minute events a minute (as many at once); 0: no limit. Call before
 * any thread adds events. KILN_ERROR when out of memory. */
int event_limit_configure(int per_minute);
void event_limit_free(void);

/* Whether node_id may add this event now (1), or it is held back and counted (0). Events
 * of no node (node_id 0) are never held. now: unix seconds. Thread-safe. */
int event_limit_take(int64_t node_id, enum event_severity sev, const char *kind,
		     const char *message, int64_t now);

/* Adds ev (store_event_insert) unless it is already stored (its dedup key) or its node's
 * budget is spent: then it is counted for the summary and *out_inserted (may be NULL) is 0. */
int event_add_limited(struct store *st, const struct event *ev, int *out_inserted);

/* The summary events due at now, at most max, into out (kind "events-held", source
 * "kilnd", the node's id, the worst held severity; message and strings owned by out:
 * event_list_free-compatible, clear each with free of its fields). *out_count of them. */
int event_limit_due(struct event **out, size_t *out_count, int64_t now);

#endif
