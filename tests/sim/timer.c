/* SPDX-License-Identifier: Apache-2.0 */
/* kiln-bmcsim: a binary heap of timers (power transitions, delayed replies, slow bodies), plus profiles. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "kiln/error.h"
#include "sim.h"

struct timer {
	uint64_t at, seq;
	sim_timer_fn fn;
	void *arg;
	uint64_t data;
};

static struct timer *heap;
static size_t heap_n, heap_cap;
static uint64_t heap_seq;

uint64_t sim_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static bool before(const struct timer *a, const struct timer *b)
{
	return a->at < b->at || (a->at == b->at && a->seq < b->seq);
}

int sim_timer_add(uint64_t at, sim_timer_fn fn, void *arg, uint64_t data)
{
	if (heap_n == heap_cap) {
		size_t cap = heap_cap ? heap_cap * 2 : 64;
		struct timer *n = realloc(heap, cap * sizeof(*n));
		if (!n)
			return KILN_ERROR;
		heap = n;
		heap_cap = cap;
	}
	size_t i = heap_n++;
	heap[i] = (struct timer){ at, heap_seq++, fn, arg, data };
	while (i > 0 && before(&heap[i], &heap[(i - 1) / 2])) {
		struct timer tmp = heap[i];
		heap[i] = heap[(i - 1) / 2];
		heap[(i - 1) / 2] = tmp;
		i = (i - 1) / 2;
	}
	return 0;
}

int64_t sim_timer_next(uint64_t now)
{
	if (heap_n == 0)
		return -1;
	return heap[0].at <= now ? 0 : (int64_t)(heap[0].at - now);
}

static struct timer pop(void)
{
	struct timer top = heap[0];
	heap[0] = heap[--heap_n];
	size_t i = 0;
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < heap_n && before(&heap[l], &heap[m]))
			m = l;
		if (r < heap_n && before(&heap[r], &heap[m]))
			m = r;
		if (m == i)
			break;
		struct timer tmp = heap[i];
		heap[i] = heap[m];
		heap[m] = tmp;
		i = m;
	}
	return top;
}

void sim_timer_run(uint64_t now)
{
	while (heap_n > 0 && heap[0].at <= now) {
		struct timer t = pop();
		t.fn(t.arg, t.data);
	}
}

void sim_timer_clear(void)
{
	free(heap);
	heap = NULL;
	heap_n = heap_cap = 0;
}

static const struct sim_profile profiles[] = {
	{ "idrac9", false, true, true, true, true, true, false },
	{ "ilo5", true, false, false, false, true, false, true },
	{ "ilo6", true, false, false, false, true, false, true },
	{ "ilo7", true, false, false, false, true, false, true },
	{ "openbmc", false, false, false, false, true, false, false },
	{ "generic", false, false, false, false, true, false, false },
};

const struct sim_profile *sim_profile_find(const char *name)
{
	for (size_t i = 0; i < sizeof(profiles) / sizeof(profiles[0]); i++)
		if (strcasecmp(profiles[i].name, name) == 0)
			return &profiles[i];
	return NULL;
}

void sim_reply_free(struct sim_reply *r)
{
	if (!r)
		return;
	free(r->body);
	free(r->location);
	free(r->token);
	free(r->etag);
	memset(r, 0, sizeof(*r));
}
