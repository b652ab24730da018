/* Console capture flags per node (table console_capture). Rarely called: no cached statements. */
#include <stdlib.h>
#include <string.h>

#include "kiln/error.h"
#include "store/store_internal.h"

static int prepare(struct store *st, sqlite3_stmt **out, const char *sql)
{
	int rc = sqlite3_prepare_v2(st->db, sql, -1, out, NULL);

	return rc == SQLITE_OK ? 0 : store_fail(st, rc, "preparing a console statement");
}

int store_console_capture_set(struct store *st, const char *node, int enabled)
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = prepare(st, &s,
			   "INSERT INTO console_capture (node_id, enabled, updated_at)"
			   " SELECT id, ?2, ?3 FROM nodes WHERE name = ?1"
			   " ON CONFLICT (node_id) DO UPDATE SET enabled = excluded.enabled,"
			   " updated_at = excluded.updated_at")) < 0)
		return ret;
	store_bind_text(s, 1, node);
	sqlite3_bind_int(s, 2, enabled ? 1 : 0);
	sqlite3_bind_int64(s, 3, store_now(st));
	rc = sqlite3_step(s);
	if (rc != SQLITE_DONE)
		ret = store_fail(st, rc, "setting console capture");
	else if (sqlite3_changes(st->db) == 0)
		ret = kiln_fail(KILN_ENOTFOUND, "node '%s' not found", node);
	sqlite3_finalize(s);
	return ret;
}

int store_console_capture_get(struct store *st, const char *node, int *out_enabled)
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = prepare(st, &s,
			   "SELECT ifnull(c.enabled, 0) FROM nodes n"
			   " LEFT JOIN console_capture c ON c.node_id = n.id WHERE n.name = ?1")) < 0)
		return ret;
	store_bind_text(s, 1, node);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		*out_enabled = sqlite3_column_int(s, 0) != 0;
	else if (rc == SQLITE_DONE)
		ret = kiln_fail(KILN_ENOTFOUND, "node '%s' not found", node);
	else
		ret = store_fail(st, rc, "reading console capture");
	sqlite3_finalize(s);
	return ret;
}

int store_console_capture_list(struct store *st, char ***out, size_t *out_count)
{
	sqlite3_stmt *s = NULL;
	char **names = NULL;
	size_t n = 0, cap = 0;
	int rc, ret;

	if ((ret = prepare(st, &s,
			   "SELECT n.name FROM console_capture c JOIN nodes n ON n.id = c.node_id"
			   " WHERE c.enabled = 1 ORDER BY n.name")) < 0)
		return ret;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if ((ret = store_list_grow((void **)&names, &cap, n, sizeof(*names))) < 0)
			goto cleanup;
		if ((ret = store_column_strdup(&names[n], s, 0)) < 0)
			goto cleanup;
		if (!names[n]) /* a NOT NULL column: cannot happen */
			continue;
		n++;
	}
	if (rc != SQLITE_DONE) {
		ret = store_fail(st, rc, "listing console capture");
		goto cleanup;
	}
	*out = names;
	*out_count = n;
	names = NULL;
	n = 0;
cleanup:
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	sqlite3_finalize(s);
	return ret;
}
