/* SPDX-License-Identifier: Apache-2.0 */
/* What the poller's three parts share: its state per node (struct slot), a BMC answer that
 * came back (struct completion), the poller itself; the core (poller.c: schedule, chains,
 * results), the readings it keeps (poller_readings.c) and the health sweep with automatic
 * remediation (poller_health.c). Not for callers outside fleet/: they use poller.h. */
#ifndef KILND_POLLER_INTERNAL_H
#define KILND_POLLER_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include "fleet/poller.h"
#include "health/health_facts.h"
#include "metrics/counters.h"

#define REFRESH_S 10        /* the node list is read again this often */
#define TICK_MS 250
#define HEALTH_SLICE 64     /* nodes per transaction of the health sweep */
#define COMPLETIONS_TX 256  /* readings per transaction (each node a lock on PostgreSQL) */
#define HEALTH_REWRITE_S 60 /* an unchanged health outcome is written again after this */
#define INVENTORY_RETRY_S 600 /* a failed inventory is tried again after this at most */
#define PRUNE_EVERY_S 600   /* the BMC history is pruned this often */
#define PRUNE_BATCH 5000    /* rows per prune transaction */
#define POWER_OFF_WINDOW_S 600 /* a kiln action this recent explains a power-off seen */
#define CONSOLE_EVIDENCE_BYTES 8192 /* console bytes read for a hung node's evidence */

struct slot {
	struct node *node;          /* owned; refreshed */
	struct fleet_state st;
	int64_t due_ms;
	unsigned cycle;
	int busy;                   /* a poll chain is in flight */
	int acting;                 /* an automatic power cycle is in flight */
	int64_t cred_version;       /* credentials the circuit was opened with */
	int64_t inventory_due;      /* inventory read at the first chain from then (0: now) */
	char known[8];              /* the last power the BMC said, "on" | "off" ("": none): a
				     * failed read makes st.power unknown, and the next answer is
				     * compared with this one (events, power_changed) */
	int fleet_silent;           /* its agent was silent when a fleet-wide silence began */
	int read_back;              /* its first power reading since the start was added to the
				     * audit rows a stopped kilnd left interrupted */
	struct bmc_log_state log;   /* what its last log read saw (baselined 0: the next
				     * read's entries are history) */
	int log_reread;             /* its log was found cleared: read it whole again now */
	int drain_asked;            /* flagged (hung, GPU lost, critical Xid): drain was asked */
	int owned;                  /* this instance polls and judges it (cluster_owns) */
	int64_t claim_id;           /* its automatic cycle's node_calls claim (several kilnd) */
};

struct completion {
	struct completion *next;
	struct poller *p;
	int64_t node_id;
	enum bmc_op_kind kind;
	int64_t audit_id;
	int live;                   /* a live call's reading (poller_observe), not a poll */
	int64_t started_ms;         /* when it was submitted (the metrics' poll duration) */
	enum metrics_protocol proto;
	int rc;
	char error[512];
	json_t *data;
};

struct poller {
	struct poller_options opt;
	const struct secret_key *key; /* the state dir's, which outlives the poller */
	struct store *st;
	pthread_t thread;
	int started;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int stopping;
	int outstanding;            /* submitted, not yet processed */
	struct completion *done_head;
	struct slot *slots;         /* sorted by node id */
	size_t nslots;
	int64_t refreshed_at;
	int64_t health_at;
	int64_t pruned_at;
	unsigned owners_gen;        /* the cluster_generation() the owned marks follow */
	struct health_fleet_silence fleet; /* the fleet-wide silence guard */
};

/* --- poller.c ------------------------------------------------------------------------ */

int poller_event_add(struct poller *p, const struct slot *s, enum event_severity sev,
		     const char *source, const char *kind, const char *dedup, const char *fmt, ...)
	__attribute__((format(printf, 7, 8)));
int poller_sel_event_add(struct poller *p, const struct slot *s, enum event_severity sev,
			 const char *kind, const char *dedup, int64_t bmc_time, const char *msg);
/* Submits op for s's node (audit_id: the audit row of an action, else 0). */
int poller_submit(struct poller *p, struct slot *s, const struct bmc_op *op, int64_t audit_id);
int poller_submit_kind(struct poller *p, struct slot *s, enum bmc_op_kind kind);
/* Stores the readings that came back and sends the polls that are due: the poller's loop
 * does, and the health sweep between its slices, so that a sweep of thousands of nodes (a
 * few reads each: seconds on PostgreSQL) does not hold the BMC readings back (issue 35). */
void poller_work(struct poller *p);
/* Writes s's fleet state to the store. */
void poller_state_put(struct poller *p, const struct slot *s);
void poller_set_error(struct fleet_state *st, const char *msg);

/* --- poller_readings.c --------------------------------------------------------------- */

/* After a step of the poll chain: the next one, or the end of the chain. */
void poller_chain_next(struct poller *p, struct slot *s, enum bmc_op_kind after, int64_t now);
/* Keeps a reading of kind (power, sensors, logs, inventory) and what it says. */
void poller_reading_store(struct poller *p, struct slot *s, enum bmc_op_kind kind, json_t *data,
			  int64_t now);

/* --- poller_health.c ----------------------------------------------------------------- */

/* Judges the health of the nodes this instance owns, HEALTH_SLICE per transaction, and
 * remediates where the rules and the guard allow. */
void poller_health_sweep(struct poller *p, int64_t now);

#endif
