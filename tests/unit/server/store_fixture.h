/* A cmocka fixture for unit tests that need a real store: a fresh database in a temporary
 * folder, opened at setup and removed with its WAL files at teardown. Included by the test
 * files that use it (each is its own program). */
#ifndef KILN_TEST_STORE_FIXTURE_H
#define KILN_TEST_STORE_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "store/store.h"

struct fx {
	char dir[64];
	char db[128];
	struct store *st;
};

static int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "/tmp/kiln-unit-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->db, sizeof(f->db), "%s/kiln.db", f->dir);
	assert_int_equal(store_open(&f->st, f->db), 0);
	*state = f;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *f = *state;
	char p[160];

	store_close(f->st);
	unlink(f->db);
	snprintf(p, sizeof(p), "%s-wal", f->db);
	unlink(p);
	snprintf(p, sizeof(p), "%s-shm", f->db);
	unlink(p);
	assert_int_equal(rmdir(f->dir), 0);
	free(f);
	return 0;
}

#endif
