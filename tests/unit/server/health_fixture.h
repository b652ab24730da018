/* SPDX-License-Identifier: Apache-2.0 */
/* The healthy node the health rule tests start from (test_health*.c). */
#ifndef KILN_TEST_HEALTH_FIXTURE_H
#define KILN_TEST_HEALTH_FIXTURE_H

#include "health/health.h"

#define NOW 1700000000

/* A healthy powered-on node with a BMC and an agent that reported 10 s ago. */
static inline void healthy(struct health_facts *f)
{
	health_facts_init(f, NOW);
	f->has_bmc = 1;
	f->bmc_reachable = 1;
	f->power = 1;
	f->power_time = NOW - 5;
	f->agent_last_seen = NOW - 10;
	f->agent_interval_s = 30;
	f->gpus_seen = 8;
	f->gpus_expected = 8;
	f->hottest_gpu_c = 60;
	f->inlet_c = 24;
	f->ecc_first = 0;
	f->ecc_last = 0;
	f->nvidia_status = "ok";
	f->driver_version = "550.54.15";
	f->kernel_module_version = "550.54.15";
}

#endif
