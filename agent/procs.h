/* SPDX-License-Identifier: Apache-2.0 */
/* The GPU compute processes of a report: their name and user, read from /proc. */
#ifndef KILN_AGENT_PROCS_H
#define KILN_AGENT_PROCS_H

#include <jansson.h>

/*
 * Adds to each process of each GPU in gpus (nvml_collect's array) its "name" (when NVML
 * gave none: /proc/PID/comm) and "user" (/proc/PID/status' real uid, named by /etc/passwd,
 * else the number), all read under root (NULL: /). A process that has ended, or whose
 * files cannot be read, keeps what it has.
 */
void procs_annotate(json_t *gpus, const char *root);

#endif
