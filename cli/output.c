/* SPDX-License-Identifier: Apache-2.0 */
/* Tables and JSON for the CLI's standard output. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <kiln/error.h>
#include <kiln/escape.h>
#include <kiln/parse.h>

#include "cli.h"
#include "output.h"

void out_table_init(struct out_table *t, const char *const *headers, size_t ncols)
{
	memset(t, 0, sizeof(*t));
	t->headers = headers;
	t->ncols = ncols;
}

int out_table_add(struct out_table *t, const char *const *cells)
{
	size_t i;

	if (t->nrows == t->cap) {
		size_t ncap = t->cap ? t->cap * 2 : 16;
		char **p = realloc(t->cells, ncap * t->ncols * sizeof(*p));

		if (!p)
			return kiln_fail(KILN_ERROR, "out of memory");
		t->cells = p;
		t->cap = ncap;
	}
	for (i = 0; i < t->ncols; i++) {
		/* stored escaped: widths and every printer (tables, markdown) see what is shown */
		char *c = kiln_escape_dup(cells[i] ? cells[i] : "-", 0);

		if (!c) {
			while (i-- > 0)
				free(t->cells[t->nrows * t->ncols + i]);
			return kiln_fail(KILN_ERROR, "out of memory");
		}
		t->cells[t->nrows * t->ncols + i] = c;
	}
	t->nrows++;
	return 0;
}

/* Width in characters of UTF-8 text (continuation bytes do not count). */
static size_t text_width(const char *s)
{
	size_t w = 0;

	for (; *s; s++)
		if (((unsigned char)*s & 0xC0) != 0x80)
			w++;
	return w;
}

/* A cell and the spaces to the next column: two past the wider of the column and the text,
 * so that a cell wider than its column still stands apart from the next. */
static void cell_print(FILE *f, const char *s, size_t width, int last)
{
	size_t w = text_width(s), end = (w > width ? w : width) + 2;

	fputs(s, f);
	if (!last)
		for (; w < end; w++)
			fputc(' ', f);
}

void out_row_print(FILE *f, const char *const *cells, size_t *widths, size_t ncols)
{
	for (size_t c = 0; c < ncols; c++) {
		/* escaped whole: a cap on a cell's length is its maker's (out_cell marks it) */
		char *safe = kiln_escape_dup(cells[c] ? cells[c] : "-", 0);
		const char *s = safe ? safe : "?";
		size_t w = text_width(s);

		cell_print(f, s, widths[c], c + 1 == ncols);
		if (w > widths[c])
			widths[c] = w;
		free(safe);
	}
	fputc('\n', f);
}

void out_table_print(const struct out_table *t, FILE *f)
{
	size_t *width = calloc(t->ncols ? t->ncols : 1, sizeof(*width));
	size_t r, c;

	if (!width)
		return;
	for (c = 0; c < t->ncols; c++) {
		width[c] = text_width(t->headers[c]);
		for (r = 0; r < t->nrows; r++) {
			size_t w = text_width(t->cells[r * t->ncols + c]);

			if (w > width[c])
				width[c] = w;
		}
	}
	for (c = 0; c < t->ncols; c++)
		cell_print(f, t->headers[c], width[c], c + 1 == t->ncols);
	fputc('\n', f);
	for (r = 0; r < t->nrows; r++) {
		for (c = 0; c < t->ncols; c++)
			cell_print(f, t->cells[r * t->ncols + c], width[c], c + 1 == t->ncols);
		fputc('\n', f);
	}
	free(width);
}

void out_table_free(struct out_table *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nrows * t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	t->cells = NULL;
	t->nrows = t->cap = 0;
}

int out_json_print(const json_t *v, FILE *f)
{
	if (json_dumpf(v, f, JSON_INDENT(2) | JSON_ENCODE_ANY) < 0)
		return kiln_fail(KILN_ERROR, "cannot write JSON output");
	fputc('\n', f);
	return 0;
}

/* Where to cut the first keep bytes of s so as not to split a character: keep, or the start
 * of the UTF-8 sequence that would reach past it (s may already end inside one). */
static size_t char_start(const char *s, size_t keep)
{
	size_t lead = keep, n;
	unsigned char b;

	while (lead > 0 && ((unsigned char)s[lead - 1] & 0xC0) == 0x80)
		lead--;
	if (lead == 0)
		return keep; /* continuation bytes only: invalid, escaped when shown */
	b = (unsigned char)s[lead - 1];
	n = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 1;
	return lead - 1 + n > keep ? lead - 1 : keep;
}

char *out_cut_mark(char *buf, size_t size)
{
	static const char mark[] = "\u2026"; /* "…", 3 bytes and the NUL */
	size_t keep, room;

	if (size == 0)
		return buf;
	keep = strlen(buf);
	room = size >= sizeof(mark) ? size - sizeof(mark) : size - 1;
	if (keep > room)
		keep = room;
	keep = char_start(buf, keep);
	if (size >= sizeof(mark))
		memcpy(buf + keep, mark, sizeof(mark));
	else
		buf[keep] = '\0';
	return buf;
}

const char *out_cellf(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (len == 0)
		return buf;
	va_start(ap, fmt);
	n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	if (n < 0)
		buf[0] = '\0';
	else if ((size_t)n >= len)
		out_cut_mark(buf, len);
	return buf;
}

const char *out_cell(char *buf, size_t len, const json_t *v)
{
	size_t i, used = 0;
	json_t *e;

	if (!v || json_is_null(v))
		return NULL;
	if (json_is_string(v)) {
		out_cellf(buf, len, "%s", json_string_value(v));
	} else if (json_is_integer(v)) {
		out_cellf(buf, len, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	} else if (json_is_real(v)) {
		char num[64];

		out_cellf(buf, len, "%s", out_number(num, sizeof(num), json_real_value(v)));
	} else if (json_is_boolean(v)) {
		out_cellf(buf, len, "%s", json_is_true(v) ? "yes" : "no");
	} else if (json_is_array(v)) {
		buf[0] = '\0';
		json_array_foreach(v, i, e) {
			char part[256];
			const char *s = out_cell(part, sizeof(part), e);

			if (used < len)
				used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? "," : "",
							 s ? s : "-");
		}
		if (i == 0)
			return NULL;
		if (used >= len)
			out_cut_mark(buf, len);
	} else {
		char *dump = json_dumps(v, JSON_COMPACT);

		out_cellf(buf, len, "%s", dump ? dump : "?");
		free(dump);
	}
	return buf;
}

const char *out_number(char *buf, size_t len, double x)
{
	char *dot, *end;

	/* a reading from 10 up to a tenth (612.3 W, 41.5 C), below that three digits */
	if (fabs(x) >= 10)
		snprintf(buf, len, "%.1f", x);
	else
		snprintf(buf, len, "%.3g", x);
	if (strchr(buf, 'e') || !(dot = strchr(buf, '.')))
		return buf;
	for (end = buf + strlen(buf); end > dot + 1 && end[-1] == '0'; end--)
		;
	if (end == dot + 1)
		end = dot;
	*end = '\0';
	return buf;
}

/* The unit a field's name ends in, as people write it after the number. */
static const char *unit_of(const char *key)
{
	static const struct {
		const char *suffix, *unit;
	} units[] = {
		{ "_w", "W" }, { "_c", "\u00b0C" }, { "_s", "s" }, { "_mhz", "MHz" },
		{ "_pct", "%" }, { "_percent", "%" }, { "_rpm", "RPM" }, { "_v", "V" },
	};
	size_t kl = strlen(key);

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		size_t sl = strlen(units[i].suffix);

		if (kl > sl && strcmp(key + kl - sl, units[i].suffix) == 0)
			return units[i].unit;
	}
	return NULL;
}

/* Bytes in binary units: 85899345920 -> "80 GiB". */
static void bytes_print(char *buf, size_t len, double b)
{
	static const char *const names[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	size_t u = 0;
	char num[32];

	while (fabs(b) >= 1024 && u + 1 < sizeof(names) / sizeof(names[0])) {
		b /= 1024;
		u++;
	}
	out_cellf(buf, len, "%s %s", out_number(num, sizeof(num), b), names[u]);
}

const char *out_field(char *buf, size_t len, const char *key, const json_t *v)
{
	size_t kl = strlen(key), used = 0;
	const char *unit = unit_of(key), *k;
	char num[64];
	json_t *e;

	if (json_is_number(v) && kl > 6 && strcmp(key + kl - 6, "_bytes") == 0) {
		bytes_print(buf, len, json_number_value(v));
		return buf;
	}
	if (json_is_number(v) && unit)
		return out_cellf(buf, len, "%s %s", out_cell(num, sizeof(num), v), unit);
	if (!json_is_object(v))
		return out_cell(buf, len, v);
	/* an object (a GPU): "name NVIDIA H100, power_draw_w 612.3 W, ..." */
	buf[0] = '\0';
	json_object_foreach((json_t *)v, k, e) {
		char part[512];
		const char *s = json_is_object(e) || json_is_array(e) ? NULL
								       : out_field(part, sizeof(part), k, e);

		if (s && used < len)
			used += (size_t)snprintf(buf + used, len - used, "%s%s %s", used ? ", " : "",
						 k, s);
	}
	if (used >= len)
		out_cut_mark(buf, len);
	return buf;
}

const char *out_time(char *buf, size_t len, const json_t *v)
{
	time_t t;
	struct tm tm;

	if (!json_is_integer(v) || json_integer_value(v) == 0) {
		kiln_strlcpy(buf, "-", len);
		return buf;
	}
	t = (time_t)json_integer_value(v);
	if (!localtime_r(&t, &tm) || strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm) == 0)
		snprintf(buf, len, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	return buf;
}

int out_list_print(const json_t *list, int json, const struct out_col *cols, size_t ncols)
{
	char cell[OUT_COL_MAX][OUT_CELL_MAX];
	const char *headers[OUT_COL_MAX], *row[OUT_COL_MAX];
	struct out_table t;
	size_t i, c;
	json_t *e;
	int rc = 0;

	if (json)
		return out_json_print(list, stdout);
	if (ncols > OUT_COL_MAX)
		return kiln_fail(KILN_ERROR, "a table of %zu columns is too wide", ncols);
	for (c = 0; c < ncols; c++)
		headers[c] = cols[c].header;
	out_table_init(&t, headers, ncols);
	json_array_foreach(list, i, e) {
		for (c = 0; c < ncols; c++) {
			const json_t *v = json_object_get(e, cols[c].key);
			size_t w = cols[c].width < OUT_CELL_MAX ? cols[c].width : OUT_CELL_MAX;

			if (cols[c].kind == OUT_COL_STR)
				row[c] = json_string_value(v);
			else if (cols[c].kind == OUT_COL_TIME)
				row[c] = out_time(cell[c], w, v);
			else
				row[c] = out_cell(cell[c], w, v);
		}
		if ((rc = out_table_add(&t, row)) < 0)
			goto cleanup;
	}
	out_table_print(&t, stdout);
cleanup:
	out_table_free(&t);
	return rc;
}

int out_results_status(const json_t *results)
{
	size_t i, failed = 0, n = json_array_size(results);
	json_t *e;

	json_array_foreach(results, i, e)
		if (json_object_get(e, "error"))
			failed++;
	if (failed == 0)
		return 0;
	if (failed < n)
		return CLI_EPARTIAL;
	return kiln_fail(KILN_ERROR, "all %zu nodes failed", n);
}
