/* SPDX-License-Identifier: Apache-2.0 */
/* kiln-bmcsim: --fault SPEC parsing and targeting. */
#ifndef SIM_FAULT_H
#define SIM_FAULT_H

#include <stdbool.h>

#include "bmc.h"

#define FAULT_LIST_MAX 256

struct fault_spec {
	struct sim_fault fault;
	int share;                 /* percent of the BMCs, -1 when a list is given */
	int ports[FAULT_LIST_MAX];
	int nports;
	int indexes[FAULT_LIST_MAX];
	int nindexes;
};

/*
 * SPEC is KIND[:TARGET][:PARAM]... with KIND one of hang, reset, slow, malformed, truncated,
 * 412 (stale ETag on the next If-Match PATCH), busy (503 as a BMC whose sessions are all taken
 * says it, with Retry-After) or an HTTP status 400-599 (e.g. 500, 503);
 * TARGET one of all, N% (a share of the BMCs), ports=P,P,... or index=I,I,...;
 * PARAM count=N (requests before the fault clears), prob=P (percent of requests), ms=M (slow),
 * retry=S (busy: the Retry-After seconds, 30 by default).
 * Returns KILN_EINVAL with a message naming the bad part.
 */
int fault_parse(struct fault_spec *out, const char *spec);

/* Whether the spec applies to BMC index (of count) listening on port. */
bool fault_targets(const struct fault_spec *s, int index, int port);

#endif
