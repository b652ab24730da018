/* SPDX-License-Identifier: Apache-2.0 */
/* The process-wide budget of parsed BMC answers, and malloc_trim after a large one. */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#include "bmc/redfish/budget.h"

static pthread_mutex_t budget_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t budget_freed = PTHREAD_COND_INITIALIZER;
static size_t budget_used;

size_t rf_json_cost(const char *text, size_t len)
{
	size_t objects = 0, arrays = 0, values = 0, cost;
	int in_string = 0;

	for (size_t i = 0; i < len; i++) {
		char c = text[i];

		if (in_string) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_string = 0;
			continue;
		}
		switch (c) {
		case '"': in_string = 1; break;
		case '{': objects++; break;
		case '[': arrays++; break;
		case ',': case ':': values++; break;
		default: break;
		}
	}
	/* each count is at most len: no overflow for any len a body cap allows */
	cost = len + objects * 224 + arrays * 128 + (values + 1) * 64;
	return cost;
}

static void deadline_after(struct timespec *ts, long ms)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (ms % 1000) * 1000000;
	if (ts->tv_nsec >= 1000000000) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000;
	}
}

json_t *rf_json_load(const char *text, size_t len, size_t *cost, json_error_t *err)
{
	size_t want = rf_json_cost(text, len);
	struct timespec until;
	json_t *j;
	int rc = 0;

	*cost = 0;
	if (want > RF_PARSE_ONE_MAX) {
		snprintf(err->text, sizeof(err->text),
			 "%zu bytes that would take ~%zu MB to parse, over the %zu MB an answer may",
			 len, want >> 20, RF_PARSE_ONE_MAX >> 20);
		err->line = 0;
		return NULL;
	}
	if (want > RF_PARSE_FREE) {
		deadline_after(&until, RF_PARSE_WAIT_MS);
		pthread_mutex_lock(&budget_lock);
		while (budget_used + want > RF_PARSE_BUDGET && rc != ETIMEDOUT)
			rc = pthread_cond_timedwait(&budget_freed, &budget_lock, &until);
		if (budget_used + want <= RF_PARSE_BUDGET) {
			budget_used += want;
			*cost = want;
		}
		pthread_mutex_unlock(&budget_lock);
		if (!*cost) {
			snprintf(err->text, sizeof(err->text),
				 "%zu bytes not parsed: other BMCs' large answers hold kilnd's %zu MB"
				 " parse budget", len, RF_PARSE_BUDGET >> 20);
			err->line = 0;
			return NULL;
		}
	}
	j = json_loadb(text, len, 0, err);
	if (!j) {
		rf_json_release(*cost);
		*cost = 0;
	}
	return j;
}

void rf_json_release(size_t cost)
{
	if (!cost)
		return;
	pthread_mutex_lock(&budget_lock);
	budget_used -= cost;
	pthread_cond_broadcast(&budget_freed);
	pthread_mutex_unlock(&budget_lock);
	/* glibc keeps a large tree's freed blocks in its arenas (the loop threads' own): 1.9 GB
	 * stayed resident after four hostile Systems were freed */
	if (cost >= RF_TRIM_AFTER)
		malloc_trim(0);
}

size_t rf_json_budget_used(void)
{
	size_t used;

	pthread_mutex_lock(&budget_lock);
	used = budget_used;
	pthread_mutex_unlock(&budget_lock);
	return used;
}
