/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The moments kilnd itself could not receive agent reports: its start, an ingest writer
 * stalled on the store, reports refused because the writer's queue was full, the HTTP
 * listener held at its connection limit. An agent's silence counts only from the latest of
 * these (server/health/), so kilnd's own trouble never makes a healthy node look hung.
 *
 * Process-wide and lock-free: marked from HTTP threads, the ingest writer and main, read by
 * the poller's health sweep.
 */
#ifndef KILND_RECEIVE_GAP_H
#define KILND_RECEIVE_GAP_H

#include <stdint.h>

/* An ingest batch running at least this long counts as a stall while it runs. */
#define RECEIVE_GAP_STALL_S 2

/* A moment kilnd could not receive (its start, a refused report). Only moves forward. */
void receive_gap_mark(int64_t t);

/* Writer threads (lanes) whose batches are watched. */
#define RECEIVE_GAP_LANES 8

/* The ingest writer's lane started storing a batch at since (0: it finished). A batch that
 * ran RECEIVE_GAP_STALL_S or longer marks its end. */
void receive_gap_ingest_busy(int lane, int64_t since, int64_t now);

/* The listener's open connections changed by delta (+1 accepted, -1 closed); it is
 * saturated while limit or more are open. */
void receive_gap_connections(int delta, long limit, int64_t now);

/* The last moment kilnd could not receive, as seen at now: now itself while the listener is
 * saturated or an ingest batch has run RECEIVE_GAP_STALL_S or longer; 0 when never. */
int64_t receive_gap_last(int64_t now);

/* Forgets everything (tests). */
void receive_gap_reset(void);

#endif
