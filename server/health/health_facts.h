/* SPDX-License-Identifier: Apache-2.0 */
/* Gathers a node's health facts from the store (BMC readings, agent state, GPUs, history,
 * events) for the pure rules in health.h. */
#ifndef KILND_HEALTH_FACTS_H
#define KILND_HEALTH_FACTS_H

#include "health/health.h"
#include "store/store.h"

/* How the poller's power_error starts when the BMC answered but does not fit the node (a
 * read refused with KILN_ECONFIG): health says "bmc configuration error", not unreachable. */
#define HEALTH_BMC_CONFIG_ERROR "configuration error: "

/* What the facts borrow strings from; cleared with health_facts_sources_clear. */
struct health_sources {
	struct agent_state agent;
	int have_agent;
	struct agent_gpu *gpus;
	size_t ngpus;
	json_t *report;
	json_t *cut;                /* the parsed health cut (health_cut.h) */
	struct agent_identity identity;
	struct agent_refusal refusal;
};

void health_sources_clear(struct health_sources *src);

/*
 * Fills f for node n at time now from its poller state (may be NULL: never polled), its
 * maintenance flag, and what its agent reported; the strings in f point into *src.
 * starved_now is computed with cfg; starved_since is taken from state (the caller keeps it).
 * Store failures are returned (with the message set).
 */
int health_facts_gather(struct health_facts *f, struct health_sources *src, struct store *st,
			const struct node *n, const struct fleet_state *state, int maintenance,
			int64_t now, const struct health_config *cfg);

/* The inlet temperature and the PSU facts (failed PSUs, a lost redundancy set) from a BMC's
 * sensors JSON ({"sensors":[...]}, may be NULL), as the health rules take them. */
void health_sensor_facts(struct health_facts *f, const char *sensors_json);

#endif
