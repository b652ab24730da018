/* SPDX-License-Identifier: Apache-2.0 */
/* A deadline on each client connection's request (libmicrohttpd's timeout counts idle time
 * only), and a bound on the connections whose request has not arrived yet. */
#ifndef KILND_CONN_GUARD_H
#define KILND_CONN_GUARD_H

#include <stdint.h>

struct conn_guard;
struct conn_entry;

/*
 * Starts the guard's thread: a connection whose request (line, headers and body) has not
 * all arrived request_timeout_s after its accept, or idle_timeout_s (at least that) after the
 * end of its previous request (a kept-alive connection, not counted as late), has its socket
 * shut down; at most max_waiting connections wait for their
 * request at once (a new one shuts the oldest waiting one down). 0 or KILN_ERROR.
 */
int conn_guard_start(struct conn_guard **out, unsigned request_timeout_s, unsigned idle_timeout_s,
		     unsigned max_waiting);
/* Stops the thread; the server must have stopped first. Accepts NULL. */
void conn_guard_stop(struct conn_guard *g);

/* From libmicrohttpd's connection notification: a connection on socket fd was accepted
 * (returns its entry, for the socket context; NULL when out of memory: it goes unguarded),
 * and one closed (accepts NULL). */
struct conn_entry *conn_guard_opened(struct conn_guard *g, int fd);
void conn_guard_closed(struct conn_guard *g, struct conn_entry *e);

/* The request arrived whole (the handler runs): no deadline while it is answered. */
void conn_guard_request_done(struct conn_guard *g, struct conn_entry *e);
/* The answer went out: the connection waits for its next request, from now. */
void conn_guard_request_ended(struct conn_guard *g, struct conn_entry *e);
/* The connection became something else (a console stream): never shut down by the guard. */
void conn_guard_upgraded(struct conn_guard *g, struct conn_entry *e);

/* Connections shut down so far, for their deadline and to make room (tests, metrics). */
void conn_guard_counts(struct conn_guard *g, uint64_t *out_late, uint64_t *out_evicted);

#endif
