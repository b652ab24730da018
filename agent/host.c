/* SPDX-License-Identifier: Apache-2.0 */
/* Host facts from /proc, /sys and /etc under the agent's root. */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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
