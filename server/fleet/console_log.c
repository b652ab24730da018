/* SPDX-License-Identifier: Apache-2.0 */
/* A node's captured serial console read back: its last bytes (a hung node's evidence) and its
 * last lines (kiln console --log). The capture itself: console.c. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fleet/console.h"
#include "kiln/buf.h"
#include "kiln/error.h"

#define TAIL_LINES_MAX 10000
#define TAIL_READ_MAX (4L << 20)

/* Appends the last max bytes of path to b (a missing file adds nothing). */
static int tail_read(struct kiln_buf *b, const char *path, long max)
{
	char buf[65536];
	struct stat st;
	off_t at;
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc = 0;

	if (fd < 0)
		return errno == ENOENT ? 0 : kiln_fail(KILN_ERROR, "console: %s: %s", path, strerror(errno));
	if (fstat(fd, &st) < 0) {
		close(fd);
		return kiln_fail(KILN_ERROR, "console: %s: %s", path, strerror(errno));
	}
	at = st.st_size > max ? st.st_size - max : 0;
	for (;;) {
		ssize_t r = pread(fd, buf, sizeof(buf), at);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if ((rc = kiln_buf_append(b, buf, (size_t)r)) < 0)
			break;
		at += r;
	}
	close(fd);
	return rc;
}

/* A JSON string of one line: NUL and CR dropped, invalid UTF-8 bytes replaced by '?'. */
static json_t *line_json(const char *p, size_t len)
{
	char *clean = malloc(len + 1);
	size_t o = 0;
	json_t *s;

	if (!clean)
		return NULL;
	for (size_t i = 0; i < len; i++)
		if (p[i] != '\0' && p[i] != '\r')
			clean[o++] = p[i];
	s = json_stringn(clean, o);
	if (!s) {
		for (size_t i = 0; i < o; i++)
			if ((unsigned char)clean[i] >= 0x80)
				clean[i] = '?';
		s = json_stringn(clean, o);
	}
	free(clean);
	return s;
}

int console_log_recent(struct kiln_buf *out, const char *node, long max_bytes)
{
	char path[4096];
	int rc;

	kiln_buf_init(out, 2 * (size_t)max_bytes);
	if ((rc = console_log_path(path, sizeof(path), node, ".1")) < 0 ||
	    (rc = tail_read(out, path, max_bytes)) < 0 ||
	    (rc = console_log_path(path, sizeof(path), node, "")) < 0 ||
	    (rc = tail_read(out, path, max_bytes)) < 0)
		kiln_buf_free(out);
	return rc;
}

int console_log_tail(json_t **out, const char *node, long lines)
{
	struct kiln_buf b;
	json_t *arr = NULL;
	size_t start, end, count = 0;
	int rc;

	if (lines < 1)
		lines = 1;
	if (lines > TAIL_LINES_MAX)
		lines = TAIL_LINES_MAX;
	if ((rc = console_log_recent(&b, node, TAIL_READ_MAX)) < 0)
		return rc;
	arr = json_array();
	if (!arr) {
		rc = kiln_fail(KILN_ERROR, "out of memory");
		goto cleanup;
	}
	/* walk back over `lines` line ends; a last line without '\n' counts too */
	end = b.len;
	start = end;
	if (end > 0 && b.data[end - 1] == '\n')
		start = --end;
	while (start > 0) {
		if (b.data[start - 1] == '\n' && ++count >= (size_t)lines)
			break;
		start--;
	}
	while (start < b.len) {
		size_t e = start;
		json_t *s;

		while (e < b.len && b.data[e] != '\n')
			e++;
		s = line_json(b.data + start, e - start);
		if (!s || json_array_append_new(arr, s) < 0) {
			rc = kiln_fail(KILN_ERROR, "out of memory");
			goto cleanup;
		}
		start = e + 1;
	}
	*out = arr;
	arr = NULL;
cleanup:
	json_decref(arr);
	kiln_buf_free(&b);
	return rc;
}
