/* SPDX-License-Identifier: Apache-2.0 */
/* kilnd's side of the serial console: what ipmi_helper.c and ipmi_sol.c share. */
#ifndef KILN_BMC_IPMI_SOL_H
#define KILN_BMC_IPMI_SOL_H

#include <jansson.h>

/* Sends msg to the running helper (ipmi_helper.c). KILN_ERROR when none is running. */
int ipmi_helper_send(const json_t *msg);

/* Hands a helper frame that carries "console" to its session's callback. */
void ipmi_sol_dispatch(json_t *msg);

/* Ends every session with CLOSED and why (the helper died or stopped). */
void ipmi_sol_fail_all(const char *why);

#endif
