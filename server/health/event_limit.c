/* SPDX-License-Identifier: Apache-2.0 */
/* Per-node event budget: token buckets (ratelimit.c) by node, and the counts of what was
 * held back until they are summed up in one event. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "health/event_limit.h"
#include "kiln/error.h"
#include "daemon/ratelimit.h"

#define NODES_REMEMBERED 16384
#define KINDS_NAMED 4 /* the summary names this many kinds; the rest count as "other" */

/* What one node had held back since first, by kind in the order first held. */
struct held {
	int64_t node_id;
	int64_t first, last;
	uint64_t count, critical;
	enum event_severity worst;
	struct {
		char kind[32];
		uint64_t count;
	} kinds[KINDS_NAMED];
	uint64_t other;
	char last_kind[32];
	char last_message[200];
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct ratelimit *budget; /* NULL: no limit */
static int per_minute_cfg;
static struct held *held;
static size_t nheld, capheld;

int event_limit_configure(int per_minute)
{
	struct ratelimit *rl = NULL;

	if (per_minute > 0 &&
	    ratelimit_new(&rl, per_minute / 60.0, per_minute, NODES_REMEMBERED) < 0)
		return KILN_ERROR;
	pthread_mutex_lock(&lock);
	ratelimit_free(budget);
	budget = rl;
	per_minute_cfg = per_minute;
	pthread_mutex_unlock(&lock);
	return 0;
}

void event_limit_free(void)
{
	pthread_mutex_lock(&lock);
	ratelimit_free(budget);
	budget = NULL;
	free(held);
	held = NULL;
	nheld = capheld = 0;
	pthread_mutex_unlock(&lock);
}

/* Counts one held event of kind into h's tally. */
static void kind_count(struct held *h, const char *kind)
{
	size_t i;

	for (i = 0; i < KINDS_NAMED && h->kinds[i].count; i++)
		if (strncmp(h->kinds[i].kind, kind, sizeof(h->kinds[i].kind) - 1) == 0) {
			h->kinds[i].count++;
			return;
		}
	if (i == KINDS_NAMED) {
		h->other++;
		return;
	}
	snprintf(h->kinds[i].kind, sizeof(h->kinds[i].kind), "%s", kind);
	h->kinds[i].count = 1;
}

/* "xid 1260, health 1" (and ", other N"): what h held by kind. */
static void kinds_text(char *out, size_t n, const struct held *h)
{
	size_t at = 0;

	out[0] = '\0';
	for (size_t i = 0; i < KINDS_NAMED && h->kinds[i].count && at < n; i++)
		at += (size_t)snprintf(out + at, n - at, "%s%s %llu", i ? ", " : "", h->kinds[i].kind,
				       (unsigned long long)h->kinds[i].count);
	if (h->other && at < n)
		snprintf(out + at, n - at, ", other %llu", (unsigned long long)h->other);
}

/* The node's held entry, added when absent; NULL when out of memory. Under lock. */
static struct held *held_for(int64_t node_id, int64_t now)
{
	for (size_t i = 0; i < nheld; i++)
		if (held[i].node_id == node_id)
			return &held[i];
	if (nheld == capheld) {
		size_t cap = capheld ? capheld * 2 : 16;
		struct held *grown = realloc(held, cap * sizeof(*held));

		if (!grown)
			return NULL;
		held = grown;
		capheld = cap;
	}
	memset(&held[nheld], 0, sizeof(held[0]));
	held[nheld].node_id = node_id;
	held[nheld].first = now;
	return &held[nheld++];
}

int event_limit_take(int64_t node_id, enum event_severity sev, const char *kind,
		     const char *message, int64_t now)
{
	char key[32];
	struct held *h;
	int ok = 1;

	if (node_id == 0)
		return 1;
	snprintf(key, sizeof(key), "%lld", (long long)node_id);
	pthread_mutex_lock(&lock);
	if (budget && ratelimit_take(budget, key, (double)now) > 0 &&
	    (h = held_for(node_id, now))) {
		ok = 0;
		h->count++;
		h->critical += sev == SEV_CRITICAL;
		if (sev > h->worst)
			h->worst = sev;
		h->last = now;
		kind_count(h, kind ? kind : "");
		snprintf(h->last_kind, sizeof(h->last_kind), "%s", kind ? kind : "");
		snprintf(h->last_message, sizeof(h->last_message), "%s", message ? message : "");
	}
	pthread_mutex_unlock(&lock);
	return ok;
}

int event_add_limited(struct store *st, const struct event *ev, int *out_inserted)
{
	int exists = 0, rc;

	if (out_inserted)
		*out_inserted = 0;
	if (ev->node_id && ev->dedup_key &&
	    (rc = store_event_exists(st, &exists, ev->node_id, ev->dedup_key)) < 0)
		return rc;
	if (exists)
		return 0;
	if (!event_limit_take(ev->node_id, ev->severity, ev->kind, ev->message,
			      (int64_t)time(NULL))) /* arrival, not the report's own time */
		return 0;
	return store_event_insert(st, ev, out_inserted);
}

int event_limit_due(struct event **out, size_t *out_count, int64_t now)
{
	struct event *list = NULL;
	size_t n = 0;
	int rc = 0;

	*out = NULL;
	*out_count = 0;
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < nheld;) {
		struct held *h = &held[i];
		char msg[640], kinds[160];

		if (now - h->last < EVENT_HELD_QUIET_S && now - h->first < EVENT_HELD_MAX_S) {
			i++;
			continue;
		}
		if (!list && !(list = calloc(nheld, sizeof(*list)))) {
			rc = kiln_fail(KILN_ERROR, "out of memory");
			break;
		}
		kinds_text(kinds, sizeof(kinds), h);
		snprintf(msg, sizeof(msg), "%llu event(s) held back in %lld s (%llu critical; at most "
			 "%d a minute per node); by kind: %s; the last: %s: %.200s",
			 (unsigned long long)h->count, (long long)(h->last - h->first + 1),
			 (unsigned long long)h->critical, per_minute_cfg, kinds, h->last_kind,
			 h->last_message);
		list[n].time = now;
		list[n].node_id = h->node_id;
		list[n].severity = h->worst;
		list[n].source = strdup("kilnd");
		list[n].kind = strdup("events-held");
		list[n].message = strdup(msg);
		n++;
		held[i] = held[--nheld];
	}
	pthread_mutex_unlock(&lock);
	*out = list;
	*out_count = n;
	return rc;
}
