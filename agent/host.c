/* SPDX-License-Identifier: Apache-2.0 */
/* Host facts from /proc, /sys and /etc under the agent's root, and the filesystems' fill. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "host.h"
#include "kiln/error.h"
#include "kiln/parse.h"
#include "rootfs.h"

static void set_str(json_t *o, const char *key, const char *v)
{
	if (v && *v)
		json_object_set_new(o, key, json_string(v));
}

static void set_line(json_t *o, const char *key, const char *root, const char *path)
{
	char line[512];

	if (rootfs_read_line(line, sizeof line, root, path) == 0)
		set_str(o, key, line);
}

/* Removes one layer of shell-style quotes from an os-release value, in place. */
static char *unquote(char *v)
{
	size_t n = strlen(v);
	char *r, *w;

	if (n >= 2 && (v[0] == '"' || v[0] == '\'') && v[n - 1] == v[0]) {
		v[n - 1] = '\0';
		v++;
	}
	for (r = w = v; *r; r++) {
		if (*r == '\\' && r[1])
			r++;
		*w++ = *r;
	}
	*w = '\0';
	return v;
}

int host_os_release_parse(char **pretty, char **id, char **version_id, const char *text)
{
	char *copy = strdup(text), *line, *next;
	char *p = NULL, *i = NULL, *v = NULL, *name = NULL, *ver = NULL;

	if (!copy)
		return kiln_fail(KILN_ERROR, "out of memory");
	for (line = copy; line && *line; line = next) {
		char *eq, *key, *val, **slot = NULL;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		key = rootfs_trim(line);
		if (*key == '#' || !(eq = strchr(key, '=')))
			continue;
		*eq = '\0';
		val = unquote(rootfs_trim(eq + 1));
		if (strcmp(key, "PRETTY_NAME") == 0)
			slot = &p;
		else if (strcmp(key, "ID") == 0)
			slot = &i;
		else if (strcmp(key, "VERSION_ID") == 0)
			slot = &v;
		else if (strcmp(key, "NAME") == 0)
			slot = &name;
		else if (strcmp(key, "VERSION") == 0)
			slot = &ver;
		if (slot && *val) {
			free(*slot);
			*slot = strdup(val);
		}
	}
	free(copy);
	if (!p && name) {
		/* No PRETTY_NAME: NAME and VERSION as os-release(5) suggests */
		size_t n = strlen(name) + (ver ? strlen(ver) + 1 : 0) + 1;

		p = malloc(n);
		if (p)
			snprintf(p, n, "%s%s%s", name, ver ? " " : "", ver ? ver : "");
	}
	free(name);
	free(ver);
	*pretty = p;
	*id = i;
	*version_id = v;
	return 0;
}

static void collect_os(json_t *h, const char *root)
{
	char *text = NULL, *pretty = NULL, *id = NULL, *vid = NULL;

	if (rootfs_read(&text, NULL, root, "/etc/os-release", 16384) < 0 &&
	    rootfs_read(&text, NULL, root, "/usr/lib/os-release", 16384) < 0)
		return;
	if (host_os_release_parse(&pretty, &id, &vid, text) == 0) {
		set_str(h, "os", pretty);
		set_str(h, "os_id", id);
		set_str(h, "os_version_id", vid);
	}
	free(pretty);
	free(id);
	free(vid);
	free(text);
}

/* Value after "key<spaces>:" on a /proc/cpuinfo line, or NULL. */
static const char *cpuinfo_value(const char *line, const char *key)
{
	size_t n = strlen(key);
	const char *p;

	if (strncmp(line, key, n) != 0)
		return NULL;
	p = line + n;
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p != ':')
		return NULL;
	p++;
	while (*p == ' ')
		p++;
	return p;
}

static void collect_cpu(json_t *h, const char *root)
{
	char *text = NULL, *line, *next;
	char model[256] = "";
	long long ids[256];
	size_t nids = 0, k;
	long long threads = 0, cores_per_socket = 0;

	if (rootfs_read(&text, NULL, root, "/proc/cpuinfo", 4 << 20) < 0)
		return;
	for (line = text; line && *line; line = next) {
		const char *v;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (cpuinfo_value(line, "processor")) {
			threads++;
		} else if (!model[0] && (v = cpuinfo_value(line, "model name"))) {
			kiln_strlcpy(model, v, sizeof model);
		} else if ((v = cpuinfo_value(line, "physical id"))) {
			int64_t id;

			if (kiln_parse_int64(&id, v, 0, INT32_MAX) == 0) {
				for (k = 0; k < nids && ids[k] != id; k++)
					;
				if (k == nids && nids < sizeof ids / sizeof ids[0])
					ids[nids++] = id;
			}
		} else if (!cores_per_socket && (v = cpuinfo_value(line, "cpu cores"))) {
			int64_t c;

			if (kiln_parse_int64(&c, v, 1, 1 << 20) == 0)
				cores_per_socket = c;
		}
	}
	free(text);
	set_str(h, "cpu_model", rootfs_trim(model));
	if (threads)
		json_object_set_new(h, "cpu_threads", json_integer(threads));
	if (nids)
		json_object_set_new(h, "cpu_sockets", json_integer((json_int_t)nids));
	if (nids && cores_per_socket)
		json_object_set_new(h, "cpu_cores", json_integer((json_int_t)nids * cores_per_socket));
}

static void collect_meminfo(json_t *h, const char *root)
{
	char *text = NULL, *line, *next;

	if (rootfs_read(&text, NULL, root, "/proc/meminfo", 65536) < 0)
		return;
	for (line = text; line && *line; line = next) {
		unsigned long long kb;
		const char *key = NULL;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (strncmp(line, "MemTotal:", 9) == 0)
			key = "memory_total_bytes";
		else if (strncmp(line, "MemAvailable:", 13) == 0)
			key = "memory_available_bytes";
		if (key && sscanf(strchr(line, ':') + 1, "%llu", &kb) == 1)
			json_object_set_new(h, key, json_integer((json_int_t)(kb * 1024)));
	}
	free(text);
}

static void collect_load(json_t *h, const char *root)
{
	char line[256];
	double l1, l5, l15;
	double up;

	if (rootfs_read_line(line, sizeof line, root, "/proc/loadavg") == 0 &&
	    sscanf(line, "%lf %lf %lf", &l1, &l5, &l15) == 3)
		json_object_set_new(h, "load", json_pack("[f,f,f]", l1, l5, l15));
	if (rootfs_read_line(line, sizeof line, root, "/proc/uptime") == 0 &&
	    sscanf(line, "%lf", &up) == 1 && up >= 0)
		json_object_set_new(h, "uptime_s", json_integer((json_int_t)up));
}

/* iowait as a share of all CPU time since the previous sample (since boot the first time). */
static void collect_iowait(json_t *h, struct host_state *st, const char *root)
{
	char line[512];
	unsigned long long v[10] = { 0 }, total = 0, dt, di;
	int n, i;

	if (rootfs_read_line(line, sizeof line, root, "/proc/stat") < 0 || strncmp(line, "cpu ", 4))
		return;
	n = sscanf(line + 4, "%llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
		   &v[4], &v[5], &v[6], &v[7]);
	if (n < 5)
		return;
	for (i = 0; i < n; i++)
		total += v[i];
	if (st && total > st->cpu_total && v[4] >= st->cpu_iowait) {
		dt = total - st->cpu_total;
		di = v[4] - st->cpu_iowait;
	} else {
		dt = total;
		di = v[4];
	}
	if (dt)
		json_object_set_new(h, "cpu_iowait_pct", json_real((double)di * 100.0 / (double)dt));
	if (st) {
		st->cpu_total = total;
		st->cpu_iowait = v[4];
	}
}

int host_collect(json_t **out, struct host_state *st, const char *root)
{
	json_t *h = json_object();

	if (!h)
		return kiln_fail(KILN_ERROR, "out of memory");
	set_line(h, "hostname", root, "/proc/sys/kernel/hostname");
	set_line(h, "machine_id", root, "/etc/machine-id");
	set_line(h, "boot_id", root, "/proc/sys/kernel/random/boot_id");
	collect_os(h, root);
	set_line(h, "kernel", root, "/proc/sys/kernel/osrelease");
	set_line(h, "dmi_serial", root, "/sys/class/dmi/id/product_serial");
	set_line(h, "dmi_product", root, "/sys/class/dmi/id/product_name");
	set_line(h, "dmi_vendor", root, "/sys/class/dmi/id/sys_vendor");
	set_line(h, "dmi_board_serial", root, "/sys/class/dmi/id/board_serial");
	set_line(h, "dmi_uuid", root, "/sys/class/dmi/id/product_uuid");
	set_line(h, "bios_version", root, "/sys/class/dmi/id/bios_version");
	collect_cpu(h, root);
	collect_meminfo(h, root);
	collect_load(h, root);
	collect_iowait(h, st, root);
	*out = h;
	return 0;
}

static int skip_block(const char *name)
{
	static const char *const prefixes[] = { "loop", "ram", "zram", "dm-", "md", "sr", "fd", "nbd" };
	size_t i;

	if (name[0] == '.')
		return 1;
	for (i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
		if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0)
			return 1;
	return 0;
}

static int block_filter(const struct dirent *de)
{
	return !skip_block(de->d_name);
}

int host_disks_collect(json_t **out, const char *root)
{
	char dir[PATH_MAX], path[PATH_MAX], full[PATH_MAX], line[256];
	struct dirent **names = NULL;
	json_t *arr = json_array();
	int rc, n = 0, i;

	if (!arr)
		return kiln_fail(KILN_ERROR, "out of memory");
	rc = rootfs_path(dir, sizeof dir, root, "/sys/block");
	if (rc < 0)
		goto cleanup;
	n = scandir(dir, &names, block_filter, alphasort);
	if (n < 0) {
		n = 0; /* no /sys/block: no disks */
		names = NULL;
	}
	for (i = 0; i < n; i++) {
		const char *name = names[i]->d_name;
		unsigned long long sectors, rot;
		struct stat sb;
		json_t *disk;

		snprintf(path, sizeof path, "/sys/block/%.200s/device", name);
		if (rootfs_path(full, sizeof full, root, path) < 0 || stat(full, &sb) < 0)
			continue; /* virtual device */
		disk = json_object();
		if (!disk || json_array_append_new(arr, disk) < 0) {
			rc = kiln_fail(KILN_ERROR, "out of memory");
			goto cleanup;
		}
		json_object_set_new(disk, "name", json_string(name));
		snprintf(path, sizeof path, "/sys/block/%.200s/device/model", name);
		if (rootfs_read_line(line, sizeof line, root, path) == 0 && line[0])
			json_object_set_new(disk, "model", json_string(line));
		snprintf(path, sizeof path, "/sys/block/%.200s/device/serial", name);
		if (rootfs_read_line(line, sizeof line, root, path) == 0 && line[0])
			json_object_set_new(disk, "serial", json_string(line));
		snprintf(path, sizeof path, "/sys/block/%.200s/size", name);
		if (rootfs_read_u64(&sectors, root, path) == 0)
			json_object_set_new(disk, "size_bytes", json_integer((json_int_t)(sectors * 512)));
		snprintf(path, sizeof path, "/sys/block/%.200s/queue/rotational", name);
		if (rootfs_read_u64(&rot, root, path) == 0)
			json_object_set_new(disk, "rotational", json_boolean(rot != 0));
		json_object_set_new(disk, "nvme", json_boolean(strncmp(name, "nvme", 4) == 0));
	}
	*out = arr;
	arr = NULL;
	rc = 0;
cleanup:
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	json_decref(arr);
	return rc;
}

/* --- filesystems ---------------------------------------------------------------------- */

/* One filesystem's numbers, as statvfs gives them (in units of frsize). */
struct fs_numbers {
	unsigned long long frsize, blocks, bfree, bavail, files, ffree, favail;
	unsigned long long fsid;
	int has_fsid;
};

/* "\040" and the other octal escapes of /proc/mounts, undone in place. */
static void mounts_unescape(char *s)
{
	char *w = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*w++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*w++ = *s;
		}
	}
	*w = '\0';
}

/* Splits line at whitespace into at most max fields, in place; returns how many. */
static size_t split_fields(char *line, char **fields, size_t max)
{
	size_t n = 0;

	while (*line && n < max) {
		while (*line == ' ' || *line == '\t' || *line == '\n')
			*line++ = '\0';
		if (!*line)
			break;
		fields[n++] = line;
		while (*line && *line != ' ' && *line != '\t' && *line != '\n')
			line++;
	}
	return n;
}

/* The mount point holding path (the longest mount point of root/proc/mounts that is path or
 * a folder above it, the last mounted when two are the same) and its type; "" when unknown. */
static void mount_of(char *mnt, size_t mlen, char *type, size_t tlen, const char *mounts,
		     const char *path)
{
	const char *p = mounts;
	size_t best = 0;

	mnt[0] = type[0] = '\0';
	while (p && *p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p), mplen;
		char line[1024], *f[4];

		if (len < sizeof line) {
			memcpy(line, p, len);
			line[len] = '\0';
			if (split_fields(line, f, 4) == 4) {
				mounts_unescape(f[1]);
				mplen = strlen(f[1]);
				if (mplen >= best && strncmp(path, f[1], mplen) == 0 &&
				    (path[mplen] == '\0' || path[mplen] == '/' || strcmp(f[1], "/") == 0)) {
					best = mplen;
					kiln_strlcpy(mnt, f[1], mlen);
					kiln_strlcpy(type, f[2], tlen);
				}
			}
		}
		p = nl ? nl + 1 : NULL;
	}
}

/* The staged numbers of path from the test fixture text (see host.h), 0 when listed. */
static int staged_numbers(struct fs_numbers *n, const char *staged, const char *path)
{
	const char *p = staged;

	while (p && *p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		char line[1024], *f[8];
		int64_t v[7];

		if (len < sizeof line) {
			memcpy(line, p, len);
			line[len] = '\0';
			if (split_fields(line, f, 8) == 8 && (mounts_unescape(f[0]), 1) &&
			    strcmp(f[0], path) == 0) {
				for (int i = 0; i < 7; i++)
					if (kiln_parse_int64(&v[i], f[i + 1], 0, INT64_MAX) < 0)
						return kiln_fail(KILN_EINVAL, "staged statvfs of %s: '%s'",
								 path, f[i + 1]);
				*n = (struct fs_numbers){ (unsigned long long)v[0], (unsigned long long)v[1],
							  (unsigned long long)v[2], (unsigned long long)v[3],
							  (unsigned long long)v[4], (unsigned long long)v[5],
							  (unsigned long long)v[6], 0, 0 };
				return 0;
			}
		}
		p = nl ? nl + 1 : NULL;
	}
	return KILN_ENOTFOUND;
}

static int real_numbers(struct fs_numbers *n, const char *root, const char *path)
{
	char full[PATH_MAX];
	struct statvfs sv;
	int rc;

	if ((rc = rootfs_path(full, sizeof full, root, path)) < 0)
		return rc;
	if (statvfs(full, &sv) < 0)
		return kiln_fail(KILN_ENOTFOUND, "%s: %s", full, strerror(errno));
	if (sv.f_flag & ST_RDONLY) /* a read-only image (squashfs, a read-only root) never fills */
		return KILN_ENOTFOUND;
	*n = (struct fs_numbers){ sv.f_frsize ? sv.f_frsize : sv.f_bsize, sv.f_blocks, sv.f_bfree,
				  sv.f_bavail, sv.f_files, sv.f_ffree, sv.f_favail, sv.f_fsid, 1 };
	return 0;
}

/* Rounded to 0.1, as df's figures are read. */
static double pct(unsigned long long part, unsigned long long whole)
{
	return whole ? (double)(long long)((double)part * 1000.0 / (double)whole + 0.5) / 10.0 : 0;
}

/* The filesystem entry of path, unless its filesystem (by mount point, else fsid) is one
 * already in arr. */
static int fs_add(json_t *arr, const char *path, const struct fs_numbers *n, const char *mnt,
		  const char *type)
{
	unsigned long long used = n->blocks >= n->bfree ? n->blocks - n->bfree : 0;
	char key[PATH_MAX + 32];
	size_t i;
	json_t *o;

	if (n->blocks == 0 || n->frsize == 0)
		return 0; /* no blocks: a pseudo filesystem (proc, sysfs) */
	if (mnt[0])
		snprintf(key, sizeof key, "mount:%s", mnt);
	else if (n->has_fsid)
		snprintf(key, sizeof key, "fsid:%llx", n->fsid);
	else
		snprintf(key, sizeof key, "path:%s", path);
	json_array_foreach(arr, i, o)
		if (strcmp(json_string_value(json_object_get(o, "_key")), key) == 0)
			return 0;
	o = json_pack("{s:s,s:s,s:I,s:I,s:f}", "_key", key, "path", path, "size_bytes",
		      (json_int_t)(n->blocks * n->frsize), "avail_bytes",
		      (json_int_t)(n->bavail * n->frsize), "used_pct", pct(used, used + n->bavail));
	if (!o || json_array_append_new(arr, o) < 0)
		return kiln_fail(KILN_ERROR, "out of memory");
	if (mnt[0])
		json_object_set_new(o, "mount", json_string(mnt));
	if (type[0])
		json_object_set_new(o, "fstype", json_string(type));
	if (n->files > 0) { /* btrfs and others count no inodes */
		json_object_set_new(o, "inodes_used_pct", json_real(pct(n->files - n->ffree, n->files)));
		json_object_set_new(o, "inodes_avail", json_integer((json_int_t)n->favail));
	}
	return 0;
}

int host_filesystems_collect(json_t **out, const char *root, const char *spool_dir,
			     const char *paths)
{
	char *mounts = NULL, *staged = NULL, one[PATH_MAX];
	const char *fixed[3] = { "/", spool_dir, "/tmp" }, *p;
	json_t *arr = json_array();
	size_t len, i;
	int rc = 0;

	if (!arr)
		return kiln_fail(KILN_ERROR, "out of memory");
	if (rootfs_read(&mounts, &len, root, "/proc/self/mounts", 1 << 20) < 0)
		mounts = NULL;
	if (root && *root && strcmp(root, "/") != 0 &&
	    rootfs_read(&staged, &len, root, HOST_FS_STAGED, 1 << 16) < 0)
		staged = NULL;
	for (i = 0, p = paths; rc == 0; i++) {
		char mnt[PATH_MAX], type[64];
		struct fs_numbers n = { 0 };
		const char *path;

		if (i < 3) {
			path = fixed[i];
		} else {
			size_t l;

			if (!p || !*p)
				break;
			l = strcspn(p, ",");
			if (l >= sizeof one) {
				p += l + (p[l] == ',');
				continue;
			}
			memcpy(one, p, l);
			one[l] = '\0';
			p += l + (p[l] == ',');
			path = rootfs_trim(one);
		}
		if (!path || path[0] != '/')
			continue;
		/* the staged file is the whole truth of a test root; the spool lies outside the
		 * root (it is the agent's own folder) */
		if (staged)
			rc = staged_numbers(&n, staged, path);
		else
			rc = real_numbers(&n, i == 1 ? NULL : root, path);
		if (rc == KILN_ENOTFOUND) { /* not there (a path not mounted on this node) */
			rc = 0;
			continue;
		}
		if (rc < 0)
			break;
		mount_of(mnt, sizeof mnt, type, sizeof type, mounts, path);
		rc = fs_add(arr, path, &n, mnt, type);
	}
	for (i = 0; rc == 0 && i < json_array_size(arr); i++)
		json_object_del(json_array_get(arr, i), "_key");
	free(mounts);
	free(staged);
	if (rc < 0) {
		json_decref(arr);
		return rc;
	}
	*out = arr;
	return 0;
}
