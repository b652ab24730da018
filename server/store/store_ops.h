/* SPDX-License-Identifier: Apache-2.0 */
/* The store's work between kilnd instances and over time: images and reinstall jobs, the
 * instances sharing one database, and the node calls handed between them. Included by
 * store.h (include that). */
#ifndef KILN_STORE_OPS_H
#define KILN_STORE_OPS_H

#include <stddef.h>
#include <stdint.h>

/* --- images and reinstall jobs (store_jobs.c) --------------------------------------- */

struct image {
	int64_t id;
	char *name;
	char *kind;         /* "iso" | "pxe" */
	char *url;          /* iso: the URL the BMC mounts; NULL for pxe */
	char *os;           /* what the agent must report afterwards, or NULL */
	char *created_by;
	int64_t created_at;
};

void image_clear(struct image *img); /* frees the strings; accepts NULL */
void image_list_free(struct image *list, size_t count);
/* KILN_EEXISTS when the name is taken; *out_id (may be NULL) is the new row. */
int store_image_insert(struct store *st, int64_t *out_id, const struct image *img);
int store_image_get(struct store *st, struct image *out, const char *name); /* KILN_ENOTFOUND */
int store_image_list(struct store *st, struct image **out, size_t *out_count); /* by name */
int store_image_delete(struct store *st, const char *name);                  /* KILN_ENOTFOUND */

/* A reinstall job (jobs); the strings are owned by the struct. */
struct job {
	int64_t id;
	int64_t node_id;
	char *node;                /* node name (joined; ignored by insert and update) */
	char *image;
	char *image_kind;          /* "iso" | "pxe" */
	char *image_url;
	char *image_os;
	char *state;               /* "queued" | "running" | "done" | "failed" | "cancelled" */
	char *step;                /* server/jobs.h's step names */
	int64_t step_started;
	char *boot_id_before;
	int64_t cycle_sent_at;
	int cycle_done;
	char *error;
	char *created_by;
	int64_t audit_id;
	int force;                 /* act although work runs on the node (--force) */
	int drain;                 /* --drain: wait (queued) until the node's work ended */
	int64_t drain_timeout_s;
	int64_t drain_started;     /* 0: no drain begun */
	int drained;               /* kiln set the node's drain in Slurm */
	int64_t created_at;
	int64_t started_at;
	int64_t finished_at;
	int64_t updated_at;
};

void job_clear(struct job *j); /* frees the strings; accepts NULL */
void job_list_free(struct job *list, size_t count);
/* Inserts a queued job (j->id set). KILN_EBUSY when the node already has a queued or
 * running job. */
int store_job_insert(struct store *st, struct job *j);
int store_job_get(struct store *st, struct job *out, int64_t id); /* KILN_ENOTFOUND */
/* Jobs by id; active_only: queued and running only. node_id 0: every node. */
int store_job_list(struct store *st, struct job **out, size_t *out_count, int active_only,
		   int64_t node_id);
/* Writes state, step, step_started, boot_id_before, cycle_sent_at, cycle_done, error,
 * audit_id, started_at and finished_at of j->id. KILN_ENOTFOUND when it is gone. */
int store_job_update(struct store *st, const struct job *j);

/* --- cluster: the instances sharing one database, and its key check (store_cluster.c) -- */

/* One kilnd's row. Times are milliseconds on the database's clock (now() on PostgreSQL,
 * store_now() on SQLite); now_ms is that clock when the list was read. */
struct instance_row {
	char *id;
	char *host;
	char *listen;
	char *group;  /* NULL: serves every group */
	int64_t lease_ms;
	int64_t started_ms;
	int64_t heartbeat_ms;
	int64_t now_ms;
};

void instance_row_clear(struct instance_row *r);
void instance_list_free(struct instance_row *rows, size_t count);
/* Inserts (or replaces) the row of r->id with started and heartbeat now; r's times are
 * ignored. */
int store_instance_register(struct store *st, const struct instance_row *r);
/* Moves the heartbeat of id to now; KILN_ENOTFOUND when its row is gone (another instance
 * pruned it as dead: register again). */
int store_instance_heartbeat(struct store *st, const char *id);
int store_instance_remove(struct store *st, const char *id);
/* Every row, ordered by id. */
int store_instance_list(struct store *st, struct instance_row **out, size_t *out_count);
/* Deletes the rows whose heartbeat is older than older_ms before now; *out_deleted (may be
 * NULL) says how many. */
int store_instance_prune(struct store *st, int64_t older_ms, int *out_deleted);
/* Records value as the database's key check when it has none, and tells whether the
 * recorded one is value: *out_match 1 (or 1 with *out_first set when this call recorded it),
 * 0 when another value is recorded. */
int store_key_check(struct store *st, const char *value, int *out_match, int *out_first);

/* --- node calls: live BMC calls handed to a node's owner, and action claims (store_calls.c) */

/* The states of a node_calls row (schema 026). */
#define NODE_CALL_PENDING "pending"
#define NODE_CALL_RUNNING "running"
#define NODE_CALL_READBACK "readback"
#define NODE_CALL_DONE "done"
#define NODE_CALL_INTERRUPTED "interrupted"
#define NODE_CALL_CANCELLED "cancelled"

struct node_call_row {
	int64_t id;
	int64_t node_id;
	char *origin;      /* the instance that took the API call */
	char *owner;       /* a handed call: the instance it was handed to; NULL: a claim */
	char *op;          /* JSON of the operation (handoff.c) */
	int64_t audit_id;  /* 0: a read, not audited */
	char *state;
	char *claimed_by;  /* NULL while pending */
	int64_t created_ms;
	int64_t changed_ms;
	int rc;            /* the result: 0 or a negative kiln code */
	char *error;
	char *data;        /* JSON text of what the BMC said, or NULL */
};

void node_call_row_clear(struct node_call_row *r);
void node_call_list_free(struct node_call_row *rows, size_t count);
/* Inserts r (id ignored; state, claimed_by as given) with created and changed now_ms; sets
 * r->id. */
int store_node_call_insert(struct store *st, struct node_call_row *r);
/* Moves row id from state from (claimed by claimed_by; NULL: by anyone) to state to, claimed
 * by by; *out_moved 1 when it moved (0: another got there first, or it is gone). */
int store_node_call_move(struct store *st, int64_t id, const char *from, const char *claimed_by,
			 const char *to, const char *by, int *out_moved);
/* The result of a row claimed_by holds in state from: state to, rc, error, data (may be
 * NULL). *out_moved as above. */
int store_node_call_finish(struct store *st, int64_t id, const char *from, const char *claimed_by,
			   const char *to, int rc, const char *error, const char *data,
			   int *out_moved);
/* The rows in state (in id order) of origin and handed to owner; NULL: any. */
int store_node_call_list(struct store *st, const char *state, const char *origin,
			 const char *owner, struct node_call_row **out, size_t *out_count);
/* One row; KILN_ENOTFOUND when it is gone. */
int store_node_call_get(struct store *st, int64_t id, struct node_call_row *out);
int store_node_call_delete(struct store *st, int64_t id);
/* Deletes the finished rows (done, interrupted, cancelled) changed before before_ms whose
 * origin has no row in instances (it stopped; nobody reads them). */
int store_node_call_prune(struct store *st, int64_t before_ms);
/* NOTIFY channel, payload on PostgreSQL (sent at commit inside a transaction); nothing on
 * SQLite. */
int store_notify(struct store *st, const char *channel, const char *payload);
/* LISTEN channel on this handle: KILN_EINVAL on a backend without notifications. */
int store_listen(struct store *st, const char *channel);
/* The descriptor that turns readable when a notification may have come (-1: none), and the
 * notifications received: fn(ud, channel, payload) for each. Lost LISTENs (a reconnect) are
 * the caller's to renew: store_listen_fd() changes then. */
int store_listen_fd(struct store *st);
int store_notifications(struct store *st, void (*fn)(void *ud, const char *channel,
						    const char *payload),
			void *ud);

#endif
