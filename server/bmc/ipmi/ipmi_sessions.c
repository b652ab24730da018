/* SPDX-License-Identifier: Apache-2.0 */
/* Kept IPMI sessions in the helper: an open libfreeipmi context per BMC, reused by later jobs. */
#include "bmc/ipmi/ipmi_sessions.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

/* Sessions closed at once when many go together (expiry of a sweep's worth, helper exit). */
#define CLOSE_THREADS 16

/*
 * One kept session and what it was opened with. Of the password only a keyed hash is kept
 * (the key is the helper's, random), to tell whether a later job asks for the same session:
 * libfreeipmi's context holds the password in clear while the session is open, this list
 * need not hold a second copy. K_g is not part of a job (kilnd opens sessions without
 * one), so it cannot differ.
 */
struct kept {
	char *host; /* "HOST:PORT": the BMC */
	char *user;
	unsigned char password_hash[crypto_generichash_BYTES];
	int cipher;
	int privilege; /* 0 user, 1 operator, 2 admin: what the session was opened at */
	unsigned int wa_session;
	long timeout_ms;
	long last_ms; /* monotonic time it was given back */
	ipmi_ctx_t ctx;
	struct kept *next;
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond; /* wakes the expiry thread (CLOCK_MONOTONIC) */
	struct kept *head;
	int count;
	long idle_ms; /* <= 0: nothing kept */
	int running;  /* the expiry thread runs */
	int stopping;
	pthread_t thread;
} S = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
};

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static unsigned char hash_key[crypto_generichash_KEYBYTES];
static pthread_once_t hash_key_once = PTHREAD_ONCE_INIT;

static void hash_key_make(void)
{
	randombytes_buf(hash_key, sizeof(hash_key));
}

/* The keyed hash of a job's password; the key is made once per helper. */
static void password_hash(unsigned char out[crypto_generichash_BYTES], const char *password)
{
	pthread_once(&hash_key_once, hash_key_make);
	crypto_generichash(out, crypto_generichash_BYTES, (const unsigned char *)password,
			   strlen(password), hash_key, sizeof(hash_key));
}

void ipmi_session_close(ipmi_ctx_t ctx)
{
	if (!ctx)
		return;
	ipmi_ctx_close(ctx);
	ipmi_ctx_destroy(ctx);
}

/* Frees an entry (not its context). */
static void kept_free(struct kept *k)
{
	if (!k)
		return;
	free(k->host);
	free(k->user);
	free(k);
}

/* Whether password is the one k was opened with (its hash, compared in constant time). */
static int same_secret(const struct kept *k, const char *password)
{
	unsigned char h[crypto_generichash_BYTES];
	int same;

	password_hash(h, password);
	same = sodium_memcmp(h, k->password_hash, sizeof(h)) == 0;
	sodium_memzero(h, sizeof(h));
	return same;
}

/* Would this kept session serve job? The host is already equal. */
static int kept_fits(const struct kept *k, const struct ipmi_job *job)
{
	return strcmp(k->user, job->user) == 0 && same_secret(k, job->password) &&
	       k->cipher == job->cipher && k->wa_session == job->wa_session &&
	       k->timeout_ms == job->timeout_ms && k->privilege >= job->privilege;
}

struct close_list {
	pthread_mutex_t lock;
	struct kept *head;
};

static void *close_thread(void *arg)
{
	struct close_list *cl = arg;

	for (;;) {
		struct kept *k;

		pthread_mutex_lock(&cl->lock);
		k = cl->head;
		if (k)
			cl->head = k->next;
		pthread_mutex_unlock(&cl->lock);
		if (!k)
			return NULL;
		ipmi_session_close(k->ctx);
		kept_free(k);
	}
}

/*
 * Closes every session of a detached list: one after the other when few, else on up to
 * CLOSE_THREADS threads, so that BMCs that stopped answering (each close waits for its
 * timeout) do not hold up the others.
 */
static void close_all(struct kept *list, int n)
{
	struct close_list cl = {.lock = PTHREAD_MUTEX_INITIALIZER, .head = list};
	pthread_t t[CLOSE_THREADS];
	int started = 0;

	for (int i = 0; n > 1 && i < CLOSE_THREADS && i < n; i++) {
		if (pthread_create(&t[i], NULL, close_thread, &cl) != 0)
			break;
		started++;
	}
	close_thread(&cl); /* this thread helps, and finishes alone when none started */
	for (int i = 0; i < started; i++)
		pthread_join(t[i], NULL);
}

/* Closes the sessions idle for the limit; the others stay. */
static void expire(void)
{
	struct kept *list = NULL, **pp;
	long now = now_ms();
	int n = 0;

	pthread_mutex_lock(&S.lock);
	for (pp = &S.head; *pp;) {
		struct kept *k = *pp;

		if (now - k->last_ms < S.idle_ms) {
			pp = &k->next;
			continue;
		}
		*pp = k->next;
		k->next = list;
		list = k;
		S.count--;
		n++;
	}
	pthread_mutex_unlock(&S.lock);
	close_all(list, n);
}

static void *expiry_thread(void *arg)
{
	long tick = S.idle_ms / 4;

	(void)arg;
	if (tick > 1000)
		tick = 1000;
	if (tick < 50)
		tick = 50;
	pthread_mutex_lock(&S.lock);
	while (!S.stopping) {
		struct timespec until;

		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_nsec += (tick % 1000) * 1000000L;
		until.tv_sec += tick / 1000 + until.tv_nsec / 1000000000L;
		until.tv_nsec %= 1000000000L;
		pthread_cond_timedwait(&S.cond, &S.lock, &until);
		if (S.stopping)
			break;
		pthread_mutex_unlock(&S.lock);
		expire();
		pthread_mutex_lock(&S.lock);
	}
	pthread_mutex_unlock(&S.lock);
	return NULL;
}

int ipmi_sessions_start(long idle_ms)
{
	pthread_condattr_t ca;
	int rc = 0;

	S.idle_ms = idle_ms;
	S.stopping = 0;
	if (idle_ms <= 0)
		return 0;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&S.cond, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&S.thread, NULL, expiry_thread, NULL) != 0) {
		S.idle_ms = 0; /* no expiry: keep nothing */
		rc = -1;
	} else {
		S.running = 1;
	}
	return rc;
}

ipmi_ctx_t ipmi_sessions_take(const struct ipmi_job *job)
{
	struct kept *k = NULL, **pp;
	ipmi_ctx_t ctx = NULL;

	pthread_mutex_lock(&S.lock);
	for (pp = &S.head; *pp; pp = &(*pp)->next) {
		if (strcmp((*pp)->host, job->host) == 0) {
			k = *pp;
			*pp = k->next;
			S.count--;
			break;
		}
	}
	pthread_mutex_unlock(&S.lock);
	if (!k)
		return NULL;
	if (kept_fits(k, job))
		ctx = k->ctx;
	else
		ipmi_session_close(k->ctx); /* one session per BMC: the stale one goes */
	kept_free(k);
	return ctx;
}

void ipmi_sessions_put(const struct ipmi_job *job, ipmi_ctx_t ctx)
{
	struct kept *k = NULL, *it;
	int keep;

	if (!ctx)
		return;
	k = calloc(1, sizeof(*k));
	if (!k || !(k->host = strdup(job->host)) || !(k->user = strdup(job->user)))
		goto drop;
	password_hash(k->password_hash, job->password);
	k->cipher = job->cipher;
	k->privilege = job->privilege;
	k->wa_session = job->wa_session;
	k->timeout_ms = job->timeout_ms;
	k->ctx = ctx;

	pthread_mutex_lock(&S.lock);
	keep = S.idle_ms > 0 && S.running && !S.stopping && S.count < IPMI_SESSIONS_MAX;
	for (it = S.head; keep && it; it = it->next)
		if (strcmp(it->host, job->host) == 0)
			keep = 0; /* at most one per BMC */
	if (keep) {
		k->last_ms = now_ms();
		k->next = S.head;
		S.head = k;
		S.count++;
	}
	pthread_mutex_unlock(&S.lock);
	if (keep)
		return;
drop:
	ipmi_session_close(ctx);
	kept_free(k);
}

void ipmi_sessions_stop(void)
{
	struct kept *list;
	int n;

	pthread_mutex_lock(&S.lock);
	S.stopping = 1;
	if (S.running)
		pthread_cond_broadcast(&S.cond);
	pthread_mutex_unlock(&S.lock);
	if (S.running) {
		pthread_join(S.thread, NULL);
		S.running = 0;
	}
	pthread_mutex_lock(&S.lock);
	list = S.head;
	n = S.count;
	S.head = NULL;
	S.count = 0;
	pthread_mutex_unlock(&S.lock);
	close_all(list, n);
}

int ipmi_sessions_count(void)
{
	int n;

	pthread_mutex_lock(&S.lock);
	n = S.count;
	pthread_mutex_unlock(&S.lock);
	return n;
}
