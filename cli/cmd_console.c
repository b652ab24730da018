/* SPDX-License-Identifier: Apache-2.0 */
/* kiln console: attach to a node's serial console through kilnd, tail its capture, switch capture. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include <kiln/buf.h>
#include <kiln/error.h>
#include <kiln/escape.h>
#include <kiln/http.h>
#include <kiln/parse.h>

#include "cli.h"
#include "client.h"
#include "output.h"

#define CONSOLE_PROTOCOL "kiln-console"
#define HEADER_MAX 16384
#define ERROR_BODY_MAX 65536
#define LINGER_MS 1500 /* after the end of piped input, how long output is still shown */
#define LAST_MAX 512    /* the end of kilnd's output kept to find why it ended the session */

enum { O_TAIL = 1, O_STEAL, O_NO_STEAL, O_CAPTURE };

static const struct cli_opt console_opts[] = {
	{ "tail", 0, NULL, O_TAIL, "print the last captured lines (N after NODE, default 20)" },
	{ "steal", 0, NULL, O_STEAL, "take the console over from another SOL session" },
	{ "no-steal", 0, NULL, O_NO_STEAL, "fail when another SOL session holds it (default)" },
	{ "capture", 0, "on|off", O_CAPTURE,
	  "keep (or stop keeping) the console output of NODE or a NODERANGE" },
	{ 0 },
};

struct console_args {
	struct cli_ctx *ctx;
	int tail;
	int steal;
	int capture; /* -1: not given */
};

static int console_opt(void *ud, const struct cli_opt *opt, const char *value)
{
	struct console_args *a = ud;

	switch (opt->id) {
	case O_TAIL:
		a->tail = 1;
		break;
	case O_STEAL:
		a->steal = 1;
		break;
	case O_NO_STEAL:
		a->steal = 0;
		break;
	case O_CAPTURE:
		if (strcmp(value, "on") == 0)
			a->capture = 1;
		else if (strcmp(value, "off") == 0)
			a->capture = 0;
		else
			return cli_usage_error(a->ctx, "--capture: '%s' is not on or off", value);
		break;
	}
	return 0;
}

/* ---- the terminal: raw while attached, restored on every way out ---- */

static struct termios saved_tio;
static volatile sig_atomic_t tio_saved;

static void tty_restore(void)
{
	if (tio_saved) {
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_tio);
		tio_saved = 0;
	}
}

static void on_fatal_signal(int sig)
{
	tty_restore();
	signal(sig, SIG_DFL);
	raise(sig);
}

static int tty_raw(void)
{
	struct termios raw;

	if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &saved_tio) < 0)
		return 0;
	raw = saved_tio;
	cfmakeraw(&raw);
	tio_saved = 1;
	signal(SIGTERM, on_fatal_signal);
	signal(SIGHUP, on_fatal_signal);
	signal(SIGINT, on_fatal_signal);
	signal(SIGQUIT, on_fatal_signal);
	if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw) < 0) {
		tio_saved = 0;
		return 0;
	}
	atexit(tty_restore);
	return 1;
}

/* ---- the connection ---- */

static int wait_sock(curl_socket_t s, short events, int timeout_ms)
{
	struct pollfd p = { s, events, 0 };
	int r;

	do
		r = poll(&p, 1, timeout_ms);
	while (r < 0 && errno == EINTR);
	return r;
}

static int send_all(CURL *h, curl_socket_t s, const char *p, size_t n)
{
	while (n > 0) {
		size_t sent = 0;
		CURLcode cc = curl_easy_send(h, p, n, &sent);

		if (cc == CURLE_AGAIN) {
			if (wait_sock(s, POLLOUT, 10000) <= 0)
				return kiln_fail(KILN_ETIMEOUT, "console: kilnd does not take input");
			continue;
		}
		if (cc != CURLE_OK)
			return kiln_fail(KILN_ERROR, "console: send: %s", curl_easy_strerror(cc));
		p += sent;
		n -= sent;
	}
	return 0;
}

/* Reads the response head (into head, up to the blank line); any bytes after it stay in
 * extra. Returns the HTTP status or a negative code. */
static int head_read(CURL *h, curl_socket_t s, struct kiln_buf *head, struct kiln_buf *extra)
{
	for (;;) {
		char buf[4096], *end;
		size_t got = 0;
		CURLcode cc = curl_easy_recv(h, buf, sizeof(buf), &got);
		long status;

		if (cc == CURLE_AGAIN) {
			if (wait_sock(s, POLLIN, 30000) <= 0)
				return kiln_fail(KILN_ETIMEOUT, "console: kilnd did not answer");
			continue;
		}
		if (cc != CURLE_OK)
			return kiln_fail(KILN_ERROR, "console: %s", curl_easy_strerror(cc));
		if (got == 0)
			return kiln_fail(KILN_EPROTO, "console: kilnd closed the connection");
		if (kiln_buf_append(head, buf, got) < 0)
			return kiln_fail(KILN_EPROTO, "console: kilnd's answer head is too long");
		end = strstr(head->data, "\r\n\r\n");
		if (!end)
			continue;
		end += 4;
		if (kiln_buf_append(extra, end, head->len - (size_t)(end - head->data)) < 0)
			return kiln_fail(KILN_ERROR, "out of memory");
		head->len = (size_t)(end - head->data);
		head->data[head->len] = '\0';
		if (strncmp(head->data, "HTTP/1.", 7) != 0 || strlen(head->data) < 12)
			return kiln_fail(KILN_EPROTO, "console: not an HTTP answer");
		status = strtol(head->data + 9, NULL, 10);
		return (int)status;
	}
}

/* Turns an error answer (JSON body after the head) into the code and message; a 421 naming
 * the node's owner (several kilnd) sets *owner_url instead. */
static int answer_fail(CURL *h, curl_socket_t s, int status, struct kiln_buf *body,
		       char **owner_url)
{
	json_t *err = NULL;
	const char *msg;
	int code = status == 401 ? KILN_EAUTH : status == 403 ? KILN_EPERM
		 : status == 404 ? KILN_ENOTFOUND : status == 400 ? KILN_EINVAL : KILN_ERROR;

	/* the error body is small; read until it parses or the server closes */
	for (int i = 0; i < 50 && !(err = json_loadb(body->data ? body->data : "", body->len, 0, NULL));
	     i++) {
		char buf[4096];
		size_t got = 0;
		CURLcode cc = curl_easy_recv(h, buf, sizeof(buf), &got);

		if (cc == CURLE_AGAIN) {
			if (wait_sock(s, POLLIN, 2000) <= 0)
				break;
			continue;
		}
		if (cc != CURLE_OK || got == 0 || kiln_buf_append(body, buf, got) < 0)
			break;
	}
	msg = json_string_value(json_object_get(err, "error"));
	if (status == 421 && json_is_string(json_object_get(err, "owner_url")) &&
	    (*owner_url = strdup(json_string_value(json_object_get(err, "owner_url"))))) {
		json_decref(err);
		return 0;
	}
	if (msg)
		kiln_fail(code, "%s", msg);
	else
		kiln_fail(code, "console: kilnd answered HTTP %d", status);
	json_decref(err);
	return code;
}

/* Writes everything to stdout; 0, or -1 when stdout is gone. */
static int out_write(const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(STDOUT_FILENO, p, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static long mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Passes typed bytes through, watching for "~." at the start of a line (leave) and "~~"
 * (a literal '~'). *state: 0 mid-line, 1 at a line start, 2 after a '~' at a line start.
 * Returns 1 when the user asked to leave.
 */
static int escape_filter(struct kiln_buf *out, int *state, const char *in, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char ch = in[i];

		if (*state == 2) {
			if (ch == '.')
				return 1;
			if (ch != '~')
				(void)kiln_buf_append(out, "~", 1);
			(void)kiln_buf_append(out, &ch, 1);
			*state = ch == '\r' || ch == '\n';
			continue;
		}
		if (*state == 1 && ch == '~') {
			*state = 2;
			continue;
		}
		(void)kiln_buf_append(out, &ch, 1);
		*state = ch == '\r' || ch == '\n';
	}
	return 0;
}

/* Keeps the last LAST_MAX bytes kilnd sent in last. */
static void last_keep(struct kiln_buf *last, const char *p, size_t n)
{
	if (n == 0)
		return;
	if (n >= LAST_MAX) {
		p += n - LAST_MAX;
		n = LAST_MAX;
	}
	if (last->len + n > LAST_MAX) {
		size_t drop = last->len + n - LAST_MAX;

		memmove(last->data, last->data + drop, last->len - drop);
		last->len -= drop;
	}
	(void)kiln_buf_append(last, p, n);
}

/*
 * kilnd ended the session: fails with its reason, the line "\r\n[kiln: REASON]\r\n" it
 * writes as its last bytes before closing (docs/API.md), or with a generic one.
 */
static int session_lost(const struct kiln_buf *last, const char *node)
{
	static const char mark[] = "[kiln: ";
	size_t end = last->len, at;

	while (end > 0 && (last->data[end - 1] == '\r' || last->data[end - 1] == '\n'))
		end--;
	if (end > 0 && last->data[end - 1] == ']') {
		for (at = end - 1; at >= sizeof(mark) - 1; at--) {
			const char *m = last->data + at - (sizeof(mark) - 1);

			if (memcmp(m, mark, sizeof(mark) - 1) == 0)
				return kiln_fail(KILN_ERROR, "%.*s", (int)(end - 1 - at), last->data + at);
		}
	}
	return kiln_fail(KILN_ERROR, "console: %s: kilnd closed the connection", node);
}

/* The attached session: stdin to kilnd, kilnd to stdout, until ~. or the end of input (0),
 * or until kilnd ends it (the reason as the error). */
static int attach_loop(CURL *h, curl_socket_t s, struct kiln_buf *first, const char *node)
{
	struct kiln_buf typed, last;
	int esc = 1, in_open = 1, rc = 0;
	long linger_until = 0;

	kiln_buf_init(&typed, 0);
	kiln_buf_init(&last, LAST_MAX);
	last_keep(&last, first->data, first->len);
	if (first->len > 0 && out_write(first->data, first->len) < 0)
		goto cleanup;
	for (;;) {
		struct pollfd p[2] = { { s, POLLIN, 0 }, { STDIN_FILENO, POLLIN, 0 } };
		int timeout = -1, r;

		if (!in_open) {
			long left = linger_until - mono_ms();

			if (left <= 0)
				break;
			timeout = (int)left;
		}
		r = poll(p, in_open ? 2 : 1, timeout);
		if (r < 0 && errno != EINTR) {
			rc = kiln_fail(KILN_ERROR, "console: poll: %s", strerror(errno));
			break;
		}
		if (r <= 0)
			continue;
		if (p[0].revents) {
			char buf[8192];
			size_t got = 0;
			CURLcode cc = curl_easy_recv(h, buf, sizeof(buf), &got);

			if (cc != CURLE_AGAIN) {
				if (cc != CURLE_OK || got == 0) {
					rc = session_lost(&last, node);
					break;
				}
				last_keep(&last, buf, got);
				if (out_write(buf, got) < 0)
					break;
			}
		}
		if (in_open && p[1].revents) {
			char buf[4096];
			ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				in_open = 0; /* piped input ended: show the answer for a moment */
				linger_until = mono_ms() + LINGER_MS;
				continue;
			}
			kiln_buf_reset(&typed);
			if (escape_filter(&typed, &esc, buf, (size_t)n)) {
				if (typed.len > 0)
					(void)send_all(h, s, typed.data, typed.len);
				break;
			}
			if (typed.len > 0 && (rc = send_all(h, s, typed.data, typed.len)) < 0)
				break;
		}
	}
cleanup:
	kiln_buf_free(&typed);
	kiln_buf_free(&last);
	return rc;
}

/* Attaches through the kilnd at base (its URL with /api/v1); *owner_url set (and 0) when it
 * answered that the console is on another instance, the node's owner. */
static int attach_at(struct cli_ctx *ctx, const char *base, const char *node, int steal,
		     char **owner_url)
{
	struct kiln_buf url, req, head, extra;
	const char *path;
	char *esc = NULL;
	CURL *h = NULL;
	curl_socket_t s = CURL_SOCKET_BAD;
	CURLcode cc;
	int rc, status, raw = 0;

	kiln_buf_init(&url, 0);
	kiln_buf_init(&req, 0);
	kiln_buf_init(&head, HEADER_MAX);
	kiln_buf_init(&extra, ERROR_BODY_MAX);
	esc = cli_url_escape(node);
	h = curl_easy_init();
	if (!esc || !h) {
		rc = kiln_fail(KILN_ERROR, "out of memory");
		goto cleanup;
	}
	if ((rc = kiln_buf_printf(&url, "%s/nodes/%s/console?steal=%s", base, esc,
				  steal ? "true" : "false")) < 0)
		goto cleanup;
	/* the path as sent on the request line: what follows scheme://host[:port] */
	path = strchr(strstr(url.data, "://") + 3, '/');
	curl_easy_setopt(h, CURLOPT_URL, url.data);
	curl_easy_setopt(h, CURLOPT_CONNECT_ONLY, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	if ((rc = kiln_http_apply_trust(h, &ctx->trust)) < 0)
		goto cleanup;
	cc = curl_easy_perform(h);
	if (cc != CURLE_OK) {
		rc = kiln_fail(cc == CURLE_OPERATION_TIMEDOUT ? KILN_ETIMEOUT : KILN_ERROR,
			       "console: cannot reach kilnd at %s: %s", base,
			       curl_easy_strerror(cc));
		goto cleanup;
	}
	if (curl_easy_getinfo(h, CURLINFO_ACTIVESOCKET, &s) != CURLE_OK || s == CURL_SOCKET_BAD) {
		rc = kiln_fail(KILN_ERROR, "console: no connection to kilnd");
		goto cleanup;
	}
	{
		const char *host = strstr(url.data, "://") + 3;

		if ((rc = kiln_buf_printf(&req, "GET %s HTTP/1.1\r\nHost: %.*s\r\n"
					  "Authorization: Bearer %s\r\nConnection: Upgrade\r\n"
					  "Upgrade: " CONSOLE_PROTOCOL "\r\n\r\n",
					  path, (int)(path - host), host, ctx->token)) < 0)
			goto cleanup;
	}
	rc = send_all(h, s, req.data, req.len);
	explicit_bzero(req.data, req.len); /* it holds the token */
	if (rc < 0)
		goto cleanup;
	status = head_read(h, s, &head, &extra);
	if (status < 0) {
		rc = status;
		goto cleanup;
	}
	if (status != 101) {
		rc = answer_fail(h, s, status, &extra, owner_url);
		goto cleanup;
	}
	raw = tty_raw();
	fprintf(stderr, "[kiln: attached to %s's console; type ~. at the start of a line to leave]%s",
		node, raw ? "\r\n" : "\n");
	rc = attach_loop(h, s, &extra, node);
	tty_restore();
	if (rc == 0) /* otherwise kilnd ended it, and the error says why */
		fprintf(stderr, "\n[kiln: left %s's console]\n", node);
cleanup:
	tty_restore();
	if (h)
		curl_easy_cleanup(h);
	free(esc);
	kiln_buf_free(&url);
	kiln_buf_free(&req);
	kiln_buf_free(&head);
	kiln_buf_free(&extra);
	return rc;
}

static int console_attach(struct cli_ctx *ctx, const char *node, int steal)
{
	char *owner_url = NULL, *base = NULL;
	int rc;

	if ((rc = cli_client_open(ctx)) < 0)
		return rc;
	rc = attach_at(ctx, ctx->base_url, node, steal, &owner_url);
	if (rc < 0 || !owner_url)
		return rc;
	/* several kilnd: the console is on the node's owner, trusted as every instance is */
	if (asprintf(&base, "%s/api/v1", owner_url) < 0)
		base = NULL;
	free(owner_url);
	if (!base)
		return kiln_fail(KILN_ERROR, "out of memory");
	owner_url = NULL;
	rc = attach_at(ctx, base, node, steal, &owner_url);
	if (rc == 0 && owner_url)
		rc = kiln_fail(KILN_ERROR, "console: the owner of %s sent this request on to %s; "
			       "the instances disagree on the owner, try again",
			       node, owner_url);
	free(owner_url);
	free(base);
	return rc;
}

static int console_tail(struct cli_ctx *ctx, const char *node, int64_t lines)
{
	struct kiln_buf path;
	json_t *res = NULL, *l;
	char *esc = cli_url_escape(node);
	size_t i;
	int rc;

	kiln_buf_init(&path, 0);
	if (!esc) {
		rc = kiln_fail(KILN_ERROR, "out of memory");
		goto cleanup;
	}
	if ((rc = kiln_buf_printf(&path, "/nodes/%s/console/log?lines=%lld", esc,
				  (long long)lines)) < 0)
		goto cleanup;
	if ((rc = cli_api(&res, NULL, ctx, "GET", path.data, NULL)) < 0)
		goto cleanup;
	if (ctx->output == CLI_OUT_JSON) {
		if ((rc = out_json_print(res, stdout)) < 0)
			goto cleanup;
	} else {
		json_array_foreach(json_object_get(res, "lines"), i, l)
			printf("%s\n", json_string_value(l) ? json_string_value(l) : "");
	}
	fflush(stdout);
	/* What was captured is shown either way; but lines that are not being kept up to date
	 * are not the console now, and a script must be able to tell. */
	if (!json_is_true(json_object_get(res, "capture")))
		rc = kiln_fail(KILN_ERROR, "capture is off for %s, nothing new is kept (kiln "
			       "console %s --capture on)", node, node);
	else if (json_is_string(json_object_get(res, "error")))
		rc = kiln_fail(KILN_ERROR, "%s: capture: %s", node,
			       json_string_value(json_object_get(res, "error")));
cleanup:
	json_decref(res);
	free(esc);
	kiln_buf_free(&path);
	return rc;
}

/* A bare node name (no @group, brackets, commas, exclusions or "all") uses the per-node
 * endpoint; anything else is a noderange. */
static int is_single_node(const char *arg)
{
	if (strcmp(arg, "all") == 0 || arg[0] == '-')
		return 0;
	return arg[strcspn(arg, "@[],")] == '\0';
}

/* Capture over a noderange: one line a node, errors on stderr, exit 3 when some failed. */
static int console_capture_range(struct cli_ctx *ctx, const char *range, int on)
{
	json_t *body = json_pack("{s:s, s:b}", "range", range, "enabled", on), *res = NULL, *e;
	size_t i;
	int rc;

	if (!body) {
		rc = kiln_fail(KILN_ERROR, "out of memory");
		goto cleanup;
	}
	if (ctx->dry_run) {
		printf("would switch console capture %s for %s\n", on ? "on" : "off", range);
		rc = 0;
		goto cleanup;
	}
	if ((rc = cli_api(&res, NULL, ctx, "POST", "/console/capture", body)) < 0)
		goto cleanup;
	if (ctx->output == CLI_OUT_JSON) {
		rc = out_json_print(res, stdout);
		if (rc == 0)
			rc = out_results_status(res);
		goto cleanup;
	}
	json_array_foreach(res, i, e) {
		const char *node = json_string_value(json_object_get(e, "node"));
		const char *err = json_string_value(json_object_get(e, "error"));

		char safe[1024];

		if (err)
			fprintf(stderr, "kiln: %s: %s\n", node ? node : "?",
				kiln_escape(safe, sizeof(safe), err, 0));
		else
			printf("console capture %s for %s\n", on ? "on" : "off", node ? node : "?");
	}
	rc = out_results_status(res);
cleanup:
	json_decref(body);
	json_decref(res);
	return rc;
}

static int console_capture(struct cli_ctx *ctx, const char *node, int on)
{
	struct kiln_buf path;
	json_t *body = NULL, *res = NULL;
	char *esc = NULL;
	int rc;

	if (!is_single_node(node))
		return console_capture_range(ctx, node, on);
	kiln_buf_init(&path, 0);
	body = json_pack("{s:b}", "enabled", on);
	esc = cli_url_escape(node);
	if (!body || !esc) {
		rc = kiln_fail(KILN_ERROR, "out of memory");
		goto cleanup;
	}
	if (ctx->dry_run) {
		printf("would switch console capture %s for %s\n", on ? "on" : "off", node);
		rc = 0;
		goto cleanup;
	}
	if ((rc = kiln_buf_printf(&path, "/nodes/%s/console/capture", esc)) < 0 ||
	    (rc = cli_api(&res, NULL, ctx, "POST", path.data, body)) < 0)
		goto cleanup;
	if (ctx->output == CLI_OUT_JSON)
		rc = out_json_print(res, stdout);
	else
		printf("console capture %s for %s\n", on ? "on" : "off", node);
cleanup:
	json_decref(body);
	json_decref(res);
	free(esc);
	kiln_buf_free(&path);
	return rc;
}

static int console_run(struct cli_ctx *ctx, int argc, char **argv)
{
	static const char synopsis[] = "NODE [--tail [N]] [--steal|--no-steal]\n"
				       "       kiln console NODERANGE --capture on|off";
	struct console_args a = { .ctx = ctx, .capture = -1 };
	struct cli_args pos = { 0 };
	int64_t lines = 20;
	int rc;

	rc = cli_args_parse(&pos, ctx, console_opts, argc - 1, argv + 1, console_opt, &a);
	if (rc < 0)
		goto cleanup;
	if (ctx->help) {
		cli_help_print(stdout, ctx, synopsis,
			       "Attaches the terminal to a node's serial console (IPMI SOL) through "
			       "kilnd; ~. at the start of a line leaves. --tail prints what kilnd "
			       "captured while nobody was attached. --capture switches capture for one "
			       "node or a noderange (@group, all, gpu[01-04]).", console_opts);
		goto cleanup;
	}
	if (pos.n == 0) {
		rc = cli_usage_error(ctx, a.capture >= 0 ? "missing NODERANGE" : "missing NODE");
		goto cleanup;
	}
	if (pos.n > (a.tail ? 2u : 1u)) {
		rc = cli_usage_error(ctx, "unexpected argument '%s'", pos.v[a.tail ? 2 : 1]);
		goto cleanup;
	}
	if (pos.n == 2 && kiln_parse_int64(&lines, pos.v[1], 1, 10000) < 0) {
		rc = cli_usage_error(ctx, "--tail: '%s' is not a line count of 1 to 10000", pos.v[1]);
		goto cleanup;
	}
	if (a.capture >= 0 && a.tail) {
		rc = cli_usage_error(ctx, "--capture and --tail go one at a time");
		goto cleanup;
	}
	if (a.capture < 0 && !is_single_node(pos.v[0])) {
		rc = cli_usage_error(ctx, "'%s': attach and --tail take one node; a noderange "
				     "goes with --capture", pos.v[0]);
		goto cleanup;
	}
	if (a.capture >= 0)
		rc = console_capture(ctx, pos.v[0], a.capture);
	else if (a.tail)
		rc = console_tail(ctx, pos.v[0], lines);
	else
		rc = console_attach(ctx, pos.v[0], a.steal);
cleanup:
	free(pos.v);
	return rc;
}

const struct cli_cmd cmd_console = {
	.name = "console",
	.summary = "attach to a node's serial console, or read what was captured",
	.run = console_run,
};
