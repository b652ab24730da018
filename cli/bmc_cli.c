/* Pieces shared by the live BMC commands: requests over a noderange and the typed-count
 * confirmation for actions on many nodes. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kiln/buf.h>
#include <kiln/error.h>
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

static int query_add(struct kiln_buf *path, const char *key, const char *value, char sep)
{
	char *q;
	int rc;

	if (!key || !value)
		return 0;
	q = cli_url_escape(value);
	if (!q)
		return kiln_fail(KILN_ERROR, "out of memory");
	rc = kiln_buf_printf(path, "%c%s=%s", sep, key, q);
	free(q);
	return rc;
}

int bmc_cli_get(json_t **out, struct cli_ctx *ctx, const char *endpoint, const char *key,
		const char *value, const char *key2, const char *value2)
{
	struct kiln_buf path;
	json_t *res = NULL;
	int rc;

	kiln_buf_init(&path, 0);
	rc = kiln_buf_printf(&path, "/%s", endpoint);
	if (rc == 0)
		rc = query_add(&path, key, value, '?');
	if (rc == 0)
		rc = query_add(&path, key2, value2, value ? '&' : '?');
	if (rc == 0)
		rc = cli_api(&res, NULL, ctx, "GET", path.data, NULL);
	kiln_buf_free(&path);
	if (rc < 0)
		return rc;
	return array_check(out, res, endpoint);
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

int bmc_cli_threshold(int *out, const struct cli_ctx *ctx, const char *threshold_opt)
{
	const char *env = getenv("KILN_CONFIRM_THRESHOLD");
	const char *text = threshold_opt ? threshold_opt : (env && env[0] ? env : NULL);

	*out = BMC_CLI_CONFIRM_DEFAULT;
	if (text && kiln_parse_int(out, text, 0, 1000000) < 0)
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

int bmc_cli_errors_print(const json_t *results)
{
	size_t i;
	json_t *e;

	json_array_foreach(results, i, e) {
		const char *err = json_string_value(json_object_get(e, "error"));

		if (err)
			fprintf(stderr, "kiln: %s: %s\n",
				json_string_value(json_object_get(e, "node")), err);
	}
	return out_results_status(results);
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
