/* SPDX-License-Identifier: Apache-2.0 */
/* What many CLI verbs share: argument checks, list GETs, one-line answers, query strings. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kiln/error.h>
#include <kiln/parse.h>

#include "client.h"
#include "common_opts.h"

int cli_args_max(const struct cli_ctx *ctx, const struct cli_args *pos, size_t max)
{
	if (pos->n > max)
		return cli_usage_error(ctx, "unexpected argument '%s'", pos->v[max]);
	return 0;
}

int cli_args_id(const struct cli_ctx *ctx, int64_t *out, const struct cli_args *pos, size_t want)
{
	if (pos->n != want)
		return cli_usage_error(ctx, pos->n < want ? "missing argument" : "too many arguments");
	if (kiln_parse_int64(out, pos->v[0], 1, INT64_MAX) < 0)
		return cli_usage_error(ctx, "ID '%s' is not a positive number", pos->v[0]);
	return 0;
}

int cli_list_get(struct cli_ctx *ctx, const char *path, const struct out_col *cols, size_t ncols)
{
	json_t *res = NULL;
	int rc;

	rc = cli_api(&res, NULL, ctx, "GET", path, NULL);
	if (rc == 0)
		rc = out_list_print(res, ctx->output == CLI_OUT_JSON, cols, ncols);
	json_decref(res);
	return rc;
}

int cli_api_say(struct cli_ctx *ctx, const char *method, const char *path, const json_t *body,
		const char *fmt, ...)
{
	json_t *res = NULL;
	va_list ap;
	int rc;

	rc = cli_api(&res, NULL, ctx, method, path, body);
	if (rc < 0)
		goto cleanup;
	if (ctx->output == CLI_OUT_JSON) {
		rc = out_json_print(res, stdout);
		goto cleanup;
	}
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
cleanup:
	json_decref(res);
	return rc;
}

int cli_query_add(char *path, size_t len, const char *name, const char *value)
{
	char *esc;
	size_t used = strlen(path);

	if (!value)
		return 0;
	esc = cli_url_escape(value);
	if (!esc)
		return kiln_fail(KILN_ERROR, "out of memory");
	if ((size_t)snprintf(path + used, len - used, "%c%s=%s", strchr(path, '?') ? '&' : '?', name,
			     esc) >= len - used) {
		free(esc);
		return kiln_fail(KILN_ETOOBIG, "the node range is too long");
	}
	free(esc);
	return 0;
}
