/* The kiln status table, laid out from either form of GET /api/v1/status. */
#ifndef KILN_CLI_CMD_STATUS_H
#define KILN_CLI_CMD_STATUS_H

#include <jansson.h>

#include <kiln/buf.h>

/*
 * Appends the table (a header, a line per node, the summary line) for answer, the rows form
 * ({"columns","rows","summary"}) or the object form ({"nodes","summary"}) of GET /status;
 * colour adds ANSI colours to the health column. KILN_EPROTO when answer is neither,
 * KILN_ERROR on ENOMEM.
 */
int status_table_write(struct kiln_buf *out, const json_t *answer, int colour);

#endif
