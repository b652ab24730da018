/* SPDX-License-Identifier: Apache-2.0 */
/* Builds the agent's report from the collectors: host, NVIDIA stack, toolkits, GPUs, Xids,
 * the kernel's alarms, disks and filesystems. */
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "kiln/error.h"
#include "kiln/version.h"
#include "kernel_alarms.h"
#include "nvml.h"
#include "frameworks.h"
#include "gpu_aer.h"
#include "procs.h"
#include "report.h"
#include "xid.h"

int report_id_generate(char out[33])
{
	unsigned char b[16];
	size_t got = 0, i;

	while (got < sizeof b) {
		ssize_t r = getrandom(b + got, sizeof b - got, 0);

		if (r < 0)
			return kiln_fail(KILN_ERROR, "getrandom failed");
		got += (size_t)r;
	}
	for (i = 0; i < sizeof b; i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
	return 0;
}

/* Adds "gpu_index" and "gpu_uuid" to each Xid whose bus id matches a GPU. */
static void xids_link_gpus(json_t *xids, json_t *gpus)
{
	size_t i, k;
	json_t *x, *g;

	json_array_foreach(xids, i, x) {
		const char *bus = json_string_value(json_object_get(x, "pci_bus_id"));

		if (!bus)
			continue;
		json_array_foreach(gpus, k, g) {
			const char *gb = json_string_value(json_object_get(g, "pci_bus_id"));

			if (gb && strcmp(gb, bus) == 0) {
				json_object_set(x, "gpu_index", json_object_get(g, "index"));
				if (json_object_get(g, "uuid"))
					json_object_set(x, "gpu_uuid", json_object_get(g, "uuid"));
				break;
			}
		}
	}
}

static void time_rfc3339(char out[32], time_t t)
{
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int report_build(json_t **out, struct report_ctx *ctx)
{
	char id[33], now[32], started[32];
	json_t *r = NULL, *host = NULL, *nvidia = NULL, *gpus = NULL, *xids = NULL;
	json_t *toolkits = NULL, *cudnn = NULL, *disks = NULL, *agent = NULL, *frameworks = NULL;
	json_t *alarms = NULL, *filesystems = NULL;
	const char *drv, *mod;
	int rc;

	rc = report_id_generate(id);
	if (rc < 0)
		return rc;
	nvidia = json_object();
	gpus = json_array();
	xids = json_array();
	alarms = json_array();
	if (!nvidia || !gpus || !xids || !alarms) {
		rc = kiln_fail(KILN_ERROR, "out of memory");
		goto cleanup;
	}
	rc = host_collect(&host, &ctx->host, ctx->root);
	if (rc < 0)
		goto cleanup;
	rc = host_disks_collect(&disks, ctx->root);
	if (rc < 0)
		goto cleanup;
	rc = host_filesystems_collect(&filesystems, ctx->root, ctx->spool_dir, ctx->fs_paths);
	if (rc < 0)
		goto cleanup;
	rc = nvml_collect(ctx->nvml, nvidia, gpus, xids);
	if (rc < 0)
		goto cleanup;
	procs_annotate(gpus, ctx->root);
	gpu_aer_annotate(gpus, ctx->root);
	versions_kernel_module_collect(nvidia, ctx->root);
	versions_fabric_manager_collect(nvidia, &ctx->fm, ctx->root);
	drv = json_string_value(json_object_get(nvidia, "driver_version"));
	mod = json_string_value(json_object_get(nvidia, "kernel_module_version"));
	if (drv && mod)
		json_object_set_new(nvidia, "driver_module_mismatch", json_boolean(strcmp(drv, mod) != 0));
	rc = versions_cuda_collect(&toolkits, ctx->root);
	if (rc < 0)
		goto cleanup;
	rc = versions_cudnn_collect(&cudnn, ctx->root, toolkits);
	if (rc < 0)
		goto cleanup;
	if (ctx->xid) {
		rc = xid_reader_poll_alarms(ctx->xid, xids, REPORT_MAX_XIDS, alarms, KERNEL_ALARMS_MAX);
		if (rc < 0)
			goto cleanup;
	}
	xids_link_gpus(xids, gpus);

	ctx->seq++;
	time_rfc3339(now, time(NULL));
	time_rfc3339(started, (time_t)ctx->started_at);
	agent = json_pack("{s:s,s:s,s:I,s:i,s:I,s:I,s:I}", "version", kiln_version, "started_at",
			  started, "seq", (json_int_t)ctx->seq, "interval_s", ctx->interval_s,
			  "spool_dropped", (json_int_t)ctx->spool_dropped, "kmsg_overruns",
			  (json_int_t)xid_reader_overruns(ctx->xid), "xid_events_dropped",
			  (json_int_t)xid_reader_dropped(ctx->xid));
	if (agent)
		json_object_set_new(agent, "kernel_events_dropped",
				    json_integer((json_int_t)xid_reader_alarms_dropped(ctx->xid)));
	if (agent && !ctx->xid && ctx->xid_error)
		json_object_set_new(agent, "kmsg_error", json_string(ctx->xid_error));
	r = json_pack("{s:s,s:s,s:s,s:o,s:o,s:o,s:O?,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "schema",
		      REPORT_SCHEMA, "report_id", id, "time", now, "agent", agent, "host", host,
		      "nvidia", nvidia, "cudnn_version",
		      json_object_get(json_array_get(cudnn, 0), "version"), "cudnn", cudnn,
		      "cuda_toolkits", toolkits, "gpus", gpus, "xid_events", xids, "kernel_events",
		      alarms, "disks", disks, "filesystems", filesystems);
	/* json_pack's "o" took the references, also when it failed */
	agent = host = nvidia = cudnn = toolkits = gpus = xids = disks = alarms = filesystems = NULL;
	if (!r) {
		rc = kiln_fail(KILN_ERROR, "out of memory building the report");
		goto cleanup;
	}
	/* the Python environments' frameworks: a failure leaves them out, never the report */
	if (frameworks_collect(&frameworks, ctx->root, ctx->site_packages) == 0)
		json_object_set_new(r, "frameworks", frameworks);
	*out = r;
	rc = 0;
cleanup:
	json_decref(agent);
	json_decref(host);
	json_decref(nvidia);
	json_decref(cudnn);
	json_decref(toolkits);
	json_decref(gpus);
	json_decref(xids);
	json_decref(disks);
	json_decref(alarms);
	json_decref(filesystems);
	return rc;
}
