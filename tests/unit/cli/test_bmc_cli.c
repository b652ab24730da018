/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for the live commands' client side (cli/client.c cli_api_stream, cli/bmc_cli.c and the
 * commands on it) against a scripted kilnd on 127.0.0.1 that records what it received: objects
 * handed over as their lines arrive, kilnd's JSON array taken as well, errors as cli_api makes
 * them, rows printed before the answer ends, the progress line, --retry-unreachable. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include <kiln/error.h>

#include "bmc_cli.h"
#include "cli.h"
#include "client.h"

/* --- a scripted kilnd ---------------------------------------------------------------- */

#define MAX_CONN 4
#define WAIT_PREFIX "\001wait:" /* a part that waits until the captured output holds the rest */

struct server {
	int lfd;
	int port;
	/* per connection, in order: the answer's head, then its body in pieces (each one chunk
	 * when the head says chunked, else the body ends with the connection), NULL-terminated */
	const char *const *answers[MAX_CONN];
	pthread_t thread;
	/* what it saw */
	char request[MAX_CONN][8192];
	int waited_ok; /* every wait part saw its text in time */
};

static char capture_path[64] = "";

static int capture_holds(const char *text)
{
	char buf[16384];
	size_t n;
	FILE *f = fopen(capture_path, "r");

	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return strstr(buf, text) != NULL;
}

/* Reads one request: the headers and a body of Content-Length bytes. */
static void request_read(int fd, char *out, size_t len)
{
	size_t got = 0;

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		const char *end, *cl;
		ssize_t n;

		if (got >= len - 1 || poll(&p, 1, 3000) <= 0)
			break;
		n = read(fd, out + got, len - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
		out[got] = '\0';
		if (!(end = strstr(out, "\r\n\r\n")))
			continue;
		cl = strstr(out, "Content-Length: ");
		if (!cl || got >= (size_t)(end + 4 - out) + strtoul(cl + 16, NULL, 10))
			break;
	}
}

static void *server_main(void *arg)
{
	struct server *s = arg;

	s->waited_ok = 1;
	for (int c = 0; c < MAX_CONN && s->answers[c]; c++) {
		struct pollfd p = { .fd = s->lfd, .events = POLLIN };
		int fd, chunked;

		if (poll(&p, 1, 5000) <= 0)
			return NULL;
		fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			return NULL;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
		request_read(fd, s->request[c], sizeof(s->request[c]));
		chunked = strstr(s->answers[c][0], "Transfer-Encoding: chunked") != NULL;
		for (const char *const *part = s->answers[c]; *part; part++) {
			char frame[24];
			if (strncmp(*part, WAIT_PREFIX, strlen(WAIT_PREFIX)) == 0) {
				int seen = 0;

				for (int i = 0; i < 300 && !seen; i++) {
					seen = capture_holds(*part + strlen(WAIT_PREFIX));
					if (!seen)
						usleep(10 * 1000);
				}
				s->waited_ok &= seen;
				continue;
			}
			/* after the head, each piece one chunk of a chunked answer */
			snprintf(frame, sizeof(frame), "%zx\r\n", strlen(*part));
			if ((chunked && part != s->answers[c] && write(fd, frame, strlen(frame)) < 0) ||
			    write(fd, *part, strlen(*part)) < 0 ||
			    (chunked && part != s->answers[c] && write(fd, "\r\n", 2) < 0))
				break;
			usleep(10 * 1000);
		}
		if (chunked && write(fd, "0\r\n\r\n", 5) < 0)
			s->waited_ok = 0;
		close(fd);
	}
	return NULL;
}

static void server_start(struct server *s)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t alen = sizeof(a);

	s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(s->lfd >= 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(s->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(s->lfd, 4), 0);
	assert_int_equal(getsockname(s->lfd, (struct sockaddr *)&a, &alen), 0);
	s->port = ntohs(a.sin_port);
	assert_int_equal(pthread_create(&s->thread, NULL, server_main, s), 0);
}

static void server_stop(struct server *s)
{
	pthread_join(s->thread, NULL);
	close(s->lfd);
}

static void ctx_for(struct cli_ctx *ctx, char *url, size_t len, const struct server *s)
{
	memset(ctx, 0, sizeof(*ctx));
	snprintf(url, len, "http://127.0.0.1:%d", s->port);
	ctx->url = url;
	ctx->yes = true;
}

#define NDJSON_HEAD(n) "HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\n" \
	"X-Kiln-Nodes: " n "\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
#define JSON_HEAD "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = calloc(1, 65536);
	size_t n;

	assert_non_null(f);
	assert_non_null(buf);
	n = fread(buf, 1, 65535, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* What a command writes on stdout (fd 1) or stderr (fd 2), in a file. */
struct capture {
	int saved;
	int fdno;
	char path[64];
};

static void capture_begin(struct capture *c, int fdno)
{
	int fd;

	snprintf(c->path, sizeof(c->path), "/tmp/kiln-test-bmc-cli-XXXXXX");
	fd = mkstemp(c->path);
	assert_true(fd >= 0);
	fflush(fdno == 1 ? stdout : stderr);
	c->fdno = fdno;
	c->saved = dup(fdno);
	assert_true(c->saved >= 0);
	assert_true(dup2(fd, fdno) >= 0);
	close(fd);
	if (fdno == 1)
		snprintf(capture_path, sizeof(capture_path), "%s", c->path);
}

/* Ends the capture; its text, which the caller frees. */
static char *capture_end(struct capture *c)
{
	char *text;

	fflush(c->fdno == 1 ? stdout : stderr);
	dup2(c->saved, c->fdno);
	close(c->saved);
	text = slurp(c->path);
	unlink(c->path);
	if (c->fdno == 1)
		capture_path[0] = '\0';
	return text;
}

/* --- cli_api_stream ---------------------------------------------------------------- */

struct seen {
	size_t total;
	int totals;
	char nodes[256];
};

static void seen_total(void *ud, size_t total)
{
	struct seen *s = ud;

	s->total = total;
	s->totals++;
}

static int seen_object(void *ud, json_t *obj)
{
	struct seen *s = ud;
	size_t len = strlen(s->nodes);

	snprintf(s->nodes + len, sizeof(s->nodes) - len, "%s%s", len ? "," : "",
		 json_string_value(json_object_get(obj, "node")));
	return 0;
}

static void test_stream_ndjson(void **state)
{
	static const char *const answer[] = {
		NDJSON_HEAD("3"), "{\"node\":\"b\"}\n{",
		"\"node\":\"a\",\"power\":\"on\"}\n{\"node\":",
		"\"c\"}", "\n", NULL,
	};
	struct server s = { .answers = { answer } };
	struct seen seen = { 0 };
	const struct cli_stream cb = { .total = seen_total, .object = seen_object, .ud = &seen };
	struct cli_ctx ctx;
	char url[64];
	int rc;

	(void)state;
	server_start(&s);
	ctx_for(&ctx, url, sizeof(url), &s);
	rc = cli_api_stream(NULL, &ctx, "GET", "/power?range=x", NULL, &cb);
	server_stop(&s);
	if (rc < 0)
		fail_msg("cli_api_stream: %s", kiln_error_last());
	assert_non_null(strstr(s.request[0], "GET /api/v1/power?range=x HTTP/1.1\r\n"));
	assert_non_null(strstr(s.request[0], "\r\nAccept: application/x-ndjson\r\n"));
	assert_non_null(strstr(s.request[0], "\r\nAuthorization: Bearer tok-test\r\n"));
	assert_int_equal(seen.totals, 1);
	assert_int_equal(seen.total, 3);
	assert_string_equal(seen.nodes, "b,a,c");
	cli_ctx_free(&ctx);
}

/* A kilnd that does not stream answers its JSON array: the same objects, in its order. */
static void test_stream_array_fallback(void **state)
{
	static const char *const answer[] = {
		JSON_HEAD, "[{\"node\":\"a\"},{\"node\":\"b\",\"x\":[1]}]", NULL,
	};
	static const char *const not_objects[] = { JSON_HEAD, "[{\"node\":\"a\"},1]", NULL };
	static const char *const not_array[] = { JSON_HEAD, "{}", NULL };
	struct server s = { .answers = { answer, not_objects, not_array } };
	struct seen seen = { 0 };
	const struct cli_stream cb = { .total = seen_total, .object = seen_object, .ud = &seen };
	struct cli_ctx ctx;
	json_t *body;
	char url[64];
	int rc;

	(void)state;
	server_start(&s);
	ctx_for(&ctx, url, sizeof(url), &s);
	body = json_pack("{s:s}", "range", "x");
	rc = cli_api_stream(NULL, &ctx, "POST", "/power", body, &cb);
	json_decref(body);
	if (rc < 0)
		fail_msg("cli_api_stream: %s", kiln_error_last());
	assert_int_equal(seen.total, 2);
	assert_string_equal(seen.nodes, "a,b");
	assert_non_null(strstr(s.request[0], "\r\n\r\n{\"range\":\"x\"}"));
	assert_int_equal(cli_api_stream(NULL, &ctx, "GET", "/sel", NULL, &cb), KILN_EPROTO);
	assert_non_null(strstr(kiln_error_last(), "element 1 is not an object"));
	assert_int_equal(cli_api_stream(NULL, &ctx, "GET", "/sel", NULL, &cb), KILN_EPROTO);
	assert_non_null(strstr(kiln_error_last(), "answer to /sel is not an array"));
	server_stop(&s);
	cli_ctx_free(&ctx);
}

/* A line that is not a JSON object stops the request with a clear KILN_EPROTO. */
static void test_stream_malformed_line(void **state)
{
	static const char *const answer[] = {
		NDJSON_HEAD("3"), "{\"node\":\"a\"}\n{\"node\":\"b\"\n[1]\n",
		NULL,
	};
	static const char *const array_line[] = {
		NDJSON_HEAD("2"), "{\"node\":\"a\"}\n[1]\n", NULL,
	};
	struct server s = { .answers = { answer, array_line } };
	struct seen seen = { 0 };
	const struct cli_stream cb = { .object = seen_object, .ud = &seen };
	struct cli_ctx ctx;
	char url[64];

	(void)state;
	server_start(&s);
	ctx_for(&ctx, url, sizeof(url), &s);
	assert_int_equal(cli_api_stream(NULL, &ctx, "GET", "/sensors?range=x", NULL, &cb),
			 KILN_EPROTO);
	assert_non_null(strstr(kiln_error_last(),
			       "kilnd's answer to /sensors?range=x: line 2 is not a JSON object: "));
	assert_string_equal(seen.nodes, "a");
	seen.nodes[0] = '\0';
	assert_int_equal(cli_api_stream(NULL, &ctx, "GET", "/sel", NULL, &cb), KILN_EPROTO);
	assert_string_equal(kiln_error_last(), "kilnd's answer to /sel: line 2 is not a JSON object");
	server_stop(&s);
	cli_ctx_free(&ctx);
}

/* Error answers become errors exactly as cli_api makes them. */
static void test_stream_error_answer(void **state)
{
	static const char body[] = "{\"error\":\"an action is in flight on every node of the "
				   "range; nothing was sent\",\"field\":\"range\"}";
	char answer409[512];
	const char *const answer[] = { answer409, NULL };
	struct server s = { .answers = { answer, answer } };
	struct seen seen = { 0 };
	const struct cli_stream cb = { .object = seen_object, .ud = &seen };
	json_t *api_error = NULL, *ignored = NULL;
	struct cli_ctx ctx;
	char url[64], streamed[512];

	(void)state;
	snprintf(answer409, sizeof(answer409), "HTTP/1.1 409 Conflict\r\nContent-Type: "
		 "application/json\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
		 strlen(body), body);
	server_start(&s);
	ctx_for(&ctx, url, sizeof(url), &s);
	assert_int_equal(cli_api_stream(&api_error, &ctx, "POST", "/power", NULL, &cb),
			 KILN_EEXISTS);
	snprintf(streamed, sizeof(streamed), "%s", kiln_error_last());
	assert_string_equal(streamed, "an action is in flight on every node of the range; nothing "
				      "was sent (field range)");
	assert_string_equal(json_string_value(json_object_get(api_error, "field")), "range");
	assert_int_equal(cli_api(&ignored, NULL, &ctx, "POST", "/power", NULL), KILN_EEXISTS);
	assert_string_equal(kiln_error_last(), streamed);
	server_stop(&s);
	assert_string_equal(seen.nodes, "");
	json_decref(api_error);
	cli_ctx_free(&ctx);
}

/* --- the commands ------------------------------------------------------------------ */

static int run_cmd(const struct cli_cmd *cmd, struct cli_ctx *ctx, char **argv)
{
	int argc = 0;

	while (argv[argc])
		argc++;
	return cmd->run(ctx, argc, argv);
}

/* power status prints each row as it arrives: the server sends the second node only once
 * the first one's row is on stdout. */
static void test_power_status_rows_as_they_come(void **state)
{
	static const char *const answer[] = {
		NDJSON_HEAD("3"),
		"{\"node\":\"gpu02\",\"power\":\"on\"}\n",
		WAIT_PREFIX "gpu02  on ",
		"{\"node\":\"gpu10\",\"error\":\"unreachable since "
				  "2026-12-01T02:10:00Z: timeout\",\"unreachable_since\":1}\n",
		"{\"node\":\"gpu01\",\"power\":\"off\"}\n", NULL,
	};
	struct server s = { .answers = { answer } };
	char *argv[] = { "power", "status", "gpu[01-02],gpu10", "--retry-unreachable", NULL };
	struct capture cap;
	struct cli_ctx ctx;
	char url[64], *out;
	int rc;

	(void)state;
	server_start(&s);
	ctx_for(&ctx, url, sizeof(url), &s);
	capture_begin(&cap, 1);
	rc = run_cmd(&cmd_power, &ctx, argv);
	out = capture_end(&cap);
	server_stop(&s);
	assert_int_equal(rc, CLI_EPARTIAL);
	assert_true(s.waited_ok);
	assert_non_null(strstr(s.request[0],
			       "GET /api/v1/power?range=gpu%5B01-02%5D%2Cgpu10&retry_unreachable=1 "));
	assert_non_null(strstr(s.request[0], "Accept: application/x-ndjson"));
	assert_string_equal(out, "NODE   POWER    ERROR\n"
				 "gpu02  on       -\n"
				 "gpu10  unknown  unreachable since 2026-12-01T02:10:00Z: timeout\n"
				 "gpu01  off      -\n");
	free(out);
	cli_ctx_free(&ctx);
}

/* -o json asks for the plain array and prints it whole; the exit status comes from it. */
static void test_power_status_json(void **state)
{
	static const char *const answer[] = {
		JSON_HEAD, "[{\"node\":\"a\",\"error\":\"x\"},{\"node\":\"b\",\"error\":\"y\"}]",
		NULL,
	};
	struct server s = { .answers = { answer } };
	char *argv[] = { "power", "status", "a,b", NULL };
	struct capture cap;
	struct cli_ctx ctx;
	char url[64], *out;
	json_t *v;
	int rc;

	(void)state;
	server_start(&s);
	ctx_for(&ctx, url, sizeof(url), &s);
	ctx.output = CLI_OUT_JSON;
	capture_begin(&cap, 1);
	rc = run_cmd(&cmd_power, &ctx, argv);
	out = capture_end(&cap);
	server_stop(&s);
	assert_int_equal(rc, KILN_ERROR);
	assert_string_equal(kiln_error_last(), "all 2 nodes failed");
	assert_non_null(strstr(s.request[0], "GET /api/v1/power?range=a%2Cb HTTP/1.1"));
	assert_non_null(strstr(s.request[0], "Accept: application/json"));
	assert_null(strstr(s.request[0], "retry_unreachable"));
	v = json_loads(out, 0, NULL);
	assert_true(json_is_array(v));
	assert_int_equal(json_array_size(v), 2);
	json_decref(v);
	free(out);
	cli_ctx_free(&ctx);
}

/* A paced action: the plan, then one streamed request per batch; a batch whose nodes are all
 * busy (409) and a node the plan skipped get their rows too, after the ones that answered. */
static void test_power_cycle_batches(void **state)
{
	static const char *const plan[] = {
		JSON_HEAD, "[{\"node\":\"gpu01\",\"action\":\"cycle\",\"dry_run\":true,"
				   "\"batch\":1,\"interval_s\":0},{\"node\":\"gpu2\",\"action\":"
				   "\"cycle\",\"dry_run\":true,\"batch\":2,\"interval_s\":0},"
				   "{\"node\":\"gpu003\",\"error\":\"no BMC\"}]",
		NULL,
	};
	static const char *const batch1[] = {
		NDJSON_HEAD("1"),
		"{\"node\":\"gpu01\",\"action\":\"cycle\",\"power\":\"on\","
				  "\"result\":\"ok\"}\n",
		NULL,
	};
	static const char *const batch2[] = {
		"HTTP/1.1 409 Conflict\r\nContent-Type: application/json\r\n"
		"Connection: close\r\n\r\n{\"error\":\"busy\"}\n",
		NULL,
	};
	struct server s = { .answers = { plan, batch1, batch2 } };
	char *argv[] = { "power", "cycle", "gpu01,gpu2,gpu003", "--retry-unreachable", NULL };
	struct capture cap;
	struct cli_ctx ctx;
	char url[64], *out;
	int rc;

	(void)state;
	server_start(&s);
	ctx_for(&ctx, url, sizeof(url), &s);
	capture_begin(&cap, 1);
	rc = run_cmd(&cmd_power, &ctx, argv);
	out = capture_end(&cap);
	server_stop(&s);
	if (rc != CLI_EPARTIAL)
		fail_msg("rc %d: %s", rc, kiln_error_last());
	assert_non_null(strstr(s.request[0], "\"dry_run\":true"));
	assert_non_null(strstr(s.request[0], "\"retry_unreachable\":true"));
	assert_non_null(strstr(s.request[0], "Accept: application/json"));
	assert_non_null(strstr(s.request[1], "Accept: application/x-ndjson"));
	assert_non_null(strstr(s.request[1], "\"range\":\"gpu01\""));
	assert_non_null(strstr(s.request[1], "\"dry_run\":false"));
	assert_non_null(strstr(s.request[1], "\"retry_unreachable\":true"));
	assert_non_null(strstr(s.request[2], "\"range\":\"gpu2\""));
	assert_string_equal(out, "NODE    ACTION  POWER    RESULT\n"
				 "gpu01   cycle   on       ok\n"
				 "gpu2    -       -        error: action in flight\n"
				 "gpu003  -       -        error: no BMC\n");
	free(out);
	cli_ctx_free(&ctx);
}

/* sensors: a node's rows as its answer arrives, a failed node's error on stderr; an older
 * kilnd's array prints the same. */
static void test_sensors_rows(void **state)
{
	static const char line_a[] = "{\"node\":\"n1\",\"sensors\":[{\"name\":\"CPU1 Temp\",\"kind\":"
				     "\"temperature\",\"value\":41,\"unit\":\"C\",\"health\":\"OK\"},"
				     "{\"name\":\"Fan1\",\"kind\":\"fan\",\"value\":5400,\"unit\":"
				     "\"RPM\",\"health\":\"OK\"}]}";
	static const char line_b[] = "{\"node\":\"n2\",\"error\":\"timeout\"}";
	char chunk[1024], array[1024];
	const char *const answer[] = { NDJSON_HEAD("2"), chunk, NULL };
	const char *const old[] = { array, NULL };
	struct server s = { .answers = { answer, old } };
	char *argv[] = { "sensors", "n[1-2]", NULL };
	const char *want = "NODE  SENSOR                    KIND         VALUE     UNIT   HEALTH\n"
			   "n1    CPU1 Temp                 temperature  41        C      OK\n"
			   "n1    Fan1                      fan          5400      RPM    OK\n";
	struct capture cap, err;
	struct cli_ctx ctx;
	char url[64], *out, *errs;
	int rc;

	(void)state;
	snprintf(chunk, sizeof(chunk), "%s\n%s\n", line_a, line_b);
	snprintf(array, sizeof(array), JSON_HEAD "[%s,%s]", line_a, line_b);
	server_start(&s);
	ctx_for(&ctx, url, sizeof(url), &s);
	for (int i = 0; i < 2; i++) {
		capture_begin(&err, 2);
		capture_begin(&cap, 1);
		rc = run_cmd(&cmd_sensors, &ctx, argv);
		out = capture_end(&cap);
		errs = capture_end(&err);
		assert_int_equal(rc, CLI_EPARTIAL);
		assert_string_equal(out, want);
		assert_string_equal(errs, "kiln: n2: timeout\n");
		free(out);
		free(errs);
	}
	server_stop(&s);
	cli_ctx_free(&ctx);
}

/* Issue 32: a value wider than its fixed column ("System Board PS Redundancy", a serial of
 * 16) is followed by two spaces all the same, and its column is as wide for the rows after. */
static void test_rows_wider_than_columns(void **state)
{
	static const char sensors_line[] =
		"{\"node\":\"n1\",\"sensors\":[{\"name\":\"System Board PS Redundancy\","
		"\"kind\":\"psu\",\"health\":\"OK\"},{\"name\":\"CPU1 Temp\",\"kind\":"
		"\"temperature\",\"value\":41,\"unit\":\"C\",\"health\":\"OK\"}]}\n";
	static const char inventory_a[] =
		"{\"node\":\"n1\",\"manufacturer\":\"Supermicro\",\"model\":\"SYS-821GE-TNHR\","
		"\"serial\":\"S889914X37109101\",\"bios_version\":\"2.1a\",\"bmc_firmware\":"
		"\"01.03.16\",\"cpu_count\":2,\"memory_gib\":2048,\"gpus\":[1,2,3,4,5,6,7,8]}\n";
	static const char inventory_b[] =
		"{\"node\":\"n2\",\"manufacturer\":\"Supermicro\",\"model\":\"SYS-821GE-TNHR\","
		"\"serial\":\"S1\",\"bios_version\":\"2.1a\",\"bmc_firmware\":\"01.03.16\","
		"\"cpu_count\":2,\"memory_gib\":2048,\"gpus\":[1,2,3,4,5,6,7,8]}\n";
	const char *const sensors_answer[] = { NDJSON_HEAD("1"), sensors_line, NULL };
	const char *const inventory_answer[] = { NDJSON_HEAD("2"), inventory_a, inventory_b, NULL };
	struct server s = { .answers = { sensors_answer, inventory_answer } };
	char *sensors_argv[] = { "sensors", "n1", NULL };
	char *inventory_argv[] = { "inventory", "n[1-2]", NULL };
	struct capture cap;
	struct cli_ctx ctx;
	char url[64], *out;

	(void)state;
	server_start(&s);
	ctx_for(&ctx, url, sizeof(url), &s);
	capture_begin(&cap, 1);
	assert_int_equal(run_cmd(&cmd_sensors, &ctx, sensors_argv), 0);
	out = capture_end(&cap);
	assert_string_equal(out,
			    "NODE  SENSOR                    KIND         VALUE     UNIT   HEALTH\n"
			    "n1    System Board PS Redundancy  psu          -         -      OK\n"
			    "n1    CPU1 Temp                   temperature  41        C      OK\n");
	free(out);
	capture_begin(&cap, 1);
	assert_int_equal(run_cmd(&cmd_inventory, &ctx, inventory_argv), 0);
	out = capture_end(&cap);
	assert_string_equal(out,
			    "NODE  MANUFACTURER  MODEL                 SERIAL        BIOS        "
			    "BMC FW      CPUS  MEMORY GIB  GPUS\n"
			    "n1    Supermicro    SYS-821GE-TNHR        S889914X37109101  2.1a        "
			    "01.03.16    2     2048        8\n"
			    "n2    Supermicro    SYS-821GE-TNHR        S1                2.1a        "
			    "01.03.16    2     2048        8\n");
	free(out);
	server_stop(&s);
	cli_ctx_free(&ctx);
}

/* On a terminal the progress line is drawn as nodes answer and erased at the end. */
static int progress_row(struct bmc_cli_rows *r, const json_t *e)
{
	const char *cells[] = { json_string_value(json_object_get(e, "node")) };

	bmc_cli_row(r, cells);
	return 0;
}

static void test_progress_line(void **state)
{
	static const char *const answer[] = {
		NDJSON_HEAD("2"), "{\"node\":\"a\"}\n",
		"{\"node\":\"b\",\"error\":\"down\"}\n", NULL,
	};
	static const char *const headers[] = { "NODE" };
	static const size_t widths[] = { 4 };
	const struct bmc_cli_query q = { .endpoint = "power", .key = "range", .value = "a,b" };
	struct server s = { .answers = { answer } };
	struct bmc_cli_rows rows;
	struct capture err, out;
	struct cli_ctx ctx;
	char url[64], *errs;
	int rc;

	(void)state;
	server_start(&s);
	ctx_for(&ctx, url, sizeof(url), &s);
	assert_int_equal(bmc_cli_rows_init(&rows, "power status", headers, widths, 1, progress_row),
			 0);
	rows.tty = true;
	capture_begin(&err, 2);
	capture_begin(&out, 1);
	rc = bmc_cli_rows_get(&rows, &ctx, &q);
	bmc_cli_rows_end(&rows, false);
	free(capture_end(&out));
	errs = capture_end(&err);
	server_stop(&s);
	assert_int_equal(rc, 0);
	assert_string_equal(errs, "\r\033[Kkiln: power status: 0/2 nodes done"
				  "\r\033[K"
				  "\r\033[Kkiln: power status: 1/2 nodes done"
				  "\r\033[K"
				  "\r\033[Kkiln: power status: 2/2 nodes done, 1 failed"
				  "\r\033[K");
	assert_int_equal(json_array_size(rows.results), 2);
	assert_int_equal(rows.failed, 1);
	bmc_cli_rows_free(&rows);
	free(errs);
	cli_ctx_free(&ctx);
}

static void test_node_width(void **state)
{
	(void)state;
	assert_int_equal(bmc_cli_node_width("gpu[01-12],-gpu03"), 5);
	assert_int_equal(bmc_cli_node_width("a,b"), 4);
	assert_int_equal(bmc_cli_node_width("r[1-2]n[01-02],login-node-1"), 12);
	assert_int_equal(bmc_cli_node_width("@a100"), BMC_CLI_NODE_WIDTH);
	assert_int_equal(bmc_cli_node_width("all"), BMC_CLI_NODE_WIDTH);
	assert_int_equal(bmc_cli_node_width("gpu[01-"), BMC_CLI_NODE_WIDTH);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stream_ndjson),
		cmocka_unit_test(test_stream_array_fallback),
		cmocka_unit_test(test_stream_malformed_line),
		cmocka_unit_test(test_stream_error_answer),
		cmocka_unit_test(test_power_status_rows_as_they_come),
		cmocka_unit_test(test_power_status_json),
		cmocka_unit_test(test_power_cycle_batches),
		cmocka_unit_test(test_sensors_rows),
		cmocka_unit_test(test_rows_wider_than_columns),
		cmocka_unit_test(test_progress_line),
		cmocka_unit_test(test_node_width),
	};

	signal(SIGPIPE, SIG_IGN);
	setenv("KILN_TOKEN", "tok-test", 1);
	unsetenv("KILN_TOKEN_FILE");
	unsetenv("KILN_URL");
	unsetenv("KILN_CA");
	unsetenv("KILN_FINGERPRINT");
	unsetenv("KILN_CONFIRM_THRESHOLD");
	setenv("XDG_CONFIG_HOME", "/nonexistent/kiln-test", 1); /* no cli.conf */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
