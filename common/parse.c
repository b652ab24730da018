/* SPDX-License-Identifier: Apache-2.0 */
/* Safe parsers for numbers, durations and booleans. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "kiln/error.h"
#include "kiln/parse.h"

/* A number starts with a digit, or a sign and then a digit. */
static int number_start(const char *s)
{
	if (*s == '-' || *s == '+')
		s++;
	return *s >= '0' && *s <= '9';
}

int kiln_parse_int64(int64_t *out, const char *s, int64_t min, int64_t max)
{
	char *end = NULL;
	long long v;

	if (!s || !*s)
		return kiln_fail(KILN_EINVAL, "empty number");
	/* strtoll would skip any leading white space: accept only a sign or a digit first */
	if (!number_start(s))
		return kiln_fail(KILN_EINVAL, "'%s' is not a whole number", s);
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno == ERANGE || *end != '\0' || end == s)
		return kiln_fail(KILN_EINVAL, "'%s' is not a whole number", s);
	if (v < min || v > max)
		return kiln_fail(KILN_EINVAL, "%lld is out of range [%lld, %lld]", v, (long long)min,
				 (long long)max);
	*out = v;
	return 0;
}

int kiln_parse_int(int *out, const char *s, int min, int max)
{
	int64_t v = 0; /* -O3 cannot see that rc < 0 leaves it unread */
	int rc = kiln_parse_int64(&v, s, min, max);

	if (rc < 0)
		return rc;
	*out = (int)v;
	return 0;
}

int kiln_parse_double(double *out, const char *s, double min, double max)
{
	char *end = NULL;
	double v;

	if (!s || !*s)
		return kiln_fail(KILN_EINVAL, "empty number");
	if (!number_start(s) && s[0] != '.')
		return kiln_fail(KILN_EINVAL, "'%s' is not a number", s);
	errno = 0;
	v = strtod(s, &end);
	if (errno == ERANGE || *end != '\0' || end == s || !isfinite(v))
		return kiln_fail(KILN_EINVAL, "'%s' is not a number", s);
	if (v < min || v > max)
		return kiln_fail(KILN_EINVAL, "%g is out of range [%g, %g]", v, min, max);
	*out = v;
	return 0;
}

/* A duration in milliseconds; "ms" is a unit only when allow_ms. */
static int duration_ms(int64_t *out_ms, const char *s, int allow_ms)
{
	int64_t total = 0;
	const char *p = s;

	if (!s || !*s)
		return kiln_fail(KILN_EINVAL, "empty duration");
	while (*p) {
		int64_t v = 0, mult;
		const char *start = p;

		while (*p >= '0' && *p <= '9') {
			if (v > (INT64_MAX - 9) / 10)
				return kiln_fail(KILN_EINVAL, "duration '%s' is too large", s);
			v = v * 10 + (*p - '0');
			p++;
		}
		if (p == start)
			return kiln_fail(KILN_EINVAL, "duration '%s': expected a number at position %zu", s,
					 (size_t)(p - s) + 1);
		switch (*p) {
		case '\0': mult = 1000; break;
		case 's': mult = 1000; p++; break;
		case 'm':
			if (allow_ms && p[1] == 's') {
				mult = 1;
				p += 2;
			} else {
				mult = 60 * 1000;
				p++;
			}
			break;
		case 'h': mult = 3600 * 1000; p++; break;
		case 'd': mult = 86400 * 1000; p++; break;
		case 'w': mult = 7 * 86400 * 1000LL; p++; break;
		default:
			return kiln_fail(KILN_EINVAL, "duration '%s': unknown unit '%c' (use %ss, m, h, d, w)",
					 s, *p, allow_ms ? "ms, " : "");
		}
		if (v > (INT64_MAX - total) / mult)
			return kiln_fail(KILN_EINVAL, "duration '%s' is too large", s);
		total += v * mult;
	}
	*out_ms = total;
	return 0;
}

int kiln_parse_duration(int64_t *out_seconds, const char *s)
{
	int64_t ms;
	int rc = duration_ms(&ms, s, 0);

	if (rc == 0)
		*out_seconds = ms / 1000;
	return rc;
}

int kiln_parse_duration_ms(int64_t *out_ms, const char *s)
{
	return duration_ms(out_ms, s, 1);
}

int kiln_parse_bool(bool *out, const char *s)
{
	static const char *const yes[] = { "1", "yes", "true", "on" };
	static const char *const no[] = { "0", "no", "false", "off" };

	for (size_t i = 0; s && i < 4; i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return kiln_fail(KILN_EINVAL, "'%s' is not a boolean (yes/no, true/false, on/off, 1/0)",
			 s ? s : "");
}

size_t kiln_strlcpy(char *dst, const char *src, size_t n)
{
	size_t len = strlen(src);

	if (n) {
		size_t c = len < n - 1 ? len : n - 1;
		memcpy(dst, src, c);
		dst[c] = '\0';
	}
	return len;
}

void kiln_time_utc(char out[KILN_TIME_UTC_LEN], int64_t t)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (!gmtime_r(&tt, &tm) || strftime(out, KILN_TIME_UTC_LEN, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(out, KILN_TIME_UTC_LEN, "%lld", (long long)t);
}
