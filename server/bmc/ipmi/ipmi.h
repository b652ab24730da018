/* SPDX-License-Identifier: Apache-2.0 */
/* The IPMI driver: BMC operations over IPMI 2.0 (libfreeipmi), run in a helper process. */
#ifndef KILN_BMC_IPMI_H
#define KILN_BMC_IPMI_H

#include "bmc/op/op.h"

/*
 * libfreeipmi waits with select(), which breaks once a descriptor number reaches 1024, and
 * kilnd holds thousands of sockets. Every IPMI call therefore runs in a helper process forked
 * by ipmi_helper_start() while kilnd is still small, and reached over a socketpair. The
 * helper runs a bounded pool of worker threads, one operation at a time per BMC, and keeps
 * each BMC's RMCP+ session open after a job for the next one (ipmi_sessions.h). If the
 * helper dies, the requests in flight fail with "ipmi helper died" and a fresh helper is
 * started for the next ones.
 */
struct ipmi_helper_config {
	const char *state_dir; /* SDR caches go under STATE/ipmi/sdr/ */
	int workers;           /* worker threads in the helper; 0: 64 */
	long session_idle_ms;  /* a kept session idle this long is closed; 0: 20 s; < 0: none kept */
};

/*
 * Forks the helper. Call from main before opening anything else (database, sockets, log
 * files) and before starting any thread, but after daemonising: the helper inherits the
 * descriptors open at this point. Starts one thread (the reply reader). Not thread-safe;
 * call once.
 */
int ipmi_helper_start(const struct ipmi_helper_config *cfg);

/* Fails what is in flight ("ipmi helper stopped"), stops the helper and waits for it.
 * Safe to call when the helper was never started. */
void ipmi_helper_stop(void);

/* Fails every operation in flight at the helper with why (their done runs now, from this
 * thread); the helper keeps running. The engine's stop, so that no answer comes after it. */
void ipmi_fail_pending(const char *why);

/* Timeouts for one operation (from struct bmc_engine_config). 0 takes the default. */
struct ipmi_limits {
	long request_timeout_ms; /* IPMI session timeout for each command; default 5000 */
	long action_timeout_ms;  /* how long a power action's read-back may take; default 60000 */
};

/*
 * Runs op on target in the helper. done is called exactly once, from the helper reply
 * thread (or from this call, before it returns, when the request cannot be sent); the
 * result's data is owned by the result and freed after done returns. Returns 0, or
 * KILN_EINVAL for an operation IPMI cannot do (virtual media) or a bad target (then done
 * is not called). Operations on one BMC (host and port) run one at a time, in order.
 * target and op are copied.
 *
 * SEL: op->sel_since > 0 returns the entries whose timestamp is >= sel_since plus, for a
 * node read before in this process, only the records added since that read (by record id),
 * so that an entry appears once even when the BMC's clock is unset.
 */
int ipmi_submit(const struct bmc_target *target, const struct bmc_op *op,
		const struct ipmi_limits *limits, bmc_done_fn done, void *ud);

/*
 * The serial console (IPMI SOL) through the helper. A session is opened with
 * ipmi_console_open; fn is then called from the helper reply thread with OPEN once the SOL
 * session is established, DATA for each chunk of serial output, and CLOSED exactly once
 * at the end (rc 0 after ipmi_console_close, < 0 with the reason when the open failed,
 * the BMC ended the session or the helper died). After CLOSED, fn is never called again
 * for that id, so the caller frees ud there. fn must not block: it runs on the thread
 * that reads every IPMI answer.
 */
enum ipmi_console_event { IPMI_CONSOLE_OPEN, IPMI_CONSOLE_DATA, IPMI_CONSOLE_CLOSED };

typedef void (*ipmi_console_fn)(void *ud, enum ipmi_console_event ev, const unsigned char *data,
				size_t len, int rc, const char *error);

struct ipmi_console_options {
	int steal;       /* take over a SOL session someone else holds (else: KILN_EBUSY) */
	int keepalive;   /* also send (empty) serial keepalives: for long unattended capture */
	long timeout_ms; /* IPMI session timeout; 0: 5000 */
};

/*
 * Starts opening the console of target (ipmi_host/port: the node's BMC or its --sol
 * address). *out_cid identifies the session. Returns 0 (fn will be called), or KILN_EINVAL
 * for a bad target, KILN_ERROR when the helper is not running (then fn is never called).
 */
int ipmi_console_open(int64_t *out_cid, const struct bmc_target *target,
		      const struct ipmi_console_options *opt, ipmi_console_fn fn, void *ud);

/* Queues bytes typed into the console. KILN_ENOTFOUND once the session is closed. */
int ipmi_console_write(int64_t cid, const void *data, size_t len);

/* Asks the helper to end the session; CLOSED follows. Unknown ids are ignored. */
void ipmi_console_close(int64_t cid);

/* 1 while a helper process is running, 0 otherwise (for health output and tests). */
int ipmi_helper_running(void);

/* The helper's process id, 0 while none (tests kill it to check the restart). */
int ipmi_helper_pid(void);

#endif
