/* SPDX-License-Identifier: Apache-2.0 */
/* GET /metrics from kept blocks: each node's series that change only with its data are kept
 * compressed, one block per family (metrics/zblock.h), and made again only when the node's
 * markers in the store move (by a scrape, or between scrapes by a thread); a scrape writes
 * family after family, each node's lines from its block or, for what depends on the
 * scrape's time or on short columns, made on the spot. */
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kiln/error.h"
#include "metrics/counters.h"
#include "metrics/families.h"
#include "metrics/metrics.h"
#include "metrics/zblock.h"

/* A node's series of one source (SRC_BMC or SRC_REPORT), one block a family. Never changed
 * once made: scrapes that hold a reference read it without the cache's lock. */
struct render {
	atomic_int refs;
	unsigned char *z;            /* the blocks' bytes */
	size_t zlen;
	struct zblock block[F_COUNT];
};

/* A node the cache keeps. */
struct entry {
	int64_t node_id;
	char *name, *rack;           /* the labels of its renders */
	int64_t sensors_time;        /* the markers bmc was made with */
	int64_t inventory_time;
	char *report_id;             /* the report the report render was made from */
	struct render *bmc, *report; /* NULL: none yet */
};

struct metrics_cache {
	pthread_mutex_t lock;        /* guards the fields up to warm, and warmed, last_scrape */
	struct entry **entries;      /* by node id */
	size_t count;
	struct metrics_cache_stats stats;
	struct zblock_writer zw;
	struct expo e;               /* a render's text */
	struct expo_family *f[F_COUNT];
	struct kiln_buf zbuf;        /* a render's blocks */
	/* the thread that keeps the blocks up to date between scrapes (metrics_cache_warm) */
	pthread_t warm;
	int warm_started;
	pthread_mutex_t warm_lock;   /* guards warm_stop */
	pthread_cond_t warm_wake;
	int warm_stop;
	char *warm_target;
	struct metrics_options warm_opt;
	int64_t warm_every_s;
	int64_t warm_idle_s;
	int warmed;                  /* every node made once (guarded by lock) */
	int64_t last_scrape;         /* when the last scrape began, real time (guarded by lock) */
};

/* A node as one scrape shows it. */
struct view {
	struct metrics_node n;       /* its strings belong to the scrape */
	int fresh;                   /* its agent's series are shown */
	int has_xid;
	struct metrics_xid xid;
	struct render *bmc, *report; /* references held */
};

struct metrics_scrape {
	struct view *v;              /* the wanted nodes, in name order */
	size_t count, cap;
	int64_t now;
	struct expo e;               /* the families written on the spot */
	struct expo_family *f[F_COUNT];
	char *tail;                  /* kilnd's own families */
	struct zanswer z;
	struct kiln_buf out;         /* answer bytes made and not yet read, from out_at */
	size_t out_at;
	int fam;                     /* the family being written */
	size_t at;                   /* its next node */
	int done;
};

/* Live families are written this many nodes at a time. */
#define LIVE_BATCH 256
/* The warming thread makes at most this many nodes' blocks again a hold of the cache's
 * lock (about half a second), so that a scrape waits no longer for it. */
#define WARM_BATCH 500

static void render_unref(struct render *r)
{
	if (r && atomic_fetch_sub(&r->refs, 1) == 1) {
		free(r->z);
		free(r);
	}
}

static struct render *render_ref(struct render *r)
{
	if (r)
		atomic_fetch_add(&r->refs, 1);
	return r;
}

static void entry_free(struct entry *e)
{
	if (!e)
		return;
	render_unref(e->bmc);
	render_unref(e->report);
	free(e->name);
	free(e->rack);
	free(e->report_id);
	free(e);
}

int metrics_cache_new(struct metrics_cache **out)
{
	struct metrics_cache *c = calloc(1, sizeof(*c));
	int rc;

	if (!c)
		return kiln_fail(KILN_ERROR, "metrics: out of memory");
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->warm_lock, NULL);
	pthread_cond_init(&c->warm_wake, NULL);
	expo_init(&c->e, 0);
	kiln_buf_init(&c->zbuf, 0);
	if ((rc = zblock_writer_init(&c->zw)) < 0 ||
	    (rc = metrics_families_declare(&c->e, c->f)) < 0) {
		metrics_cache_free(c);
		return rc;
	}
	*out = c;
	return 0;
}

void metrics_cache_free(struct metrics_cache *c)
{
	if (!c)
		return;
	if (c->warm_started) {
		pthread_mutex_lock(&c->warm_lock);
		c->warm_stop = 1;
		pthread_cond_signal(&c->warm_wake);
		pthread_mutex_unlock(&c->warm_lock);
		pthread_join(c->warm, NULL);
	}
	free(c->warm_target);
	for (size_t i = 0; i < c->count; i++)
		entry_free(c->entries[i]);
	free(c->entries);
	zblock_writer_free(&c->zw);
	expo_free(&c->e);
	kiln_buf_free(&c->zbuf);
	pthread_cond_destroy(&c->warm_wake);
	pthread_mutex_destroy(&c->warm_lock);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

void metrics_cache_stats(struct metrics_cache *c, struct metrics_cache_stats *out)
{
	pthread_mutex_lock(&c->lock);
	*out = c->stats;
	out->nodes = c->count;
	out->bytes = 0;
	for (size_t i = 0; i < c->count; i++) {
		struct entry *e = c->entries[i];

		out->bytes += (e->bmc ? e->bmc->zlen : 0) + (e->report ? e->report->zlen : 0);
	}
	pthread_mutex_unlock(&c->lock);
}

static int cmp_entry(const void *a, const void *b)
{
	int64_t x = (*(struct entry *const *)a)->node_id, y = (*(struct entry *const *)b)->node_id;

	return x < y ? -1 : x > y;
}

static struct entry *entry_find(struct entry **list, size_t count, int64_t node_id)
{
	struct entry key = { .node_id = node_id }, *k = &key, **hit;

	hit = count ? bsearch(&k, list, count, sizeof(*list), cmp_entry) : NULL;
	return hit ? *hit : NULL;
}

/* The blocks of source src from the text c->e holds. */
static int render_make(struct metrics_cache *c, enum fam_source src, struct render **out)
{
	struct render *r = calloc(1, sizeof(*r));
	int rc = 0;

	if (!r)
		return kiln_fail(KILN_ERROR, "metrics: out of memory");
	kiln_buf_reset(&c->zbuf);
	for (int i = 0; i < F_COUNT && rc == 0; i++)
		if (metrics_family_source((enum fam)i) == src)
			rc = zblock_deflate(&c->zw, &c->zbuf, &r->block[i], c->f[i]->text.data,
					    c->f[i]->text.len);
	if (rc == 0 && c->zbuf.len && !(r->z = malloc(c->zbuf.len)))
		rc = kiln_fail(KILN_ERROR, "metrics: out of memory");
	if (rc < 0) {
		free(r);
		return rc;
	}
	if (c->zbuf.len)
		memcpy(r->z, c->zbuf.data, c->zbuf.len);
	r->zlen = c->zbuf.len;
	atomic_init(&r->refs, 1);
	*out = r;
	return 0;
}

static int strdup_or_null(char **out, const char *s)
{
	*out = s ? strdup(s) : NULL;
	return s && !*out ? kiln_fail(KILN_ERROR, "metrics: out of memory") : 0;
}

static int same(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

/* What a refresh of the cache works with, under its lock. */
struct refresh {
	struct metrics_cache *c;
	struct metrics_scrape *s;    /* NULL: nothing shown (the warming thread) */
	const struct metrics_options *opt;
	int64_t now;
	size_t render_max;           /* nodes made again at most (0: all) */
	int more;                    /* some were left for the next time */
	struct entry **kept;         /* the entries of the nodes listed now */
	size_t nkept, kept_cap;
	int64_t *bmc_ids;            /* the nodes whose renders are made again */
	size_t nbmc, bmc_cap;
	int64_t *report_ids;
	size_t nreport, report_cap;
};

/* Grows *list (elements of size sz) so that one more fits after count. */
static int grow(void *list, size_t *cap, size_t count, size_t sz)
{
	void **p = list, *grown;
	size_t ncap = *cap ? *cap * 2 : 256;

	if (count < *cap)
		return 0;
	if (!(grown = realloc(*p, ncap * sz)))
		return kiln_fail(KILN_ERROR, "metrics: out of memory");
	*p = grown;
	*cap = ncap;
	return 0;
}

/* Copies the row's strings into the view (the store's are valid during the call only). */
static int view_fill(struct view *v, const struct metrics_node *r)
{
	const char **dst[] = { &v->n.node, &v->n.rack, &v->n.power, &v->n.health, &v->n.reasons,
			       &v->n.report_id, &v->n.nvidia_status, &v->n.driver_version,
			       &v->n.kernel_module_version, &v->n.cuda_driver_version,
			       &v->n.nvml_version, &v->n.os, &v->n.kernel };
	int rc = 0;

	v->n = *r;
	for (size_t i = 0; i < sizeof(dst) / sizeof(dst[0]); i++) {
		char *copy = NULL;

		if (rc == 0)
			rc = strdup_or_null(&copy, *dst[i]);
		*dst[i] = copy;
	}
	return rc;
}

static void view_clear(struct view *v)
{
	char *s[] = { (char *)v->n.node, (char *)v->n.rack, (char *)v->n.power,
		      (char *)v->n.health, (char *)v->n.reasons, (char *)v->n.report_id,
		      (char *)v->n.nvidia_status, (char *)v->n.driver_version,
		      (char *)v->n.kernel_module_version, (char *)v->n.cuda_driver_version,
		      (char *)v->n.nvml_version, (char *)v->n.os, (char *)v->n.kernel };

	for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++)
		free(s[i]);
	render_unref(v->bmc);
	render_unref(v->report);
}

/* The entry of a wanted node, found or new (then in no list yet); its renders dropped when
 * its labels changed (a node renamed, or moved to another rack). */
static int entry_get(struct entry **out, struct metrics_cache *c, const struct metrics_node *r)
{
	struct entry *e = entry_find(c->entries, c->count, r->node_id);
	int rc;

	if (e && same(e->name, r->node) && same(e->rack, r->rack)) {
		*out = e;
		return 0;
	}
	if (!e) {
		if (!(e = calloc(1, sizeof(*e))))
			return kiln_fail(KILN_ERROR, "metrics: out of memory");
		e->node_id = r->node_id;
	}
	render_unref(e->bmc);
	render_unref(e->report);
	e->bmc = e->report = NULL;
	free(e->name);
	free(e->rack);
	e->name = e->rack = NULL;
	if ((rc = strdup_or_null(&e->name, r->node)) < 0 ||
	    (rc = strdup_or_null(&e->rack, r->rack)) < 0) {
		if (!entry_find(c->entries, c->count, r->node_id))
			entry_free(e);
		return rc;
	}
	*out = e;
	return 0;
}

/* One node of the store's walk: its entry kept, and when wanted, shown. */
static int node_seen(void *ud, const struct metrics_node *r)
{
	struct refresh *f = ud;
	struct metrics_scrape *s = f->s;
	struct entry *e = entry_find(f->c->entries, f->c->count, r->node_id);
	int rc, fresh, bmc, report;

	if ((rc = grow(&f->kept, &f->kept_cap, f->nkept, sizeof(*f->kept))) < 0)
		return rc;
	if (f->opt->want && !f->opt->want(f->opt->want_ud, r->node)) {
		if (e)
			f->kept[f->nkept++] = e;
		return 0;
	}
	fresh = metrics_agent_fresh(r, f->now, f->opt->silent_intervals,
				    f->opt->default_interval_s);
	if (s) {
		struct view *v;

		if ((rc = grow(&s->v, &s->cap, s->count, sizeof(*s->v))) < 0)
			return rc;
		v = &s->v[s->count++];
		memset(v, 0, sizeof(*v));
		v->fresh = fresh;
		if ((rc = view_fill(v, r)) < 0)
			return rc;
	}
	if ((rc = grow(&f->bmc_ids, &f->bmc_cap, f->nbmc, sizeof(*f->bmc_ids))) < 0 ||
	    (rc = grow(&f->report_ids, &f->report_cap, f->nreport, sizeof(*f->report_ids))) < 0 ||
	    (rc = entry_get(&e, f->c, r)) < 0)
		return rc;
	f->kept[f->nkept++] = e;
	bmc = !e->bmc || e->sensors_time != r->sensors_time ||
	      e->inventory_time != r->inventory_time;
	/* a silent agent's report is neither shown nor read (a new one moves report_id) */
	report = r->has_agent && fresh && (!e->report || !same(e->report_id, r->report_id));
	if (!r->has_agent) {
		render_unref(e->report);
		e->report = NULL;
	}
	if (f->render_max && f->nbmc + f->nreport + bmc + report > f->render_max) {
		f->more = 1;
		return 0;
	}
	if (bmc)
		f->bmc_ids[f->nbmc++] = r->node_id;
	if (report)
		f->report_ids[f->nreport++] = r->node_id;
	return 0;
}

static int bmc_made(void *ud, const struct metrics_bmc *b)
{
	struct metrics_cache *c = ud;
	struct entry *e = entry_find(c->entries, c->count, b->node_id);
	struct render *r;
	int rc;

	if (!e)
		return 0;
	expo_clear(&c->e);
	if ((rc = metrics_bmc_write(c->f, e->name, e->rack, b)) < 0 ||
	    (rc = render_make(c, SRC_BMC, &r)) < 0)
		return rc;
	render_unref(e->bmc);
	e->bmc = r;
	e->sensors_time = b->sensors_time;
	e->inventory_time = b->inventory_time;
	c->stats.bmc_renders++;
	return 0;
}

static int report_made(void *ud, const struct metrics_report *rep)
{
	struct metrics_cache *c = ud;
	struct entry *e = entry_find(c->entries, c->count, rep->node_id);
	struct render *r;
	char *id;
	int rc;

	if (!e)
		return 0;
	expo_clear(&c->e);
	if ((rc = metrics_report_write(c->f, e->name, e->rack, rep)) < 0 ||
	    (rc = strdup_or_null(&id, rep->report_id)) < 0)
		return rc;
	if ((rc = render_make(c, SRC_REPORT, &r)) < 0) {
		free(id);
		return rc;
	}
	render_unref(e->report);
	e->report = r;
	free(e->report_id);
	e->report_id = id;
	c->stats.report_renders++;
	return 0;
}

/* The entries listed now replace the cache's; the others (nodes deleted) are freed. */
static void entries_commit(struct metrics_cache *c, struct refresh *f)
{
	if (f->nkept)
		qsort(f->kept, f->nkept, sizeof(*f->kept), cmp_entry);
	for (size_t i = 0; i < c->count; i++)
		if (!entry_find(f->kept, f->nkept, c->entries[i]->node_id))
			entry_free(c->entries[i]);
	free(c->entries);
	c->entries = f->kept;
	c->count = f->nkept;
	f->kept = NULL;
}

static int cmp_xid(const void *key, const void *elem)
{
	int64_t a = *(const int64_t *)key, b = ((const struct metrics_xid *)elem)->node_id;

	return a < b ? -1 : a > b;
}

/* Reads the store and brings the cache up to date, its lock held: all of it for a scrape
 * (s), which also takes what it shows; render_max nodes at most for the warming thread (s
 * NULL), *out_more set when some were left. */
static int refresh(struct metrics_cache *c, struct metrics_scrape *s, struct store *st,
		   const struct metrics_options *opt, int64_t now, size_t render_max,
		   int *out_more)
{
	struct refresh f = { .c = c, .s = s, .opt = opt, .now = now, .render_max = render_max };
	struct metrics_xid *xids = NULL;
	size_t nxids = 0;
	int rc = 0;

	if (s && (rc = store_metrics_xids(st, &xids, &nxids)) < 0)
		return rc;
	rc = store_metrics_nodes(st, node_seen, &f);
	entries_commit(c, &f);
	if (rc == 0)
		rc = store_metrics_bmc(st, f.bmc_ids, f.nbmc, bmc_made, c);
	if (rc == 0)
		rc = store_metrics_reports(st, f.report_ids, f.nreport, report_made, c);
	for (size_t i = 0; rc == 0 && s && i < s->count; i++) {
		struct view *v = &s->v[i];
		struct entry *e = entry_find(c->entries, c->count, v->n.node_id);
		const struct metrics_xid *x =
			nxids ? bsearch(&v->n.node_id, xids, nxids, sizeof(*xids), cmp_xid) : NULL;

		if (x) {
			v->has_xid = 1;
			v->xid = *x;
		}
		if (e) {
			v->bmc = render_ref(e->bmc);
			v->report = v->fresh ? render_ref(e->report) : NULL;
		}
	}
	if (out_more)
		*out_more = f.more;
	free(f.kept);
	free(f.bmc_ids);
	free(f.report_ids);
	free(xids);
	return rc;
}

static void *warm_run(void *arg)
{
	struct metrics_cache *c = arg;
	struct store *st = NULL;
	int more = 1; /* the first round at once */

	pthread_mutex_lock(&c->warm_lock);
	while (!c->warm_stop) {
		struct timespec until;

		clock_gettime(CLOCK_REALTIME, &until);
		if (more) {
			/* a scrape waiting for the lock gets it first */
			until.tv_nsec += 10 * 1000 * 1000;
			if (until.tv_nsec >= 1000000000) {
				until.tv_sec++;
				until.tv_nsec -= 1000000000;
			}
		} else {
			until.tv_sec += c->warm_every_s;
		}
		while (!c->warm_stop &&
		       pthread_cond_timedwait(&c->warm_wake, &c->warm_lock, &until) != ETIMEDOUT)
			;
		if (c->warm_stop)
			break;
		pthread_mutex_unlock(&c->warm_lock);
		more = 0;
		/* a failure (the store away) is tried again at the next round; a scrape says it */
		if (st || store_open(&st, c->warm_target) == 0) {
			int64_t now = (int64_t)time(NULL);

			pthread_mutex_lock(&c->lock);
			/* once warm, nothing is made while nobody scrapes */
			if (c->warmed && c->warm_idle_s && now - c->last_scrape > c->warm_idle_s) {
				pthread_mutex_unlock(&c->lock);
				pthread_mutex_lock(&c->warm_lock);
				continue;
			}
			if (refresh(c, NULL, st, &c->warm_opt, now, WARM_BATCH, &more) < 0) {
				store_close(st);
				st = NULL;
				more = 0;
			} else if (!more) {
				c->warmed = 1;
			}
			pthread_mutex_unlock(&c->lock);
		}
		kiln_error_clear();
		pthread_mutex_lock(&c->warm_lock);
	}
	pthread_mutex_unlock(&c->warm_lock);
	store_close(st);
	return NULL;
}

int metrics_cache_warm(struct metrics_cache *c, const char *store_target,
		       const struct metrics_options *opt, int64_t every_s, int64_t idle_s)
{
	assert(!c->warm_started && !opt->want && every_s > 0);
	if (!(c->warm_target = strdup(store_target)))
		return kiln_fail(KILN_ERROR, "metrics: out of memory");
	c->warm_opt = *opt;
	c->warm_every_s = every_s;
	c->warm_idle_s = idle_s;
	if (pthread_create(&c->warm, NULL, warm_run, c) != 0)
		return kiln_fail(KILN_ERROR, "metrics: cannot start the warming thread");
	c->warm_started = 1;
	return 0;
}

void metrics_scrape_free(struct metrics_scrape *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->count; i++)
		view_clear(&s->v[i]);
	free(s->v);
	expo_free(&s->e);
	free(s->tail);
	zanswer_free(&s->z);
	kiln_buf_free(&s->out);
	free(s);
}

/* kilnd's own families, written whole: a few dozen series. */
static int tail_make(struct metrics_scrape *s)
{
	struct expo e;
	int rc;

	expo_init(&e, 0);
	if ((rc = metrics_counters_write(&e)) == 0 && (rc = expo_finish(&e)) == 0)
		s->tail = kiln_buf_steal(&e.out);
	expo_free(&e);
	return rc;
}

int metrics_scrape_open(struct metrics_scrape **out, struct metrics_cache *c, struct store *st,
			const struct metrics_options *opt, int64_t now, int gzip)
{
	struct metrics_scrape *s = calloc(1, sizeof(*s));
	int rc;

	if (!s)
		return kiln_fail(KILN_ERROR, "metrics: out of memory");
	s->now = now;
	expo_init(&s->e, 0);
	kiln_buf_init(&s->out, 0);
	if ((rc = metrics_families_declare(&s->e, s->f)) < 0 || (rc = tail_make(s)) < 0 ||
	    (rc = zanswer_init(&s->z, gzip, &s->out)) < 0)
		goto cleanup;
	pthread_mutex_lock(&c->lock);
	c->last_scrape = (int64_t)time(NULL);
	rc = refresh(c, s, st, opt, now, 0, NULL);
	pthread_mutex_unlock(&c->lock);
cleanup:
	if (rc < 0) {
		metrics_scrape_free(s);
		return rc;
	}
	*out = s;
	return 0;
}

/* The next stretch of the answer into s->out: a family's HELP and TYPE, or some of its
 * nodes' lines, or the end. */
static int produce(struct metrics_scrape *s)
{
	struct expo_family *f;
	struct kiln_buf *text;
	enum fam_source src;
	int rc = 0;

	if (s->fam == F_COUNT) {
		s->done = 1;
		if ((rc = zanswer_text(&s->z, s->tail, s->tail ? strlen(s->tail) : 0)) < 0)
			return rc;
		return zanswer_finish(&s->z);
	}
	f = s->f[s->fam];
	text = &f->text;
	src = metrics_family_source((enum fam)s->fam);
	if (s->at == 0) {
		kiln_buf_reset(text);
		if ((rc = expo_family_head(text, f)) < 0 ||
		    (s->fam == F_NODES && (rc = expo_sample(f, NULL, NULL, (double)s->count)) < 0) ||
		    (rc = zanswer_text(&s->z, text->data, text->len)) < 0)
			return rc;
		kiln_buf_reset(text);
	}
	for (size_t n = 0; s->fam != F_NODES && n < LIVE_BATCH && s->at < s->count && rc == 0;
	     n++, s->at++) {
		const struct view *v = &s->v[s->at];
		const struct render *r = src == SRC_BMC ? v->bmc : v->report;

		if (src == SRC_LIVE)
			rc = metrics_live_write(s->f, (enum fam)s->fam, &v->n, v->fresh,
						v->has_xid ? &v->xid : NULL, s->now);
		else if (r)
			rc = zanswer_block(&s->z, &r->block[s->fam], r->z);
	}
	if (rc == 0 && text->len)
		rc = zanswer_text(&s->z, text->data, text->len);
	kiln_buf_reset(text);
	if (s->fam == F_NODES || s->at == s->count) {
		s->fam++;
		s->at = 0;
	}
	return rc;
}

int metrics_scrape_read(struct metrics_scrape *s, char *buf, size_t max, size_t *out_n)
{
	size_t n;
	int rc;

	/* what is left of the last stretch goes to the front, so that out holds at most about
	 * max and one stretch, whatever the answer's size */
	if (s->out_at && s->out.len - s->out_at < max) {
		memmove(s->out.data, s->out.data + s->out_at, s->out.len - s->out_at);
		s->out.len -= s->out_at;
		s->out_at = 0;
	}
	while (!s->done && s->out.len - s->out_at < max)
		if ((rc = produce(s)) < 0)
			return rc;
	n = s->out.len - s->out_at < max ? s->out.len - s->out_at : max;
	if (n)
		memcpy(buf, s->out.data + s->out_at, n);
	s->out_at += n;
	if (s->out_at == s->out.len) {
		kiln_buf_reset(&s->out);
		s->out_at = 0;
	}
	*out_n = n;
	return 0;
}
