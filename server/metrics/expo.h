/* The Prometheus text exposition format (0.0.4): families, samples, label escaping. */
#ifndef KILND_METRICS_EXPO_H
#define KILND_METRICS_EXPO_H

#include <stddef.h>
#include <stdint.h>

#include "kiln/buf.h"

/*
 * A writer of one exposition. Families are written one after another: expo_family starts a
 * family (its HELP and TYPE lines, once: a family started twice is refused), expo_sample
 * adds a series to the family last started (a series written twice, same name and labels,
 * is refused). Every function returns 0, or a negative code with kiln_fail() set; after a
 * failure the text is incomplete and is not to be served.
 */
struct expo {
	struct kiln_buf out;
	const char *family;      /* the family samples go to (the caller's string) */
	int type;                /* its EXPO_* type */
	/* series of the current family, as 64-bit hashes of name and labels (open addressing) */
	uint64_t *seen;
	size_t seen_cap, seen_count;
	/* families written so far, as hashes */
	uint64_t *families;
	size_t families_cap, families_count;
	size_t series;           /* samples written in all */
};

enum { EXPO_GAUGE = 1, EXPO_COUNTER, EXPO_HISTOGRAM, EXPO_INFO };

/* max: the text's hard cap in bytes (0: none). */
void expo_init(struct expo *e, size_t max);
void expo_free(struct expo *e);

/*
 * Starts family name (a valid metric name) of type EXPO_*: EXPO_COUNTER names end with
 * "_total", EXPO_INFO names with "_info" (written as a gauge whose samples are 1). name and
 * help must stay valid until the next expo_family.
 */
int expo_family(struct expo *e, const char *name, int type, const char *help);

/*
 * One sample of the current family: labels is NULL or an array of label name, value pairs
 * ended by NULL (a NULL value leaves its label out; an empty one too). suffix is NULL, or
 * "_bucket", "_sum" or "_count" for a histogram. The value is written as an integer when
 * it is one, NaN and infinities as Prometheus spells them.
 */
int expo_sample(struct expo *e, const char *suffix, const char *const *labels, double value);

/* A histogram's buckets (le, cumulative counts; n upper bounds plus +Inf), _sum and _count
 * for one label set. counts has n + 1 entries, the last for +Inf. */
int expo_histogram(struct expo *e, const char *const *labels, const double *bounds,
		   const uint64_t *counts, size_t n, double sum);

/* Escapes a label value into the buffer (backslash, double quote, newline). */
int expo_label_escape(struct kiln_buf *b, const char *v);

/* 1 when s is a valid metric name ([a-zA-Z_:][a-zA-Z0-9_:]*) or label name (no ':',
 * not starting with "__"). */
int expo_metric_name_valid(const char *s);
int expo_label_name_valid(const char *s);

#endif
