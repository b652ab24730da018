/* SPDX-License-Identifier: Apache-2.0 */
/* Files read under the agent's --root folder ("/" in production), with hard size caps. */
#ifndef KILN_AGENT_ROOTFS_H
#define KILN_AGENT_ROOTFS_H

#include <stddef.h>

/* Joins root ("" or NULL for "/") and an absolute path into out[n]. KILN_ETOOBIG if it does not fit. */
int rootfs_path(char *out, size_t n, const char *root, const char *path);

/*
 * Reads the whole file root+path, at most max bytes (the rest is ignored), NUL-terminated.
 * The caller frees *out. KILN_ENOTFOUND when the file does not exist, KILN_ERROR otherwise.
 */
int rootfs_read(char **out, size_t *out_len, const char *root, const char *path, size_t max);

/* Reads the first line of root+path into out[n], with surrounding whitespace removed. */
int rootfs_read_line(char *out, size_t n, const char *root, const char *path);

/* Reads the first line of root+path as an unsigned decimal number. */
int rootfs_read_u64(unsigned long long *out, const char *root, const char *path);

/*
 * Resolves path under root, following symbolic links (absolute targets stay inside root),
 * into out[n] as a path relative to root ("/usr/local/cuda-12.4"). KILN_ENOTFOUND when it
 * does not exist, KILN_ERROR for a loop.
 */
int rootfs_resolve(char *out, size_t n, const char *root, const char *path);

/* Removes leading and trailing whitespace in place; returns s. */
char *rootfs_trim(char *s);

#endif
