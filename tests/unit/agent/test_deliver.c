/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for agent/deliver.c, send.c and enroll.c against a small kilnd stand-in on loopback. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "deliver.h"
#include "enroll.h"
#include "kiln/error.h"
#include "kiln/servers.h"
#include "send.h"
#include "spool.h"

/* How the stand-in answers the next requests. */
enum mode { UP, DOWN, LOSE_ACK, INVALID, WRONG_ID, REFUSED };

static struct {
	int fd, port, stop;
	enum mode mode;
	char stored[64][40]; /* report ids stored, in arrival order */
	int nstored, nrequests;
	int enroll_busy;     /* answer this many enrollments 429 Retry-After: 1 */
	int nenroll;         /* enrollments asked */
	char last_auth[128];
	pthread_t thread;
	pthread_mutex_t lock;
} srv = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void reply(int c, int status, const char *body)
{
	char head[256];
	int n = snprintf(head, sizeof head,
			 "HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
			 "%sConnection: close\r\n\r\n", status, strlen(body),
			 status == 429 ? "Retry-After: 1\r\n" : "");

	if (write(c, head, (size_t)n) < 0 || write(c, body, strlen(body)) < 0)
		return;
}

static void handle(int c)
{
	char req[16384], *hdr_end, *auth, *cl, *id, *body;
	size_t len = 0, want;
	char out[256];

	for (;;) { /* headers, then Content-Length bytes of body */
		ssize_t r = read(c, req + len, sizeof req - 1 - len);

		if (r <= 0)
			return;
		len += (size_t)r;
		req[len] = '\0';
		hdr_end = strstr(req, "\r\n\r\n");
		if (!hdr_end)
			continue;
		cl = strcasestr(req, "Content-Length:");
		want = (size_t)(hdr_end + 4 - req) + (cl ? strtoul(cl + 15, NULL, 10) : 0);
		if (len >= want)
			break;
	}
	body = hdr_end + 4;
	pthread_mutex_lock(&srv.lock);
	srv.nrequests++;
	auth = strcasestr(req, "Authorization: Bearer ");
	srv.last_auth[0] = '\0';
	if (auth)
		sscanf(auth + 22, "%127[^\r]", srv.last_auth);
	if (strncmp(req, "POST /api/v1/agent/enroll ", 26) == 0) {
		srv.nenroll++;
		if (strcmp(srv.last_auth, "fleet-secret") != 0)
			reply(c, 401, "{\"error\":\"bad enrollment token\"}");
		else if (srv.enroll_busy > 0 && srv.enroll_busy--)
			reply(c, 429, "{\"error\":\"too many enrollments\"}");
		else if (!strstr(body, "\"dmi_serial\":\"SN-1\""))
			reply(c, 202, "{\"status\":\"pending\"}");
		else
			reply(c, 201, "{\"node\":\"n1\",\"token\":\"tok-n1\"}");
		goto done;
	}
	if (strncmp(req, "POST /api/v1/agent/report ", 26) != 0) {
		reply(c, 404, "{\"error\":\"not found\"}");
		goto done;
	}
	if (strcmp(srv.last_auth, "tok-n1") != 0) {
		reply(c, 401, "{\"error\":\"bad token\"}");
		goto done;
	}
	if (srv.mode == DOWN) {
		reply(c, 503, "{\"error\":\"starting\"}");
		goto done;
	}
	if (srv.mode == INVALID) {
		reply(c, 422, "{\"error\":\"field 'gpus': expected an array\"}");
		goto done;
	}
	if (srv.mode == REFUSED) {
		reply(c, 409, "{\"error\":\"agent identity mismatch: host.dmi_serial 'SN-X' "
			      "(reported) is not the BMC's serial 'SN-1'\",\"field\":\"host.dmi_serial\"}");
		goto done;
	}
	id = strstr(body, "\"report_id\":\"");
	if (!id) {
		reply(c, 400, "{\"error\":\"no report_id\"}");
		goto done;
	}
	id += 13;
	id[32] = '\0';
	{
		int i, dup = 0;

		for (i = 0; i < srv.nstored; i++)
			dup |= strcmp(srv.stored[i], id) == 0;
		if (!dup && srv.nstored < 64)
			snprintf(srv.stored[srv.nstored++], sizeof srv.stored[0], "%s", id);
		if (srv.mode == LOSE_ACK) { /* committed, but the answer never leaves */
			srv.mode = DOWN;
			goto done;
		}
		snprintf(out, sizeof out, "{\"report_id\":\"%s\",\"status\":\"%s\"}",
			 srv.mode == WRONG_ID ? "ffffffffffffffffffffffffffffffff" : id,
			 dup ? "duplicate" : "stored");
		reply(c, dup ? 200 : 201, out);
	}
done:
	pthread_mutex_unlock(&srv.lock);
}

static void *serve(void *arg)
{
	(void)arg;
	for (;;) {
		int c = accept(srv.fd, NULL, NULL);

		if (c < 0 || srv.stop) {
			if (c >= 0)
				close(c);
			return NULL;
		}
		handle(c);
		close(c);
	}
}

/* The test server as the agent's --server list. */
static struct kiln_servers servers;

static int srv_start(void **state)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t alen = sizeof a;

	(void)state;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	srv.fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (srv.fd < 0 || bind(srv.fd, (struct sockaddr *)&a, sizeof a) < 0 || listen(srv.fd, 8) < 0 ||
	    getsockname(srv.fd, (struct sockaddr *)&a, &alen) < 0)
		return -1;
	srv.port = ntohs(a.sin_port);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	return pthread_create(&srv.thread, NULL, serve, NULL) == 0 ? 0 : -1;
}

static int srv_stop(void **state)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	int c = socket(AF_INET, SOCK_STREAM, 0);

	(void)state;
	srv.stop = 1;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons((uint16_t)srv.port);
	if (connect(c, (struct sockaddr *)&a, sizeof a) < 0)
		return -1;
	close(c);
	pthread_join(srv.thread, NULL);
	close(srv.fd);
	curl_global_cleanup();
	kiln_servers_free(&servers);
	return 0;
}

static void url_list(void)
{
	char u[64];

	kiln_servers_free(&servers);
	snprintf(u, sizeof u, "http://127.0.0.1:%d/", srv.port);
	assert_int_equal(kiln_servers_parse(&servers, u, "--server"), 0);
}

/* A minimal report: send_report needs only its report_id. */
static void make_report(char *text, size_t n, char id[33], int k)
{
	snprintf(id, 33, "%032x", k);
	snprintf(text, n, "{\"schema\":\"kiln.agent.report/1\",\"report_id\":\"%s\",\"k\":%d}", id, k);
}

static int deliver_k(struct delivery *d, int k)
{
	char text[200], id[33];
	json_t *r;
	int rc;

	make_report(text, sizeof text, id, k);
	r = json_loads(text, 0, NULL);
	rc = delivery_send(d, r, text, strlen(text));
	json_decref(r);
	return rc;
}

static void set_mode(enum mode m)
{
	pthread_mutex_lock(&srv.lock);
	srv.mode = m;
	pthread_mutex_unlock(&srv.lock);
}

static void test_send_answers(void **state)
{
	char text[200], id[33];
	int dup = -1;

	(void)state;
	url_list();
	srv.nstored = 0;
	make_report(text, sizeof text, id, 100);
	set_mode(UP);
	assert_int_equal(send_report(&dup, &servers, "tok-n1", NULL, text, strlen(text)), 0);
	assert_int_equal(dup, 0);
	assert_int_equal(send_report(&dup, &servers, "tok-n1", NULL, text, strlen(text)), 0);
	assert_int_equal(dup, 1);
	assert_int_equal(send_report(NULL, &servers, "wrong", NULL, text, strlen(text)), KILN_EAUTH);
	set_mode(WRONG_ID);
	assert_int_equal(send_report(NULL, &servers, "tok-n1", NULL, text, strlen(text)), KILN_EPROTO);
	set_mode(INVALID);
	assert_int_equal(send_report(NULL, &servers, "tok-n1", NULL, text, strlen(text)), KILN_EINVAL);
	assert_non_null(strstr(kiln_error_last(), "field 'gpus'"));
	set_mode(DOWN);
	assert_int_equal(send_report(NULL, &servers, "tok-n1", NULL, text, strlen(text)), KILN_ERROR);
	assert_int_equal(send_report(NULL, &servers, "tok-n1", NULL, "{\"no\":1}", 8), KILN_EINVAL);
	assert_int_equal(srv.nstored, 1);
}

/* A port nothing listens on (bound, then closed). */
static int dead_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t alen = sizeof a;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
	close(fd);
	return ntohs(a.sin_port);
}

/* Two dead kilnd before the live one: the report is stored once and the live one is kept for
 * the next report; with every kilnd dead the send fails (and the report would be spooled). */
static void test_send_fails_over(void **state)
{
	struct kiln_servers list;
	char urls[200], text[200], id[33];
	int dup = -1, d1 = dead_port(), d2 = dead_port();

	(void)state;
	snprintf(urls, sizeof urls, "http://127.0.0.1:%d, http://127.0.0.1:%d/api/v1,"
		 "http://127.0.0.1:%d/", d1, d2, srv.port);
	assert_int_equal(kiln_servers_parse(&list, urls, "--server"), 0);
	assert_int_equal(list.count, 3);
	srv.nstored = 0;
	set_mode(UP);
	make_report(text, sizeof text, id, 200);
	assert_int_equal(send_report(&dup, &list, "tok-n1", NULL, text, strlen(text)), 0);
	assert_int_equal(dup, 0);
	assert_int_equal(list.cur, 2);
	make_report(text, sizeof text, id, 201);
	assert_int_equal(send_report(&dup, &list, "tok-n1", NULL, text, strlen(text)), 0);
	assert_int_equal(list.cur, 2);
	assert_int_equal(srv.nstored, 2);
	kiln_servers_free(&list);

	snprintf(urls, sizeof urls, "http://127.0.0.1:%d,http://127.0.0.1:%d", d1, d2);
	assert_int_equal(kiln_servers_parse(&list, urls, "--server"), 0);
	make_report(text, sizeof text, id, 202);
	assert_true(send_report(&dup, &list, "tok-n1", NULL, text, strlen(text)) < 0);
	assert_int_equal(srv.nstored, 2);
	kiln_servers_free(&list);
}

/* Reports made while kilnd is down arrive once each, in order, also when an ack is lost. */
static void test_spool_exactly_once(void **state)
{
	struct delivery d = { 0 };
	char dir[64], tokfile[96], id[33], text[200];
	FILE *f;
	int k;

	(void)state;
	url_list();
	snprintf(dir, sizeof dir, "/tmp/kiln-deliver-XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(tokfile, sizeof tokfile, "%s/token", dir);
	f = fopen(tokfile, "w");
	assert_non_null(f);
	fputs("tok-n1\n", f);
	fclose(f);
	assert_int_equal(spool_open(&d.spool, dir, 1 << 20, 100), 0);
	d.servers = &servers;
	d.token_file = tokfile;
	d.state_dir = dir;
	srv.nstored = 0;

	set_mode(UP);
	assert_int_equal(deliver_k(&d, 1), 0);
	assert_int_equal(spool_count(d.spool), 0);
	set_mode(DOWN);
	for (k = 2; k <= 4; k++)
		assert_true(deliver_k(&d, k) < 0);
	assert_int_equal(spool_count(d.spool), 3);
	set_mode(LOSE_ACK); /* report 2 is committed, its ack lost; then down again */
	assert_true(deliver_k(&d, 5) < 0);
	assert_int_equal(spool_count(d.spool), 4);
	set_mode(UP);
	assert_int_equal(deliver_k(&d, 6), 0);
	assert_int_equal(spool_count(d.spool), 0);
	assert_int_equal(srv.nstored, 6);
	for (k = 1; k <= 6; k++) {
		make_report(text, sizeof text, id, k);
		assert_string_equal(srv.stored[k - 1], id);
	}
	/* a report kilnd refuses is dropped, not spooled */
	set_mode(INVALID);
	assert_int_equal(deliver_k(&d, 7), KILN_EINVAL);
	assert_int_equal(spool_count(d.spool), 0);
	set_mode(UP);

	/* refused for its host (409): kept, alone, the newest each time; sent once accepted */
	set_mode(REFUSED);
	assert_int_equal(deliver_k(&d, 8), KILN_EIDENTITY);
	assert_non_null(strstr(kiln_error_last(), "refused by kilnd (HTTP 409): agent identity"));
	assert_int_equal(spool_count(d.spool), 1);
	assert_int_equal(deliver_k(&d, 9), KILN_EIDENTITY);
	assert_int_equal(deliver_k(&d, 10), KILN_EIDENTITY);
	assert_int_equal(spool_count(d.spool), 1);
	set_mode(DOWN); /* kilnd away meanwhile: spooled behind it as usual */
	assert_true(deliver_k(&d, 11) < 0);
	assert_int_equal(spool_count(d.spool), 2);
	set_mode(REFUSED);
	assert_int_equal(deliver_k(&d, 12), KILN_EIDENTITY);
	assert_int_equal(spool_count(d.spool), 1);
	set_mode(UP);
	assert_int_equal(deliver_k(&d, 13), 0);
	assert_int_equal(spool_count(d.spool), 0);
	assert_int_equal(srv.nstored, 8);
	make_report(text, sizeof text, id, 12);
	assert_string_equal(srv.stored[6], id);
	make_report(text, sizeof text, id, 13);
	assert_string_equal(srv.stored[7], id);

	spool_close(d.spool);
	delivery_free(&d);
	snprintf(text, sizeof text, "rm -rf '%s'", dir);
	assert_int_equal(system(text), 0);
}

static void test_enroll(void **state)
{
	struct delivery d = { 0 };
	char dir[64], path[128], cmd[128], *node = NULL, *tok = NULL, *stored = NULL;
	struct stat st;
	time_t t0;
	long retry = -1;
	FILE *f;

	(void)state;
	url_list();
	assert_int_equal(enroll_request(&node, &tok, &retry, &servers, "fleet-secret", NULL, "SN-1",
					NULL, "h1", NULL), 0);
	assert_string_equal(node, "n1");
	assert_string_equal(tok, "tok-n1");
	free(node);
	free(tok);
	assert_int_equal(enroll_request(&node, &tok, &retry, &servers, "wrong", NULL, "SN-1", NULL,
					"h1", NULL), KILN_EAUTH);
	assert_int_equal(enroll_request(&node, &tok, &retry, &servers, "fleet-secret", NULL,
					"SN-unknown", NULL, "h1", NULL), KILN_EBUSY);
	assert_int_equal(retry, 0); /* pending: nothing to wait for */
	/* kilnd's rate limit: 429 with Retry-After */
	pthread_mutex_lock(&srv.lock);
	srv.enroll_busy = 1;
	pthread_mutex_unlock(&srv.lock);
	assert_int_equal(enroll_request(&node, &tok, &retry, &servers, "fleet-secret", NULL, "SN-1",
					NULL, "h1", NULL), KILN_EBUSY);
	assert_int_equal(retry, 1);

	/* through delivery: enrolls on first use, stores the token 0600, reports with it */
	snprintf(dir, sizeof dir, "/tmp/kiln-enroll-XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/enroll", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("fleet-secret\n", f);
	fclose(f);
	assert_int_equal(spool_open(&d.spool, dir, 1 << 20, 100), 0);
	d.servers = &servers;
	d.enroll_token_file = path;
	d.state_dir = dir;
	set_mode(UP);
	/* two answers 429 Retry-After: 1: the delivery waits them out, then enrolls */
	pthread_mutex_lock(&srv.lock);
	srv.enroll_busy = 2;
	srv.nenroll = 0;
	pthread_mutex_unlock(&srv.lock);
	t0 = time(NULL);
	{
		const char *text = "{\"report_id\":\"0000000000000000000000000000abcd\","
				   "\"host\":{\"dmi_serial\":\"SN-1\",\"hostname\":\"h1\"}}";
		json_t *r = json_loads(text, 0, NULL);

		assert_int_equal(delivery_send(&d, r, text, strlen(text)), 0);
		json_decref(r);
	}
	assert_string_equal(srv.last_auth, "tok-n1");
	assert_int_equal(srv.nenroll, 3);
	assert_true(time(NULL) - t0 >= 2);
	assert_int_equal(enroll_token_load(&stored, dir), 0);
	assert_string_equal(stored, "tok-n1");
	free(stored);
	snprintf(path, sizeof path, "%s/" ENROLL_TOKEN_FILE, dir);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	spool_close(d.spool);
	delivery_free(&d);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_send_answers),
		cmocka_unit_test(test_send_fails_over),
		cmocka_unit_test(test_spool_exactly_once),
		cmocka_unit_test(test_enroll),
	};

	return cmocka_run_group_tests(tests, srv_start, srv_stop);
}
