/* SPDX-License-Identifier: Apache-2.0 */
/* Host facts: names and ids, OS and kernel, CPU, memory, load, iowait, DMI, block devices. */
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

/* Parses os-release text: sets *pretty, *id, *version_id (malloc'd, or NULL when absent). */
int host_os_release_parse(char **pretty, char **id, char **version_id, const char *text);

#endif
