/* SPDX-License-Identifier: Apache-2.0 */
/* GET /metrics' families, filled in one pass over the store's node rows. */
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
#include "metrics/counters.h"
#include "metrics/metrics.h"

/* Every family a node gives, in the order written. */
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

struct ctx {
	struct expo_family *f[F_COUNT];
	const struct metrics_options *opt;
	int64_t now;
	struct metrics_xid *xids;
	size_t nxids;
	int64_t nodes;
};

/* A sample; a series the node's data names twice (two sensors of one name) is kept once. */
static int put(struct ctx *x, enum fam f, const char *const *labels, double v)
{
	int rc = expo_sample(x->f[f], NULL, labels, v);

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

/* One kiln_node_health_reason series per kind present (a kind once), and kiln_node_repair
 * for the strongest repair class of the reasons. */
static int reasons_write(struct ctx *x, const struct metrics_row *r, const char *node_labels[])
{
	json_t *arr = r->reasons ? json_loads(r->reasons, 0, NULL) : NULL, *v;
	const char *seen[HEALTH_REASONS_MAX + 1];
	enum health_repair most = HEALTH_REPAIR_NONE;
	size_t i, n = 0;
	int rc = 0;

	json_array_foreach(arr, i, v) {
		const char *kind = health_reason_kind(json_string_value(v));
		const char *l[] = { "node", node_labels[1], "rack", node_labels[3], "kind", kind,
				    NULL };
		size_t k;

		for (k = 0; k < n && strcmp(seen[k], kind) != 0; k++)
			;
		if (k < n || n == HEALTH_REASONS_MAX)
			continue;
		seen[n++] = kind;
		if ((rc = put(x, F_REASON, l, 1)) < 0)
			break;
	}
	json_array_foreach(arr, i, v) {
		enum health_repair c = health_reason_repair(json_string_value(v));

		if (c > most)
			most = c;
	}
	if (rc == 0 && most != HEALTH_REPAIR_NONE) {
		const char *l[] = { "node", node_labels[1], "rack", node_labels[3], "repair",
				    health_repair_name(most), NULL };

		rc = put(x, F_REPAIR, l, 1);
	}
	json_decref(arr);
	return rc;
}

static int bmc_write(struct ctx *x, const struct metrics_row *r, const char *nl[])
{
	const char *info[] = { "node", nl[1], "rack", nl[3], "manufacturer", r->bmc_manufacturer,
			       "model", r->bmc_model, "firmware", r->bmc_firmware, NULL };
	struct health_facts hf;
	json_t *root, *arr, *s;
	double watts, inlet;
	size_t i, fans_failed = 0, taken = 0;
	int rc;

	if ((r->bmc_manufacturer || r->bmc_model || r->bmc_firmware) &&
	    (rc = put(x, F_BMC_INFO, info, 1)) < 0)
		return rc;
	if (!r->sensors)
		return 0;
	root = json_loads(r->sensors, 0, NULL);
	arr = json_object_get(root, "sensors");
	if (!json_is_array(arr)) {
		json_decref(root);
		return 0;
	}
	/* the numbers kilnd's report and health rules take from the same readings */
	bmc_sensors_summary(root, &watts, &inlet);
	health_facts_init(&hf, x->now);
	health_sensor_facts(&hf, r->sensors);
	rc = 0;
	if (!isnan(inlet))
		rc = put(x, F_INLET, nl, inlet);
	if (rc == 0 && !isnan(watts))
		rc = put(x, F_SYS_POWER, nl, watts);
	if (rc == 0)
		rc = put(x, F_PSU_FAILED, nl, hf.psu_failed);
	if (rc == 0)
		rc = put(x, F_PSU_RED_LOST, nl, hf.psu_redundancy_lost);
	json_array_foreach(arr, i, s) {
		const char *name = json_string_value(json_object_get(s, "name"));
		const char *kind = json_string_value(json_object_get(s, "kind"));
		const char *unit = json_string_value(json_object_get(s, "unit"));
		const char *health = json_string_value(json_object_get(s, "health"));
		const char *l[] = { "node", nl[1], "rack", nl[3], "kind", kind, "sensor", name,
				    "unit", unit, NULL };
		const char *hl[] = { "node", nl[1], "rack", nl[3], "kind", kind, "sensor", name,
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
		if (json_num(&v, json_object_get(s, "value")) && (rc = put(x, F_SENSOR, l, v)) < 0)
			break;
		if (health && (rc = put(x, F_SENSOR_OK, hl, ok)) < 0)
			break;
	}
	if (rc == 0)
		rc = put(x, F_FANS_FAILED, nl, (double)fans_failed);
	json_decref(root);
	return rc;
}

static int gpu_write(struct ctx *x, const json_t *g, const char *nl[])
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
	if ((rc = put(x, F_GPU_INFO, info, 1)) < 0)
		return rc;
	for (i = 0; i < sizeof(gpu_numbers) / sizeof(gpu_numbers[0]); i++)
		if (json_num(&d, json_object_get(g, gpu_numbers[i].key)) &&
		    (rc = put(x, gpu_numbers[i].fam, l, d * gpu_numbers[i].scale)) < 0)
			return rc;
	for (i = 0; i < sizeof(gpu_split) / sizeof(gpu_split[0]); i++) {
		l[12] = gpu_split[i].label;
		l[13] = gpu_split[i].value;
		if (json_num(&d, json_object_get(g, gpu_split[i].key)) &&
		    (rc = put(x, gpu_split[i].fam, l, d)) < 0)
			return rc;
	}
	l[12] = "reason";
	reasons = json_object_get(g, "clock_event_reason_names");
	json_array_foreach(reasons, i, v) {
		if (!json_is_string(v) || n++ >= METRICS_THROTTLE_MAX)
			continue;
		l[13] = json_string_value(v);
		if ((rc = put(x, F_GPU_THROTTLE_REASON, l, 1)) < 0)
			return rc;
	}
	return 0;
}

static int cmp_xid(const void *key, const void *elem)
{
	int64_t a = *(const int64_t *)key, b = ((const struct metrics_xid *)elem)->node_id;

	return a < b ? -1 : a > b;
}

/* The agent's series: only while it is not silent (r->agent_fresh). */
static int agent_write(struct ctx *x, const struct metrics_row *r, const char *nl[])
{
	const char *drv[] = { "node", nl[1], "rack", nl[3], "driver_version", r->driver_version,
			      "kernel_module_version", r->kernel_module_version,
			      "cuda_driver_version", r->cuda_driver_version, "nvml_version",
			      r->nvml_version, "status", r->nvidia_status, NULL };
	const char *os[] = { "node", nl[1], "rack", nl[3], "os", r->os, "kernel", r->kernel,
			     NULL };
	const char *cudnn[] = { "node", nl[1], "rack", nl[3], "version", r->cudnn_version, NULL };
	const struct metrics_xid *xid =
		x->nxids ? bsearch(&r->node_id, x->xids, x->nxids, sizeof(*x->xids), cmp_xid)
			 : NULL;
	json_t *arr, *v;
	size_t i;
	int rc = 0;

	if (r->gpu_count >= 0 && (rc = put(x, F_GPUS_SEEN, nl, (double)r->gpu_count)) < 0)
		return rc;
	if ((rc = put(x, F_GPUS_EXPECTED, nl, (double)r->gpu_count_max)) < 0 ||
	    ((r->driver_version || r->kernel_module_version || r->nvidia_status) &&
	     (rc = put(x, F_DRIVER_INFO, drv, 1)) < 0) ||
	    ((r->os || r->kernel) && (rc = put(x, F_OS_INFO, os, 1)) < 0) ||
	    (r->cudnn_version && (rc = put(x, F_CUDNN_INFO, cudnn, 1)) < 0) ||
	    (rc = put(x, F_REBOOT, nl,
		      health_reboot_pending(r->nvidia_status, r->driver_version,
					    r->kernel_module_version))) < 0 ||
	    (rc = put(x, F_XID_COUNT, nl, xid ? (double)xid->count : 0)) < 0 ||
	    (xid && xid->last_xid >= 0 && (rc = put(x, F_XID_LAST, nl, (double)xid->last_xid)) < 0))
		return rc;
	arr = r->toolkits ? json_loads(r->toolkits, 0, NULL) : NULL;
	json_array_foreach(arr, i, v) {
		const char *l[] = { "node", nl[1], "rack", nl[3], "version",
				    json_string_value(json_object_get(v, "version")), "path",
				    json_string_value(json_object_get(v, "path")), NULL };

		if (i >= METRICS_TOOLKITS_MAX || !l[5])
			break;
		if ((rc = put(x, F_TOOLKIT_INFO, l, 1)) < 0)
			break;
	}
	json_decref(arr);
	if (rc < 0)
		return rc;
	arr = r->gpus ? json_loads(r->gpus, 0, NULL) : NULL;
	json_array_foreach(arr, i, v) {
		if (i >= METRICS_GPUS_MAX || (rc = gpu_write(x, v, nl)) < 0)
			break;
	}
	json_decref(arr);
	return rc;
}

static int node_write(void *ud, const struct metrics_row *r)
{
	struct ctx *x = ud;
	const char *nl[] = { "node", r->node, "rack", r->rack, NULL };
	int rc, on = r->power && strcmp(r->power, "on") == 0;
	int unknown = !r->power || strcmp(r->power, "unknown") == 0;

	if (x->opt->want && !x->opt->want(x->opt->want_ud, r->node))
		return 0;
	x->nodes++;
	if ((rc = put(x, F_POWER_ON, nl, on)) < 0 || (rc = put(x, F_POWER_UNKNOWN, nl, unknown)) < 0 ||
	    (r->power_time > 0 &&
	     (rc = put(x, F_POWER_AGE, nl, (double)(x->now - r->power_time))) < 0) ||
	    (r->has_state && (rc = put(x, F_BMC_REACHABLE, nl, r->reachable)) < 0) ||
	    (r->last_ok > 0 && (rc = put(x, F_BMC_LAST_OK, nl, (double)r->last_ok)) < 0) ||
	    (rc = put(x, F_MAINT, nl, r->in_maintenance)) < 0 ||
	    (rc = put(x, F_REINSTALL, nl, r->reinstalling)) < 0)
		return rc;
	/* the verdict the poller's health sweep stored: what kiln status shows */
	if (r->health && ((rc = put(x, F_HEALTH, nl, health_code(r->health))) < 0 ||
			  (rc = put(x, F_HUNG, nl, r->hung_since > 0)) < 0 ||
			  (rc = reasons_write(x, r, nl)) < 0))
		return rc;
	if (r->has_agent &&
	    ((rc = put(x, F_AGENT_AGE, nl, (double)(x->now - r->agent_last_seen))) < 0 ||
	     (rc = put(x, F_AGENT_SILENT, nl, !r->agent_fresh)) < 0))
		return rc;
	if ((rc = bmc_write(x, r, nl)) < 0)
		return rc;
	return r->agent_fresh ? agent_write(x, r, nl) : 0;
}

int metrics_write(struct expo *e, struct store *st, const struct metrics_options *opt,
		  int64_t now)
{
	struct ctx x = { .opt = opt, .now = now };
	int rc;

	for (int i = 0; i < F_COUNT; i++)
		if ((rc = expo_family(e, &x.f[i], fams[i].name, fams[i].type, fams[i].help)) < 0)
			return rc;
	if ((rc = store_metrics_xids(st, &x.xids, &x.nxids)) < 0)
		return rc;
	rc = store_metrics_rows(st, now, opt->silent_intervals, opt->default_interval_s, node_write,
				&x);
	free(x.xids);
	if (rc < 0 || (rc = expo_sample(x.f[F_NODES], NULL, NULL, (double)x.nodes)) < 0 ||
	    (rc = metrics_counters_write(e)) < 0)
		return rc;
	return expo_finish(e);
}
