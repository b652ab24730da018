/* SPDX-License-Identifier: Apache-2.0 */
/* Files read under the agent's --root folder, with hard size caps. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kiln/error.h"
#include "kiln/parse.h"
#include "rootfs.h"

int rootfs_path(char *out, size_t n, const char *root, const char *path)
{
	int len;

	if (!root || !*root || strcmp(root, "/") == 0)
		root = "";
	len = snprintf(out, n, "%s%s", root, path);
	if (len < 0 || (size_t)len >= n)
		return kiln_fail(KILN_ETOOBIG, "path too long: %s%s", root, path);
	return 0;
}

int rootfs_read(char **out, size_t *out_len, const char *root, const char *path, size_t max)
{
	char full[PATH_MAX];
	char *data = NULL;
	size_t len = 0, cap = 0;
	int fd = -1, rc;

	rc = rootfs_path(full, sizeof full, root, path);
	if (rc < 0)
		return rc;
	fd = open(full, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return kiln_fail(errno == ENOENT || errno == ENOTDIR ? KILN_ENOTFOUND : KILN_ERROR,
				 "%s: %s", full, strerror(errno));
	for (;;) {
		ssize_t r;

		if (len == max)
			break;
		if (cap - len < 2) {
			size_t ncap = cap ? cap * 2 : 512;
			char *p;

			if (ncap > max + 1)
				ncap = max + 1;
			p = realloc(data, ncap);
			if (!p) {
				rc = kiln_fail(KILN_ERROR, "out of memory");
				goto cleanup;
			}
			data = p;
			cap = ncap;
		}
		r = read(fd, data + len, cap - len - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = kiln_fail(KILN_ERROR, "%s: %s", full, strerror(errno));
			goto cleanup;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	if (!data) {
		data = malloc(1);
		if (!data) {
			rc = kiln_fail(KILN_ERROR, "out of memory");
			goto cleanup;
		}
	}
	data[len] = '\0';
	*out = data;
	if (out_len)
		*out_len = len;
	data = NULL;
	rc = 0;
cleanup:
	free(data);
	if (fd >= 0)
		close(fd);
	return rc;
}

char *rootfs_trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

int rootfs_read_line(char *out, size_t n, const char *root, const char *path)
{
	char *data = NULL, *nl, *s;
	int rc = rootfs_read(&data, NULL, root, path, 4096);

	if (rc < 0)
		return rc;
	nl = strchr(data, '\n');
	if (nl)
		*nl = '\0';
	s = rootfs_trim(data);
	kiln_strlcpy(out, s, n);
	free(data);
	return 0;
}

int rootfs_read_u64(unsigned long long *out, const char *root, const char *path)
{
	char line[64];
	int64_t v;
	int rc = rootfs_read_line(line, sizeof line, root, path);

	if (rc < 0)
		return rc;
	rc = kiln_parse_int64(&v, line, 0, INT64_MAX);
	if (rc < 0)
		return kiln_fail_prefix(rc, "%s", path);
	*out = (unsigned long long)v;
	return 0;
}

int rootfs_resolve(char *out, size_t n, const char *root, const char *path)
{
	char cur[PATH_MAX], full[PATH_MAX], target[PATH_MAX];
	int hops, rc;

	if (kiln_strlcpy(cur, path, sizeof cur) >= sizeof cur)
		return kiln_fail(KILN_ETOOBIG, "path too long: %s", path);
	for (hops = 0; hops < 16; hops++) {
		struct stat st;
		ssize_t len;

		rc = rootfs_path(full, sizeof full, root, cur);
		if (rc < 0)
			return rc;
		if (lstat(full, &st) < 0)
			return kiln_fail(KILN_ENOTFOUND, "%s: %s", full, strerror(errno));
		if (!S_ISLNK(st.st_mode)) {
			if (kiln_strlcpy(out, cur, n) >= n)
				return kiln_fail(KILN_ETOOBIG, "path too long: %s", cur);
			return 0;
		}
		len = readlink(full, target, sizeof target - 1);
		if (len < 0)
			return kiln_fail(KILN_ERROR, "%s: %s", full, strerror(errno));
		target[len] = '\0';
		if (target[0] == '/') {
			kiln_strlcpy(cur, target, sizeof cur);
		} else {
			/* relative: replace the last component of cur */
			char *slash = strrchr(cur, '/');
			size_t keep = slash ? (size_t)(slash - cur) + 1 : 0;
			int w;

			if (keep + strlen(target) + 1 > sizeof cur)
				return kiln_fail(KILN_ETOOBIG, "path too long: %s", target);
			w = snprintf(cur + keep, sizeof cur - keep, "%s", target);
			(void)w;
		}
	}
	return kiln_fail(KILN_ERROR, "%s: too many symbolic links", path);
}
