/* SPDX-License-Identifier: Apache-2.0 */
/* Live BMC calls of the REST API, run off the HTTP threads: one thread takes each node's
 * result from the BMC engine, finishes its audit row, hands what the BMC said to the poller
 * (so that it is stored as a reading), paces batches and writes the answer as it grows. */
#ifndef KILND_LIVE_H
#define KILND_LIVE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "fleet/live_call.h"
#include "store/store.h"

struct cluster;
struct live;
struct poller;

struct live_options {
	const char *db_path;       /* the live thread opens its own store handle */
	struct bmc_engine *engine;
	struct poller *poller;     /* NULL: what live calls learn is not stored */
	struct guard *guard;       /* NULL: no call is guarded (the work on nodes not asked) */
	struct cluster *cluster;   /* shared: a node owned elsewhere is handed to its owner
				    * (handoff.c), and every action is claimed in node_calls */
};

int live_start(struct live **out, const struct live_options *opt);

/*
 * Ends every answer still being written: each node still waiting for its BMC is answered
 * "kilnd is stopping" and no connection stays suspended (libmicrohttpd must not stop with
 * one). New calls are refused from then on. Call before the HTTP server and the poller stop.
 */
void live_stop(struct live *l);

/* Joins the thread once the engine has stopped (every result has come back: the audit rows
 * get their outcome) and frees what is left. Accepts NULL. */
void live_free(struct live *l);

/*
 * How the answer's reader waits: suspend() is called (under the call's lock) when the
 * reader found nothing to send and must wait; resume() (under the same lock, from the live
 * thread) once there is more. Both get ud. The HTTP server's suspend and resume.
 */
struct live_waker {
	void (*suspend)(void *ud);
	void (*resume)(void *ud);
	void *ud;
};

/*
 * Starts the call: the live thread begins its first batch at once. The call now belongs to
 * the live module and to the reader, who ends its part with live_call_release. Returns
 * KILN_EBUSY when kilnd is stopping (the call is then still the caller's).
 */
int live_call_start(struct live *l, struct live_call *call, const struct live_waker *w);

/*
 * Copies up to max bytes of the answer into buf. Returns the count; 0 when nothing is ready
 * yet (suspend was called: the caller returns and is resumed later); LIVE_READ_END once it
 * is all written; LIVE_READ_ERROR when the answer cannot be completed (out of memory).
 */
#define LIVE_READ_END (-1)
#define LIVE_READ_ERROR (-2)
long live_call_read(struct live_call *call, char *buf, size_t max);

/* The reader is done with the call (answered, or the client went away); no resume after. */
void live_call_release(struct live_call *call);

struct node_call_row;
/* A result of a call handed to another instance (handoff.c's on_result, ud the live): queued
 * for the live thread, which answers the node from it. */
void live_handoff_result(void *ud, const struct node_call_row *row);

#endif
