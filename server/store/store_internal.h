/* SPDX-License-Identifier: Apache-2.0 */
/* What the store_*.c files share: the backend, the statement cache slots, the list helpers. */
#ifndef KILN_STORE_INTERNAL_H
#define KILN_STORE_INTERNAL_H

#include <stdint.h>

#include <sqlite3.h>

#include "store/sql.h"
#include "store/store.h"

/* A statement prepared for one call, not cached. */
#define STMT_NONE (-1)

/* One slot per cached statement; each store_*.c file owns the SQL of its own slots. */
enum store_stmt_id {
	STMT_SAVEPOINT,
	STMT_RELEASE,
	STMT_ROLLBACK_TO,
	STMT_BEGIN,
	STMT_COMMIT,
	STMT_ROLLBACK,
	STMT_SCHEMA_VERSION,

	STMT_NODE_INSERT,
	STMT_NODE_UPDATE,
	STMT_NODE_GET,
	STMT_NODE_DELETE,
	STMT_NODE_LIST,
	STMT_NODE_GROUPS_GET,
	STMT_NODE_GROUPS_ALL,
	STMT_NODE_GROUPS_CLEAR,
	STMT_NODE_GROUP_ADD,
	STMT_GROUP_MEMBERS,
	STMT_NODE_NAMES,

	STMT_TOKEN_INSERT,
	STMT_TOKEN_LOOKUP,
	STMT_TOKEN_TOUCH,
	STMT_TOKEN_LIST,
	STMT_TOKEN_REVOKE,
	STMT_AGENT_SEEN_LIST,
	STMT_AGENT_TOKEN_INSERT,
	STMT_AGENT_TOKEN_TOUCH,
	STMT_AGENT_TOKEN_FIND,
	STMT_AGENT_TOKEN_REVOKE_NODE,

	STMT_AUDIT_BEGIN,
	STMT_AUDIT_FINISH,
	STMT_AUDIT_LIST,
	STMT_AUDIT_POWER_OFF,
	STMT_AUDIT_INTERRUPT,
	STMT_AUDIT_READBACK,

	STMT_BMC_LOG_STATE_GET,
	STMT_BMC_LOG_STATE_PUT,
	STMT_BMC_LOG_ADD,
	STMT_BMC_LOG_PRUNE,
	STMT_BMC_LOG_KNOWN,
	STMT_BMC_SESSION_GET,
	STMT_BMC_SESSION_PUT,
	STMT_BMC_SESSION_DROP,

	STMT_EVENT_INSERT,
	STMT_EVENT_EXISTS,
	STMT_EVENT_LIST,

	STMT_AGENT_REPORT_CLAIM,
	STMT_AGENT_STATE_GET,
	STMT_AGENT_REPORT_GET,
	STMT_AGENT_STATE_PUT,
	STMT_AGENT_REFUSAL_NOTE,
	STMT_AGENT_REFUSAL_GET,
	STMT_AGENT_STATE_LIST,
	STMT_AGENT_GPUS_GET,
	STMT_AGENT_GPU_SUMMARY,
	STMT_AGENT_AUDIT_ROWS,
	STMT_AGENT_SUMMARY_PUT,
	STMT_AGENT_GPUS_DELETE,
	STMT_AGENT_GPU_INSERT,
	STMT_AGENT_GPU_UPDATE,
	STMT_AGENT_HISTORY_INSERT,
	STMT_AGENT_HISTORY_PRUNE,
	STMT_AGENT_SEEN_PRUNE,
	STMT_AGENT_COUNT_HISTORY,
	STMT_AGENT_COUNT_SEEN,
	STMT_NODE_BMC_SERIAL_SET,
	STMT_NODE_FIND_BY_SERIAL,
	STMT_ENROLL_TOKEN_INSERT,
	STMT_ENROLL_TOKEN_LOOKUP,
	STMT_ENROLL_TOKEN_TOUCH,
	STMT_ENROLL_TOKEN_LIST,
	STMT_ENROLL_TOKEN_REVOKE,
	STMT_PENDING_COUNT,
	STMT_PENDING_UPSERT,
	STMT_PENDING_LIST,
	STMT_PENDING_ACCEPT,
	STMT_PENDING_DELETE,
	STMT_ENROLL_FACTS,
	STMT_PENDING_FORGET,
	STMT_JOB_ENROLL_TAKE,

	STMT_FLEET_STATE_GET,
	STMT_FLEET_STATE_PUT,
	STMT_FLEET_STATE_LIST,
	STMT_FLEET_DOWN_LIST,
	STMT_MAINT_SET,
	STMT_MAINT_CLEAR,
	STMT_MAINT_LIST,
	STMT_FLEET_ECC_WINDOW,
	STMT_EVENT_QUERY,
	STMT_EVENT_QUERY_NODE,
	STMT_INVENTORY_PUT,
	STMT_INVENTORY_TIME,
	STMT_INVENTORY_FIRMWARE,
	STMT_BMC_SAMPLE_INSERT,
	STMT_BMC_HISTORY_PRUNE,
	STMT_BMC_SAMPLES_LIST,
	STMT_IDENTITY_GET,
	STMT_IDENTITY_REFUSE,
	STMT_IDENTITY_ELSEWHERE,
	STMT_IDENTITY_SETTLE,
	STMT_IDENTITY_OWNER,
	STMT_SESSION_INSERT,
	STMT_SESSION_LOOKUP,
	STMT_SESSION_END,
	STMT_SESSION_PRUNE,
	STMT_NODE_BMC_SAMPLES,
	STMT_NODE_AGENT_SAMPLES,

	STMT_INSTANCE_REGISTER,
	STMT_INSTANCE_HEARTBEAT,
	STMT_INSTANCE_REMOVE,
	STMT_INSTANCE_LIST,
	STMT_INSTANCE_PRUNE,
	STMT_KEY_CHECK_PUT,
	STMT_KEY_CHECK_GET,
	STMT_NODE_CALL_INSERT,
	STMT_NODE_CALL_MOVE,
	STMT_NODE_CALL_FINISH,
	STMT_NODE_CALL_LIST,
	STMT_NODE_CALL_GET,
	STMT_NODE_CALL_DELETE,
	STMT_NODE_CALL_PRUNE,
	STMT_NOTIFY,
	STMT_NODE_BMC_IDS_SET,
	STMT_NODE_FIND_BY_UUID,
	STMT_NODE_FIND_BY_BMC_SERIAL,

	STMT_COUNT
};

/*
 * What a backend implements (store_sqlite.c, store_pg.c). run() prepares q (cached in its slot
 * unless STMT_NONE), binds args, and calls fn for each row with a struct sql_row whose h and
 * row the column functions read; it maps the driver's errors to kiln codes (unique -> EEXISTS,
 * foreign key -> ENOTFOUND, other constraints -> EINVAL, lock timeouts -> EBUSY) with
 * "store: <q->what>: <message>". The column functions are called only on non-NULL columns
 * (sql.c checks col_null first).
 */
struct store_backend {
	const char *name; /* "sqlite", "postgresql" */
	int (*run)(struct store *st, const struct sql_stmt *q, const struct sql_arg *args, size_t n,
		   sql_row_fn fn, void *ctx, int64_t *changes);
	int (*col_null)(const struct sql_row *r, int col);
	int64_t (*col_int)(const struct sql_row *r, int col);
	double (*col_real)(const struct sql_row *r, int col);
	const char *(*col_text)(const struct sql_row *r, int col);
	const void *(*col_blob)(const struct sql_row *r, int col, size_t *len);
	/* sql_write() and sql_exec_later(): a write whose count nobody reads (changes NULL) or
	 * reads later; NULL: run does it */
	int (*write)(struct store *st, const struct sql_stmt *q, const struct sql_arg *args,
		     size_t n, int64_t *changes);
	int (*begin)(struct store *st); /* takes the write lock now */
	/* store_begin_nodes(); NULL: begin does it */
	int (*begin_nodes)(struct store *st, const int64_t *ids, size_t n);
	int (*commit)(struct store *st);
	int (*rollback)(struct store *st); /* 0 when no transaction is open */
	int (*savepoint)(struct store *st);
	int (*release)(struct store *st);
	int (*rollback_to)(struct store *st);
	int (*schema_version)(struct store *st, int *out);
	int (*checkpoint)(struct store *st); /* store_wal_checkpoint(); 0 where nothing to do */
	void (*log_watch)(struct store *st, int *frames); /* store_wal_frames_watch() */
	/* store_backup(): a consistent copy of the database into path while others write;
	 * NULL where the backend's own tools do it (store.c answers with how). */
	int (*backup)(struct store *st, const char *path);
	/* notifications (store_listen() and its kin); NULL where the backend has none */
	int (*listen)(struct store *st, const char *channel);
	int (*listen_fd)(struct store *st);
	int (*notifications)(struct store *st,
			     void (*fn)(void *ud, const char *channel, const char *payload),
			     void *ud);
	void (*close)(struct store *st);
	int64_t (*round_trips)(struct store *st); /* NULL: none (SQLite runs in kilnd) */
};

struct sql_row {
	struct store *st;
	void *h;  /* the backend's statement or result */
	int row;  /* the row number within h, where the backend needs it */
};

struct store {
	const struct store_backend *be;
	sqlite3 *db;                    /* the SQLite backend's connection */
	sqlite3_stmt *stmt[STMT_COUNT]; /* its statement cache */
	void *pg;                       /* the PostgreSQL backend's state */
	int64_t (*now)(void); /* clock; time() unless a test replaces it */
};

/* The PostgreSQL advisory lock store_begin() takes (store_pg.c): kiln's writers, one at a
 * time (tests hold it to stall a writer). */
#define STORE_PG_WRITER_LOCK "7305874131"

/* Opens the backends (store.c's store_open() chooses): 0 or an error; st->be set on success. */
int store_sqlite_open(struct store *st, const char *path);
/* conninfo: a libpq connection string or URI; password_file: NULL, or the file whose first
 * line is the password. */
int store_pg_open(struct store *st, const char *conninfo, const char *password_file);

/*
 * The cached statement for id, prepared from sql on first use and reset otherwise.
 * The caller binds, steps and ends with store_stmt_done(). Errors carry the message.
 */
int store_stmt(struct store *st, sqlite3_stmt **out, enum store_stmt_id id, const char *sql);
/* Resets the statement and clears its bindings so it holds no read snapshot; accepts NULL. */
void store_stmt_done(sqlite3_stmt *s);

/* Maps an SQLite result to a kiln code with "store: what: sqlite message" set. */
int store_fail(struct store *st, int rc, const char *what);

/* A savepoint makes a multi-statement write atomic inside or outside store_begin(). */
int store_savepoint(struct store *st);
int store_release(struct store *st);
void store_rollback_to(struct store *st); /* undoes and releases; keeps the current message */

/* Binds a string or NULL. */
int store_bind_text(sqlite3_stmt *s, int idx, const char *v);
/* Copies column idx as a new string; NULL column -> *out = NULL. KILN_ERROR on ENOMEM. */
int store_column_strdup(char **out, sqlite3_stmt *s, int idx);
/* A REAL column, NAN when NULL. */
double store_column_real_or_nan(sqlite3_stmt *s, int idx);
/* Binds a row limit: 0 (no limit) or one beyond int64 binds -1, SQLite's "no limit". */
void store_bind_limit(sqlite3_stmt *s, int idx, size_t limit);

/*
 * Grows *list (elements of size sz, *cap of them allocated) so that index count fits,
 * doubling from 16; new elements are zeroed. 0 or KILN_ERROR (ENOMEM), *list unchanged.
 */
int store_list_grow(void **list, size_t *cap, size_t count, size_t sz);


/* The columns store_event_rows() reads, and the FROM clause they need (alias e). */
#define STORE_EVENT_SELECT                                                                         \
	"SELECT e.id, e.time, coalesce(e.node_id, 0), n.name, e.severity, e.source, e.kind,"     \
	" e.message, e.dedup_key, coalesce(e.bmc_time, 0) FROM events e"                        \
	" LEFT JOIN nodes n ON n.id = e.node_id"
/* Runs q (a STORE_EVENT_SELECT query) with args into a new list of events. */
int store_event_rows(struct store *st, const struct sql_stmt *q, const struct sql_arg *args,
		     size_t n, struct event **out, size_t *out_count);

/* Reads a (node_id, time, temperature, power) row into a struct agent_sample (sql_list). */
int store_sample_read(const struct sql_row *r, void *elem);

int64_t store_now(struct store *st);
/* For tests: replaces the clock (NULL restores time()). */
void store_clock_set(struct store *st, int64_t (*now)(void));

#endif
