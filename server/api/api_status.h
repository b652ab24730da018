/* SPDX-License-Identifier: Apache-2.0 */
/* The compact rows form of GET /api/v1/status, written as JSON text without building a tree. */
#ifndef KILND_API_STATUS_H
#define KILND_API_STATUS_H

#include <stdint.h>

#include "kiln/buf.h"
#include "store/store.h"

struct kiln_nodelist;

/* The columns of a row, in order (the answer's "columns"). */
#define API_STATUS_ROW_COLUMNS                                                                     \
	"\"node\",\"power\",\"power_age_s\",\"agent_age_s\",\"health\",\"maintenance_reason\","  \
	"\"gpus_seen\",\"gpus_expected\",\"driver\",\"cuda\",\"hottest_gpu_c\",\"power_draw_w\","  \
	"\"reasons\",\"bmc\",\"work\""

/*
 * Appends s as a JSON string (quoted and escaped as jansson's compact dump does: '"', '\\'
 * and control characters; other bytes as they are). Bytes that are not valid UTF-8 become
 * U+FFFD, so the text always parses. KILN_ETOOBIG / KILN_ERROR from the buffer.
 */
int api_json_string_append(struct kiln_buf *b, const char *s);

/*
 * Appends {"columns":[...],"rows":[[...],...],"summary":{...}} for the nodes in want (NULL:
 * every node), only the problem and maintenance nodes when only_problems; ages counted
 * from now. The summary counts the whole range, as the object form's does.
 */
int api_status_rows_write(struct kiln_buf *out, struct store *st,
			  const struct kiln_nodelist *want, int only_problems, int64_t now);

#endif
