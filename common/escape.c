/* SPDX-License-Identifier: Apache-2.0 */
/* kiln_escape: one escaping of untrusted text for every terminal cell and log line. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/escape.h"

/* The longest escape ("\uXXXX" or "\xNN") a character can take. */
#define ESC_MAX 6

size_t kiln_utf8_seq(const unsigned char *p, uint32_t *cp)
{
	size_t n;
	uint32_t c, min;

	if (p[0] < 0x80) {
		*cp = p[0];
		return 1;
	}
	if (p[0] >= 0xC2 && p[0] <= 0xDF) {
		n = 2, c = p[0] & 0x1F, min = 0x80;
	} else if (p[0] >= 0xE0 && p[0] <= 0xEF) {
		n = 3, c = p[0] & 0x0F, min = 0x800;
	} else if (p[0] >= 0xF0 && p[0] <= 0xF4) {
		n = 4, c = p[0] & 0x07, min = 0x10000;
	} else {
		return 0; /* a continuation byte, or a lead byte that is always overlong or too big */
	}
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xC0) != 0x80)
			return 0; /* cut short (the NUL ends it too) */
		c = c << 6 | (p[i] & 0x3F);
	}
	if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
		return 0;
	*cp = c;
	return n;
}

/* A code point that steers a terminal or reorders what is shown. */
static int cp_hostile(uint32_t c)
{
	return c < 0x20 || c == 0x7F || (c >= 0x80 && c <= 0x9F) || c == 0x061C || c == 0x200E ||
	       c == 0x200F || c == 0x2028 || c == 0x2029 || (c >= 0x202A && c <= 0x202E) ||
	       (c >= 0x2066 && c <= 0x2069);
}

/* Writes s escaped to out when out is not NULL (at most outlen - 1 bytes); returns the length
 * the whole of it takes, escaped. */
static size_t escape_into(char *out, size_t outlen, const char *s, int flags)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "(null)");
	size_t o = 0;

	while (*p) {
		char esc[ESC_MAX + 1];
		const char *piece = (const char *)p;
		uint32_t cp = 0;
		size_t n = kiln_utf8_seq(p, &cp), len = n;

		if (n == 0) {
			len = (size_t)snprintf(esc, sizeof(esc), "\\x%02x", p[0]);
			piece = esc;
			n = 1;
		} else if (cp < 0x80 && (cp_hostile(cp) || ((flags & KILN_ESC_QUOTE) &&
							   (cp == '"' || cp == '\\')))) {
			len = (size_t)snprintf(esc, sizeof(esc), "\\x%02x", (unsigned)cp);
			piece = esc;
		} else if (cp_hostile(cp)) {
			len = (size_t)snprintf(esc, sizeof(esc), "\\u%04x", (unsigned)cp);
			piece = esc;
		}
		if (out) {
			if (o + len >= outlen)
				break; /* cut at a whole character or escape */
			memcpy(out + o, piece, len);
		}
		o += len;
		p += n;
	}
	if (out)
		out[o] = '\0';
	return o;
}

char *kiln_escape(char *out, size_t outlen, const char *s, int flags)
{
	if (outlen == 0)
		return out;
	escape_into(out, outlen, s, flags);
	return out;
}

char *kiln_escape_dup(const char *s, int flags)
{
	size_t len = escape_into(NULL, 0, s, flags);
	char *out = malloc(len + 1);

	if (out)
		escape_into(out, len + 1, s, flags);
	return out;
}
