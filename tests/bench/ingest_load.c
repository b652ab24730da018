/* SPDX-License-Identifier: Apache-2.0 */
/* Benchmark load generator for kilnd's agent ingest: N keep-alive connections posting 8-GPU
 * reports as thousands of distinct nodes; prints reports/s and latency percentiles. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/resource.h>

#include <curl/curl.h>
#include <jansson.h>

#define BODY_CAP (64 * 1024)      /* answers we keep (token replies are ~150 bytes) */
#define REPORT_CAP (1024 * 1024)  /* one report as sent */
#define IMPORT_BATCH 1000
#define CONNS_MAX 1024
#define NODES_MAX 200000
#define SAMPLES_MAX 5000000
#define URLS_MAX 8                /* --url given several times: kilnd instances of one store */

/* The placeholders the template carries; the generator fills them per report. */
enum slot {
	SLOT_RID, SLOT_TIME, SLOT_HOST, SLOT_MID, SLOT_BOOT, SLOT_SERIAL,
	SLOT_TEMP, SLOT_POWER, SLOT_UTIL, SLOT_MEMUSED, /* per GPU, numbers: the quotes go */
	SLOT_COUNT
};
#define SLOT_FIRST_NUMBER SLOT_TEMP
static const char *const slot_marks[SLOT_COUNT] = { "@@RID@@", "@@TIME@@", "@@HOST@@",
						    "@@MID@@", "@@BOOT@@", "@@SERIAL@@",
						    "@@TEMP@@", "@@POWER@@", "@@UTIL@@",
						    "@@MEMUSED@@" };

struct piece {
	const char *text;  /* literal text before the slot */
	size_t len;
	int slot;          /* -1 after the last literal */
};

struct tmpl {
	char *text;
	struct piece pieces[96];
	size_t npieces;
};

struct node {
	char name[32];
	char auth[128];    /* "Authorization: Bearer ..." */
};

struct conn {
	CURL *easy;
	struct curl_slist *headers;
	char *report;
	size_t report_len;
	char body[BODY_CAP];
	size_t body_len;
	double started;
	size_t node;       /* index of the node this request is for */
};

struct opts {
	const char *url, *token_file, *template_file, *tokens_file, *prefix;
	const char *urls[URLS_MAX]; /* the load's connections go round-robin over these */
	int nurls;
	long nodes, conns, max_reports;
	double duration, warmup;
	int setup;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int parse_long(long *out, const char *s, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

static int parse_double(double *out, const char *s, double min, double max)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

static char *file_read(const char *path, size_t cap)
{
	FILE *f = fopen(path, "re");
	char *buf = NULL;
	size_t n;

	if (!f) {
		fprintf(stderr, "ingest_load: %s: %s\n", path, strerror(errno));
		return NULL;
	}
	buf = malloc(cap + 1);
	if (buf) {
		n = fread(buf, 1, cap, f);
		buf[n] = '\0';
		if (n == cap) {
			fprintf(stderr, "ingest_load: %s is larger than %zu bytes\n", path, cap);
			free(buf);
			buf = NULL;
		}
	}
	fclose(f);
	return buf;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *userp)
{
	struct conn *c = userp;
	size_t n = size * nmemb, room = sizeof(c->body) - 1 - c->body_len;

	if (n > room)
		n = room; /* the rest is dropped: only the start of an answer is read */
	memcpy(c->body + c->body_len, data, n);
	c->body_len += n;
	c->body[c->body_len] = '\0';
	return size * nmemb;
}

/* --- the template -------------------------------------------------------------------- */

static int set_mark(json_t *obj, const char *key, enum slot s)
{
	if (!json_is_object(obj))
		return -1;
	return json_object_set_new(obj, key, json_string(slot_marks[s]));
}

/* Turns an agent report into literal pieces with placeholders for the per-report fields. */
static int tmpl_load(struct tmpl *t, const char *path)
{
	json_error_t err;
	json_t *j = json_load_file(path, 0, &err), *host;
	char *p;

	if (!j) {
		fprintf(stderr, "ingest_load: %s: %s\n", path, err.text);
		return -1;
	}
	host = json_object_get(j, "host");
	/* GPU telemetry changes with every report, as a real agent's does. */
	{
		size_t gi;
		json_t *g;

		json_array_foreach(json_object_get(j, "gpus"), gi, g) {
			if (set_mark(g, "temperature_c", SLOT_TEMP) < 0 ||
			    set_mark(g, "power_draw_w", SLOT_POWER) < 0 ||
			    set_mark(g, "utilization_gpu_pct", SLOT_UTIL) < 0 ||
			    set_mark(g, "memory_used_bytes", SLOT_MEMUSED) < 0) {
				fprintf(stderr, "ingest_load: %s: gpus[%zu] is not an object\n", path, gi);
				json_decref(j);
				return -1;
			}
		}
	}
	if (set_mark(j, "report_id", SLOT_RID) < 0 || set_mark(j, "time", SLOT_TIME) < 0 ||
	    set_mark(host, "hostname", SLOT_HOST) < 0 || set_mark(host, "machine_id", SLOT_MID) < 0 ||
	    set_mark(host, "boot_id", SLOT_BOOT) < 0 || set_mark(host, "dmi_serial", SLOT_SERIAL) < 0) {
		fprintf(stderr, "ingest_load: %s: not an agent report with a host object\n", path);
		json_decref(j);
		return -1;
	}
	t->text = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(10));
	json_decref(j);
	if (!t->text)
		return -1;
	p = t->text;
	t->npieces = 0;
	for (;;) {
		char *best = NULL;
		int bs = -1;

		for (int s = 0; s < SLOT_COUNT; s++) {
			char *m = strstr(p, slot_marks[s]);

			if (m && (!best || m < best)) {
				best = m;
				bs = s;
			}
		}
		if (t->npieces == sizeof(t->pieces) / sizeof(t->pieces[0]))
			return -1;
		t->pieces[t->npieces].text = p;
		t->pieces[t->npieces].len = best ? (size_t)(best - p) : strlen(p);
		t->pieces[t->npieces].slot = bs;
		if (bs >= SLOT_FIRST_NUMBER)
			t->pieces[t->npieces].len--; /* the opening quote: the value is a number */
		t->npieces++;
		if (!best)
			break;
		p = best + strlen(slot_marks[bs]) + (bs >= SLOT_FIRST_NUMBER);
	}
	return 0;
}

/* A cheap generator for the varied values (xorshift64*). */
static uint64_t rnd_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ULL;
}

/* Writes the report of node index i into c->report; returns its length or 0 when too big.
 * report_id: 32 random lowercase hex digits, like the agent's (random keys, not an append). */
static size_t tmpl_fill(struct conn *c, const struct tmpl *t, const struct node *n, size_t i,
			uint64_t *rs, uint64_t seq)
{
	char vals[SLOT_COUNT][80];
	struct tm tm;
	time_t now = time(NULL);
	size_t len = 0;

	gmtime_r(&now, &tm);
	snprintf(vals[SLOT_RID], sizeof(vals[0]), "%016" PRIx64 "%016" PRIx64, rnd_next(rs),
		 rnd_next(rs) ^ seq);
	strftime(vals[SLOT_TIME], sizeof(vals[0]), "%Y-%m-%dT%H:%M:%SZ", &tm);
	snprintf(vals[SLOT_HOST], sizeof(vals[0]), "%s", n->name);
	snprintf(vals[SLOT_MID], sizeof(vals[0]), "%032zx", i + 1);
	snprintf(vals[SLOT_BOOT], sizeof(vals[0]), "00000000-0000-4000-8000-%012zx", i + 1);
	snprintf(vals[SLOT_SERIAL], sizeof(vals[0]), "SNBENCH%07zu", i + 1);
	for (size_t k = 0; k < t->npieces; k++) {
		const struct piece *pc = &t->pieces[k];
		size_t vl;

		if (pc->slot >= SLOT_FIRST_NUMBER) {
			uint64_t r = rnd_next(rs);

			/* temperature 30-89 C, power 80.00-699.99 W, utilisation 0-100 %,
			 * memory used up to 80 GiB: each GPU's own per report */
			if (pc->slot == SLOT_TEMP)
				snprintf(vals[SLOT_TEMP], sizeof(vals[0]), "%u", 30 + (unsigned)(r % 60));
			else if (pc->slot == SLOT_POWER)
				snprintf(vals[SLOT_POWER], sizeof(vals[0]), "%u.%02u",
					 80 + (unsigned)(r % 620), (unsigned)((r >> 16) % 100));
			else if (pc->slot == SLOT_UTIL)
				snprintf(vals[SLOT_UTIL], sizeof(vals[0]), "%u", (unsigned)(r % 101));
			else
				snprintf(vals[SLOT_MEMUSED], sizeof(vals[0]), "%" PRIu64,
					 (uint64_t)((r % 80) * 1073741824ULL));
		}
		vl = pc->slot >= 0 ? strlen(vals[pc->slot]) : 0;

		if (len + pc->len + vl >= REPORT_CAP)
			return 0;
		memcpy(c->report + len, pc->text, pc->len);
		len += pc->len;
		if (pc->slot >= 0) {
			memcpy(c->report + len, vals[pc->slot], vl);
			len += vl;
		}
	}
	c->report[len] = '\0';
	return len;
}

/* --- setup: nodes and agent tokens --------------------------------------------------- */

static char *admin_auth(const char *token_file)
{
	char *tok = file_read(token_file, 4096), *auth;
	size_t n;

	if (!tok)
		return NULL;
	n = strcspn(tok, "\r\n");
	tok[n] = '\0';
	auth = malloc(n + 32);
	if (auth)
		snprintf(auth, n + 32, "Authorization: Bearer %s", tok);
	free(tok);
	return auth;
}

/* One blocking request; returns the HTTP status (0 on a transport error). */
static long request_once(const char *url, const char *auth, const char *body, struct conn *c)
{
	struct curl_slist *h = NULL;
	CURL *e = curl_easy_init();
	long status = 0;

	if (!e)
		return 0;
	h = curl_slist_append(h, auth);
	h = curl_slist_append(h, "Content-Type: application/json");
	h = curl_slist_append(h, "Expect:");
	c->body_len = 0;
	c->body[0] = '\0';
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, c);
	curl_easy_setopt(e, CURLOPT_TIMEOUT, 300L);
	if (curl_easy_perform(e) == CURLE_OK)
		curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(h);
	curl_easy_cleanup(e);
	return status;
}

static int nodes_import(const struct opts *o, const char *auth, struct conn *scratch)
{
	char url[512];

	snprintf(url, sizeof(url), "%s/api/v1/nodes/import", o->url);
	for (long first = 0; first < o->nodes; first += IMPORT_BATCH) {
		json_t *arr = json_array(), *body = json_pack("{s:o}", "nodes", arr);
		char *text;
		long status;

		for (long i = first; i < o->nodes && i < first + IMPORT_BATCH; i++) {
			char name[32];

			snprintf(name, sizeof(name), "%s%05ld", o->prefix, i + 1);
			json_array_append_new(arr, json_pack("{s:s}", "name", name));
		}
		text = json_dumps(body, JSON_COMPACT);
		json_decref(body);
		if (!text)
			return -1;
		status = request_once(url, auth, text, scratch);
		free(text);
		if (status != 201) {
			fprintf(stderr, "ingest_load: POST /nodes/import: HTTP %ld: %.300s\n", status,
				scratch->body);
			return -1;
		}
	}
	return 0;
}

/* Makes an agent token for every node over o->conns parallel connections; fills nodes[]. */
static int tokens_create(const struct opts *o, const char *auth, struct node *nodes)
{
	CURLM *m = curl_multi_init();
	struct conn *conns = calloc((size_t)o->conns, sizeof(*conns));
	char url[512];
	long next = 0, done = 0, failed = 0;
	int running = 0, ret = -1;

	if (!m || !conns)
		goto cleanup;
	snprintf(url, sizeof(url), "%s/api/v1/agent/tokens", o->url);
	for (long k = 0; k < o->conns; k++) {
		conns[k].easy = curl_easy_init();
		conns[k].report = malloc(128);
		if (!conns[k].easy || !conns[k].report)
			goto cleanup;
		conns[k].headers = curl_slist_append(NULL, auth);
		conns[k].headers = curl_slist_append(conns[k].headers, "Content-Type: application/json");
		curl_easy_setopt(conns[k].easy, CURLOPT_URL, url);
		curl_easy_setopt(conns[k].easy, CURLOPT_HTTPHEADER, conns[k].headers);
		curl_easy_setopt(conns[k].easy, CURLOPT_WRITEFUNCTION, on_body);
		curl_easy_setopt(conns[k].easy, CURLOPT_WRITEDATA, &conns[k]);
		curl_easy_setopt(conns[k].easy, CURLOPT_PRIVATE, &conns[k]);
		curl_easy_setopt(conns[k].easy, CURLOPT_TIMEOUT, 120L);
	}
	for (long k = 0; k < o->conns && next < o->nodes; k++, next++) {
		snprintf(conns[k].report, 128, "{\"node\":\"%s\"}", nodes[next].name);
		conns[k].node = (size_t)next;
		conns[k].body_len = 0;
		curl_easy_setopt(conns[k].easy, CURLOPT_POSTFIELDS, conns[k].report);
		curl_multi_add_handle(m, conns[k].easy);
	}
	while (done < o->nodes) {
		CURLMsg *msg;
		int left;

		curl_multi_perform(m, &running);
		while ((msg = curl_multi_info_read(m, &left))) {
			struct conn *c = NULL;
			long status = 0;
			json_t *j;

			if (msg->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&c);
			curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &status);
			curl_multi_remove_handle(m, msg->easy_handle);
			j = status == 201 ? json_loads(c->body, 0, NULL) : NULL;
			if (j && json_is_string(json_object_get(j, "token")))
				snprintf(nodes[c->node].auth, sizeof(nodes[0].auth),
					 "Authorization: Bearer %s",
					 json_string_value(json_object_get(j, "token")));
			else if (failed++ < 3)
				fprintf(stderr, "ingest_load: token for %s: HTTP %ld: %.200s\n",
					nodes[c->node].name, status, c->body);
			json_decref(j);
			done++;
			if (next < o->nodes) {
				snprintf(c->report, 128, "{\"node\":\"%s\"}", nodes[next].name);
				c->node = (size_t)next++;
				c->body_len = 0;
				curl_easy_setopt(c->easy, CURLOPT_POSTFIELDS, c->report);
				curl_multi_add_handle(m, c->easy);
			}
		}
		if (done < o->nodes)
			curl_multi_poll(m, NULL, 0, 1000, NULL);
	}
	ret = failed ? -1 : 0;
cleanup:
	for (long k = 0; conns && k < o->conns; k++) {
		if (conns[k].easy)
			curl_multi_remove_handle(m, conns[k].easy);
		curl_easy_cleanup(conns[k].easy);
		curl_slist_free_all(conns[k].headers);
		free(conns[k].report);
	}
	free(conns);
	curl_multi_cleanup(m);
	return ret;
}

static int tokens_save(const char *path, const struct node *nodes, long n)
{
	FILE *f = fopen(path, "we");

	if (!f) {
		fprintf(stderr, "ingest_load: %s: %s\n", path, strerror(errno));
		return -1;
	}
	for (long i = 0; i < n; i++)
		fprintf(f, "%s %s\n", nodes[i].name, nodes[i].auth + strlen("Authorization: Bearer "));
	return fclose(f) == 0 ? 0 : -1;
}

static int tokens_load(const char *path, struct node *nodes, long n)
{
	FILE *f = fopen(path, "re");
	char line[256];
	long i = 0;

	if (!f) {
		fprintf(stderr, "ingest_load: %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (i < n && fgets(line, sizeof(line), f)) {
		char *sp = strchr(line, ' ');

		if (!sp || (size_t)(sp - line) >= sizeof(nodes[0].name))
			break;
		*sp = '\0';
		sp[1 + strcspn(sp + 1, "\r\n")] = '\0';
		if (strlen(sp + 1) > 96)
			break;
		memcpy(nodes[i].name, line, (size_t)(sp - line) + 1);
		snprintf(nodes[i].auth, sizeof(nodes[0].auth), "Authorization: Bearer %.96s", sp + 1);
		i++;
	}
	fclose(f);
	if (i < n) {
		fprintf(stderr, "ingest_load: %s holds %ld tokens, %ld wanted\n", path, i, n);
		return -1;
	}
	return 0;
}

/* --- the load ------------------------------------------------------------------------ */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double pct(const double *sorted, size_t n, double p)
{
	size_t i;

	if (!n)
		return 0;
	i = (size_t)(p * (double)(n - 1) + 0.5);
	return sorted[i < n ? i : n - 1];
}

struct stats {
	uint64_t sent, acked, dup, failed, in_window;
	size_t min_len, max_len;
	double *lat;
	size_t nlat;
	double t_window_start, t_window_end;
};

static void conn_start(CURLM *m, struct conn *c, const struct tmpl *t, const struct node *nodes,
		       long nnodes, uint64_t *seq, uint64_t *rs, struct stats *st)
{
	size_t i = (size_t)(*seq % (uint64_t)nnodes);

	c->node = i;
	c->report_len = tmpl_fill(c, t, &nodes[i], i, rs, *seq);
	(*seq)++;
	if (c->report_len < st->min_len || !st->min_len)
		st->min_len = c->report_len;
	if (c->report_len > st->max_len)
		st->max_len = c->report_len;
	curl_slist_free_all(c->headers);
	c->headers = curl_slist_append(NULL, nodes[i].auth);
	c->headers = curl_slist_append(c->headers, "Content-Type: application/json");
	c->headers = curl_slist_append(c->headers, "Expect:");
	curl_easy_setopt(c->easy, CURLOPT_HTTPHEADER, c->headers);
	curl_easy_setopt(c->easy, CURLOPT_POSTFIELDS, c->report);
	curl_easy_setopt(c->easy, CURLOPT_POSTFIELDSIZE, (long)c->report_len);
	c->body_len = 0;
	c->started = now_s();
	st->sent++;
	curl_multi_add_handle(m, c->easy);
}

static int load_run(const struct opts *o, const struct tmpl *t, const struct node *nodes)
{
	CURLM *m = curl_multi_init();
	struct conn *conns = calloc((size_t)o->conns, sizeof(*conns));
	struct stats st = { 0 };
	char url[URLS_MAX][512];
	uint64_t seq = 0;
	/* report ids: random, seeded once per run */
	uint64_t rs = 0x9e3779b97f4a7c15ULL ^ (uint64_t)time(NULL) * 0x100000001b3ULL ^
		      (uint64_t)getpid();
	double t0, t_end, elapsed;
	int running = 0, active = 0, ret = -1;
	long reuse_conns = 0;

	st.lat = malloc(sizeof(double) * SAMPLES_MAX);
	if (!m || !conns || !st.lat)
		goto cleanup;
	for (int u = 0; u < o->nurls; u++)
		snprintf(url[u], sizeof(url[u]), "%s/api/v1/agent/report", o->urls[u]);
	curl_multi_setopt(m, CURLMOPT_MAX_TOTAL_CONNECTIONS, o->conns);
	curl_multi_setopt(m, CURLMOPT_MAXCONNECTS, o->conns);
	for (long k = 0; k < o->conns; k++) {
		conns[k].easy = curl_easy_init();
		conns[k].report = malloc(REPORT_CAP);
		if (!conns[k].easy || !conns[k].report)
			goto cleanup;
		curl_easy_setopt(conns[k].easy, CURLOPT_URL, url[k % o->nurls]);
		curl_easy_setopt(conns[k].easy, CURLOPT_WRITEFUNCTION, on_body);
		curl_easy_setopt(conns[k].easy, CURLOPT_WRITEDATA, &conns[k]);
		curl_easy_setopt(conns[k].easy, CURLOPT_PRIVATE, &conns[k]);
		curl_easy_setopt(conns[k].easy, CURLOPT_TIMEOUT, 60L);
		curl_easy_setopt(conns[k].easy, CURLOPT_TCP_NODELAY, 1L);
	}
	t0 = now_s();
	st.t_window_start = t0 + o->warmup;
	t_end = st.t_window_start + o->duration;
	for (long k = 0; k < o->conns; k++, active++)
		conn_start(m, &conns[k], t, nodes, o->nodes, &seq, &rs, &st);
	while (active > 0) {
		CURLMsg *msg;
		int left;
		double now;

		curl_multi_perform(m, &running);
		now = now_s();
		while ((msg = curl_multi_info_read(m, &left))) {
			struct conn *c = NULL;
			long status = 0, nconn = 0;

			if (msg->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&c);
			curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &status);
			curl_easy_getinfo(msg->easy_handle, CURLINFO_NUM_CONNECTS, &nconn);
			reuse_conns += nconn;
			curl_multi_remove_handle(m, msg->easy_handle);
			active--;
			if (msg->data.result == CURLE_OK && status == 201) {
				st.acked++;
			} else if (msg->data.result == CURLE_OK && status == 200) {
				st.dup++;
			} else {
				if (st.failed++ < 5)
					fprintf(stderr, "ingest_load: %s: %s HTTP %ld: %.200s\n",
						nodes[c->node].name, curl_easy_strerror(msg->data.result),
						status, c->body);
			}
			if (c->started >= st.t_window_start && now <= t_end) {
				st.in_window++;
				if (st.nlat < SAMPLES_MAX)
					st.lat[st.nlat++] = (now - c->started) * 1000.0;
			}
			if (now < t_end && (o->max_reports <= 0 || seq < (uint64_t)o->max_reports)) {
				conn_start(m, c, t, nodes, o->nodes, &seq, &rs, &st);
				active++;
			}
		}
		if (active > 0)
			curl_multi_poll(m, NULL, 0, 1000, NULL);
	}
	st.t_window_end = now_s();
	if (st.t_window_end > t_end)
		st.t_window_end = t_end;
	elapsed = st.t_window_end - st.t_window_start;
	qsort(st.lat, st.nlat, sizeof(double), cmp_double);
	printf("%-28s %s\n", "metric", "value");
	printf("%-28s %ld\n", "connections", o->conns);
	printf("%-28s %ld\n", "nodes", o->nodes);
	printf("%-28s %zu-%zu\n", "report bytes", st.min_len, st.max_len);
	printf("%-28s %" PRIu64 "\n", "sent", st.sent);
	printf("%-28s %" PRIu64 "\n", "acknowledged", st.acked);
	printf("%-28s %" PRIu64 "\n", "duplicates", st.dup);
	printf("%-28s %" PRIu64 "\n", "failed", st.failed);
	printf("%-28s %ld\n", "new TCP connections", reuse_conns);
	printf("%-28s %.1f\n", "window s", elapsed);
	printf("%-28s %.0f\n", "reports/s (window)", elapsed > 0 ? (double)st.in_window / elapsed : 0);
	printf("%-28s %.2f\n", "latency p50 ms", pct(st.lat, st.nlat, 0.50));
	printf("%-28s %.2f\n", "latency p99 ms", pct(st.lat, st.nlat, 0.99));
	printf("%-28s %.2f\n", "latency max ms", st.nlat ? st.lat[st.nlat - 1] : 0);
	{
		struct rusage ru;

		/* The generator's own CPU, to tell whether it, not kilnd, is the limit. */
		if (getrusage(RUSAGE_SELF, &ru) == 0)
			printf("%-28s %.1f\n", "generator CPU s (whole run)",
			       (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
				       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6);
	}
	ret = st.failed ? 1 : 0;
cleanup:
	for (long k = 0; conns && k < o->conns; k++) {
		if (conns[k].easy)
			curl_multi_remove_handle(m, conns[k].easy);
		curl_easy_cleanup(conns[k].easy);
		curl_slist_free_all(conns[k].headers);
		free(conns[k].report);
	}
	free(conns);
	free(st.lat);
	curl_multi_cleanup(m);
	return ret;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ingest_load --url URL... --tokens FILE [--setup --admin-token FILE] [--nodes N]\n"
		"                   [--prefix P] [--template REPORT.json --conns C --duration S\n"
		"                   --warmup S --max-reports R]\n"
		"  --setup        create N nodes (POST /nodes/import, 1,000 a request) and their agent\n"
		"                 tokens (POST /agent/tokens over C connections), write them to --tokens\n"
		"  --template F   post reports shaped after F (kiln-agent --print), report_id, time and\n"
		"                 host ids varied per report/node, round-robin over the N nodes\n"
		"  --url URL      kilnd; given up to 8 times (instances on one store), the load's\n"
		"                 connections go round-robin over them; --setup uses the first\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "url", required_argument, NULL, 'u' },
		{ "admin-token", required_argument, NULL, 'a' },
		{ "tokens", required_argument, NULL, 't' },
		{ "template", required_argument, NULL, 'T' },
		{ "nodes", required_argument, NULL, 'n' },
		{ "prefix", required_argument, NULL, 'p' },
		{ "conns", required_argument, NULL, 'c' },
		{ "duration", required_argument, NULL, 'd' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "max-reports", required_argument, NULL, 'r' },
		{ "setup", no_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = { .nodes = 10000, .conns = 32, .duration = 30, .warmup = 3, .prefix = "bn" };
	struct node *nodes = NULL;
	struct tmpl t = { 0 };
	struct conn *scratch = NULL;
	char *auth = NULL;
	int opt, ret = 1;

	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		int bad = 0;

		switch (opt) {
		case 'u':
			if (o.nurls == URLS_MAX) {
				fprintf(stderr, "ingest_load: at most %d --url\n", URLS_MAX);
				return 2;
			}
			o.urls[o.nurls++] = optarg;
			o.url = o.urls[0];
			break;
		case 'a': o.token_file = optarg; break;
		case 't': o.tokens_file = optarg; break;
		case 'T': o.template_file = optarg; break;
		case 'p': o.prefix = optarg; break;
		case 's': o.setup = 1; break;
		case 'n': bad = parse_long(&o.nodes, optarg, 1, NODES_MAX); break;
		case 'c': bad = parse_long(&o.conns, optarg, 1, CONNS_MAX); break;
		case 'r': bad = parse_long(&o.max_reports, optarg, 0, SAMPLES_MAX); break;
		case 'd': bad = parse_double(&o.duration, optarg, 1, 3600); break;
		case 'w': bad = parse_double(&o.warmup, optarg, 0, 600); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
		if (bad) {
			fprintf(stderr, "ingest_load: bad value '%s'\n", optarg);
			return 2;
		}
	}
	if (!o.url || !o.tokens_file || (o.setup && !o.token_file) ||
	    (!o.setup && !o.template_file) || strlen(o.prefix) > 16) {
		usage(stderr);
		return 2;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	nodes = calloc((size_t)o.nodes, sizeof(*nodes));
	scratch = calloc(1, sizeof(*scratch));
	if (!nodes || !scratch)
		goto cleanup;
	if (o.setup) {
		double t0 = now_s(), t1;

		for (long i = 0; i < o.nodes; i++)
			snprintf(nodes[i].name, sizeof(nodes[0].name), "%s%05ld", o.prefix, i + 1);
		if (!(auth = admin_auth(o.token_file)) || nodes_import(&o, auth, scratch) < 0)
			goto cleanup;
		t1 = now_s();
		if (tokens_create(&o, auth, nodes) < 0 || tokens_save(o.tokens_file, nodes, o.nodes) < 0)
			goto cleanup;
		printf("setup: %ld nodes imported in %.1f s, agent tokens made in %.1f s\n", o.nodes,
		       t1 - t0, now_s() - t1);
		ret = 0;
	} else {
		if (tokens_load(o.tokens_file, nodes, o.nodes) < 0 || tmpl_load(&t, o.template_file) < 0)
			goto cleanup;
		ret = load_run(&o, &t, nodes);
	}
cleanup:
	free(t.text);
	free(auth);
	free(scratch);
	free(nodes);
	curl_global_cleanup();
	return ret;
}
