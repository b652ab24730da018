/* SPDX-License-Identifier: Apache-2.0 */
/* Request deadlines and a bound on connections still waiting for their request: a client
 * that trickles a byte now and then (slow loris) holds a connection for request_timeout at
 * most, and such clients together hold at most half of the listener. */
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#include "api/conn_guard.h"
#include "kiln/error.h"
#include "kiln/log.h"

#define SWEEP_MS 250
#define LOG_EVERY_S 60  /* one log line per burst of shut-down connections */

/* SHUT and UPGRADED are final: the guard does not touch such a connection again. */
enum conn_phase { WAITING, ANSWERING, UPGRADED, SHUT };

struct conn_entry {
	struct conn_entry *prev, *next; /* oldest first */
	int fd;
	enum conn_phase phase;
	int served;   /* it answered a request: now waiting is a kept-alive idle connection */
	double since; /* accepted, or its previous request ended */
};

struct conn_guard {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	pthread_t thread;
	int stop;
	double timeout;      /* for a connection's first request */
	double idle_timeout; /* for the next one on a kept-alive connection */
	unsigned max_waiting, waiting;
	struct conn_entry *head, *tail;
	uint64_t late, evicted;            /* in all; without the idle kept-alive ones */
	uint64_t late_logged, evicted_logged;
	double logged_at;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Shuts e's socket down: libmicrohttpd sees the connection fail and closes it (and then
 * tells conn_guard_closed, which unlinks it: the fd stays valid until then). Under lock. */
static void shut(struct conn_guard *g, struct conn_entry *e)
{
	shutdown(e->fd, SHUT_RDWR);
	e->phase = SHUT;
	g->waiting--;
}

/* One line for what was shut down since the last one, at most every LOG_EVERY_S. Under lock. */
static void log_burst(struct conn_guard *g, double now, int force)
{
	uint64_t late = g->late - g->late_logged, evicted = g->evicted - g->evicted_logged;

	if (!late && !evicted)
		return;
	if (!force && now - g->logged_at < LOG_EVERY_S)
		return;
	log_warn("http: closed %llu connection(s) that did not send their request within %.0f s "
		 "and %llu waiting ones to make room (at most %u wait at once): slow or hostile "
		 "clients", (unsigned long long)late, g->timeout, (unsigned long long)evicted,
		 g->max_waiting);
	g->late_logged = g->late;
	g->evicted_logged = g->evicted;
	g->logged_at = now;
}

static void *sweeper(void *arg)
{
	struct conn_guard *g = arg;
	struct timespec until;

	pthread_mutex_lock(&g->lock);
	while (!g->stop) {
		double now = now_s();

		/* A kept-alive connection idle for its idle timeout is closed too, but that is
		 * what a client keeping its connection between requests (an agent between
		 * reports) does: no slow or hostile client. */
		for (struct conn_entry *e = g->head; e; e = e->next)
			if (e->phase == WAITING &&
			    now - e->since >= (e->served ? g->idle_timeout : g->timeout)) {
				shut(g, e);
				g->late += !e->served;
			}
		log_burst(g, now, 0);
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += SWEEP_MS * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&g->wake, &g->lock, &until);
	}
	log_burst(g, now_s(), 1);
	pthread_mutex_unlock(&g->lock);
	return NULL;
}

int conn_guard_start(struct conn_guard **out, unsigned request_timeout_s, unsigned idle_timeout_s,
		     unsigned max_waiting)
{
	struct conn_guard *g = calloc(1, sizeof(*g));

	if (!g)
		return kiln_fail(KILN_ERROR, "out of memory");
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->wake, NULL);
	g->timeout = request_timeout_s;
	g->idle_timeout = idle_timeout_s > request_timeout_s ? idle_timeout_s : request_timeout_s;
	g->max_waiting = max_waiting ? max_waiting : 1;
	if (pthread_create(&g->thread, NULL, sweeper, g) != 0) {
		pthread_cond_destroy(&g->wake);
		pthread_mutex_destroy(&g->lock);
		free(g);
		return kiln_fail(KILN_ERROR, "cannot start the connection guard thread");
	}
	*out = g;
	return 0;
}

void conn_guard_stop(struct conn_guard *g)
{
	if (!g)
		return;
	pthread_mutex_lock(&g->lock);
	g->stop = 1;
	pthread_cond_signal(&g->wake);
	pthread_mutex_unlock(&g->lock);
	pthread_join(g->thread, NULL);
	while (g->head) { /* the server stopped: nothing else holds them */
		struct conn_entry *e = g->head;

		g->head = e->next;
		free(e);
	}
	pthread_cond_destroy(&g->wake);
	pthread_mutex_destroy(&g->lock);
	free(g);
}

struct conn_entry *conn_guard_opened(struct conn_guard *g, int fd)
{
	struct conn_entry *e = calloc(1, sizeof(*e));

	if (!g || !e) {
		free(e);
		return NULL;
	}
	e->fd = fd;
	e->phase = WAITING;
	e->since = now_s();
	pthread_mutex_lock(&g->lock);
	/* Room first: the oldest waiting connection goes (a client that sends its request at
	 * once is never the oldest waiting for long). */
	if (g->waiting >= g->max_waiting)
		for (struct conn_entry *o = g->head; o; o = o->next)
			if (o->phase == WAITING) {
				shut(g, o);
				g->evicted += !o->served;
				break;
			}
	e->prev = g->tail;
	if (g->tail)
		g->tail->next = e;
	else
		g->head = e;
	g->tail = e;
	g->waiting++;
	pthread_mutex_unlock(&g->lock);
	return e;
}

void conn_guard_closed(struct conn_guard *g, struct conn_entry *e)
{
	if (!g || !e)
		return;
	pthread_mutex_lock(&g->lock);
	if (e->phase == WAITING)
		g->waiting--;
	if (e->prev)
		e->prev->next = e->next;
	else
		g->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		g->tail = e->prev;
	pthread_mutex_unlock(&g->lock);
	free(e);
}

static void phase_set(struct conn_guard *g, struct conn_entry *e, enum conn_phase to)
{
	if (!g || !e)
		return;
	pthread_mutex_lock(&g->lock);
	if (e->phase != UPGRADED && e->phase != SHUT) {
		if (e->phase == WAITING && to != WAITING)
			g->waiting--;
		else if (e->phase != WAITING && to == WAITING)
			g->waiting++;
		e->phase = to;
		e->since = now_s();
	}
	pthread_mutex_unlock(&g->lock);
}

void conn_guard_request_done(struct conn_guard *g, struct conn_entry *e)
{
	phase_set(g, e, ANSWERING);
}

void conn_guard_request_ended(struct conn_guard *g, struct conn_entry *e)
{
	if (g && e) {
		pthread_mutex_lock(&g->lock);
		e->served = 1;
		pthread_mutex_unlock(&g->lock);
	}
	phase_set(g, e, WAITING);
}

void conn_guard_upgraded(struct conn_guard *g, struct conn_entry *e)
{
	phase_set(g, e, UPGRADED);
}

void conn_guard_counts(struct conn_guard *g, uint64_t *out_late, uint64_t *out_evicted)
{
	pthread_mutex_lock(&g->lock);
	*out_late = g->late;
	*out_evicted = g->evicted;
	pthread_mutex_unlock(&g->lock);
}
