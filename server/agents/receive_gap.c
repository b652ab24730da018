/* SPDX-License-Identifier: Apache-2.0 */
/* The moments kilnd could not receive agent reports, kept in a few atomics. */
#include <stdatomic.h>

#include "agents/receive_gap.h"

static _Atomic int64_t gap_last;        /* latest marked moment */
static _Atomic int64_t ingest_since[RECEIVE_GAP_LANES]; /* each lane's batch's start, 0: none */
static _Atomic long open_connections;
static _Atomic int saturated;

void receive_gap_mark(int64_t t)
{
	int64_t cur = atomic_load(&gap_last);

	while (t > cur && !atomic_compare_exchange_weak(&gap_last, &cur, t))
		;
}

void receive_gap_ingest_busy(int lane, int64_t since, int64_t now)
{
	int64_t was;

	if (lane < 0 || lane >= RECEIVE_GAP_LANES)
		lane = RECEIVE_GAP_LANES - 1;
	was = atomic_exchange(&ingest_since[lane], since);

	if (since == 0 && was > 0 && now - was >= RECEIVE_GAP_STALL_S)
		receive_gap_mark(now);
}

void receive_gap_connections(int delta, long limit, int64_t now)
{
	long open = atomic_fetch_add(&open_connections, delta) + delta;
	int full = limit > 0 && open >= limit, was = atomic_exchange(&saturated, full);

	/* full now, or just stopped being full: the last moment it could not receive */
	if (full || was)
		receive_gap_mark(now);
}

int64_t receive_gap_last(int64_t now)
{
	if (atomic_load(&saturated))
		return now;
	for (int i = 0; i < RECEIVE_GAP_LANES; i++) {
		int64_t since = atomic_load(&ingest_since[i]);

		if (since > 0 && now - since >= RECEIVE_GAP_STALL_S)
			return now;
	}
	return atomic_load(&gap_last);
}

void receive_gap_reset(void)
{
	atomic_store(&gap_last, 0);
	for (int i = 0; i < RECEIVE_GAP_LANES; i++)
		atomic_store(&ingest_since[i], 0);
	atomic_store(&open_connections, 0);
	atomic_store(&saturated, 0);
}
