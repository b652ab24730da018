/* SPDX-License-Identifier: Apache-2.0 */
/* The Redfish driver: one event-loop thread running every node operation as a small state
 * machine of HTTP requests on libcurl's multi interface. Used by the BMC engine (bmc.c). */
#ifndef KILN_REDFISH_H
#define KILN_REDFISH_H

#include <stddef.h>

#include "bmc/op/op.h"

struct redfish;      /* the driver: loop thread, curl multi, active operations */
struct redfish_bmc;  /* one BMC's cached state: session, discovered paths, vendor profile */

struct redfish_config {
	int max_inflight;          /* requests in flight at once, all BMCs together */
	long connect_timeout_ms;
	long request_timeout_ms;
	long action_timeout_ms;    /* power confirmation, task monitors */
	long status_timeout_ms;    /* a power-state read's GETs; 0: request_timeout_ms */
	int max_connections;       /* kept-alive connections; 0: half the open-file limit */
	int max_handshakes;        /* requests on a new TLS connection in flight at once; 0: 64 */
	size_t max_body;           /* hard cap on a response body */
	int share;                 /* loops sharing the process (0, 1: alone): the defaults of
				    * max_connections and max_handshakes are divided among them */
	const struct bmc_session_keeper *keeper; /* sessions kept across restarts, or NULL */
};

int redfish_start(struct redfish **out, const struct redfish_config *cfg);

/*
 * Fails every operation still running ("kilnd is stopping"), deletes every BMC session
 * (DELETE of the session resource), frees every BMC state and joins the loop thread.
 * Accepts NULL.
 */
void redfish_stop(struct redfish *rf);
/* Tells the loop to stop without waiting for it (redfish_stop then waits), so that several
 * loops log out of their BMCs at once. Accepts NULL. */
void redfish_stop_begin(struct redfish *rf);

/*
 * Copies what it needs of target. KILN_EINVAL when the target is not a Redfish one. The
 * driver owns the state: it lives until redfish_bmc_retire or redfish_stop.
 */
int redfish_bmc_new(struct redfish *rf, struct redfish_bmc **out, const struct bmc_target *target);

/* 1 once the BMC rejected this state's credentials twice (no more logins with them). */
int redfish_bmc_rejected(const struct redfish_bmc *bmc);

/* Hands a BMC's state back (its credentials changed): its session is deleted in the loop
 * thread and it is freed. No operation may be running on it. Accepts NULL. */
void redfish_bmc_retire(struct redfish *rf, struct redfish_bmc *bmc);

/*
 * Runs op on bmc; done is called exactly once from the loop thread. At most one
 * operation per bmc may run at a time (the engine serialises them).
 */
int redfish_submit(struct redfish *rf, struct redfish_bmc *bmc, const struct bmc_op *op,
		   bmc_done_fn done, void *ud);

#endif
