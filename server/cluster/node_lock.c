/* SPDX-License-Identifier: Apache-2.0 */
/* The per-node action lock: a set of node ids under one mutex. */
#include <pthread.h>
#include <stdlib.h>

#include "kiln/error.h"
#include "cluster/node_lock.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int64_t *held;
static size_t count, cap;

static int find(int64_t id)
{
	for (size_t i = 0; i < count; i++)
		if (held[i] == id)
			return (int)i;
	return -1;
}

/* Makes room for n more ids; 0 or -1 (ENOMEM). Caller holds the lock. */
static int reserve(size_t n)
{
	size_t ncap = cap ? cap : 64;
	int64_t *ids;

	while (ncap < count + n)
		ncap *= 2;
	if (ncap == cap)
		return 0;
	ids = realloc(held, ncap * sizeof(*ids));
	if (!ids)
		return -1;
	held = ids;
	cap = ncap;
	return 0;
}

int node_lock_claim(int64_t node_id)
{
	int claimed = 0;
	int rc = node_lock_claim_each(&node_id, 1, &claimed);

	return rc < 0 ? rc : claimed;
}

int node_lock_claim_each(const int64_t *ids, size_t n, int *claimed)
{
	int taken = 0;

	pthread_mutex_lock(&lock);
	if (reserve(n) < 0) {
		pthread_mutex_unlock(&lock);
		return kiln_fail(KILN_ERROR, "out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		claimed[i] = find(ids[i]) < 0;
		if (claimed[i]) {
			held[count++] = ids[i];
			taken++;
		}
	}
	pthread_mutex_unlock(&lock);
	return taken;
}

void node_lock_release(int64_t node_id)
{
	int i;

	pthread_mutex_lock(&lock);
	i = find(node_id);
	if (i >= 0)
		held[i] = held[--count];
	pthread_mutex_unlock(&lock);
}

int node_lock_held(int64_t node_id)
{
	int i;

	pthread_mutex_lock(&lock);
	i = find(node_id);
	pthread_mutex_unlock(&lock);
	return i >= 0;
}
