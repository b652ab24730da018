/* SPDX-License-Identifier: Apache-2.0 */
/* GET /metrics' node families: how each node's series are written from the store's rows. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "bmc/op/op.h"
#include "health/health.h"
#include "health/health_facts.h"
#include "kiln/error.h"
#include "metrics/families.h"
#include "metrics/metrics.h"

static const struct {
	const char *name;
	int type;
	const char *help;
} fams[F_COUNT] = {
	[F_NODES] = { "kiln_nodes", EXPO_GAUGE, "Nodes in this scrape." },
	[F_POWER_ON] = { "kiln_node_power_on", EXPO_GAUGE,
			 "1 when the BMC last said the node is on, 0 when off or unknown." },
	[F_POWER_UNKNOWN] = { "kiln_node_power_unknown", EXPO_GAUGE,
			      "1 when the power state is unknown (the BMC's last read failed)." },
	[F_POWER_AGE] = { "kiln_node_power_reading_age_seconds", EXPO_GAUGE,
			  "Age of the last power reading." },
	[F_BMC_REACHABLE] = { "kiln_node_bmc_reachable", EXPO_GAUGE,
			      "0 once the BMC failed [poller] unreachable_failures reads in a row." },
	[F_BMC_LAST_OK] = { "kiln_node_bmc_last_success_timestamp_seconds", EXPO_GAUGE,
			    "When the BMC last answered a request (unix time)." },
	[F_HEALTH] = { "kiln_node_health_level", EXPO_GAUGE,
		       "kilnd's health verdict: 0 ok, 1 warning, 2 critical." },
	[F_REASON] = { "kiln_node_health_reason", EXPO_GAUGE,
		       "1 for each kind of reason behind the node's health verdict." },
	[F_REPAIR] = { "kiln_node_repair", EXPO_GAUGE,
		       "1 for what will fix the node's reasons, the strongest class: repair=\"reboot\""
		       " (a reboot may clear it) or \"inspection\" (needs hardware inspection)." },
	[F_HUNG] = { "kiln_node_hung", EXPO_GAUGE,
		     "1 while kilnd judges the node hung (on, agent silent)." },
	[F_MAINT] = { "kiln_node_maintenance", EXPO_GAUGE, "1 while the node is in maintenance." },
	[F_REINSTALL] = { "kiln_node_reinstall_in_progress", EXPO_GAUGE,
			  "1 while a reinstall job is queued or running." },
	[F_AGENT_AGE] = { "kiln_node_agent_last_seen_age_seconds", EXPO_GAUGE,
			  "Seconds since the node's agent last reported." },
	[F_AGENT_SILENT] = { "kiln_node_agent_silent", EXPO_GAUGE,
			     "1 when the agent is silent beyond [health] hung_intervals report "
			     "intervals: the node's agent series are left out." },
	[F_BMC_INFO] = { "kiln_bmc_info", EXPO_INFO,
			 "The BMC's inventory: manufacturer, model and firmware (value 1)." },
	[F_INLET] = { "kiln_bmc_inlet_temperature_celsius", EXPO_GAUGE,
		      "Inlet (ambient) temperature the BMC reports." },
	[F_SYS_POWER] = { "kiln_bmc_power_watts", EXPO_GAUGE,
			  "System power draw the BMC reports." },
	[F_PSU_FAILED] = { "kiln_bmc_psus_failed", EXPO_GAUGE, "PSUs reporting a failure." },
	[F_PSU_RED_LOST] = { "kiln_bmc_psu_redundancy_lost", EXPO_GAUGE,
			     "1 when the PSUs are no longer redundant." },
	[F_FANS_FAILED] = { "kiln_bmc_fans_failed", EXPO_GAUGE, "Fans not reporting OK." },
	[F_SENSOR] = { "kiln_bmc_sensor_reading", EXPO_GAUGE,
		       "A BMC sensor's reading in its unit, by kind and sensor name "
		       "(at most 64 a node)." },
	[F_SENSOR_OK] = { "kiln_bmc_sensor_healthy", EXPO_GAUGE,
			  "1 when the BMC says the sensor is OK, 0 otherwise." },
	[F_GPUS_SEEN] = { "kiln_node_gpus_seen", EXPO_GAUGE,
			  "GPUs NVML counted in the latest report (absent when it counted none "
			  "because of a driver problem)." },
	[F_GPUS_EXPECTED] = { "kiln_node_gpus_expected", EXPO_GAUGE,
			      "The most GPUs the node ever reported." },
	[F_DRIVER_INFO] = { "kiln_node_nvidia_driver_info", EXPO_INFO,
			    "NVIDIA driver library, loaded kernel module, CUDA driver and NVML "
			    "versions, and the agent's NVIDIA status (value 1)." },
	[F_OS_INFO] = { "kiln_node_os_info", EXPO_INFO, "Operating system and kernel (value 1)." },
	[F_CUDNN_INFO] = { "kiln_node_cudnn_info", EXPO_INFO, "cuDNN version found (value 1)." },
	[F_TOOLKIT_INFO] = { "kiln_node_cuda_toolkit_info", EXPO_INFO,
			     "Each CUDA toolkit installed (value 1; at most 8 a node)." },
	[F_REBOOT] = { "kiln_node_reboot_pending", EXPO_GAUGE,
		       "1 when the loaded kernel module is not the installed driver library." },
	[F_XID_COUNT] = { "kiln_node_xid_events_total", EXPO_COUNTER,
			  "Xid events the node's agent reported, ever." },
	[F_XID_LAST] = { "kiln_node_xid_last", EXPO_GAUGE, "The code of the latest Xid event." },
	[F_GPU_INFO] = { "kiln_gpu_info", EXPO_INFO, "A GPU's serial and VBIOS (value 1)." },
	[F_GPU_TEMP] = { "kiln_gpu_temperature_celsius", EXPO_GAUGE, "GPU temperature." },
	[F_GPU_POWER] = { "kiln_gpu_power_watts", EXPO_GAUGE, "GPU power draw." },
	[F_GPU_POWER_LIMIT] = { "kiln_gpu_power_limit_watts", EXPO_GAUGE, "GPU power limit." },
	[F_GPU_UTIL] = { "kiln_gpu_utilization_ratio", EXPO_GAUGE,
			 "GPU utilisation, 0 to 1." },
	[F_GPU_MEM_UTIL] = { "kiln_gpu_memory_utilization_ratio", EXPO_GAUGE,
			     "GPU memory bandwidth utilisation, 0 to 1." },
	[F_GPU_MEM_USED] = { "kiln_gpu_memory_used_bytes", EXPO_GAUGE, "GPU memory in use." },
	[F_GPU_MEM_TOTAL] = { "kiln_gpu_memory_total_bytes", EXPO_GAUGE, "GPU memory size." },
	[F_GPU_SM_CLOCK] = { "kiln_gpu_sm_clock_hertz", EXPO_GAUGE, "GPU SM clock." },
	[F_GPU_MEM_CLOCK] = { "kiln_gpu_memory_clock_hertz", EXPO_GAUGE, "GPU memory clock." },
	[F_GPU_ECC_VOL] = { "kiln_gpu_ecc_volatile_errors_total", EXPO_COUNTER,
			    "ECC errors since the driver loaded, by type." },
	[F_GPU_ECC_AGG] = { "kiln_gpu_ecc_aggregate_errors_total", EXPO_COUNTER,
			    "ECC errors in the GPU's lifetime, by type." },
	[F_GPU_RETIRED] = { "kiln_gpu_retired_pages", EXPO_GAUGE,
			    "Memory pages retired, by cause (sbe, dbe)." },
	[F_GPU_RETIRED_PENDING] = { "kiln_gpu_retired_pages_pending", EXPO_GAUGE,
				    "1 when a page retirement waits for a GPU reset." },
	[F_GPU_REMAPPED] = { "kiln_gpu_remapped_rows", EXPO_GAUGE,
			     "Memory rows remapped, by cause (corrected, uncorrected)." },
	[F_GPU_REMAP_PENDING] = { "kiln_gpu_remapped_rows_pending", EXPO_GAUGE,
				  "1 when a row remap waits for a GPU reset." },
	[F_GPU_REMAP_FAILURE] = { "kiln_gpu_remapped_rows_failure", EXPO_GAUGE,
				  "1 when row remapping failed (the GPU needs service)." },
	[F_GPU_THROTTLE] = { "kiln_gpu_clock_event_reasons", EXPO_GAUGE,
			     "NVML's clock event (throttle) reasons bit mask." },
	[F_GPU_THROTTLE_REASON] = { "kiln_gpu_clock_event_reason", EXPO_GAUGE,
				    "1 for each clock event (throttle) reason active." },
};

/* A GPU's plain numbers: the report's key, its family, a scale to Prometheus' units. */
static const struct {
	const char *key;
	enum fam fam;
	double scale;
} gpu_numbers[] = {
	{ "temperature_c", F_GPU_TEMP, 1 },
	{ "power_draw_w", F_GPU_POWER, 1 },
	{ "power_limit_w", F_GPU_POWER_LIMIT, 1 },
	{ "utilization_gpu_pct", F_GPU_UTIL, 0.01 },
	{ "utilization_memory_pct", F_GPU_MEM_UTIL, 0.01 },
	{ "memory_used_bytes", F_GPU_MEM_USED, 1 },
	{ "memory_total_bytes", F_GPU_MEM_TOTAL, 1 },
	{ "clock_sm_mhz", F_GPU_SM_CLOCK, 1e6 },
	{ "clock_mem_mhz", F_GPU_MEM_CLOCK, 1e6 },
	{ "clock_event_reasons", F_GPU_THROTTLE, 1 },
	{ "retired_pages_pending", F_GPU_RETIRED_PENDING, 1 },
	{ "remapped_rows_pending", F_GPU_REMAP_PENDING, 1 },
	{ "remapped_rows_failure", F_GPU_REMAP_FAILURE, 1 },
};

/* Numbers split by one label: {family, label, value, key}. */
static const struct {
	enum fam fam;
	const char *label, *value, *key;
} gpu_split[] = {
	{ F_GPU_ECC_VOL, "type", "corrected", "ecc_volatile_corrected" },
	{ F_GPU_ECC_VOL, "type", "uncorrected", "ecc_volatile_uncorrected" },
	{ F_GPU_ECC_AGG, "type", "corrected", "ecc_aggregate_corrected" },
	{ F_GPU_ECC_AGG, "type", "uncorrected", "ecc_aggregate_uncorrected" },
	{ F_GPU_RETIRED, "cause", "sbe", "retired_pages_sbe" },
	{ F_GPU_RETIRED, "cause", "dbe", "retired_pages_dbe" },
	{ F_GPU_REMAPPED, "cause", "corrected", "remapped_rows_corrected" },
	{ F_GPU_REMAPPED, "cause", "uncorrected", "remapped_rows_uncorrected" },
};

/* Which families are written at every scrape, and which are kept between scrapes. */
enum fam_source metrics_family_source(enum fam fam)
{
	if (fam >= F_BMC_INFO && fam <= F_SENSOR_OK)
		return SRC_BMC;
	if (fam == F_CUDNN_INFO || fam == F_TOOLKIT_INFO || fam >= F_GPU_INFO)
		return SRC_REPORT;
	return SRC_LIVE;
}

int metrics_families_declare(struct expo *e, struct expo_family *f[F_COUNT])
{
	int rc;

	for (int i = 0; i < F_COUNT; i++)
		if ((rc = expo_family(e, &f[i], fams[i].name, fams[i].type, fams[i].help)) < 0)
			return rc;
	return 0;
}

int metrics_agent_fresh(const struct metrics_node *n, int64_t now, int silent_intervals,
			int64_t default_interval_s)
{
	int64_t interval = n->agent_interval_s > 0 ? n->agent_interval_s : default_interval_s;

	return n->has_agent && now - n->agent_last_seen <= silent_intervals * interval;
}

/* A sample; a series the node's data names twice (two sensors of one name) is kept once. */
static int put(struct expo_family *const f[F_COUNT], enum fam fam, const char *const *labels,
	       double v)
{
	int rc = expo_sample(f[fam], NULL, labels, v);

	return rc == KILN_EEXISTS ? 0 : rc;
}

/* A JSON number or boolean as a double; 0 when it is neither. */
static int json_num(double *out, const json_t *v)
{
	if (json_is_number(v))
		*out = json_number_value(v);
	else if (json_is_boolean(v))
		*out = json_is_true(v) ? 1 : 0;
	else
		return 0;
	return 1;
}

static int health_code(const char *h)
{
	if (!h)
		return -1;
	if (strcmp(h, "critical") == 0)
		return 2;
	return strcmp(h, "warning") == 0 ? 1 : 0;
}

/* One kiln_node_health_reason series per kind present (a kind once). */
static int reasons_write(struct expo_family *const f[F_COUNT], const struct metrics_node *r,
			 const char *nl[])
{
	json_t *arr = r->reasons ? json_loads(r->reasons, 0, NULL) : NULL, *v;
	const char *seen[HEALTH_REASONS_MAX + 1];
	size_t i, n = 0;
	int rc = 0;

	json_array_foreach(arr, i, v) {
		const char *kind = health_reason_kind(json_string_value(v));
		const char *l[] = { "node", nl[1], "rack", nl[3], "kind", kind, NULL };
		size_t k;

		for (k = 0; k < n && strcmp(seen[k], kind) != 0; k++)
			;
		if (k < n || n == HEALTH_REASONS_MAX)
			continue;
		seen[n++] = kind;
		if ((rc = put(f, F_REASON, l, 1)) < 0)
			break;
	}
	json_decref(arr);
	return rc;
}

/* kiln_node_repair for the strongest repair class of the reasons. */
static int repair_write(struct expo_family *const f[F_COUNT], const struct metrics_node *r,
			const char *nl[])
{
	json_t *arr = r->reasons ? json_loads(r->reasons, 0, NULL) : NULL, *v;
	enum health_repair most = HEALTH_REPAIR_NONE;
	size_t i;
	int rc = 0;

	json_array_foreach(arr, i, v) {
		enum health_repair c = health_reason_repair(json_string_value(v));

		if (c > most)
			most = c;
	}
	if (most != HEALTH_REPAIR_NONE) {
		const char *l[] = { "node", nl[1], "rack", nl[3], "repair",
				    health_repair_name(most), NULL };

		rc = put(f, F_REPAIR, l, 1);
	}
	json_decref(arr);
	return rc;
}

/* The agent's short fields (only while it is not silent). */
static int agent_live_write(struct expo_family *const f[F_COUNT], enum fam fam,
			    const struct metrics_node *r, const struct metrics_xid *xid,
			    const char *nl[])
{
	const char *drv[] = { "node", nl[1], "rack", nl[3], "driver_version", r->driver_version,
			      "kernel_module_version", r->kernel_module_version,
			      "cuda_driver_version", r->cuda_driver_version, "nvml_version",
			      r->nvml_version, "status", r->nvidia_status, NULL };
	const char *os[] = { "node", nl[1], "rack", nl[3], "os", r->os, "kernel", r->kernel,
			     NULL };

	switch (fam) {
	case F_GPUS_SEEN:
		return r->gpu_count >= 0 ? put(f, fam, nl, (double)r->gpu_count) : 0;
	case F_GPUS_EXPECTED:
		return put(f, fam, nl, (double)r->gpu_count_max);
	case F_DRIVER_INFO:
		return r->driver_version || r->kernel_module_version || r->nvidia_status
			       ? put(f, fam, drv, 1)
			       : 0;
	case F_OS_INFO:
		return r->os || r->kernel ? put(f, fam, os, 1) : 0;
	case F_REBOOT:
		return put(f, fam, nl,
			   health_reboot_pending(r->nvidia_status, r->driver_version,
						 r->kernel_module_version));
	case F_XID_COUNT:
		return put(f, fam, nl, xid ? (double)xid->count : 0);
	case F_XID_LAST:
		return xid && xid->last_xid >= 0 ? put(f, fam, nl, (double)xid->last_xid) : 0;
	default:
		return 0;
	}
}

int metrics_live_write(struct expo_family *const f[F_COUNT], enum fam fam,
		       const struct metrics_node *r, int fresh, const struct metrics_xid *xid,
		       int64_t now)
{
	const char *nl[] = { "node", r->node, "rack", r->rack, NULL };
	int on = r->power && strcmp(r->power, "on") == 0;
	int unknown = !r->power || strcmp(r->power, "unknown") == 0;

	switch (fam) {
	case F_POWER_ON:
		return put(f, fam, nl, on);
	case F_POWER_UNKNOWN:
		return put(f, fam, nl, unknown);
	case F_POWER_AGE:
		return r->power_time > 0 ? put(f, fam, nl, (double)(now - r->power_time)) : 0;
	case F_BMC_REACHABLE:
		return r->has_state ? put(f, fam, nl, r->reachable) : 0;
	case F_BMC_LAST_OK:
		return r->last_ok > 0 ? put(f, fam, nl, (double)r->last_ok) : 0;
	case F_MAINT:
		return put(f, fam, nl, r->in_maintenance);
	case F_REINSTALL:
		return put(f, fam, nl, r->reinstalling);
	/* the verdict the poller's health sweep stored: what kiln status shows */
	case F_HEALTH:
		return r->health ? put(f, fam, nl, health_code(r->health)) : 0;
	case F_HUNG:
		return r->health ? put(f, fam, nl, r->hung_since > 0) : 0;
	case F_REASON:
		return r->health ? reasons_write(f, r, nl) : 0;
	case F_REPAIR:
		return r->health ? repair_write(f, r, nl) : 0;
	case F_AGENT_AGE:
		return r->has_agent ? put(f, fam, nl, (double)(now - r->agent_last_seen)) : 0;
	case F_AGENT_SILENT:
		return r->has_agent ? put(f, fam, nl, !fresh) : 0;
	default:
		return fresh ? agent_live_write(f, fam, r, xid, nl) : 0;
	}
}

int metrics_bmc_write(struct expo_family *const f[F_COUNT], const char *node, const char *rack,
		      const struct metrics_bmc *r)
{
	const char *nl[] = { "node", node, "rack", rack, NULL };
	const char *info[] = { "node", node, "rack", rack, "manufacturer", r->manufacturer,
			       "model", r->model, "firmware", r->firmware, NULL };
	struct health_facts hf;
	json_t *root, *arr, *s;
	double watts, inlet;
	size_t i, fans_failed = 0, taken = 0;
	int rc;

	if ((r->manufacturer || r->model || r->firmware) && (rc = put(f, F_BMC_INFO, info, 1)) < 0)
		return rc;
	if (!r->sensors)
		return 0;
	root = json_loads(r->sensors, 0, NULL);
	arr = json_object_get(root, "sensors");
	if (!json_is_array(arr)) {
		json_decref(root);
		return 0;
	}
	/* the numbers kilnd's report and health rules take from the same readings (the
	 * sensor facts do not depend on the time) */
	bmc_sensors_summary(root, &watts, &inlet);
	health_facts_init(&hf, 0);
	health_sensor_facts(&hf, r->sensors);
	rc = 0;
	if (!isnan(inlet))
		rc = put(f, F_INLET, nl, inlet);
	if (rc == 0 && !isnan(watts))
		rc = put(f, F_SYS_POWER, nl, watts);
	if (rc == 0)
		rc = put(f, F_PSU_FAILED, nl, hf.psu_failed);
	if (rc == 0)
		rc = put(f, F_PSU_RED_LOST, nl, hf.psu_redundancy_lost);
	json_array_foreach(arr, i, s) {
		const char *name = json_string_value(json_object_get(s, "name"));
		const char *kind = json_string_value(json_object_get(s, "kind"));
		const char *unit = json_string_value(json_object_get(s, "unit"));
		const char *health = json_string_value(json_object_get(s, "health"));
		const char *l[] = { "node", node, "rack", rack, "kind", kind, "sensor", name,
				    "unit", unit, NULL };
		const char *hl[] = { "node", node, "rack", rack, "kind", kind, "sensor", name,
				     NULL };
		int ok = !health || strcasecmp(health, "ok") == 0 || strcasecmp(health, "enabled") == 0;
		double v;

		if (rc < 0 || !name || !kind)
			continue;
		if (strcmp(kind, "fan") == 0 && !ok)
			fans_failed++;
		if (taken >= METRICS_SENSORS_MAX)
			continue;
		taken++;
		if (json_num(&v, json_object_get(s, "value")) && (rc = put(f, F_SENSOR, l, v)) < 0)
			break;
		if (health && (rc = put(f, F_SENSOR_OK, hl, ok)) < 0)
			break;
	}
	if (rc == 0)
		rc = put(f, F_FANS_FAILED, nl, (double)fans_failed);
	json_decref(root);
	return rc;
}

static int gpu_write(struct expo_family *const f[F_COUNT], const json_t *g, const char *nl[])
{
	char index[24];
	const json_t *ix = json_object_get(g, "index"), *reasons;
	const char *l[] = { "node", nl[1], "rack", nl[3], "gpu", index, "UUID",
			    json_string_value(json_object_get(g, "uuid")), "pci_bus_id",
			    json_string_value(json_object_get(g, "pci_bus_id")), "model_name",
			    json_string_value(json_object_get(g, "name")), NULL, NULL, NULL };
	const char *info[] = { l[0], l[1], l[2], l[3], l[4], l[5], l[6], l[7], l[8], l[9],
			       l[10], l[11], "serial", json_string_value(json_object_get(g, "serial")),
			       "vbios_version",
			       json_string_value(json_object_get(g, "vbios_version")), NULL };
	size_t i, n = 0;
	json_t *v;
	double d;
	int rc;

	if (!json_is_integer(ix))
		return 0;
	snprintf(index, sizeof(index), "%" JSON_INTEGER_FORMAT, json_integer_value(ix));
	if ((rc = put(f, F_GPU_INFO, info, 1)) < 0)
		return rc;
	for (i = 0; i < sizeof(gpu_numbers) / sizeof(gpu_numbers[0]); i++)
		if (json_num(&d, json_object_get(g, gpu_numbers[i].key)) &&
		    (rc = put(f, gpu_numbers[i].fam, l, d * gpu_numbers[i].scale)) < 0)
			return rc;
	for (i = 0; i < sizeof(gpu_split) / sizeof(gpu_split[0]); i++) {
		l[12] = gpu_split[i].label;
		l[13] = gpu_split[i].value;
		if (json_num(&d, json_object_get(g, gpu_split[i].key)) &&
		    (rc = put(f, gpu_split[i].fam, l, d)) < 0)
			return rc;
	}
	l[12] = "reason";
	reasons = json_object_get(g, "clock_event_reason_names");
	json_array_foreach(reasons, i, v) {
		if (!json_is_string(v) || n++ >= METRICS_THROTTLE_MAX)
			continue;
		l[13] = json_string_value(v);
		if ((rc = put(f, F_GPU_THROTTLE_REASON, l, 1)) < 0)
			return rc;
	}
	return 0;
}

int metrics_report_write(struct expo_family *const f[F_COUNT], const char *node,
			 const char *rack, const struct metrics_report *r)
{
	const char *nl[] = { "node", node, "rack", rack, NULL };
	const char *cudnn[] = { "node", node, "rack", rack, "version", r->cudnn_version, NULL };
	json_t *arr, *v;
	size_t i;
	int rc = 0;

	if (r->cudnn_version && (rc = put(f, F_CUDNN_INFO, cudnn, 1)) < 0)
		return rc;
	arr = r->toolkits ? json_loads(r->toolkits, 0, NULL) : NULL;
	json_array_foreach(arr, i, v) {
		const char *l[] = { "node", node, "rack", rack, "version",
				    json_string_value(json_object_get(v, "version")), "path",
				    json_string_value(json_object_get(v, "path")), NULL };

		if (i >= METRICS_TOOLKITS_MAX || !l[5])
			break;
		if ((rc = put(f, F_TOOLKIT_INFO, l, 1)) < 0)
			break;
	}
	json_decref(arr);
	if (rc < 0)
		return rc;
	arr = r->gpus ? json_loads(r->gpus, 0, NULL) : NULL;
	json_array_foreach(arr, i, v) {
		if (i >= METRICS_GPUS_MAX || (rc = gpu_write(f, v, nl)) < 0)
			break;
	}
	json_decref(arr);
	return rc;
}
