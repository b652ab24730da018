/* SPDX-License-Identifier: Apache-2.0 */
/* The Prometheus text exposition format (0.0.4): families, samples, label escaping. */
#ifndef KILND_METRICS_EXPO_H
#define KILND_METRICS_EXPO_H

#include <stddef.h>
#include <stdint.h>

#include "kiln/buf.h"

/*
 * A writer of one exposition. Families are declared first, each once (expo_family refuses a
 * name twice), and samples go to any of them in any order: each family keeps its lines, and
 * expo_finish writes them family after family, each after its HELP and TYPE lines, so one
 * pass over the nodes fills them all. A series written twice (same family, suffix and
 * labels) is refused with KILN_EEXISTS, as is a family declared twice. Every function returns 0, or a negative code with kiln_fail() set;
 * after a failure the exposition is not to be served.
 */
struct expo;

struct expo_family {
	struct expo *e;
	const char *name;        /* the caller's strings, valid until expo_finish */
	const char *help;
	int type;                /* EXPO_* */
	struct kiln_buf text;    /* its samples */
	/* its series, as 64-bit hashes of suffix and labels (open addressing) */
	uint64_t *seen;
	size_t seen_cap, seen_count;
};

#define EXPO_FAMILIES_MAX 128

struct expo {
	struct expo_family families[EXPO_FAMILIES_MAX];
	size_t nfamilies;
	size_t max;              /* the text's hard cap (0: none) */
	size_t bytes;            /* samples' text so far */
	size_t series;           /* samples written in all */
	struct kiln_buf out;     /* expo_finish's text */
};

enum { EXPO_GAUGE = 1, EXPO_COUNTER, EXPO_HISTOGRAM, EXPO_INFO };

/* max: the text's hard cap in bytes (0: none). */
void expo_init(struct expo *e, size_t max);
void expo_free(struct expo *e);

/*
 * Declares family name (a valid metric name) of type EXPO_*: EXPO_COUNTER names end with
 * "_total", no other does; EXPO_INFO names end with "_info" (written as a gauge whose
 * samples are 1). *out belongs to e. name and help must stay valid until expo_finish.
 */
int expo_family(struct expo *e, struct expo_family **out, const char *name, int type,
		const char *help);

/*
 * One sample of family f: labels is NULL or an array of label name, value pairs ended by
 * NULL (a NULL or empty value leaves its label out). suffix is NULL, or "_bucket", "_sum"
 * or "_count" for a histogram. The value is written as an integer when it is one, NaN and
 * infinities as Prometheus spells them.
 */
int expo_sample(struct expo_family *f, const char *suffix, const char *const *labels,
		double value);

/* A histogram's buckets (le, cumulative counts; n upper bounds plus +Inf), _sum and _count
 * for one label set. counts has n + 1 entries, the last for +Inf. */
int expo_histogram(struct expo_family *f, const char *const *labels, const double *bounds,
		   const uint64_t *counts, size_t n, double sum);

/* Forgets every sample (the families stay declared), to write the next set of series. */
void expo_clear(struct expo *e);

/* Family f's HELP and TYPE lines onto b. */
int expo_family_head(struct kiln_buf *b, const struct expo_family *f);

/* Writes every family, in the order declared, into e->out. */
int expo_finish(struct expo *e);

/* Escapes a label value into the buffer (backslash, double quote, newline). */
int expo_label_escape(struct kiln_buf *b, const char *v);

/* 1 when s is a valid metric name ([a-zA-Z_:][a-zA-Z0-9_:]*) or label name (no ':',
 * not starting with "__"). */
int expo_metric_name_valid(const char *s);
int expo_label_name_valid(const char *s);

#endif
