/* SPDX-License-Identifier: Apache-2.0 */
/* Python ML frameworks and NVIDIA's CUDA wheels in site-packages, read from their files
 * (no Python is run): what CUDA each environment's framework was built for. */
#ifndef KILN_AGENT_FRAMEWORKS_H
#define KILN_AGENT_FRAMEWORKS_H

#include <jansson.h>

/* The most environments and entries looked at (a runaway conda install stays bounded). */
#define FRAMEWORKS_ENVS_MAX 32
#define FRAMEWORKS_DIR_ENTRIES_MAX 20000

/* Where environments are looked for, under --root, besides the agent's --site-packages. */
extern const char *const frameworks_default_paths[];

/*
 * Fills *out (caller frees) with one object per framework found: {"env","framework",
 * "version","cuda"?,"cudnn"?}: torch (torch/version.py's __version__ and cuda), tensorflow
 * (its dist-info version, build_info.py's cuda_version and cudnn_version), jaxlib and the
 * jax CUDA plugin, nvidia-cudnn-cuN and nvidia-cuda-runtime-cuN wheels (dist-info names), in
 * every environment of frameworks_default_paths and of extra (a ':'-separated list of
 * site-packages folders or glob patterns; NULL: none), all under root (NULL: /).
 */
int frameworks_collect(json_t **out, const char *root, const char *extra);

/* The quoted value of `name = '...'` (or `name: T = "..."`) in a Python file's text into
 * val[n]; 0 when found, KILN_ENOTFOUND when absent or not a string (None). */
int frameworks_py_assign(char *val, size_t n, const char *text, const char *name);

/* The quoted value of `'key': '...'` in a Python dict literal's text into val[n]. */
int frameworks_py_dict(char *val, size_t n, const char *text, const char *key);

#endif
