/* SPDX-License-Identifier: Apache-2.0 */
/* A small RFC 4180 CSV reader for `kiln node import`: quoted fields, line numbers kept. */
#ifndef KILN_CLI_CSV_H
#define KILN_CLI_CSV_H

#include <stddef.h>

/* Largest CSV file the CLI reads. */
#define CSV_MAX_FILE (16u << 20)

struct csv_record {
	char **fields;  /* each malloc'd, NUL-terminated */
	size_t count;
	size_t line;    /* 1-based line on which the record starts */
};

struct csv_doc {
	struct csv_record *records;
	size_t count;
	size_t cap;
};

/*
 * Parses text (len bytes): fields separated by ',', records by LF or CRLF; a field in
 * double quotes may hold commas, line ends and "" for a quote. Empty lines are skipped and
 * a leading UTF-8 byte order mark is ignored. On success *out (zeroed by the caller) owns
 * the records. Malformed input returns KILN_EINVAL naming the line and the field: "line 3,
 * field 2: unterminated quoted field"; *out is then left empty.
 */
int csv_parse(struct csv_doc *out, const char *text, size_t len);

/* Reads and parses a file of at most CSV_MAX_FILE bytes; errors name the file. */
int csv_load_file(struct csv_doc *out, const char *path);

void csv_doc_free(struct csv_doc *doc);

#endif
