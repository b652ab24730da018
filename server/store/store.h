/* SPDX-License-Identifier: Apache-2.0 */
/* kilnd's store: every SQL statement of kilnd lives behind these functions (SQLite or PostgreSQL). */
#ifndef KILN_STORE_H
#define KILN_STORE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

struct store; /* opaque: one database connection with its prepared statements */

/*
 * Opens the store named by target and applies the embedded migrations in order inside one
 * transaction, recording each in schema_version. A database whose schema_version is newer
 * than this kiln knows fails with KILN_ENEWER and a message naming both versions. Each
 * thread that uses the store opens its own handle.
 *
 * target is a SQLite path (created, opened in WAL mode), or "postgresql:" followed by a
 * libpq connection string (or a whole postgresql:// URI), optionally led by
 * "password_file=FILE;": the password is then read from FILE (which others must not be
 * able to read) at every connect and never appears in a message.
 */
#define STORE_PG_PREFIX "postgresql:"
int store_open(struct store **out, const char *target);
/* Whether target names the PostgreSQL backend. */
int store_target_is_pg(const char *target);
void store_close(struct store *st);

/* Highest applied migration number. */
int store_schema_version(struct store *st, int *out);

/*
 * Copies the database into path (replaced when it exists, mode 0600) while other handles and
 * processes go on writing: SQLite's online backup of one read snapshot, written beside path
 * and renamed onto it when complete. The copy does not hold secret.key. A backend without an
 * online copy (PostgreSQL: pg_dump) fails with KILN_EINVAL and a message naming its tool.
 */
int store_backup(struct store *st, const char *path);

/* --- nodes ------------------------------------------------------------------------- */

enum node_bmc_protocol { BMC_NONE = 0, BMC_REDFISH, BMC_REDFISH_HTTP, BMC_IPMI };
enum node_tls_mode { TLS_VERIFY = 0, TLS_INSECURE, TLS_CA, TLS_FINGERPRINT };

struct node {
	int64_t id;
	char *name;
	char **groups;             /* ngroups strings */
	size_t ngroups;
	char *rack;                /* or NULL */
	enum node_bmc_protocol bmc_protocol;
	char *bmc_host;            /* NULL when BMC_NONE */
	int bmc_port;              /* 0: protocol default (443 redfish, 623 ipmi) */
	char *bmc_user;            /* or NULL */
	unsigned char *bmc_password_enc; /* secret_encrypt() output, or NULL */
	size_t bmc_password_enc_len;
	enum node_tls_mode tls_mode;
	char *tls_ca_file;         /* TLS_CA */
	char *tls_fingerprint;     /* TLS_FINGERPRINT: 64 lowercase hex chars */
	int ipmi_cipher;           /* default 3 */
	char *ipmi_privilege;      /* "user"|"operator"|"admin", default "admin" */
	char *ipmi_workarounds;    /* FreeIPMI names, comma-separated, or NULL */
	char *sol_host;            /* --sol ipmi://HOST[:PORT], or NULL */
	int sol_port;
	char *bmc_system;          /* --bmc-system ID, or NULL */
	int64_t credentials_version; /* bumped whenever user/password change */
	int64_t created_at;        /* unix seconds */
	int64_t updated_at;
};

void node_free(struct node *n); /* frees the fields and n itself; accepts NULL */
void node_list_free(struct node **nodes, size_t count);

/* Inserts n (n->id ignored; n->id and n->credentials_version = 1 set on success).
 * KILN_EEXISTS when the name is taken. */
int store_node_insert(struct store *st, struct node *n);
/* Replaces every field of the node with n->id (the name may change); groups too.
 * credentials_version is kept by the store: +1 when bmc_user or the password blob change.
 * KILN_ENOTFOUND for an unknown id, KILN_EEXISTS when the new name is taken. */
int store_node_update(struct store *st, const struct node *n);
/* KILN_ENOTFOUND when absent. *out is owned by the caller. */
int store_node_get(struct store *st, struct node **out, const char *name);
int store_node_delete(struct store *st, const char *name);
/* All nodes ordered by name. */
int store_node_list(struct store *st, struct node ***out, size_t *out_count);
/* Names of the nodes in a group, for @group in noderanges; appends to a kiln_nodelist.
 * A group exists only through its members: KILN_ENOTFOUND when it has none. */
struct kiln_nodelist;
int store_group_members(struct store *st, const char *group, struct kiln_nodelist *out);
int store_node_names(struct store *st, struct kiln_nodelist *out);

/* --- API tokens -------------------------------------------------------------------- */

/* viewer < operator < admin is a ladder; metrics stands beside it: GET /metrics only. */
enum token_role { ROLE_VIEWER = 1, ROLE_OPERATOR = 2, ROLE_ADMIN = 3, ROLE_METRICS = 4 };

struct api_token {
	int64_t id;
	char *name;
	enum token_role role;
	int64_t created_at;
	int64_t last_used_at; /* 0: never */
	int revoked;
};

/* Stores a token by its hash (secret_token_hash). */
int store_token_insert(struct store *st, int64_t *out_id, const char *name, enum token_role role,
		       const unsigned char hash[32]);
/* Finds a live (not revoked) token by hash. KILN_ENOTFOUND otherwise. Records last_used_at
 * (at most once a minute; skipped when the database is busy). */
int store_token_lookup(struct store *st, struct api_token *out, const unsigned char hash[32]);
int store_token_list(struct store *st, struct api_token **out, size_t *out_count);
int store_token_revoke(struct store *st, int64_t id);
void api_token_clear(struct api_token *t);

/* --- dashboard sessions (a browser's cookie, standing for an API token) -------------- */

struct ui_session {
	int64_t id;
	struct api_token token; /* the token the session acts as (its name is the audit actor) */
	char csrf[64];          /* what its state-changing requests carry in X-CSRF-Token */
	int64_t expires_at;
};

/* Stores a session by the hash of its cookie value, for the API token token_id. */
int store_session_insert(struct store *st, int64_t *out_id, const unsigned char hash[32],
			 int64_t token_id, const char *csrf, int64_t expires_at);
/* The live session with that hash: not ended, not expired, its token not revoked;
 * KILN_ENOTFOUND otherwise. The caller clears out->token with api_token_clear. */
int store_session_lookup(struct store *st, struct ui_session *out, const unsigned char hash[32]);
/* Ends a session (log-out); ending one already ended changes nothing. */
int store_session_end(struct store *st, int64_t id);
/* Deletes the sessions that ended or expired before cutoff. */
int store_session_prune(struct store *st, int64_t cutoff);

/* --- agent tokens (one or more per node) -------------------------------------------- */

int store_agent_token_insert(struct store *st, int64_t *out_id, int64_t node_id,
			     const unsigned char hash[32]);
/* Node id for a live agent token. */
int store_agent_token_lookup(struct store *st, int64_t *out_node_id, const unsigned char hash[32]);
/* Like store_agent_token_lookup but writes nothing: the token's id and node, and *out_stale
 * set when its last use is older than a minute (the caller records the use with
 * store_agent_token_touch, e.g. inside the transaction that stores the report). */
int store_agent_token_find(struct store *st, int64_t *out_id, int64_t *out_node_id,
			   int *out_stale, const unsigned char hash[32]);
/* Records that agent token id was used now (at most once a minute; a busy database skips it). */
int store_agent_token_touch(struct store *st, int64_t id);
/* Revokes every live agent token of a node (re-enrollment, a new token); *out_revoked (may be
 * NULL) says how many. */
int store_agent_token_revoke_node(struct store *st, int64_t node_id, int *out_revoked);

/* --- Redfish sessions kept across restarts (store_sessions.c) ----------------------- */

/* A node's Redfish session as the driver last had it: the token is sealed by the caller
 * (secret.c), the store keeps bytes. auth is "session", or "basic (why)" when the BMC is
 * reached with HTTP Basic instead (then there is no token). */
struct bmc_session_row {
	int64_t node_id;
	int64_t credentials_version;
	unsigned char *token_enc;    /* NULL: no session */
	size_t token_enc_len;
	char *uri;                   /* the session resource, or NULL when not known */
	char *auth;
	int64_t time;
};

/* Fills *out (freed with bmc_session_row_clear); KILN_ENOTFOUND when the node keeps none. */
int store_bmc_session_get(struct store *st, struct bmc_session_row *out, int64_t node_id);
/* Writes (replaces) row->node_id's row; time is the store's clock. */
int store_bmc_session_put(struct store *st, const struct bmc_session_row *row);
/* Drops node_id's row if it still names the session at uri (NULL: a row without a URI), so
 * that the logout of a retired state cannot drop the session its successor just opened. */
int store_bmc_session_drop(struct store *st, int64_t node_id, const char *uri);
void bmc_session_row_clear(struct bmc_session_row *r);

/* --- audit log ----------------------------------------------------------------------- */

struct audit_entry {
	int64_t id;
	int64_t time;        /* unix seconds */
	char *actor;         /* token name ("admin", "ops-bot") or "kilnd" for automatic actions */
	char *action;        /* "node.add", "power.cycle", "token.create", ... */
	char *target;        /* node name, token id, ... */
	char *detail;        /* JSON text or NULL */
	char *outcome;       /* "pending" until finished, then "ok" or "failed: <reason>" */
};

/* Writes a row before the action (outcome "pending"); *out_id identifies it. */
int store_audit_begin(struct store *st, int64_t *out_id, const char *actor, const char *action,
		      const char *target, const char *detail_json);
int store_audit_finish(struct store *st, int64_t id, const char *outcome);
/* Rows with time >= since (0: all), newest first, at most limit (0: no limit). */
int store_audit_list(struct store *st, struct audit_entry **out, size_t *out_count, int64_t since,
		     size_t limit);
void audit_entry_list_free(struct audit_entry *entries, size_t count);
/*
 * The newest kiln action on target since then that can turn a node off (power off, soft,
 * cycle, reset; automatic ones and reinstall steps included): its actor (a new string) and
 * time. KILN_ENOTFOUND when there is none.
 */
/*
 * At start: every row still "pending" (an action a stopped or killed kilnd left in flight)
 * becomes "interrupted: kilnd stopped", but for the rows of reinstall jobs still queued or
 * running (they resume). *out_count: how many.
 */
int store_audit_interrupt(struct store *st, int *out_count);
/* The outcome of an audit row a stopped kilnd left pending (schema 015's index names it). */
#define STORE_AUDIT_INTERRUPTED "interrupted: kilnd stopped"
/* Adds "; power read back: POWER at WHEN" to target's rows interrupted that way. Like the
 * writes marked "sql_write" below: inside store_begin_nodes() on PostgreSQL it is pipelined,
 * and a failure shows at a later statement or the commit (store.h, transactions). */
int store_audit_readback(struct store *st, const char *target, const char *power,
			 const char *when);
int store_audit_power_off_find(struct store *st, char **out_actor, int64_t *out_time,
			       const char *target, int64_t since);

/* --- events -------------------------------------------------------------------------- */

enum event_severity { SEV_INFO = 0, SEV_WARNING = 1, SEV_CRITICAL = 2 };

struct event {
	int64_t id;
	int64_t time;
	int64_t node_id;     /* 0: fleet-wide */
	char *node;          /* node name (joined), or NULL */
	enum event_severity severity;
	char *source;        /* "bmc", "agent", "kilnd", "action" */
	char *kind;          /* "xid", "sel", "power", ... */
	char *message;
	char *dedup_key;     /* unique per node when non-NULL: an event is stored once */
	int64_t bmc_time;    /* a BMC log entry's own time (its clock), 0: none */
};

/* Whether node_id already has the event of dedup_key (*out 1), so that adding it again
 * changes nothing (and spends no event budget). */
int store_event_exists(struct store *st, int *out, int64_t node_id, const char *dedup_key);
/* Inserts unless (node_id, dedup_key) already exists (then *out_inserted = 0). */
int store_event_insert(struct store *st, const struct event *ev, int *out_inserted);
int store_event_list(struct store *st, struct event **out, size_t *out_count, int64_t since,
		     size_t limit);
void event_list_free(struct event *events, size_t count);

/* --- agent reports: de-duplication, latest state, GPUs, history (store_agent.c) ----- */

/* A node's latest agent state (node_agent_state). Strings may be NULL. */
struct agent_state {
	int64_t node_id;
	char *node;                  /* node name (joined) */
	char *report_id;
	int64_t last_seen;           /* when kilnd received the latest report */
	int64_t report_time;         /* the report's own time */
	char *boot_id;
	char *hostname;
	char *machine_id;
	char *os;
	char *kernel;
	char *dmi_serial;
	char *agent_version;
	char *nvidia_status;         /* "ok" | "no_driver" | "mismatch" | "error" */
	char *driver_version;
	char *kernel_module_version;
	char *cuda_driver_version;
	char *nvml_version;
	int64_t gpu_count;
	int64_t gpu_count_max;       /* the most GPUs the node ever reported */
	char *report;                /* the latest report (JSON text), or NULL when not read */
	char *audit_facts;           /* put only: the report's version facts (ingest), or NULL */
	char *gpu_processes;         /* put only: the report's GPU processes (work_procs_extract) */
	/* The GPUs' telemetry summed up (node_agent_summary; NAN: unknown). Read back by
	 * store_agent_state_get; the per-GPU numbers are in the report. */
	double gpu_hottest_c;        /* the hottest GPU */
	double gpu_power_w;          /* the GPUs' power draw summed */
	double gpu_utilization_avg_pct; /* the GPUs' utilisation averaged */
	/* The report's facts the health sweep reads (store_agent_state_get). health_facts 0:
	 * not kept for this row (stored before they were), read them from the report. */
	int health_facts;
	int64_t interval_s;          /* -1 when the report has none */
	double cpu_iowait_pct;       /* NAN when the report has none */
	char *rejected_fields;       /* the fields ingest refused, "a, b", or NULL: none */
	char *health_cut;            /* the report's health cut (health/health_cut.h), or NULL */
};

void agent_state_clear(struct agent_state *s); /* frees the strings; accepts NULL */
void agent_state_list_free(struct agent_state *list, size_t count);

/* Reports of a node refused whole (a 400 on the node's agent token): the last reason. */
struct agent_refusal {
	char *reason;
	int64_t refused;             /* since first_at */
	int64_t first_at, last_at;
};

/* Notes that a report on node_id's token was refused (reason: its one-line error). */
int store_agent_refusal_note(struct store *st, int64_t node_id, const char *reason);
/* The node's refusals; all zero / NULL (and 0 returned) when it has none. */
int store_agent_refusal_get(struct store *st, struct agent_refusal *out, int64_t node_id);
void agent_refusal_clear(struct agent_refusal *r); /* accepts NULL */

/* One GPU of a report (ingest) or of node_gpus. Unknown numbers: -1 for integers, NAN for
 * reals. node_gpus keeps what the GPU is and its error counts; the telemetry (memory used,
 * temperature, power, utilisation) is the report's only: store_agent_gpus_get leaves it
 * unknown (the numbers are in the node's latest report and its summary). */
struct agent_gpu {
	int64_t index;
	char *uuid;
	char *name;
	char *serial;
	char *pci_bus_id;
	int64_t memory_total_bytes;
	int64_t ecc_volatile_uncorrected;
	int64_t ecc_aggregate_uncorrected;
	int remapped_rows_failure;   /* 1, 0, or -1 unknown */
	int retired_pages_pending;   /* a page retirement waits for a reset: 1, 0, -1 unknown */
	int remapped_rows_pending;   /* a row remap waits for a reset: 1, 0, -1 unknown */
	int64_t remapped_rows_uncorrected; /* rows remapped for uncorrectable errors; -1 */
	int64_t ecc_rose_at;         /* report time of the last rise of its uncorrected ECC
				      * count (volatile or aggregate); 0 never seen rising */
	/* telemetry: the report's, not stored in node_gpus */
	int64_t memory_used_bytes;
	double temperature_c;
	double power_draw_w;
	double utilization_gpu_pct;
};

void agent_gpu_list_free(struct agent_gpu *gpus, size_t count);

/* One compact history row per report (agent_history). Unknown reals are NAN, ints -1. */
struct agent_history_row {
	int64_t node_id;
	int64_t time;                /* the report's time */
	int64_t received_at;
	const char *report_id;
	const char *boot_id;
	const char *nvidia_status;
	const char *driver_version;
	const char *cuda_driver_version;
	int64_t gpu_count;
	double temperature_max_c;
	double power_draw_total_w;
	double utilization_avg_pct;
	int64_t ecc_uncorrected;
	int64_t xid_count;
	const char *gpus;            /* compact JSON, or NULL */
};

/* Records report_id for node_id; *out_new = 0 when it was already stored (a duplicate). */
int store_agent_report_claim(struct store *st, int *out_new, const char *report_id,
			     int64_t node_id);
/* KILN_ENOTFOUND when the node never reported. with_report: also read the report JSON. */
int store_agent_state_get(struct store *st, struct agent_state *out, int64_t node_id,
			  int with_report);
/* Inserts or replaces the node's state (s->node is ignored, s->report required). */
int store_agent_state_put(struct store *st, const struct agent_state *s);
/* Every node's state (without the report JSON), ordered by node name. */
int store_agent_state_list(struct store *st, struct agent_state **out, size_t *out_count);
/* The node's latest report (JSON text, the caller frees it) into *out; KILN_ENOTFOUND when
 * the node never reported. */
int store_agent_report_get(struct store *st, char **out, int64_t node_id);
/* The node's GPUs by index (without telemetry: see struct agent_gpu). */
int store_agent_gpus_get(struct store *st, struct agent_gpu **out, size_t *out_count,
			 int64_t node_id);
/* Every node's GPU summary in one query, ordered by node id: the hottest GPU (NAN when none
 * reported a temperature) and the summed power draw (NAN when none reported one). */
struct agent_gpu_summary {
	int64_t node_id;
	double hottest_c;
	double power_w;
	char *gpu_processes;         /* work_procs_extract's JSON, or NULL */
};
int store_agent_gpu_summary_list(struct store *st, struct agent_gpu_summary **out,
				 size_t *out_count);
void agent_gpu_summary_list_free(struct agent_gpu_summary *list, size_t count);
/* When each node's agent last reported, for the fleet-wide silence count. */
struct agent_seen {
	int64_t node_id;
	int64_t last_seen;
	int64_t interval_s;          /* its report's interval; 0: not known */
};

/* Every node's, ordered by node id; *out is freed with free(). */
int store_agent_seen_list(struct store *st, struct agent_seen **out, size_t *out_count);

/* Every reporting node's version facts in one query, ordered by node id: the audit_facts
 * stored with its latest report (the report itself for rows older than them) and
 * gpu_count_max. Each element owns its facts. */
struct agent_audit_row {
	int64_t node_id;
	int64_t gpu_count_max;
	char *facts;
};
void agent_audit_row_list_free(struct agent_audit_row *list, size_t count);
int store_agent_audit_rows(struct store *st, struct agent_audit_row **out, size_t *out_count);
/*
 * Stores the node's GPUs gpus[0..count), writing only what changed: when the report has the
 * same GPU indexes in the same order as prev (the stored rows, store_agent_gpus_get), each
 * GPU's row is updated in place, and not at all when it equals its stored row; otherwise the
 * rows are replaced.
 * *out_written (may be NULL) receives the number of rows written.
 */
int store_agent_gpus_update(struct store *st, int64_t node_id, const struct agent_gpu *gpus,
			    size_t count, const struct agent_gpu *prev, size_t nprev,
			    size_t *out_written);
int store_agent_history_insert(struct store *st, const struct agent_history_row *h);
/* Deletes at most limit history rows and at most limit report ids older than before
 * (received time); *out_deleted (may be NULL) counts both. */
int store_agent_history_prune(struct store *st, int64_t before, int limit, int *out_deleted);
/* Counts a node's history rows and stored report ids (tests, diagnostics). */
int store_agent_counts(struct store *st, int64_t node_id, int64_t *out_history,
		       int64_t *out_seen);
/* Runs a passive WAL checkpoint (outside a transaction) so the -wal file stays bounded. */
int store_wal_checkpoint(struct store *st);
/* After each commit on this handle *frames is the WAL's length in frames; this handle no
 * longer checkpoints on its own (the caller runs store_wal_checkpoint when it suits it). */
void store_wal_frames_watch(struct store *st, int *frames);

/* --- nodes as agents find them ------------------------------------------------------ */

/* Sets (or clears, serial NULL) the BMC-reported serial of a node. KILN_ENOTFOUND. */
int store_node_bmc_serial_set(struct store *st, const char *name, const char *serial);
/* The single node whose bmc_serial is serial: *out_id and *out_name (caller frees).
 * KILN_ENOTFOUND when none, KILN_EEXISTS when several nodes share it. */
int store_node_find_by_serial(struct store *st, int64_t *out_id, char **out_name,
			      const char *serial);

/* What a node's BMC says identifies its system (borrowed; NULL or "" for none). */
struct node_bmc_ids {
	const char *serial;          /* the System's SerialNumber (IPMI: the FRU's) */
	const char *uuid;            /* the System's UUID (IPMI: Get System GUID) */
	const char *sku;             /* the System's SKU (Dell: the service tag) */
	const char *chassis_serial;  /* the serial of the system's chassis */
};
/* Sets all four of a node's BMC identity values (the UUID kept in lower case). KILN_ENOTFOUND. */
int store_node_bmc_ids_set(struct store *st, const char *name, const struct node_bmc_ids *ids);
/*
 * The single node whose BMC states one of uuid_forms (lower case; NULL entries match
 * nothing) as its system UUID, else the single one stating serial as its serial, SKU or
 * chassis serial (without case; NULL: not looked for). *out_id, *out_name (caller frees);
 * KILN_ENOTFOUND when none, KILN_EEXISTS when several nodes share the value found.
 */
int store_node_find_by_bmc(struct store *st, int64_t *out_id, char **out_name,
			   const char *const uuid_forms[3], const char *serial);
/* What enrollment needs of a node: whether it has a live agent token, its running reinstall
 * job (0: none) and whether that job already let its one enrollment in. */
int store_agent_enroll_facts(struct store *st, int *out_has_token, int64_t *out_job,
			     int *out_job_enrolled, int64_t node_id);
/* Marks the running job's one enrollment used; KILN_EEXISTS when it already was (or the
 * job no longer runs). */
int store_job_enroll_take(struct store *st, int64_t job_id);

/* --- an agent bound to its node (store_identity.c) ---------------------------------- */

/*
 * What the ingest compares a report's host identity with, for one node: the node's BMC
 * serial, the identity its agent reported last (node_agent_state) and the node's
 * agent_identity row (all zero / NULL when it has none). Strings are owned by the struct.
 */
struct agent_identity {
	int64_t node_id;
	char *node;                  /* the node's name */
	char *bmc_serial;            /* the BMC's serial for the system; NULL when none or
				      * several nodes share it (and so the three below) */
	char *bmc_uuid;              /* the BMC's system UUID */
	char *bmc_sku;               /* the system's SKU (Dell: the service tag) */
	char *bmc_chassis_serial;    /* the serial of the system's chassis */
	char *bound_by;              /* what of the BMC's vouched for the last stored report */
	int has_agent;               /* the node has a stored agent state */
	char *hostname, *machine_id, *dmi_serial, *boot_id; /* the stored state's */
	char *report_id;             /* the stored state's report (what a writer's cache kept?) */
	int accept_next;             /* an admin accepted: the next report's identity is taken */
	char *accepted_by;
	int64_t accepted_at;
	char *bmc_serial_accepted;   /* the BMC value (its UUID or a serial) an admin accepted a
				      * host the BMC does not vouch for with */
	int64_t reinstall_job;       /* the reinstall job whose one identity change was used */
	int64_t reinstall_running;   /* the node's running reinstall job, 0: none */
	char *mismatch;              /* the pending refusal, or NULL */
	char *mismatch_field;
	int64_t mismatch_since, mismatch_last, refused;
	char *elsewhere_node;        /* this node's agent reports with that node's token, or NULL */
	int64_t elsewhere_last;
};

void agent_identity_clear(struct agent_identity *a); /* frees the strings; accepts NULL */
void agent_identity_list_free(struct agent_identity *list, size_t count);
/* The node's identity facts. KILN_ENOTFOUND when there is no such node. */
int store_agent_identity_get(struct store *st, struct agent_identity *out, int64_t node_id);
/* store_agent_report_claim and then store_agent_identity_get: in one round trip inside
 * store_begin_nodes() on PostgreSQL. *out is to be cleared (agent_identity_clear). */
int store_agent_report_claim_identity(struct store *st, int *out_new,
				      struct agent_identity *out, const char *report_id,
				      int64_t node_id);
/*
 * Records a refused report: the same pending message counts one more refusal
 * (*out_new = 0); another message replaces it and starts anew (*out_new = 1).
 */
int store_agent_identity_refuse(struct store *st, int *out_new, int64_t node_id,
				const char *field, const char *message);
/*
 * Notes on other_id (the node whose stored identity a report refused on node_id carries)
 * that its agent reports with node_id's token.
 */
int store_agent_identity_elsewhere(struct store *st, int64_t other_id, int64_t node_id);
/*
 * After a report of node_id was taken: clears the note that its agent reports elsewhere
 * and, when rebound (an accepted or reinstall identity, or the node's own host again after
 * a refusal), the pending mismatch and the admin's acceptance; reinstall_job > 0 records
 * the job that used its change, bmc_serial_accepted non-NULL the BMC value (identity_bmc_key)
 * accepted with a host the BMC does not vouch for; bound_by is what vouched (NULL: nothing).
 */
int store_agent_identity_settle(struct store *st, int64_t node_id, int rebound,
				int64_t reinstall_job, const char *bmc_serial_accepted,
				const char *bound_by);
/* The one other node whose stored agent state has DMI serial dmi_serial (when not NULL),
 * else machine id machine_id: *out_id, 0 when none or several. */
int store_agent_identity_owner(struct store *st, int64_t *out_id, int64_t node_id,
			       const char *dmi_serial, const char *machine_id);
/* An admin accepts the node's next report's identity (by: who). KILN_ENOTFOUND. */
int store_agent_identity_accept(struct store *st, int64_t node_id, const char *by);
/* The nodes with a pending mismatch or whose agent reports elsewhere, by name. */
int store_agent_identity_list(struct store *st, struct agent_identity **out, size_t *out_count);

/* --- fleet enrollment tokens and pending agents -------------------------------------- */

struct enroll_token {
	int64_t id;
	char *name;
	int64_t created_at;
	int64_t last_used_at; /* 0: never */
	int revoked;
};

int store_enroll_token_insert(struct store *st, int64_t *out_id, const char *name,
			      const unsigned char hash[32]);
/* The id of a live enrollment token; KILN_ENOTFOUND otherwise. Records last_used_at. */
int store_enroll_token_lookup(struct store *st, int64_t *out_id, const unsigned char hash[32]);
int store_enroll_token_list(struct store *st, struct enroll_token **out, size_t *out_count);
int store_enroll_token_revoke(struct store *st, int64_t id); /* KILN_ENOTFOUND */
void enroll_token_list_free(struct enroll_token *list, size_t count);

struct pending_agent {
	int64_t id;
	char *dmi_serial;     /* "" when the agent sent none */
	char *hostname;
	char *machine_id;
	int64_t first_seen;
	int64_t last_seen;
	int64_t attempts;
	int64_t node_id;      /* 0 until accepted */
	char *node;           /* the accepted node's name, or NULL */
	char *candidate;      /* the node it resembles (host name, BMC serial), or NULL */
	char *reason;         /* why it waits, or NULL */
};

/*
 * Records an enrollment attempt that waits for an admin (identity: serial, hostname,
 * machine id; NULL is ""), with the node it resembles (candidate_id, 0: none) and why it
 * waits. *out_id is the row; *out_node_id the node an admin accepted it as (0 while
 * pending). More than max_rows pending rows: KILN_EBUSY.
 */
int store_pending_agent_record(struct store *st, int64_t *out_id, int64_t *out_node_id,
			       const char *dmi_serial, const char *hostname,
			       const char *machine_id, int64_t enroll_token_id,
			       int64_t candidate_id, const char *reason, int max_rows);
int store_pending_agent_list(struct store *st, struct pending_agent **out, size_t *out_count);
/* Deletes the pending row of this identity (NULL is ""), if any: the agent got its token. */
int store_pending_agent_forget(struct store *st, const char *dmi_serial, const char *hostname,
			       const char *machine_id);
/* Binds a pending agent to a node; KILN_ENOTFOUND for an unknown id. */
int store_pending_agent_accept(struct store *st, int64_t id, int64_t node_id);
int store_pending_agent_delete(struct store *st, int64_t id);
void pending_agent_list_free(struct pending_agent *list, size_t count);

/* --- BMC log history (store_bmc_log.c) ------------------------------------------------ */

/* What a node's last log read saw (bmc_log_state). baselined 0: never read, or cleared
 * since: the next read's entries are history. */
struct bmc_log_state {
	int64_t baselined;
	int64_t count;               /* -1: not known */
	int64_t newest;
};

/* Fills *out; a node never read gives baselined 0, count -1, newest 0 (not an error). */
int store_bmc_log_state_get(struct store *st, struct bmc_log_state *out, int64_t node_id);
/* sql_write */
int store_bmc_log_state_put(struct store *st, int64_t node_id, const struct bmc_log_state *v);
/* Stores an entry once per (node, key); *out_inserted says whether it was new. history 1:
 * it was on the BMC before kiln looked. seen is the store's clock. */
int store_bmc_log_add(struct store *st, int *out_inserted, int64_t node_id, const char *key,
		      int64_t bmc_time, enum event_severity sev, const char *message, int history);
/* *out_known 1 when the node has a stored entry whose key starts with prefix, else 0. */
int store_bmc_log_known(struct store *st, int *out_known, int64_t node_id, const char *prefix);
/* Drops entries first seen before cutoff (unix s) that no later read can return again. */
int store_bmc_log_prune(struct store *st, int64_t cutoff);

/* --- fleet: BMC readings, maintenance, health cache (store_fleet.c) ------------------- */

/* A node's poller state (node_bmc_state); written only by the poller. Strings may be NULL. */
struct fleet_state {
	int64_t node_id;
	char *node;              /* node name (joined; ignored by put) */
	char power[8];           /* "on" | "off" | "unknown" */
	int64_t power_time;      /* last successful power reading, 0: never */
	int64_t power_changed;   /* when the power state last changed (as observed) */
	char *power_error;       /* the last failure's message, NULL after a success */
	int reachable;
	int failures;            /* consecutive failed requests */
	int64_t down_since;
	int circuit_open;
	int64_t next_try;        /* backoff: not polled before */
	int64_t last_ok;
	char *sensors;           /* JSON {"sensors":[...]} */
	int64_t sensors_time;
	int64_t sel_cursor;      /* newest SEL entry time seen */
	char health[9];          /* "ok" | "warning" | "critical" */
	char *reasons;           /* JSON array of strings */
	int64_t health_time;
	int64_t hung_since;
	int64_t starved_since;
	int64_t remediated_at;
	char *power_off_by;      /* who turned it off through kiln; "": outside kiln; NULL: not
				  * seen turning off */
	int64_t power_off_time;  /* when that on -> off was seen */
	int64_t boot_started;    /* when kiln saw the node's last boot begin (0: never) */
	char *boot_state;        /* the BMC's BootProgress.LastState as last read, or NULL */
	int64_t boot_last_s;     /* the BMC's LastBootTimeSeconds (0: not said) */
	char *boot_faults;       /* reboot-class fault kinds per boot (health_boot_faults), or NULL */
};

/* A state for a node never polled: power unknown, reachable, health ok. */
void fleet_state_init(struct fleet_state *s, int64_t node_id);
void fleet_state_clear(struct fleet_state *s); /* frees the strings; accepts NULL */
void fleet_state_list_free(struct fleet_state *list, size_t count);
/* KILN_ENOTFOUND when the poller never wrote the node. */
int store_fleet_state_get(struct store *st, struct fleet_state *out, int64_t node_id);
/* sql_write; KILN_ENOTFOUND for an unknown node (when not pipelined). */
int store_fleet_state_put(struct store *st, const struct fleet_state *s);
/* Every stored state, ordered by node name. */
int store_fleet_state_list(struct store *st, struct fleet_state **out, size_t *out_count);

/* A node whose BMC the poller counts down (unreachable, or its circuit open). */
struct fleet_down {
	int64_t node_id;
	int64_t down_since;
	char *error;             /* its last failure's message, or NULL */
};

/* The nodes whose BMC is down, ordered by node id: one small query (usually no row), not
 * a whole state per node. */
int store_fleet_down_list(struct store *st, struct fleet_down **out, size_t *out_count);
void fleet_down_list_free(struct fleet_down *list, size_t count); /* accepts NULL */

struct maintenance {
	int64_t node_id;
	char *node;
	char *reason;
	char *by;
	int64_t since;
};

/* Puts the node in maintenance (the reason and actor are replaced, since kept when it
 * already was) or takes it out (reason NULL). */
int store_maintenance_set(struct store *st, int64_t node_id, const char *reason, const char *by);
int store_maintenance_list(struct store *st, struct maintenance **out, size_t *out_count);
void maintenance_list_free(struct maintenance *list, size_t count);

/* --- the fleet status table in one query (store_status.c) ----------------------------- */

/* One node's line of the fleet status: its BMC state, agent state, GPU summary and
 * maintenance row joined. Strings point into SQLite's row and are valid only during the
 * callback; NULL when absent. */
struct status_row {
	const char *node;
	int has_state;               /* the poller wrote the node (the fields below it are set) */
	const char *power;           /* "on" | "off" | "unknown" */
	int64_t power_time;          /* 0: never read */
	int reachable;
	const char *health;          /* NULL when never evaluated (health_time 0) */
	const char *reasons;         /* JSON array text */
	int64_t hung_since;
	int has_agent;               /* an agent reported (the fields below it are set) */
	int64_t agent_last_seen;
	int64_t gpu_count;           /* -1: not counted (the NVIDIA status is not "ok") */
	int64_t gpu_count_max;
	const char *driver_version;
	const char *cuda_driver_version;
	double hottest_c;            /* NAN: unknown (or no agent) */
	double power_w;              /* NAN: unknown (or no agent) */
	int in_maintenance;          /* maint_reason is set */
	const char *maint_reason;
	int bmc_busy;                /* the poller's busy mark (poller_record_busy) */
	int bmc_misconfigured;       /* it answered, but does not fit the node (poller.c's
				      * "configuration error: ...") */
	const char *gpu_processes;   /* the latest report's GPU processes (JSON), or NULL */
};

/* Calls fn for every node ordered by name, in one read snapshot. fn returns 0 to go on or a
 * negative code, which stops the walk and is returned. */
typedef int (*store_status_fn)(void *ud, const struct status_row *row);
int store_status_rows(struct store *st, store_status_fn fn, void *ud);

/* --- what GET /metrics reads (store_metrics.c) ---------------------------------------- */

/* One node for the metrics, from its short columns (what every scrape reads of every node):
 * its poller state, health, maintenance, reinstall job, the agent's latest report's short
 * fields, and the markers that say whether its long columns moved. Strings are valid during
 * the callback only. */
struct metrics_node {
	int64_t node_id;
	const char *node;
	const char *rack;
	int has_state;               /* the poller wrote the node */
	const char *power;           /* "on" | "off" | "unknown" */
	int64_t power_time;
	int reachable;
	int64_t last_ok;             /* the BMC's last successful request (0: never) */
	const char *health;          /* NULL: never evaluated */
	const char *reasons;         /* JSON array text */
	int64_t hung_since;
	int64_t sensors_time;        /* markers of struct metrics_bmc: when the sensors and */
	int64_t inventory_time;      /* the inventory were stored (0: never) */
	int in_maintenance;
	int reinstalling;            /* a reinstall job queued or running */
	int has_agent;               /* an agent reported (the fields below it are set) */
	int64_t agent_last_seen;
	int64_t agent_interval_s;    /* the report's interval; 0: not known */
	const char *report_id;       /* the latest report: the marker of struct metrics_report */
	const char *nvidia_status;
	const char *driver_version;
	const char *kernel_module_version;
	const char *cuda_driver_version;
	const char *nvml_version;
	const char *os;
	const char *kernel;
	int64_t gpu_count;           /* -1: not counted (the NVIDIA status is not "ok") */
	int64_t gpu_count_max;
};

/* Calls fn for every node ordered by name, in one statement. fn returns 0 to go on, or a
 * negative code that stops the walk and is returned. */
typedef int (*store_metrics_node_fn)(void *ud, const struct metrics_node *row);
int store_metrics_nodes(struct store *st, store_metrics_node_fn fn, void *ud);

/* A node's BMC sensors ({"sensors":[...]} as the driver gave them, NULL when never read) and
 * inventory, with the markers they were stored with. */
struct metrics_bmc {
	int64_t node_id;
	int64_t sensors_time;
	const char *sensors;
	int64_t inventory_time;
	const char *manufacturer;
	const char *model;
	const char *firmware;
};

/* What the metrics show of a node's latest agent report, cut out by the database. */
struct metrics_report {
	int64_t node_id;
	const char *report_id;
	const char *cudnn_version;
	const char *gpus;            /* the report's "gpus" array, JSON text */
	const char *toolkits;        /* its "cuda_toolkits" array, JSON text */
};

/* Calls fn for each of the nodes ids[0..n) that exists (that has a report), in no set order,
 * a few dozen nodes a statement. Strings are valid during the callback only; fn returns 0 or
 * a negative code that stops the walk and is returned. */
typedef int (*store_metrics_bmc_fn)(void *ud, const struct metrics_bmc *row);
int store_metrics_bmc(struct store *st, const int64_t *ids, size_t n, store_metrics_bmc_fn fn,
		      void *ud);
typedef int (*store_metrics_report_fn)(void *ud, const struct metrics_report *row);
int store_metrics_reports(struct store *st, const int64_t *ids, size_t n,
			  store_metrics_report_fn fn, void *ud);

/* Each node's Xid events (the agents' "xid" events, never deleted): how many, and the
 * code of the latest. Ordered by node id; *out is freed with free(). */
struct metrics_xid {
	int64_t node_id;
	int64_t count;
	int64_t last_xid;            /* -1 when its message names none */
};
int store_metrics_xids(struct store *st, struct metrics_xid **out, size_t *out_count);

/* The node's summed uncorrected ECC count in its first and latest history row at or after
 * since; -1 each when unknown. */
int store_fleet_ecc_window(struct store *st, int64_t *out_first, int64_t *out_last,
			   int64_t node_id, int64_t since);

/* Events with time >= since, severity >= min_severity, of node_id (0: any) and kind (NULL:
 * any), newest first, at most limit (0: no limit). */
int store_event_query(struct store *st, struct event **out, size_t *out_count, int64_t since,
		      int64_t node_id, const char *kind, enum event_severity min_severity,
		      size_t limit);

/* Stores the inventory a node's BMC gave at time (the driver's object as JSON text; its
 * "bmc_firmware" is also kept apart for the audit). KILN_ENOTFOUND for an unknown node (when
 * not pipelined: sql_write). */
int store_node_inventory_put(struct store *st, int64_t node_id, const char *json, int64_t time);
/* When the node's inventory was last stored; 0 when never. */
int store_node_inventory_time(struct store *st, int64_t node_id, int64_t *out_time);

struct node_firmware {
	int64_t node_id;
	char *bmc_firmware;
};

/* The BMC firmware of every node with a stored inventory that names one, by node id. */
int store_node_firmware_list(struct store *st, struct node_firmware **out, size_t *out_count);
void node_firmware_list_free(struct node_firmware *list, size_t count);

/* --- reads for the report and the webhooks (store_report.c) ------------------------ */

/* The highest event id (0 when there is none). */
int store_event_last_id(struct store *st, int64_t *out);
/* Events with id > after_id in id order, at most limit (1..100000); free with
 * event_list_free. Unlike store_event_list this sees events whose time lies in the past
 * (agent and BMC log times), so a reader can follow every insert by id. */
int store_event_list_after(struct store *st, struct event **out, size_t *out_count,
			   int64_t after_id, size_t limit);

/* One agent history row's temperature and power (NAN when the report had none). */
struct agent_sample {
	int64_t node_id;
	int64_t time;
	double temperature_max_c;
	double power_draw_total_w;
};

/* History rows with since <= time <= until, by node then time; the caller frees *out. */
int store_agent_samples_list(struct store *st, struct agent_sample **out, size_t *out_count,
			     int64_t since, int64_t until);

/* The BMC history (store_fleet.c): power_w and inlet_c NAN when unknown; a second sample of
 * a node at the same time replaces the first (sql_write). */
int store_bmc_sample_insert(struct store *st, int64_t node_id, int64_t time, double power_w,
			    double inlet_c);
/* BMC samples with since <= time <= until, by node then time, in the agent_sample shape
 * (temperature_max_c: the inlet, power_draw_total_w: the system's draw); caller frees. */
int store_bmc_samples_list(struct store *st, struct agent_sample **out, size_t *out_count,
			   int64_t since, int64_t until);
/* One node's samples since a time, oldest first, at most limit: its BMC's (inlet, system
 * draw) when bmc, else its agent's (hottest GPU, GPUs' draw); the caller frees *out. */
int store_node_samples_list(struct store *st, struct agent_sample **out, size_t *out_count,
			    int64_t node_id, int bmc, int64_t since, size_t limit);
/* Deletes at most limit BMC samples older than before; *out_deleted may be NULL. */
int store_bmc_history_prune(struct store *st, int64_t before, int limit, int *out_deleted);

/* --- serial console capture (store_console.c) ------------------------------------ */

/* Switches capture on or off for a node. KILN_ENOTFOUND for an unknown node. */
int store_console_capture_set(struct store *st, const char *node, int enabled);
/* Whether capture is on (0 when never set). KILN_ENOTFOUND for an unknown node. */
int store_console_capture_get(struct store *st, const char *node, int *out_enabled);
/* Names of the nodes with capture on, by name; the caller frees each and the array. */
int store_console_capture_list(struct store *st, char ***out, size_t *out_count);

/* --- transactions ------------------------------------------------------------------- */
/* store_begin takes the write lock (BEGIN IMMEDIATE); every store_* call inside joins the
 * transaction (multi-statement writes use savepoints, so they nest). */

int store_begin(struct store *st);
/*
 * A write transaction that writes only the given nodes' own rows (their agents' reports):
 * on SQLite, store_begin(). On PostgreSQL it does not queue on the writers' lock: it holds it
 * shared (a store_begin() transaction still runs alone) and locks each node, so that two
 * kilnd writing different nodes do not wait on each other and two writing one node take
 * turns; and its writes whose count nobody reads (sql_write()) are pipelined: sent without
 * waiting, their answers read with the next statement that waits or at the commit. A
 * pipelined write that fails fails every later statement and the commit, which rolls back
 * (its message names the write): redo the work in a store_begin() transaction to know
 * which part failed.
 */
int store_begin_nodes(struct store *st, const int64_t *node_ids, size_t n);
/* The round trips this handle made to the database server so far: each statement waited
 * for, and each pipeline sync (0 on SQLite, which runs in kilnd). */
int64_t store_round_trips(struct store *st);
int store_commit(struct store *st);
int store_rollback(struct store *st);

/* A savepoint makes several store_* calls one atomic unit, inside or outside store_begin():
 * store_release() keeps the work, store_rollback_to() undoes it (keeping the message). */
int store_savepoint(struct store *st);
int store_release(struct store *st);
void store_rollback_to(struct store *st);

/* The store's clock in unix seconds (time() unless a test replaced it). */
int64_t store_now(struct store *st);
void store_clock_set(struct store *st, int64_t (*now)(void));

/* Images, reinstall jobs, the cluster's instances and node calls. */
#include "store/store_ops.h"

#endif
