/* SPDX-License-Identifier: Apache-2.0 */
/* What many CLI verbs share: argument checks, list GETs, one-line answers, query strings. */
#ifndef KILN_CLI_COMMON_OPTS_H
#define KILN_CLI_COMMON_OPTS_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "cli.h"
#include "output.h"

/* 0, or a usage error "unexpected argument '<first extra>'" when pos holds more than max. */
int cli_args_max(const struct cli_ctx *ctx, const struct cli_args *pos, size_t max);

/*
 * The ID that is the first of exactly want positional arguments, as a positive integer;
 * usage errors "missing argument", "too many arguments", "ID 'x' is not a positive number".
 */
int cli_args_id(const struct cli_ctx *ctx, int64_t *out, const struct cli_args *pos, size_t want);

/* GETs path (an array answer) and prints it with out_list_print() per ctx->output. */
int cli_list_get(struct cli_ctx *ctx, const char *path, const struct out_col *cols, size_t ncols);

/*
 * Calls METHOD path with body (NULL for none) and prints the answer as JSON with -o json,
 * else the line fmt formats (with a newline).
 */
int cli_api_say(struct cli_ctx *ctx, const char *method, const char *path, const json_t *body,
		const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/*
 * Appends "?name=value" (or "&name=value" once path has a query) to path, value
 * percent-encoded; a NULL value appends nothing. KILN_ETOOBIG when it does not fit in len.
 */
int cli_query_add(char *path, size_t len, const char *name, const char *value);

#endif
