/* SPDX-License-Identifier: Apache-2.0 */
/* Untrusted text (from agents, BMCs, the network) made harmless for a terminal or a log. */
#ifndef KILN_ESCAPE_H
#define KILN_ESCAPE_H

#include <stddef.h>
#include <stdint.h>

enum {
	KILN_ESC_QUOTE = 1, /* also '"' and '\\' (text quoted in a log line) */
};

/*
 * Copies s into out (outlen bytes, always NUL-terminated; cut before an escape that would
 * not fit) with what could steer a terminal or forge a line made visible: C0 controls and
 * DEL as \xNN, each byte of invalid UTF-8 (stray continuation, overlong, surrogate, past
 * U+10FFFF, cut short) as \xNN, and as \uXXXX the C1 controls U+0080-U+009F (U+009B is a
 * CSI), the bidi embeddings, overrides and isolates U+202A-U+202E and U+2066-U+2069, the
 * marks U+061C, U+200E, U+200F and the separators U+2028, U+2029. Everything else, valid
 * UTF-8 included, is kept. s NULL is "(null)". Returns out.
 */
char *kiln_escape(char *out, size_t outlen, const char *s, int flags);

/* The same into a malloc'd string the caller frees (never cut); NULL when out of memory. */
char *kiln_escape_dup(const char *s, int flags);

/* Length (1-4) of the valid UTF-8 sequence at p with its code point in *cp, or 0 when the
 * bytes there are not one (a stray continuation, overlong, a surrogate, past U+10FFFF, cut
 * short: a NUL ends it too). */
size_t kiln_utf8_seq(const unsigned char *p, uint32_t *cp);

#endif
