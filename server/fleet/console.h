/* SPDX-License-Identifier: Apache-2.0 */
/* Serial consoles in kilnd: one SOL session per node shared by capture and attached clients. */
#ifndef KILND_CONSOLE_H
#define KILND_CONSOLE_H

#include <stddef.h>

#include "kiln/buf.h"
#include "daemon/secret.h"
#include "store/store.h"

/*
 * A node's console is one IPMI SOL session (opened in the IPMI helper, bmc/ipmi/ipmi.h),
 * shared by everything that wants it: capture (its output appended to
 * STATE/console/NODE.log, rotated to NODE.log.1 at log_max_bytes) and any number of
 * attached clients (kiln console), each receiving the output and able to type. The
 * session opens when the first user appears and closes when the last one leaves. With
 * capture on, a session the BMC drops is opened again (backoff 1 s doubling to 60 s);
 * credentials the BMC rejected are not tried again until they change.
 */
struct console_config {
	const char *state_dir;
	const char *db_path;          /* the manager thread opens its own store handle */
	const struct secret_key *key; /* kept, not copied: it must outlive this */
	long log_max_bytes;           /* 0: 1 MiB */
	long timeout_ms;              /* IPMI session timeout; 0: 5000 */
	int shared;                   /* the store is shared: no capture opens before
				       * console_cluster_set() */
};

/* Starts the manager thread and the captures stored as on. Call once, after the IPMI
 * helper has started. */
int console_start(const struct console_config *cfg);

struct cluster;
/* Several kilnd on one database: from now on each node's capture runs on its owner only (a
 * BMC takes one SOL session), the flags set through any instance. */
void console_cluster_set(struct cluster *c);

/* Ends every attached client and session and joins the thread. Call before stopping the
 * HTTP server (attached clients hold upgraded connections) and the IPMI helper. Safe when
 * never started. */
void console_stop(void);

/* A node's console address and credentials, resolved from the store (the password
 * decrypted). */
struct console_target;

/*
 * Resolves node for a console: KILN_ENOTFOUND for an unknown node, KILN_EINVAL when it has
 * no IPMI address (an ipmi:// BMC, or a Redfish BMC with --sol ipmi://...).
 */
int console_target_load(struct console_target **out, struct store *st,
			const struct secret_key *key, const char *node);
void console_target_free(struct console_target *t); /* accepts NULL */

/*
 * Runs one attached client on sock until the client leaves (end of stream), the session
 * ends or console_stop: serial output is written to sock, bytes read from sock are typed
 * into the console. initial (may be NULL) is input that came with the request. steal
 * takes over a SOL session another client holds on the BMC. When the session cannot be
 * opened or ends, a line "\r\n[kiln: ...]\r\n" saying why is written to sock. Then
 * release(arg) is called (it closes sock) before console_stop may return. Takes t.
 * Blocks; call from a thread of its own.
 */
void console_client_run(struct console_target *t, int sock, const char *initial,
			size_t initial_len, int steal, void (*release)(void *arg), void *arg);

/* Switches capture on or off for node: stores the flag, then opens or closes. */
int console_capture_set(struct store *st, const char *node, int enabled);

/*
 * The last `lines` lines (at most 10000) of node's captured output, from NODE.log.1 and
 * NODE.log, as a JSON array of strings (carriage returns removed, bytes that are not UTF-8
 * replaced by '?'). An empty array when nothing was captured.
 */
int console_log_tail(json_t **out, const char *node, long lines);

/* Where node's captured log is: suffix "" the file being written, ".1" the one before.
 * KILN_ERROR when the consoles are not started, KILN_EINVAL when the path does not fit. */
int console_log_path(char *out, size_t outlen, const char *node, const char *suffix);

/* The last max_bytes (at most) of node's NODE.log.1 and of NODE.log, as captured, into a
 * new *out (kiln_buf_free it): what a hung node's evidence is read from. */
int console_log_recent(struct kiln_buf *out, const char *node, long max_bytes);

/* Adds the node's session state to obj: "session" ("closed", "opening", "open",
 * "closing"), "clients" (attached now) and "error" (why the last open failed or the BMC
 * ended the session, or null). */
void console_status(json_t *obj, const char *node);

#endif
