/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Live BMC calls handed to a node's owner, when several kilnd share one PostgreSQL database:
 * the instance that took the API call writes a node_calls row (schema 026) and notifies the
 * others; the owner claims it, runs it on its BMC engine, stores the result and notifies the
 * caller, whose live thread answers from it. The same rows are the claims that send an action
 * at most once: a row claimed by an instance that died is never sent again; its new owner
 * reads the power back and reports the call interrupted.
 */
#ifndef KILND_HANDOFF_H
#define KILND_HANDOFF_H

#include <stdint.h>

#include "bmc/bmc.h"
#include "store/store.h"

struct cluster;
struct handoff;
struct secret_key;

/* The notification channels: new rows (every instance listens), and results for one origin
 * (HANDOFF_DONE_CHANNEL followed by its instance id). */
#define HANDOFF_CALLS_CHANNEL "kiln_calls"
#define HANDOFF_DONE_CHANNEL "kiln_done_"

/* --- the operation as a row holds it (unit-tested) ------------------------------------- */

/* op and the node's name as JSON text (malloc'd), or NULL on ENOMEM. */
char *handoff_op_text(const struct bmc_op *op, const char *node);
/* Parses what handoff_op_text wrote: *out (its media_url is *out_media, the caller's) and the
 * node's name in *out_node (the caller's). KILN_EINVAL for text it did not write. */
int handoff_op_parse(const char *text, struct bmc_op *out, char **out_media, char **out_node);
/* Whether an operation changes the node (it is audited, and sent at most once). */
int handoff_op_is_action(enum bmc_op_kind kind);

/*
 * A BMC call's row in node_calls (several kilnd; nothing is written, *out_id 0, when the
 * store is not shared), inside the caller's transaction beside the call's audit row. owner
 * NULL: an action this instance sends itself (running, claimed by it): should it die before
 * the result, the node's next owner reads the power back and reports the action
 * interrupted, never sending it again; the sender deletes the row once the result is in.
 * Else the call handed to instance owner, the node's owner ("": none live now; pending;
 * notify HANDOFF_CALLS_CHANNEL in the same transaction).
 */
int handoff_row(struct store *st, struct cluster *c, int64_t node_id, const char *node,
		const struct bmc_op *op, int64_t audit_id, const char *owner, int64_t *out_id);

/* --- the handoff thread -------------------------------------------------------------- */

/* A result of a call this instance handed out: row (done or interrupted; valid during the
 * call only). Called on the handoff thread. */
typedef void (*handoff_result_fn)(void *ud, const struct node_call_row *row);

struct handoff_options {
	const char *db_path;          /* the thread's own store handle (and its LISTEN) */
	struct bmc_engine *engine;
	struct cluster *cluster;
	const struct secret_key *key; /* opens the BMC passwords */
	/* set by handoff_run() */
	handoff_result_fn on_result;
	void *ud;
};

/*
 * Opens the handoff's store and deals with what this instance left in an earlier life (a
 * kilnd killed mid-call, restarted with its instance id): the calls it had claimed are
 * taken back for a power read-back, those it had handed out are cancelled; none is sent
 * again. Call before anything of this life can claim a call (the poller, the jobs, the API).
 */
int handoff_start(struct handoff **out, const struct handoff_options *opt);
/* What a call handed to this instance learnt from its BMC (a power state, a reading), for
 * this instance's own readings (kilnd passes poller_observe). Called on the handoff thread,
 * never after handoff_stop returns. */
typedef void (*handoff_observe_fn)(void *ud, int64_t node_id, enum bmc_op_kind kind,
				   const json_t *data);

/* Starts the thread: it takes the calls handed to this instance (what they learn goes to
 * observe, which may be NULL), and brings the results of those it handed out to on_result. */
int handoff_run(struct handoff *h, handoff_observe_fn observe, void *observe_ud,
		handoff_result_fn on_result, void *ud);
/* Takes no new call from then on; what runs finishes. Call before the engine drains. */
void handoff_stop(struct handoff *h);
/* Joins the thread once the engine stopped (every result came back). Accepts NULL. */
void handoff_free(struct handoff *h);

#endif
