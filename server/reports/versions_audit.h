/* SPDX-License-Identifier: Apache-2.0 */
/* The fleet version audit: nodes grouped by driver, module, CUDA, GPU, VBIOS and BMC firmware
 * versions, with the checks that find a pending reboot, a toolkit too new for its driver,
 * missing GPUs, a starved data pipeline and deviations from a per-group policy. */
#ifndef KILND_VERSIONS_AUDIT_H
#define KILND_VERSIONS_AUDIT_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "store/store.h"

/* What the audit groups nodes by; the JSON names are in vaudit_field_name(). */
enum vaudit_field {
	VA_DRIVER,        /* the NVIDIA driver library (NVML) */
	VA_MODULE,        /* the loaded kernel module */
	VA_CUDA_DRIVER,   /* the CUDA version the driver supports */
	VA_TOOLKITS,      /* installed CUDA toolkits, "11.8,12.4" */
	VA_GPU_MODEL,     /* distinct GPU names, "NVIDIA H100 80GB HBM3" */
	VA_VBIOS,         /* distinct VBIOS versions */
	VA_BMC_FIRMWARE,  /* from the BMC inventory the poller stores (not the agent report) */
	VA_FIELD_COUNT
};

const char *vaudit_field_name(enum vaudit_field f);

/* One node's facts, from its latest agent report. */
struct vaudit_node {
	char *node;
	char **groups;               /* the node's groups, for the policy */
	size_t ngroups;
	int reported;                /* 0: the node never reported (every other field unset) */
	char *field[VA_FIELD_COUNT]; /* NULL when unknown */
	char *nvidia_status;
	char **toolkits;             /* versions, sorted */
	size_t ntoolkits;
	int64_t gpu_count;
	int64_t gpu_expected;        /* the most GPUs the node ever had */
	int64_t host_memory_bytes;   /* -1: unknown */
	int64_t gpu_memory_bytes;    /* summed over the GPUs; -1: unknown */
	char *rotational_disks;      /* "sda,sdb", or NULL */
	json_t *frameworks;          /* the report's frameworks that name a CUDA, or NULL */
};

/* The parts of report vaudit_node_from_report reads, as compact JSON text the caller frees
 * (ingest stores it with the report so that the audit parses a few hundred bytes a node);
 * NULL when out of memory. Keep it in step with vaudit_node_from_report. */
char *vaudit_facts_extract(const json_t *report);

/*
 * Fills out from an agent report (the schema of agent-report.schema.json; missing or
 * mistyped fields are left unknown). gpu_count_max is the most GPUs the node ever reported
 * (0 when not known). groups[0..ngroups) are copied. KILN_ERROR only on ENOMEM.
 */
int vaudit_node_from_report(struct vaudit_node *out, const char *node, const json_t *report,
			    int64_t gpu_count_max, char *const *groups, size_t ngroups);
/* A node that never reported. */
int vaudit_node_unreported(struct vaudit_node *out, const char *node);
void vaudit_node_clear(struct vaudit_node *n); /* accepts NULL */

/*
 * Checks a policy: {"GROUP": {"driver": "550.54.15", "module": ..., "cuda": ">=12.4", ...}}.
 * Keys: driver, module, cuda (the driver's CUDA version), toolkit (a version that must be
 * installed), gpu_model, vbios, bmc_firmware, gpus (a count). A value is a comma-separated list of accepted
 * versions, or ">=V" for a least version. GROUP "all" applies to every node. KILN_EINVAL
 * naming the group and key otherwise.
 */
int vaudit_policy_check(const json_t *policy);

/*
 * Audits nodes[0..n) against the built-in checks and policy (NULL: none; must have passed
 * vaudit_policy_check). *out (caller owns) is
 *   {"nodes":N, "reported":M, "unreported":"RANGE"|null,
 *    "groups":[{"nodes":"RANGE","count":C,"majority":bool,"driver":...,...,"differs":[...]}],
 *    "findings":[{"node","check","message","severity"?}], "deviations":F,
 *    "frameworks":[{"framework","version","cuda","count","nodes":"RANGE"}]}
 * with groups of identical versions, the largest first; "differs" names the fields in which
 * a group differs from the majority group. checks: module_mismatch, toolkit_too_new,
 * gpu_missing, host_memory, rotational_disk, policy, and for the Python environments'
 * frameworks (compared with the lower of the driver library and the kernel module):
 * framework_cuda_unsupported (critical: the driver is older than the CUDA major's first
 * release needs), framework_cuda_mvc (warning: it runs under minor-version compatibility,
 * older than the exact release needs), framework_cuda_majors (warning: environments on one
 * node built for different CUDA majors). "frameworks" groups the fleet by framework version.
 */
int vaudit_run(json_t **out, const struct vaudit_node *nodes, size_t n, const json_t *policy);

/*
 * The least Linux driver version NVIDIA publishes for a CUDA toolkit release ("12.4",
 * "12.4.1"); NULL for a release older than the table. A release newer than the table gets the
 * newest entry's driver (a lower bound).
 */
const char *vaudit_cuda_min_driver(const char *toolkit);

/* The least driver of the CUDA major's first release ("12.4" -> 12.0's 525.60.13): below it
 * nothing built for that major runs. NULL when the table has no such major. */
const char *vaudit_cuda_major_min_driver(const char *cuda);

/* "12.4.1" -> "12.4" into buf. */
void vaudit_major_minor(char *buf, size_t len, const char *v);

/* Compares dotted version strings numerically ("535.104.05" vs "550.54.14"): <0, 0, >0. */
int vaudit_version_cmp(const char *a, const char *b);

/*
 * Audits the nodes named in names (all nodes when NULL) from the store: each node's latest
 * agent state and report, and the BMC firmware of its stored inventory. Unknown names fail with KILN_ENOTFOUND.
 */
int vaudit_store_run(json_t **out, struct store *st, const struct kiln_nodelist *names,
		     const json_t *policy);

#endif
