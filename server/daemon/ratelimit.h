/* SPDX-License-Identifier: Apache-2.0 */
/* Per-address token buckets: how often one client address may do a thing (enroll). */
#ifndef KILND_RATELIMIT_H
#define KILND_RATELIMIT_H

#include <stddef.h>

struct ratelimit;

/*
 * A limiter of rate_per_s requests a second per address, burst at once, remembering up to
 * slots addresses (an address not remembered starts with a full bucket: a client with
 * more addresses than slots is not limited per address, and no table grows for it).
 * rate_per_s <= 0: nothing is limited. KILN_ERROR when out of memory.
 */
int ratelimit_new(struct ratelimit **out, double rate_per_s, double burst, size_t slots);
void ratelimit_free(struct ratelimit *rl); /* accepts NULL */

/* Takes one request for address key at time now (seconds, monotonic): 0 when allowed,
 * else the whole seconds (at least 1) to wait: each refused request is given the next free
 * slot of the rate after those refused before it (a crowd comes back spread out, not all
 * in the next second). Thread-safe. */
unsigned ratelimit_take(struct ratelimit *rl, const char *key, double now);

#endif
