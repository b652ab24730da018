/* SPDX-License-Identifier: Apache-2.0 */
/* GPU compute processes named for the operator: the command and its user, from /proc. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/parse.h"
#include "procs.h"
#include "rootfs.h"

#define PASSWD_MAX (1u << 20)

/* The login name of uid in root's /etc/passwd into buf; 0 when found. */
static int passwd_name(char *buf, size_t len, const char *root, long uid)
{
	char *text = NULL, *line, *next;
	size_t n = 0;
	int found = -1;

	if (rootfs_read(&text, &n, root, "/etc/passwd", PASSWD_MAX) < 0)
		return -1;
	/* name:password:uid:... a line */
	for (line = text; line && *line && found < 0; line = next) {
		char *name = line, *pw, *id;
		int64_t v;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (!(pw = strchr(line, ':')) || !(id = strchr(pw + 1, ':')))
			continue;
		*pw = '\0';
		*strchrnul(id + 1, ':') = '\0';
		if (kiln_parse_int64(&v, id + 1, 0, INT32_MAX) == 0 && v == uid) {
			snprintf(buf, len, "%s", name);
			found = 0;
		}
	}
	free(text);
	return found;
}

/* The real uid on /proc/PID/status' "Uid:" line; -1 when not read. */
static long proc_uid(const char *root, long long pid)
{
	char path[64], *text = NULL, *p;
	size_t n = 0;
	long uid = -1;

	snprintf(path, sizeof(path), "/proc/%lld/status", pid);
	if (rootfs_read(&text, &n, root, path, 64 * 1024) < 0)
		return -1;
	/* "Uid:\treal\teffective\tsaved\tfs" */
	p = strstr(text, "\nUid:");
	if (p) {
		char num[24];
		int64_t v;

		p += 5;
		p += strspn(p, " \t");
		snprintf(num, sizeof(num), "%.*s", (int)strcspn(p, " \t\n"), p);
		if (kiln_parse_int64(&v, num, 0, INT32_MAX) == 0)
			uid = (long)v;
	}
	free(text);
	return uid;
}

static void annotate_one(json_t *proc, const char *root)
{
	long long pid = json_integer_value(json_object_get(proc, "pid"));
	char path[64], buf[256];
	long uid;

	if (pid <= 0)
		return;
	if (!json_object_get(proc, "name")) {
		snprintf(path, sizeof(path), "/proc/%lld/comm", pid);
		if (rootfs_read_line(buf, sizeof(buf), root, path) == 0 && rootfs_trim(buf)[0])
			json_object_set_new(proc, "name", json_string(rootfs_trim(buf)));
	}
	uid = proc_uid(root, pid);
	if (uid < 0)
		return;
	if (passwd_name(buf, sizeof(buf), root, uid) < 0)
		snprintf(buf, sizeof(buf), "%ld", uid);
	json_object_set_new(proc, "user", json_string(buf));
}

void procs_annotate(json_t *gpus, const char *root)
{
	size_t i, j;
	json_t *g, *p;

	json_array_foreach(gpus, i, g)
		json_array_foreach(json_object_get(g, "processes"), j, p)
			annotate_one(p, root);
}
