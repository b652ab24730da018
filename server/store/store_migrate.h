/* SPDX-License-Identifier: Apache-2.0 */
/* Moving a SQLite kiln database into an empty PostgreSQL store (kilnd --migrate-from-sqlite). */
#ifndef KILN_STORE_STORE_MIGRATE_H
#define KILN_STORE_STORE_MIGRATE_H

#include <stddef.h>
#include <stdint.h>

struct store;

/* What store_migrate_from_sqlite() needs from its caller (kilnd's secret.key side). */
struct store_migrate_ops {
	/* Opens sealed (nonce || ciphertext, sealed with the old key, associated data ad) and
	 * seals the plaintext again with the new key: 0 with *out (malloc'd, *out_len bytes),
	 * or an error with its message (e.g. the old key does not open it). */
	int (*reseal)(void *ud, unsigned char **out, size_t *out_len,
		      const unsigned char *sealed, size_t len, const char *ad);
	/* After each table copied, with its row count; skipped tables are not reported. */
	void (*copied)(void *ud, const char *table, int64_t rows);
	const char *old_key_check; /* the old key's check value: the SQLite key_check row,
				    * when it has one, must equal it */
	const char *new_key_check; /* what the target's key_check row becomes */
	void *ud;
};

/*
 * Copies every table of the kiln SQLite database at path (opened read-only, read in one
 * snapshot, never written) into st, which must be a PostgreSQL store at the same schema
 * version holding no nodes and no tokens: rows with their ids, each identity column's
 * sequence set past its largest id, the sealed BMC passwords re-sealed through ops->reseal,
 * key_check set to ops->new_key_check; kept Redfish sessions are left out (sealed for one
 * instance: the new ones log in afresh). One transaction on st: all or nothing.
 * Errors: KILN_ENOTFOUND (no such file), KILN_EINVAL (not a kiln database, an older schema,
 * st is not PostgreSQL), KILN_ENEWER (a newer schema), KILN_EEXISTS (st is not empty),
 * KILN_ECONFIG (the SQLite file's key check differs from ops->old_key_check), or what
 * ops->reseal or the store answered; each with its message.
 */
int store_migrate_from_sqlite(struct store *st, const char *path,
			      const struct store_migrate_ops *ops);

#endif
