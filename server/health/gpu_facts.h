/* SPDX-License-Identifier: Apache-2.0 */
/* The facts gpu_rules.c judges: GPU clocks held down (NVML clocks-event reasons), PCIe
 * replay/AER and NVLink error counters rising between reports. Part of struct health_facts
 * (health.h). */
#ifndef KILND_HEALTH_GPU_FACTS_H
#define KILND_HEALTH_GPU_FACTS_H

#include <stddef.h>
#include <stdint.h>

#define HEALTH_GPU_CLOCKS_MAX 64 /* GPUs a report may carry (HEALTH_GPUS_MAX) */
#define HEALTH_GPU_RISES_MAX 96  /* counters kept rising at once; the rest are counted */

/* NVML clocks-event reasons that mean trouble: HW slowdown (a factor of 2 or more: heat,
 * the PSU's power brake, a power excursion), HW and SW thermal slowdown, HW power brake.
 * SW power cap alone is a GPU running at its power budget, which is normal under load. */
#define HEALTH_CLOCK_TROUBLE_MASK UINT64_C(0xE8)

/* One GPU's clocks in the latest report. Unknown numbers are -1. */
struct health_gpu_clock {
	int64_t index;
	const char *pci_bus_id;  /* may be NULL; points into the cut */
	int64_t util_pct;        /* utilization_gpu_pct */
	int64_t sm_mhz, sm_max_mhz;
	uint64_t reasons;        /* clock_event_reasons */
	int64_t held_reports;    /* consecutive reports (this one included) with a trouble reason */
	int64_t held_since;      /* when the first of them came (0: none) */
};

enum health_gpu_counter {
	HEALTH_PCIE_REPLAY,      /* NVML's PCIe replay counter (since the driver loaded) */
	HEALTH_AER_CORRECTABLE,  /* the GPU's PCI device's AER totals (since boot) */
	HEALTH_AER_NONFATAL,
	HEALTH_AER_FATAL,
	HEALTH_NVLINK_REPLAY,    /* one NVLink's data-link-layer counters (since the driver loaded) */
	HEALTH_NVLINK_RECOVERY,
	HEALTH_NVLINK_CRC,       /* CRC flit + CRC data errors */
};

/* A counter that rose between two reports: from before to value, last at rose_at. */
struct health_gpu_rise {
	int64_t index;
	const char *pci_bus_id;  /* may be NULL; points into the cut */
	enum health_gpu_counter counter;
	int link;                /* NVLink counters: the link; else -1 */
	int64_t before, value;
	int64_t rose_at;
};

/* A GPU whose NVLinks are fewer active than the most it ever had active (a link down: jobs
 * fall back to PCIe, or NCCL fails), in low_reports reports in a row. */
struct health_gpu_links {
	int64_t index;
	const char *pci_bus_id;  /* may be NULL; points into the cut */
	int64_t active, most;
	int64_t low_reports;
};

/* A GPU's ECC and MIG modes, current and pending (NVML applies a change at the next GPU
 * reset). -1: not reported (a GPU without ECC or MIG). */
struct health_gpu_mode {
	int64_t index;
	const char *pci_bus_id;  /* may be NULL; points into the cut */
	int ecc, ecc_pending, mig, mig_pending;
};

struct health_gpu_facts {
	struct health_gpu_clock clocks[HEALTH_GPU_CLOCKS_MAX];
	size_t nclocks;
	struct health_gpu_rise rises[HEALTH_GPU_RISES_MAX]; /* every counter that ever rose */
	size_t nrises;
	struct health_gpu_links links_down[HEALTH_GPU_CLOCKS_MAX]; /* GPUs with links down */
	size_t nlinks_down;
	struct health_gpu_mode modes[HEALTH_GPU_CLOCKS_MAX]; /* GPUs whose modes want a word */
	size_t nmodes;
};

#endif
