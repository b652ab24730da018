/* SPDX-License-Identifier: Apache-2.0 */
/* What the PostgreSQL backend's two files share: store_pg.c (connecting, transactions,
 * migrations, notifications) and store_pg_run.c (statements, the pipeline, columns). */
#ifndef KILN_STORE_PG_INTERNAL_H
#define KILN_STORE_PG_INTERNAL_H

#include <libpq-fe.h>

#include "store/store_internal.h"

/* Commands that may wait in the pipeline for their answers before it is synced. */
#define PG_PIPE_MAX 64

struct pg {
	PGconn *conn;
	unsigned char prepared[STMT_COUNT];
	int tx;          /* a transaction of ours is open (begun, not yet ended) */
	int sp_depth;    /* savepoints open */
	int sp_implicit; /* the outermost one began the transaction */
	void **blobs;    /* bytea values decoded for the current row */
	size_t nblobs, blobs_cap;
	/*
	 * Pipeline mode (store_begin_nodes()): writes are sent without waiting for their
	 * answers; the answers are read at the next statement that waits (a read, the commit).
	 * owed: the commands sent whose answers are not read yet, what each one does in
	 * owed_what. lost: one of them failed, so the transaction is lost: every statement
	 * fails until it ends, and the commit rolls back.
	 */
	int pipe;
	int owed;
	const char *owed_what[PG_PIPE_MAX];
	int64_t *owed_changes[PG_PIPE_MAX]; /* where an owed write's count goes, or NULL */
	int lost;
	int64_t trips; /* round trips to the server so far (store_round_trips()) */
};

static inline struct pg *pg_of(struct store *st)
{
	return st->pg;
}

/* A libpq message on one line into buf: its line breaks as "; ", none at the end. */
const char *pg_message(const char *m, char *buf, size_t len);
/* Maps a failed result (or, res NULL, the connection's error) to a kiln code with
 * "store: what: message"; clears res. */
int pg_fail(struct store *st, PGresult *res, const char *what);
/* Runs a fixed command (no parameters, no rows kept) and waits for it, also in the
 * pipeline (whose owed answers it reads first). */
int pg_simple(struct store *st, const char *sql, const char *what);
/* A fixed command that needs no answer: in the pipeline it is sent without waiting. */
int pg_simple_nowait(struct store *st, const char *sql, const char *what);
int pg_in_transaction(struct store *st);
/* Opens a lost connection again, outside a transaction only. */
int pg_reconnect(struct store *st);
void pg_blobs_free(struct pg *pg);

/* Pipeline mode on (the connection idle in a transaction), and off again: every owed
 * answer read (their errors returned), statements prepared in a lost pipeline forgotten. */
int pg_pipe_enter(struct store *st);
int pg_pipe_leave(struct store *st);
/* The COMMIT, in the pipeline: the owed answers and its own in one round trip; an error, or
 * a transaction that was not committed (PostgreSQL ends a failed one with a rollback). */
int pg_pipe_commit(struct store *st);

/* The backend's runners and column readers (struct store_backend). */
int pg_run(struct store *st, const struct sql_stmt *q, const struct sql_arg *args, size_t n,
	   sql_row_fn fn, void *ctx, int64_t *changes);
int pg_write(struct store *st, const struct sql_stmt *q, const struct sql_arg *args, size_t n,
	     int64_t *changes);
int pg_col_null(const struct sql_row *r, int col);
int64_t pg_col_int(const struct sql_row *r, int col);
double pg_col_real(const struct sql_row *r, int col);
const char *pg_col_text(const struct sql_row *r, int col);
const void *pg_col_blob(const struct sql_row *r, int col, size_t *len);

#endif
