/* SPDX-License-Identifier: Apache-2.0 */
/* Growable byte buffer with a hard cap, for anything fed by the network. */
#ifndef KILN_BUF_H
#define KILN_BUF_H

#include <stddef.h>
#include <string.h>

struct kiln_buf {
	char *data;  /* always NUL-terminated when non-NULL */
	size_t len;  /* bytes used, not counting the NUL */
	size_t cap;  /* bytes allocated */
	size_t max;  /* hard cap on len; 0 means no cap */
};

/* Initialises an empty buffer that refuses to grow past max bytes (0: no cap). */
void kiln_buf_init(struct kiln_buf *b, size_t max);

/* Makes room for n more bytes (and the NUL) without changing len, so that a writer can fill
 * data + len in place and then add to len. KILN_ETOOBIG past the cap, KILN_ERROR on ENOMEM. */
int kiln_buf_reserve(struct kiln_buf *b, size_t n);

/* kiln_buf_append when the bytes do not fit in what is allocated (or the cap is near). */
int kiln_buf_append_grow(struct kiln_buf *b, const void *p, size_t n);

/* Appends n bytes. Returns KILN_ETOOBIG past the cap (buffer unchanged), KILN_ERROR on ENOMEM.
 * Inline: writers of many small pieces (the status rows) copy in place while they fit. */
static inline int kiln_buf_append(struct kiln_buf *b, const void *p, size_t n)
{
	if (b->data && b->cap - b->len > n && (b->max == 0 || n <= b->max - b->len)) {
		memcpy(b->data + b->len, p, n);
		b->len += n;
		b->data[b->len] = '\0';
		return 0;
	}
	return kiln_buf_append_grow(b, p, n);
}
int kiln_buf_puts(struct kiln_buf *b, const char *s);
int kiln_buf_printf(struct kiln_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

void kiln_buf_reset(struct kiln_buf *b);

/* Hands the data (NUL-terminated, possibly NULL when empty) to the caller, who frees it. */
char *kiln_buf_steal(struct kiln_buf *b);

/* Frees the data; accepts a zeroed buffer. */
void kiln_buf_free(struct kiln_buf *b);

#endif
