/* SPDX-License-Identifier: Apache-2.0 */
/* The facts host_rules.c judges: the kernel's alarms (soft lockup, hung task, RCU stall,
 * machine check, OOM kill) and filesystems filling up. Part of struct health_facts (health.h). */
#ifndef KILND_HEALTH_HOST_FACTS_H
#define KILND_HEALTH_HOST_FACTS_H

#include <stddef.h>
#include <stdint.h>

#define HEALTH_KERNEL_ALARMS_MAX 16 /* kinds of alarm kept (one each, the latest) */
#define HEALTH_FILESYSTEMS_MAX 16   /* filesystems of a report judged; the rest are not */

/* The latest alarm of one kind in the node's kernel log, as the health cut keeps it. */
struct health_kernel_alarm {
	const char *kind;        /* the agent's kind: "soft_lockup", "machine_check", ... */
	const char *message;     /* the kernel's line; points into the cut */
	int64_t at;              /* when the kernel logged it (kilnd's clock, from the report's
				  * uptime and the line's time since boot) */
	int this_boot;           /* logged in the boot the node's latest report is from */
	int64_t prior_boot_at;   /* when this kind was last logged in an earlier boot (0: not
				  * seen): a fault that came back after a reboot */
};

/* One filesystem of the latest report. Unknown numbers are -1 (NAN for shares). */
struct health_filesystem {
	const char *path;        /* the path the agent read; points into the cut */
	const char *mount;       /* its mount point, or NULL */
	int64_t size_bytes, avail_bytes;
	double used_pct;         /* as df counts it */
	double inodes_used_pct;  /* NAN: the filesystem counts no inodes (btrfs) */
	int64_t inodes_avail;
};

struct health_host_facts {
	struct health_kernel_alarm alarms[HEALTH_KERNEL_ALARMS_MAX];
	size_t nalarms;
	struct health_filesystem fs[HEALTH_FILESYSTEMS_MAX];
	size_t nfs;
	const char *kmsg_error;  /* why the agent cannot read the kernel log (its latest report's
				  * agent.kmsg_error), or NULL: it reads it */
};

#endif
