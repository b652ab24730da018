/* SPDX-License-Identifier: Apache-2.0 */
/* kilnd's state dir: creation, the lock that keeps a second kilnd out, secret.key, admin.token. */
#ifndef KILND_STATEDIR_H
#define KILND_STATEDIR_H

#include <stddef.h>

#include "daemon/secret.h"

struct store;

struct statedir {
	char *path;
	int lock_fd;            /* holds the write lock on DIR/kilnd.lock while open */
	struct secret_key *key; /* DIR/secret.key, in sodium_malloc'd memory (no core holds it) */
	int key_created;        /* secret.key was created by this start */
};

/*
 * Creates path (mode 0700) when absent, takes DIR/kilnd.lock and loads or creates
 * DIR/secret.key. A state dir held by another process fails with KILN_EBUSY:
 * "state dir DIR is in use by pid N". The caller frees *out with statedir_close.
 */
int statedir_open(struct statedir **out, const char *path);

/* Releases the lock and wipes the key; accepts NULL. */
void statedir_close(struct statedir *sd);

/* DIR/name, malloc'd; NULL on ENOMEM. */
char *statedir_file(const struct statedir *sd, const char *name);

/*
 * On a store without API tokens, creates the first admin token: stores its hash (name
 * "admin") and writes the bare token and a newline to DIR/admin.token (mode 0600), both or
 * neither. *out_created says whether it did. A store that has tokens is left alone, and the
 * file is never rewritten: an admin.token beside a store without tokens is an error.
 */
int statedir_admin_token_ensure(struct statedir *sd, struct store *st, int *out_created);

/* Writes DIR/name with mode through a temporary file and rename, so readers never see a
 * partial file. */
int statedir_write_file(const struct statedir *sd, const char *name, const char *data, size_t len,
			int mode);

#endif
