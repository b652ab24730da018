/* Pieces shared by the live BMC commands (power, boot, media, sensors, sel, inventory): the
 * request over a noderange, the typed-count confirmation, the per-node error column. */
#ifndef KILN_CLI_BMC_CLI_H
#define KILN_CLI_BMC_CLI_H

#include <jansson.h>

#include "cli.h"

/* Above this many nodes an action asks for the count to be typed (KILN_CONFIRM_THRESHOLD). */
#define BMC_CLI_CONFIRM_DEFAULT 10

/*
 * GET /<endpoint>?<key>=<value>[&<key2>=<value2>] (key2 may be NULL); *out is the array of
 * per-node results, owned by the caller. KILN_EPROTO when kilnd's answer is not an array.
 */
int bmc_cli_get(json_t **out, struct cli_ctx *ctx, const char *endpoint, const char *key,
		const char *value, const char *key2, const char *value2);

/* POST /<endpoint> with body; *out is the array of per-node results. */
int bmc_cli_post(json_t **out, struct cli_ctx *ctx, const char *endpoint, const json_t *body);

/*
 * The confirmation threshold: threshold_opt (--confirm-above) when not NULL, else
 * KILN_CONFIRM_THRESHOLD, else BMC_CLI_CONFIRM_DEFAULT. CLI_EUSAGE for a bad number.
 */
int bmc_cli_threshold(int *out, const struct cli_ctx *ctx, const char *threshold_opt);

/*
 * Asks on the terminal for the number of nodes to be typed back before what (e.g. "power
 * cycle") runs on count nodes. 0 when the user typed it; KILN_ERROR with one line when the
 * answer differs or there is no terminal (then --yes is the way).
 */
int bmc_cli_confirm_count(size_t count, const char *what, const char *range);

/* Per-node results with "error" printed as "kiln: NODE: ERROR" on stderr; the status
 * (0, CLI_EPARTIAL, KILN_ERROR when every node failed) as out_results_status. */
int bmc_cli_errors_print(const json_t *results);

/* The node objects without "error" in results. */
size_t bmc_cli_ok_count(const json_t *results);

#endif
