/* SPDX-License-Identifier: Apache-2.0 */
/* Pieces shared by the live BMC commands: requests over a noderange, rows printed as the nodes
 * answer, the progress line and the typed-count confirmation for actions on many nodes. */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kiln/buf.h>
#include <kiln/error.h>
#include <kiln/escape.h>
#include <kiln/noderange.h>
#include <kiln/parse.h>

#include "bmc_cli.h"
#include "client.h"
#include "output.h"

static int array_check(json_t **out, json_t *res, const char *endpoint)
{
	if (!json_is_array(res)) {
		json_decref(res);
		return kiln_fail(KILN_EPROTO, "kilnd's answer to /%s is not an array", endpoint);
	}
	*out = res;
	return 0;
}

static int query_add(struct kiln_buf *path, const char *key, const char *value)
{
	char *q;
	int rc;

	if (!key || !value)
		return 0;
	q = cli_url_escape(value);
	if (!q)
		return kiln_fail(KILN_ERROR, "out of memory");
	rc = kiln_buf_printf(path, "%c%s=%s", strchr(path->data, '?') ? '&' : '?', key, q);
	free(q);
	return rc;
}

/* "/<endpoint>?<key>=<value>..." into path (initialised by the caller). */
static int query_path(struct kiln_buf *path, const struct bmc_cli_query *q)
{
	int rc = kiln_buf_printf(path, "/%s", q->endpoint);

	if (rc == 0)
		rc = query_add(path, q->key, q->value);
	if (rc == 0)
		rc = query_add(path, q->key2, q->value2);
	if (rc == 0 && q->retry_unreachable)
		rc = query_add(path, "retry_unreachable", "1");
	return rc;
}

int bmc_cli_get(json_t **out, struct cli_ctx *ctx, const struct bmc_cli_query *q)
{
	struct kiln_buf path;
	json_t *res = NULL;
	int rc;

	kiln_buf_init(&path, 0);
	rc = query_path(&path, q);
	if (rc == 0)
		rc = cli_api(&res, NULL, ctx, "GET", path.data, NULL);
	kiln_buf_free(&path);
	if (rc < 0)
		return rc;
	return array_check(out, res, q->endpoint);
}

int bmc_cli_post(json_t **out, struct cli_ctx *ctx, const char *endpoint, const json_t *body)
{
	char path[64];
	json_t *res = NULL;
	int rc;

	snprintf(path, sizeof(path), "/%s", endpoint);
	rc = cli_api(&res, NULL, ctx, "POST", path, body);
	if (rc < 0)
		return rc;
	return array_check(out, res, endpoint);
}

/* --- rows as the nodes answer ----------------------------------------------------------- */

int bmc_cli_rows_init(struct bmc_cli_rows *r, const char *what, const char *const *headers,
		      const size_t *widths, size_t ncols,
		      int (*print)(struct bmc_cli_rows *r, const json_t *obj))
{
	assert(ncols >= 1 && ncols <= BMC_CLI_COLS_MAX);
	memset(r, 0, sizeof(*r));
	r->what = what;
	r->headers = headers;
	r->ncols = ncols;
	for (size_t c = 0; c < ncols; c++) {
		size_t h = strlen(headers[c]);

		r->width[c] = widths[c] > h ? widths[c] : h;
	}
	r->print = print;
	r->tty = print && isatty(STDERR_FILENO);
	r->results = json_array();
	return r->results ? 0 : kiln_fail(KILN_ERROR, "out of memory");
}

void bmc_cli_rows_free(struct bmc_cli_rows *r)
{
	if (!r)
		return;
	json_decref(r->results);
	r->results = NULL;
}

void bmc_cli_rows_progress(struct bmc_cli_rows *r, int64_t next_in)
{
	if (!r->tty)
		return;
	fprintf(stderr, "\r\033[Kkiln: %s: %zu/%zu nodes done", r->what, r->done,
		r->total > r->done ? r->total : r->done);
	if (r->failed)
		fprintf(stderr, ", %zu failed", r->failed);
	if (r->batches > 1)
		fprintf(stderr, " (batch %d/%d)", r->batch, r->batches);
	if (next_in > 0)
		fprintf(stderr, ", next batch in %llds", (long long)next_in);
	fflush(stderr);
	r->progress_shown = true;
}

/* Takes the progress line away so that a row or an error line can be printed. */
static void progress_clear(struct bmc_cli_rows *r)
{
	if (!r->progress_shown)
		return;
	fputs("\r\033[K", stderr);
	fflush(stderr);
	r->progress_shown = false;
}

void bmc_cli_rows_end(struct bmc_cli_rows *r, bool keep)
{
	if (!r->tty)
		return;
	if (keep) {
		bmc_cli_rows_progress(r, 0);
		fputc('\n', stderr);
		fflush(stderr);
		r->progress_shown = false;
	} else {
		progress_clear(r);
	}
}

void bmc_cli_row(struct bmc_cli_rows *r, const char *const *cells)
{
	progress_clear(r);
	if (!r->header_printed) {
		out_row_print(stdout, r->headers, r->width, r->ncols);
		r->header_printed = true;
	}
	out_row_print(stdout, cells, r->width, r->ncols);
	fflush(stdout); /* seen now, not when the buffer fills */
}

void bmc_cli_row_error(struct bmc_cli_rows *r, const json_t *obj)
{
	const char *err = json_string_value(json_object_get(obj, "error"));
	const char *node = json_string_value(json_object_get(obj, "node"));

	if (!err)
		return;
	progress_clear(r);
	fflush(stdout);
	char safe[1024];

	fprintf(stderr, "kiln: %s: %s\n", node ? node : "?", kiln_escape(safe, sizeof(safe), err, 0));
}

void bmc_cli_row_none(struct bmc_cli_rows *r, const json_t *obj, const char *fallback)
{
	const char *note = json_string_value(json_object_get(obj, "note"));
	const char *node = json_string_value(json_object_get(obj, "node"));

	progress_clear(r);
	printf("%s: %s\n", node ? node : "?", note ? note : fallback);
	fflush(stdout);
}

int bmc_cli_rows_add(struct bmc_cli_rows *r, const json_t *obj)
{
	int rc;

	if (json_array_append(r->results, (json_t *)obj) < 0)
		return kiln_fail(KILN_ERROR, "out of memory");
	r->done++;
	if (json_object_get(obj, "error"))
		r->failed++;
	if (r->print && (rc = r->print(r, obj)) < 0)
		return rc;
	bmc_cli_rows_progress(r, 0);
	return 0;
}

static void rows_total(void *ud, size_t total)
{
	struct bmc_cli_rows *r = ud;

	if (!r->total_fixed)
		r->total = r->done + total;
	bmc_cli_rows_progress(r, 0);
}

static int rows_object(void *ud, json_t *obj)
{
	return bmc_cli_rows_add(ud, obj);
}

/* The objects of a plain array answer (-o json), through bmc_cli_rows_add. */
static int rows_feed(struct bmc_cli_rows *r, json_t *res)
{
	size_t i;
	json_t *e;
	int rc = 0;

	if (!r->total_fixed)
		r->total = r->done + json_array_size(res);
	json_array_foreach(res, i, e)
		if ((rc = bmc_cli_rows_add(r, e)) < 0)
			break;
	json_decref(res);
	return rc;
}

int bmc_cli_rows_get(struct bmc_cli_rows *r, struct cli_ctx *ctx, const struct bmc_cli_query *q)
{
	const struct cli_stream s = { .total = rows_total, .object = rows_object, .ud = r };
	struct kiln_buf path;
	json_t *res = NULL;
	int rc;

	if (!r->print) {
		if ((rc = bmc_cli_get(&res, ctx, q)) < 0)
			return rc;
		return rows_feed(r, res);
	}
	kiln_buf_init(&path, 0);
	rc = query_path(&path, q);
	if (rc == 0)
		rc = cli_api_stream(NULL, ctx, "GET", path.data, NULL, &s);
	kiln_buf_free(&path);
	return rc;
}

int bmc_cli_rows_post(struct bmc_cli_rows *r, struct cli_ctx *ctx, const char *endpoint,
		      const json_t *body)
{
	const struct cli_stream s = { .total = rows_total, .object = rows_object, .ud = r };
	json_t *res = NULL;
	char path[64];
	int rc;

	if (!r->print) {
		if ((rc = bmc_cli_post(&res, ctx, endpoint, body)) < 0)
			return rc;
		return rows_feed(r, res);
	}
	snprintf(path, sizeof(path), "/%s", endpoint);
	return cli_api_stream(NULL, ctx, "POST", path, body, &s);
}

int bmc_cli_read(struct cli_ctx *ctx, const struct bmc_cli_query *q, const char *what,
		 const char *const *headers, const size_t *widths, size_t ncols,
		 int (*print)(struct bmc_cli_rows *r, const json_t *obj))
{
	struct bmc_cli_rows rows = { 0 };
	size_t w[BMC_CLI_COLS_MAX];
	int rc;

	assert(ncols >= 1 && ncols <= BMC_CLI_COLS_MAX);
	memcpy(w, widths, ncols * sizeof(w[0]));
	w[0] = bmc_cli_node_width(q->value);
	rc = bmc_cli_rows_init(&rows, what, headers, w, ncols,
			       ctx->output == CLI_OUT_JSON ? NULL : print);
	if (rc == 0)
		rc = bmc_cli_rows_get(&rows, ctx, q);
	bmc_cli_rows_end(&rows, false);
	/* kilnd refuses unknown names; only exclusions empty a range ("@rack1,-@h100") */
	if (rc == 0 && ctx->output != CLI_OUT_JSON && json_array_size(rows.results) == 0)
		printf("no nodes in %s\n", q->value ? q->value : "the range");
	if (rc == 0 && ctx->output == CLI_OUT_JSON)
		rc = out_json_print(rows.results, stdout);
	if (rc == 0)
		rc = out_results_status(rows.results);
	bmc_cli_rows_free(&rows);
	return rc;
}

size_t bmc_cli_node_width(const char *range)
{
	struct kiln_nodelist l = { 0 };
	size_t w = BMC_CLI_NODE_WIDTH;

	/* @group and all are resolved by kilnd only: no resolver here, so they fail */
	if (range && noderange_expand(&l, range, NULL, NULL) == 0) {
		w = 0;
		for (size_t i = 0; i < l.count; i++)
			if (strlen(l.names[i]) > w)
				w = strlen(l.names[i]);
		kiln_nodelist_free(&l);
	}
	return w > 4 ? w : 4;
}

size_t bmc_cli_results_node_width(const json_t *results)
{
	size_t i, w = 4;
	json_t *e;

	json_array_foreach(results, i, e) {
		const char *node = json_string_value(json_object_get(e, "node"));

		if (node && strlen(node) > w)
			w = strlen(node);
	}
	return w;
}

int bmc_cli_threshold(int *out, struct cli_ctx *ctx, const char *threshold_opt, int fallback)
{
	const char *env = getenv("KILN_CONFIRM_THRESHOLD");
	const char *text = threshold_opt ? threshold_opt : (env && env[0] ? env : NULL);
	int rc;

	*out = fallback;
	if (!text) {
		if ((rc = cli_client_open(ctx)) < 0)
			return rc;
		if (ctx->confirm_above >= 0)
			*out = ctx->confirm_above;
		return 0;
	}
	if (kiln_parse_int(out, text, 0, 1000000) < 0)
		return cli_usage_error(ctx, "%s: '%s' is not a node count",
				       threshold_opt ? "--confirm-above" : "KILN_CONFIRM_THRESHOLD",
				       text);
	return 0;
}

static void write_all(int fd, const char *s)
{
	size_t len = strlen(s);

	while (len > 0) {
		ssize_t n = write(fd, s, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		s += n;
		len -= (size_t)n;
	}
}

/* One line from fd without its end; an over-long answer is read to its end and refused. */
static int line_read(char *buf, size_t len, int fd)
{
	size_t used = 0;
	int over = 0;
	char c;

	for (;;) {
		ssize_t n = read(fd, &c, 1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || c == '\n')
			break;
		if (used + 1 >= len)
			over = 1;
		else
			buf[used++] = c;
	}
	if (used > 0 && buf[used - 1] == '\r')
		used--;
	buf[used] = '\0';
	return over ? KILN_EINVAL : 0;
}

int bmc_cli_confirm_count(size_t count, const char *what, const char *range)
{
	char question[512], answer[32], want[32];
	int fd, rc;

	fd = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
	if (fd >= 0 && !isatty(fd)) {
		close(fd);
		fd = -1;
	}
	if (fd < 0)
		return kiln_fail(KILN_ERROR, "%s of %zu nodes needs --yes (no terminal to confirm "
				 "on); nothing was sent", what, count);
	snprintf(question, sizeof(question), "%s %zu nodes (%.300s)? Type %zu to go on: ", what,
		 count, range, count);
	write_all(fd, question);
	rc = line_read(answer, sizeof(answer), fd);
	close(fd);
	snprintf(want, sizeof(want), "%zu", count);
	if (rc < 0 || strcmp(answer, want) != 0)
		return kiln_fail(KILN_ERROR, "not confirmed; nothing was sent");
	return 0;
}

size_t bmc_cli_ok_count(const json_t *results)
{
	size_t i, n = 0;
	json_t *e;

	json_array_foreach(results, i, e)
		if (!json_object_get(e, "error"))
			n++;
	return n;
}
