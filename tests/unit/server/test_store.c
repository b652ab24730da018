/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for the store: nodes and groups, API and agent tokens, audit log, events, transactions. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kiln/error.h"
#include "kiln/noderange.h"
#include "store/store.h"
#include "store/store_internal.h"
#include "store_db.h"

struct fx {
	char dir[64];
	char db[FX_TARGET_MAX];
	struct store *st;
};

static int64_t fake_now = 1000;

static int64_t fake_clock(void)
{
	return fake_now;
}

static int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	fx_db_make(f->dir, sizeof(f->dir), f->db, sizeof(f->db), "kiln-store");
	assert_int_equal(store_open(&f->st, f->db), 0);
	fake_now = 1000;
	store_clock_set(f->st, fake_clock);
	*state = f;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *f = *state;

	store_close(f->st);
	fx_db_remove(f->dir, f->db);
	free(f);
	return 0;
}

static char *xstrdup(const char *s)
{
	char *d = s ? strdup(s) : NULL;

	if (s)
		assert_non_null(d);
	return d;
}

/* A heap node as the API would build it; groups given as a NULL-terminated list. */
static struct node *mknode(const char *name, const char *const *groups)
{
	struct node *n = calloc(1, sizeof(*n));

	assert_non_null(n);
	n->name = xstrdup(name);
	n->ipmi_cipher = 3;
	for (size_t i = 0; groups && groups[i]; i++)
		n->ngroups++;
	if (n->ngroups) {
		n->groups = calloc(n->ngroups, sizeof(char *));
		assert_non_null(n->groups);
		for (size_t i = 0; i < n->ngroups; i++)
			n->groups[i] = xstrdup(groups[i]);
	}
	return n;
}

static void add(struct store *st, const char *name, const char *const *groups)
{
	struct node *n = mknode(name, groups);

	assert_int_equal(store_node_insert(st, n), 0);
	assert_true(n->id > 0);
	node_free(n);
}

static void set_password(struct node *n, const char *blob)
{
	free(n->bmc_password_enc);
	n->bmc_password_enc_len = strlen(blob);
	n->bmc_password_enc = malloc(n->bmc_password_enc_len);
	assert_non_null(n->bmc_password_enc);
	memcpy(n->bmc_password_enc, blob, n->bmc_password_enc_len);
}

static void test_node_crud(void **state)
{
	struct fx *f = *state;
	const char *const groups[] = { "h100", "rack1", "h100", NULL };
	struct node *n = mknode("gpu01", groups), *got = NULL, *dup = NULL;
	int64_t id;

	n->rack = xstrdup("r1");
	n->bmc_protocol = BMC_REDFISH;
	n->bmc_host = xstrdup("10.0.0.1");
	n->bmc_port = 8443;
	n->bmc_user = xstrdup("root");
	set_password(n, "\x01\x02\x00\x03 not text");
	n->tls_mode = TLS_FINGERPRINT;
	n->tls_fingerprint = xstrdup("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
	n->ipmi_cipher = 17;
	n->ipmi_privilege = xstrdup("operator");
	n->ipmi_workarounds = xstrdup("opensesspriv,solpayloadsize");
	n->sol_host = xstrdup("10.0.1.1");
	n->sol_port = 624;
	n->bmc_system = xstrdup("System.Embedded.1");
	assert_int_equal(store_node_insert(f->st, n), 0);
	id = n->id;
	assert_true(id > 0);
	assert_int_equal(n->credentials_version, 1);

	assert_int_equal(store_node_get(f->st, &got, "gpu01"), 0);
	assert_int_equal(got->id, id);
	assert_string_equal(got->name, "gpu01");
	assert_int_equal(got->ngroups, 2); /* the duplicate is kept once, order kept */
	assert_string_equal(got->groups[0], "h100");
	assert_string_equal(got->groups[1], "rack1");
	assert_string_equal(got->rack, "r1");
	assert_int_equal(got->bmc_protocol, BMC_REDFISH);
	assert_string_equal(got->bmc_host, "10.0.0.1");
	assert_int_equal(got->bmc_port, 8443);
	assert_string_equal(got->bmc_user, "root");
	assert_int_equal(got->bmc_password_enc_len, n->bmc_password_enc_len);
	assert_memory_equal(got->bmc_password_enc, n->bmc_password_enc, n->bmc_password_enc_len);
	assert_int_equal(got->tls_mode, TLS_FINGERPRINT);
	assert_string_equal(got->tls_fingerprint, n->tls_fingerprint);
	assert_null(got->tls_ca_file);
	assert_int_equal(got->ipmi_cipher, 17);
	assert_string_equal(got->ipmi_privilege, "operator");
	assert_string_equal(got->ipmi_workarounds, "opensesspriv,solpayloadsize");
	assert_string_equal(got->sol_host, "10.0.1.1");
	assert_int_equal(got->sol_port, 624);
	assert_string_equal(got->bmc_system, "System.Embedded.1");
	assert_int_equal(got->credentials_version, 1);
	assert_int_equal(got->created_at, 1000);
	assert_int_equal(got->updated_at, 1000);

	/* The name is unique. */
	dup = mknode("gpu01", NULL);
	assert_int_equal(store_node_insert(f->st, dup), KILN_EEXISTS);
	assert_non_null(strstr(kiln_error_last(), "gpu01"));
	node_free(dup);

	/* Rename, new groups, no credential change: the version stays. */
	fake_now = 2000;
	free(got->name);
	got->name = xstrdup("gpu02");
	for (size_t i = 0; i < got->ngroups; i++)
		free(got->groups[i]);
	got->groups[0] = xstrdup("a100");
	got->ngroups = 1;
	free(got->rack);
	got->rack = NULL;
	assert_int_equal(store_node_update(f->st, got), 0);
	node_free(got);
	got = NULL;
	assert_int_equal(store_node_get(f->st, &got, "gpu01"), KILN_ENOTFOUND);
	assert_null(got);
	assert_non_null(strstr(kiln_error_last(), "gpu01"));
	assert_int_equal(store_node_get(f->st, &got, "gpu02"), 0);
	assert_int_equal(got->id, id);
	assert_int_equal(got->ngroups, 1);
	assert_string_equal(got->groups[0], "a100");
	assert_null(got->rack);
	assert_int_equal(got->credentials_version, 1);
	assert_int_equal(got->created_at, 1000);
	assert_int_equal(got->updated_at, 2000);

	/* A new password blob or user moves credentials_version. */
	set_password(got, "other blob");
	assert_int_equal(store_node_update(f->st, got), 0);
	free(got->bmc_user);
	got->bmc_user = xstrdup("admin");
	assert_int_equal(store_node_update(f->st, got), 0);
	node_free(got);
	got = NULL;
	assert_int_equal(store_node_get(f->st, &got, "gpu02"), 0);
	assert_int_equal(got->credentials_version, 3);
	assert_string_equal(got->bmc_user, "admin");

	/* Unknown id. */
	got->id = id + 100;
	assert_int_equal(store_node_update(f->st, got), KILN_ENOTFOUND);
	node_free(got);

	assert_int_equal(store_node_delete(f->st, "gpu02"), 0);
	assert_int_equal(store_node_get(f->st, &got, "gpu02"), KILN_ENOTFOUND);
	assert_int_equal(store_node_delete(f->st, "gpu02"), KILN_ENOTFOUND);
	node_free(n);
}

static void test_node_rename_taken(void **state)
{
	struct fx *f = *state;
	const char *const g1[] = { "one", NULL };
	struct node *a = NULL;

	add(f->st, "a", g1);
	add(f->st, "b", NULL);
	assert_int_equal(store_node_get(f->st, &a, "a"), 0);
	free(a->name);
	a->name = xstrdup("b");
	free(a->groups[0]);
	a->groups[0] = xstrdup("two");
	assert_int_equal(store_node_update(f->st, a), KILN_EEXISTS);
	node_free(a);
	a = NULL;
	/* Nothing of the failed update stuck. */
	assert_int_equal(store_node_get(f->st, &a, "a"), 0);
	assert_int_equal(a->ngroups, 1);
	assert_string_equal(a->groups[0], "one");
	node_free(a);
}

/* A group that fails its check after the node row was written: all of it is undone. */
static void test_node_write_atomic(void **state)
{
	struct fx *f = *state;
	const char *const long_group[] = {
		"ok", "g234567890123456789012345678901234567890123456789012345678901234", NULL
	};
	const char *const g[] = { "one", NULL };
	struct node *n = mknode("atomic", long_group), *got = NULL;

	assert_int_equal(store_node_insert(f->st, n), KILN_EINVAL);
	assert_int_equal(n->id, 0);
	assert_int_equal(store_node_get(f->st, &got, "atomic"), KILN_ENOTFOUND);
	node_free(n);

	add(f->st, "atomic", g);
	assert_int_equal(store_node_get(f->st, &n, "atomic"), 0);
	free(n->name);
	n->name = xstrdup("renamed");
	for (size_t i = 0; i < n->ngroups; i++)
		free(n->groups[i]);
	free(n->groups);
	n->groups = calloc(2, sizeof(char *));
	assert_non_null(n->groups);
	n->groups[0] = xstrdup(long_group[0]);
	n->groups[1] = xstrdup(long_group[1]);
	n->ngroups = 2;
	assert_int_equal(store_node_update(f->st, n), KILN_EINVAL);
	node_free(n);
	assert_int_equal(store_node_get(f->st, &got, "renamed"), KILN_ENOTFOUND);
	assert_int_equal(store_node_get(f->st, &got, "atomic"), 0);
	assert_int_equal(got->ngroups, 1);
	assert_string_equal(got->groups[0], "one");
	node_free(got);
}

static void test_node_bad_input(void **state)
{
	struct fx *f = *state;
	struct node *n = mknode("x", NULL);

	n->bmc_protocol = (enum node_bmc_protocol)9;
	assert_int_equal(store_node_insert(f->st, n), KILN_EINVAL);
	n->bmc_protocol = BMC_IPMI;
	free(n->ipmi_privilege);
	n->ipmi_privilege = xstrdup("root");
	assert_int_equal(store_node_insert(f->st, n), KILN_EINVAL);
	assert_int_equal(store_node_get(f->st, &n, "x"), KILN_ENOTFOUND);
	node_free(n);
}

static void test_node_list_and_groups(void **state)
{
	struct fx *f = *state;
	const char *const g_gpu[] = { "gpu", NULL };
	const char *const g_both[] = { "login", "gpu", NULL };
	struct kiln_nodelist l = { 0 };
	struct node **nodes = NULL;
	size_t count = 0;

	add(f->st, "gpu10", g_gpu);
	add(f->st, "gpu02", g_gpu);
	add(f->st, "login1", g_both);
	add(f->st, "bare", NULL);

	assert_int_equal(store_node_list(f->st, &nodes, &count), 0);
	assert_int_equal(count, 4);
	assert_string_equal(nodes[0]->name, "bare");
	assert_int_equal(nodes[0]->ngroups, 0);
	assert_string_equal(nodes[1]->name, "gpu02");
	assert_int_equal(nodes[1]->ngroups, 1);
	assert_string_equal(nodes[1]->groups[0], "gpu");
	assert_string_equal(nodes[2]->name, "gpu10");
	assert_string_equal(nodes[3]->name, "login1");
	assert_int_equal(nodes[3]->ngroups, 2);
	assert_string_equal(nodes[3]->groups[0], "login");
	assert_string_equal(nodes[3]->groups[1], "gpu");
	node_list_free(nodes, count);

	assert_int_equal(store_group_members(f->st, "gpu", &l), 0);
	assert_int_equal(l.count, 3);
	assert_string_equal(l.names[0], "gpu02");
	assert_string_equal(l.names[1], "gpu10");
	assert_string_equal(l.names[2], "login1");
	/* Appends, without duplicates. */
	assert_int_equal(store_group_members(f->st, "login", &l), 0);
	assert_int_equal(l.count, 3);
	assert_int_equal(store_group_members(f->st, "nosuch", &l), KILN_ENOTFOUND);
	assert_non_null(strstr(kiln_error_last(), "nosuch"));
	assert_int_equal(l.count, 3);
	kiln_nodelist_free(&l);
	memset(&l, 0, sizeof(l));

	assert_int_equal(store_node_names(f->st, &l), 0);
	assert_int_equal(l.count, 4);
	assert_string_equal(l.names[0], "bare");
	assert_string_equal(l.names[3], "login1");
	kiln_nodelist_free(&l);
	memset(&l, 0, sizeof(l));

	/* Deleting a node takes its memberships with it. */
	assert_int_equal(store_node_delete(f->st, "login1"), 0);
	assert_int_equal(store_group_members(f->st, "login", &l), KILN_ENOTFOUND);
	assert_int_equal(store_group_members(f->st, "gpu", &l), 0);
	assert_int_equal(l.count, 2);
	kiln_nodelist_free(&l);

	/* An empty store lists nothing. */
	assert_int_equal(store_node_delete(f->st, "gpu02"), 0);
	assert_int_equal(store_node_delete(f->st, "gpu10"), 0);
	assert_int_equal(store_node_delete(f->st, "bare"), 0);
	assert_int_equal(store_node_list(f->st, &nodes, &count), 0);
	assert_int_equal(count, 0);
	node_list_free(nodes, count);
}

static void hash_of(unsigned char h[32], unsigned char v)
{
	memset(h, v, 32);
}

static void test_tokens(void **state)
{
	struct fx *f = *state;
	unsigned char h1[32], h2[32], h3[32];
	struct api_token t = { 0 }, *list = NULL;
	size_t count = 0;
	int64_t id1 = 0, id2 = 0, id3 = 0;

	hash_of(h1, 1);
	hash_of(h2, 2);
	hash_of(h3, 3);
	assert_int_equal(store_token_insert(f->st, &id1, "admin", ROLE_ADMIN, h1), 0);
	assert_int_equal(store_token_insert(f->st, &id2, "ops-bot", ROLE_OPERATOR, h2), 0);
	assert_int_equal(store_token_insert(f->st, &id3, NULL, ROLE_VIEWER, h3), 0);
	assert_true(id1 > 0 && id2 > id1 && id3 > id2);
	assert_int_equal(store_token_insert(f->st, &id3, "again", ROLE_VIEWER, h3), KILN_EEXISTS);
	assert_int_equal(store_token_insert(f->st, &id3, "x", (enum token_role)0, h3), KILN_EINVAL);

	fake_now = 1500;
	assert_int_equal(store_token_lookup(f->st, &t, h2), 0);
	assert_int_equal(t.id, id2);
	assert_string_equal(t.name, "ops-bot");
	assert_int_equal(t.role, ROLE_OPERATOR);
	assert_int_equal(t.created_at, 1000);
	assert_int_equal(t.last_used_at, 0); /* as it was before this use */
	assert_int_equal(t.revoked, 0);
	api_token_clear(&t);

	/* Use is recorded at most once a minute. */
	fake_now = 1530;
	assert_int_equal(store_token_lookup(f->st, &t, h2), 0);
	assert_int_equal(t.last_used_at, 1500);
	api_token_clear(&t);
	fake_now = 1600;
	assert_int_equal(store_token_lookup(f->st, &t, h2), 0);
	assert_int_equal(t.last_used_at, 1500);
	api_token_clear(&t);
	assert_int_equal(store_token_lookup(f->st, &t, h2), 0);
	assert_int_equal(t.last_used_at, 1600);
	api_token_clear(&t);

	assert_int_equal(store_token_lookup(f->st, &t, h3), 0);
	assert_null(t.name);
	assert_int_equal(t.role, ROLE_VIEWER);
	api_token_clear(&t);

	hash_of(h3, 9);
	assert_int_equal(store_token_lookup(f->st, &t, h3), KILN_ENOTFOUND);

	assert_int_equal(store_token_revoke(f->st, id2), 0);
	assert_int_equal(store_token_revoke(f->st, id2), 0);
	assert_int_equal(store_token_lookup(f->st, &t, h2), KILN_ENOTFOUND);
	assert_int_equal(store_token_revoke(f->st, id3 + 100), KILN_ENOTFOUND);
	assert_int_equal(store_token_lookup(f->st, &t, h1), 0);
	api_token_clear(&t);
	api_token_clear(NULL);

	assert_int_equal(store_token_list(f->st, &list, &count), 0);
	assert_int_equal(count, 3);
	assert_int_equal(list[0].id, id1);
	assert_int_equal(list[0].role, ROLE_ADMIN);
	assert_int_equal(list[0].revoked, 0);
	assert_int_equal(list[1].id, id2);
	assert_string_equal(list[1].name, "ops-bot");
	assert_int_equal(list[1].revoked, 1);
	assert_int_equal(list[1].last_used_at, 1600);
	for (size_t i = 0; i < count; i++)
		api_token_clear(&list[i]);
	free(list);
}

static void test_agent_tokens(void **state)
{
	struct fx *f = *state;
	unsigned char h1[32], h2[32], h3[32];
	struct node *n = NULL;
	int64_t tid = 0, node_id = 0, got = 0;
	int revoked = -1;

	add(f->st, "gpu01", NULL);
	add(f->st, "gpu02", NULL);
	assert_int_equal(store_node_get(f->st, &n, "gpu01"), 0);
	node_id = n->id;
	node_free(n);
	hash_of(h1, 0x11);
	hash_of(h2, 0x22);
	hash_of(h3, 0x33);

	assert_int_equal(store_agent_token_insert(f->st, &tid, node_id, h1), 0);
	assert_true(tid > 0);
	assert_int_equal(store_agent_token_insert(f->st, &tid, node_id, h2), 0);
	assert_int_equal(store_agent_token_insert(f->st, &tid, node_id + 1000, h3), KILN_ENOTFOUND);
	assert_int_equal(store_agent_token_insert(f->st, &tid, node_id, h1), KILN_EEXISTS);

	assert_int_equal(store_agent_token_lookup(f->st, &got, h1), 0);
	assert_int_equal(got, node_id);
	got = 0;
	assert_int_equal(store_agent_token_lookup(f->st, &got, h2), 0);
	assert_int_equal(got, node_id);
	assert_int_equal(store_agent_token_lookup(f->st, &got, h3), KILN_ENOTFOUND);

	assert_int_equal(store_agent_token_revoke_node(f->st, node_id, &revoked), 0);
	assert_int_equal(revoked, 2);
	assert_int_equal(store_agent_token_lookup(f->st, &got, h1), KILN_ENOTFOUND);
	assert_int_equal(store_agent_token_revoke_node(f->st, node_id, &revoked), 0);
	assert_int_equal(revoked, 0);

	/* A deleted node's tokens go with it. */
	assert_int_equal(store_agent_token_insert(f->st, &tid, node_id, h3), 0);
	assert_int_equal(store_node_delete(f->st, "gpu01"), 0);
	assert_int_equal(store_agent_token_lookup(f->st, &got, h3), KILN_ENOTFOUND);
}

/* At start every pending row but a live reinstall job's becomes interrupted; the first power
 * read back is added to a node's such rows, once, and to no other row. */
static void test_audit_interrupt(void **state)
{
	struct fx *f = *state;
	struct audit_entry *e = NULL;
	struct node *n = NULL;
	struct job j = { 0 };
	int64_t cycle = 0, done = 0, job_row = 0, other = 0;
	size_t count = 0;
	int closed = -1;

	add(f->st, "gpu01", NULL);
	assert_int_equal(store_node_get(f->st, &n, "gpu01"), 0);
	assert_int_equal(store_audit_begin(f->st, &cycle, "alice", "power.cycle", "gpu01", NULL), 0);
	assert_int_equal(store_audit_begin(f->st, &done, "alice", "power.on", "gpu01", NULL), 0);
	assert_int_equal(store_audit_finish(f->st, done, "ok"), 0);
	assert_int_equal(store_audit_begin(f->st, &job_row, "bob", "reinstall", "gpu01", NULL), 0);
	assert_int_equal(store_audit_begin(f->st, &other, "alice", "power.off", "gpu02", NULL), 0);
	j.node_id = n->id;
	j.image = "ubuntu";
	j.image_kind = "pxe";
	j.created_by = "bob";
	assert_int_equal(store_job_insert(f->st, &j), 0);
	j.state = "running";
	j.step = "wait_boot";
	j.audit_id = job_row;
	assert_int_equal(store_job_update(f->st, &j), 0);

	assert_int_equal(store_audit_interrupt(f->st, &closed), 0);
	assert_int_equal(closed, 2); /* the cycle and gpu02's off; the running job resumes */
	assert_int_equal(store_audit_readback(f->st, "gpu01", "on", "2026-12-02T02:10:00Z"), 0);
	assert_int_equal(store_audit_readback(f->st, "gpu01", "off", "2026-12-02T02:11:00Z"), 0);
	assert_int_equal(store_audit_list(f->st, &e, &count, 0, 0), 0);
	assert_int_equal(count, 4);
	for (size_t i = 0; i < count; i++) {
		if (e[i].id == cycle)
			assert_string_equal(e[i].outcome, "interrupted: kilnd stopped; power read "
							  "back: on at 2026-12-02T02:10:00Z");
		else if (e[i].id == done)
			assert_string_equal(e[i].outcome, "ok");
		else if (e[i].id == job_row)
			assert_string_equal(e[i].outcome, "pending");
		else
			assert_string_equal(e[i].outcome, "interrupted: kilnd stopped");
	}
	audit_entry_list_free(e, count);
	assert_int_equal(store_audit_interrupt(f->st, &closed), 0);
	assert_int_equal(closed, 0);
	node_free(n);
}

static void test_audit(void **state)
{
	struct fx *f = *state;
	struct audit_entry *e = NULL;
	size_t count = 0;
	int64_t a = 0, b = 0;

	fake_now = 1000;
	assert_int_equal(store_audit_begin(f->st, &a, "admin", "power.cycle", "gpu01",
					   "{\"on_if_off\":false}"), 0);
	fake_now = 2000;
	assert_int_equal(store_audit_begin(f->st, &b, "kilnd", "node.add", "gpu02", NULL), 0);
	assert_true(b > a);
	assert_int_equal(store_audit_finish(f->st, a, "ok"), 0);
	assert_int_equal(store_audit_finish(f->st, b + 10, "ok"), KILN_ENOTFOUND);
	assert_int_equal(store_audit_begin(f->st, &b, NULL, "x", NULL, NULL), KILN_EINVAL);

	assert_int_equal(store_audit_list(f->st, &e, &count, 0, 0), 0);
	assert_int_equal(count, 2);
	assert_int_equal(e[0].time, 2000); /* newest first */
	assert_string_equal(e[0].actor, "kilnd");
	assert_string_equal(e[0].action, "node.add");
	assert_string_equal(e[0].target, "gpu02");
	assert_null(e[0].detail);
	assert_string_equal(e[0].outcome, "pending");
	assert_int_equal(e[1].id, a);
	assert_int_equal(e[1].time, 1000);
	assert_string_equal(e[1].detail, "{\"on_if_off\":false}");
	assert_string_equal(e[1].outcome, "ok");
	audit_entry_list_free(e, count);

	assert_int_equal(store_audit_list(f->st, &e, &count, 1500, 0), 0);
	assert_int_equal(count, 1);
	assert_string_equal(e[0].action, "node.add");
	audit_entry_list_free(e, count);

	assert_int_equal(store_audit_list(f->st, &e, &count, 1000, 0), 0);
	assert_int_equal(count, 2);
	audit_entry_list_free(e, count);

	assert_int_equal(store_audit_list(f->st, &e, &count, 0, 1), 0);
	assert_int_equal(count, 1);
	assert_int_equal(e[0].time, 2000);
	audit_entry_list_free(e, count);

	assert_int_equal(store_audit_list(f->st, &e, &count, 3000, 0), 0);
	assert_int_equal(count, 0);
	audit_entry_list_free(e, count);
	audit_entry_list_free(NULL, 0);
}

static void test_events(void **state)
{
	struct fx *f = *state;
	struct node *n1 = NULL, *n2 = NULL;
	struct event ev = { 0 }, *list = NULL;
	size_t count = 0;
	int ins = -1;

	add(f->st, "gpu01", NULL);
	add(f->st, "gpu02", NULL);
	assert_int_equal(store_node_get(f->st, &n1, "gpu01"), 0);
	assert_int_equal(store_node_get(f->st, &n2, "gpu02"), 0);

	ev.node_id = n1->id;
	ev.severity = SEV_CRITICAL;
	ev.source = "agent";
	ev.kind = "xid";
	ev.message = "Xid 79: GPU has fallen off the bus";
	ev.dedup_key = "xid:boot1:79:0000:3b:00.0";
	ev.time = 100;
	assert_int_equal(store_event_insert(f->st, &ev, &ins), 0);
	assert_int_equal(ins, 1);
	ev.time = 200;
	assert_int_equal(store_event_insert(f->st, &ev, &ins), 0);
	assert_int_equal(ins, 0);
	/* The same key on another node is another event. */
	ev.node_id = n2->id;
	assert_int_equal(store_event_insert(f->st, &ev, &ins), 0);
	assert_int_equal(ins, 1);
	/* Fleet-wide events dedup among themselves. */
	ev.node_id = 0;
	ev.time = 300;
	ev.dedup_key = "fleet:1";
	ev.severity = SEV_WARNING;
	ev.source = "kilnd";
	ev.kind = "remediation";
	assert_int_equal(store_event_insert(f->st, &ev, &ins), 0);
	assert_int_equal(ins, 1);
	assert_int_equal(store_event_insert(f->st, &ev, &ins), 0);
	assert_int_equal(ins, 0);
	/* Without a key every event is stored; time 0 means now. */
	ev.dedup_key = NULL;
	ev.time = 0;
	ev.node_id = n1->id;
	ev.severity = SEV_INFO;
	ev.kind = "power";
	fake_now = 400;
	assert_int_equal(store_event_insert(f->st, &ev, &ins), 0);
	assert_int_equal(ins, 1);
	fake_now = 401;
	assert_int_equal(store_event_insert(f->st, &ev, NULL), 0);
	/* Bad input. */
	ev.node_id = n2->id + 100;
	assert_int_equal(store_event_insert(f->st, &ev, &ins), KILN_ENOTFOUND);
	ev.node_id = 0;
	ev.severity = (enum event_severity)5;
	assert_int_equal(store_event_insert(f->st, &ev, &ins), KILN_EINVAL);

	assert_int_equal(store_event_list(f->st, &list, &count, 0, 0), 0);
	assert_int_equal(count, 5);
	assert_int_equal(list[0].time, 401);
	assert_string_equal(list[0].node, "gpu01");
	assert_int_equal(list[0].severity, SEV_INFO);
	assert_null(list[0].dedup_key);
	assert_int_equal(list[2].time, 300);
	assert_int_equal(list[2].node_id, 0);
	assert_null(list[2].node);
	assert_int_equal(list[2].severity, SEV_WARNING);
	assert_string_equal(list[2].source, "kilnd");
	assert_int_equal(list[4].time, 100);
	assert_string_equal(list[4].node, "gpu01");
	assert_string_equal(list[4].kind, "xid");
	assert_string_equal(list[4].message, "Xid 79: GPU has fallen off the bus");
	assert_string_equal(list[4].dedup_key, "xid:boot1:79:0000:3b:00.0");
	assert_int_equal(list[4].severity, SEV_CRITICAL);
	event_list_free(list, count);

	assert_int_equal(store_event_list(f->st, &list, &count, 300, 2), 0);
	assert_int_equal(count, 2);
	assert_int_equal(list[0].time, 401);
	assert_int_equal(list[1].time, 400);
	event_list_free(list, count);

	/* A node's events go with it. */
	assert_int_equal(store_node_delete(f->st, "gpu02"), 0);
	assert_int_equal(store_event_list(f->st, &list, &count, 0, 0), 0);
	assert_int_equal(count, 4);
	event_list_free(list, count);
	node_free(n1);
	node_free(n2);
}

static void test_transactions(void **state)
{
	struct fx *f = *state;
	struct node *n = NULL, *dup = mknode("a", NULL);

	assert_int_equal(store_begin(f->st), 0);
	add(f->st, "gone", NULL);
	assert_int_equal(store_rollback(f->st), 0);
	assert_int_equal(store_node_get(f->st, &n, "gone"), KILN_ENOTFOUND);

	/* A failed insert inside a transaction does not spoil the rest (CSV import). */
	assert_int_equal(store_begin(f->st), 0);
	add(f->st, "a", NULL);
	assert_int_equal(store_node_insert(f->st, dup), KILN_EEXISTS);
	add(f->st, "b", NULL);
	assert_int_equal(store_node_get(f->st, &n, "a"), 0);
	node_free(n);
	assert_int_equal(store_commit(f->st), 0);
	assert_int_equal(store_node_get(f->st, &n, "b"), 0);
	node_free(n);
	node_free(dup);

	/* Rolling back with no transaction open is harmless. */
	assert_int_equal(store_rollback(f->st), 0);
}

static void test_reopen_keeps_data(void **state)
{
	struct fx *f = *state;
	const char *const g[] = { "g", NULL };
	struct node *n = NULL;
	struct stat sb;
	int v = 0;

	add(f->st, "keep", g);
	store_close(f->st);
	f->st = NULL;
	if (!fx_pg()) {
		assert_int_equal(stat(f->db, &sb), 0);
		assert_int_equal(sb.st_mode & 077, 0); /* holds hashes and ciphertext: owner only */
	}
	assert_int_equal(store_open(&f->st, f->db), 0);
	assert_int_equal(store_node_get(f->st, &n, "keep"), 0);
	assert_int_equal(n->ngroups, 1);
	node_free(n);
	assert_int_equal(store_schema_version(f->st, &v), 0);
	assert_true(v >= 1);
	store_close(NULL);
	node_free(NULL);
	node_list_free(NULL, 0);
}

/* Two handles on one file, as two kilnd threads have. */
static void test_two_handles(void **state)
{
	struct fx *f = *state;
	struct store *other = NULL;
	struct node *n = NULL;

	assert_int_equal(store_open(&other, f->db), 0);
	add(f->st, "shared", NULL);
	assert_int_equal(store_node_get(other, &n, "shared"), 0);
	node_free(n);
	assert_int_equal(store_begin(other), 0);
	add(other, "pending", NULL);
	assert_int_equal(store_node_get(f->st, &n, "pending"), KILN_ENOTFOUND);
	assert_int_equal(store_commit(other), 0);
	assert_int_equal(store_node_get(f->st, &n, "pending"), 0);
	node_free(n);
	store_close(other);
}

/* The WAL file is bounded after checkpoints: journal_size_limit is set on every handle. */
/* Dashboard sessions: live until expiry, log-out or the token's revocation, then gone. */
static void test_sessions(void **state)
{
	struct fx *f = *state;
	unsigned char th[32], sh[32], sh2[32], other[32];
	struct ui_session u = { 0 };
	int64_t tok = 0, sid = 0, sid2 = 0;

	hash_of(th, 1);
	hash_of(sh, 2);
	hash_of(sh2, 3);
	hash_of(other, 4);
	assert_int_equal(store_token_insert(f->st, &tok, "phone", ROLE_VIEWER, th), 0);
	assert_int_equal(store_session_insert(f->st, &sid, sh, tok, "csrf-one", 2000), 0);
	assert_int_equal(store_session_insert(f->st, &sid2, sh2, tok, "csrf-two", 5000), 0);
	assert_int_equal(store_session_insert(f->st, &sid2, sh2, tok, "again", 5000), KILN_EEXISTS);

	fake_now = 1999;
	assert_int_equal(store_session_lookup(f->st, &u, sh), 0);
	assert_int_equal(u.id, sid);
	assert_int_equal(u.token.id, tok);
	assert_string_equal(u.token.name, "phone");
	assert_int_equal(u.token.role, ROLE_VIEWER);
	assert_string_equal(u.csrf, "csrf-one");
	assert_int_equal(u.expires_at, 2000);
	api_token_clear(&u.token);
	assert_int_equal(store_session_lookup(f->st, &u, other), KILN_ENOTFOUND);

	fake_now = 2000; /* expired */
	assert_int_equal(store_session_lookup(f->st, &u, sh), KILN_ENOTFOUND);
	assert_int_equal(store_session_lookup(f->st, &u, sh2), 0);
	api_token_clear(&u.token);

	assert_int_equal(store_session_end(f->st, sid2), 0); /* log-out */
	assert_int_equal(store_session_lookup(f->st, &u, sh2), KILN_ENOTFOUND);
	assert_int_equal(store_session_end(f->st, sid2), 0);

	/* a revoked token ends its sessions */
	assert_int_equal(store_session_insert(f->st, &sid, other, tok, "csrf-3", 9000), 0);
	assert_int_equal(store_session_lookup(f->st, &u, other), 0);
	api_token_clear(&u.token);
	assert_int_equal(store_token_revoke(f->st, tok), 0);
	assert_int_equal(store_session_lookup(f->st, &u, other), KILN_ENOTFOUND);

	/* pruned: the expired one and the ended one, not the one that lives on (by its time) */
	fake_now = 6000;
	assert_int_equal(store_session_prune(f->st, 6000), 0);
	assert_int_equal(store_session_insert(f->st, &sid, sh, tok, "reused", 9000), 0);
	assert_int_equal(store_session_insert(f->st, &sid, sh2, tok, "reused", 9000), 0);
	assert_int_equal(store_session_insert(f->st, &sid, other, tok, "kept", 9000), KILN_EEXISTS);
}

static void test_journal_size_limit(void **state)
{
	struct fx *f = *state;
	sqlite3_stmt *s = NULL;

	FX_SQLITE_ONLY();

	assert_int_equal(sqlite3_prepare_v2(f->st->db, "PRAGMA journal_size_limit", -1, &s, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_step(s), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int64(s, 0), 64 * 1024 * 1024);
	sqlite3_finalize(s);
}

/* Only BMCs the poller counts down are listed, by node id, with their last error. */
static void test_fleet_down_list(void **state)
{
	static const struct {
		const char *name;
		int reachable, failures, circuit_open;
		int64_t down_since;
		const char *error;
	} rows[] = {
		{ "up", 1, 0, 0, 0, NULL },
		{ "one-failure", 1, 1, 0, 900, "timed out" }, /* still reachable: asked again */
		{ "down", 0, 2, 0, 800, "refused" },
		{ "circuit", 0, 5, 1, 700, NULL },
	};
	struct fx *f = *state;
	struct fleet_down *down = NULL;
	int64_t ids[4];
	size_t n = 0;

	for (size_t i = 0; i < 4; i++) {
		struct node nd = { .name = (char *)rows[i].name, .ipmi_cipher = 3 };
		struct fleet_state fs;

		assert_int_equal(store_node_insert(f->st, &nd), 0);
		ids[i] = nd.id;
		fleet_state_init(&fs, nd.id);
		fs.reachable = rows[i].reachable;
		fs.failures = rows[i].failures;
		fs.circuit_open = rows[i].circuit_open;
		fs.down_since = rows[i].down_since;
		fs.power_error = (char *)rows[i].error;
		assert_int_equal(store_fleet_state_put(f->st, &fs), 0);
	}
	assert_int_equal(store_fleet_down_list(f->st, &down, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(down[0].node_id, ids[2]);
	assert_int_equal(down[0].down_since, 800);
	assert_string_equal(down[0].error, "refused");
	assert_int_equal(down[1].node_id, ids[3]);
	assert_null(down[1].error);
	fleet_down_list_free(down, n);
}

/* A kept Redfish session: put, get, and a drop that only takes the session it names (a
 * retired state's logout must not drop its successor's session). */
static void test_bmc_sessions(void **state)
{
	struct fx *f = *state;
	struct bmc_session_row row = { 0 }, got = { 0 };
	unsigned char sealed[] = { 1, 2, 3, 4 };
	struct node *n = NULL;

	add(f->st, "gpu01", NULL);
	assert_int_equal(store_node_get(f->st, &n, "gpu01"), 0);
	assert_int_equal(store_bmc_session_get(f->st, &got, n->id), KILN_ENOTFOUND);
	row.node_id = n->id;
	row.credentials_version = 3;
	row.token_enc = sealed;
	row.token_enc_len = sizeof(sealed);
	row.uri = "/redfish/v1/SessionService/Sessions/7";
	assert_int_equal(store_bmc_session_put(f->st, &row), 0);
	assert_int_equal(store_bmc_session_get(f->st, &got, n->id), 0);
	assert_int_equal(got.credentials_version, 3);
	assert_int_equal(got.token_enc_len, sizeof(sealed));
	assert_memory_equal(got.token_enc, sealed, sizeof(sealed));
	assert_string_equal(got.uri, "/redfish/v1/SessionService/Sessions/7");
	assert_string_equal(got.auth, "session");
	bmc_session_row_clear(&got);

	/* another session's logout leaves this one */
	assert_int_equal(store_bmc_session_drop(f->st, n->id, "/redfish/v1/SessionService/Sessions/6"), 0);
	assert_int_equal(store_bmc_session_get(f->st, &got, n->id), 0);
	bmc_session_row_clear(&got);
	assert_int_equal(store_bmc_session_drop(f->st, n->id, row.uri), 0);
	assert_int_equal(store_bmc_session_get(f->st, &got, n->id), KILN_ENOTFOUND);

	/* Basic instead: no token, the reason kept */
	row.token_enc = NULL;
	row.uri = NULL;
	row.auth = "basic (BMC session limit)";
	assert_int_equal(store_bmc_session_put(f->st, &row), 0);
	assert_int_equal(store_bmc_session_get(f->st, &got, n->id), 0);
	assert_null(got.token_enc);
	assert_null(got.uri);
	assert_string_equal(got.auth, "basic (BMC session limit)");
	bmc_session_row_clear(&got);

	/* a node that is gone keeps nothing */
	row.node_id = n->id + 100;
	assert_int_equal(store_bmc_session_put(f->st, &row), KILN_ENOTFOUND);
	node_free(n);
}

/* BMC log history: an entry is stored once (a second read inserts nothing), and the log
 * state of a node never read says so. */
static void test_bmc_log(void **state)
{
	struct fx *f = *state;
	struct bmc_log_state ls = { .baselined = 9 }, put = { .baselined = 100, .count = 57,
							      .newest = 1714644000 };
	struct node *n = NULL;
	int inserted = -1;

	add(f->st, "gpu01", NULL);
	assert_int_equal(store_node_get(f->st, &n, "gpu01"), 0);
	assert_int_equal(store_bmc_log_state_get(f->st, &ls, n->id), 0);
	assert_int_equal(ls.baselined, 0);
	assert_int_equal(ls.count, -1);
	assert_int_equal(store_bmc_log_state_put(f->st, n->id, &put), 0);
	assert_int_equal(store_bmc_log_state_get(f->st, &ls, n->id), 0);
	assert_int_equal(ls.baselined, 100);
	assert_int_equal(ls.count, 57);
	assert_int_equal(ls.newest, 1714644000);

	assert_int_equal(store_bmc_log_add(f->st, &inserted, n->id, "sel:1:1714644000", 1714644000,
					   SEV_CRITICAL, "SEL 1: old", 1), 0);
	assert_int_equal(inserted, 1);
	assert_int_equal(store_bmc_log_add(f->st, &inserted, n->id, "sel:1:1714644000", 1714644000,
					   SEV_CRITICAL, "SEL 1: old", 0), 0);
	assert_int_equal(inserted, 0);
	/* pruning keeps what the cursor still reaches (the newest time) */
	assert_int_equal(store_bmc_log_prune(f->st, INT64_MAX), 0);
	assert_int_equal(store_bmc_log_add(f->st, &inserted, n->id, "sel:1:1714644000", 1714644000,
					   SEV_CRITICAL, "SEL 1: old", 0), 0);
	assert_int_equal(inserted, 0);
	node_free(n);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)
	const struct CMUnitTest tests[] = {
		T(test_node_crud),
		T(test_node_rename_taken),
		T(test_node_write_atomic),
		T(test_node_bad_input),
		T(test_node_list_and_groups),
		T(test_tokens),
		T(test_sessions),
		T(test_agent_tokens),
		T(test_audit),
		T(test_audit_interrupt),
		T(test_events),
		T(test_transactions),
		T(test_reopen_keeps_data),
		T(test_two_handles),
		T(test_journal_size_limit),
		T(test_fleet_down_list),
		T(test_bmc_sessions),
		T(test_bmc_log),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
