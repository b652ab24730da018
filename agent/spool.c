/* SPDX-License-Identifier: Apache-2.0 */
/* Bounded on-disk spool of unsent reports; names sort by age ("<16-hex seq>.json"). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kiln/error.h"
#include "kiln/parse.h"
#include "spool.h"

#define SPOOL_NAME_LEN 21 /* 16 hex digits + ".json" */

struct spool_entry {
	uint64_t seq;
	size_t size;
};

struct spool {
	char dir[PATH_MAX - 128];
	size_t max_bytes, max_files;
	struct spool_entry *entries; /* oldest first */
	size_t count, cap, bytes;
	uint64_t next_seq;
	uint64_t dropped;
};

static int parse_name(uint64_t *seq, const char *name)
{
	char *end;
	unsigned long long v;

	if (strlen(name) != SPOOL_NAME_LEN || strcmp(name + 16, ".json") != 0)
		return -1;
	errno = 0;
	v = strtoull(name, &end, 16);
	if (errno || end != name + 16)
		return -1;
	*seq = v;
	return 0;
}

static int entry_cmp(const void *a, const void *b)
{
	const struct spool_entry *x = a, *y = b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int rc = 0;

	if (fd < 0)
		return kiln_fail(KILN_ERROR, "spool: %s: %s", dir, strerror(errno));
	if (fsync(fd) < 0)
		rc = kiln_fail(KILN_ERROR, "spool: fsync %s: %s", dir, strerror(errno));
	close(fd);
	return rc;
}

/* The dropped counter survives restarts in a small file next to the reports. */
static void dropped_save(struct spool *s)
{
	char path[PATH_MAX], tmp[PATH_MAX], text[32];
	int fd, n;

	snprintf(path, sizeof path, "%s/dropped", s->dir);
	snprintf(tmp, sizeof tmp, "%s/dropped.tmp", s->dir);
	n = snprintf(text, sizeof text, "%" PRIu64 "\n", s->dropped);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	if (write(fd, text, (size_t)n) == n && fsync(fd) == 0) {
		close(fd);
		rename(tmp, path);
		return;
	}
	close(fd);
	unlink(tmp);
}

static void dropped_load(struct spool *s)
{
	char path[PATH_MAX], text[32];
	int64_t v;
	ssize_t n;
	int fd;

	snprintf(path, sizeof path, "%s/dropped", s->dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, text, sizeof text - 1);
	close(fd);
	if (n <= 0)
		return;
	text[n] = '\0';
	if (text[n - 1] == '\n')
		text[n - 1] = '\0';
	if (kiln_parse_int64(&v, text, 0, INT64_MAX) == 0)
		s->dropped = (uint64_t)v;
}

static int mkdirs(const char *dir)
{
	char tmp[PATH_MAX], *p;

	if (kiln_strlcpy(tmp, dir, sizeof tmp) >= sizeof tmp)
		return kiln_fail(KILN_ETOOBIG, "spool: path too long");
	for (p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0700) < 0 && errno != EEXIST)
			return kiln_fail(KILN_ERROR, "spool: mkdir %s: %s", tmp, strerror(errno));
		*p = '/';
	}
	if (mkdir(tmp, 0700) < 0 && errno != EEXIST)
		return kiln_fail(KILN_ERROR, "spool: mkdir %s: %s", tmp, strerror(errno));
	return 0;
}

int spool_open(struct spool **out, const char *dir, size_t max_bytes, size_t max_files)
{
	struct spool *s = NULL;
	struct dirent *de;
	DIR *d = NULL;
	int rc;

	if (!max_bytes || !max_files)
		return kiln_fail(KILN_EINVAL, "spool: caps must be positive");
	s = calloc(1, sizeof *s);
	if (!s)
		return kiln_fail(KILN_ERROR, "out of memory");
	if (kiln_strlcpy(s->dir, dir, sizeof s->dir) >= sizeof s->dir) {
		rc = kiln_fail(KILN_ETOOBIG, "spool: path too long: %s", dir);
		goto cleanup;
	}
	s->max_bytes = max_bytes;
	s->max_files = max_files;
	rc = mkdirs(dir);
	if (rc < 0)
		goto cleanup;
	d = opendir(dir);
	if (!d) {
		rc = kiln_fail(KILN_ERROR, "spool: %s: %s", dir, strerror(errno));
		goto cleanup;
	}
	while ((de = readdir(d))) {
		char path[PATH_MAX];
		struct stat st;
		uint64_t seq;

		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		if (strncmp(de->d_name, "tmp-", 4) == 0) { /* a write that did not finish */
			unlink(path);
			continue;
		}
		if (parse_name(&seq, de->d_name) < 0 || stat(path, &st) < 0 || !S_ISREG(st.st_mode))
			continue;
		if (s->count == s->cap) {
			size_t ncap = s->cap ? s->cap * 2 : 64;
			struct spool_entry *p = realloc(s->entries, ncap * sizeof *p);

			if (!p) {
				rc = kiln_fail(KILN_ERROR, "out of memory");
				goto cleanup;
			}
			s->entries = p;
			s->cap = ncap;
		}
		s->entries[s->count].seq = seq;
		s->entries[s->count].size = (size_t)st.st_size;
		s->count++;
		s->bytes += (size_t)st.st_size;
		if (seq >= s->next_seq)
			s->next_seq = seq + 1;
	}
	if (s->count)
		qsort(s->entries, s->count, sizeof *s->entries, entry_cmp);
	dropped_load(s);
	*out = s;
	s = NULL;
	rc = 0;
cleanup:
	if (d)
		closedir(d);
	spool_close(s);
	return rc;
}

static void entry_name(char out[64], uint64_t seq)
{
	snprintf(out, 64, "%016" PRIx64 ".json", seq);
}

/* Deletes the oldest report. */
static void remove_oldest(struct spool *s)
{
	char name[64], path[PATH_MAX];

	entry_name(name, s->entries[0].seq);
	snprintf(path, sizeof path, "%s/%s", s->dir, name);
	unlink(path);
	s->bytes -= s->entries[0].size;
	memmove(s->entries, s->entries + 1, (s->count - 1) * sizeof *s->entries);
	s->count--;
}

/* Deletes the oldest report and counts it as dropped. */
static void drop_oldest(struct spool *s)
{
	remove_oldest(s);
	s->dropped++;
}

size_t spool_keep_newest(struct spool *s)
{
	size_t removed = 0;

	while (s->count > 1) {
		remove_oldest(s);
		removed++;
	}
	if (removed)
		(void)fsync_dir(s->dir);
	return removed;
}

int spool_put(struct spool *s, const char *data, size_t len)
{
	char name[64], path[PATH_MAX], tmp[PATH_MAX];
	size_t off = 0, dropped_before = s->dropped;
	int fd = -1, rc;

	if (len > s->max_bytes)
		return kiln_fail(KILN_ETOOBIG, "spool: a %zu-byte report exceeds the %zu-byte spool",
				 len, s->max_bytes);
	if (s->count == s->cap) {
		size_t ncap = s->cap ? s->cap * 2 : 64;
		struct spool_entry *p = realloc(s->entries, ncap * sizeof *p);

		if (!p)
			return kiln_fail(KILN_ERROR, "out of memory");
		s->entries = p;
		s->cap = ncap;
	}
	while (s->count && (s->count + 1 > s->max_files || s->bytes + len > s->max_bytes))
		drop_oldest(s);
	if (s->dropped != dropped_before)
		dropped_save(s);
	entry_name(name, s->next_seq);
	snprintf(path, sizeof path, "%s/%s", s->dir, name);
	snprintf(tmp, sizeof tmp, "%s/tmp-%s", s->dir, name);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return kiln_fail(KILN_ERROR, "spool: %s: %s", tmp, strerror(errno));
	while (off < len) {
		ssize_t w = write(fd, data + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			rc = kiln_fail(KILN_ERROR, "spool: write %s: %s", tmp, strerror(errno));
			goto fail;
		}
		off += (size_t)w;
	}
	if (fsync(fd) < 0) {
		rc = kiln_fail(KILN_ERROR, "spool: fsync %s: %s", tmp, strerror(errno));
		goto fail;
	}
	close(fd);
	fd = -1;
	if (rename(tmp, path) < 0) {
		rc = kiln_fail(KILN_ERROR, "spool: rename %s: %s", tmp, strerror(errno));
		goto fail;
	}
	rc = fsync_dir(s->dir);
	if (rc < 0)
		return rc; /* the file is there; a crash now might lose it */
	s->entries[s->count].seq = s->next_seq++;
	s->entries[s->count].size = len;
	s->count++;
	s->bytes += len;
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	return rc;
}

int spool_oldest(struct spool *s, char **out, size_t *out_len, char name[64])
{
	char path[PATH_MAX], *data = NULL;
	struct stat st;
	size_t off = 0;
	int fd, rc;

	if (!s->count)
		return KILN_ENOTFOUND;
	entry_name(name, s->entries[0].seq);
	snprintf(path, sizeof path, "%s/%s", s->dir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0 || (size_t)st.st_size > s->max_bytes) {
		rc = kiln_fail(KILN_ERROR, "spool: %s: %s", path, fd < 0 ? strerror(errno) : "unreadable");
		goto cleanup;
	}
	data = malloc((size_t)st.st_size + 1);
	if (!data) {
		rc = kiln_fail(KILN_ERROR, "out of memory");
		goto cleanup;
	}
	while (off < (size_t)st.st_size) {
		ssize_t r = read(fd, data + off, (size_t)st.st_size - off);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			rc = kiln_fail(KILN_ERROR, "spool: read %s: %s", path, r < 0 ? strerror(errno) : "short");
			goto cleanup;
		}
		off += (size_t)r;
	}
	data[off] = '\0';
	*out = data;
	*out_len = off;
	data = NULL;
	rc = 0;
cleanup:
	if (fd >= 0)
		close(fd);
	free(data);
	return rc;
}

int spool_remove(struct spool *s, const char *name)
{
	char path[PATH_MAX];
	uint64_t seq;
	size_t i;

	if (parse_name(&seq, name) < 0)
		return kiln_fail(KILN_EINVAL, "spool: bad name '%s'", name);
	for (i = 0; i < s->count && s->entries[i].seq != seq; i++)
		;
	if (i == s->count)
		return kiln_fail(KILN_ENOTFOUND, "spool: no report %s", name);
	snprintf(path, sizeof path, "%s/%s", s->dir, name);
	if (unlink(path) < 0 && errno != ENOENT)
		return kiln_fail(KILN_ERROR, "spool: unlink %s: %s", path, strerror(errno));
	s->bytes -= s->entries[i].size;
	memmove(s->entries + i, s->entries + i + 1, (s->count - i - 1) * sizeof *s->entries);
	s->count--;
	return 0;
}

size_t spool_count(const struct spool *s)
{
	return s->count;
}

size_t spool_bytes(const struct spool *s)
{
	return s->bytes;
}

uint64_t spool_dropped(const struct spool *s)
{
	return s->dropped;
}

void spool_close(struct spool *s)
{
	if (!s)
		return;
	free(s->entries);
	free(s);
}
