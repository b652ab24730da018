/* SPDX-License-Identifier: Apache-2.0 */
/* Host facts: names and ids, OS and kernel, CPU, memory, load, iowait, DMI, block devices, filesystems. */
#ifndef KILN_AGENT_HOST_H
#define KILN_AGENT_HOST_H

#include <jansson.h>

/* The previous /proc/stat sample, so that the iowait share covers the time since the last report. */
struct host_state {
	unsigned long long cpu_total;
	unsigned long long cpu_iowait;
};

/*
 * Builds the report's "host" object from files under root. A fact whose file is missing or
 * unreadable is left out; only out of memory fails. The caller owns *out.
 */
int host_collect(json_t **out, struct host_state *st, const char *root);

/* Builds the "disks" array from root/sys/block: devices with a device/ link (no loop, ram, dm). */
int host_disks_collect(json_t **out, const char *root);

/*
 * Test-only: with --root given, a file at root/.kiln-test/statvfs stands in for statvfs(2)
 * for the paths it lists, one a line: "PATH FRSIZE BLOCKS BFREE BAVAIL FILES FFREE FAVAIL"
 * (struct statvfs's fields; a space in PATH written "\040" as in /proc/mounts), so that a
 * test can stage a full disk; the paths it does not list are left out. An agent without
 * --root never reads it.
 */
#define HOST_FS_STAGED "/.kiln-test/statvfs"

/*
 * Builds the "filesystems" array: statvfs of "/", "/tmp" and each path of paths
 * (comma-separated absolute paths, or NULL), all under root, and of spool_dir (the agent's
 * own folder, not under root; NULL: none), one entry per
 * filesystem (the first path naming it): {"path","mount","fstype","size_bytes",
 * "avail_bytes","used_pct","inodes_used_pct","inodes_avail"}, the mount from
 * root/proc/self/mounts (left out when unknown), used_pct as df counts it (blocks in use
 * against those in use and available to users). A path that does not exist, or is on a
 * read-only filesystem, is left out;
 * only out of memory and a malformed staged file fail. The caller owns *out.
 */
int host_filesystems_collect(json_t **out, const char *root, const char *spool_dir,
			     const char *paths);

/* Parses os-release text: sets *pretty, *id, *version_id (malloc'd, or NULL when absent). */
int host_os_release_parse(char **pretty, char **id, char **version_id, const char *text);

#endif
