/* SPDX-License-Identifier: Apache-2.0 */
/* kiln-bmcsim: the /_sim/ control interface (state, recorded requests, inject). */
#ifndef SIM_SIMCTL_H
#define SIM_SIMCTL_H

#include <stddef.h>
#include <stdint.h>

#include "bmc.h"
#include "sim.h"

/* Answers GET /_sim/state, GET|DELETE /_sim/requests and POST /_sim/inject for BMC b.
 * fingerprint is the TLS certificate's SHA-256 fingerprint or NULL. */
void simctl_handle(struct sim_reply *out, struct bmc *b, const char *method, const char *path,
		   const char *body, size_t body_len, uint64_t now, const char *fingerprint);

#endif
