/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The per-node action lock: one action (power, boot, media through the API, a reinstall job for
 * its whole run, the poller's remediation) at a time per node. A second claimant is refused,
 * never queued. The API, the poller and the jobs all take it here.
 *
 * Held in this process today; a store shared by several kilnd can implement the same four
 * calls as a lease row without their callers changing.
 */
#ifndef KILN_NODE_LOCK_H
#define KILN_NODE_LOCK_H

#include <stddef.h>
#include <stdint.h>

/* 1 when claimed, 0 when the node is held already, negative on ENOMEM. */
int node_lock_claim(int64_t node_id);
/* Releases the node; a node that is not held is accepted. */
void node_lock_release(int64_t node_id);
/* 1 when the node is held. */
int node_lock_held(int64_t node_id);
/*
 * Claims each of ids[0..n) that is free, in one step (no other claim runs in between), setting
 * claimed[i] to 1 for those taken and 0 for those held already. Returns how many were taken,
 * or negative on ENOMEM with none taken.
 */
int node_lock_claim_each(const int64_t *ids, size_t n, int *claimed);

#endif
