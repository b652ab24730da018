/* SPDX-License-Identifier: Apache-2.0 */
/* Versions on disk: the loaded NVIDIA kernel module, CUDA toolkits, cuDNN, the fabric manager. */
#ifndef KILN_AGENT_VERSIONS_H
#define KILN_AGENT_VERSIONS_H

#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#include <jansson.h>

/*
 * Parses /proc/driver/nvidia/version text (proprietary "NVIDIA UNIX x86_64 Kernel Module  550.54.15 ..."
 * or open "NVIDIA UNIX Open Kernel Module for x86_64  550.54.15 ..."): the version into ver[n],
 * *open_module 1 for the open module. KILN_EINVAL when no version is found.
 */
int versions_kernel_module_parse(char *ver, size_t n, int *open_module, const char *text);

/* Sets "kernel_module_version" and "kernel_module_type" on nvidia when the module is loaded. */
void versions_kernel_module_collect(json_t *nvidia, const char *root);

/* Parses a toolkit's version.json ({"cuda":{"version":"12.4.1"}}) or version.txt ("CUDA Version 11.2.152"). */
int versions_cuda_json_parse(char *ver, size_t n, const char *text);
int versions_cuda_txt_parse(char *ver, size_t n, const char *text);

/*
 * Builds "cuda_toolkits": [{"version","path","default"}] from root/usr/local/cuda-* and where
 * root/usr/local/cuda points, sorted by path. The caller owns *out.
 */
int versions_cuda_collect(json_t **out, const char *root);

/* Parses cudnn_version.h (or an old cudnn.h) text: "MAJOR.MINOR.PATCH". */
int versions_cudnn_parse(char *ver, size_t n, const char *text);

/*
 * Finds cuDNN headers under /usr/include, /usr/include/<arch>-linux-gnu and each toolkit's
 * include/ (toolkits: the cuda_toolkits array, or NULL). *out is an array of {"version","path"};
 * the first is the report's "cudnn_version".
 */
int versions_cudnn_collect(json_t **out, const char *root, json_t *toolkits);

/* The installed fabric manager's version from the dpkg database, re-read only when it changes. */
struct versions_fm_cache {
	time_t mtime;
	off_t size;
	int valid;
	char version[64];
};
void versions_fabric_manager_collect(json_t *nvidia, struct versions_fm_cache *cache, const char *root);

#endif
