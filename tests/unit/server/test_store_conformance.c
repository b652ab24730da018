/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The store conformance program: one script calls every function of server/store/store.h
 * with meaningful data and writes each result (the return code and what it read back) as a
 * line of a canonical transcript. The script runs on SQLite and, when KILN_TEST_PG names a
 * PostgreSQL role that may CREATE DATABASE, on a fresh PostgreSQL database; the transcripts
 * must be equal line by line. Each call also has the return code the header promises: an
 * other code fails on either backend. check_store_conformance.sh checks that every function
 * the headers declare is called by this program.
 *
 * This file holds the harness, the order of the sections, the backends and main; the
 * sections are in store_conformance_inventory.c and store_conformance_operations.c, and
 * store_conformance.h declares what the files share.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#ifdef KILN_TEST_HAVE_LIBPQ
#include <libpq-fe.h>
#endif

#include "kiln/error.h"
#include "kiln/noderange.h"
#include "store/store.h"
#include "store/store_internal.h"

#include "store_conformance.h"

int64_t clock_at;

static int64_t fixed_now(void)
{
	return clock_at;
}

void conform_out(struct run *r, const char *fmt, ...)
{
	char line[4096];
	va_list ap;
	size_t n;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	n = strlen(line);
	if (r->len + n + 2 > r->cap) {
		r->cap = (r->len + n + 2) * 2;
		r->text = realloc(r->text, r->cap);
		assert_non_null(r->text);
	}
	memcpy(r->text + r->len, line, n);
	r->len += n;
	r->text[r->len++] = '\n';
	r->text[r->len] = '\0';
	r->lines++;
}

const char *code_name(int rc)
{
	static const char *names[] = { "OK", "ERROR", "ENOTFOUND", "ETIMEOUT", "EAUTH",
				       "EBUSY", "EINVAL", "EEXISTS", "ETOOBIG", "EPERM",
				       "EPROTO", "ENEWER", "ETLS", "EIDENTITY", "ECONFIG" };
	static char other[32];

	if (rc <= 0 && -rc < (int)(sizeof(names) / sizeof(names[0])))
		return names[-rc];
	snprintf(other, sizeof(other), "rc %d", rc);
	return other;
}

/* Records a call's code; one other than want counts as unexpected (the message says why).
 * what is the call's source text, its NULL and NAN spelled so. */
int conform_call(struct run *r, int want, int rc, const char *src)
{
	static const char *from[] = { "((void *)0)", "(__builtin_nanf (\"\"))" };
	static const char *to[] = { "NULL", "NAN" };
	char what[1024];
	size_t at = 0;

	while (*src && at + 8 < sizeof(what)) {
		size_t k;

		for (k = 0; k < 2; k++)
			if (strncmp(src, from[k], strlen(from[k])) == 0)
				break;
		if (k < 2) {
			at += (size_t)snprintf(what + at, sizeof(what) - at, "%s", to[k]);
			src += strlen(from[k]);
		} else {
			what[at++] = *src++;
		}
	}
	what[at] = '\0';
	out(r, "%s -> %s", what, code_name(rc));
	if (rc != want) {
		if (!r->unexpected++)
			snprintf(r->first_unexpected, sizeof(r->first_unexpected),
				 "%s: %s returned %s, expected %s (%s)", r->backend, what,
				 code_name(rc), code_name(want), kiln_error_last());
		fprintf(stderr, "%s: unexpected: %s -> %s (want %s): %s\n", r->backend, what,
			code_name(rc), code_name(want), kiln_error_last());
		out(r, "  section stopped");
		longjmp(r->section, 1);
	}
	return rc;
}


/* Small values formatted into a ring of buffers, valid for a few lines. */
static char ring[16][2048];
static unsigned ring_at;

static char *slot(void)
{
	return ring[ring_at++ % 16];
}

const char *conform_str(const char *s)
{
	char *b;

	if (!s)
		return "NULL";
	b = slot();
	snprintf(b, sizeof(ring[0]), "'%s'", s);
	return b;
}

/* JSON text in a canonical form (sorted keys, compact), so that a backend that keeps JSON
 * as a parsed type compares by value; text that does not parse is kept as it is. */
const char *conform_json(const char *s)
{
	json_t *v;
	char *d, *b;

	if (!s)
		return "NULL";
	v = json_loads(s, JSON_DECODE_ANY, NULL);
	if (!v)
		return S(s);
	d = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY | JSON_REAL_PRECISION(10));
	json_decref(v);
	b = slot();
	snprintf(b, sizeof(ring[0]), "json %s", d ? d : "?");
	free(d);
	return b;
}

const char *conform_num(double v)
{
	char *b;

	if (isnan(v))
		return "nan";
	b = slot();
	snprintf(b, sizeof(ring[0]), "%.4f", v);
	return b;
}

const char *conform_hex(const unsigned char *p, size_t n)
{
	char *b = slot();
	size_t i;

	if (!p)
		return "NULL";
	b[0] = '\0';
	for (i = 0; i < n && i * 2 + 3 < sizeof(ring[0]); i++)
		snprintf(b + i * 2, 3, "%02x", p[i]);
	return b;
}

void hash_fill(unsigned char h[32], unsigned char seed)
{
	for (int i = 0; i < 32; i++)
		h[i] = (unsigned char)(seed * 31 + i);
}

/* --- dumps ------------------------------------------------------------------------ */

void node_dump(struct run *r, const struct node *n)
{
	char groups[512] = "";
	size_t i, at = 0;

	for (i = 0; i < n->ngroups; i++)
		at += (size_t)snprintf(groups + at, sizeof(groups) - at, "%s%s", i ? "," : "",
				       n->groups[i]);
	out(r, "  node id=%lld name=%s groups=[%s] rack=%s proto=%d host=%s port=%d user=%s "
	    "pw=%s tls=%d ca=%s fp=%s cipher=%d priv=%s wk=%s sol=%s:%d system=%s cv=%lld "
	    "created=%lld updated=%lld",
	    (long long)n->id, S(n->name), groups, S(n->rack), (int)n->bmc_protocol, S(n->bmc_host),
	    n->bmc_port, S(n->bmc_user), H(n->bmc_password_enc, n->bmc_password_enc_len),
	    (int)n->tls_mode, S(n->tls_ca_file), S(n->tls_fingerprint), n->ipmi_cipher,
	    S(n->ipmi_privilege), S(n->ipmi_workarounds), S(n->sol_host), n->sol_port,
	    S(n->bmc_system), (long long)n->credentials_version, (long long)n->created_at,
	    (long long)n->updated_at);
}

void nodelist_dump(struct run *r, struct kiln_nodelist *l)
{
	for (size_t i = 0; i < l->count; i++)
		out(r, "  name %s", l->names[i]);
	kiln_nodelist_free(l);
	memset(l, 0, sizeof(*l));
}

void token_dump(struct run *r, const struct api_token *t)
{
	out(r, "  token id=%lld name=%s role=%d created=%lld used=%lld revoked=%d",
	    (long long)t->id, S(t->name), (int)t->role, (long long)t->created_at,
	    (long long)t->last_used_at, t->revoked);
}

void audit_dump(struct run *r, struct audit_entry *a, size_t n)
{
	for (size_t i = 0; i < n; i++)
		out(r, "  audit id=%lld time=%lld actor=%s action=%s target=%s detail=%s outcome=%s",
		    (long long)a[i].id, (long long)a[i].time, S(a[i].actor), S(a[i].action),
		    S(a[i].target), J(a[i].detail), S(a[i].outcome));
	audit_entry_list_free(a, n);
}

void events_dump(struct run *r, struct event *e, size_t n)
{
	for (size_t i = 0; i < n; i++)
		out(r, "  event id=%lld time=%lld node_id=%lld node=%s sev=%d source=%s kind=%s "
		    "msg=%s dedup=%s bmc_time=%lld",
		    (long long)e[i].id, (long long)e[i].time, (long long)e[i].node_id, S(e[i].node),
		    (int)e[i].severity, S(e[i].source), S(e[i].kind), S(e[i].message),
		    S(e[i].dedup_key), (long long)e[i].bmc_time);
	event_list_free(e, n);
}

void agent_state_dump(struct run *r, const struct agent_state *s)
{
	out(r, "  agent node_id=%lld node=%s report_id=%s seen=%lld time=%lld boot=%s host=%s "
	    "machine=%s os=%s kernel=%s dmi=%s version=%s nvidia=%s driver=%s kmod=%s cuda=%s "
	    "nvml=%s gpus=%lld max=%lld",
	    (long long)s->node_id, S(s->node), S(s->report_id), (long long)s->last_seen,
	    (long long)s->report_time, S(s->boot_id), S(s->hostname), S(s->machine_id), S(s->os),
	    S(s->kernel), S(s->dmi_serial), S(s->agent_version), S(s->nvidia_status),
	    S(s->driver_version), S(s->kernel_module_version), S(s->cuda_driver_version),
	    S(s->nvml_version), (long long)s->gpu_count, (long long)s->gpu_count_max);
	out(r, "  agent report=%s hottest=%s power=%s util=%s facts=%d interval=%lld iowait=%s "
	    "rejected=%s",
	    J(s->report), F(s->gpu_hottest_c), F(s->gpu_power_w), F(s->gpu_utilization_avg_pct),
	    s->health_facts, (long long)s->interval_s, F(s->cpu_iowait_pct),
	    S(s->rejected_fields));
}

void gpu_dump(struct run *r, const struct agent_gpu *g)
{
	out(r, "  gpu %lld uuid=%s name=%s serial=%s pci=%s mem=%lld eccv=%lld ecca=%lld "
	    "rrf=%d rpp=%d rrp=%d rru=%lld rose=%lld used=%lld temp=%s power=%s util=%s",
	    (long long)g->index, S(g->uuid), S(g->name), S(g->serial), S(g->pci_bus_id),
	    (long long)g->memory_total_bytes, (long long)g->ecc_volatile_uncorrected,
	    (long long)g->ecc_aggregate_uncorrected, g->remapped_rows_failure,
	    g->retired_pages_pending, g->remapped_rows_pending,
	    (long long)g->remapped_rows_uncorrected, (long long)g->ecc_rose_at,
	    (long long)g->memory_used_bytes, F(g->temperature_c), F(g->power_draw_w),
	    F(g->utilization_gpu_pct));
}

void samples_dump(struct run *r, struct agent_sample *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		out(r, "  sample node=%lld time=%lld temp=%s power=%s", (long long)s[i].node_id,
		    (long long)s[i].time, F(s[i].temperature_max_c), F(s[i].power_draw_total_w));
	free(s);
}

void identity_dump(struct run *r, const struct agent_identity *a)
{
	out(r, "  identity node=%lld name=%s bmc_serial=%s has_agent=%d host=%s machine=%s dmi=%s "
	    "boot=%s accept=%d by=%s at=%lld serial_ok=%s job=%lld running=%lld mismatch=%s "
	    "field=%s since=%lld last=%lld refused=%lld elsewhere=%s elsewhere_last=%lld "
	    "bmc_uuid=%s bmc_sku=%s bmc_chassis=%s bound_by=%s",
	    (long long)a->node_id, S(a->node), S(a->bmc_serial), a->has_agent, S(a->hostname),
	    S(a->machine_id), S(a->dmi_serial), S(a->boot_id), a->accept_next, S(a->accepted_by),
	    (long long)a->accepted_at, S(a->bmc_serial_accepted), (long long)a->reinstall_job,
	    (long long)a->reinstall_running, S(a->mismatch), S(a->mismatch_field),
	    (long long)a->mismatch_since, (long long)a->mismatch_last, (long long)a->refused,
	    S(a->elsewhere_node), (long long)a->elsewhere_last, S(a->bmc_uuid), S(a->bmc_sku),
	    S(a->bmc_chassis_serial), S(a->bound_by));
}

void fleet_dump(struct run *r, const struct fleet_state *s)
{
	out(r, "  fleet node=%lld name=%s power=%s ptime=%lld changed=%lld perr=%s reach=%d "
	    "fail=%d down=%lld circuit=%d next=%lld ok=%lld sensors=%s stime=%lld sel=%lld "
	    "health=%s reasons=%s htime=%lld hung=%lld starved=%lld remediated=%lld off_by=%s "
	    "off_time=%lld",
	    (long long)s->node_id, S(s->node), s->power, (long long)s->power_time,
	    (long long)s->power_changed, S(s->power_error), s->reachable, s->failures,
	    (long long)s->down_since, s->circuit_open, (long long)s->next_try,
	    (long long)s->last_ok, J(s->sensors), (long long)s->sensors_time,
	    (long long)s->sel_cursor, s->health, J(s->reasons), (long long)s->health_time,
	    (long long)s->hung_since, (long long)s->starved_since, (long long)s->remediated_at,
	    S(s->power_off_by), (long long)s->power_off_time);
}

void image_dump(struct run *r, const struct image *i)
{
	out(r, "  image id=%lld name=%s kind=%s url=%s os=%s by=%s at=%lld", (long long)i->id,
	    S(i->name), S(i->kind), S(i->url), S(i->os), S(i->created_by),
	    (long long)i->created_at);
}

void job_dump(struct run *r, const struct job *j)
{
	out(r, "  job id=%lld node=%lld name=%s image=%s kind=%s url=%s os=%s state=%s step=%s "
	    "step_started=%lld boot=%s cycle=%lld done=%d error=%s by=%s audit=%lld force=%d "
	    "drain=%d timeout=%lld drain_started=%lld drained=%d created=%lld started=%lld "
	    "finished=%lld updated=%lld",
	    (long long)j->id, (long long)j->node_id, S(j->node), S(j->image), S(j->image_kind),
	    S(j->image_url), S(j->image_os), S(j->state), S(j->step), (long long)j->step_started,
	    S(j->boot_id_before), (long long)j->cycle_sent_at, j->cycle_done, S(j->error),
	    S(j->created_by), (long long)j->audit_id, j->force, j->drain,
	    (long long)j->drain_timeout_s, (long long)j->drain_started, j->drained,
	    (long long)j->created_at, (long long)j->started_at, (long long)j->finished_at,
	    (long long)j->updated_at);
}

int status_cb(void *ud, const struct status_row *s)
{
	struct run *r = ud;

	out(r, "  status node=%s state=%d power=%s ptime=%lld reach=%d health=%s reasons=%s "
	    "hung=%lld agent=%d seen=%lld gpus=%lld max=%lld driver=%s cuda=%s hottest=%s "
	    "power_w=%s maint=%d reason=%s busy=%d misconf=%d procs=%s",
	    S(s->node), s->has_state, S(s->power), (long long)s->power_time, s->reachable,
	    S(s->health), J(s->reasons), (long long)s->hung_since, s->has_agent,
	    (long long)s->agent_last_seen, (long long)s->gpu_count, (long long)s->gpu_count_max,
	    S(s->driver_version), S(s->cuda_driver_version), F(s->hottest_c), F(s->power_w),
	    s->in_maintenance, S(s->maint_reason), s->bmc_busy, s->bmc_misconfigured,
	    J(s->gpu_processes));
	return 0;
}

int metrics_cb(void *ud, const struct metrics_node *m)
{
	struct run *r = ud;

	out(r, "  metrics id=%lld node=%s rack=%s state=%d power=%s ptime=%lld reach=%d ok=%lld "
	    "health=%s reasons=%s hung=%lld sensors_time=%lld inventory_time=%lld maint=%d "
	    "reinstalling=%d",
	    (long long)m->node_id, S(m->node), S(m->rack), m->has_state, S(m->power),
	    (long long)m->power_time, m->reachable, (long long)m->last_ok, S(m->health),
	    J(m->reasons), (long long)m->hung_since, (long long)m->sensors_time,
	    (long long)m->inventory_time, m->in_maintenance, m->reinstalling);
	out(r, "  metrics agent=%d seen=%lld interval=%lld report=%s nvidia=%s driver=%s kmod=%s "
	    "cuda=%s nvml=%s os=%s kernel=%s count=%lld max=%lld",
	    m->has_agent, (long long)m->agent_last_seen, (long long)m->agent_interval_s,
	    S(m->report_id), S(m->nvidia_status), S(m->driver_version),
	    S(m->kernel_module_version), S(m->cuda_driver_version), S(m->nvml_version), S(m->os),
	    S(m->kernel), (long long)m->gpu_count, (long long)m->gpu_count_max);
	return 0;
}

int metrics_bmc_cb(void *ud, const struct metrics_bmc *m)
{
	struct run *r = ud;

	out(r, "  metrics bmc id=%lld sensors_time=%lld sensors=%s inventory_time=%lld maker=%s "
	    "model=%s fw=%s",
	    (long long)m->node_id, (long long)m->sensors_time, J(m->sensors),
	    (long long)m->inventory_time, S(m->manufacturer), S(m->model), S(m->firmware));
	return 0;
}

int metrics_report_cb(void *ud, const struct metrics_report *m)
{
	struct run *r = ud;

	out(r, "  metrics report id=%lld report=%s cudnn=%s gpus=%s toolkits=%s",
	    (long long)m->node_id, S(m->report_id), S(m->cudnn_version), J(m->gpus),
	    J(m->toolkits));
	return 0;
}

/* A status walk that stops at its first row with this code. */
int stop_cb(void *ud, const struct status_row *s)
{
	(void)ud;
	(void)s;
	return KILN_EBUSY;
}

/* --- the script -------------------------------------------------------------------- */

typedef void (*section_fn)(struct run *r, struct ids *id);

/* The sections in order. One stopped by an unexpected code leaks what it held (the test
 * fails anyway) and leaves no transaction open; the next one runs. */
static void script(struct run *r)
{
	static const section_fn sections[] = {
		section_nodes, section_tokens, section_agent_tokens, section_bmc_sessions,
		section_audit, section_events, section_agent, section_identity, section_enroll,
		section_bmc, section_jobs, section_reads, section_backup, section_migrate,
		section_tx_and_conflicts, section_cluster,
		section_node_calls,
	};
	static struct ids id; /* static: kept across a longjmp */
	static size_t i;

	memset(&id, 0, sizeof(id));
	clock_at = T0;
	store_clock_set(r->st, fixed_now);
	for (i = 0; i < sizeof(sections) / sizeof(sections[0]); i++) {
		if (setjmp(r->section) == 0)
			sections[i](r, &id);
		else
			store_rollback(r->st);
	}
	store_clock_set(r->st, NULL);
}

/* --- the backends ------------------------------------------------------------------ */

static void run_sqlite(struct run *r)
{
	char dir[] = "/tmp/kiln-conform-XXXXXX", db[128], p[160];

	assert_non_null(mkdtemp(dir));
	snprintf(db, sizeof(db), "%s/kiln.db", dir);
	r->backend = "sqlite";
	assert_int_equal(store_open(&r->st, db), 0);
	script(r);
	store_close(r->st);
	r->st = NULL;
	unlink(db);
	snprintf(p, sizeof(p), "%s-wal", db);
	unlink(p);
	snprintf(p, sizeof(p), "%s-shm", db);
	unlink(p);
	assert_int_equal(rmdir(dir), 0);
}

#ifdef KILN_TEST_HAVE_LIBPQ
/* A libpq string: every option of base but dbname, which is db (a key=value form, so that
 * both a URI and a key=value base work). NULL on failure. */
static char *conninfo_with_db(const char *base, const char *db)
{
	PQconninfoOption *opts = PQconninfoParse(base, NULL), *o;
	size_t cap = 4096, at = 0;
	char *s = malloc(cap);

	if (!opts || !s) {
		PQconninfoFree(opts);
		free(s);
		return NULL;
	}
	for (o = opts; o->keyword; o++) {
		const char *v = strcmp(o->keyword, "dbname") == 0 ? db : o->val;

		if (!v)
			continue;
		at += (size_t)snprintf(s + at, cap - at, "%s%s='", at ? " " : "", o->keyword);
		for (; *v && at + 4 < cap; v++) {
			if (*v == '\'' || *v == '\\')
				s[at++] = '\\';
			s[at++] = *v;
		}
		at += (size_t)snprintf(s + at, cap - at, "'");
	}
	PQconninfoFree(opts);
	if (at + 1 >= cap) {
		free(s);
		return NULL;
	}
	return s;
}

static int pg_admin(const char *base, const char *sql, char *err, size_t errlen)
{
	PGconn *c = PQconnectdb(base);
	PGresult *res;
	int ok;

	if (PQstatus(c) != CONNECTION_OK) {
		snprintf(err, errlen, "%s", PQerrorMessage(c));
		PQfinish(c);
		return -1;
	}
	res = PQexec(c, sql);
	ok = PQresultStatus(res) == PGRES_COMMAND_OK;
	if (!ok)
		snprintf(err, errlen, "%s", PQerrorMessage(c));
	PQclear(res);
	PQfinish(c);
	return ok ? 0 : -1;
}

static void run_pg(struct run *r, const char *base)
{
	char db[64], sql[160], err[512], *conn, *path;
	int ret;

	snprintf(db, sizeof(db), "kiln_conform_%ld", (long)getpid());
	snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS %s", db);
	pg_admin(base, sql, err, sizeof(err));
	snprintf(sql, sizeof(sql), "CREATE DATABASE %s", db);
	if (pg_admin(base, sql, err, sizeof(err)) < 0)
		fail_msg("KILN_TEST_PG: %s: %s", sql, err);
	conn = conninfo_with_db(base, db);
	assert_non_null(conn);
	path = malloc(strlen(conn) + 16);
	assert_non_null(path);
	snprintf(path, strlen(conn) + 16, "postgresql:%s", conn);
	r->backend = "postgresql";
	ret = store_open(&r->st, path);
	if (ret == 0 && strcmp(r->st->be->name, "postgresql") != 0) {
		/* A store without the PostgreSQL backend took the string for a file name. */
		store_close(r->st);
		r->st = NULL;
		unlink(path);
		ret = kiln_fail(KILN_EINVAL, "this store has no PostgreSQL backend");
	}
	if (ret < 0) {
		snprintf(err, sizeof(err), "%s", kiln_error_last());
		free(path);
		free(conn);
		fail_msg("store_open(postgresql:...): %s", err);
	}
	script(r);
	store_close(r->st);
	r->st = NULL;
	snprintf(sql, sizeof(sql), "DROP DATABASE %s", db);
	if (pg_admin(base, sql, err, sizeof(err)) < 0)
		fprintf(stderr, "note: %s: %s", sql, err);
	free(path);
	free(conn);
}
#endif

/* A transcript split into its lines (pointers into text, which is changed). */
struct lines {
	char **at;
	size_t n;
};

static void lines_split(struct lines *l, char *text)
{
	size_t cap = 64;
	char *p = text, *nl;

	l->n = 0;
	l->at = malloc(cap * sizeof(*l->at));
	assert_non_null(l->at);
	while (*p) {
		if (l->n == cap) {
			cap *= 2;
			l->at = realloc(l->at, cap * sizeof(*l->at));
			assert_non_null(l->at);
		}
		l->at[l->n++] = p;
		nl = strchr(p, '\n');
		if (!nl)
			break;
		*nl = '\0';
		p = nl + 1;
	}
}

#define RESYNC_MAX 64 /* lines looked ahead for the two transcripts to agree again */

/*
 * Compares the transcripts line by line; where they differ, the next place they agree again
 * (within RESYNC_MAX lines of each) ends the difference, so that a section one backend
 * stopped early does not make every later line differ. Prints each differing line with its
 * number in both (the first 40); returns how many lines differ.
 */
static int transcripts_compare(char *a_text, char *b_text)
{
	struct lines a, b;
	size_t i = 0, j = 0, da, db, k;
	int diffs = 0;

	lines_split(&a, a_text);
	lines_split(&b, b_text);
	while (i < a.n || j < b.n) {
		if (i < a.n && j < b.n && strcmp(a.at[i], b.at[j]) == 0) {
			i++;
			j++;
			continue;
		}
		/* the smallest da + db with a[i + da] == b[j + db] */
		for (k = 1; k <= 2 * RESYNC_MAX; k++) {
			for (da = k > RESYNC_MAX ? k - RESYNC_MAX : 0; da <= k && da <= RESYNC_MAX; da++) {
				db = k - da;
				if (i + da < a.n && j + db < b.n && strcmp(a.at[i + da], b.at[j + db]) == 0)
					goto found;
			}
		}
		da = a.n - i;
		db = b.n - j;
found:
		for (k = 0; k < da || k < db; k++) {
			if (diffs++ >= 40)
				continue;
			fprintf(stderr, "line %zu/%zu differs:\n  sqlite:     %s\n  postgresql: %s\n",
				i + k + 1, j + k + 1, k < da ? a.at[i + k] : "(no line)",
				k < db ? b.at[j + k] : "(no line)");
		}
		i += da;
		j += db;
	}
	if (diffs)
		fprintf(stderr, "%d line(s) differ\n", diffs);
	free(a.at);
	free(b.at);
	return diffs;
}

static void transcript_save(const struct run *r)
{
	const char *dir = getenv("KILN_CONFORMANCE_OUT");
	char path[512];
	FILE *f;

	if (!dir || !*dir)
		return;
	snprintf(path, sizeof(path), "%s/store-%s.txt", dir, r->backend);
	f = fopen(path, "w");
	if (!f)
		return;
	fwrite(r->text, 1, r->len, f);
	fclose(f);
	fprintf(stderr, "note: transcript in %s\n", path);
}

static void test_conformance(void **state)
{
	struct run lite = { 0 };
	const char *pg = getenv("KILN_TEST_PG");

	(void)state;
	run_sqlite(&lite);
	transcript_save(&lite);
	fprintf(stderr, "sqlite: %zu transcript lines, %d unexpected\n", lite.lines,
		lite.unexpected);
	if (lite.unexpected)
		fail_msg("%s", lite.first_unexpected);
	if (!pg || !*pg) {
		free(lite.text);
		fprintf(stderr, "note: KILN_TEST_PG is not set: PostgreSQL was not compared\n");
		skip();
	}
#ifdef KILN_TEST_HAVE_LIBPQ
	{
		struct run post = { 0 };
		int diffs, unexpected;

		run_pg(&post, pg);
		transcript_save(&post);
		unexpected = post.unexpected;
		diffs = transcripts_compare(lite.text, post.text);
		free(lite.text);
		free(post.text);
		if (unexpected)
			fail_msg("%s", post.first_unexpected);
		if (diffs)
			fail_msg("the PostgreSQL transcript differs from SQLite's in %d line(s)", diffs);
	}
#else
	free(lite.text);
	fail_msg("KILN_TEST_PG is set but this test was built without libpq");
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_conformance),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
