/* SPDX-License-Identifier: Apache-2.0 */
/* Growable byte buffer with a hard cap. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/buf.h"
#include "kiln/error.h"

void kiln_buf_init(struct kiln_buf *b, size_t max)
{
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	b->max = max;
}

static int grow(struct kiln_buf *b, size_t extra)
{
	size_t need, ncap;
	char *p;

	if (b->max && (extra > b->max || b->len > b->max - extra))
		return kiln_fail(KILN_ETOOBIG, "data exceeds the %zu-byte limit", b->max);
	need = b->len + extra + 1;
	if (need <= b->cap)
		return 0;
	ncap = b->cap ? b->cap : 256;
	while (ncap < need)
		ncap *= 2;
	p = realloc(b->data, ncap);
	if (!p)
		return kiln_fail(KILN_ERROR, "out of memory");
	b->data = p;
	b->cap = ncap;
	return 0;
}

int kiln_buf_reserve(struct kiln_buf *b, size_t n)
{
	return grow(b, n);
}

int kiln_buf_append_grow(struct kiln_buf *b, const void *p, size_t n)
{
	int rc = grow(b, n);

	if (rc < 0)
		return rc;
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

int kiln_buf_puts(struct kiln_buf *b, const char *s)
{
	return kiln_buf_append(b, s, strlen(s));
}

int kiln_buf_printf(struct kiln_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n, rc;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return kiln_fail(KILN_ERROR, "bad format");
	if ((rc = grow(b, (size_t)n)) < 0)
		return rc;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

void kiln_buf_reset(struct kiln_buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

char *kiln_buf_steal(struct kiln_buf *b)
{
	char *p = b->data;

	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	return p;
}

void kiln_buf_free(struct kiln_buf *b)
{
	if (!b)
		return;
	free(b->data);
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
}
