/* SPDX-License-Identifier: Apache-2.0 */
/* Safe number, duration and boolean parsing: whole string, bounds checked. */
#ifndef KILN_PARSE_H
#define KILN_PARSE_H

#include <stdbool.h>
#include <stdint.h>

/* Decimal integer in [min, max], the whole string. KILN_EINVAL with a message otherwise. */
int kiln_parse_int64(int64_t *out, const char *s, int64_t min, int64_t max);
int kiln_parse_int(int *out, const char *s, int min, int max);

/* Decimal floating point in [min, max]. */
int kiln_parse_double(double *out, const char *s, double min, double max);

/* "90", "90s", "30m", "12h", "7d", "1h30m" -> seconds. */
int kiln_parse_duration(int64_t *out_seconds, const char *s);
/* The same with "ms" as a unit too ("1500ms", "2s", "1m30s") -> milliseconds. */
int kiln_parse_duration_ms(int64_t *out_ms, const char *s);

/* yes/no, true/false, on/off, 1/0. */
int kiln_parse_bool(bool *out, const char *s);

/* Unix seconds as UTC ISO 8601, "2026-12-01T02:10:00Z", into out (the digits when the time
 * cannot be shown so). */
#define KILN_TIME_UTC_LEN 21
void kiln_time_utc(char out[KILN_TIME_UTC_LEN], int64_t t);

/* Copies src into dst (size n), always terminated; returns strlen(src) like strlcpy. */
size_t kiln_strlcpy(char *dst, const char *src, size_t n);

#endif
