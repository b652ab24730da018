/* SPDX-License-Identifier: Apache-2.0 */
/* The poller: a kilnd thread that reads every node's BMC on a jittered schedule (power each
 * cycle, sensors and SEL less often), keeps per-BMC backoff and a circuit breaker, turns
 * readings into events, evaluates health and, when enabled, power-cycles hung nodes. */
#ifndef KILND_POLLER_H
#define KILND_POLLER_H

#include <stdint.h>

#include "bmc/bmc.h"
#include "health/health.h"
#include "daemon/secret.h"
#include "store/store.h"

struct poller_config {
	int64_t interval_s;         /* power state every cycle */
	int sensors_every;          /* sensors every K cycles */
	int sel_every;              /* SEL (incrementally) every K cycles */
	int unreachable_failures;   /* consecutive failures before "unreachable" */
	int circuit_failures;       /* consecutive failures that open the circuit */
	int64_t backoff_max_s;
	int64_t probe_interval_s;   /* an open circuit is probed this often */
	int64_t health_every_s;     /* how often health is evaluated */
	int64_t inventory_every_s;  /* inventory at first contact, then this often */
	int64_t history_retention_s; /* BMC power/inlet history kept this long */
	struct health_config health;
	int remediate;              /* automatic power cycle of hung nodes (default off) */
	int64_t remediate_grace_s;  /* hung at least this long first */
	int remediate_max_per_hour; /* fleet-wide */
};

/* 30 s, sensors and SEL every 4 cycles, unreachable after 2 failures, circuit after 5,
 * backoff up to 10 min, probe every 5 min, health every 10 s, inventory every 6 h, history
 * kept 30 days,
 * remediation off (grace 5 min, at most 2 an hour). */
void poller_config_defaults(struct poller_config *cfg);

struct kilnd_config;
/* The [poller], [health] and [remediation] keys of kilnd.conf. */
void poller_config_from(struct poller_config *out, const struct kilnd_config *cfg);

struct poller_options {
	const char *db_path;          /* the poller opens its own store handle */
	const struct secret_key *key; /* decrypts the BMC passwords (kept, not copied: it must outlive the poller) */
	struct bmc_engine *engine;    /* NULL: no BMC polling, health only */
	struct guard *guard;          /* NULL: hung nodes are not drained, remediation asks no one */
	struct cluster *cluster;      /* which nodes are this instance's; NULL: every node */
	struct poller_config cfg;
};

struct poller;
struct cluster;

int poller_start(struct poller **out, const struct poller_options *opt);

/*
 * A reading an operator's live call got (power, sensors, SEL, inventory, or a power action's
 * state read back): stored as the poller's own readings are, with the time it is taken in,
 * and it counts as the BMC answering. data is copied; other kinds are ignored. From any
 * thread, before poller_stop.
 */
void poller_observe(struct poller *p, int64_t node_id, enum bmc_op_kind kind, const json_t *data);
/* Stops the thread, waits for the operations in flight; accepts NULL. Call before
 * stopping the engine. */
void poller_stop(struct poller *p);

/* --- the schedule's pure pieces (unit-tested) ---------------------------------------- */

/* A node's fixed offset into the cycle, from its name: spreads the fleet over the interval. */
int64_t poller_jitter_ms(const char *node, int64_t interval_ms);

/* Seconds to wait after the n-th consecutive failure (n >= 1): interval * 2^(n-1), capped. */
int64_t poller_backoff_s(int failures, int64_t interval_s, int64_t max_s);

enum poller_transition { POLLER_SAME = 0, POLLER_DOWN, POLLER_UP };

/* Records a failed request at now: failures, backoff (next_try), reachability, circuit. */
enum poller_transition poller_record_failure(struct fleet_state *s, int64_t now,
					     const struct poller_config *cfg);
/* Records an answer: clears failures and backoff, closes the circuit. */
enum poller_transition poller_record_success(struct fleet_state *s, int64_t now);

/*
 * Records a "busy, try later" answer (HTTP 503, IPMI completion code 0xC0): the BMC
 * answered, so it is reachable, failures, backoff and circuit are cleared as by a success,
 * and the node is polled on its usual schedule. It gave no reading: power and power_time stay
 * as they were (the power is not fresh), last_ok is not moved. power_error becomes
 * "bmc busy: DETAIL", which health_facts.c reads as the busy mark until the next answer.
 */
enum poller_transition poller_record_busy(struct fleet_state *s, const char *detail);

/* Whether the stored state carries poller_record_busy's mark. */
int poller_state_busy(const struct fleet_state *s);

/* Whether the node may be polled at now (backoff and circuit respected). */
int poller_may_poll(const struct fleet_state *s, int64_t now);

#endif
