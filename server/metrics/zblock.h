/* SPDX-License-Identifier: Apache-2.0 */
/* Text kept as raw deflate blocks that end on a byte boundary, and an answer (plain or gzip)
 * written from such blocks and from text made on the spot. */
#ifndef KILND_METRICS_ZBLOCK_H
#define KILND_METRICS_ZBLOCK_H

#include <stddef.h>
#include <stdint.h>

#include <zlib.h>

#include "kiln/buf.h"

/*
 * One piece of text, compressed alone (no reference to what comes before it) and ended with
 * a sync flush: such pieces laid end to end, in any order, are one valid deflate stream. The
 * bytes live in a buffer of the caller's, at off.
 */
struct zblock {
	uint32_t off;   /* where its bytes start in the owner's buffer */
	uint32_t zlen;  /* compressed bytes */
	uint32_t len;   /* the text's bytes (0: an empty piece, nothing stored) */
	uint32_t crc;   /* the text's crc32 */
};

/* Compresses pieces, one after another, with one zlib stream. */
struct zblock_writer {
	z_stream z;
	int ready;
};

int zblock_writer_init(struct zblock_writer *w);
void zblock_writer_free(struct zblock_writer *w); /* accepts a zeroed one */

/* Compresses text[0..len) onto the end of buf; *out says where. Empty text stores nothing.
 * Returns 0, or a negative code with the message set (buf may have grown). */
int zblock_deflate(struct zblock_writer *w, struct kiln_buf *buf, struct zblock *out,
		   const char *text, size_t len);

/*
 * An answer: its bytes are added to out, gzip (RFC 1952: a header, the blocks and the text
 * compressed between them, an empty final block, the crc32 and length of the whole text) or
 * plain (the blocks inflated). Text is held until a block or the end needs it written.
 */
struct zanswer {
	int gzip;
	struct kiln_buf *out;
	struct kiln_buf pending;   /* text not yet written */
	z_stream d, i;             /* gzip: the text's compressor; plain: the blocks' inflater */
	int d_ready, i_ready;
	int d_follows;             /* no block since d last compressed: its history is what
				    * precedes, so it goes on without a reset */
	uint32_t crc;              /* of the text so far */
	uint32_t total;            /* its length, mod 2^32 */
};

int zanswer_init(struct zanswer *a, int gzip, struct kiln_buf *out);
void zanswer_free(struct zanswer *a); /* accepts a zeroed one */
int zanswer_text(struct zanswer *a, const char *text, size_t len);
/* Block b whose bytes are at base + b->off. */
int zanswer_block(struct zanswer *a, const struct zblock *b, const unsigned char *base);
/* Writes what is pending (text bigger than this is flushed by zanswer_text on its own). */
int zanswer_flush(struct zanswer *a);
/* Flushes and ends the answer (gzip: final block and trailer). */
int zanswer_finish(struct zanswer *a);

#endif
