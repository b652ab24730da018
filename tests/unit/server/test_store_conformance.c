/*
 * The store conformance program: one script calls every function of server/store/store.h
 * with meaningful data and writes each result (the return code and what it read back) as a
 * line of a canonical transcript. The script runs on SQLite and, when KILN_TEST_PG names a
 * PostgreSQL role that may CREATE DATABASE, on a fresh PostgreSQL database; the transcripts
 * must be equal line by line. Each call also has the return code the header promises: an
 * other code fails on either backend. check_store_conformance.sh checks that every function
 * the headers declare is called here.
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
#include "store/store_migrate.h"

#define T0 1767225600 /* 2026-01-01T00:00:00Z: the fixed clock's start */

static int64_t clock_at;

static int64_t fixed_now(void)
{
	return clock_at;
}

/* One backend's run: its store and its transcript. */
struct run {
	const char *backend;
	struct store *st;
	char *text;
	size_t len, cap;
	size_t lines;
	int unexpected;
	char first_unexpected[2048];
	int frames; /* store_wal_frames_watch writes here after each commit */
	jmp_buf section; /* an unexpected code ends the section (what it read may be unset) */
};

static void out(struct run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void out(struct run *r, const char *fmt, ...)
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

static const char *code_name(int rc)
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
static int call(struct run *r, int want, int rc, const char *src)
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

#define CALL(want, expr) call(r, (want), (expr), #expr)
#define OK(expr) CALL(0, expr)

/* Small values formatted into a ring of buffers, valid for a few lines. */
static char ring[16][2048];
static unsigned ring_at;

static char *slot(void)
{
	return ring[ring_at++ % 16];
}

static const char *S(const char *s)
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
static const char *J(const char *s)
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

static const char *F(double v)
{
	char *b;

	if (isnan(v))
		return "nan";
	b = slot();
	snprintf(b, sizeof(ring[0]), "%.4f", v);
	return b;
}

static const char *H(const unsigned char *p, size_t n)
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

static void hash_fill(unsigned char h[32], unsigned char seed)
{
	for (int i = 0; i < 32; i++)
		h[i] = (unsigned char)(seed * 31 + i);
}

/* --- dumps ------------------------------------------------------------------------ */

static void node_dump(struct run *r, const struct node *n)
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

static void nodelist_dump(struct run *r, struct kiln_nodelist *l)
{
	for (size_t i = 0; i < l->count; i++)
		out(r, "  name %s", l->names[i]);
	kiln_nodelist_free(l);
	memset(l, 0, sizeof(*l));
}

static void token_dump(struct run *r, const struct api_token *t)
{
	out(r, "  token id=%lld name=%s role=%d created=%lld used=%lld revoked=%d",
	    (long long)t->id, S(t->name), (int)t->role, (long long)t->created_at,
	    (long long)t->last_used_at, t->revoked);
}

static void audit_dump(struct run *r, struct audit_entry *a, size_t n)
{
	for (size_t i = 0; i < n; i++)
		out(r, "  audit id=%lld time=%lld actor=%s action=%s target=%s detail=%s outcome=%s",
		    (long long)a[i].id, (long long)a[i].time, S(a[i].actor), S(a[i].action),
		    S(a[i].target), J(a[i].detail), S(a[i].outcome));
	audit_entry_list_free(a, n);
}

static void events_dump(struct run *r, struct event *e, size_t n)
{
	for (size_t i = 0; i < n; i++)
		out(r, "  event id=%lld time=%lld node_id=%lld node=%s sev=%d source=%s kind=%s "
		    "msg=%s dedup=%s bmc_time=%lld",
		    (long long)e[i].id, (long long)e[i].time, (long long)e[i].node_id, S(e[i].node),
		    (int)e[i].severity, S(e[i].source), S(e[i].kind), S(e[i].message),
		    S(e[i].dedup_key), (long long)e[i].bmc_time);
	event_list_free(e, n);
}

static void agent_state_dump(struct run *r, const struct agent_state *s)
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

static void gpu_dump(struct run *r, const struct agent_gpu *g)
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

static void samples_dump(struct run *r, struct agent_sample *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		out(r, "  sample node=%lld time=%lld temp=%s power=%s", (long long)s[i].node_id,
		    (long long)s[i].time, F(s[i].temperature_max_c), F(s[i].power_draw_total_w));
	free(s);
}

static void identity_dump(struct run *r, const struct agent_identity *a)
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

static void fleet_dump(struct run *r, const struct fleet_state *s)
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

static void image_dump(struct run *r, const struct image *i)
{
	out(r, "  image id=%lld name=%s kind=%s url=%s os=%s by=%s at=%lld", (long long)i->id,
	    S(i->name), S(i->kind), S(i->url), S(i->os), S(i->created_by),
	    (long long)i->created_at);
}

static void job_dump(struct run *r, const struct job *j)
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

static int status_cb(void *ud, const struct status_row *s)
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

static int metrics_cb(void *ud, const struct metrics_row *m)
{
	struct run *r = ud;

	out(r, "  metrics id=%lld node=%s rack=%s state=%d power=%s ptime=%lld reach=%d ok=%lld "
	    "health=%s reasons=%s hung=%lld sensors=%s maint=%d reinstalling=%d maker=%s model=%s "
	    "fw=%s",
	    (long long)m->node_id, S(m->node), S(m->rack), m->has_state, S(m->power),
	    (long long)m->power_time, m->reachable, (long long)m->last_ok, S(m->health),
	    J(m->reasons), (long long)m->hung_since, J(m->sensors), m->in_maintenance,
	    m->reinstalling, S(m->bmc_manufacturer), S(m->bmc_model), S(m->bmc_firmware));
	out(r, "  metrics agent=%d seen=%lld interval=%lld fresh=%d nvidia=%s driver=%s kmod=%s "
	    "cuda=%s nvml=%s os=%s kernel=%s cudnn=%s gpus=%s toolkits=%s count=%lld max=%lld",
	    m->has_agent, (long long)m->agent_last_seen, (long long)m->agent_interval_s,
	    m->agent_fresh, S(m->nvidia_status), S(m->driver_version),
	    S(m->kernel_module_version), S(m->cuda_driver_version), S(m->nvml_version), S(m->os),
	    S(m->kernel), S(m->cudnn_version), J(m->gpus), J(m->toolkits),
	    (long long)m->gpu_count, (long long)m->gpu_count_max);
	return 0;
}

/* A status walk that stops at its first row with this code. */
static int stop_cb(void *ud, const struct status_row *s)
{
	(void)ud;
	(void)s;
	return KILN_EBUSY;
}

/* --- the script -------------------------------------------------------------------- */

/* What one section leaves for the next. */
struct ids {
	int64_t n1, n2, n3, n4;        /* nodes gpu01 gpu02 gpu03 spare04 */
	int64_t admin, viewer;         /* API tokens */
	int64_t audit_add, audit_off, audit_cycle;
	int64_t enroll_a, enroll_b, pending;
	int64_t image, job;
	int64_t agent_seen; /* when gpu01's agent reported */
};

static void node_fill(struct node *n, const char *name, char **groups, size_t ngroups)
{
	static unsigned char pw[] = { 0x4b, 0x31, 0x00, 0xfe, 0x10, 0x20 };

	memset(n, 0, sizeof(*n));
	n->name = (char *)name;
	n->groups = groups;
	n->ngroups = ngroups;
	n->bmc_protocol = BMC_REDFISH;
	n->bmc_host = "127.0.0.1";
	n->bmc_port = 8443;
	n->bmc_user = "root";
	n->bmc_password_enc = pw;
	n->bmc_password_enc_len = sizeof(pw);
	n->tls_mode = TLS_INSECURE;
	n->ipmi_cipher = 3;
	n->ipmi_privilege = "admin";
}

static void section_nodes(struct run *r, struct ids *id)
{
	char *g12[] = { "rack1", "train" }, *g2[] = { "train" };
	struct node n, *got = NULL, **list = NULL;
	struct kiln_nodelist names = { 0 };
	unsigned char pw2[] = { 0x99, 0x98 };
	size_t count = 0, i;
	int v = 0;

	out(r, "# schema");
	OK(store_schema_version(r->st, &v));
	out(r, "  version %d", v);
	out(r, "  now %lld", (long long)store_now(r->st));
	out(r, "  targets %d %d", store_target_is_pg("/var/lib/kiln/kiln.db"),
	    store_target_is_pg(STORE_PG_PREFIX "dbname=kiln"));

	out(r, "# nodes");
	node_fill(&n, "gpu01", g12, 2);
	n.rack = "r1";
	n.ipmi_workarounds = "authcap,idzero";
	n.sol_host = "10.0.0.9";
	n.sol_port = 6230;
	n.bmc_system = "System.Embedded.1";
	OK(store_node_insert(r->st, &n));
	id->n1 = n.id;
	out(r, "  id %lld cv %lld", (long long)n.id, (long long)n.credentials_version);
	node_fill(&n, "gpu02", g2, 1);
	n.bmc_protocol = BMC_IPMI;
	n.bmc_port = 0;
	n.tls_mode = TLS_FINGERPRINT;
	n.tls_fingerprint = "ab01ab01ab01ab01ab01ab01ab01ab01ab01ab01ab01ab01ab01ab01ab01ab01";
	n.ipmi_cipher = 17;
	n.ipmi_privilege = "operator";
	OK(store_node_insert(r->st, &n));
	id->n2 = n.id;
	node_fill(&n, "gpu03", NULL, 0);
	n.bmc_protocol = BMC_NONE;
	n.bmc_host = NULL;
	n.bmc_user = NULL;
	n.bmc_password_enc = NULL;
	n.bmc_password_enc_len = 0;
	n.tls_mode = TLS_CA;
	n.tls_ca_file = "/etc/kiln/ca.pem";
	OK(store_node_insert(r->st, &n));
	id->n3 = n.id;
	node_fill(&n, "spare04", NULL, 0);
	n.bmc_protocol = BMC_REDFISH_HTTP;
	OK(store_node_insert(r->st, &n));
	id->n4 = n.id;
	out(r, "  ids %lld %lld %lld %lld", (long long)id->n1, (long long)id->n2,
	    (long long)id->n3, (long long)id->n4);

	clock_at += 10;
	OK(store_node_get(r->st, &got, "gpu02"));
	node_dump(r, got);
	/* A new password bumps credentials_version; a new name and group are kept. */
	got->bmc_password_enc_len = sizeof(pw2);
	memcpy(got->bmc_password_enc, pw2, sizeof(pw2));
	free(got->rack);
	got->rack = strdup("r2");
	OK(store_node_update(r->st, got));
	node_free(got);
	got = NULL;
	OK(store_node_get(r->st, &got, "gpu02"));
	node_dump(r, got);
	got->id = 999;
	CALL(KILN_ENOTFOUND, store_node_update(r->st, got));
	got->id = id->n2;
	free(got->name);
	got->name = strdup("gpu01");
	CALL(KILN_EEXISTS, store_node_update(r->st, got));
	node_free(got);
	got = NULL;
	CALL(KILN_ENOTFOUND, store_node_get(r->st, &got, "nope"));
	node_free(NULL);

	OK(store_node_list(r->st, &list, &count));
	out(r, "  count %zu", count);
	for (i = 0; i < count; i++)
		node_dump(r, list[i]);
	node_list_free(list, count);

	OK(store_group_members(r->st, "train", &names));
	nodelist_dump(r, &names);
	OK(store_group_members(r->st, "rack1", &names));
	nodelist_dump(r, &names);
	CALL(KILN_ENOTFOUND, store_group_members(r->st, "nope", &names));
	nodelist_dump(r, &names);
	OK(store_node_names(r->st, &names));
	nodelist_dump(r, &names);
}

static void section_tokens(struct run *r, struct ids *id)
{
	unsigned char h1[32], h2[32], h3[32], h9[32];
	struct api_token t = { 0 }, *list = NULL;
	struct ui_session s = { 0 };
	size_t count = 0, i;
	int64_t sid = 0, sid2 = 0;

	hash_fill(h1, 1);
	hash_fill(h2, 2);
	hash_fill(h3, 3);
	hash_fill(h9, 9);
	out(r, "# API tokens");
	OK(store_token_insert(r->st, &id->admin, "admin", ROLE_ADMIN, h1));
	OK(store_token_insert(r->st, &id->viewer, "grafana", ROLE_METRICS, h2));
	out(r, "  ids %lld %lld", (long long)id->admin, (long long)id->viewer);
	clock_at += 100;
	OK(store_token_lookup(r->st, &t, h1));
	token_dump(r, &t);
	api_token_clear(&t);
	CALL(KILN_ENOTFOUND, store_token_lookup(r->st, &t, h9));
	OK(store_token_list(r->st, &list, &count));
	for (i = 0; i < count; i++) {
		token_dump(r, &list[i]);
		api_token_clear(&list[i]);
	}
	free(list);
	OK(store_token_revoke(r->st, id->viewer));
	CALL(KILN_ENOTFOUND, store_token_lookup(r->st, &t, h2));

	out(r, "# dashboard sessions");
	OK(store_session_insert(r->st, &sid, h3, id->admin, "csrf-0123456789", clock_at + 3600));
	OK(store_session_insert(r->st, &sid2, h9, id->admin, "csrf-old", clock_at + 5));
	out(r, "  ids %lld %lld", (long long)sid, (long long)sid2);
	OK(store_session_lookup(r->st, &s, h3));
	out(r, "  session id=%lld csrf=%s expires=%lld", (long long)s.id, S(s.csrf),
	    (long long)s.expires_at);
	token_dump(r, &s.token);
	api_token_clear(&s.token);
	clock_at += 10;
	CALL(KILN_ENOTFOUND, store_session_lookup(r->st, &s, h9)); /* expired */
	OK(store_session_end(r->st, sid));
	OK(store_session_end(r->st, sid));
	CALL(KILN_ENOTFOUND, store_session_lookup(r->st, &s, h3));
	OK(store_session_prune(r->st, clock_at + 1));
	CALL(KILN_ENOTFOUND, store_session_lookup(r->st, &s, h3));
}

static void section_agent_tokens(struct run *r, struct ids *id)
{
	unsigned char h4[32], h5[32], h9[32];
	int64_t tid = 0, tid2 = 0, node = 0, fid = 0;
	int stale = -1, revoked = -1;

	hash_fill(h4, 4);
	hash_fill(h5, 5);
	hash_fill(h9, 9);
	out(r, "# agent tokens");
	OK(store_agent_token_insert(r->st, &tid, id->n1, h4));
	OK(store_agent_token_lookup(r->st, &node, h4));
	out(r, "  id %lld node %lld", (long long)tid, (long long)node);
	OK(store_agent_token_find(r->st, &fid, &node, &stale, h4));
	out(r, "  find id=%lld node=%lld stale=%d", (long long)fid, (long long)node, stale);
	clock_at += 120;
	OK(store_agent_token_find(r->st, &fid, &node, &stale, h4));
	out(r, "  find id=%lld node=%lld stale=%d", (long long)fid, (long long)node, stale);
	OK(store_agent_token_touch(r->st, fid));
	OK(store_agent_token_find(r->st, &fid, &node, &stale, h4));
	out(r, "  find id=%lld node=%lld stale=%d", (long long)fid, (long long)node, stale);
	CALL(KILN_ENOTFOUND, store_agent_token_lookup(r->st, &node, h9));
	OK(store_agent_token_revoke_node(r->st, id->n1, &revoked));
	out(r, "  revoked %d", revoked);
	CALL(KILN_ENOTFOUND, store_agent_token_lookup(r->st, &node, h4));
	CALL(KILN_ENOTFOUND, store_agent_token_find(r->st, &fid, &node, &stale, h4));
	OK(store_agent_token_revoke_node(r->st, id->n1, NULL));
	OK(store_agent_token_insert(r->st, &tid2, id->n1, h5));
	out(r, "  id %lld", (long long)tid2);
}

static void section_bmc_sessions(struct run *r, struct ids *id)
{
	unsigned char tok[] = { 1, 2, 3, 0, 255 };
	struct bmc_session_row row = { 0 }, got = { 0 };

	out(r, "# Redfish sessions");
	CALL(KILN_ENOTFOUND, store_bmc_session_get(r->st, &got, id->n1));
	row.node_id = id->n1;
	row.credentials_version = 1;
	row.token_enc = tok;
	row.token_enc_len = sizeof(tok);
	row.uri = "/redfish/v1/SessionService/Sessions/7";
	row.auth = "session";
	OK(store_bmc_session_put(r->st, &row));
	row.node_id = id->n2;
	row.token_enc = NULL;
	row.token_enc_len = 0;
	row.uri = NULL;
	row.auth = "basic (no SessionService)";
	OK(store_bmc_session_put(r->st, &row));
	OK(store_bmc_session_get(r->st, &got, id->n1));
	out(r, "  session node=%lld cv=%lld token=%s uri=%s auth=%s time=%lld",
	    (long long)got.node_id, (long long)got.credentials_version,
	    H(got.token_enc, got.token_enc_len), S(got.uri), S(got.auth), (long long)got.time);
	bmc_session_row_clear(&got);
	OK(store_bmc_session_get(r->st, &got, id->n2));
	out(r, "  session node=%lld cv=%lld token=%s uri=%s auth=%s time=%lld",
	    (long long)got.node_id, (long long)got.credentials_version,
	    H(got.token_enc, got.token_enc_len), S(got.uri), S(got.auth), (long long)got.time);
	bmc_session_row_clear(&got);
	OK(store_bmc_session_drop(r->st, id->n1, "/redfish/v1/SessionService/Sessions/8"));
	OK(store_bmc_session_get(r->st, &got, id->n1));
	bmc_session_row_clear(&got);
	OK(store_bmc_session_drop(r->st, id->n1, "/redfish/v1/SessionService/Sessions/7"));
	CALL(KILN_ENOTFOUND, store_bmc_session_get(r->st, &got, id->n1));
	OK(store_bmc_session_drop(r->st, id->n2, NULL));
	CALL(KILN_ENOTFOUND, store_bmc_session_get(r->st, &got, id->n2));
}

static void section_audit(struct run *r, struct ids *id)
{
	struct audit_entry *a = NULL;
	size_t count = 0;
	char *actor = NULL;
	int64_t t = 0, since;
	int n = -1;

	out(r, "# audit");
	OK(store_audit_begin(r->st, &id->audit_add, "admin", "node.add", "gpu01",
			     "{\"bmc\": \"redfish\", \"port\": 8443}"));
	OK(store_audit_finish(r->st, id->audit_add, "ok"));
	clock_at += 5;
	since = clock_at;
	OK(store_audit_begin(r->st, &id->audit_off, "ops-bot", "power.off", "gpu02", NULL));
	OK(store_audit_finish(r->st, id->audit_off, "failed: 409 'InvalidOperationForSystemState'"));
	clock_at += 5;
	OK(store_audit_begin(r->st, &id->audit_cycle, "kilnd", "power.cycle", "gpu02",
			     "{\"why\":\"hung\"}"));
	out(r, "  ids %lld %lld %lld", (long long)id->audit_add, (long long)id->audit_off,
	    (long long)id->audit_cycle);
	OK(store_audit_interrupt(r->st, &n));
	out(r, "  interrupted %d", n);
	OK(store_audit_interrupt(r->st, &n));
	out(r, "  interrupted %d", n);
	OK(store_audit_readback(r->st, "gpu02", "off", "2026-01-01T00:05:00Z"));
	OK(store_audit_list(r->st, &a, &count, 0, 0));
	audit_dump(r, a, count);
	OK(store_audit_list(r->st, &a, &count, since, 1));
	audit_dump(r, a, count);
	OK(store_audit_power_off_find(r->st, &actor, &t, "gpu02", 0));
	out(r, "  power off by %s at %lld", S(actor), (long long)t);
	free(actor);
	actor = NULL;
	CALL(KILN_ENOTFOUND, store_audit_power_off_find(r->st, &actor, &t, "gpu01", 0));
	CALL(KILN_ENOTFOUND, store_audit_power_off_find(r->st, &actor, &t, "gpu02", clock_at + 1));
}

static void event_fill(struct event *e, int64_t node, enum event_severity sev, const char *source,
		       const char *kind, const char *msg, const char *dedup, int64_t bmc_time)
{
	memset(e, 0, sizeof(*e));
	e->time = clock_at;
	e->node_id = node;
	e->severity = sev;
	e->source = (char *)source;
	e->kind = (char *)kind;
	e->message = (char *)msg;
	e->dedup_key = (char *)dedup;
	e->bmc_time = bmc_time;
}

static void section_events(struct run *r, struct ids *id)
{
	struct event e, *list = NULL;
	struct metrics_xid *x = NULL;
	size_t count = 0, i;
	int64_t last = 0;
	int ins = -1, ex = -1;

	out(r, "# events");
	event_fill(&e, id->n1, SEV_WARNING, "bmc", "sel", "Power supply 2 lost input", "sel:17",
		   T0 - 3600);
	OK(store_event_insert(r->st, &e, &ins));
	out(r, "  inserted %d", ins);
	event_fill(&e, 0, SEV_INFO, "kilnd", "start", "kilnd started", NULL, 0);
	OK(store_event_insert(r->st, &e, &ins));
	clock_at += 1;
	event_fill(&e, id->n1, SEV_CRITICAL, "agent", "xid", "Xid 79: GPU has fallen off the bus",
		   "xid:79:1", 0);
	OK(store_event_insert(r->st, &e, &ins));
	event_fill(&e, id->n2, SEV_CRITICAL, "agent", "xid", "Xid 48: double bit ECC error",
		   "xid:48:1", 0);
	OK(store_event_insert(r->st, &e, &ins));
	/* An agent event stamped an hour back: list_after sees it, list by time does not. */
	event_fill(&e, id->n2, SEV_WARNING, "agent", "gpu", "GPU 3 throttled", "gpu:3", 0);
	e.time = T0 - 7200;
	OK(store_event_insert(r->st, &e, &ins));
	OK(store_event_exists(r->st, &ex, id->n1, "sel:17"));
	out(r, "  exists %d", ex);
	OK(store_event_exists(r->st, &ex, id->n2, "sel:17"));
	out(r, "  exists %d", ex);
	OK(store_event_list(r->st, &list, &count, T0, 0));
	events_dump(r, list, count);
	OK(store_event_list(r->st, &list, &count, 0, 2));
	events_dump(r, list, count);
	OK(store_event_query(r->st, &list, &count, 0, id->n1, "xid", SEV_INFO, 10));
	events_dump(r, list, count);
	OK(store_event_last_id(r->st, &last));
	out(r, "  last %lld", (long long)last);
	OK(store_event_list_after(r->st, &list, &count, 0, 100));
	events_dump(r, list, count);
	OK(store_event_list_after(r->st, &list, &count, 2, 2));
	events_dump(r, list, count);
	OK(store_metrics_xids(r->st, &x, &count));
	for (i = 0; i < count; i++)
		out(r, "  xid node=%lld count=%lld last=%lld", (long long)x[i].node_id,
		    (long long)x[i].count, (long long)x[i].last_xid);
	free(x);
	OK(store_event_query(r->st, &list, &count, 0, 0, NULL, SEV_WARNING, 0));
	events_dump(r, list, count);
}

static void gpu_fill(struct agent_gpu *g, int64_t index, const char *uuid, int64_t ecc)
{
	memset(g, 0, sizeof(*g));
	g->index = index;
	g->uuid = (char *)uuid;
	g->name = "NVIDIA H100 80GB HBM3";
	g->serial = "1650123456789";
	g->pci_bus_id = index ? "00000000:1B:00.0" : "00000000:18:00.0";
	g->memory_total_bytes = 85520809984LL;
	g->ecc_volatile_uncorrected = ecc;
	g->ecc_aggregate_uncorrected = ecc + 1;
	g->remapped_rows_failure = 0;
	g->retired_pages_pending = -1;
	g->remapped_rows_pending = 0;
	g->remapped_rows_uncorrected = -1;
	g->ecc_rose_at = ecc ? T0 : 0;
	g->memory_used_bytes = 1024;
	g->temperature_c = 41.5;
	g->power_draw_w = 310.25;
	g->utilization_gpu_pct = 97;
}

static void section_agent(struct run *r, struct ids *id)
{
	struct agent_state s, got, *states = NULL;
	struct agent_refusal ref = { 0 };
	struct agent_gpu g[2], *gpus = NULL;
	struct agent_gpu_summary *sum = NULL;
	struct agent_seen *seen = NULL;
	struct agent_audit_row *rows = NULL;
	struct agent_history_row h;
	struct agent_sample *samples = NULL;
	size_t count = 0, written = 99, i;
	char buf[64], *report = NULL;
	int64_t hist = -1, seen_n = -1;
	int isnew = -1, deleted = -1;

	out(r, "# agent reports");
	OK(store_agent_report_claim(r->st, &isnew, "rep-1", id->n1));
	out(r, "  new %d", isnew);
	CALL(KILN_ENOTFOUND, store_agent_state_get(r->st, &got, id->n1, 1));
	CALL(KILN_ENOTFOUND, store_agent_report_get(r->st, &report, id->n1));
	CALL(KILN_ENOTFOUND, store_agent_state_report_id(r->st, buf, sizeof(buf), id->n1));
	memset(&s, 0, sizeof(s));
	s.node_id = id->n1;
	s.report_id = "rep-1";
	s.last_seen = clock_at;
	s.report_time = clock_at - 2;
	s.boot_id = "boot-a";
	s.hostname = "gpu01.lab";
	s.machine_id = "0f0e0d0c0b0a09080706050403020100";
	s.os = "Ubuntu 22.04.4 LTS";
	s.kernel = "5.15.0-105-generic";
	s.dmi_serial = "DMI-0001";
	s.agent_version = "0.9.0";
	s.nvidia_status = "ok";
	s.driver_version = "550.54.15";
	s.kernel_module_version = "550.54.15";
	s.cuda_driver_version = "12.4";
	s.nvml_version = "12.550.54.15";
	s.gpu_count = 2;
	s.gpu_count_max = 2;
	s.report = "{\"gpus\": [{\"index\": 0}, {\"index\": 1}], \"cuda_toolkits\": [\"12.4\"],"
		   " \"interval_s\": 30, \"cudnn_version\": \"9.1.0\"}";
	s.audit_facts = "{\"driver\":\"550.54.15\",\"cudnn\":\"9.1.0\"}";
	s.gpu_processes = "[{\"pid\": 4242, \"name\": \"python\", \"gpu\": 0}]";
	s.gpu_hottest_c = 41.5;
	s.gpu_power_w = 620.5;
	s.gpu_utilization_avg_pct = 97;
	s.health_facts = 1;
	s.interval_s = 30;
	s.cpu_iowait_pct = 1.25;
	s.rejected_fields = "gpus[1].power_draw_w";
	OK(store_agent_state_put(r->st, &s));
	id->agent_seen = s.last_seen;
	/* gpu02's agent: no NVIDIA driver, nothing summed. */
	s.node_id = id->n2;
	s.report_id = "rep-2";
	s.hostname = "gpu02.lab";
	s.machine_id = "11111111111111111111111111111111";
	s.dmi_serial = "DMI-0002";
	s.boot_id = "boot-b";
	s.nvidia_status = "no_driver";
	s.driver_version = NULL;
	s.kernel_module_version = NULL;
	s.cuda_driver_version = NULL;
	s.nvml_version = NULL;
	s.gpu_count = 0;
	s.gpu_count_max = 0;
	s.report = "{}";
	s.audit_facts = NULL;
	s.gpu_processes = NULL;
	s.gpu_hottest_c = NAN;
	s.gpu_power_w = NAN;
	s.gpu_utilization_avg_pct = NAN;
	s.health_facts = 0;
	s.interval_s = -1;
	s.cpu_iowait_pct = NAN;
	s.rejected_fields = NULL;
	OK(store_agent_report_claim(r->st, &isnew, "rep-2", id->n2));
	OK(store_agent_state_put(r->st, &s));

	OK(store_agent_state_get(r->st, &got, id->n1, 1));
	agent_state_dump(r, &got);
	agent_state_clear(&got);
	OK(store_agent_state_get(r->st, &got, id->n2, 0));
	agent_state_dump(r, &got);
	agent_state_clear(&got);
	agent_state_clear(NULL);
	OK(store_agent_state_report_id(r->st, buf, sizeof(buf), id->n1));
	out(r, "  report id %s", S(buf));
	OK(store_agent_report_get(r->st, &report, id->n1));
	out(r, "  report %s", J(report));
	free(report);
	OK(store_agent_state_list(r->st, &states, &count));
	for (i = 0; i < count; i++)
		agent_state_dump(r, &states[i]);
	agent_state_list_free(states, count);

	OK(store_agent_refusal_get(r->st, &ref, id->n3));
	out(r, "  refusal %s %lld %lld %lld", S(ref.reason), (long long)ref.refused,
	    (long long)ref.first_at, (long long)ref.last_at);
	agent_refusal_clear(&ref);
	OK(store_agent_refusal_note(r->st, id->n3, "report: field 'gpus': not an array"));
	clock_at += 3;
	OK(store_agent_refusal_note(r->st, id->n3, "report: body is not JSON"));
	OK(store_agent_refusal_get(r->st, &ref, id->n3));
	out(r, "  refusal %s %lld %lld %lld", S(ref.reason), (long long)ref.refused,
	    (long long)ref.first_at, (long long)ref.last_at);
	agent_refusal_clear(&ref);
	agent_refusal_clear(NULL);

	out(r, "# GPUs");
	gpu_fill(&g[0], 0, "GPU-aaaa", 0);
	gpu_fill(&g[1], 1, "GPU-bbbb", 2);
	OK(store_agent_gpus_update(r->st, id->n1, g, 2, NULL, 0, &written));
	out(r, "  written %zu", written);
	OK(store_agent_gpus_get(r->st, &gpus, &count, id->n1));
	for (i = 0; i < count; i++)
		gpu_dump(r, &gpus[i]);
	OK(store_agent_gpus_update(r->st, id->n1, gpus, count, gpus, count, &written));
	out(r, "  written %zu", written);
	g[1].ecc_volatile_uncorrected = 5;
	OK(store_agent_gpus_update(r->st, id->n1, g, 2, gpus, count, &written));
	out(r, "  written %zu", written);
	agent_gpu_list_free(gpus, count);
	OK(store_agent_gpus_update(r->st, id->n1, g, 1, NULL, 0, NULL));
	OK(store_agent_gpus_update(r->st, id->n1, g, 2, NULL, 0, NULL));
	OK(store_agent_gpus_get(r->st, &gpus, &count, id->n1));
	for (i = 0; i < count; i++)
		gpu_dump(r, &gpus[i]);
	agent_gpu_list_free(gpus, count);
	OK(store_agent_gpus_get(r->st, &gpus, &count, id->n3));
	out(r, "  count %zu", count);
	agent_gpu_list_free(gpus, count);
	OK(store_agent_gpu_summary_list(r->st, &sum, &count));
	for (i = 0; i < count; i++)
		out(r, "  summary node=%lld hottest=%s power=%s procs=%s", (long long)sum[i].node_id,
		    F(sum[i].hottest_c), F(sum[i].power_w), J(sum[i].gpu_processes));
	agent_gpu_summary_list_free(sum, count);
	OK(store_agent_seen_list(r->st, &seen, &count));
	for (i = 0; i < count; i++)
		out(r, "  seen node=%lld last=%lld interval=%lld", (long long)seen[i].node_id,
		    (long long)seen[i].last_seen, (long long)seen[i].interval_s);
	free(seen);
	OK(store_agent_audit_rows(r->st, &rows, &count));
	for (i = 0; i < count; i++)
		out(r, "  audit row node=%lld max=%lld facts=%s", (long long)rows[i].node_id,
		    (long long)rows[i].gpu_count_max, J(rows[i].facts));
	agent_audit_row_list_free(rows, count);

	out(r, "# agent history");
	memset(&h, 0, sizeof(h));
	h.node_id = id->n1;
	h.time = T0 + 100;
	h.received_at = clock_at;
	h.report_id = "rep-1";
	h.boot_id = "boot-a";
	h.nvidia_status = "ok";
	h.driver_version = "550.54.15";
	h.cuda_driver_version = "12.4";
	h.gpu_count = 2;
	h.temperature_max_c = 41.5;
	h.power_draw_total_w = 620.5;
	h.utilization_avg_pct = 97;
	h.ecc_uncorrected = 2;
	h.xid_count = 1;
	h.gpus = "[{\"i\":0,\"t\":41.5},{\"i\":1,\"t\":40}]";
	OK(store_agent_history_insert(r->st, &h));
	h.time = T0 + 130;
	h.received_at = clock_at + 30;
	h.report_id = "rep-3";
	h.temperature_max_c = NAN;
	h.power_draw_total_w = NAN;
	h.utilization_avg_pct = NAN;
	h.ecc_uncorrected = 7;
	h.xid_count = -1;
	h.gpus = NULL;
	OK(store_agent_history_insert(r->st, &h));
	h.node_id = id->n2;
	h.time = T0 + 110;
	h.report_id = "rep-2";
	h.temperature_max_c = 30;
	h.power_draw_total_w = 100;
	h.ecc_uncorrected = -1;
	OK(store_agent_history_insert(r->st, &h));
	OK(store_agent_counts(r->st, id->n1, &hist, &seen_n));
	out(r, "  counts history %lld seen %lld", (long long)hist, (long long)seen_n);
	OK(store_agent_samples_list(r->st, &samples, &count, T0, T0 + 1000));
	samples_dump(r, samples, count);
	OK(store_agent_samples_list(r->st, &samples, &count, T0 + 105, T0 + 120));
	samples_dump(r, samples, count);
	OK(store_node_samples_list(r->st, &samples, &count, id->n1, 0, 0, 10));
	samples_dump(r, samples, count);
	OK(store_node_samples_list(r->st, &samples, &count, id->n1, 0, T0 + 120, 1));
	samples_dump(r, samples, count);
	OK(store_fleet_ecc_window(r->st, &hist, &seen_n, id->n1, 0));
	out(r, "  ecc window %lld %lld", (long long)hist, (long long)seen_n);
	OK(store_fleet_ecc_window(r->st, &hist, &seen_n, id->n3, 0));
	out(r, "  ecc window %lld %lld", (long long)hist, (long long)seen_n);
	OK(store_agent_history_prune(r->st, clock_at + 1, 100, &deleted));
	out(r, "  pruned %d", deleted);
	OK(store_agent_history_prune(r->st, clock_at + 1, 100, NULL));
	OK(store_agent_counts(r->st, id->n1, &hist, &seen_n));
	out(r, "  counts history %lld seen %lld", (long long)hist, (long long)seen_n);
	/* The log's length differs by backend (PostgreSQL has no WAL frames to count): only
	 * the return codes go into the transcript. */
	OK(store_wal_checkpoint(r->st));
	store_wal_frames_watch(r->st, &r->frames);
	out(r, "  frames watched");
}

static void section_identity(struct run *r, struct ids *id)
{
	struct agent_identity a = { 0 }, *list = NULL;
	int64_t oid = -1, nid = -1, job = -1;
	char *name = NULL;
	size_t count = 0, i;
	int isnew = -1, has = -1, enrolled = -1;

	out(r, "# nodes as agents find them");
	OK(store_node_bmc_serial_set(r->st, "gpu01", "SN-0001"));
	OK(store_node_find_by_serial(r->st, &nid, &name, "SN-0001"));
	out(r, "  serial owner %lld %s", (long long)nid, S(name));
	free(name);
	name = NULL;
	OK(store_node_bmc_serial_set(r->st, "spare04", "SN-0001"));
	CALL(KILN_EEXISTS, store_node_find_by_serial(r->st, &nid, &name, "SN-0001"));
	OK(store_node_bmc_serial_set(r->st, "spare04", NULL));
	CALL(KILN_ENOTFOUND, store_node_find_by_serial(r->st, &nid, &name, "SN-9999"));
	CALL(KILN_ENOTFOUND, store_node_bmc_serial_set(r->st, "nope", "SN-1"));
	{
		/* Dell: the service tag is the SKU; the UUID in upper case matches in lower */
		const struct node_bmc_ids dell = { "CNIVC0033A0147", "4C4C4544-0051-5A10-804B-B9C04F4B3233",
						   "9QZK2X3", "CNIVC0033A0147" };
		const struct node_bmc_ids other = { "SN-0003", NULL, "9QZK2X3", "" };
		const char *forms[3] = { "4c4c4544-0051-5a10-804b-b9c04f4b3233", NULL, NULL };
		const char *swapped[3] = { "nope", "4c4c4544-0051-5a10-804b-b9c04f4b3233", NULL };
		const char *none[3] = { NULL, NULL, NULL };

		OK(store_node_bmc_ids_set(r->st, "gpu02", &dell));
		OK(store_node_find_by_bmc(r->st, &nid, &name, forms, NULL));
		out(r, "  uuid owner %lld %s", (long long)nid, S(name));
		free(name);
		name = NULL;
		OK(store_node_find_by_bmc(r->st, &nid, &name, swapped, "SN-none"));
		out(r, "  uuid (second form) owner %lld %s", (long long)nid, S(name));
		free(name);
		name = NULL;
		OK(store_node_find_by_bmc(r->st, &nid, &name, none, "9qzk2x3"));
		out(r, "  sku owner %lld %s", (long long)nid, S(name));
		free(name);
		name = NULL;
		OK(store_node_find_by_bmc(r->st, &nid, &name, NULL, "cnivc0033a0147"));
		out(r, "  chassis/system serial owner %lld %s", (long long)nid, S(name));
		free(name);
		name = NULL;
		CALL(KILN_ENOTFOUND, store_node_find_by_bmc(r->st, &nid, &name, none, "SN-none"));
		OK(store_node_bmc_ids_set(r->st, "spare04", &other));
		CALL(KILN_EEXISTS, store_node_find_by_bmc(r->st, &nid, &name, NULL, "9QZK2X3"));
		CALL(KILN_ENOTFOUND, store_node_bmc_ids_set(r->st, "nope", &other));
		OK(store_node_bmc_ids_set(r->st, "spare04",
					  &(struct node_bmc_ids){ NULL, NULL, NULL, NULL }));
	}
	OK(store_agent_enroll_facts(r->st, &has, &job, &enrolled, id->n1));
	out(r, "  enroll facts token=%d job=%lld enrolled=%d", has, (long long)job, enrolled);
	OK(store_agent_enroll_facts(r->st, &has, &job, &enrolled, id->n2));
	out(r, "  enroll facts token=%d job=%lld enrolled=%d", has, (long long)job, enrolled);

	out(r, "# agent identity");
	OK(store_agent_identity_get(r->st, &a, id->n1));
	identity_dump(r, &a);
	agent_identity_clear(&a);
	CALL(KILN_ENOTFOUND, store_agent_identity_get(r->st, &a, 999));
	OK(store_agent_identity_refuse(r->st, &isnew, id->n1, "dmi_serial",
				       "dmi_serial 'DMI-0002' is gpu02's"));
	out(r, "  new %d", isnew);
	clock_at += 7;
	OK(store_agent_identity_refuse(r->st, &isnew, id->n1, "dmi_serial",
				       "dmi_serial 'DMI-0002' is gpu02's"));
	out(r, "  new %d", isnew);
	OK(store_agent_identity_elsewhere(r->st, id->n2, id->n1));
	OK(store_agent_identity_get(r->st, &a, id->n1));
	identity_dump(r, &a);
	agent_identity_clear(&a);
	OK(store_agent_identity_list(r->st, &list, &count));
	for (i = 0; i < count; i++)
		identity_dump(r, &list[i]);
	agent_identity_list_free(list, count);
	OK(store_agent_identity_owner(r->st, &oid, id->n1, "DMI-0002", NULL));
	out(r, "  owner %lld", (long long)oid);
	OK(store_agent_identity_owner(r->st, &oid, id->n2, NULL,
				      "0f0e0d0c0b0a09080706050403020100"));
	out(r, "  owner %lld", (long long)oid);
	OK(store_agent_identity_owner(r->st, &oid, id->n1, "DMI-none", NULL));
	out(r, "  owner %lld", (long long)oid);
	OK(store_agent_identity_accept(r->st, id->n1, "admin"));
	CALL(KILN_ENOTFOUND, store_agent_identity_accept(r->st, 999, "admin"));
	OK(store_agent_identity_get(r->st, &a, id->n1));
	identity_dump(r, &a);
	agent_identity_clear(&a);
	OK(store_agent_identity_settle(r->st, id->n1, 1, 0, "SN-0001", "system UUID"));
	OK(store_agent_identity_settle(r->st, id->n2, 0, 0, NULL, NULL));
	OK(store_agent_identity_get(r->st, &a, id->n1));
	identity_dump(r, &a);
	agent_identity_clear(&a);
	agent_identity_clear(NULL);
	OK(store_agent_identity_list(r->st, &list, &count));
	out(r, "  count %zu", count);
	agent_identity_list_free(list, count);
}

static void section_enroll(struct run *r, struct ids *id)
{
	unsigned char h6[32], h7[32], h9[32];
	struct enroll_token *list = NULL;
	struct pending_agent *p = NULL;
	int64_t tid = -1, other = 0, node = -1;
	size_t count = 0, i;

	hash_fill(h6, 6);
	hash_fill(h7, 7);
	hash_fill(h9, 9);
	out(r, "# enrollment tokens");
	OK(store_enroll_token_insert(r->st, &id->enroll_a, "rack-a", h6));
	OK(store_enroll_token_insert(r->st, &id->enroll_b, "rack-b", h7));
	out(r, "  ids %lld %lld", (long long)id->enroll_a, (long long)id->enroll_b);
	clock_at += 2;
	OK(store_enroll_token_lookup(r->st, &tid, h6));
	out(r, "  lookup %lld", (long long)tid);
	CALL(KILN_ENOTFOUND, store_enroll_token_lookup(r->st, &tid, h9));
	OK(store_enroll_token_revoke(r->st, id->enroll_b));
	CALL(KILN_ENOTFOUND, store_enroll_token_revoke(r->st, 999));
	CALL(KILN_ENOTFOUND, store_enroll_token_lookup(r->st, &tid, h7));
	OK(store_enroll_token_list(r->st, &list, &count));
	for (i = 0; i < count; i++)
		out(r, "  enroll id=%lld name=%s created=%lld used=%lld revoked=%d",
		    (long long)list[i].id, S(list[i].name), (long long)list[i].created_at,
		    (long long)list[i].last_used_at, list[i].revoked);
	enroll_token_list_free(list, count);

	out(r, "# pending agents");
	OK(store_pending_agent_record(r->st, &id->pending, &node, "DMI-0003", "gpu03.lab",
				      "33333333333333333333333333333333", id->enroll_a, id->n3,
				      "host name resembles gpu03", 100));
	out(r, "  pending %lld node %lld", (long long)id->pending, (long long)node);
	OK(store_pending_agent_record(r->st, &other, &node, NULL, "stray.lab", NULL, id->enroll_a,
				      0, NULL, 100));
	out(r, "  pending %lld node %lld", (long long)other, (long long)node);
	OK(store_pending_agent_accept(r->st, id->pending, id->n3));
	CALL(KILN_ENOTFOUND, store_pending_agent_accept(r->st, 999, id->n3));
	OK(store_pending_agent_list(r->st, &p, &count));
	for (i = 0; i < count; i++)
		out(r, "  pending id=%lld dmi=%s host=%s machine=%s first=%lld last=%lld "
		    "attempts=%lld node_id=%lld node=%s candidate=%s reason=%s",
		    (long long)p[i].id, S(p[i].dmi_serial), S(p[i].hostname), S(p[i].machine_id),
		    (long long)p[i].first_seen, (long long)p[i].last_seen, (long long)p[i].attempts,
		    (long long)p[i].node_id, S(p[i].node), S(p[i].candidate), S(p[i].reason));
	pending_agent_list_free(p, count);
	OK(store_pending_agent_delete(r->st, other));
	OK(store_pending_agent_forget(r->st, "DMI-0003", "gpu03.lab",
				      "33333333333333333333333333333333"));
	OK(store_pending_agent_forget(r->st, NULL, "never.lab", NULL));
	OK(store_pending_agent_list(r->st, &p, &count));
	out(r, "  count %zu", count);
	pending_agent_list_free(p, count);
}

static void section_bmc(struct run *r, struct ids *id)
{
	struct bmc_log_state ls = { 0 };
	struct fleet_state fs, got, *list = NULL;
	struct fleet_down *down = NULL;
	struct maintenance *m = NULL;
	struct node_firmware *fw = NULL;
	struct agent_sample *samples = NULL;
	size_t count = 0, i;
	int64_t t = -1;
	int ins = -1, deleted = -1;

	out(r, "# BMC log history");
	OK(store_bmc_log_state_get(r->st, &ls, id->n1));
	out(r, "  log state %lld %lld %lld", (long long)ls.baselined, (long long)ls.count,
	    (long long)ls.newest);
	ls.baselined = clock_at;
	ls.count = 12;
	ls.newest = T0 - 60;
	OK(store_bmc_log_state_put(r->st, id->n1, &ls));
	memset(&ls, 0, sizeof(ls));
	OK(store_bmc_log_state_get(r->st, &ls, id->n1));
	out(r, "  log state %lld %lld %lld", (long long)ls.baselined, (long long)ls.count,
	    (long long)ls.newest);
	OK(store_bmc_log_add(r->st, &ins, id->n1, "sel:17", T0 - 3600, SEV_WARNING,
			     "Power supply 2 lost input", 1));
	out(r, "  inserted %d", ins);
	OK(store_bmc_log_add(r->st, &ins, id->n1, "sel:17", T0 - 3600, SEV_WARNING,
			     "Power supply 2 lost input", 0));
	out(r, "  inserted %d", ins);
	OK(store_bmc_log_add(r->st, &ins, id->n1, "sel:18", T0 - 30, SEV_CRITICAL,
			     "Drive 0 fault", 0));
	out(r, "  inserted %d", ins);
	OK(store_bmc_log_known(r->st, &ins, id->n1, "sel:1"));
	out(r, "  known sel:1 %d", ins);
	OK(store_bmc_log_known(r->st, &ins, id->n1, "sel:2"));
	out(r, "  known sel:2 %d", ins);
	OK(store_bmc_log_known(r->st, &ins, id->n2, "sel:1"));
	out(r, "  known on n2 %d", ins);
	CALL(KILN_EINVAL, store_bmc_log_known(r->st, &ins, id->n1, ""));
	OK(store_bmc_log_prune(r->st, clock_at - 86400));

	out(r, "# fleet state");
	CALL(KILN_ENOTFOUND, store_fleet_state_get(r->st, &got, id->n1));
	fleet_state_init(&fs, id->n1);
	fleet_dump(r, &fs);
	snprintf(fs.power, sizeof(fs.power), "on");
	fs.power_time = clock_at;
	fs.power_changed = clock_at - 600;
	fs.last_ok = clock_at;
	fs.sensors = "{\"sensors\": [{\"name\": \"Inlet\", \"value\": 22.5, \"unit\": \"C\"}]}";
	fs.sensors_time = clock_at;
	fs.sel_cursor = T0 - 30;
	snprintf(fs.health, sizeof(fs.health), "warning");
	fs.reasons = "[\"psu: redundancy lost\"]";
	fs.health_time = clock_at;
	fs.power_off_by = "";
	fs.power_off_time = clock_at - 900;
	OK(store_fleet_state_put(r->st, &fs));
	fleet_state_init(&fs, id->n2);
	snprintf(fs.power, sizeof(fs.power), "unknown");
	fs.power_error = "ipmi: 127.0.0.1:623: no answer in 5 s";
	fs.reachable = 0;
	fs.failures = 4;
	fs.down_since = clock_at - 300;
	fs.circuit_open = 1;
	fs.next_try = clock_at + 60;
	snprintf(fs.health, sizeof(fs.health), "critical");
	fs.reasons = "[\"bmc: unreachable\"]";
	fs.health_time = clock_at;
	fs.hung_since = clock_at - 200;
	fs.starved_since = clock_at - 100;
	fs.remediated_at = clock_at - 50;
	fs.power_off_by = "ops-bot";
	OK(store_fleet_state_put(r->st, &fs));
	OK(store_fleet_state_get(r->st, &got, id->n1));
	fleet_dump(r, &got);
	fleet_state_clear(&got);
	fleet_state_clear(NULL);
	OK(store_fleet_state_list(r->st, &list, &count));
	for (i = 0; i < count; i++)
		fleet_dump(r, &list[i]);
	fleet_state_list_free(list, count);
	OK(store_fleet_down_list(r->st, &down, &count));
	for (i = 0; i < count; i++)
		out(r, "  down node=%lld since=%lld error=%s", (long long)down[i].node_id,
		    (long long)down[i].down_since, S(down[i].error));
	fleet_down_list_free(down, count);
	fleet_down_list_free(NULL, 0);

	out(r, "# maintenance");
	OK(store_maintenance_set(r->st, id->n2, "PSU \"2\" swap", "admin"));
	clock_at += 60;
	OK(store_maintenance_set(r->st, id->n2, "PSU 2 and fan swap", "ops-bot"));
	OK(store_maintenance_set(r->st, id->n3, "spare", "admin"));
	OK(store_maintenance_set(r->st, id->n3, NULL, NULL));
	OK(store_maintenance_list(r->st, &m, &count));
	for (i = 0; i < count; i++)
		out(r, "  maintenance node=%lld name=%s reason=%s by=%s since=%lld",
		    (long long)m[i].node_id, S(m[i].node), S(m[i].reason), S(m[i].by),
		    (long long)m[i].since);
	maintenance_list_free(m, count);

	out(r, "# inventory");
	OK(store_node_inventory_time(r->st, id->n1, &t));
	out(r, "  time %lld", (long long)t);
	OK(store_node_inventory_put(r->st, id->n1,
				    "{\"manufacturer\": \"Dell Inc.\", \"model\": \"PowerEdge XE9680\","
				    " \"bmc_firmware\": \"7.00.30.00\"}",
				    clock_at));
	OK(store_node_inventory_put(r->st, id->n2, "{\"manufacturer\": \"Supermicro\"}",
				    clock_at + 1));
	CALL(KILN_ENOTFOUND, store_node_inventory_put(r->st, 999, "{}", clock_at));
	OK(store_node_inventory_time(r->st, id->n1, &t));
	out(r, "  time %lld", (long long)t);
	OK(store_node_firmware_list(r->st, &fw, &count));
	for (i = 0; i < count; i++)
		out(r, "  firmware node=%lld %s", (long long)fw[i].node_id, S(fw[i].bmc_firmware));
	node_firmware_list_free(fw, count);

	out(r, "# BMC samples");
	OK(store_bmc_sample_insert(r->st, id->n1, T0 + 100, 1450.5, 22.5));
	OK(store_bmc_sample_insert(r->st, id->n1, T0 + 160, NAN, 23));
	OK(store_bmc_sample_insert(r->st, id->n1, T0 + 160, 1460, 23.5)); /* replaces */
	OK(store_bmc_sample_insert(r->st, id->n2, T0 + 120, 800, NAN));
	OK(store_bmc_samples_list(r->st, &samples, &count, T0, T0 + 1000));
	samples_dump(r, samples, count);
	OK(store_node_samples_list(r->st, &samples, &count, id->n1, 1, 0, 10));
	samples_dump(r, samples, count);
	OK(store_bmc_history_prune(r->st, T0 + 110, 10, &deleted));
	out(r, "  pruned %d", deleted);
	OK(store_bmc_history_prune(r->st, T0 + 110, 10, NULL));
	OK(store_bmc_samples_list(r->st, &samples, &count, 0, T0 + 1000));
	samples_dump(r, samples, count);

	out(r, "# console capture");
	OK(store_console_capture_set(r->st, "gpu01", 1));
	OK(store_console_capture_set(r->st, "gpu03", 1));
	OK(store_console_capture_set(r->st, "gpu03", 0));
	CALL(KILN_ENOTFOUND, store_console_capture_set(r->st, "nope", 1));
	OK(store_console_capture_get(r->st, "gpu01", &ins));
	out(r, "  capture %d", ins);
	OK(store_console_capture_get(r->st, "gpu02", &ins));
	out(r, "  capture %d", ins);
	CALL(KILN_ENOTFOUND, store_console_capture_get(r->st, "nope", &ins));
	{
		char **names = NULL;

		OK(store_console_capture_list(r->st, &names, &count));
		for (i = 0; i < count; i++) {
			out(r, "  capture on %s", names[i]);
			free(names[i]);
		}
		free(names);
	}
}

static void section_jobs(struct run *r, struct ids *id)
{
	struct image img = { 0 }, got = { 0 }, *imgs = NULL;
	struct job j, jg, *jobs = NULL;
	size_t count = 0, i;
	int64_t other = -1, job = -1;
	int has = -1, enrolled = -1;

	out(r, "# images");
	img.name = "ubuntu-24.04";
	img.kind = "iso";
	img.url = "http://10.0.0.1/ubuntu-24.04.iso";
	img.os = "Ubuntu 24.04 LTS";
	img.created_by = "admin";
	OK(store_image_insert(r->st, &id->image, &img));
	img.name = "netboot";
	img.kind = "pxe";
	img.url = NULL;
	img.os = NULL;
	OK(store_image_insert(r->st, NULL, &img));
	img.name = "old";
	OK(store_image_insert(r->st, &other, &img));
	out(r, "  ids %lld %lld", (long long)id->image, (long long)other);
	OK(store_image_get(r->st, &got, "ubuntu-24.04"));
	image_dump(r, &got);
	image_clear(&got);
	image_clear(NULL);
	CALL(KILN_ENOTFOUND, store_image_get(r->st, &got, "nope"));
	OK(store_image_delete(r->st, "old"));
	CALL(KILN_ENOTFOUND, store_image_delete(r->st, "old"));
	OK(store_image_list(r->st, &imgs, &count));
	for (i = 0; i < count; i++)
		image_dump(r, &imgs[i]);
	image_list_free(imgs, count);

	out(r, "# reinstall jobs");
	memset(&j, 0, sizeof(j));
	j.node_id = id->n3;
	j.image = "ubuntu-24.04";
	j.image_kind = "iso";
	j.image_url = "http://10.0.0.1/ubuntu-24.04.iso";
	j.image_os = "Ubuntu 24.04 LTS";
	j.created_by = "admin";
	j.force = 1;
	j.drain = 1;
	j.drain_timeout_s = 3600;
	OK(store_job_insert(r->st, &j));
	id->job = j.id;
	out(r, "  id %lld", (long long)j.id);
	clock_at += 30;
	j.state = "running";
	j.step = "wait_boot";
	j.step_started = clock_at;
	j.boot_id_before = "boot-c";
	j.cycle_sent_at = clock_at - 10;
	j.cycle_done = 1;
	j.audit_id = id->audit_add;
	j.started_at = clock_at - 20;
	OK(store_job_update(r->st, &j));
	OK(store_job_get(r->st, &jg, id->job));
	job_dump(r, &jg);
	job_clear(&jg);
	job_clear(NULL);
	CALL(KILN_ENOTFOUND, store_job_get(r->st, &jg, 999));
	j.id = 999;
	CALL(KILN_ENOTFOUND, store_job_update(r->st, &j));
	OK(store_agent_enroll_facts(r->st, &has, &job, &enrolled, id->n3));
	out(r, "  enroll facts token=%d job=%lld enrolled=%d", has, (long long)job, enrolled);
	OK(store_job_enroll_take(r->st, id->job));
	CALL(KILN_EEXISTS, store_job_enroll_take(r->st, id->job));
	OK(store_agent_enroll_facts(r->st, &has, &job, &enrolled, id->n3));
	out(r, "  enroll facts token=%d job=%lld enrolled=%d", has, (long long)job, enrolled);
	OK(store_job_list(r->st, &jobs, &count, 1, 0));
	for (i = 0; i < count; i++)
		job_dump(r, &jobs[i]);
	job_list_free(jobs, count);
	OK(store_job_list(r->st, &jobs, &count, 0, id->n1));
	out(r, "  count %zu", count);
	job_list_free(jobs, count);
}

static void section_reads(struct run *r, struct ids *id)
{
	out(r, "# status rows");
	OK(store_status_rows(r->st, status_cb, r));
	CALL(KILN_EBUSY, store_status_rows(r->st, stop_cb, r));
	out(r, "# metrics rows");
	OK(store_metrics_rows(r->st, id->agent_seen + 10, 3, 60, metrics_cb, r));
	OK(store_metrics_rows(r->st, clock_at + 100000, 3, 60, metrics_cb, r));
}

/* Writes that name a row already there come last: a backend may spend a sequence value on
 * a refused insert, and no id is read after them. */
static void section_tx_and_conflicts(struct run *r, struct ids *id)
{
	unsigned char h1[32], ht[32];
	struct api_token *list = NULL;
	struct event e, *events = NULL;
	struct node n, *got = NULL;
	struct image img = { 0 };
	struct job j;
	size_t count = 0, i;
	int64_t tid = 0, pid = 0, node = -1;
	int v = -1;

	out(r, "# transactions");
	OK(store_rollback(r->st));
	OK(store_begin(r->st));
	hash_fill(ht, 20);
	OK(store_token_insert(r->st, &tid, "rolled-back", ROLE_VIEWER, ht));
	OK(store_rollback(r->st));
	OK(store_begin(r->st));
	OK(store_savepoint(r->st));
	hash_fill(ht, 21);
	OK(store_token_insert(r->st, &tid, "undone", ROLE_VIEWER, ht));
	store_rollback_to(r->st);
	OK(store_savepoint(r->st));
	hash_fill(ht, 22);
	OK(store_token_insert(r->st, &tid, "kept", ROLE_OPERATOR, ht));
	OK(store_release(r->st));
	OK(store_commit(r->st));
	OK(store_savepoint(r->st)); /* outside a transaction: its own unit */
	OK(store_maintenance_set(r->st, id->n1, "firmware", "admin"));
	OK(store_release(r->st));
	OK(store_token_list(r->st, &list, &count));
	for (i = 0; i < count; i++) {
		out(r, "  token name=%s role=%d revoked=%d", S(list[i].name), (int)list[i].role,
		    list[i].revoked);
		api_token_clear(&list[i]);
	}
	free(list);

	out(r, "# conflicts");
	node_fill(&n, "gpu01", NULL, 0);
	CALL(KILN_EEXISTS, store_node_insert(r->st, &n));
	hash_fill(h1, 1);
	(void)h1;
	event_fill(&e, id->n1, SEV_WARNING, "bmc", "sel", "Power supply 2 lost input", "sel:17",
		   T0 - 3600);
	OK(store_event_insert(r->st, &e, &v));
	out(r, "  inserted %d", v);
	OK(store_agent_report_claim(r->st, &v, "rep-9", id->n1));
	out(r, "  new %d", v);
	OK(store_agent_report_claim(r->st, &v, "rep-9", id->n1));
	out(r, "  new %d", v);
	img.name = "ubuntu-24.04";
	img.kind = "pxe";
	img.created_by = "admin";
	CALL(KILN_EEXISTS, store_image_insert(r->st, NULL, &img));
	memset(&j, 0, sizeof(j));
	j.node_id = id->n3;
	j.image = "netboot";
	j.image_kind = "pxe";
	j.created_by = "admin";
	CALL(KILN_EBUSY, store_job_insert(r->st, &j));
	OK(store_pending_agent_record(r->st, &pid, &node, "DMI-0005", "gpu05.lab", "55", id->enroll_a,
				      0, "no node of that name", 100));
	clock_at += 1;
	OK(store_pending_agent_record(r->st, &pid, &node, "DMI-0005", "gpu05.lab", "55", id->enroll_a,
				      0, "no node of that name", 100));
	out(r, "  node %lld", (long long)node);
	CALL(KILN_EBUSY, store_pending_agent_record(r->st, &pid, &node, "DMI-0006", "gpu06.lab", "66",
						    id->enroll_a, 0, NULL, 1));

	out(r, "# deletes");
	OK(store_node_delete(r->st, "spare04"));
	CALL(KILN_ENOTFOUND, store_node_delete(r->st, "spare04"));
	CALL(KILN_ENOTFOUND, store_node_get(r->st, &got, "spare04"));
	OK(store_node_delete(r->st, "gpu02"));
	OK(store_status_rows(r->st, status_cb, r));
	OK(store_event_query(r->st, &events, &count, 0, 0, NULL, SEV_INFO, 0));
	events_dump(r, events, count);
}

/* SQLite copies the database (test_store_backup.c reads the copy); PostgreSQL refuses,
 * naming pg_dump: one line for both. */
static void section_backup(struct run *r, struct ids *id)
{
	char dir[] = "/tmp/kiln-conform-backup-XXXXXX", file[128];
	int rc, ok;

	(void)id;
	out(r, "# backup");
	assert_non_null(mkdtemp(dir));
	snprintf(file, sizeof(file), "%s/copy.db", dir);
	rc = store_backup(r->st, file);
	ok = rc == 0 ? access(file, F_OK) == 0
		     : rc == KILN_EINVAL && strstr(kiln_error_last(), "pg_dump") != NULL;
	call(r, 0, ok ? 0 : rc, "store_backup(r->st, file): a copy, or a refusal naming pg_dump");
	unlink(file);
	assert_int_equal(rmdir(dir), 0);
}

/* A migration from SQLite into this store is refused: a SQLite target, or (PostgreSQL) a
 * store that holds nodes and tokens already; one line for both. The copy itself is
 * tests/integration/test_migrate_sqlite.sh's. */
static void section_migrate(struct run *r, struct ids *id)
{
	char dir[] = "/tmp/kiln-conform-migrate-XXXXXX", file[128], side[160];
	struct store_migrate_ops ops = { .new_key_check = "check" };
	struct store *src = NULL;
	int rc, want = strcmp(r->backend, "sqlite") == 0 ? KILN_EINVAL : KILN_EEXISTS;

	(void)id;
	out(r, "# migrate from sqlite");
	assert_non_null(mkdtemp(dir));
	snprintf(file, sizeof(file), "%s/kiln.db", dir);
	assert_int_equal(store_open(&src, file), 0); /* an empty kiln database */
	store_close(src);
	rc = store_migrate_from_sqlite(r->st, file, &ops);
	call(r, 0, rc == want ? 0 : rc,
	     "store_migrate_from_sqlite(r->st, file, &ops): refused (a SQLite target, or nodes)");
	for (const char *const *ext = (const char *const[]){ "", "-wal", "-shm", NULL }; *ext;
	     ext++) {
		snprintf(side, sizeof(side), "%s%s", file, *ext);
		unlink(side);
	}
	assert_int_equal(rmdir(dir), 0);
}

/* The instance rows and the key check: the times are each backend's database clock
 * (PostgreSQL's own, SQLite's the fixed one), so only how they relate is written. */
static void section_cluster(struct run *r, struct ids *id)
{
	struct instance_row row = { .id = "i-one", .host = "h1", .listen = "https://h1:8470",
				    .lease_ms = 5000 };
	struct instance_row *rows = NULL;
	size_t n = 0;
	int deleted = -1, match = -1, first = -1;

	(void)id;
	out(r, "# cluster");
	OK(store_instance_register(r->st, &row));
	row.id = "i-two";
	row.group = "room1";
	OK(store_instance_register(r->st, &row));
	OK(store_instance_heartbeat(r->st, "i-one"));
	CALL(KILN_ENOTFOUND, store_instance_heartbeat(r->st, "i-none"));
	OK(store_instance_list(r->st, &rows, &n));
	for (size_t i = 0; i < n; i++)
		out(r, "  instance %s host=%s listen=%s group=%s lease=%lld fresh=%d started<=beat=%d",
		    rows[i].id, S(rows[i].host), S(rows[i].listen), S(rows[i].group),
		    (long long)rows[i].lease_ms,
		    rows[i].now_ms - rows[i].heartbeat_ms >= 0 &&
			    rows[i].now_ms - rows[i].heartbeat_ms < 60000,
		    rows[i].started_ms <= rows[i].heartbeat_ms);
	if (n > 0) { /* one row cleared alone, as a caller that keeps it does */
		instance_row_clear(&rows[n - 1]);
		out(r, "  cleared id=%s", S(rows[n - 1].id));
	}
	instance_list_free(rows, n);
	OK(store_instance_prune(r->st, 3600 * 1000, &deleted));
	out(r, "  pruned %d", deleted);
	OK(store_instance_remove(r->st, "i-one"));
	OK(store_instance_prune(r->st, -3600 * 1000, &deleted));
	out(r, "  pruned %d", deleted);
	OK(store_key_check(r->st, "check-1", &match, &first));
	out(r, "  key match=%d first=%d", match, first);
	OK(store_key_check(r->st, "check-1", &match, &first));
	out(r, "  key match=%d first=%d", match, first);
	OK(store_key_check(r->st, "check-2", &match, NULL));
	out(r, "  key match=%d", match);
}

/* The node calls (handed to a node's owner, and the claims of actions) and notifications:
 * a row moves only from the state and claimant named, only its claimant finishes it, and a
 * finished row goes when its origin has no instance row. Times on the fixed clock. */
static void node_call_dump(struct run *r, const struct node_call_row *c)
{
	out(r, "  call node=%lld origin=%s owner=%s op=%s audit=%lld state=%s by=%s created=%lld "
	       "changed=%lld rc=%s error=%s data=%s",
	    (long long)c->node_id, S(c->origin), S(c->owner), J(c->op), (long long)c->audit_id, S(c->state),
	    S(c->claimed_by), (long long)(c->created_ms - (int64_t)T0 * 1000),
	    (long long)(c->changed_ms - (int64_t)T0 * 1000), code_name(c->rc), S(c->error),
	    J(c->data));
}

static int heard;

static void on_heard(void *ud, const char *channel, const char *payload)
{
	(void)ud;
	if (strcmp(channel, "kiln_conform") == 0 && payload && strcmp(payload, "42") == 0)
		heard++;
}

static void section_node_calls(struct run *r, struct ids *id)
{
	struct instance_row self = { .id = "i-calls", .host = "h3", .lease_ms = 5000 };
	struct node_call_row a = { .node_id = id->n1, .origin = "i-calls", .owner = "i-owner",
				   .op = "{\"node\":\"gpu01\",\"kind\":1}", .audit_id = id->audit_cycle,
				   .state = NODE_CALL_PENDING };
	struct node_call_row b = { .node_id = id->n2, .origin = "i-gone", .op = "{}",
				   .state = NODE_CALL_RUNNING, .claimed_by = "i-gone" };
	struct node_call_row got, *rows = NULL;
	size_t n = 0;
	int moved = -1, rc, fd, ok;

	out(r, "# node calls");
	OK(store_instance_register(r->st, &self));
	OK(store_node_call_insert(r->st, &a));
	clock_at += 2;
	OK(store_node_call_insert(r->st, &b));
	out(r, "  ids differ=%d", a.id > 0 && b.id > 0 && a.id != b.id);
	OK(store_node_call_list(r->st, NODE_CALL_PENDING, NULL, "i-owner", &rows, &n));
	for (size_t i = 0; i < n; i++)
		node_call_dump(r, &rows[i]);
	node_call_list_free(rows, n);
	OK(store_node_call_list(r->st, NODE_CALL_PENDING, "i-calls", "i-other", &rows, &n));
	out(r, "  handed to i-other: %zu", n);
	node_call_list_free(rows, n);
	OK(store_node_call_move(r->st, a.id, NODE_CALL_PENDING, NULL, NODE_CALL_RUNNING, "i-owner",
				&moved));
	out(r, "  moved %d", moved);
	OK(store_node_call_move(r->st, a.id, NODE_CALL_PENDING, NULL, NODE_CALL_RUNNING, "i-other",
				&moved));
	out(r, "  moved %d", moved);
	OK(store_node_call_finish(r->st, a.id, NODE_CALL_RUNNING, "i-other", NODE_CALL_DONE, 0,
				  NULL, "{}", &moved));
	out(r, "  finished %d", moved);
	clock_at += 3;
	OK(store_node_call_finish(r->st, a.id, NODE_CALL_RUNNING, "i-owner", NODE_CALL_DONE,
				  KILN_ETIMEOUT, "no answer", "{\"power\":\"on\"}", &moved));
	out(r, "  finished %d", moved);
	OK(store_node_call_get(r->st, a.id, &got));
	node_call_dump(r, &got);
	node_call_row_clear(&got);
	out(r, "  cleared state=%s", S(got.state));
	OK(store_node_call_move(r->st, b.id, NODE_CALL_RUNNING, "i-owner", NODE_CALL_READBACK,
				"i-owner", &moved));
	out(r, "  moved %d", moved);
	OK(store_node_call_move(r->st, b.id, NODE_CALL_RUNNING, "i-gone", NODE_CALL_READBACK,
				"i-owner", &moved));
	out(r, "  moved %d", moved);
	OK(store_node_call_finish(r->st, b.id, NODE_CALL_READBACK, "i-owner",
				  NODE_CALL_INTERRUPTED, KILN_ERROR, "interrupted", NULL, &moved));
	OK(store_node_call_list(r->st, NODE_CALL_DONE, "i-calls", NULL, &rows, &n));
	for (size_t i = 0; i < n; i++)
		node_call_dump(r, &rows[i]);
	node_call_list_free(rows, n);
	OK(store_node_call_list(r->st, NODE_CALL_INTERRUPTED, NULL, NULL, &rows, &n));
	for (size_t i = 0; i < n; i++)
		node_call_dump(r, &rows[i]);
	node_call_list_free(rows, n);
	/* i-gone has no instance row: its finished row goes; i-calls's stays */
	OK(store_node_call_prune(r->st, ((int64_t)clock_at + 60) * 1000));
	OK(store_node_call_list(r->st, NODE_CALL_INTERRUPTED, NULL, NULL, &rows, &n));
	out(r, "  interrupted left %zu", n);
	node_call_list_free(rows, n);
	OK(store_node_call_delete(r->st, a.id));
	CALL(KILN_ENOTFOUND, store_node_call_get(r->st, a.id, &got));
	OK(store_node_call_delete(r->st, a.id));
	OK(store_instance_remove(r->st, "i-calls"));

	/* notifications: PostgreSQL's LISTEN/NOTIFY (a session hears its own); none on SQLite */
	OK(store_notify(r->st, "kiln_conform", "42"));
	heard = 0;
	rc = store_listen(r->st, "kiln_conform");
	fd = store_listen_fd(r->st);
	if (rc == 0)
		rc = store_notify(r->st, "kiln_conform", "42");
	if (rc == 0)
		rc = store_notifications(r->st, on_heard, NULL);
	if (strcmp(r->backend, "sqlite") == 0)
		ok = rc == KILN_EINVAL && fd == -1 &&
		     store_notifications(r->st, on_heard, NULL) == 0 && heard == 0;
	else
		ok = rc == 0 && fd >= 0 && heard == 1;
	call(r, 0, ok ? 0 : (rc ? rc : KILN_ERROR),
	     "store_listen, store_listen_fd, store_notify, store_notifications: its own "
	     "notification heard once, or (SQLite) no notifications");
}

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
