/* SPDX-License-Identifier: Apache-2.0 */
/* The kiln status table, laid out from either form of GET /api/v1/status. */
#ifndef KILN_CLI_CMD_STATUS_H
#define KILN_CLI_CMD_STATUS_H

#include <stdio.h>

#include <jansson.h>

/*
 * Writes the table (a header, a line per node, the summary line) for answer, the rows form
 * ({"columns","rows","summary"}) or the object form ({"nodes","summary"}) of GET /status,
 * the node lines in one fwrite; colour adds ANSI colours to the health column. KILN_EPROTO
 * when answer is neither (nothing written), KILN_ERROR on ENOMEM or a write error.
 */
int status_table_write(FILE *out, const json_t *answer, int colour);

#endif
