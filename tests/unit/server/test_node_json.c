/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for server/api/node_json.c: building nodes from API bodies, patching, showing them. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "api/node_json.h"
#include "kiln/error.h"

static struct secret_key key;

static json_t *parse(const char *text)
{
	json_error_t e;
	json_t *v = json_loads(text, 0, &e);

	if (!v)
		fail_msg("bad test JSON %s: %s", text, e.text);
	return v;
}

static struct node *create(const char *text)
{
	json_t *o = parse(text);
	struct node *n = NULL;
	const char *field = NULL;

	if (node_json_create(&n, o, &key, &field) != 0)
		fail_msg("create %s: %s (field %s)", text, kiln_error_last(), field ? field : "-");
	json_decref(o);
	return n;
}

static void test_create_defaults(void **state)
{
	struct node *n = create("{\"name\":\"vm01\"}");
	json_t *j;

	(void)state;
	assert_int_equal(n->bmc_protocol, BMC_NONE);
	assert_int_equal(n->tls_mode, TLS_VERIFY);
	assert_int_equal(n->ipmi_cipher, 3);
	assert_string_equal(n->ipmi_privilege, "admin");
	j = node_json_from(n);
	assert_true(json_is_null(json_object_get(j, "bmc")));
	assert_true(json_is_false(json_object_get(j, "has_bmc_password")));
	assert_int_equal(json_array_size(json_object_get(j, "groups")), 0);
	json_decref(j);
	node_free(n);
}

static void test_urls(void **state)
{
	static const struct {
		const char *in, *out;
		enum node_bmc_protocol proto;
		int port;
	} cases[] = {
		{ "redfish://bmc1.example", "redfish://bmc1.example:443", BMC_REDFISH, 0 },
		{ "redfish://10.0.0.5:8443", "redfish://10.0.0.5:8443", BMC_REDFISH, 8443 },
		{ "redfish+http://127.0.0.1:20001", "redfish+http://127.0.0.1:20001",
		  BMC_REDFISH_HTTP, 20001 },
		{ "ipmi://10.0.0.6", "ipmi://10.0.0.6:623", BMC_IPMI, 0 },
		{ "ipmi://[fd00::6]:1623", "ipmi://[fd00::6]:1623", BMC_IPMI, 1623 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char text[256];
		struct node *n;
		json_t *j;

		snprintf(text, sizeof(text), "{\"name\":\"n1\",\"bmc\":\"%s\"}", cases[i].in);
		n = create(text);
		assert_int_equal(n->bmc_protocol, cases[i].proto);
		assert_int_equal(n->bmc_port, cases[i].port);
		j = node_json_from(n);
		assert_string_equal(json_string_value(json_object_get(j, "bmc")), cases[i].out);
		json_decref(j);
		node_free(n);
	}
}

static void test_refused(void **state)
{
	static const struct {
		const char *body, *field;
	} cases[] = {
		{ "{\"rack\":\"r1\"}", "name" },
		{ "{\"name\":\"a b\"}", "name" },
		{ "{\"name\":\"n1\",\"bogus\":1}", "bogus" },
		{ "{\"name\":\"n1\",\"bmc\":\"redfish://\"}", "bmc" },
		{ "{\"name\":\"n1\",\"bmc\":\"redfish://h:0\"}", "bmc" },
		{ "{\"name\":\"n1\",\"bmc\":\"redfish://[nothex]\"}", "bmc" },
		{ "{\"name\":\"n1\",\"bmc\":\"ipmi://h:623x\"}", "bmc" },
		{ "{\"name\":\"n1\",\"ipmi_cipher\":18}", "ipmi_cipher" },
		{ "{\"name\":\"n1\",\"ipmi_cipher\":2.5}", "ipmi_cipher" },
		{ "{\"name\":\"n1\",\"ipmi_workarounds\":\"opensesspriv,\"}", "ipmi_workarounds" },
		{ "{\"name\":\"n1\",\"bmc_password\":\"pw\"}", "bmc_password" },
		{ "{\"name\":\"n1\",\"bmc\":\"redfish://h\",\"bmc_password\":\"\"}", "bmc_password" },
		{ "{\"name\":\"n1\",\"bmc\":\"redfish://h\",\"tls\":\"fingerprint\"}",
		  "tls_fingerprint" },
		{ "{\"name\":\"n1\",\"bmc\":\"redfish://h\",\"tls_ca_file\":\"/ca.pem\","
		  "\"tls_fingerprint\":\"" "0123456789abcdef0123456789abcdef"
		  "0123456789abcdef0123456789abcdef\"}", "tls" },
		{ "{\"name\":\"n1\",\"bmc_system\":\"a/b\"}", "bmc_system" },
		{ "{\"name\":\"n1\",\"sol\":\"ipmi://h:99999\"}", "sol" },
		{ "{\"name\":\"n1\",\"groups\":[\"g\",7]}", "groups" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *o = parse(cases[i].body);
		struct node *n = NULL;
		const char *field = NULL;
		int rc = node_json_create(&n, o, &key, &field);

		if (rc != KILN_EINVAL || !field || strcmp(field, cases[i].field) != 0)
			fail_msg("case %zu %s: rc %d field %s, want %s", i, cases[i].body, rc,
				 field ? field : "(none)", cases[i].field);
		assert_null(n);
		json_decref(o);
	}
}

static void test_password_encrypted_and_hidden(void **state)
{
	struct node *n = create("{\"name\":\"gpu01\",\"bmc\":\"redfish://h\",\"bmc_user\":\"root\","
				"\"bmc_password\":\"s3cret\"}");
	char *plain = NULL, *text;
	json_t *j;

	(void)state;
	assert_non_null(n->bmc_password_enc);
	assert_null(memmem(n->bmc_password_enc, n->bmc_password_enc_len, "s3cret", 6));
	/* Bound to the node's name. */
	assert_int_equal(secret_decrypt(&plain, &key, n->bmc_password_enc,
					n->bmc_password_enc_len, "gpu01"),
			 0);
	assert_string_equal(plain, "s3cret");
	secret_free_string(plain);
	plain = NULL;
	assert_true(secret_decrypt(&plain, &key, n->bmc_password_enc, n->bmc_password_enc_len,
				   "gpu02") < 0);
	j = node_json_from(n);
	text = json_dumps(j, 0);
	assert_null(strstr(text, "s3cret"));
	assert_true(json_is_true(json_object_get(j, "has_bmc_password")));
	free(text);
	json_decref(j);
	node_free(n);
}

static void test_patch(void **state)
{
	struct node *n = create("{\"name\":\"gpu01\",\"bmc\":\"redfish://h\",\"bmc_user\":\"root\","
				"\"bmc_password\":\"s3cret\",\"rack\":\"r1\",\"tls\":\"ca\","
				"\"tls_ca_file\":\"/etc/ca.pem\"}");
	const char *field = NULL;
	char *plain = NULL;
	json_t *o;

	(void)state;
	assert_int_equal(n->tls_mode, TLS_CA);
	/* Rename: the password follows, re-encrypted for the new name. */
	o = parse("{\"name\":\"gpu09\",\"rack\":null,\"tls\":\"insecure\"}");
	assert_int_equal(node_json_patch(n, o, &key, &field), 0);
	json_decref(o);
	assert_string_equal(n->name, "gpu09");
	assert_null(n->rack);
	assert_int_equal(n->tls_mode, TLS_INSECURE);
	assert_null(n->tls_ca_file);
	assert_int_equal(secret_decrypt(&plain, &key, n->bmc_password_enc,
					n->bmc_password_enc_len, "gpu09"),
			 0);
	assert_string_equal(plain, "s3cret");
	secret_free_string(plain);
	/* Pinning a fingerprint alone selects the fingerprint mode. */
	o = parse("{\"tls_fingerprint\":\"sha256:AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89:"
		  "AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89\"}");
	assert_int_equal(node_json_patch(n, o, &key, &field), 0);
	json_decref(o);
	assert_int_equal(n->tls_mode, TLS_FINGERPRINT);
	assert_string_equal(n->tls_fingerprint,
			    "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789");
	/* Dropping the BMC drops its credentials. */
	o = parse("{\"bmc\":null}");
	assert_int_equal(node_json_patch(n, o, &key, &field), 0);
	json_decref(o);
	assert_int_equal(n->bmc_protocol, BMC_NONE);
	assert_null(n->bmc_user);
	assert_null(n->bmc_password_enc);
	node_free(n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_defaults),
		cmocka_unit_test(test_urls),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_password_encrypted_and_hidden),
		cmocka_unit_test(test_patch),
	};

	memset(&key, 0x5a, sizeof(key));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
