/* SPDX-License-Identifier: Apache-2.0 */
/* The overnight report: what went wrong over a window, what was done about it and by whom,
 * temperature and power peaks and energy per rack, and what still needs attention. */
#ifndef KILND_REPORT_H
#define KILND_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "store/store.h"

/* Samples further apart than this are not integrated across (the agent was away). */
#define REPORT_ENERGY_GAP_MAX_S 600

/* The price of a kWh for the energy cost (0: no cost shown) and its currency ("EUR"; may be
 * NULL). Set once at start (kilnd.conf [report]); read by every report. */
void report_energy_price_set(double per_kwh, const char *currency);

/*
 * Energy in watt-hours of one node's samples (sorted by time): the trapezoid rule between
 * consecutive samples with a known power, skipping gaps over max_gap seconds.
 */
double report_energy_wh(const struct agent_sample *s, size_t n, int64_t max_gap);

/*
 * Builds the report for since <= time <= until. *out (caller owns):
 *   {"since","until","went_bad":[{"node","first","last","severity","events","message",
 *    "recovered"}], "actions":[{"time","actor","automatic","action","target","outcome"}],
 *    "critical_events":[{"time","node","source","kind","message"}],
 *    "racks":[{"rack","nodes","temperature_peak_c","temperature_peak_node",
 *    "temperature_peak_time","power_peak_w","power_peak_node","power_peak_time",
 *    "inlet_peak_c","inlet_peak_node","inlet_peak_time","system_power_peak_w",
 *    "system_power_peak_node","system_power_peak_time","energy_kwh","energy_source","cost"}],
 *    "energy":{"source","nodes_bmc","nodes_agent","method","total_kwh","price_per_kwh",
 *    "currency","total_cost"}, "attention":[{"node","reasons":[...]}]}
 * temperature_peak and power_peak are the agents' GPU readings (NVML); inlet_peak and
 * system_power_peak the BMCs' (the poller's history). Energy integrates each node's BMC
 * power where it has readings in the window, else its GPU power; energy_source and
 * energy.source say which: "bmc", "agent", "bmc+agent" or null.
 */
int report_build(json_t **out, struct store *st, int64_t since, int64_t until);

#endif
