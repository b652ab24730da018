/* SPDX-License-Identifier: Apache-2.0 */
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
	free(a->bmc_uuid);
	free(a->bmc_sku);
	free(a->bmc_chassis_serial);
	free(a->bound_by);
	free(a->report_id);
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

static void identity_clear(void *elem)
{
	agent_identity_clear(elem);
}

/* A BMC value of node n, NULL where several nodes share it. */
#define BMC_VALUE(col) \
	" CASE WHEN (SELECT count(*) FROM nodes o WHERE o." col " = n." col ") = 1 THEN n." col " END"

/*
 * A node's identity facts: the strings (0-10), the numbers (11-20), more strings (21-25). A
 * BMC value several nodes share (one simulator's tree, firmware that leaves a fixed value)
 * identifies no machine: NULL. The other node's name only while it exists (a deleted node
 * reports nowhere).
 */
#define IDENTITY_COLUMNS                                                                           \
	"n.name," BMC_VALUE("bmc_serial") ", a.hostname, a.machine_id, a.dmi_serial, a.boot_id,"   \
	" i.accepted_by, i.bmc_serial_accepted, i.mismatch, i.mismatch_field, e.name,"            \
	" n.id, CASE WHEN a.node_id IS NOT NULL THEN 1 ELSE 0 END, coalesce(i.accept_next, 0),"   \
	" coalesce(i.accepted_at, 0), coalesce(i.reinstall_job, 0),"                              \
	" coalesce((SELECT j.id FROM jobs j WHERE j.node_id = n.id AND j.state = 'running'), 0),"  \
	" coalesce(i.mismatch_since, 0), coalesce(i.mismatch_last, 0), coalesce(i.refused, 0),"   \
	" coalesce(i.elsewhere_last, 0)," BMC_VALUE("bmc_uuid") "," BMC_VALUE("bmc_sku") ","       \
	BMC_VALUE("bmc_chassis_serial") ", i.bound_by, a.report_id"                                \
	" FROM nodes n LEFT JOIN node_agent_state a ON a.node_id = n.id"                          \
	" LEFT JOIN agent_identity i ON i.node_id = n.id"                                          \
	" LEFT JOIN nodes e ON e.name = i.elsewhere_node"

static const struct sql_stmt GET = {
	STMT_IDENTITY_GET, "reading an agent identity", "SELECT " IDENTITY_COLUMNS " WHERE n.id = ?1",
	NULL};

static const struct sql_stmt LIST = {
	STMT_NONE, "listing agent identities",
	"SELECT " IDENTITY_COLUMNS " WHERE i.mismatch IS NOT NULL OR e.name IS NOT NULL"
	" OR i.accept_next = 1 ORDER BY n.name",
	NULL};

/* RETURNING says whether the row kept its message (refused > 1) or started anew. The table's
 * columns are named in full: PostgreSQL finds a bare name in excluded too. */
static const struct sql_stmt REFUSE = {
	STMT_IDENTITY_REFUSE, "recording a refused agent identity",
	"INSERT INTO agent_identity (node_id, mismatch, mismatch_field,"
	" mismatch_since, mismatch_last, refused) VALUES (?1, ?2, ?3, ?4, ?4, 1)"
	" ON CONFLICT (node_id) DO UPDATE SET"
	" refused = CASE WHEN agent_identity.mismatch IS NOT DISTINCT FROM ?2"
	" THEN agent_identity.refused + 1 ELSE 1 END,"
	" mismatch_since = CASE WHEN agent_identity.mismatch IS NOT DISTINCT FROM ?2"
	" THEN agent_identity.mismatch_since ELSE ?4 END,"
	" mismatch_field = ?3, mismatch = ?2, mismatch_last = ?4"
	" RETURNING refused",
	NULL};

static const struct sql_stmt ELSEWHERE = {
	STMT_IDENTITY_ELSEWHERE, "noting an agent reporting elsewhere",
	"INSERT INTO agent_identity (node_id, elsewhere_node, elsewhere_last)"
	" SELECT ?1, name, ?3 FROM nodes WHERE id = ?2"
	" ON CONFLICT (node_id) DO UPDATE SET"
	" elsewhere_node = excluded.elsewhere_node, elsewhere_last = ?3",
	NULL};

static const struct sql_stmt SETTLE = {
	STMT_IDENTITY_SETTLE, "settling an agent identity",
	"INSERT INTO agent_identity (node_id, bound_by) SELECT ?1, CAST(?5 AS TEXT) FROM nodes"
	" WHERE id = ?1 ON CONFLICT (node_id) DO UPDATE SET elsewhere_node = NULL,"
	" elsewhere_last = NULL,"
	" accept_next = CASE WHEN ?4 = 1 THEN 0 ELSE agent_identity.accept_next END,"
	" mismatch = CASE WHEN ?4 = 1 THEN NULL ELSE agent_identity.mismatch END,"
	" mismatch_field = CASE WHEN ?4 = 1 THEN NULL ELSE agent_identity.mismatch_field END,"
	" mismatch_since = CASE WHEN ?4 = 1 THEN NULL ELSE agent_identity.mismatch_since END,"
	" mismatch_last = CASE WHEN ?4 = 1 THEN NULL ELSE agent_identity.mismatch_last END,"
	" refused = CASE WHEN ?4 = 1 THEN 0 ELSE agent_identity.refused END,"
	" reinstall_job = CASE WHEN CAST(?2 AS BIGINT) > 0 THEN ?2"
	" ELSE agent_identity.reinstall_job END,"
	" bmc_serial_accepted = coalesce(?3, agent_identity.bmc_serial_accepted),"
	" bound_by = excluded.bound_by",
	NULL};

/* The one other node whose stored state has that DMI serial (compared without case, as
 * ASCII) or else that machine id; 0 when none or several. The CAST gives PostgreSQL the
 * parameter's type before its IS NOT NULL. */
static const struct sql_stmt OWNER = {
	STMT_IDENTITY_OWNER, "finding an agent identity's node",
	"SELECT CASE WHEN count(*) = 1 THEN min(node_id) ELSE 0 END FROM"
	" (SELECT node_id FROM node_agent_state WHERE node_id != ?1 AND"
	" (CASE WHEN CAST(?2 AS TEXT) IS NOT NULL THEN lower(dmi_serial) = lower(?2)"
	" ELSE machine_id = ?3 END) LIMIT 2) o",
	NULL};

static const struct sql_stmt ACCEPT = {
	STMT_NONE, "accepting an agent identity",
	"INSERT INTO agent_identity (node_id, accept_next, accepted_by, accepted_at)"
	" SELECT id, 1, ?2, ?3 FROM nodes WHERE id = ?1"
	" ON CONFLICT (node_id) DO UPDATE SET accept_next = 1, accepted_by = ?2, accepted_at = ?3",
	NULL};

static int identity_read(const struct sql_row *r, void *elem)
{
	struct agent_identity *o = elem;
	char **const text[] = {&o->node, &o->bmc_serial, &o->hostname, &o->machine_id,
			       &o->dmi_serial, &o->boot_id, &o->accepted_by,
			       &o->bmc_serial_accepted, &o->mismatch, &o->mismatch_field,
			       &o->elsewhere_node};
	char **const more[] = {&o->bmc_uuid, &o->bmc_sku, &o->bmc_chassis_serial, &o->bound_by,
			       &o->report_id};
	int ret;

	o->node_id = sql_col_int(r, 11);
	o->has_agent = (int)sql_col_int(r, 12);
	o->accept_next = (int)sql_col_int(r, 13);
	o->accepted_at = sql_col_int(r, 14);
	o->reinstall_job = sql_col_int(r, 15);
	o->reinstall_running = sql_col_int(r, 16);
	o->mismatch_since = sql_col_int(r, 17);
	o->mismatch_last = sql_col_int(r, 18);
	o->refused = sql_col_int(r, 19);
	for (size_t i = 0; i < sizeof(text) / sizeof(text[0]); i++)
		if ((ret = sql_col_strdup(r, (int)i, text[i])) < 0)
			return ret;
	for (size_t i = 0; i < sizeof(more) / sizeof(more[0]); i++)
		if ((ret = sql_col_strdup(r, 21 + (int)i, more[i])) < 0)
			return ret;
	o->elsewhere_last = o->elsewhere_node ? sql_col_int(r, 20) : 0;
	return 0;
}

int store_agent_identity_get(struct store *st, struct agent_identity *out, int64_t node_id)
{
	struct agent_identity o = { 0 };
	int ret = sql_one(st, &GET, SQL_ARGS(SQL_INT(node_id)), identity_read, &o);

	if (ret == 0)
		ret = kiln_fail(KILN_ENOTFOUND, "store: no node id %lld", (long long)node_id);
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
	int64_t refused = 0;
	int ret = sql_int(st, &REFUSE,
			  SQL_ARGS(SQL_INT(node_id), SQL_TEXT(message), SQL_TEXT(field),
				   SQL_INT(store_now(st))),
			  &refused);

	if (ret < 0)
		return ret;
	*out_new = refused == 1;
	return 0;
}

int store_agent_identity_elsewhere(struct store *st, int64_t other_id, int64_t node_id)
{
	int64_t ret = sql_exec(st, &ELSEWHERE,
			       SQL_ARGS(SQL_INT(other_id), SQL_INT(node_id), SQL_INT(store_now(st))));

	return ret < 0 ? (int)ret : 0;
}

int store_agent_identity_settle(struct store *st, int64_t node_id, int rebound,
				int64_t reinstall_job, const char *bmc_serial_accepted,
				const char *bound_by)
{
	int64_t ret = sql_exec(st, &SETTLE,
			       SQL_ARGS(SQL_INT(node_id), SQL_INT(reinstall_job),
					SQL_TEXT(bmc_serial_accepted), SQL_BOOL(rebound),
					SQL_TEXT(bound_by)));

	return ret < 0 ? (int)ret : 0;
}

int store_agent_identity_owner(struct store *st, int64_t *out_id, int64_t node_id,
			       const char *dmi_serial, const char *machine_id)
{
	int64_t id = 0;
	/* a placeholder serial is shared by many machines: the caller passes only useful ones */
	int ret = sql_int(st, &OWNER,
			  SQL_ARGS(SQL_INT(node_id), SQL_TEXT(dmi_serial), SQL_TEXT(machine_id)), &id);

	if (ret < 0)
		return ret;
	*out_id = id;
	return 0;
}

int store_agent_identity_accept(struct store *st, int64_t node_id, const char *by)
{
	int64_t ret = sql_exec(st, &ACCEPT,
			       SQL_ARGS(SQL_INT(node_id), SQL_TEXT(by), SQL_INT(store_now(st))));

	if (ret == 0)
		return kiln_fail(KILN_ENOTFOUND, "no node id %lld", (long long)node_id);
	return ret < 0 ? (int)ret : 0;
}

int store_agent_identity_list(struct store *st, struct agent_identity **out, size_t *out_count)
{
	return sql_list(st, &LIST, SQL_NO_ARGS, out, out_count, sizeof(**out), identity_read,
			identity_clear);
}
