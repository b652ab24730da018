/* SPDX-License-Identifier: Apache-2.0 */
/* Per-address token buckets in a fixed table: how often one client address may do a thing. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/error.h"
#include "daemon/ratelimit.h"

#define KEY_MAX 64   /* an IPv6 address in text is at most 45 bytes */
#define PROBES 8

struct bucket {
	char key[KEY_MAX]; /* "" when free */
	double tokens;
	double at;         /* when tokens was last brought up to date */
	double next_slot;  /* the next refused request is told to come back then, or later */
};

struct ratelimit {
	pthread_mutex_t lock;
	double rate, burst;
	size_t slots;
	struct bucket *b;
};

int ratelimit_new(struct ratelimit **out, double rate_per_s, double burst, size_t slots)
{
	struct ratelimit *rl = calloc(1, sizeof(*rl));

	if (!rl || slots == 0 || !(rl->b = calloc(slots, sizeof(*rl->b)))) {
		free(rl);
		return kiln_fail(KILN_ERROR, "out of memory");
	}
	pthread_mutex_init(&rl->lock, NULL);
	rl->rate = rate_per_s;
	rl->burst = burst < 1 ? 1 : burst;
	rl->slots = slots;
	*out = rl;
	return 0;
}

void ratelimit_free(struct ratelimit *rl)
{
	if (!rl)
		return;
	pthread_mutex_destroy(&rl->lock);
	free(rl->b);
	free(rl);
}

static uint64_t hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL; /* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

static double level(const struct ratelimit *rl, const struct bucket *b, double now)
{
	double t = b->tokens + (now - b->at) * rl->rate;

	return t > rl->burst ? rl->burst : t;
}

/* The key's bucket, or a slot to start it in: a free one, else one whose bucket refilled
 * (it remembers nothing a full bucket would not), else the fullest of the probed. */
static struct bucket *slot_for(struct ratelimit *rl, const char *key, double now, int *fresh)
{
	size_t first = (size_t)(hash(key) % rl->slots);
	struct bucket *spare = NULL;
	double spare_level = -1;

	for (size_t i = 0; i < PROBES && i < rl->slots; i++) {
		struct bucket *b = &rl->b[(first + i) % rl->slots];
		double l;

		if (strcmp(b->key, key) == 0) {
			*fresh = 0;
			return b;
		}
		l = b->key[0] ? level(rl, b, now) : rl->burst + 1;
		if (l > spare_level) {
			spare = b;
			spare_level = l;
		}
	}
	*fresh = 1;
	return spare;
}

unsigned ratelimit_take(struct ratelimit *rl, const char *key, double now)
{
	struct bucket *b;
	unsigned wait = 0;
	int fresh;

	if (!rl || rl->rate <= 0)
		return 0;
	pthread_mutex_lock(&rl->lock);
	b = slot_for(rl, key, now, &fresh);
	if (!b) { /* cannot happen: a table has at least one slot to probe */
		pthread_mutex_unlock(&rl->lock);
		return 0;
	}
	if (fresh) {
		snprintf(b->key, sizeof(b->key), "%s", key);
		b->tokens = rl->burst;
		b->next_slot = 0;
	} else {
		b->tokens = level(rl, b, now);
	}
	b->at = now;
	if (b->tokens >= 1) {
		b->tokens -= 1;
	} else {
		/* Each refused request gets a slot of its own after those told before it, so
		 * that a crowd told to wait comes back spread over the rate, not all at once
		 * every second. */
		double slot = now + (1 - b->tokens) / rl->rate;

		if (b->next_slot > slot)
			slot = b->next_slot;
		b->next_slot = slot + 1 / rl->rate;
		wait = (unsigned)ceil(slot - now);
		if (wait == 0)
			wait = 1;
	}
	pthread_mutex_unlock(&rl->lock);
	return wait;
}
