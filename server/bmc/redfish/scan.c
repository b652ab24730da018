/* A JSON syntax check and a top-level string lookup without building a tree: a power read's
 * one field out of a 2 kB System resource (jansson took a quarter of the loop thread). */
#include <string.h>

#include "bmc/redfish/internal.h"

#define SCAN_DEPTH 64
#define SCAN_DIGITS 15

struct scan {
	const char *p, *end;
	int depth;
};

static void ws(struct scan *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
		s->p++;
}

/* A string whose escapes are the simple ones: jansson decides everything else (\u, which
 * may be a NUL or a lone surrogate, and any byte over 0x7f, which must be valid UTF-8). */
static int str(struct scan *s)
{
	if (s->p >= s->end || *s->p != '"')
		return 0;
	for (s->p++; s->p < s->end; s->p++) {
		unsigned char c = (unsigned char)*s->p;
		if (c == '"') {
			s->p++;
			return 1;
		}
		if (c < 0x20 || c > 0x7e)
			return 0;
		if (c == '\\') {
			if (++s->p >= s->end || !strchr("\"\\/bfnrt", *s->p) || !*s->p)
				return 0;
		}
	}
	return 0;
}

static int digits(struct scan *s, int *n)
{
	const char *start = s->p;
	while (s->p < s->end && *s->p >= '0' && *s->p <= '9')
		s->p++;
	*n += (int)(s->p - start);
	return s->p > start;
}

/* Numbers that jansson reads without overflow: no exponent, at most 15 digits. */
static int num(struct scan *s)
{
	int n = 0;
	if (s->p < s->end && *s->p == '-')
		s->p++;
	if (s->p < s->end && *s->p == '0')
		s->p++, n++;
	else if (!digits(s, &n))
		return 0;
	if (s->p < s->end && *s->p == '.') {
		s->p++;
		if (!digits(s, &n))
			return 0;
	}
	if (s->p < s->end && (*s->p == 'e' || *s->p == 'E'))
		return 0;
	return n <= SCAN_DIGITS;
}

static int lit(struct scan *s, const char *word)
{
	size_t n = strlen(word);
	if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n) != 0)
		return 0;
	s->p += n;
	return 1;
}

static int value(struct scan *s);

static int container(struct scan *s, char close, int object)
{
	if (++s->depth > SCAN_DEPTH)
		return 0;
	s->p++;
	ws(s);
	if (s->p < s->end && *s->p == close) {
		s->p++;
		s->depth--;
		return 1;
	}
	for (;;) {
		if (object) {
			if (!str(s))
				return 0;
			ws(s);
			if (s->p >= s->end || *s->p != ':')
				return 0;
			s->p++;
		}
		if (!value(s))
			return 0;
		ws(s);
		if (s->p < s->end && *s->p == ',') {
			s->p++;
			ws(s);
			continue;
		}
		if (s->p < s->end && *s->p == close) {
			s->p++;
			s->depth--;
			return 1;
		}
		return 0;
	}
}

static int value(struct scan *s)
{
	ws(s);
	if (s->p >= s->end)
		return 0;
	switch (*s->p) {
	case '{': return container(s, '}', 1);
	case '[': return container(s, ']', 0);
	case '"': return str(s);
	case 't': return lit(s, "true");
	case 'f': return lit(s, "false");
	case 'n': return lit(s, "null");
	default: return num(s);
	}
}

int rf_json_plain_object(const char *body, size_t len)
{
	struct scan s = {.p = body, .end = body + len};
	ws(&s);
	if (s.p >= s.end || *s.p != '{' || !value(&s))
		return 0;
	ws(&s);
	return s.p == s.end;
}

int rf_json_top_string(const char *body, size_t len, const char *key, char *out, size_t n)
{
	struct scan s = {.p = body, .end = body + len};
	size_t klen = strlen(key);
	int found = 0;

	ws(&s);
	if (s.p >= s.end || *s.p != '{')
		return -1;
	s.p++;
	ws(&s);
	while (s.p < s.end && *s.p == '"') {
		const char *k = s.p + 1;
		if (!str(&s))
			return -1;
		int match = (size_t)(s.p - 1 - k) == klen && memcmp(k, key, klen) == 0;
		ws(&s);
		if (s.p >= s.end || *s.p != ':')
			return -1;
		s.p++;
		ws(&s);
		const char *v = s.p;
		if (!value(&s))
			return -1;
		if (match) { /* the last one counts, as in jansson */
			found = 0;
			if (*v == '"') {
				size_t vlen = (size_t)(s.p - v) - 2;
				if (memchr(v + 1, '\\', vlen) || vlen >= n)
					return -1; /* let jansson decode it */
				memcpy(out, v + 1, vlen);
				out[vlen] = '\0';
				found = 1;
			}
		}
		ws(&s);
		if (s.p < s.end && *s.p == ',') {
			s.p++;
			ws(&s);
		}
	}
	return found;
}
