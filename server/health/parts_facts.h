/* SPDX-License-Identifier: Apache-2.0 */
/* The facts parts_rules.c judges: every part the BMC rates (fans, PSUs, memory, processors,
 * drives...), its HealthRollup, and the BMC's clock. Part of struct health_facts (health.h). */
#ifndef KILND_HEALTH_PARTS_FACTS_H
#define KILND_HEALTH_PARTS_FACTS_H

#include <stddef.h>
#include <stdint.h>

#define HEALTH_PARTS_MAX 8          /* parts named one by one; the rest are counted */

/* One part the BMC rates not OK, or a fan at 0 RPM (copied out of the sensors JSON). */
struct health_part {
	char type[16];              /* "fan", "memory", "processor", "gpu", "drive", "sensor"... */
	char id[64];                /* the resource's Id (a fan's MemberId), may be empty */
	char name[80];
	char location[80];          /* Location.PartLocation.ServiceLabel, DeviceLocator, "" */
	int level;                  /* the BMC's rating: 0 OK (or none), 1 Warning, 2 Critical */
	int zero_rpm;               /* a fan that reads 0 RPM */
};

struct health_parts_facts {
	struct health_part parts[HEALTH_PARTS_MAX];
	size_t nparts;
	size_t parts_more;          /* more parts not OK than parts[] holds */
	int worst_read;             /* the worst rating of any reading or part kiln read (0..2) */
	int rollup_level;           /* the worst HealthRollup the BMC gives (System, chassis) */
	char rollup_name[48];       /* whose: "system", "chassis Chassis.1" */
	int clock_known;            /* the BMC's clock was read (bmc_clock in the sensors JSON) */
	int64_t clock_skew_s;       /* the BMC's clock less kilnd's (negative: behind) */
	int64_t clock_read;         /* when (kilnd's clock) */
};

#endif
