/* An agent bound to its node: the identity a report is compared with, refusals waiting for
 * an admin, and the admin's acceptance of a genuine change (agent_identity). */
#include <stdlib.h>
#include <string.h>

#include "kiln/error.h"
#include "store/store_internal.h"

void agent_identity_clear(struct agent_identity *a)
{
	if (!a)
		return;
	free(a->node);
	free(a->bmc_serial);
	free(a->hostname);
	free(a->machine_id);
	free(a->dmi_serial);
	free(a->boot_id);
	free(a->accepted_by);
	free(a->bmc_serial_accepted);
	free(a->mismatch);
	free(a->mismatch_field);
	free(a->elsewhere_node);
	memset(a, 0, sizeof(*a));
}

void agent_identity_list_free(struct agent_identity *list, size_t count)
{
	if (!list)
		return;
	for (size_t i = 0; i < count; i++)
		agent_identity_clear(&list[i]);
	free(list);
}

#define IDENTITY_COLUMNS                                                                           \
	"n.id, n.name, CASE WHEN (SELECT count(*) FROM nodes o WHERE o.bmc_serial = n.bmc_serial)"  \
	" = 1 THEN n.bmc_serial END, a.node_id IS NOT NULL, a.hostname, a.machine_id,"           \
	" a.dmi_serial, a.boot_id, coalesce(i.accept_next, 0), i.accepted_by,"                   \
	" coalesce(i.accepted_at, 0), i.bmc_serial_accepted, coalesce(i.reinstall_job, 0),"       \
	" coalesce((SELECT j.id FROM jobs j WHERE j.node_id = n.id AND j.state = 'running'), 0),"  \
	" i.mismatch, i.mismatch_field, coalesce(i.mismatch_since, 0),"                          \
	" coalesce(i.mismatch_last, 0), coalesce(i.refused, 0), e.name,"                           \
	" coalesce(i.elsewhere_last, 0)"                                                           \
	" FROM nodes n LEFT JOIN node_agent_state a ON a.node_id = n.id"                          \
	" LEFT JOIN agent_identity i ON i.node_id = n.id"                                          \
	" LEFT JOIN nodes e ON e.name = i.elsewhere_node"

static int identity_read(struct agent_identity *o, sqlite3_stmt *s)
{
	int ret;

	o->node_id = sqlite3_column_int64(s, 0);
	/* a BMC serial several nodes share (one simulator's tree, firmware that leaves a fixed
	 * value) identifies no machine: NULL */
	if ((ret = store_column_strdup(&o->node, s, 1)) < 0 ||
	    (ret = store_column_strdup(&o->bmc_serial, s, 2)) < 0)
		return ret;
	o->has_agent = sqlite3_column_int(s, 3);
	if ((ret = store_column_strdup(&o->hostname, s, 4)) < 0 ||
	    (ret = store_column_strdup(&o->machine_id, s, 5)) < 0 ||
	    (ret = store_column_strdup(&o->dmi_serial, s, 6)) < 0 ||
	    (ret = store_column_strdup(&o->boot_id, s, 7)) < 0)
		return ret;
	o->accept_next = sqlite3_column_int(s, 8);
	if ((ret = store_column_strdup(&o->accepted_by, s, 9)) < 0)
		return ret;
	o->accepted_at = sqlite3_column_int64(s, 10);
	if ((ret = store_column_strdup(&o->bmc_serial_accepted, s, 11)) < 0)
		return ret;
	o->reinstall_job = sqlite3_column_int64(s, 12);
	o->reinstall_running = sqlite3_column_int64(s, 13);
	if ((ret = store_column_strdup(&o->mismatch, s, 14)) < 0 ||
	    (ret = store_column_strdup(&o->mismatch_field, s, 15)) < 0)
		return ret;
	o->mismatch_since = sqlite3_column_int64(s, 16);
	o->mismatch_last = sqlite3_column_int64(s, 17);
	o->refused = sqlite3_column_int64(s, 18);
	/* the other node's name only while it exists (a deleted node reports nowhere) */
	if ((ret = store_column_strdup(&o->elsewhere_node, s, 19)) < 0)
		return ret;
	o->elsewhere_last = o->elsewhere_node ? sqlite3_column_int64(s, 20) : 0;
	return 0;
}

int store_agent_identity_get(struct store *st, struct agent_identity *out, int64_t node_id)
{
	struct agent_identity o = { 0 };
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_IDENTITY_GET,
			      "SELECT " IDENTITY_COLUMNS " WHERE n.id = ?1")) < 0)
		return ret;
	sqlite3_bind_int64(s, 1, node_id);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		ret = identity_read(&o, s);
	else if (rc == SQLITE_DONE)
		ret = kiln_fail(KILN_ENOTFOUND, "store: no node id %lld", (long long)node_id);
	else
		ret = store_fail(st, rc, "reading an agent identity");
	store_stmt_done(s);
	if (ret < 0) {
		agent_identity_clear(&o);
		return ret;
	}
	*out = o;
	return 0;
}

int store_agent_identity_refuse(struct store *st, int *out_new, int64_t node_id,
				const char *field, const char *message)
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	/* RETURNING says whether the row kept its message (refused > 1) or started anew. */
	if ((ret = store_stmt(st, &s, STMT_IDENTITY_REFUSE,
			      "INSERT INTO agent_identity (node_id, mismatch, mismatch_field,"
			      " mismatch_since, mismatch_last, refused) VALUES (?1, ?2, ?3, ?4, ?4, 1)"
			      " ON CONFLICT (node_id) DO UPDATE SET"
			      " refused = CASE WHEN mismatch IS ?2 THEN refused + 1 ELSE 1 END,"
			      " mismatch_since = CASE WHEN mismatch IS ?2 THEN mismatch_since ELSE ?4 END,"
			      " mismatch_field = ?3, mismatch = ?2, mismatch_last = ?4"
			      " RETURNING refused")) < 0)
		return ret;
	sqlite3_bind_int64(s, 1, node_id);
	store_bind_text(s, 2, message);
	store_bind_text(s, 3, field);
	sqlite3_bind_int64(s, 4, store_now(st));
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		*out_new = sqlite3_column_int64(s, 0) == 1;
	else
		ret = store_fail(st, rc, "recording a refused agent identity");
	store_stmt_done(s);
	return ret;
}

int store_agent_identity_elsewhere(struct store *st, int64_t other_id, int64_t node_id)
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_IDENTITY_ELSEWHERE,
			      "INSERT INTO agent_identity (node_id, elsewhere_node, elsewhere_last)"
			      " SELECT ?1, name, ?3 FROM nodes WHERE id = ?2"
			      " ON CONFLICT (node_id) DO UPDATE SET"
			      " elsewhere_node = excluded.elsewhere_node, elsewhere_last = ?3")) < 0)
		return ret;
	sqlite3_bind_int64(s, 1, other_id);
	sqlite3_bind_int64(s, 2, node_id);
	sqlite3_bind_int64(s, 3, store_now(st));
	rc = sqlite3_step(s);
	if (rc != SQLITE_DONE)
		ret = store_fail(st, rc, "noting an agent reporting elsewhere");
	store_stmt_done(s);
	return ret;
}

int store_agent_identity_settle(struct store *st, int64_t node_id, int rebound,
				int64_t reinstall_job, const char *bmc_serial_accepted)
{
	sqlite3_stmt *s = NULL;
	int rc, ret;

	if ((ret = store_stmt(st, &s, STMT_IDENTITY_SETTLE,
			      "UPDATE agent_identity SET elsewhere_node = NULL, elsewhere_last = NULL,"
			      " accept_next = CASE WHEN ?4 THEN 0 ELSE accept_next END,"
			      " mismatch = CASE WHEN ?4 THEN NULL ELSE mismatch END,"
			      " mismatch_field = CASE WHEN ?4 THEN NULL ELSE mismatch_field END,"
			      " mismatch_since = CASE WHEN ?4 THEN NULL ELSE mismatch_since END,"
			      " mismatch_last = CASE WHEN ?4 THEN NULL ELSE mismatch_last END,"
			      " refused = CASE WHEN ?4 THEN 0 ELSE refused END,"
			      " reinstall_job = CASE WHEN ?2 > 0 THEN ?2 ELSE reinstall_job END,"
			      " bmc_serial_accepted = coalesce(?3, bmc_serial_accepted)"
			      " WHERE node_id = ?1")) < 0)
		return ret;
	sqlite3_bind_int64(s, 1, node_id);
	sqlite3_bind_int64(s, 2, reinstall_job);
	store_bind_text(s, 3, bmc_serial_accepted);
	sqlite3_bind_int(s, 4, rebound ? 1 : 0);
	rc = sqlite3_step(s);
	if (rc != SQLITE_DONE)
		ret = store_fail(st, rc, "settling an agent identity");
	store_stmt_done(s);
	return ret;
}

int store_agent_identity_owner(struct store *st, int64_t *out_id, int64_t node_id,
			       const char *dmi_serial, const char *machine_id)
{
	sqlite3_stmt *s = NULL;
	int64_t id = 0;
	int rc, ret, rows = 0;

	/* a placeholder serial is shared by many machines: the caller passes only useful ones */
	if ((ret = store_stmt(st, &s, STMT_IDENTITY_OWNER,
			      "SELECT node_id FROM node_agent_state WHERE node_id != ?1 AND"
			      " (CASE WHEN ?2 IS NOT NULL THEN dmi_serial = ?2 COLLATE NOCASE"
			      " ELSE machine_id = ?3 END) LIMIT 2")) < 0)
		return ret;
	sqlite3_bind_int64(s, 1, node_id);
	store_bind_text(s, 2, dmi_serial);
	store_bind_text(s, 3, machine_id);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW)
		if (rows++ == 0)
			id = sqlite3_column_int64(s, 0);
	if (rc != SQLITE_DONE)
		ret = store_fail(st, rc, "finding an agent identity's node");
	store_stmt_done(s);
	if (ret < 0)
		return ret;
	*out_id = rows == 1 ? id : 0;
	return 0;
}

int store_agent_identity_accept(struct store *st, int64_t node_id, const char *by)
{
	sqlite3_stmt *s = NULL;
	int rc, ret = 0;

	rc = sqlite3_prepare_v2(st->db,
				"INSERT INTO agent_identity (node_id, accept_next, accepted_by,"
				" accepted_at) SELECT id, 1, ?2, ?3 FROM nodes WHERE id = ?1"
				" ON CONFLICT (node_id) DO UPDATE SET accept_next = 1,"
				" accepted_by = ?2, accepted_at = ?3",
				-1, &s, NULL);
	if (rc != SQLITE_OK)
		return store_fail(st, rc, "preparing an identity acceptance");
	sqlite3_bind_int64(s, 1, node_id);
	store_bind_text(s, 2, by);
	sqlite3_bind_int64(s, 3, store_now(st));
	rc = sqlite3_step(s);
	if (rc != SQLITE_DONE)
		ret = store_fail(st, rc, "accepting an agent identity");
	else if (sqlite3_changes(st->db) == 0)
		ret = kiln_fail(KILN_ENOTFOUND, "no node id %lld", (long long)node_id);
	sqlite3_finalize(s);
	return ret;
}

int store_agent_identity_list(struct store *st, struct agent_identity **out, size_t *out_count)
{
	struct agent_identity *list = NULL;
	sqlite3_stmt *s = NULL;
	size_t n = 0, cap = 0;
	int rc, ret;

	rc = sqlite3_prepare_v2(st->db,
				"SELECT " IDENTITY_COLUMNS " WHERE i.mismatch IS NOT NULL"
				" OR e.name IS NOT NULL OR i.accept_next = 1 ORDER BY n.name",
				-1, &s, NULL);
	if (rc != SQLITE_OK)
		return store_fail(st, rc, "preparing the agent identity list");
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if ((ret = store_list_grow((void **)&list, &cap, n, sizeof(*list))) < 0)
			goto cleanup;
		n++;
		if ((ret = identity_read(&list[n - 1], s)) < 0)
			goto cleanup;
	}
	if (rc != SQLITE_DONE) {
		ret = store_fail(st, rc, "listing agent identities");
		goto cleanup;
	}
	ret = 0;
	*out = list;
	*out_count = n;
	list = NULL;
cleanup:
	agent_identity_list_free(list, n);
	sqlite3_finalize(s);
	return ret;
}
