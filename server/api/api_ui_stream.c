/* SPDX-License-Identifier: Apache-2.0 */
/* The dashboard's live fleet: server-sent events of the status rows that changed, on
 * connections suspended while there is nothing to send (no polling by the browser). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/handlers.h"
#include "api/api_status.h"
#include "kiln/buf.h"
#include "kiln/error.h"
#include "kiln/log.h"

/* How often the hub compares the stored rows with what it last sent (while anyone listens):
 * a change is on the page within this plus the browser's own handling. */
#define SCAN_MS 500
/* A comment line this often keeps a quiet stream known to be alive (and proxies from
 * closing it): 3 bytes every 25 s, well under the idle page's budget. */
#define KEEPALIVE_S 25
/* A browser that reads slower than the fleet changes is dropped past this; EventSource
 * reconnects and the page loads the rows again. */
#define SUB_PENDING_MAX (8 * 1024 * 1024)

struct sub {
	struct sub *next, *prev;
	struct ui_hub *hub;
	struct MHD_Connection *conn;
	struct kiln_buf out; /* bytes not yet taken by libmicrohttpd */
	size_t off;
	int waiting;         /* the reader suspended the connection */
	int greeted;         /* has had its hello: the rows it holds are the snapshot's */
	int dropped;
	time_t last_write;
};

/* A node's row as last sent, and the key its changes are found by. */
struct snap_row {
	char *name;
	char *key;  /* the row's text with the ages in coarse steps (see age_step) */
	json_t *row;
};

struct ui_hub {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t thread;
	int started, stopping;
	char *db_path;
	struct sub *subs;
	size_t nsubs;
	struct snap_row *snap; /* sorted by name; NULL while nobody listens */
	size_t nsnap;
	int have_snap;
};

static void snap_free(struct snap_row *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(s[i].name);
		free(s[i].key);
		json_decref(s[i].row);
	}
	free(s);
}

/*
 * An age in the steps the page shows it in: under 2 minutes, then minutes to the hour, hours
 * to the day, days. Pushing an exact age would push every row every second; a fresh agent
 * or BMC reading stays in the first step, so an unchanged fleet sends nothing.
 */
static json_int_t age_step(const json_t *v)
{
	json_int_t a;

	if (!json_is_integer(v))
		return -1;
	a = json_integer_value(v);
	if (a < 120)
		return 0;
	if (a < 3600)
		return a / 60;
	if (a < 86400)
		return 100 + a / 3600;
	return 1000 + a / 86400;
}

static int cmp_snap(const void *a, const void *b)
{
	return strcmp(((const struct snap_row *)a)->name, ((const struct snap_row *)b)->name);
}

/* The fleet's rows now: *out sorted by name, *out_summary the counts. */
static int snapshot(struct snap_row **out, size_t *out_n, json_t **out_summary, struct store *st)
{
	struct kiln_buf b;
	struct snap_row *rows = NULL;
	json_t *doc = NULL, *arr;
	size_t n = 0;
	int rc;

	kiln_buf_init(&b, 0);
	rc = api_status_rows_write(&b, st, NULL, 0, time(NULL));
	if (rc < 0)
		goto cleanup;
	doc = json_loadb(b.data, b.len, 0, NULL);
	arr = json_object_get(doc, "rows");
	if (!json_is_array(arr)) {
		rc = kiln_fail(KILN_ERROR, "ui: the status rows do not parse");
		goto cleanup;
	}
	rows = calloc(json_array_size(arr) + 1, sizeof(*rows));
	if (!rows) {
		rc = kiln_fail(KILN_ERROR, "out of memory");
		goto cleanup;
	}
	for (size_t i = 0; i < json_array_size(arr); i++) {
		json_t *row = json_array_get(arr, i), *keyed = json_copy(row);
		const char *name = json_string_value(json_array_get(row, 0));

		if (!name || !keyed) {
			json_decref(keyed);
			continue;
		}
		/* columns 2 and 3: power_age_s, agent_age_s (API_STATUS_ROW_COLUMNS) */
		json_array_set_new(keyed, 2, json_integer(age_step(json_array_get(row, 2))));
		json_array_set_new(keyed, 3, json_integer(age_step(json_array_get(row, 3))));
		rows[n].name = strdup(name);
		rows[n].key = json_dumps(keyed, JSON_COMPACT);
		rows[n].row = json_incref(row);
		json_decref(keyed);
		n++;
		if (!rows[n - 1].name || !rows[n - 1].key) {
			rc = kiln_fail(KILN_ERROR, "out of memory");
			goto cleanup;
		}
	}
	qsort(rows, n, sizeof(*rows), cmp_snap);
	*out_summary = json_incref(json_object_get(doc, "summary"));
	*out = rows;
	*out_n = n;
	rows = NULL;
	n = 0;
cleanup:
	snap_free(rows, n);
	json_decref(doc);
	kiln_buf_free(&b);
	return rc;
}

/* The "rows" event between two snapshots, or NULL when nothing changed. */
static char *diff_event(const struct snap_row *old, size_t nold, const struct snap_row *cur,
			size_t ncur, json_t *summary)
{
	json_t *changed = json_array(), *gone = json_array(), *ev;
	size_t i = 0, j = 0;
	char *data, *text = NULL;
	struct kiln_buf b;

	while (changed && gone && (i < nold || j < ncur)) {
		int c = i == nold ? 1 : j == ncur ? -1 : strcmp(old[i].name, cur[j].name);

		if (c < 0) {
			json_array_append_new(gone, json_string(old[i++].name));
		} else if (c > 0) {
			json_array_append(changed, cur[j++].row);
		} else {
			if (strcmp(old[i].key, cur[j].key) != 0)
				json_array_append(changed, cur[j].row);
			i++;
			j++;
		}
	}
	if (!changed || !gone || (json_array_size(changed) == 0 && json_array_size(gone) == 0)) {
		json_decref(changed);
		json_decref(gone);
		return NULL;
	}
	ev = json_pack("{s:o, s:o, s:O}", "rows", changed, "gone", gone, "summary", summary);
	data = ev ? json_dumps(ev, JSON_COMPACT) : NULL;
	json_decref(ev);
	kiln_buf_init(&b, 0);
	if (data && kiln_buf_printf(&b, "event: rows\ndata: %s\n\n", data) == 0 &&
	    kiln_buf_append(&b, "", 1) == 0) {
		text = b.data;
		b.data = NULL;
	}
	kiln_buf_free(&b);
	free(data);
	return text;
}

/* Queues text for s and wakes its connection; the hub's lock is held. */
static void sub_send_locked(struct sub *s, const char *text, time_t now)
{
	if (s->dropped)
		return;
	if (s->out.len - s->off + strlen(text) > SUB_PENDING_MAX ||
	    kiln_buf_puts(&s->out, text) < 0)
		s->dropped = 1;
	s->last_write = now;
	if (s->waiting) {
		s->waiting = 0;
		MHD_resume_connection(s->conn);
	}
}

/* One pass: new rows, what changed sent to those greeted, hello to the new, keepalives. */
static void scan(struct ui_hub *h, struct store *st)
{
	struct snap_row *cur = NULL;
	size_t ncur = 0;
	json_t *summary = NULL;
	char *event = NULL;
	time_t now = time(NULL);

	if (snapshot(&cur, &ncur, &summary, st) < 0) {
		log_warn("ui: live rows: %s", kiln_error_last());
		return;
	}
	pthread_mutex_lock(&h->mu);
	if (h->have_snap)
		event = diff_event(h->snap, h->nsnap, cur, ncur, summary);
	for (struct sub *s = h->subs; s; s = s->next) {
		if (!s->greeted) {
			/* the page loads the rows after this: they are at least this snapshot */
			sub_send_locked(s, "event: hello\ndata: {}\n\n", now);
			s->greeted = 1;
		} else if (event) {
			sub_send_locked(s, event, now);
		} else if (now - s->last_write >= KEEPALIVE_S) {
			sub_send_locked(s, ":\n\n", now);
		}
	}
	snap_free(h->snap, h->nsnap);
	h->snap = cur;
	h->nsnap = ncur;
	h->have_snap = 1;
	pthread_mutex_unlock(&h->mu);
	free(event);
	json_decref(summary);
}

static void *hub_main(void *arg)
{
	struct ui_hub *h = arg;
	struct store *st = NULL;

	pthread_mutex_lock(&h->mu);
	while (!h->stopping) {
		struct timespec until;

		if (h->nsubs == 0) {
			/* nobody listens: no work, and the next listener starts from fresh rows */
			snap_free(h->snap, h->nsnap);
			h->snap = NULL;
			h->nsnap = 0;
			h->have_snap = 0;
			pthread_cond_wait(&h->cv, &h->mu);
			continue;
		}
		pthread_mutex_unlock(&h->mu);
		if (!st && store_open(&st, h->db_path) < 0)
			log_warn("ui: live rows: %s", kiln_error_last());
		if (st)
			scan(h, st);
		pthread_mutex_lock(&h->mu);
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += SCAN_MS * 1000000L;
		until.tv_sec += until.tv_nsec / 1000000000L;
		until.tv_nsec %= 1000000000L;
		if (!h->stopping)
			pthread_cond_timedwait(&h->cv, &h->mu, &until);
	}
	pthread_mutex_unlock(&h->mu);
	store_close(st);
	return NULL;
}

int api_ui_hub_start(struct ui_hub **out, const char *db_path)
{
	struct ui_hub *h = calloc(1, sizeof(*h));

	if (!h || !(h->db_path = strdup(db_path))) {
		free(h);
		return kiln_fail(KILN_ERROR, "out of memory");
	}
	pthread_mutex_init(&h->mu, NULL);
	pthread_cond_init(&h->cv, NULL);
	if (pthread_create(&h->thread, NULL, hub_main, h) != 0) {
		api_ui_hub_free(h);
		return kiln_fail(KILN_ERROR, "cannot start the dashboard's live thread");
	}
	h->started = 1;
	*out = h;
	return 0;
}

void api_ui_hub_end(struct ui_hub *h)
{
	if (!h)
		return;
	pthread_mutex_lock(&h->mu);
	h->stopping = 1;
	for (struct sub *s = h->subs; s; s = s->next) {
		if (s->waiting) {
			s->waiting = 0;
			MHD_resume_connection(s->conn);
		}
	}
	pthread_cond_broadcast(&h->cv);
	pthread_mutex_unlock(&h->mu);
}

void api_ui_hub_free(struct ui_hub *h)
{
	if (!h)
		return;
	api_ui_hub_end(h);
	if (h->started)
		pthread_join(h->thread, NULL);
	/* libmicrohttpd stopped before: every stream's free callback has run */
	snap_free(h->snap, h->nsnap);
	pthread_cond_destroy(&h->cv);
	pthread_mutex_destroy(&h->mu);
	free(h->db_path);
	free(h);
}

/* libmicrohttpd asks for more of the stream; 0 suspends the connection until the hub has. */
static ssize_t sub_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct sub *s = cls;
	struct ui_hub *h = s->hub;
	ssize_t n = 0;

	(void)pos;
	pthread_mutex_lock(&h->mu);
	if (s->out.len > s->off) {
		size_t avail = s->out.len - s->off;

		if (avail > max)
			avail = max;
		memcpy(buf, s->out.data + s->off, avail);
		s->off += avail;
		if (s->off == s->out.len) {
			kiln_buf_reset(&s->out);
			s->off = 0;
		}
		n = (ssize_t)avail;
	} else if (s->dropped || h->stopping) {
		n = MHD_CONTENT_READER_END_OF_STREAM;
	} else {
		s->waiting = 1;
		MHD_suspend_connection(s->conn);
	}
	pthread_mutex_unlock(&h->mu);
	return n;
}

static void sub_free(void *cls)
{
	struct sub *s = cls;
	struct ui_hub *h = s->hub;

	pthread_mutex_lock(&h->mu);
	if (s->prev)
		s->prev->next = s->next;
	else
		h->subs = s->next;
	if (s->next)
		s->next->prev = s->prev;
	h->nsubs--;
	pthread_mutex_unlock(&h->mu);
	kiln_buf_free(&s->out);
	free(s);
}

void api_ui_stream(struct api_ctx *c)
{
	struct ui_hub *h = c->hub;
	struct MHD_Response *resp;
	struct sub *s;

	if (!h) {
		api_fail(c, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, "the live stream is not running");
		return;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		api_fail(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
		return;
	}
	s->hub = h;
	s->conn = c->conn;
	s->last_write = time(NULL);
	kiln_buf_init(&s->out, 0);
	/* "retry" first: EventSource waits 2 s before it connects again after a drop. */
	if (kiln_buf_puts(&s->out, "retry: 2000\n\n") < 0) {
		free(s);
		api_fail(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
		return;
	}
	resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, sub_read, s,
						 sub_free);
	if (!resp) {
		kiln_buf_free(&s->out);
		free(s);
		api_fail(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
		return;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	pthread_mutex_lock(&h->mu);
	s->next = h->subs;
	if (h->subs)
		h->subs->prev = s;
	h->subs = s;
	h->nsubs++;
	pthread_cond_broadcast(&h->cv);
	pthread_mutex_unlock(&h->mu);
	c->status = MHD_HTTP_OK;
	c->response = resp;
}
