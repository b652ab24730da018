/* SPDX-License-Identifier: Apache-2.0 */
/* Webhooks: a thread that follows the events table by id, queues a delivery per event and
 * URL in a bounded ring, and POSTs each with retries and exponential backoff. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kiln/error.h"
#include "kiln/http.h"
#include "kiln/parse.h"
#include "reports/webhook.h"

#define SCAN_BATCH 256

struct delivery {
	char *body;          /* JSON text */
	int url;             /* index into urls */
	int attempts;
	int64_t next_ms;     /* not before (monotonic ms) */
};

struct webhook {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	int stop;
	struct store *st;
	char *urls[WEBHOOK_URLS_MAX];
	int nurls;
	enum event_severity min_severity;
	int64_t timeout_s;
	int retries;
	int poll_ms;
	int64_t last_id;
	struct delivery *ring; /* queue_max slots, FIFO from head */
	int cap, head, len;
	struct webhook_stats stats;
};

static const char *const sev_names[] = { "info", "warning", "critical" };

int webhook_severity_parse(enum event_severity *out, const char *text)
{
	for (int i = SEV_INFO; text && i <= SEV_CRITICAL; i++)
		if (strcmp(text, sev_names[i]) == 0) {
			*out = (enum event_severity)i;
			return 0;
		}
	return kiln_fail(KILN_EINVAL, "severity must be info, warning or critical, not '%.20s'",
			 text ? text : "");
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

json_t *webhook_payload(const struct event *ev)
{
	char when[KILN_TIME_UTC_LEN], text[900];
	const char *sev = sev_names[ev->severity >= SEV_CRITICAL ? SEV_CRITICAL :
				    ev->severity <= SEV_INFO ? SEV_INFO : SEV_WARNING];

	kiln_time_utc(when, ev->time);
	/* Slack reads "text"; the markup characters <, > and & are escaped as it asks. */
	{
		char msg[600];
		size_t o = 0;

		for (const char *p = ev->message ? ev->message : ""; *p && o + 6 < sizeof(msg); p++) {
			const char *rep = *p == '<' ? "&lt;" : *p == '>' ? "&gt;" : *p == '&' ? "&amp;" :
										   NULL;

			if (rep) {
				size_t l = strlen(rep);

				memcpy(msg + o, rep, l);
				o += l;
			} else {
				msg[o++] = *p;
			}
		}
		msg[o] = '\0';
		snprintf(text, sizeof(text), "[%s] %s: %s (%s %s, %s)", sev,
			 ev->node ? ev->node : "fleet", msg, ev->source ? ev->source : "?",
			 ev->kind ? ev->kind : "?", when);
	}
	return json_pack("{s:s, s:{s:I, s:I, s:s, s:s?, s:s?, s:s?, s:s?, s:s?}}", "text", text,
			 "event", "id", (json_int_t)ev->id, "time", (json_int_t)ev->time,
			 "severity", sev, "node", ev->node, "source", ev->source, "kind", ev->kind,
			 "message", ev->message, "time_utc", when);
}

/* Queues a delivery; a full ring drops its oldest. Called with the lock held. */
static void ring_push(struct webhook *w, char *body, int url)
{
	struct delivery *d;

	if (w->len == w->cap) {
		free(w->ring[w->head].body);
		w->head = (w->head + 1) % w->cap;
		w->len--;
		w->stats.dropped++;
	}
	d = &w->ring[(w->head + w->len) % w->cap];
	d->body = body;
	d->url = url;
	d->attempts = 0;
	d->next_ms = 0;
	w->len++;
}

/* Reads new events and queues their deliveries. */
static void scan(struct webhook *w)
{
	struct event *evs = NULL;
	size_t n = 0;

	if (store_event_list_after(w->st, &evs, &n, w->last_id, SCAN_BATCH) < 0)
		return; /* a busy database: the next scan tries again */
	for (size_t i = 0; i < n; i++) {
		json_t *p;
		char *text;

		w->last_id = evs[i].id;
		if (evs[i].severity < w->min_severity)
			continue;
		p = webhook_payload(&evs[i]);
		text = p ? json_dumps(p, JSON_COMPACT) : NULL;
		json_decref(p);
		if (!text)
			continue;
		pthread_mutex_lock(&w->lock);
		for (int u = 0; u < w->nurls; u++) {
			char *copy = u + 1 < w->nurls ? strdup(text) : text;

			if (copy)
				ring_push(w, copy, u);
		}
		pthread_mutex_unlock(&w->lock);
	}
	event_list_free(evs, n);
}

static int post(struct webhook *w, const struct delivery *d)
{
	struct kiln_http_response resp = { 0 };
	struct kiln_tls_trust trust = { .system_ca = 1 };
	int rc;

	rc = kiln_http_request(&resp, "POST", w->urls[d->url], NULL, d->body, strlen(d->body),
			       &trust, (long)w->timeout_s * 1000, WEBHOOK_RESPONSE_MAX);
	if (rc == KILN_ETOOBIG)
		rc = 0; /* delivered; the receiver just talks a lot */
	if (rc == 0 && (resp.status < 200 || resp.status > 299))
		rc = KILN_ERROR;
	kiln_http_response_free(&resp);
	return rc;
}

/* Sends what is due, in queue order; a failure is retried later with a doubled delay. */
static void deliver(struct webhook *w)
{
	pthread_mutex_lock(&w->lock);
	for (int i = 0; i < w->len && !w->stop; i++) {
		struct delivery d = w->ring[(w->head + i) % w->cap];
		int rc;

		if (d.next_ms > now_ms())
			continue;
		/* Posting without the lock: webhook_stop may wait for the timeout, nobody else. */
		pthread_mutex_unlock(&w->lock);
		rc = post(w, &d);
		pthread_mutex_lock(&w->lock);
		if (rc == 0 || d.attempts >= w->retries) {
			if (rc == 0) {
				w->stats.sent++;
			} else {
				w->stats.failed++;
				w->stats.dropped++;
			}
			free(d.body);
			/* Close the gap: move the later entries one slot forward. */
			for (int j = i; j + 1 < w->len; j++)
				w->ring[(w->head + j) % w->cap] = w->ring[(w->head + j + 1) % w->cap];
			w->len--;
			i--;
			continue;
		}
		{
			struct delivery *q = &w->ring[(w->head + i) % w->cap];
			int64_t delay = 1000LL << (d.attempts + 1 < 10 ? d.attempts + 1 : 10);

			if (delay > WEBHOOK_BACKOFF_MAX_S * 1000LL)
				delay = WEBHOOK_BACKOFF_MAX_S * 1000LL;
			q->attempts = d.attempts + 1;
			q->next_ms = now_ms() + delay;
			w->stats.failed++;
		}
	}
	pthread_mutex_unlock(&w->lock);
}

static void *run(void *arg)
{
	struct webhook *w = arg;

	for (;;) {
		struct timespec until;

		scan(w);
		deliver(w);
		pthread_mutex_lock(&w->lock);
		if (w->stop) {
			pthread_mutex_unlock(&w->lock);
			break;
		}
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += w->poll_ms / 1000;
		until.tv_nsec += (long)(w->poll_ms % 1000) * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		while (!w->stop && pthread_cond_timedwait(&w->wake, &w->lock, &until) != ETIMEDOUT)
			;
		pthread_mutex_unlock(&w->lock);
	}
	return NULL;
}

static void webhook_free(struct webhook *w)
{
	if (!w)
		return;
	for (int i = 0; w->ring && i < w->len; i++)
		free(w->ring[(w->head + i) % w->cap].body);
	free(w->ring);
	for (int u = 0; u < w->nurls; u++)
		free(w->urls[u]);
	store_close(w->st);
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->wake);
	free(w);
}

static int urls_parse(struct webhook *w, const char *urls)
{
	const char *p = urls;

	while (p && *p) {
		size_t n = strcspn(p, ",");
		const char *q = p;
		size_t m = n;

		while (m > 0 && (*q == ' ' || *q == '\t')) {
			q++;
			m--;
		}
		while (m > 0 && (q[m - 1] == ' ' || q[m - 1] == '\t'))
			m--;
		if (m > 0) {
			if (w->nurls == WEBHOOK_URLS_MAX)
				return kiln_fail(KILN_EINVAL, "webhook.urls: more than %d URLs",
						 WEBHOOK_URLS_MAX);
			if (m > 2048 || (strncmp(q, "http://", 7) != 0 && strncmp(q, "https://", 8) != 0))
				return kiln_fail(KILN_EINVAL,
						 "webhook.urls: '%.*s' is not an http:// or https:// URL",
						 (int)(m > 80 ? 80 : m), q);
			if (!(w->urls[w->nurls] = strndup(q, m)))
				return kiln_fail(KILN_ERROR, "out of memory");
			w->nurls++;
		}
		p += n;
		if (*p == ',')
			p++;
	}
	return 0;
}

int webhook_start(struct webhook **out, const struct webhook_options *opt)
{
	struct webhook *w = calloc(1, sizeof(*w));
	int rc;

	if (!w)
		return kiln_fail(KILN_ERROR, "out of memory");
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->wake, NULL);
	w->min_severity = opt->min_severity;
	w->timeout_s = opt->timeout_s > 0 ? opt->timeout_s : 10;
	w->retries = opt->retries > 0 ? opt->retries : 0;
	w->poll_ms = opt->poll_ms > 0 ? opt->poll_ms : 1000;
	w->cap = opt->queue_max > 0 ? opt->queue_max : 1000;
	if ((rc = urls_parse(w, opt->urls)) < 0)
		goto fail;
	if (w->nurls == 0) {
		rc = kiln_fail(KILN_EINVAL, "webhook.urls: no URL");
		goto fail;
	}
	w->ring = calloc((size_t)w->cap, sizeof(*w->ring));
	if (!w->ring) {
		rc = kiln_fail(KILN_ERROR, "out of memory");
		goto fail;
	}
	if ((rc = store_open(&w->st, opt->db_path)) < 0 ||
	    (rc = store_event_last_id(w->st, &w->last_id)) < 0)
		goto fail;
	if (pthread_create(&w->thread, NULL, run, w) != 0) {
		rc = kiln_fail(KILN_ERROR, "webhook: cannot start its thread");
		goto fail;
	}
	*out = w;
	return 0;
fail:
	webhook_free(w);
	return rc;
}

void webhook_stop(struct webhook *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->stop = 1;
	pthread_cond_signal(&w->wake);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	webhook_free(w);
}

void webhook_stats_get(struct webhook *w, struct webhook_stats *out)
{
	pthread_mutex_lock(&w->lock);
	*out = w->stats;
	pthread_mutex_unlock(&w->lock);
}
