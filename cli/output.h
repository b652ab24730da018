/* SPDX-License-Identifier: Apache-2.0 */
/* The CLI's output: aligned tables for people, JSON (jansson) for scripts. */
#ifndef KILN_CLI_OUTPUT_H
#define KILN_CLI_OUTPUT_H

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

/* A table of text cells; column widths come from the data when printed. */
struct out_table {
	size_t ncols;
	const char *const *headers; /* borrowed, ncols entries */
	char **cells;               /* nrows * ncols copies */
	size_t nrows;
	size_t cap;                 /* rows allocated */
};

void out_table_init(struct out_table *t, const char *const *headers, size_t ncols);

/* Appends a row of ncols cells (copied; NULL prints as "-"). 0 or KILN_ERROR (ENOMEM). */
int out_table_add(struct out_table *t, const char *const *cells);

/*
 * Prints the header and the rows, each column as wide as its widest cell (counted in
 * characters, not bytes), two spaces apart; control characters print as '?'.
 */
void out_table_print(const struct out_table *t, FILE *f);

void out_table_free(struct out_table *t);

/*
 * Prints one row of a table whose rows are printed as they come, widths[c] characters a
 * column: each cell padded to its column's width and two spaces, a wider one followed by two
 * spaces all the same (pushing the rest of its row right) and widening its column in widths
 * for the rows after it. The last cell is not padded. NULL prints as "-", control characters
 * escaped as out_table_add's cells are; nothing is cut.
 */
void out_row_print(FILE *f, const char *const *cells, size_t *widths, size_t ncols);

/*
 * Marks the text in buf (size bytes, NUL-terminated) as cut: shortened at the start of a
 * character until "…" (U+2026, 3 bytes) fits after it, and "…" appended, so that a reader
 * sees the cell was cut. Below 4 bytes there is no room for the mark: only the whole
 * characters that fit are kept. Returns buf.
 */
char *out_cut_mark(char *buf, size_t size);

/*
 * snprintf for a table cell: text longer than len - 1 bytes is cut at a character and ends
 * in "…" (out_cut_mark), never cut silently. Returns buf.
 */
const char *out_cellf(char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Prints v as indented JSON and a newline. 0 or KILN_ERROR. */
int out_json_print(const json_t *v, FILE *f);

/*
 * A JSON value as a table cell into buf: strings as they are, numbers, true/false as
 * yes/no, null or missing as NULL (printed "-"), arrays of strings joined with ','.
 * What does not fit in len bytes is cut with "…" (out_cellf). Returns buf or NULL.
 */
const char *out_cell(char *buf, size_t len, const json_t *v);

/* A number as people read it into buf: one decimal from 10 up (612.3), three significant
 * digits below (0.125, 1.5), trailing zeros dropped (41). Returns buf. */
const char *out_number(char *buf, size_t len, double x);

/*
 * A field's value for people into buf: numbers with the unit the name ends in (power_draw_w
 * 612.3 W, temperature_c, _s, _mhz, _pct, _rpm, _v; _bytes in KiB..PiB), an object as
 * "key value, ..." of its scalar members, anything else as out_cell(); cut with "…" when
 * longer than len - 1 bytes. Returns buf or NULL.
 */
const char *out_field(char *buf, size_t len, const char *key, const json_t *v);

/* A Unix time as local "YYYY-MM-DD HH:MM:SS" into buf; "-" for 0 or null. Returns buf. */
const char *out_time(char *buf, size_t len, const json_t *v);

/* How a list column shows its JSON field. */
enum out_col_kind {
	OUT_COL_CELL, /* out_cell() */
	OUT_COL_TIME, /* out_time() */
	OUT_COL_STR,  /* the string itself, uncut; a non-string prints "-" */
};

/* A column of out_list_print(): the header, the element's field and the cell's size. */
struct out_col {
	const char *header;
	const char *key;
	enum out_col_kind kind;
	size_t width; /* bytes for the cell with its NUL, at most OUT_CELL_MAX: longer text is cut
		       * and ends in "…" (OUT_COL_STR: unused) */
};

#define OUT_COL_MAX 16    /* columns */
#define OUT_CELL_MAX 1024 /* bytes a cell */

/*
 * Prints an array of objects: indented JSON when json is true, else a table with one row an
 * element and one column per cols entry (ncols <= OUT_COL_MAX). 0 or KILN_ERROR.
 */
int out_list_print(const json_t *list, int json, const struct out_col *cols, size_t ncols);

/*
 * For commands over a noderange: looks at an array of per-node results and returns 0 when
 * none has "error", CLI_EPARTIAL when some have, KILN_ERROR (message set) when all have.
 */
int out_results_status(const json_t *results);

#endif
