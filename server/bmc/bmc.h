/* SPDX-License-Identifier: Apache-2.0 */
/* The BMC driver interface: one set of operations for every protocol (Redfish, IPMI),
 * asynchronous, used by the API, the poller and the jobs. */
#ifndef KILN_BMC_H
#define KILN_BMC_H

#include <stdint.h>

#include "bmc/op/op.h"

struct bmc_engine;

struct bmc_engine_config {
	int fanout;               /* global limit on BMC requests in flight */
	long connect_timeout_ms;
	long request_timeout_ms;
	long action_timeout_ms;   /* how long a power action's confirmation may take */
	long status_timeout_ms;   /* a power-state read's GETs; 0: request_timeout_ms */
	const char *state_dir;    /* SDR caches, console logs */
	int redfish_loops;        /* Redfish loop threads; 0: one per online core (at most
				   * BMC_REDFISH_LOOPS_MAX) */
	const struct bmc_session_keeper *sessions; /* NULL: Redfish sessions end with kilnd */
};

#define BMC_REDFISH_LOOPS_MAX 16

int bmc_engine_start(struct bmc_engine **out, const struct bmc_engine_config *cfg);
/*
 * Takes no more operations and fails every queued one ("kilnd is stopping") at once; what
 * runs goes on. kilnd calls it before stopping the poller, which waits for its own reads:
 * those queued behind many others on a silent BMC would hold the stop for minutes.
 * Accepts NULL; bmc_engine_stop calls it too.
 */
void bmc_engine_drain(struct bmc_engine *e);
/* Stops the engine: fails what is queued, logs out of every BMC session. Accepts NULL. */
void bmc_engine_stop(struct bmc_engine *e);

/*
 * Queues op on target. Operations on one node run one at a time, in order; done is
 * called exactly once, from an engine thread. Returns KILN_EINVAL for a target the
 * engine cannot handle (then done is not called).
 * One exception to the order: while a background read (op->background, the poller's) runs
 * on a Redfish BMC, the next other operation of that node starts beside it, and the
 * driver holds the background read between two of its requests until that one ends: a
 * fleet-wide sweep does not wait behind an inventory read. One request at a time still
 * goes to the BMC, on its one session. A power read beside a background power read gets
 * that read's answer. Under the fan-out limit, other operations start before queued
 * background reads.
 */
int bmc_submit(struct bmc_engine *e, const struct bmc_target *target, const struct bmc_op *op,
	       bmc_done_fn done, void *ud);

/*
 * Runs op on n targets in parallel under the fan-out limit and waits for all; results[i]
 * belongs to targets[i]. The caller frees each result's data (json_decref).
 */
int bmc_run_batch(struct bmc_engine *e, const struct bmc_target *targets, size_t n,
		  const struct bmc_op *op, struct bmc_result *results);


#endif
