/* SPDX-License-Identifier: Apache-2.0 */
/* Console capture flags per node (table console_capture). Rarely called: no cached statements. */
#include <stdlib.h>
#include <string.h>

#include "kiln/error.h"
#include "store/store_internal.h"

static const struct sql_stmt SET = {
	STMT_NONE, "setting console capture",
	"INSERT INTO console_capture (node_id, enabled, updated_at)"
	" SELECT id, ?2, ?3 FROM nodes WHERE name = ?1"
	" ON CONFLICT (node_id) DO UPDATE SET enabled = excluded.enabled,"
	" updated_at = excluded.updated_at",
	NULL};

static const struct sql_stmt GET = {
	STMT_NONE, "reading console capture",
	"SELECT coalesce(c.enabled, 0) FROM nodes n"
	" LEFT JOIN console_capture c ON c.node_id = n.id WHERE n.name = ?1",
	NULL};

static const struct sql_stmt LIST = {
	STMT_NONE, "listing console capture",
	"SELECT n.name FROM console_capture c JOIN nodes n ON n.id = c.node_id"
	" WHERE c.enabled = 1 ORDER BY n.name",
	NULL};

int store_console_capture_set(struct store *st, const char *node, int enabled)
{
	int64_t ret = sql_exec(st, &SET,
			       SQL_ARGS(SQL_TEXT(node), SQL_BOOL(enabled), SQL_INT(store_now(st))));

	if (ret == 0)
		return kiln_fail(KILN_ENOTFOUND, "node '%s' not found", node);
	return ret < 0 ? (int)ret : 0;
}

int store_console_capture_get(struct store *st, const char *node, int *out_enabled)
{
	int64_t on = 0;
	int ret = sql_int(st, &GET, SQL_ARGS(SQL_TEXT(node)), &on);

	if (ret == 0)
		return kiln_fail(KILN_ENOTFOUND, "node '%s' not found", node);
	if (ret < 0)
		return ret;
	*out_enabled = on != 0;
	return 0;
}

static int name_read(const struct sql_row *r, void *elem)
{
	return sql_col_strdup(r, 0, elem);
}

static void name_clear(void *elem)
{
	free(*(char **)elem);
}

int store_console_capture_list(struct store *st, char ***out, size_t *out_count)
{
	return sql_list(st, &LIST, SQL_NO_ARGS, out, out_count, sizeof(char *), name_read,
			name_clear);
}
