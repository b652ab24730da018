/* SPDX-License-Identifier: Apache-2.0 */
/* Raw deflate blocks that end on a byte boundary, and answers written from them: byte-aligned
 * raw deflate data concatenates into one deflate stream (RFC 1951), so a gzip answer is its
 * header, the stored blocks as they are, an empty final block and the trailer, whose crc32 is
 * the blocks' combined; a plain answer inflates them one after another. */
#include <stdint.h>
#include <string.h>

#include "kiln/error.h"
#include "metrics/zblock.h"

/* Pieces are small (a family's lines of one node): memLevel 4 keeps deflateReset's clearing
 * of the hash table to 4 KB. Fixed Huffman codes: a piece of a kilobyte or two comes out
 * about 7 % larger than with codes of its own, and inflates twice as fast, with no table to
 * build for each piece (a plain answer of 10,000 nodes inflates 250,000 of them). */
#define PIECE_LEVEL 1
#define PIECE_MEMLEVEL 4
#define PIECE_STRATEGY Z_FIXED
/* Text made at scrape time is compressed in runs of about this much. */
#define PENDING_MAX (64 * 1024)

int zblock_writer_init(struct zblock_writer *w)
{
	memset(w, 0, sizeof(*w));
	if (deflateInit2(&w->z, PIECE_LEVEL, Z_DEFLATED, -15, PIECE_MEMLEVEL, PIECE_STRATEGY) !=
	    Z_OK)
		return kiln_fail(KILN_ERROR, "metrics: zlib: deflateInit2 failed");
	w->ready = 1;
	return 0;
}

void zblock_writer_free(struct zblock_writer *w)
{
	if (w && w->ready)
		deflateEnd(&w->z);
	if (w)
		w->ready = 0;
}

/* Compresses text[0..len) with z (reset or continuing) onto the end of buf, ended with a
 * sync flush; *out_zlen: the bytes added. */
static int deflate_onto(z_stream *z, struct kiln_buf *buf, size_t *out_zlen, const char *text,
			size_t len)
{
	size_t bound = deflateBound(z, len) + 16;
	int rc, zr;

	if ((rc = kiln_buf_reserve(buf, bound)) < 0)
		return rc;
	z->next_in = (Bytef *)(uintptr_t)text;
	z->avail_in = (uInt)len;
	z->next_out = (Bytef *)buf->data + buf->len;
	z->avail_out = (uInt)bound;
	zr = deflate(z, Z_SYNC_FLUSH);
	if (zr != Z_OK || z->avail_in != 0 || z->avail_out == 0)
		return kiln_fail(KILN_ERROR, "metrics: zlib: deflate failed (%d)", zr);
	*out_zlen = bound - z->avail_out;
	buf->len += *out_zlen;
	buf->data[buf->len] = '\0';
	return 0;
}

int zblock_deflate(struct zblock_writer *w, struct kiln_buf *buf, struct zblock *out,
		   const char *text, size_t len)
{
	struct zblock b = { 0 };
	size_t zlen;
	int rc;

	if (len == 0) {
		*out = b;
		return 0;
	}
	/* offsets and lengths are 32 bits: far beyond a node's text */
	if (len > UINT32_MAX / 2 || buf->len > UINT32_MAX / 2)
		return kiln_fail(KILN_ETOOBIG, "metrics: a block past 2 GB");
	if (deflateReset(&w->z) != Z_OK)
		return kiln_fail(KILN_ERROR, "metrics: zlib: deflateReset failed");
	b.off = (uint32_t)buf->len;
	if ((rc = deflate_onto(&w->z, buf, &zlen, text, len)) < 0)
		return rc;
	b.zlen = (uint32_t)zlen;
	b.len = (uint32_t)len;
	b.crc = (uint32_t)crc32(0, (const Bytef *)text, (uInt)len);
	*out = b;
	return 0;
}

static int put_le32(struct kiln_buf *b, uint32_t v)
{
	unsigned char x[4] = { v & 0xff, (v >> 8) & 0xff, (v >> 16) & 0xff, v >> 24 };

	return kiln_buf_append(b, x, sizeof(x));
}

int zanswer_init(struct zanswer *a, int gzip, struct kiln_buf *out)
{
	/* magic, deflate, no flags, no time, no extra flags, Unix */
	static const unsigned char head[10] = { 0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3 };

	memset(a, 0, sizeof(*a));
	a->gzip = gzip;
	a->out = out;
	kiln_buf_init(&a->pending, 0);
	if (gzip) {
		if (deflateInit2(&a->d, 1, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
			return kiln_fail(KILN_ERROR, "metrics: zlib: deflateInit2 failed");
		a->d_ready = 1;
		a->d_follows = 1;
		return kiln_buf_append(out, head, sizeof(head));
	}
	if (inflateInit2(&a->i, -15) != Z_OK)
		return kiln_fail(KILN_ERROR, "metrics: zlib: inflateInit2 failed");
	a->i_ready = 1;
	return 0;
}

void zanswer_free(struct zanswer *a)
{
	if (!a)
		return;
	if (a->d_ready)
		deflateEnd(&a->d);
	if (a->i_ready)
		inflateEnd(&a->i);
	a->d_ready = a->i_ready = 0;
	kiln_buf_free(&a->pending);
}

int zanswer_flush(struct zanswer *a)
{
	size_t zlen;
	int rc;

	if (!a->gzip || a->pending.len == 0)
		return 0;
	/* a block came after the text d last saw: d's history is no longer what precedes */
	if (!a->d_follows && deflateReset(&a->d) != Z_OK)
		return kiln_fail(KILN_ERROR, "metrics: zlib: deflateReset failed");
	if ((rc = deflate_onto(&a->d, a->out, &zlen, a->pending.data, a->pending.len)) < 0)
		return rc;
	a->d_follows = 1;
	a->crc = (uint32_t)crc32(a->crc, (const Bytef *)a->pending.data, (uInt)a->pending.len);
	a->total += (uint32_t)a->pending.len;
	kiln_buf_reset(&a->pending);
	return 0;
}

int zanswer_text(struct zanswer *a, const char *text, size_t len)
{
	int rc;

	if (len == 0)
		return 0;
	if (!a->gzip)
		return kiln_buf_append(a->out, text, len);
	if ((rc = kiln_buf_append(&a->pending, text, len)) < 0)
		return rc;
	return a->pending.len >= PENDING_MAX ? zanswer_flush(a) : 0;
}

int zanswer_block(struct zanswer *a, const struct zblock *b, const unsigned char *base)
{
	int rc, zr;

	if (b->len == 0)
		return 0;
	if ((rc = zanswer_flush(a)) < 0)
		return rc;
	if (a->gzip) {
		if ((rc = kiln_buf_append(a->out, base + b->off, b->zlen)) < 0)
			return rc;
		a->crc = (uint32_t)crc32_combine(a->crc, b->crc, (z_off_t)b->len);
		a->total += b->len;
		a->d_follows = 0;
		return 0;
	}
	if ((rc = kiln_buf_reserve(a->out, (size_t)b->len + 1)) < 0)
		return rc;
	a->i.next_in = (Bytef *)(uintptr_t)(base + b->off);
	a->i.avail_in = b->zlen;
	a->i.next_out = (Bytef *)a->out->data + a->out->len;
	a->i.avail_out = b->len + 1;
	zr = inflate(&a->i, Z_SYNC_FLUSH);
	if ((zr != Z_OK && zr != Z_BUF_ERROR) || a->i.avail_in != 0 || a->i.avail_out != 1)
		return kiln_fail(KILN_ERROR, "metrics: zlib: a block does not inflate (%d)", zr);
	a->out->len += b->len;
	a->out->data[a->out->len] = '\0';
	return 0;
}

int zanswer_finish(struct zanswer *a)
{
	/* what deflate(Z_FINISH) of nothing gives: a final fixed-Huffman block, empty */
	static const unsigned char last[2] = { 0x03, 0x00 };
	int rc;

	if ((rc = zanswer_flush(a)) < 0 || !a->gzip)
		return rc;
	if ((rc = kiln_buf_append(a->out, last, sizeof(last))) < 0 ||
	    (rc = put_le32(a->out, a->crc)) < 0)
		return rc;
	return put_le32(a->out, a->total);
}
