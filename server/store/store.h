/* kilnd's store: every SQL statement of kilnd lives behind these functions (SQLite today). */
#ifndef KILN_STORE_H
#define KILN_STORE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

struct store; /* opaque: one SQLite connection with its prepared statements */

/*
 * Opens (creating) the database at path in WAL mode and applies the embedded migrations
 * in order inside one transaction, recording each in schema_version. A database whose
 * schema_version is newer than this kiln knows fails with KILN_ENEWER and a message
 * naming both versions. Each thread that uses the store opens its own handle.
 */
int store_open(struct store **out, const char *path);
void store_close(struct store *st);

/* Highest applied migration number. */
int store_schema_version(struct store *st, int *out);

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

enum token_role { ROLE_VIEWER = 1, ROLE_OPERATOR = 2, ROLE_ADMIN = 3 };

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

/* --- agent tokens (one or more per node) -------------------------------------------- */

int store_agent_token_insert(struct store *st, int64_t *out_id, int64_t node_id,
			     const unsigned char hash[32]);
/* Node id for a live agent token. */
int store_agent_token_lookup(struct store *st, int64_t *out_node_id, const unsigned char hash[32]);
/* Revokes every live agent token of a node (re-enrollment, a new token); *out_revoked (may be
 * NULL) says how many. */
int store_agent_token_revoke_node(struct store *st, int64_t node_id, int *out_revoked);

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
};

/* Inserts unless (node_id, dedup_key) already exists (then *out_inserted = 0). */
int store_event_insert(struct store *st, const struct event *ev, int *out_inserted);
int store_event_list(struct store *st, struct event **out, size_t *out_count, int64_t since,
		     size_t limit);
void event_list_free(struct event *events, size_t count);

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
int store_commit(struct store *st);
int store_rollback(struct store *st);

#endif
