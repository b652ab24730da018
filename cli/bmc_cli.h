/* SPDX-License-Identifier: Apache-2.0 */
/* Pieces shared by the live BMC commands (power, boot, media, sensors, sel, inventory): the
 * request over a noderange, rows printed as the nodes answer with the progress on a terminal,
 * the typed-count confirmation, the per-node error lines. */
#ifndef KILN_CLI_BMC_CLI_H
#define KILN_CLI_BMC_CLI_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "cli.h"

/* Above this many nodes an action asks for the count to be typed, unless --confirm-above,
 * KILN_CONFIRM_THRESHOLD or cli.conf's confirm_above says otherwise: a destructive one (power
 * off, soft, reset, cycle, boot override, media insert, reinstall) on more than one node,
 * power on above 10. */
#define BMC_CLI_CONFIRM_DESTRUCTIVE 1
#define BMC_CLI_CONFIRM_ON 10

/* The NODE column's width when the range names groups or all (names unknown beforehand). */
#define BMC_CLI_NODE_WIDTH 12

/* Most columns a live command's table has. */
#define BMC_CLI_COLS_MAX 10

/* The option every live command takes; id is the command's own. */
#define BMC_CLI_OPT_RETRY(id)                                                              \
	{ "retry-unreachable", 0, NULL, (id),                                              \
	  "ask a BMC kilnd knows is down anyway (else it answers at once: unreachable since T)" }

/* A live read: GET /<endpoint>?<key>=<value>[&<key2>=<value2>][&retry_unreachable=1]. */
struct bmc_cli_query {
	const char *endpoint;         /* "power", "sensors", ... */
	const char *key, *value;      /* "range", NODERANGE */
	const char *key2, *value2;    /* another argument ("since", "12h"), NULL for none */
	bool retry_unreachable;
};

/* GET q as a JSON array; *out is the array of per-node results, owned by the caller.
 * KILN_EPROTO when kilnd's answer is not an array. */
int bmc_cli_get(json_t **out, struct cli_ctx *ctx, const struct bmc_cli_query *q);

/* POST /<endpoint> with body; *out is the array of per-node results. */
int bmc_cli_post(json_t **out, struct cli_ctx *ctx, const char *endpoint, const json_t *body);

/*
 * A live command's per-node results, printed as they arrive: table rows on stdout with fixed
 * column widths (the set of rows is not known beforehand), the progress
 * ("kiln: power status: 5/20 nodes done, 1 failed") rewritten in place on stderr when it is a
 * terminal. Without a print function (-o json) the requests ask for the plain JSON array and
 * nothing is printed: results gathers the objects either way, in the order they came.
 */
struct bmc_cli_rows {
	const char *what;                    /* the progress line's words: "power status" */
	const char *const *headers;          /* ncols of them */
	size_t ncols;
	size_t width[BMC_CLI_COLS_MAX];      /* characters a column; at least its header's, and
					      * widened by a wider cell for the rows after it */
	int (*print)(struct bmc_cli_rows *r, const json_t *obj); /* one node; NULL: -o json */
	void *ud;                            /* for print */

	json_t *results;        /* every object so far */
	size_t total;           /* the progress line's total: X-Kiln-Nodes unless total_fixed */
	bool total_fixed;       /* the command set total itself (paced batches) */
	size_t done, failed;
	int batch, batches;     /* "(batch 2/4)" when batches > 1 */
	bool tty;               /* show the progress (stderr is a terminal; table output) */
	bool header_printed;
	bool progress_shown;
};

/*
 * Sets r up for a command: headers and widths (ncols of each, at most BMC_CLI_COLS_MAX; the
 * NODE column first, see bmc_cli_node_width) and print (NULL for -o json). KILN_ERROR on
 * ENOMEM. bmc_cli_rows_free releases it.
 */
int bmc_cli_rows_init(struct bmc_cli_rows *r, const char *what, const char *const *headers,
		      const size_t *widths, size_t ncols,
		      int (*print)(struct bmc_cli_rows *r, const json_t *obj));

/* GET q, each node's object through bmc_cli_rows_add as it arrives. Errors as cli_api's. */
int bmc_cli_rows_get(struct bmc_cli_rows *r, struct cli_ctx *ctx, const struct bmc_cli_query *q);

/* POST /<endpoint> with body, likewise. */
int bmc_cli_rows_post(struct bmc_cli_rows *r, struct cli_ctx *ctx, const char *endpoint,
		      const json_t *body);

/* One node's object: kept in results, counted, printed, the progress redrawn. */
int bmc_cli_rows_add(struct bmc_cli_rows *r, const json_t *obj);

/* For print: one table row of r->ncols cells (the header before the first row), two spaces
 * between columns whatever the cells' widths (out_row_print). */
void bmc_cli_row(struct bmc_cli_rows *r, const char *const *cells);

/* For print: "kiln: NODE: ERROR" on stderr when obj has an error. */
void bmc_cli_row_error(struct bmc_cli_rows *r, const json_t *obj);
/* "NODE: WHY" on stdout, for a node that answered with nothing to list (no sensors, an
 * empty log): the object's "note" when kilnd gave one, else fallback. A table is never
 * printed empty. */
void bmc_cli_row_none(struct bmc_cli_rows *r, const json_t *obj, const char *fallback);

/* Draws the progress line now (a terminal only); next_in > 0 adds ", next batch in Ns". */
void bmc_cli_rows_progress(struct bmc_cli_rows *r, int64_t next_in);

/* Ends the progress line before the command goes on or exits: keep leaves its last state
 * on stderr (an action's summary), else it is erased. */
void bmc_cli_rows_end(struct bmc_cli_rows *r, bool keep);

void bmc_cli_rows_free(struct bmc_cli_rows *r);

/*
 * A live read from start to end: GET q with each node's object through print as it arrives
 * (the NODE column, widths[0], as wide as bmc_cli_node_width(q->value)), or, with -o json,
 * the JSON array printed whole. Returns 0, CLI_EPARTIAL or KILN_ERROR (every node failed),
 * or the request's error.
 */
int bmc_cli_read(struct cli_ctx *ctx, const struct bmc_cli_query *q, const char *what,
		 const char *const *headers, const size_t *widths, size_t ncols,
		 int (*print)(struct bmc_cli_rows *r, const json_t *obj));

/*
 * The NODE column's width for range: its longest name when the range can be expanded here
 * (no @group, no all), else BMC_CLI_NODE_WIDTH; never less than "NODE".
 */
size_t bmc_cli_node_width(const char *range);

/* The NODE column's width for the nodes of results (a plan): its longest name, at least 4. */
size_t bmc_cli_results_node_width(const json_t *results);

/*
 * The confirmation threshold: threshold_opt (--confirm-above) when not NULL, else
 * KILN_CONFIRM_THRESHOLD, else cli.conf's confirm_above, else fallback (one of the
 * BMC_CLI_CONFIRM_* above). Opens the client (cli.conf). CLI_EUSAGE for a bad number.
 */
int bmc_cli_threshold(int *out, struct cli_ctx *ctx, const char *threshold_opt, int fallback);

/*
 * Asks on the terminal for the number of nodes to be typed back before what (e.g. "power
 * cycle") runs on count nodes. 0 when the user typed it; KILN_ERROR with one line when the
 * answer differs or there is no terminal (then --yes is the way).
 */
int bmc_cli_confirm_count(size_t count, const char *what, const char *range);

/* The node objects without "error" in results. */
size_t bmc_cli_ok_count(const json_t *results);

#endif
