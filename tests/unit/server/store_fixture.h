/* SPDX-License-Identifier: Apache-2.0 */
/* A cmocka fixture for unit tests that need a real store: a fresh database (store_db.h: a
 * SQLite file in a temporary folder, or a PostgreSQL database with KILN_TEST_PG), opened at
 * setup and removed at teardown. Included by the test files that use it (each is its own
 * program). */
#ifndef KILN_TEST_STORE_FIXTURE_H
#define KILN_TEST_STORE_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "store/store.h"
#include "store_db.h"

struct fx {
	char dir[64];
	char db[FX_TARGET_MAX];
	struct store *st;
};

static int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	fx_db_make(f->dir, sizeof(f->dir), f->db, sizeof(f->db), "kiln-unit");
	assert_int_equal(store_open(&f->st, f->db), 0);
	*state = f;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *f = *state;

	store_close(f->st);
	fx_db_remove(f->dir, f->db);
	free(f);
	return 0;
}

/* Seconds on the monotonic clock: when a test's steps happened. */
static inline double fx_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Adds a bare node (no BMC); its id. */
static inline int64_t fx_node_add(struct store *st, const char *name)
{
	struct node n = { .name = (char *)name, .ipmi_cipher = 3 };

	assert_int_equal(store_node_insert(st, &n), 0);
	return n.id;
}

#endif
