/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The store conformance program's script, its second part (test_store_conformance.c runs
 * it): enrollment, BMC state, jobs, the status and metrics reads, transactions and
 * conflicts, backup, migration, the cluster's instance rows and the node calls.
 * store_conformance.h declares the harness these sections write with.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "kiln/error.h"
#include "store/store.h"
#include "store/store_migrate.h"

#include "store_conformance.h"

void section_enroll(struct run *r, struct ids *id)
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

void section_bmc(struct run *r, struct ids *id)
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

void section_jobs(struct run *r, struct ids *id)
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

void section_reads(struct run *r, struct ids *id)
{
	out(r, "# status rows");
	OK(store_status_rows(r->st, status_cb, r));
	CALL(KILN_EBUSY, store_status_rows(r->st, stop_cb, r));
	out(r, "# metrics rows");
	OK(store_metrics_nodes(r->st, metrics_cb, r));
	/* one node a call: the rows of several come in no set order */
	for (size_t i = 0; i < 4; i++) {
		int64_t one[] = { id->n1, id->n2, id->n3, id->n4 };

		OK(store_metrics_bmc(r->st, &one[i], 1, metrics_bmc_cb, r));
		OK(store_metrics_reports(r->st, &one[i], 1, metrics_report_cb, r));
	}
	/* more nodes than one statement takes, an unknown one among them */
	{
		int64_t many[40];

		for (size_t i = 0; i < 40; i++)
			many[i] = i == 39 ? id->n1 : 1000000 + (int64_t)i;
		OK(store_metrics_reports(r->st, many, 40, metrics_report_cb, r));
	}
}

/* Writes that name a row already there come last: a backend may spend a sequence value on
 * a refused insert, and no id is read after them. */
void section_tx_and_conflicts(struct run *r, struct ids *id)
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
	/* a transaction of two nodes' rows: a savepoint undone inside it, the rest kept */
	OK(store_begin_nodes(r->st, (int64_t[]){ id->n2, id->n1 }, 2));
	OK(store_savepoint(r->st));
	OK(store_agent_report_claim(r->st, &v, "rep-nodes-undone", id->n1));
	store_rollback_to(r->st);
	OK(store_agent_report_claim(r->st, &v, "rep-nodes", id->n2));
	OK(store_commit(r->st));
	OK(store_agent_report_claim(r->st, &v, "rep-nodes-undone", id->n1));
	out(r, "  undone claim is new again: %d", v);
	OK(store_agent_report_claim(r->st, &v, "rep-nodes", id->n2));
	out(r, "  kept claim is a duplicate: %d", !v);
	{
		struct agent_identity idn = { 0 };

		/* in a node transaction (pipelined on PostgreSQL) and outside one */
		OK(store_begin_nodes(r->st, &id->n2, 1));
		OK(store_agent_report_claim_identity(r->st, &v, &idn, "rep-nodes-2", id->n2));
		out(r, "  claimed with identity: new %d, node %s", v, S(idn.node));
		agent_identity_clear(&idn);
		OK(store_agent_report_claim_identity(r->st, &v, &idn, "rep-nodes-2", id->n2));
		out(r, "  again in the same transaction: new %d", v);
		agent_identity_clear(&idn);
		OK(store_commit(r->st));
		OK(store_agent_report_claim_identity(r->st, &v, &idn, "rep-nodes-2", id->n2));
		out(r, "  after the commit: new %d", v);
		agent_identity_clear(&idn);
	}
	/* PostgreSQL's round trips are counted, SQLite has none: the same answer, never less */
	out(r, "  round trips counted: %d", store_round_trips(r->st) >= 0);
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
void section_backup(struct run *r, struct ids *id)
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
void section_migrate(struct run *r, struct ids *id)
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
void section_cluster(struct run *r, struct ids *id)
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

void section_node_calls(struct run *r, struct ids *id)
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
