/* SPDX-License-Identifier: Apache-2.0 */
/* Error codes and the one-line message that travels with a failure. */
#ifndef KILN_ERROR_H
#define KILN_ERROR_H

/*
 * Functions return 0 on success and a negative code on failure. Callers act on
 * the named codes; everything else is KILN_ERROR. The human-readable message is
 * kept per thread and read with kiln_error_last().
 */
enum {
	KILN_OK = 0,
	KILN_ERROR = -1,     /* generic failure, see the message */
	KILN_ENOTFOUND = -2, /* no such node, token, resource */
	KILN_ETIMEOUT = -3,  /* a peer did not answer in time */
	KILN_EAUTH = -4,     /* credentials or token rejected */
	KILN_EBUSY = -5,     /* an action is already in flight / lock held */
	KILN_EINVAL = -6,    /* bad input: argument, body, config, response */
	KILN_EEXISTS = -7,   /* unique name already taken */
	KILN_ETOOBIG = -8,   /* input over its hard size cap */
	KILN_EPERM = -9,     /* role too weak */
	KILN_EPROTO = -10,   /* peer spoke the protocol wrongly */
	KILN_ENEWER = -11,   /* data written by a newer kiln */
	KILN_ETLS = -12,     /* the peer's TLS certificate differs from its pinned fingerprint */
	KILN_EIDENTITY = -13, /* an agent report's host identity is not its node's */
	KILN_ECONFIG = -14,  /* a peer that answers but does not fit the node's settings (a BMC
			      * of several systems and no --bmc-system): no outage */
};

/* Sets this thread's message (printf format) and returns code, so that
 * `return kiln_fail(KILN_EINVAL, "field %s: ...", f);` reads as one step. */
int kiln_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prefixes the current message: "ctx: previous message". Returns code. */
int kiln_fail_prefix(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* This thread's last message; "" when none. Valid until the next kiln_fail. */
const char *kiln_error_last(void);

void kiln_error_clear(void);

/* Short name of a code ("not found", "timeout", ...). */
const char *kiln_error_name(int code);

#endif
