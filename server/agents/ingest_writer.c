/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ingest writer: the threads that take queued reports and store them in batches, each
 * batch one transaction, and then answer each report. On SQLite one thread (one writer at a
 * time is all SQLite has). On PostgreSQL several lanes, each a thread with its own
 * connection, that write at the same time: a node's reports always go to the same lane
 * (its id modulo the lanes), so they are stored in the order they came, and each lane's
 * batches lock only their own nodes (store_begin_nodes).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "agents/ingest_internal.h"
#include "agents/receive_gap.h"
#include "kiln/error.h"
#include "metrics/counters.h"

#define PRUNE_INTERVAL_S 60
/* The writer checkpoints the WAL itself, between batches and after the answers went out:
 * once it holds this many frames and no report waits, or at this many whatever waits. */
#define WAL_CKPT_IDLE_FRAMES 1000
#define WAL_CKPT_BUSY_FRAMES 8000

_Static_assert(INGEST_LANES_MAX <= RECEIVE_GAP_LANES, "every lane's batches watched");
_Static_assert(INGEST_LANES_PG <= INGEST_LANES_MAX, "lanes");

struct lane {
	int index;
	pthread_cond_t wake;
	pthread_t thread;
	int started;
	struct store *st;
	struct ingest_item *head, **tail; /* its queue */
	int wal_frames;                   /* the WAL's length after its last commit */
	struct prev_cache *prev;          /* its own */
};

static struct {
	pthread_mutex_t lock; /* every lane's queue and the counts below */
	struct lane lanes[INGEST_LANES_MAX];
	size_t nlanes;
	size_t queued, max;
	size_t bytes, bytes_max; /* item.bytes of the waiting items, and their cap */
	int running;   /* ingest_enqueue accepts items */
	int stopping;  /* the threads end once their queues are empty */
	int64_t last_prune; /* lane 0's */
} writer = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* 1 when the history prune is due (and marks it done now). */
static int prune_due(struct store *st)
{
	if (store_now(st) - writer.last_prune < PRUNE_INTERVAL_S)
		return 0;
	writer.last_prune = store_now(st);
	return 1;
}

/* Housekeeping after a commit; its failures fail no report (they are committed). */
static void prune_run(struct store *st)
{
	ingest_prune(st, NULL);
	store_wal_checkpoint(st);
}

/* Takes up to INGEST_BATCH_MAX items of the lane's queue (the lock held). */
static size_t batch_take(struct lane *l, struct ingest_item **batch)
{
	size_t n = 0;

	while (l->head && n < INGEST_BATCH_MAX) {
		batch[n++] = l->head;
		l->head = l->head->next;
	}
	if (!l->head)
		l->tail = &l->head;
	writer.queued -= n;
	for (size_t i = 0; i < n; i++)
		writer.bytes -= batch[i]->bytes;
	metrics_ingest_queue_set((int64_t)writer.queued);
	return n;
}

/* After a batch: the prune (lane 0) and the WAL checkpoint (SQLite's one lane). */
static void after_batch(struct lane *l)
{
	int idle;

	if (l->index == 0 && prune_due(l->st)) {
		prune_run(l->st);
		l->wal_frames = 0;
	}
	if (l->wal_frames < WAL_CKPT_IDLE_FRAMES)
		return;
	pthread_mutex_lock(&writer.lock);
	idle = !l->head;
	pthread_mutex_unlock(&writer.lock);
	if (idle || l->wal_frames >= WAL_CKPT_BUSY_FRAMES) {
		store_wal_checkpoint(l->st);
		l->wal_frames = 0;
	}
}

static void *lane_main(void *arg)
{
	struct ingest_item *batch[INGEST_BATCH_MAX];
	struct lane *l = arg;

	pthread_mutex_lock(&writer.lock);
	for (;;) {
		int64_t trips;
		size_t n;

		while (!l->head && !writer.stopping)
			pthread_cond_wait(&l->wake, &writer.lock);
		if (!l->head)
			break;
		n = batch_take(l, batch);
		pthread_mutex_unlock(&writer.lock);
		/* A batch that waits long on the store, or fails, is kilnd not receiving: no
		 * agent's silence meanwhile is its own (receive_gap.h). */
		receive_gap_ingest_busy(l->index, time(NULL), 0);
		trips = store_round_trips(l->st);
		if (ingest_batch_cached(l->st, l->prev, batch, n) < 0)
			receive_gap_mark(time(NULL));
		metrics_ingest_round_trips_add(store_round_trips(l->st) - trips);
		receive_gap_ingest_busy(l->index, 0, time(NULL));
		/* Each answer goes out only now: the commit (or its failure) is final. */
		for (size_t i = 0; i < n; i++) {
			metrics_ingest_count(ingest_item_result(batch[i]));
			batch[i]->done_fn(batch[i], batch[i]->done_arg);
		}
		after_batch(l);
		pthread_mutex_lock(&writer.lock);
	}
	pthread_mutex_unlock(&writer.lock);
	return NULL;
}

/* Ends the lanes started (the lock not held) and frees what they hold. */
static void lanes_end(void)
{
	pthread_mutex_lock(&writer.lock);
	writer.stopping = 1;
	for (size_t i = 0; i < writer.nlanes; i++)
		pthread_cond_signal(&writer.lanes[i].wake);
	pthread_mutex_unlock(&writer.lock);
	for (size_t i = 0; i < writer.nlanes; i++) {
		struct lane *l = &writer.lanes[i];

		if (l->started)
			pthread_join(l->thread, NULL);
		ingest_cache_free(l->prev);
		store_close(l->st);
		pthread_cond_destroy(&l->wake);
		*l = (struct lane){ 0 };
	}
	writer.nlanes = 0;
}

static int lane_open(struct lane *l, const char *db_path)
{
	int rc;

	if ((rc = store_open(&l->st, db_path)) < 0)
		return rc;
	if (!(l->prev = ingest_cache_new()))
		return kiln_fail(KILN_ERROR, "ingest: out of memory");
	/* No checkpoint inside a commit of the writer: it runs one between batches. */
	store_wal_frames_watch(l->st, &l->wal_frames);
	return 0;
}

int ingest_writer_start(const char *db_path, size_t queue_max)
{
	size_t lanes = store_target_is_pg(db_path) ? INGEST_LANES_PG : 1;
	int rc = 0;

	pthread_mutex_lock(&writer.lock);
	if (writer.running || writer.nlanes) {
		pthread_mutex_unlock(&writer.lock);
		return kiln_fail(KILN_EBUSY, "ingest: the writer runs already");
	}
	writer.nlanes = lanes;
	writer.queued = writer.bytes = 0;
	writer.max = queue_max ? queue_max : INGEST_QUEUE_MAX;
	writer.bytes_max = INGEST_QUEUE_BYTES_MAX;
	writer.stopping = 0;
	writer.last_prune = 0;
	for (size_t i = 0; i < lanes; i++) {
		writer.lanes[i].index = (int)i;
		writer.lanes[i].tail = &writer.lanes[i].head;
		pthread_cond_init(&writer.lanes[i].wake, NULL);
	}
	pthread_mutex_unlock(&writer.lock);
	for (size_t i = 0; rc == 0 && i < lanes; i++)
		rc = lane_open(&writer.lanes[i], db_path);
	for (size_t i = 0; rc == 0 && i < lanes; i++) {
		struct lane *l = &writer.lanes[i];

		if (pthread_create(&l->thread, NULL, lane_main, l) != 0)
			rc = kiln_fail(KILN_ERROR, "ingest: cannot start a writer thread");
		else
			l->started = 1;
	}
	if (rc < 0) {
		char msg[512];

		snprintf(msg, sizeof(msg), "%s", kiln_error_last());
		lanes_end();
		return kiln_fail(rc, "%s", msg);
	}
	pthread_mutex_lock(&writer.lock);
	writer.running = 1;
	pthread_mutex_unlock(&writer.lock);
	return 0;
}

void ingest_writer_stop(void)
{
	pthread_mutex_lock(&writer.lock);
	if (!writer.running) {
		pthread_mutex_unlock(&writer.lock);
		return;
	}
	writer.running = 0;
	pthread_mutex_unlock(&writer.lock);
	lanes_end();
}

void ingest_writer_bytes_max_set(size_t bytes_max)
{
	pthread_mutex_lock(&writer.lock);
	writer.bytes_max = bytes_max ? bytes_max : INGEST_QUEUE_BYTES_MAX;
	pthread_mutex_unlock(&writer.lock);
}

/* Refuses an item when the queue is full (the lock held; released on refusal). */
static int queue_full(const struct ingest_item *item)
{
	size_t waiting = writer.queued, bytes = writer.bytes, max = writer.max;

	if (writer.queued < writer.max &&
	    (writer.queued == 0 || (writer.bytes < writer.bytes_max &&
				    item->bytes <= writer.bytes_max - writer.bytes)))
		return 0;
	pthread_mutex_unlock(&writer.lock);
	metrics_ingest_count(METRICS_INGEST_QUEUE_FULL);
	receive_gap_mark(time(NULL));
	if (waiting >= max)
		return kiln_fail(KILN_EBUSY, "ingest: %zu reports wait to be stored already; "
				 "try again", waiting);
	return kiln_fail(KILN_EBUSY, "ingest: reports of %zu bytes wait to be stored already; "
			 "try again", bytes);
}

int ingest_enqueue(struct ingest_item *item, void (*queued)(void *arg), ingest_done_fn done,
		   void *arg)
{
	struct lane *l;
	int rc;

	pthread_mutex_lock(&writer.lock);
	if (!writer.running) {
		pthread_mutex_unlock(&writer.lock);
		return kiln_fail(KILN_ENOTFOUND, "ingest: no writer runs");
	}
	if ((rc = queue_full(item)) < 0)
		return rc;
	/* a node's reports keep one lane: stored in the order they came */
	l = &writer.lanes[(uint64_t)item->node_id % writer.nlanes];
	item->next = NULL;
	item->done_fn = done;
	item->done_arg = arg;
	if (queued)
		queued(arg);
	*l->tail = item;
	l->tail = &item->next;
	writer.bytes += item->bytes;
	writer.queued++;
	if (l->head == item)
		pthread_cond_signal(&l->wake);
	metrics_ingest_queue_set((int64_t)writer.queued);
	pthread_mutex_unlock(&writer.lock);
	return 0;
}
