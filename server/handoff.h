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
struct poller;
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

/* --- the handoff thread -------------------------------------------------------------- */

/* A result of a call this instance handed out: row (done or interrupted; valid during the
 * call only). Called on the handoff thread. */
typedef void (*handoff_result_fn)(void *ud, const struct node_call_row *row);

struct handoff_options {
	const char *db_path;          /* the thread's own store handle (and its LISTEN) */
	struct bmc_engine *engine;
	struct poller *poller;        /* what a call learned is stored as its reading */
	struct cluster *cluster;
	const struct secret_key *key; /* opens the BMC passwords */
	handoff_result_fn on_result;
	void *ud;
};

/*
 * Starts the thread. Before it returns, the calls this instance claimed in an earlier life
 * (a kilnd killed mid-call, restarted with its instance id) are taken back for a power
 * read-back, and the calls it handed out then are cancelled: none is sent again.
 */
int handoff_start(struct handoff **out, const struct handoff_options *opt);
/* Takes no new call from then on; what runs finishes. Call before the engine drains. */
void handoff_stop(struct handoff *h);
/* Joins the thread once the engine stopped (every result came back). Accepts NULL. */
void handoff_free(struct handoff *h);

#endif
