/* SPDX-License-Identifier: Apache-2.0 */
/* How an agent finds its node in the store: the values that identify a machine, enrollment
 * facts and tokens, agents pending acceptance, and the refusals of an agent's identity. The
 * reports themselves: store_agent.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/error.h"
#include "store/store_internal.h"

#define TOUCH_INTERVAL_S 60

/* --- nodes as agents find them ------------------------------------------------------ */

static const struct sql_stmt BMC_SERIAL_SET = {
	STMT_NODE_BMC_SERIAL_SET, "setting a BMC serial",
	"UPDATE nodes SET bmc_serial = ?1 WHERE name = ?2", NULL};

static const struct sql_stmt FIND_BY_SERIAL = {
	STMT_NODE_FIND_BY_SERIAL, "finding a node by serial",
	"SELECT id, name FROM nodes WHERE bmc_serial = ?1 LIMIT 2", NULL};

static const struct sql_stmt BMC_IDS_SET = {
	STMT_NODE_BMC_IDS_SET, "setting a node's BMC identity",
	"UPDATE nodes SET bmc_serial = ?1, bmc_uuid = lower(CAST(?2 AS TEXT)), bmc_sku = ?3,"
	" bmc_chassis_serial = ?4 WHERE name = ?5",
	NULL};

static const struct sql_stmt FIND_BY_UUID = {
	STMT_NODE_FIND_BY_UUID, "finding a node by system UUID",
	"SELECT id, name FROM nodes WHERE bmc_uuid IN (?1, ?2, ?3) LIMIT 2", NULL};

/* The UUID's IN list and the serials' OR: each value once per node. */
static const struct sql_stmt FIND_BY_BMC_SERIAL = {
	STMT_NODE_FIND_BY_BMC_SERIAL, "finding a node by BMC serial",
	"SELECT id, name FROM nodes WHERE lower(bmc_serial) = lower(?1)"
	" OR lower(bmc_sku) = lower(?1) OR lower(bmc_chassis_serial) = lower(?1) LIMIT 2",
	NULL};

/* A node with agent tokens or a running reinstall job: always one row. */
static const struct sql_stmt ENROLL_FACTS = {
	STMT_ENROLL_FACTS, "reading a node's enrollment facts",
	"SELECT CASE WHEN EXISTS (SELECT 1 FROM agent_tokens WHERE node_id = ?1"
	" AND revoked_at IS NULL) THEN 1 ELSE 0 END, coalesce(j.id, 0),"
	" coalesce(j.enrolled_at, 0) FROM (SELECT 1 AS one) AS o"
	" LEFT JOIN jobs j ON j.node_id = ?1 AND j.state = 'running'",
	NULL};

static const struct sql_stmt JOB_ENROLL_TAKE = {
	STMT_JOB_ENROLL_TAKE, "using a reinstall job's enrollment",
	"UPDATE jobs SET enrolled_at = ?2 WHERE id = ?1 AND enrolled_at = 0"
	" AND state = 'running'",
	NULL};

int store_node_bmc_serial_set(struct store *st, const char *name, const char *serial)
{
	int64_t n = sql_exec(st, &BMC_SERIAL_SET,
			     SQL_ARGS(SQL_TEXT(serial && *serial ? serial : NULL), SQL_TEXT(name)));

	if (n == 0)
		return kiln_fail(KILN_ENOTFOUND, "no node '%s'", name);
	return n < 0 ? (int)n : 0;
}

/* The first of the rows (id, name) a statement returns, and how many it returned. */
struct node_found {
	int64_t id;
	char *name;
	int rows;
};

static int node_found_read(const struct sql_row *r, void *ctx)
{
	struct node_found *f = ctx;

	if (f->rows++ > 0)
		return 0;
	f->id = sql_col_int(r, 0);
	return sql_col_strdup(r, 1, &f->name);
}

static const char *text_or_null(const char *s)
{
	return s && *s ? s : NULL;
}

int store_node_bmc_ids_set(struct store *st, const char *name, const struct node_bmc_ids *ids)
{
	int64_t n = sql_exec(st, &BMC_IDS_SET,
			     SQL_ARGS(SQL_TEXT(text_or_null(ids->serial)),
				      SQL_TEXT(text_or_null(ids->uuid)),
				      SQL_TEXT(text_or_null(ids->sku)),
				      SQL_TEXT(text_or_null(ids->chassis_serial)), SQL_TEXT(name)));

	if (n == 0)
		return kiln_fail(KILN_ENOTFOUND, "no node '%s'", name);
	return n < 0 ? (int)n : 0;
}

/* The one node a find statement returns: see store_node_find_by_bmc. */
static int find_one(struct store *st, int64_t *out_id, char **out_name, const struct sql_stmt *q,
		    const struct sql_arg *args, size_t nargs, const char *what)
{
	struct node_found f = {0, NULL, 0};
	int ret = sql_run(st, q, args, nargs, node_found_read, &f, NULL);

	if (ret == 0)
		ret = kiln_fail(KILN_ENOTFOUND, "no node with BMC %s", what);
	else if (ret > 1)
		ret = kiln_fail(KILN_EEXISTS, "several nodes have BMC %s", what);
	if (ret < 0) {
		free(f.name);
		return ret;
	}
	*out_id = f.id;
	*out_name = f.name;
	return 0;
}

int store_node_find_by_serial(struct store *st, int64_t *out_id, char **out_name,
			      const char *serial)
{
	return find_one(st, out_id, out_name, &FIND_BY_SERIAL, SQL_ARGS(SQL_TEXT(serial)),
			"serial");
}

int store_node_find_by_bmc(struct store *st, int64_t *out_id, char **out_name,
			   const char *const uuid_forms[3], const char *serial)
{
	int ret = KILN_ENOTFOUND;

	if (uuid_forms && (uuid_forms[0] || uuid_forms[1] || uuid_forms[2])) {
		ret = find_one(st, out_id, out_name, &FIND_BY_UUID,
			       SQL_ARGS(SQL_TEXT(uuid_forms[0]), SQL_TEXT(uuid_forms[1]),
					SQL_TEXT(uuid_forms[2])), "system UUID");
		if (ret != KILN_ENOTFOUND)
			return ret;
	}
	if (serial && *serial) {
		if (ret == KILN_ENOTFOUND)
			kiln_error_clear();
		ret = find_one(st, out_id, out_name, &FIND_BY_BMC_SERIAL,
			       SQL_ARGS(SQL_TEXT(serial)), "serial, SKU or chassis serial");
	}
	return ret;
}

struct enroll_facts {
	int has_token;
	int64_t job;
	int job_enrolled;
};

static int enroll_facts_read(const struct sql_row *r, void *ctx)
{
	struct enroll_facts *e = ctx;

	e->has_token = (int)sql_col_int(r, 0);
	e->job = sql_col_int(r, 1);
	e->job_enrolled = sql_col_int(r, 2) > 0;
	return 0;
}

int store_agent_enroll_facts(struct store *st, int *out_has_token, int64_t *out_job,
			     int *out_job_enrolled, int64_t node_id)
{
	struct enroll_facts e = {0, 0, 0};
	int ret = sql_one(st, &ENROLL_FACTS, SQL_ARGS(SQL_INT(node_id)), enroll_facts_read, &e);

	if (ret == 0)
		return kiln_fail(KILN_ERROR, "store: reading a node's enrollment facts: no row");
	if (ret < 0)
		return ret;
	*out_has_token = e.has_token;
	*out_job = e.job;
	*out_job_enrolled = e.job_enrolled;
	return 0;
}

int store_job_enroll_take(struct store *st, int64_t job_id)
{
	int64_t n = sql_exec(st, &JOB_ENROLL_TAKE,
			     SQL_ARGS(SQL_INT(job_id), SQL_INT(store_now(st))));

	if (n == 0)
		return kiln_fail(KILN_EEXISTS, "job %lld already took its enrollment",
				 (long long)job_id);
	return n < 0 ? (int)n : 0;
}

/* --- enrollment tokens --------------------------------------------------------------- */

static void enroll_token_clear(void *elem)
{
	free(((struct enroll_token *)elem)->name);
}

void enroll_token_list_free(struct enroll_token *list, size_t count)
{
	sql_list_free(list, count, sizeof(*list), enroll_token_clear);
}

static const struct sql_stmt ENROLL_TOKEN_INSERT = {
	STMT_ENROLL_TOKEN_INSERT, "adding an enrollment token",
	"INSERT INTO enroll_tokens (name, hash, created_at) VALUES (?1, ?2, ?3) RETURNING id",
	NULL};

static const struct sql_stmt ENROLL_TOKEN_LOOKUP = {
	STMT_ENROLL_TOKEN_LOOKUP, "looking up an enrollment token",
	"SELECT id FROM enroll_tokens WHERE hash = ?1 AND revoked_at IS NULL", NULL};

static const struct sql_stmt ENROLL_TOKEN_TOUCH = {
	STMT_ENROLL_TOKEN_TOUCH, "recording enrollment token use",
	"UPDATE enroll_tokens SET last_used_at = ?1 WHERE id = ?2"
	" AND (last_used_at IS NULL OR last_used_at <= ?3)",
	NULL};

static const struct sql_stmt ENROLL_TOKEN_LIST = {
	STMT_ENROLL_TOKEN_LIST, "listing enrollment tokens",
	"SELECT id, name, created_at, coalesce(last_used_at, 0),"
	" CASE WHEN revoked_at IS NOT NULL THEN 1 ELSE 0 END FROM enroll_tokens ORDER BY id",
	NULL};

static const struct sql_stmt ENROLL_TOKEN_REVOKE = {
	STMT_ENROLL_TOKEN_REVOKE, "revoking an enrollment token",
	"UPDATE enroll_tokens SET revoked_at = coalesce(revoked_at, ?1) WHERE id = ?2", NULL};

int store_enroll_token_insert(struct store *st, int64_t *out_id, const char *name,
			      const unsigned char hash[32])
{
	int64_t id = 0;
	int ret = sql_int(st, &ENROLL_TOKEN_INSERT,
			  SQL_ARGS(SQL_TEXT(name), SQL_BLOB(hash, 32), SQL_INT(store_now(st))), &id);

	if (ret < 0)
		return ret;
	*out_id = id;
	return 0;
}

int store_enroll_token_lookup(struct store *st, int64_t *out_id, const unsigned char hash[32])
{
	int64_t id = 0, now = store_now(st), n;
	int ret = sql_int(st, &ENROLL_TOKEN_LOOKUP, SQL_ARGS(SQL_BLOB(hash, 32)), &id);

	if (ret == 0)
		return kiln_fail(KILN_ENOTFOUND, "unknown or revoked enrollment token");
	if (ret < 0)
		return ret;
	/* A busy database only delays the record of use. */
	n = sql_exec(st, &ENROLL_TOKEN_TOUCH,
		     SQL_ARGS(SQL_INT(now), SQL_INT(id), SQL_INT(now - TOUCH_INTERVAL_S)));
	if (n < 0 && n != KILN_EBUSY)
		return (int)n;
	*out_id = id;
	return 0;
}

static int enroll_token_read(const struct sql_row *r, void *elem)
{
	struct enroll_token *t = elem;

	t->id = sql_col_int(r, 0);
	t->created_at = sql_col_int(r, 2);
	t->last_used_at = sql_col_int(r, 3);
	t->revoked = (int)sql_col_int(r, 4);
	return sql_col_strdup(r, 1, &t->name);
}

int store_enroll_token_list(struct store *st, struct enroll_token **out, size_t *out_count)
{
	return sql_list(st, &ENROLL_TOKEN_LIST, SQL_NO_ARGS, out, out_count, sizeof(**out),
			enroll_token_read, enroll_token_clear);
}

/* A write's outcome: changing no row is KILN_ENOTFOUND, "no <noun> <id>". */
static int changed(int64_t n, const char *noun, int64_t id)
{
	if (n == 0)
		return kiln_fail(KILN_ENOTFOUND, "no %s %lld", noun, (long long)id);
	return n < 0 ? (int)n : 0;
}

int store_enroll_token_revoke(struct store *st, int64_t id)
{
	return changed(sql_exec(st, &ENROLL_TOKEN_REVOKE,
				SQL_ARGS(SQL_INT(store_now(st)), SQL_INT(id))),
		       "enrollment token", id);
}

/* --- pending agents ------------------------------------------------------------------ */

static void pending_agent_clear(void *elem)
{
	struct pending_agent *p = elem;

	free(p->dmi_serial);
	free(p->hostname);
	free(p->machine_id);
	free(p->node);
	free(p->candidate);
	free(p->reason);
}

void pending_agent_list_free(struct pending_agent *list, size_t count)
{
	sql_list_free(list, count, sizeof(*list), pending_agent_clear);
}

static const struct sql_stmt PENDING_COUNT = {
	STMT_PENDING_COUNT, "counting pending agents", "SELECT count(*) FROM pending_agents", NULL};

/* The upsert either updates an existing row or adds one; ?6 = 0 refuses only the adding. */
static const struct sql_stmt PENDING_UPSERT = {
	STMT_PENDING_UPSERT, "recording a pending agent",
	"INSERT INTO pending_agents (dmi_serial, hostname, machine_id,"
	" enroll_token_id, first_seen, last_seen, candidate_id, reason)"
	" SELECT ?1, ?2, ?3, ?4, ?5, ?5, ?7, ?8 WHERE ?6 = 1 OR EXISTS (SELECT 1 FROM"
	" pending_agents WHERE dmi_serial = ?1 AND hostname = ?2 AND machine_id = ?3)"
	" ON CONFLICT (dmi_serial, hostname, machine_id) DO UPDATE SET"
	" last_seen = excluded.last_seen, attempts = pending_agents.attempts + 1,"
	" enroll_token_id = excluded.enroll_token_id,"
	" candidate_id = excluded.candidate_id, reason = excluded.reason"
	" RETURNING id, coalesce(node_id, 0)",
	NULL};

static const struct sql_stmt PENDING_LIST = {
	STMT_PENDING_LIST, "listing pending agents",
	"SELECT p.id, p.dmi_serial, p.hostname, p.machine_id, p.first_seen,"
	" p.last_seen, p.attempts, coalesce(p.node_id, 0), n.name, c.name, p.reason"
	" FROM pending_agents p LEFT JOIN nodes n ON n.id = p.node_id"
	" LEFT JOIN nodes c ON c.id = p.candidate_id ORDER BY p.id",
	NULL};

static const struct sql_stmt PENDING_ACCEPT = {
	STMT_PENDING_ACCEPT, "accepting a pending agent",
	"UPDATE pending_agents SET node_id = ?1, accepted_at = ?2 WHERE id = ?3", NULL};

static const struct sql_stmt PENDING_FORGET = {
	STMT_PENDING_FORGET, "forgetting a pending agent",
	"DELETE FROM pending_agents WHERE dmi_serial = ?1 AND hostname = ?2 AND machine_id = ?3",
	NULL};

static const struct sql_stmt PENDING_DELETE = {
	STMT_PENDING_DELETE, "deleting a pending agent", "DELETE FROM pending_agents WHERE id = ?1",
	NULL};

/* The id and node id (0 when none) of the row a pending upsert returned. */
struct pending_ids {
	int64_t id, node_id;
};

static int pending_ids_read(const struct sql_row *r, void *ctx)
{
	struct pending_ids *p = ctx;

	p->id = sql_col_int(r, 0);
	p->node_id = sql_col_int(r, 1);
	return 0;
}

int store_pending_agent_record(struct store *st, int64_t *out_id, int64_t *out_node_id,
			       const char *dmi_serial, const char *hostname,
			       const char *machine_id, int64_t enroll_token_id,
			       int64_t candidate_id, const char *reason, int max_rows)
{
	struct pending_ids p = {0, 0};
	int64_t rows = 0;
	int ret;

	if ((ret = sql_int(st, &PENDING_COUNT, SQL_NO_ARGS, &rows)) < 0)
		return ret;
	ret = sql_one(st, &PENDING_UPSERT,
		      SQL_ARGS(SQL_TEXT(dmi_serial ? dmi_serial : ""),
			       SQL_TEXT(hostname ? hostname : ""),
			       SQL_TEXT(machine_id ? machine_id : ""),
			       SQL_ID_OR_NULL(enroll_token_id), SQL_INT(store_now(st)),
			       SQL_BOOL(rows < max_rows), SQL_ID_OR_NULL(candidate_id),
			       SQL_TEXT(reason)),
		      pending_ids_read, &p);
	if (ret == 0)
		return kiln_fail(KILN_EBUSY, "%lld agents already wait for an admin; accept or"
				 " delete some first", (long long)rows);
	if (ret < 0)
		return ret;
	*out_id = p.id;
	*out_node_id = p.node_id;
	return 0;
}

static int pending_agent_read(const struct sql_row *r, void *elem)
{
	struct pending_agent *p = elem;
	int ret;

	p->id = sql_col_int(r, 0);
	p->first_seen = sql_col_int(r, 4);
	p->last_seen = sql_col_int(r, 5);
	p->attempts = sql_col_int(r, 6);
	p->node_id = sql_col_int(r, 7);
	if ((ret = sql_col_strdup(r, 1, &p->dmi_serial)) < 0 ||
	    (ret = sql_col_strdup(r, 2, &p->hostname)) < 0 ||
	    (ret = sql_col_strdup(r, 3, &p->machine_id)) < 0 ||
	    (ret = sql_col_strdup(r, 8, &p->node)) < 0 ||
	    (ret = sql_col_strdup(r, 9, &p->candidate)) < 0)
		return ret;
	return sql_col_strdup(r, 10, &p->reason);
}

int store_pending_agent_list(struct store *st, struct pending_agent **out, size_t *out_count)
{
	return sql_list(st, &PENDING_LIST, SQL_NO_ARGS, out, out_count, sizeof(**out),
			pending_agent_read, pending_agent_clear);
}

int store_pending_agent_accept(struct store *st, int64_t id, int64_t node_id)
{
	return changed(sql_exec(st, &PENDING_ACCEPT,
				SQL_ARGS(SQL_INT(node_id), SQL_INT(store_now(st)), SQL_INT(id))),
		       "pending agent", id);
}

int store_pending_agent_forget(struct store *st, const char *dmi_serial, const char *hostname,
			       const char *machine_id)
{
	int64_t n = sql_exec(st, &PENDING_FORGET,
			     SQL_ARGS(SQL_TEXT(dmi_serial ? dmi_serial : ""),
				      SQL_TEXT(hostname ? hostname : ""),
				      SQL_TEXT(machine_id ? machine_id : "")));

	return n < 0 ? (int)n : 0;
}

int store_pending_agent_delete(struct store *st, int64_t id)
{
	return changed(sql_exec(st, &PENDING_DELETE, SQL_ARGS(SQL_INT(id))), "pending agent", id);
}

/* --- reports refused whole ------------------------------------------------------------ */

void agent_refusal_clear(struct agent_refusal *r)
{
	if (!r)
		return;
	free(r->reason);
	memset(r, 0, sizeof(*r));
}

static const struct sql_stmt REFUSAL_NOTE = {
	STMT_AGENT_REFUSAL_NOTE, "noting a refused agent report",
	"INSERT INTO agent_refusals (node_id, reason, refused, first_at, last_at)"
	" VALUES (?1, ?2, 1, ?3, ?3) ON CONFLICT (node_id) DO UPDATE SET"
	" reason = excluded.reason, refused = agent_refusals.refused + 1,"
	" last_at = excluded.last_at",
	NULL};

static const struct sql_stmt REFUSAL_GET = {
	STMT_AGENT_REFUSAL_GET, "reading refused agent reports",
	"SELECT reason, refused, first_at, last_at FROM agent_refusals WHERE node_id = ?1", NULL};

int store_agent_refusal_note(struct store *st, int64_t node_id, const char *reason)
{
	int64_t n = sql_exec(st, &REFUSAL_NOTE,
			     SQL_ARGS(SQL_INT(node_id), SQL_TEXT(reason), SQL_INT(store_now(st))));

	return n < 0 ? (int)n : 0;
}

static int refusal_read(const struct sql_row *r, void *ctx)
{
	struct agent_refusal *o = ctx;

	o->refused = sql_col_int(r, 1);
	o->first_at = sql_col_int(r, 2);
	o->last_at = sql_col_int(r, 3);
	return sql_col_strdup(r, 0, &o->reason);
}

int store_agent_refusal_get(struct store *st, struct agent_refusal *out, int64_t node_id)
{
	struct agent_refusal o = {0};
	int ret = sql_one(st, &REFUSAL_GET, SQL_ARGS(SQL_INT(node_id)), refusal_read, &o);

	if (ret < 0) {
		agent_refusal_clear(&o);
		return ret;
	}
	*out = o;
	return 0;
}
