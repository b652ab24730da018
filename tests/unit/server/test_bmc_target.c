/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for server/bmc/target.c: a stored node to the engine's target, password decrypted
 * with the node name bound, agent-only nodes refused. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "bmc/target.h"
#include "kiln/error.h"

static void key_make(struct secret_key *k)
{
	assert_true(sodium_init() >= 0);
	randombytes_buf(k->key, sizeof(k->key));
}

static void node_fill(struct node *n, struct secret_key *k, const char *ad)
{
	memset(n, 0, sizeof(*n));
	n->id = 42;
	n->name = "gpu07";
	n->bmc_protocol = BMC_REDFISH_HTTP;
	n->bmc_host = "127.0.0.1";
	n->bmc_port = 9001;
	n->bmc_user = "admin";
	n->tls_mode = 0;
	n->ipmi_cipher = 3;
	n->ipmi_privilege = "admin";
	n->bmc_system = "sys0";
	n->credentials_version = 5;
	assert_int_equal(secret_encrypt(&n->bmc_password_enc, &n->bmc_password_enc_len, k,
					"s3cret", ad), 0);
}

static void test_fields_and_password(void **state)
{
	struct secret_key k;
	struct bmc_target t;
	struct node n;
	char *pw = NULL;

	(void)state;
	key_make(&k);
	node_fill(&n, &k, "gpu07");
	assert_int_equal(bmc_target_from_node(&t, &pw, &n, &k), 0);
	assert_string_equal(pw, "s3cret");
	assert_ptr_equal(t.password, pw);
	assert_int_equal(t.node_id, 42);
	assert_string_equal(t.node_name, "gpu07");
	assert_int_equal(t.protocol, BMC_REDFISH_HTTP);
	assert_string_equal(t.host, "127.0.0.1");
	assert_int_equal(t.port, 9001);
	assert_string_equal(t.user, "admin");
	assert_string_equal(t.bmc_system, "sys0");
	assert_int_equal(t.ipmi_cipher, 3);
	assert_int_equal(t.credentials_version, 5);
	secret_free_string(pw);
	free(n.bmc_password_enc);
}

static void test_password_bound_to_name(void **state)
{
	struct secret_key k;
	struct bmc_target t;
	struct node n;
	char *pw = (char *)"untouched";

	(void)state;
	key_make(&k);
	node_fill(&n, &k, "gpu08"); /* encrypted for another node's row */
	assert_true(bmc_target_from_node(&t, &pw, &n, &k) < 0);
	assert_string_equal(pw, "untouched");
	free(n.bmc_password_enc);
}

static void test_no_password(void **state)
{
	struct secret_key k;
	struct bmc_target t;
	struct node n;
	char *pw = (char *)"untouched";

	(void)state;
	key_make(&k);
	node_fill(&n, &k, "gpu07");
	free(n.bmc_password_enc);
	n.bmc_password_enc = NULL;
	n.bmc_password_enc_len = 0;
	assert_int_equal(bmc_target_from_node(&t, &pw, &n, &k), 0);
	assert_null(pw);
	assert_null(t.password);
}

static void test_agent_only(void **state)
{
	struct secret_key k;
	struct bmc_target t;
	struct node n;
	char *pw = NULL;

	(void)state;
	key_make(&k);
	memset(&n, 0, sizeof(n));
	n.name = "agent01";
	n.bmc_protocol = BMC_NONE;
	assert_int_equal(bmc_target_from_node(&t, &pw, &n, &k), KILN_ENOTFOUND);
	assert_string_equal(kiln_error_last(), "no BMC");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fields_and_password),
		cmocka_unit_test(test_password_bound_to_name),
		cmocka_unit_test(test_no_password),
		cmocka_unit_test(test_agent_only),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
