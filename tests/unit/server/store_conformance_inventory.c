/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The store conformance program's script, its first part (test_store_conformance.c runs it):
 * nodes, API tokens, agent tokens, BMC sessions, audit, events, agent reports and the
 * agents' identity. store_conformance.h declares the harness these sections write with.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kiln/error.h"
#include "kiln/noderange.h"
#include "store/store.h"

#include "store_conformance.h"

void node_fill(struct node *n, const char *name, char **groups, size_t ngroups)
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

void section_nodes(struct run *r, struct ids *id)
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

void section_tokens(struct run *r, struct ids *id)
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

void section_agent_tokens(struct run *r, struct ids *id)
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

void section_bmc_sessions(struct run *r, struct ids *id)
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

void section_audit(struct run *r, struct ids *id)
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

void event_fill(struct event *e, int64_t node, enum event_severity sev, const char *source,
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

void section_events(struct run *r, struct ids *id)
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

void section_agent(struct run *r, struct ids *id)
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
	char *report = NULL;
	int64_t hist = -1, seen_n = -1;
	int isnew = -1, deleted = -1;

	out(r, "# agent reports");
	OK(store_agent_report_claim(r->st, &isnew, "rep-1", id->n1));
	out(r, "  new %d", isnew);
	CALL(KILN_ENOTFOUND, store_agent_state_get(r->st, &got, id->n1, 1));
	CALL(KILN_ENOTFOUND, store_agent_report_get(r->st, &report, id->n1));
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
	{
		struct agent_identity idn = { 0 };

		OK(store_agent_identity_get(r->st, &idn, id->n1));
		out(r, "  report id %s", S(idn.report_id));
		agent_identity_clear(&idn);
	}
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

void section_identity(struct run *r, struct ids *id)
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
