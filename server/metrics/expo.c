/* SPDX-License-Identifier: Apache-2.0 */
/* The Prometheus text exposition format: families declared once and written whole, each
 * after its HELP and TYPE lines; escaped label values; each series once. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/error.h"
#include "metrics/expo.h"

#define FNV_OFFSET 0xcbf29ce484222325ULL
#define FNV_PRIME 0x100000001b3ULL

static uint64_t fnv(uint64_t h, const char *s)
{
	for (; s && *s; s++) {
		h ^= (unsigned char)*s;
		h *= FNV_PRIME;
	}
	/* a separator no name or value holds, so "a","bc" and "ab","c" differ */
	h ^= 0xff;
	h *= FNV_PRIME;
	return h;
}

void expo_init(struct expo *e, size_t max)
{
	memset(e, 0, sizeof(*e));
	e->max = max;
	kiln_buf_init(&e->out, 0);
}

void expo_free(struct expo *e)
{
	if (!e)
		return;
	for (size_t i = 0; i < e->nfamilies; i++) {
		kiln_buf_free(&e->families[i].text);
		free(e->families[i].seen);
	}
	kiln_buf_free(&e->out);
	memset(e, 0, sizeof(*e));
}

void expo_clear(struct expo *e)
{
	for (size_t i = 0; i < e->nfamilies; i++) {
		struct expo_family *f = &e->families[i];

		kiln_buf_reset(&f->text);
		if (f->seen_count)
			memset(f->seen, 0, f->seen_cap * sizeof(*f->seen));
		f->seen_count = 0;
	}
	e->bytes = 0;
	e->series = 0;
}

/* Adds h to the open-addressed set; 1 when it was there already, 0 added, <0 ENOMEM. 0 is
 * the empty slot's mark, so a hash of 0 is stored as 1. */
static int set_add(uint64_t **set, size_t *cap, size_t *count, uint64_t h)
{
	size_t i;

	if (h == 0)
		h = 1;
	if ((*count + 1) * 2 > *cap) {
		size_t ncap = *cap ? *cap * 2 : 256;
		uint64_t *grown = calloc(ncap, sizeof(*grown));

		if (!grown)
			return kiln_fail(KILN_ERROR, "metrics: out of memory");
		for (size_t j = 0; j < *cap; j++) {
			if (!(*set)[j])
				continue;
			for (i = (*set)[j] & (ncap - 1); grown[i]; i = (i + 1) & (ncap - 1))
				;
			grown[i] = (*set)[j];
		}
		free(*set);
		*set = grown;
		*cap = ncap;
	}
	for (i = h & (*cap - 1); (*set)[i]; i = (i + 1) & (*cap - 1))
		if ((*set)[i] == h)
			return 1;
	(*set)[i] = h;
	(*count)++;
	return 0;
}

static int name_valid(const char *s, int colon)
{
	if (!s || !*s)
		return 0;
	for (const char *p = s; *p; p++) {
		char ch = *p;
		int alpha = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_' ||
			    (colon && ch == ':');

		if (!alpha && !(p > s && ch >= '0' && ch <= '9'))
			return 0;
	}
	return 1;
}

int expo_metric_name_valid(const char *s)
{
	return name_valid(s, 1);
}

int expo_label_name_valid(const char *s)
{
	return name_valid(s, 0) && strncmp(s, "__", 2) != 0;
}

static int ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), m = strlen(tail);

	return n > m && strcmp(s + n - m, tail) == 0;
}

/* HELP text escapes backslash and newline only. */
static int help_escape(struct kiln_buf *b, const char *s)
{
	int rc = 0;

	for (; *s && rc == 0; s++) {
		if (*s == '\\')
			rc = kiln_buf_append(b, "\\\\", 2);
		else if (*s == '\n')
			rc = kiln_buf_append(b, "\\n", 2);
		else
			rc = kiln_buf_append(b, s, 1);
	}
	return rc;
}

int expo_label_escape(struct kiln_buf *b, const char *v)
{
	const char *run = v;
	int rc = 0;

	/* runs without a character to escape are copied whole */
	for (const char *p = v;; p++) {
		const char *esc = *p == '\\' ? "\\\\" : *p == '"' ? "\\\"" : *p == '\n' ? "\\n" : NULL;

		if (!esc && *p)
			continue;
		if (p > run && (rc = kiln_buf_append(b, run, (size_t)(p - run))) < 0)
			return rc;
		if (!*p)
			return 0;
		if ((rc = kiln_buf_append(b, esc, 2)) < 0)
			return rc;
		run = p + 1;
	}
}

static const char *type_name(int type)
{
	switch (type) {
	case EXPO_COUNTER: return "counter";
	case EXPO_HISTOGRAM: return "histogram";
	default: return "gauge";
	}
}

int expo_family(struct expo *e, struct expo_family **out, const char *name, int type,
		const char *help)
{
	struct expo_family *f;

	if (!expo_metric_name_valid(name))
		return kiln_fail(KILN_EINVAL, "metrics: '%s' is not a metric name", name ? name : "");
	if (type == EXPO_COUNTER && !ends_with(name, "_total"))
		return kiln_fail(KILN_EINVAL, "metrics: counter %s must end with _total", name);
	if (type != EXPO_COUNTER && ends_with(name, "_total"))
		return kiln_fail(KILN_EINVAL, "metrics: %s ends with _total but is no counter", name);
	if (type == EXPO_INFO && !ends_with(name, "_info"))
		return kiln_fail(KILN_EINVAL, "metrics: info family %s must end with _info", name);
	for (size_t i = 0; i < e->nfamilies; i++)
		if (strcmp(e->families[i].name, name) == 0)
			return kiln_fail(KILN_EEXISTS, "metrics: family %s declared twice", name);
	if (e->nfamilies == EXPO_FAMILIES_MAX)
		return kiln_fail(KILN_ETOOBIG, "metrics: more than %d families", EXPO_FAMILIES_MAX);
	f = &e->families[e->nfamilies++];
	memset(f, 0, sizeof(*f));
	f->e = e;
	f->name = name;
	f->help = help ? help : "";
	f->type = type;
	kiln_buf_init(&f->text, 0);
	*out = f;
	return 0;
}

int expo_family_head(struct kiln_buf *b, const struct expo_family *f)
{
	int rc;

	if ((rc = kiln_buf_printf(b, "# HELP %s ", f->name)) < 0 ||
	    (rc = help_escape(b, f->help)) < 0 ||
	    (rc = kiln_buf_printf(b, "\n# TYPE %s %s\n", f->name, type_name(f->type))) < 0)
		return rc;
	return 0;
}

int expo_finish(struct expo *e)
{
	struct kiln_buf heads;
	size_t total = 0, at = 0, *head_end;
	char *text;
	int rc;

	/* The heads first, then one block of the exact size: a scrape of 10,000 nodes is
	 * hundreds of megabytes, and each family's text is freed once copied. */
	head_end = calloc(e->nfamilies + 1, sizeof(*head_end));
	if (!head_end)
		return kiln_fail(KILN_ERROR, "metrics: out of memory");
	kiln_buf_init(&heads, 0);
	for (size_t i = 0; i < e->nfamilies; i++) {
		if ((rc = expo_family_head(&heads, &e->families[i])) < 0)
			goto cleanup;
		head_end[i] = heads.len;
		total += e->families[i].text.len;
	}
	total += heads.len;
	text = malloc(total + 1);
	if (!text) {
		rc = kiln_fail(KILN_ERROR, "metrics: out of memory");
		goto cleanup;
	}
	for (size_t i = 0, h = 0; i < e->nfamilies; i++) {
		struct expo_family *f = &e->families[i];

		memcpy(text + at, heads.data + h, head_end[i] - h);
		at += head_end[i] - h;
		h = head_end[i];
		if (f->text.len)
			memcpy(text + at, f->text.data, f->text.len);
		at += f->text.len;
		kiln_buf_free(&f->text);
	}
	text[at] = '\0';
	kiln_buf_free(&e->out);
	e->out.data = text;
	e->out.len = at;
	e->out.cap = total + 1;
	rc = 0;
cleanup:
	kiln_buf_free(&heads);
	free(head_end);
	return rc;
}

/* The shortest text that reads back as v. */
static int value_write(struct kiln_buf *b, double v)
{
	char text[40];

	if (isnan(v))
		return kiln_buf_puts(b, "NaN");
	if (isinf(v))
		return kiln_buf_puts(b, v > 0 ? "+Inf" : "-Inf");
	if (v == floor(v) && fabs(v) < 1e15)
		snprintf(text, sizeof(text), "%.0f", v == 0 ? 0.0 : v);
	else {
		snprintf(text, sizeof(text), "%.15g", v);
		if (strtod(text, NULL) != v)
			snprintf(text, sizeof(text), "%.17g", v);
	}
	return kiln_buf_puts(b, text);
}

int expo_sample(struct expo_family *f, const char *suffix, const char *const *labels,
		double value)
{
	struct kiln_buf *b = &f->text;
	uint64_t h = fnv(FNV_OFFSET, suffix);
	size_t before = b->len;
	int rc, first = 1;

	if (suffix && (f->type != EXPO_HISTOGRAM ||
		       (strcmp(suffix, "_bucket") && strcmp(suffix, "_sum") && strcmp(suffix, "_count"))))
		return kiln_fail(KILN_EINVAL, "metrics: %s: suffix '%s' not allowed", f->name,
				 suffix);
	if (f->type == EXPO_HISTOGRAM && !suffix)
		return kiln_fail(KILN_EINVAL, "metrics: %s: a histogram sample needs a suffix",
				 f->name);
	if (f->type == EXPO_INFO && value != 1)
		return kiln_fail(KILN_EINVAL, "metrics: %s: an info sample is 1", f->name);
	for (size_t i = 0; labels && labels[i]; i += 2) {
		if (!expo_label_name_valid(labels[i]))
			return kiln_fail(KILN_EINVAL, "metrics: %s: '%s' is not a label name",
					 f->name, labels[i]);
		if (!labels[i + 1] || !labels[i + 1][0])
			continue;
		h = fnv(fnv(h, labels[i]), labels[i + 1]);
	}
	if ((rc = set_add(&f->seen, &f->seen_cap, &f->seen_count, h)) != 0)
		return rc < 0 ? rc : kiln_fail(KILN_EEXISTS, "metrics: %s: a series written twice",
					       f->name);
	if ((rc = kiln_buf_puts(b, f->name)) < 0 || (suffix && (rc = kiln_buf_puts(b, suffix)) < 0))
		return rc;
	for (size_t i = 0; labels && labels[i]; i += 2) {
		if (!labels[i + 1] || !labels[i + 1][0])
			continue;
		if ((rc = kiln_buf_puts(b, first ? "{" : ",")) < 0 ||
		    (rc = kiln_buf_puts(b, labels[i])) < 0 || (rc = kiln_buf_append(b, "=\"", 2)) < 0 ||
		    (rc = expo_label_escape(b, labels[i + 1])) < 0 ||
		    (rc = kiln_buf_append(b, "\"", 1)) < 0)
			return rc;
		first = 0;
	}
	if ((!first && (rc = kiln_buf_append(b, "}", 1)) < 0) ||
	    (rc = kiln_buf_append(b, " ", 1)) < 0 || (rc = value_write(b, value)) < 0 ||
	    (rc = kiln_buf_append(b, "\n", 1)) < 0)
		return rc;
	f->e->bytes += b->len - before;
	if (f->e->max && f->e->bytes > f->e->max)
		return kiln_fail(KILN_ETOOBIG, "metrics: the exposition exceeds %zu bytes",
				 f->e->max);
	f->e->series++;
	return 0;
}

#define HIST_LABELS_MAX 16

int expo_histogram(struct expo_family *f, const char *const *labels, const double *bounds,
		   const uint64_t *counts, size_t n, double sum)
{
	const char *l[2 * HIST_LABELS_MAX + 3];
	char le[40];
	size_t k = 0;
	int rc;

	for (; labels && labels[k] && k < 2 * HIST_LABELS_MAX; k += 2) {
		l[k] = labels[k];
		l[k + 1] = labels[k + 1];
	}
	l[k] = "le";
	l[k + 2] = NULL;
	for (size_t i = 0; i <= n; i++) {
		if (i < n)
			snprintf(le, sizeof(le), "%g", bounds[i]);
		else
			snprintf(le, sizeof(le), "+Inf");
		l[k + 1] = le;
		if ((rc = expo_sample(f, "_bucket", l, (double)counts[i])) < 0)
			return rc;
	}
	l[k] = NULL;
	if ((rc = expo_sample(f, "_sum", l, sum)) < 0 ||
	    (rc = expo_sample(f, "_count", l, (double)counts[n])) < 0)
		return rc;
	return 0;
}
