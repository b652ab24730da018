/* SPDX-License-Identifier: Apache-2.0 */
/* Kept IPMI sessions in the helper: an open libfreeipmi context per BMC, reused by later jobs. */
#ifndef KILN_BMC_IPMI_SESSIONS_H
#define KILN_BMC_IPMI_SESSIONS_H

#include <freeipmi/freeipmi.h>

#include "bmc/ipmi/ipmi_ops.h"

/* Default idle limit: well under the ~60 s session inactivity timeout of the IPMI spec. */
#define IPMI_SESSIONS_IDLE_MS 20000
/*
 * Kept sessions at most, all BMCs together. Each holds a UDP socket in the helper, and
 * libfreeipmi waits with select(), which breaks at descriptor 1024: this leaves room for the
 * workers' own sessions, libipmimonitoring's and the consoles'. Past it a session is closed
 * after its job, as when nothing is kept.
 */
#define IPMI_SESSIONS_MAX 512

/*
 * Starts the cache and the thread that closes sessions idle for idle_ms. idle_ms <= 0 keeps
 * nothing (take always misses, put closes). Call once, before any worker runs.
 */
int ipmi_sessions_start(long idle_ms);

/*
 * Takes the kept session of job's BMC out of the cache when every session parameter matches
 * (host, user, password, cipher suite, workarounds, timeout) and its privilege is at least
 * the job's; the caller owns it until it gives it back with ipmi_sessions_put or closes it.
 * A kept session of that BMC that does not match is closed here (its password or settings
 * changed, or the job needs a higher privilege). NULL when nothing is kept for it.
 */
ipmi_ctx_t ipmi_sessions_take(const struct ipmi_job *job);

/*
 * Gives ctx (open for job, at job's privilege) to the cache for the next job to the same
 * BMC. Closes it instead when keeping is off, the cache is full or stopped, or the BMC
 * already has a kept session. Takes ownership.
 */
void ipmi_sessions_put(const struct ipmi_job *job, ipmi_ctx_t ctx);

/* Closes the session (Close Session to the BMC) and frees the context. Accepts NULL. */
void ipmi_session_close(ipmi_ctx_t ctx);

/*
 * Stops the expiry thread and closes every kept session (several at once), wiping the
 * passwords kept for comparison. Later puts close their session. Safe to call when never
 * started.
 */
void ipmi_sessions_stop(void);

/* Sessions kept now (for tests). */
int ipmi_sessions_count(void);

#endif
