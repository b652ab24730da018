/* SPDX-License-Identifier: Apache-2.0 */
/* A live call as the API fills it and the guard of disruptive actions reads it: its nodes,
 * its operation and how it is audited and answered. The live thread that runs it: live.h. */
#ifndef KILND_LIVE_CALL_H
#define KILND_LIVE_CALL_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "bmc/bmc.h"
#include "cluster/cluster.h"

struct live_call_private;

/* One node of a call: filled by the caller before live_call_start, the live thread's after. */
struct live_node {
	char *name;
	struct node *node;          /* NULL: no such node */
	json_t *out;                /* {"node", ...}: its answer so far */
	int targeted;               /* a BMC call goes out for it; else out is its answer */
	int claimed;                /* holds the busy mark (node_lock_claim) */
	int batch;                  /* 1-based batch of a paced action (1 when not paced) */
	char *password;
	struct bmc_target target;   /* borrows from node and password */
	char *audit_detail;         /* this node's audit detail (JSON text), else the call's */
	int drained;                /* the guard drained it in Slurm: resumed after the action */
	/* the live thread's */
	int64_t audit_id;
	int remote;                 /* handed to its owner, another instance */
	char owner[CLUSTER_ID_LEN + 1]; /* that instance ("": none live now) */
	int64_t call_id;            /* its node_calls row (handed, or this action's claim) */
	int finished;               /* out is final */
	int written;                /* out is in the answer */
};

/* The answer's form: NDJSON (a line a node as each finishes) or one JSON array in node order. */
enum live_form { LIVE_ARRAY = 0, LIVE_NDJSON };

struct live_call {
	struct bmc_op op;           /* op.media_url points into media_url */
	char *media_url;
	char *audit_action;         /* "power.cycle": an action, audited; NULL: a read */
	char *audit_actor;
	char *audit_detail;         /* JSON text of the audit rows' detail, or NULL */
	enum live_form form;
	int batches;                /* at least 1 */
	int64_t interval_s;         /* between two batches */
	int guard;                  /* disruptive: the guard looks at each node's work first */
	int force;                  /* act although work runs (audited as forced) */
	int drain;                  /* drain the busy nodes in Slurm, wait, then act */
	int64_t drain_timeout_s;    /* how long a drain may wait */
	struct live_node *nodes;
	size_t count;
	struct live_call_private *priv;
};

/* A call with count empty nodes (the caller fills them); NULL on ENOMEM. */
struct live_call *live_call_new(size_t count);

/* Frees a call that was never started. Accepts NULL. */
void live_call_free(struct live_call *call);

#endif
