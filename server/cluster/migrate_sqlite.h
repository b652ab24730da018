/* SPDX-License-Identifier: Apache-2.0 */
/* kilnd --migrate-from-sqlite: a SQLite state's data into this kilnd's PostgreSQL store. */
#ifndef KILND_MIGRATE_SQLITE_H
#define KILND_MIGRATE_SQLITE_H

#include <stdio.h>

#include "daemon/secret.h"

struct store;

/*
 * Copies the kiln SQLite database at path into st (an empty PostgreSQL store), its BMC
 * passwords opened with the secret.key that lies beside path and sealed again with key;
 * writes one line per table copied, then a summary, to progress. Returns 0, or an error
 * with its message: store_migrate_from_sqlite()'s, or KILN_ENOTFOUND for a missing old
 * secret.key, or the failure to open a sealed password with it.
 */
int migrate_sqlite_run(struct store *st, const char *path, const struct secret_key *key,
		       FILE *progress);

#endif
