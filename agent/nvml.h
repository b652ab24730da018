/* SPDX-License-Identifier: Apache-2.0 */
/* NVML loaded at run time (dlopen): driver versions, per-GPU state and Xid events. */
#ifndef KILN_AGENT_NVML_H
#define KILN_AGENT_NVML_H

#include <jansson.h>

struct nvml;

/*
 * Loads lib_path (NULL: "libnvidia-ml.so.1"). Never fails for a missing library or driver:
 * that is a status the report carries. init_timeout_s bounds nvmlInit, which has hung on
 * some drivers. Returns KILN_ERROR only when out of memory.
 */
int nvml_open(struct nvml **out, const char *lib_path, int init_timeout_s);

/*
 * Fills nvidia with "status" ("ok"|"no_driver"|"mismatch"|"error"), "error" when not ok,
 * "driver_version", "nvml_version", "cuda_driver_version", "gpu_count"; appends one object per
 * GPU to gpus and NVML Xid events to xids. A field whose call is missing or not supported is
 * left out. Initialises NVML on the first call, and again on later calls while it fails.
 */
int nvml_collect(struct nvml *n, json_t *nvidia, json_t *gpus, json_t *xids);

/* Shuts NVML down and unloads it, unless an init is still hanging (then it is left alone). */
void nvml_close(struct nvml *n);

#endif
