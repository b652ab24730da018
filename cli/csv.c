/* SPDX-License-Identifier: Apache-2.0 */
/* RFC 4180 CSV parsing with line numbers, for node imports. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kiln/buf.h>
#include <kiln/error.h>

#include "csv.h"

static void record_free(struct csv_record *r)
{
	for (size_t i = 0; i < r->count; i++)
		free(r->fields[i]);
	free(r->fields);
	r->fields = NULL;
	r->count = 0;
}

void csv_doc_free(struct csv_doc *doc)
{
	if (!doc)
		return;
	for (size_t i = 0; i < doc->count; i++)
		record_free(&doc->records[i]);
	free(doc->records);
	doc->records = NULL;
	doc->count = doc->cap = 0;
}

static int field_add(struct csv_record *r, struct kiln_buf *b)
{
	char **p = realloc(r->fields, (r->count + 1) * sizeof(*p));
	char *s;

	if (!p)
		return kiln_fail(KILN_ERROR, "out of memory");
	r->fields = p;
	s = b->data ? kiln_buf_steal(b) : strdup("");
	if (!s)
		return kiln_fail(KILN_ERROR, "out of memory");
	r->fields[r->count++] = s;
	return 0;
}

static int record_add(struct csv_doc *doc, struct csv_record *r)
{
	if (doc->count == doc->cap) {
		size_t ncap = doc->cap ? doc->cap * 2 : 16;
		struct csv_record *p = realloc(doc->records, ncap * sizeof(*p));

		if (!p)
			return kiln_fail(KILN_ERROR, "out of memory");
		doc->records = p;
		doc->cap = ncap;
	}
	doc->records[doc->count++] = *r;
	memset(r, 0, sizeof(*r));
	return 0;
}

static int is_eol(char c)
{
	return c == '\n' || c == '\r';
}

/*
 * Reads one field at *pp into b. A quoted field may span lines (*line advances).
 * ncol is the field's 1-based number, for messages.
 */
static int field_read(struct kiln_buf *b, const char **pp, const char *end, size_t *line,
		      size_t ncol)
{
	const char *p = *pp;
	size_t start_line = *line;
	int rc = 0;

	if (p < end && *p == '"') {
		for (p++;; p++) {
			if (p >= end)
				return kiln_fail(KILN_EINVAL, "line %zu, field %zu: unterminated quoted field",
						 start_line, ncol);
			if (*p == '"') {
				if (p + 1 < end && p[1] == '"') {
					p++;
				} else {
					p++;
					break;
				}
			} else if (*p == '\n') {
				(*line)++;
			} else if (*p == '\0') {
				return kiln_fail(KILN_EINVAL, "line %zu, field %zu: NUL byte", *line, ncol);
			}
			rc = kiln_buf_append(b, p, 1);
			if (rc < 0)
				return rc;
		}
		if (p < end && *p != ',' && !is_eol(*p))
			return kiln_fail(KILN_EINVAL,
					 "line %zu, field %zu: unexpected character after a closing quote",
					 *line, ncol);
	} else {
		for (; p < end && *p != ',' && !is_eol(*p); p++) {
			if (*p == '"')
				return kiln_fail(KILN_EINVAL,
						 "line %zu, field %zu: quote inside an unquoted field "
						 "(quote the whole field and double the quote)",
						 *line, ncol);
			if (*p == '\0')
				return kiln_fail(KILN_EINVAL, "line %zu, field %zu: NUL byte", *line, ncol);
			rc = kiln_buf_append(b, p, 1);
			if (rc < 0)
				return rc;
		}
	}
	*pp = p;
	return 0;
}

int csv_parse(struct csv_doc *out, const char *text, size_t len)
{
	struct csv_doc doc = { 0 };
	struct csv_record rec = { 0 };
	struct kiln_buf field;
	const char *p = text, *end = text + len;
	size_t line = 1;
	int rc = 0;

	kiln_buf_init(&field, 0);
	if (len >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0)
		p += 3;
	while (p < end) {
		if (is_eol(*p)) { /* an empty line */
			if (*p == '\r' && p + 1 < end && p[1] == '\n')
				p++;
			p++;
			line++;
			continue;
		}
		rec.line = line;
		for (;;) {
			rc = field_read(&field, &p, end, &line, rec.count + 1);
			if (rc < 0)
				goto cleanup;
			rc = field_add(&rec, &field);
			if (rc < 0)
				goto cleanup;
			if (p < end && *p == ',') {
				p++;
				continue;
			}
			break;
		}
		if (p < end) { /* a line end */
			if (*p == '\r' && p + 1 < end && p[1] == '\n')
				p++;
			p++;
			line++;
		}
		rc = record_add(&doc, &rec);
		if (rc < 0)
			goto cleanup;
	}
	*out = doc;
	memset(&doc, 0, sizeof(doc));
cleanup:
	record_free(&rec);
	csv_doc_free(&doc);
	kiln_buf_free(&field);
	return rc;
}

int csv_load_file(struct csv_doc *out, const char *path)
{
	struct kiln_buf b;
	char chunk[65536];
	int fd, rc = 0;

	kiln_buf_init(&b, CSV_MAX_FILE);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return kiln_fail(KILN_ERROR, "%s: %s", path, strerror(errno));
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = kiln_fail(KILN_ERROR, "%s: %s", path, strerror(errno));
			goto cleanup;
		}
		if (n == 0)
			break;
		rc = kiln_buf_append(&b, chunk, (size_t)n);
		if (rc < 0) {
			rc = kiln_fail_prefix(rc, "%s", path);
			goto cleanup;
		}
	}
	rc = csv_parse(out, b.data ? b.data : "", b.len);
	if (rc < 0)
		rc = kiln_fail_prefix(rc, "%s", path);
cleanup:
	close(fd);
	kiln_buf_free(&b);
	return rc;
}
