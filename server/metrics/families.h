/* SPDX-License-Identifier: Apache-2.0 */
/* GET /metrics' node families and how a node's series are written (metrics.c), for the
 * scrape that puts them together (scrape.c). */
#ifndef KILND_METRICS_FAMILIES_H
#define KILND_METRICS_FAMILIES_H

#include <stdint.h>

#include "metrics/expo.h"
#include "store/store.h"

/* Every node family, in the order written. */
enum fam {
	F_NODES, F_POWER_ON, F_POWER_UNKNOWN, F_POWER_AGE, F_BMC_REACHABLE, F_BMC_LAST_OK,
	F_HEALTH, F_REASON, F_REPAIR, F_HUNG, F_MAINT, F_REINSTALL, F_AGENT_AGE, F_AGENT_SILENT,
	F_BMC_INFO, F_INLET, F_SYS_POWER, F_PSU_FAILED, F_PSU_RED_LOST, F_FANS_FAILED,
	F_SENSOR, F_SENSOR_OK,
	F_GPUS_SEEN, F_GPUS_EXPECTED, F_DRIVER_INFO, F_OS_INFO, F_CUDNN_INFO, F_TOOLKIT_INFO,
	F_REBOOT, F_XID_COUNT, F_XID_LAST,
	F_GPU_INFO, F_GPU_TEMP, F_GPU_POWER, F_GPU_POWER_LIMIT, F_GPU_UTIL, F_GPU_MEM_UTIL,
	F_GPU_MEM_USED, F_GPU_MEM_TOTAL, F_GPU_SM_CLOCK, F_GPU_MEM_CLOCK, F_GPU_ECC_VOL,
	F_GPU_ECC_AGG, F_GPU_RETIRED, F_GPU_RETIRED_PENDING, F_GPU_REMAPPED,
	F_GPU_REMAP_PENDING, F_GPU_REMAP_FAILURE, F_GPU_THROTTLE, F_GPU_THROTTLE_REASON,
	F_COUNT
};

/* Where a family's series of a node come from. */
enum fam_source {
	SRC_LIVE,   /* the node's short columns, written at every scrape (metrics_live_write) */
	SRC_BMC,    /* its sensors and inventory (metrics_bmc_write), kept between scrapes */
	SRC_REPORT, /* its agent's report (metrics_report_write), kept; shown while fresh */
};

/* Declares the node families in e, in order, into f. */
int metrics_families_declare(struct expo *e, struct expo_family *f[F_COUNT]);
enum fam_source metrics_family_source(enum fam fam);

/* 1 when the node's agent reported within the silence limit at now: its agent series are
 * shown. */
int metrics_agent_fresh(const struct metrics_node *n, int64_t now, int silent_intervals,
			int64_t default_interval_s);

/*
 * The node's series of the SRC_LIVE family fam into f[fam]: fresh says whether its agent
 * series are shown, xid is its Xid count (NULL: none). The other writers fill every family
 * of their source for the node named node (in rack, may be NULL). Each returns 0, or a
 * negative code with the message set.
 */
int metrics_live_write(struct expo_family *const f[F_COUNT], enum fam fam,
		       const struct metrics_node *n, int fresh, const struct metrics_xid *xid,
		       int64_t now);
int metrics_bmc_write(struct expo_family *const f[F_COUNT], const char *node, const char *rack,
		      const struct metrics_bmc *b);
int metrics_report_write(struct expo_family *const f[F_COUNT], const char *node,
			 const char *rack, const struct metrics_report *r);

#endif
