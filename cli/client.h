/* SPDX-License-Identifier: Apache-2.0 */
/* Calls to kilnd's REST API for the CLI: address, token and trust resolution, JSON in and out,
 * list answers object by object as they arrive. */
#ifndef KILN_CLI_CLIENT_H
#define KILN_CLI_CLIENT_H

#include <jansson.h>

#include "cli.h"

/* Largest response the CLI accepts from kilnd. */
#define CLI_MAX_RESPONSE (64u << 20)
/* kilnd answers a fan-out (power cycle, reinstall plan, ...) only once every node's action is
 * confirmed or has timed out (bmc.action_timeout, at most an hour), so the CLI waits longer
 * than that; a kilnd that does not accept the connection fails within 10 s. */
#define CLI_REQUEST_TIMEOUT_MS (65L * 60 * 1000)

/*
 * Resolves the server address, the token and the TLS trust, each from the first of: the
 * command line, the environment (KILN_URL; KILN_TOKEN_FILE or KILN_TOKEN, both a usage error; KILN_CA;
 * KILN_FINGERPRINT), ~/.config/kiln/cli.conf ($XDG_CONFIG_HOME when set), the default
 * (http://127.0.0.1:8470). Idempotent. Fails with KILN_EAUTH when no token is found.
 */
int cli_client_open(struct cli_ctx *ctx);

/*
 * Calls METHOD <base>/api/v1<path> with body (NULL for none), opening the client first.
 * On a 2xx answer *out gets the parsed body (any JSON value; NULL when empty), owned by the
 * caller. On an API error returns cli_answer_code()'s code: CLI_EUSAGE for what the
 * command line got wrong, else one matching the status (404 KILN_ENOTFOUND, 401
 * KILN_EAUTH, 403 KILN_EPERM, 409 KILN_EEXISTS, 400 KILN_EINVAL, 413 KILN_ETOOBIG, else
 * KILN_ERROR) with the message "<error> (field X)"; when api_error is not NULL it receives
 * the error object ({"error","field","index"}), owned by the caller.
 */
int cli_api(json_t **out, json_t **api_error, struct cli_ctx *ctx, const char *method,
	    const char *path, const json_t *body);

/*
 * The code an error answer of kilnd maps to: CLI_EUSAGE (exit 2) for a 400 and for a 404
 * about the range (its "unknown" names, or "field":"range"): what was typed is wrong and
 * nothing was done; otherwise by status as cli_api says. err is the answer's body (or NULL).
 */
int cli_answer_code(long status, const json_t *err);

/* Where cli_api_stream hands the objects of a list answer. */
struct cli_stream {
	/*
	 * Once, before the first object: how many objects kilnd announced (X-Kiln-Nodes; 0 when
	 * it did not say), or the array's length from a kilnd that answers a JSON array. May be
	 * NULL.
	 */
	void (*total)(void *ud, size_t total);
	/* Each object as it arrives (borrowed: json_incref to keep it); a negative return
	 * (kiln_fail set) stops the request and is returned. */
	int (*object)(void *ud, json_t *obj);
	void *ud;
};

/*
 * cli_api for an endpoint that answers a list of objects, asking for it as NDJSON
 * (Accept: application/x-ndjson) so that each object reaches s->object as kilnd sends it. A
 * kilnd that answers application/json instead (one that does not stream) works too: its array's
 * elements are handed over one by one at the end. Errors are cli_api's (api_error likewise); a
 * line that is not a JSON object, or an answer that is not an array of objects, is KILN_EPROTO.
 */
int cli_api_stream(json_t **api_error, struct cli_ctx *ctx, const char *method, const char *path,
		   const json_t *body, const struct cli_stream *s);

/* Percent-encodes s for a query string or a path segment; the caller frees. NULL on ENOMEM. */
char *cli_url_escape(const char *s);

#endif
