/* SPDX-License-Identifier: Apache-2.0 */
/* store_backup on SQLite: an online copy that another handle's open write transaction does not
 * stop and does not leak into, readable as a store, never written over the live database. On
 * a store of another backend (the fixture's PostgreSQL under KILN_TEST_PG) it is refused,
 * naming pg_dump. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "kiln/error.h"
#include "store/store.h"
#include "store/store_internal.h"

#include "store_fixture.h"

/* 1 when the fixture's store is not SQLite: store_backup refuses, naming pg_dump. */
static int other_backend(struct store *st)
{
	if (strcmp(st->be->name, "sqlite") == 0)
		return 0;
	assert_int_equal(store_backup(st, "/tmp/kiln-unit-never.db"), KILN_EINVAL);
	assert_non_null(strstr(kiln_error_last(), "pg_dump"));
	assert_int_not_equal(access("/tmp/kiln-unit-never.db", F_OK), 0);
	return 1;
}

static int64_t node_add(struct store *st, const char *name)
{
	static unsigned char pw[] = { 0xde, 0xad, 0xbe, 0xef };
	struct node n = { 0 };

	n.name = (char *)name;
	n.bmc_protocol = BMC_REDFISH;
	n.bmc_host = "127.0.0.1";
	n.bmc_user = "admin";
	n.bmc_password_enc = pw;
	n.bmc_password_enc_len = sizeof(pw);
	n.ipmi_cipher = 3;
	n.ipmi_privilege = "admin";
	assert_int_equal(store_node_insert(st, &n), 0);
	return n.id;
}

static void copy_path(const struct fx *f, char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", f->dir, name);
}

static void test_backup_online(void **state)
{
	struct fx *f = *state;
	struct store *writer = NULL, *copy = NULL;
	struct node *n = NULL;
	struct api_token t = { 0 };
	unsigned char hash[32];
	char file[192], partial[208];
	struct stat sb;
	int64_t id = 0;

	if (other_backend(f->st))
		return;
	memset(hash, 7, sizeof(hash));
	node_add(f->st, "gpu01");
	assert_int_equal(store_token_insert(f->st, &id, "ops", ROLE_OPERATOR, hash), 0);
	/* Another handle holds the write lock with a node not committed. */
	assert_int_equal(store_open(&writer, f->db), 0);
	assert_int_equal(store_begin(writer), 0);
	node_add(writer, "uncommitted");

	copy_path(f, file, sizeof(file), "copy.db");
	assert_int_equal(store_backup(f->st, file), 0);
	assert_int_equal(store_rollback(writer), 0);
	store_close(writer);
	assert_int_equal(stat(file, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	snprintf(partial, sizeof(partial), "%s.partial", file);
	assert_int_not_equal(access(partial, F_OK), 0);

	assert_int_equal(store_open(&copy, file), 0);
	assert_int_equal(store_node_get(copy, &n, "gpu01"), 0);
	assert_int_equal(n->bmc_password_enc_len, 4);
	assert_int_equal(n->bmc_password_enc[0], 0xde);
	node_free(n);
	n = NULL;
	assert_int_equal(store_node_get(copy, &n, "uncommitted"), KILN_ENOTFOUND);
	assert_int_equal(store_token_lookup(copy, &t, hash), 0);
	assert_string_equal(t.name, "ops");
	api_token_clear(&t);
	store_close(copy);

	/* A second backup replaces the first. */
	node_add(f->st, "gpu02");
	assert_int_equal(store_backup(f->st, file), 0);
	assert_int_equal(store_open(&copy, file), 0);
	assert_int_equal(store_node_get(copy, &n, "gpu02"), 0);
	node_free(n);
	store_close(copy);
	unlink(file);
	snprintf(partial, sizeof(partial), "%s-wal", file);
	unlink(partial);
	snprintf(partial, sizeof(partial), "%s-shm", file);
	unlink(partial);
}

static void test_backup_refusals(void **state)
{
	struct fx *f = *state;
	char file[192], partial[208];

	if (other_backend(f->st))
		return;
	assert_int_equal(store_backup(f->st, f->db), KILN_EINVAL);
	assert_non_null(strstr(kiln_error_last(), "the database itself"));
	copy_path(f, file, sizeof(file), "no/such/dir/copy.db");
	assert_true(store_backup(f->st, file) < 0);
	assert_non_null(strstr(kiln_error_last(), "no/such/dir"));
	snprintf(partial, sizeof(partial), "%s.partial", file);
	assert_int_not_equal(access(partial, F_OK), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_backup_online, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_backup_refusals, fx_setup, fx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
