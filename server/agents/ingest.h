/* SPDX-License-Identifier: Apache-2.0 */
/* Agent reports into the store: validation, de-duplication, latest state, history, events. */
#ifndef KILND_INGEST_H
#define KILND_INGEST_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "store/store.h"

#define INGEST_REPORT_MAX (1024 * 1024) /* bytes of a report as stored (compact JSON) */
#define INGEST_GPUS_MAX 64
#define INGEST_XIDS_MAX 1024
#define INGEST_LIST_MAX 4096            /* other arrays: disks, toolkits, ... */
#define INGEST_STRING_MAX 1024
#define INGEST_BATCH_MAX 256            /* reports committed together at most */
#define INGEST_QUEUE_MAX 1024           /* reports waiting for the writer at most */
#define INGEST_LANES_MAX 8              /* writer threads at most (RECEIVE_GAP_LANES) */
#define INGEST_LANES_PG 4               /* writer threads on PostgreSQL (SQLite: one) */
#define INGEST_QUEUE_BYTES_MAX (64 * 1024 * 1024) /* and the memory they hold (item.bytes) */
#define INGEST_RETENTION_DEFAULT_S (30 * 86400)
#define INGEST_FIELD_MAX 96
#define INGEST_REJECTED_MAX 64          /* fields a report's rejected_fields lists at most */

struct ingest_report; /* a validated report */

/*
 * Validates a report (schema, report_id, host, nvidia, gpus, xid_events, types and sizes)
 * and keeps a reference to it. A leaf field out of its range, of the wrong type or not of
 * its version pattern is set to null and listed in the report's "rejected_fields" (what
 * gets stored); only a report without its shape is refused. On failure returns KILN_EINVAL (KILN_ETOOBIG when too big)
 * with a message naming the field, and copies the field's path ("gpus[2].index") into
 * field (may be NULL). The caller frees *out with ingest_report_free.
 */
int ingest_report_parse(struct ingest_report **out, json_t *report, char *field,
			size_t fieldlen);
/*
 * The same for a report parsed from text (textlen bytes, e.g. a request body): that text,
 * JSON whitespace around it trimmed, is what gets stored, instead of a dump of report.
 * text NULL: dumped, as ingest_report_parse does.
 */
int ingest_report_parse_text(struct ingest_report **out, json_t *report, const char *text,
			     size_t textlen, char *field, size_t fieldlen);
void ingest_report_free(struct ingest_report *r);
/* The report's id (borrowed from the report). */
const char *ingest_report_id(const struct ingest_report *r);
/* The paths of the fields refused (stored as null): an array borrowed from the report, or
 * NULL when every field was taken. */
json_t *ingest_report_rejected(const struct ingest_report *r);

/*
 * Stores one report for node_id: a report whose host identity is not the node's
 * (identity.h) is refused with KILN_EIDENTITY, storing nothing of it but the refusal (one
 * critical event per distinct mismatch); then records its id (a known id sets
 * *out_duplicate = 1 and changes nothing else), updates the node's latest state and GPUs when the report is not
 * older than the stored one, adds a history row and turns changes into events. Atomic
 * (a savepoint), inside or outside store_begin().
 */
int ingest_report_store(struct store *st, int *out_duplicate, int64_t node_id,
			const struct ingest_report *r);

struct ingest_item;

/* Called on the writer's thread once an item's result is set; the writer does not touch the
 * item afterwards. */
typedef void (*ingest_done_fn)(struct ingest_item *item, void *arg);

/* One report waiting to be committed with others. */
struct ingest_item {
	int64_t node_id;
	const struct ingest_report *report;
	int64_t token_touch;       /* an agent token id whose use to record, or 0 */
	size_t bytes;              /* memory the waiting item holds (body, copies, tree): counted
				    * against the writer's byte cap while it waits */
	/* results */
	int rc;                    /* KILN_EIDENTITY: refused, the host is not the node's */
	int duplicate;
	char error[512];
	char field[INGEST_FIELD_MAX]; /* the field a refusal names ("host.machine_id"), or "" */
	/* the writer's queue (ingest_enqueue) */
	struct ingest_item *next;
	ingest_done_fn done_fn;
	void *done_arg;
};

/*
 * Stores items[0..n) (n at most INGEST_BATCH_MAX) in one transaction; each item gets its
 * own result (a failing item is rolled back alone). When the commit fails every item fails.
 * Returns the commit's result.
 */
int ingest_batch(struct store *st, struct ingest_item **items, size_t n);

/*
 * The ingest writer: threads with their own store handle on db_path (one on SQLite,
 * INGEST_LANES_PG on PostgreSQL, a node's reports always to the same one) that each commit
 * what is queued for it in one transaction (one fsync) and then report each item's result.
 * Started once per process; stop commits what is queued, answers it and joins the threads.
 */
int ingest_writer_start(const char *db_path, size_t queue_max);
/* The running writer's cap on the bytes of waiting items (item.bytes summed; default
 * INGEST_QUEUE_BYTES_MAX, 0 restores it). An item is refused when it would pass the cap
 * and others wait; one alone is always taken. */
void ingest_writer_bytes_max_set(size_t bytes_max);
void ingest_writer_stop(void);

/*
 * Queues item for the writer. On success queued(arg) runs first, under the queue's lock and
 * before the writer can see the item (it may be NULL), and done(item, arg) later on the
 * writer's thread, after the commit (or its failure: item->rc, item->error). Returns 0,
 * KILN_EBUSY when queue_max items wait already or item->bytes would pass the byte cap,
 * KILN_ENOTFOUND when no writer runs (kilnd is stopping); neither callback runs on failure.
 */
int ingest_enqueue(struct ingest_item *item, void (*queued)(void *arg), ingest_done_fn done,
		   void *arg);

/* History (and report ids) kept this long; 0 keeps them for ever. Default 30 days. */
void ingest_retention_set(int64_t seconds);
int64_t ingest_retention_get(void);

/* Deletes history rows and report ids older than the retention (in bounded batches). */
int ingest_prune(struct store *st, int *out_deleted);

#endif
