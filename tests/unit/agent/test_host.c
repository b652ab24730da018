/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for agent/host.c against the fixture roots and os-release files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "host.h"
#include "rootfs.h"

#define ROOTS KILN_TEST_DATA "/fixtures/agent/roots"

static const char *str(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static long long num(json_t *o, const char *k)
{
	return json_integer_value(json_object_get(o, k));
}

static void test_host_h100(void **state)
{
	struct host_state st = { 0 };
	json_t *h = NULL;

	(void)state;
	assert_int_equal(host_collect(&h, &st, ROOTS "/h100"), 0);
	assert_string_equal(str(h, "hostname"), "gpu-h100-07");
	assert_string_equal(str(h, "machine_id"), "5f0c6e2a9b4d4e1f8a7c3b2d1e0f9a8b");
	assert_string_equal(str(h, "boot_id"), "0d6a1c2e-3f4b-4a5c-8d9e-0f1a2b3c4d5e");
	assert_string_equal(str(h, "os"), "Ubuntu 22.04.4 LTS");
	assert_string_equal(str(h, "os_id"), "ubuntu");
	assert_string_equal(str(h, "os_version_id"), "22.04");
	assert_string_equal(str(h, "kernel"), "5.15.0-105-generic");
	assert_string_equal(str(h, "dmi_serial"), "SN7X4K2Q19");
	assert_string_equal(str(h, "dmi_product"), "PowerEdge XE9680");
	assert_string_equal(str(h, "dmi_vendor"), "Dell Inc.");
	assert_string_equal(str(h, "cpu_model"), "Intel(R) Xeon(R) Platinum 8480+");
	assert_int_equal(num(h, "cpu_sockets"), 2);
	assert_int_equal(num(h, "cpu_cores"), 8);
	assert_int_equal(num(h, "cpu_threads"), 16);
	assert_int_equal(num(h, "memory_total_bytes"), 2113474560LL * 1024);
	assert_int_equal(num(h, "memory_available_bytes"), 2013474560LL * 1024);
	assert_int_equal(num(h, "uptime_s"), 864123);
	assert_true(json_real_value(json_array_get(json_object_get(h, "load"), 0)) == 1.3);
	/* /proc/stat: iowait 500000 of 9812000 since boot */
	assert_true(json_real_value(json_object_get(h, "cpu_iowait_pct")) > 5.09 &&
		    json_real_value(json_object_get(h, "cpu_iowait_pct")) < 5.1);
	assert_int_equal(st.cpu_iowait, 500000);
	json_decref(h);
}

/* The second sample covers only the time since the first. */
static void test_host_iowait_delta(void **state)
{
	struct host_state st = { .cpu_total = 9812000 - 1000, .cpu_iowait = 500000 - 500 };
	json_t *h = NULL;

	(void)state;
	assert_int_equal(host_collect(&h, &st, ROOTS "/h100"), 0);
	assert_true(json_real_value(json_object_get(h, "cpu_iowait_pct")) == 50.0);
	json_decref(h);
}

static void test_host_missing_files(void **state)
{
	json_t *h = NULL;

	(void)state;
	assert_int_equal(host_collect(&h, NULL, KILN_TEST_DATA "/fixtures/agent/no-such-root"), 0);
	assert_int_equal(json_object_size(h), 0);
	json_decref(h);
}

static void test_disks(void **state)
{
	json_t *d = NULL, *x;

	(void)state;
	assert_int_equal(host_disks_collect(&d, ROOTS "/consumer"), 0);
	assert_int_equal(json_array_size(d), 2); /* dm-0 has no device/ and is skipped */
	x = json_array_get(d, 0);
	assert_string_equal(str(x, "name"), "nvme0n1");
	assert_string_equal(str(x, "model"), "Samsung SSD 990 PRO 2TB");
	assert_int_equal(num(x, "size_bytes"), 3907029168LL * 512);
	assert_true(json_is_false(json_object_get(x, "rotational")));
	assert_true(json_is_true(json_object_get(x, "nvme")));
	x = json_array_get(d, 1);
	assert_string_equal(str(x, "name"), "sda");
	assert_true(json_is_true(json_object_get(x, "rotational")));
	assert_true(json_is_false(json_object_get(x, "nvme")));
	json_decref(d);

	assert_int_equal(host_disks_collect(&d, ROOTS "/h100"), 0);
	assert_int_equal(json_array_size(d), 2); /* loop0 skipped */
	assert_string_equal(str(json_array_get(d, 0), "serial"), "S6EXNA0T612345");
	assert_string_equal(str(json_array_get(d, 0), "model"), "SAMSUNG MZ1L23T8HBLA-00A07");
	json_decref(d);

	assert_int_equal(host_disks_collect(&d, KILN_TEST_DATA "/fixtures/agent/no-such-root"), 0);
	assert_int_equal(json_array_size(d), 0);
	json_decref(d);
}

static void test_os_release_files(void **state)
{
	static const struct {
		const char *file, *pretty, *id, *version_id;
	} cases[] = {
		{ "debian12", "Debian GNU/Linux 12 (bookworm)", "debian", "12" },
		{ "rhel9", "Red Hat Enterprise Linux 9.4 (Plow)", "rhel", "9.4" },
		{ "sles15", "SUSE Linux Enterprise Server 15 SP5", "sles", "15.5" },
		{ "no-pretty", "Alpine 3.19.1", "alpine", NULL },
		{ "escaped", "Example \"Quoted\" OS 1.0", "example", "1.0" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char path[256], *text = NULL, *p = NULL, *id = NULL, *v = NULL;

		snprintf(path, sizeof path, "/os-release/%s", cases[i].file);
		assert_int_equal(rootfs_read(&text, NULL, KILN_TEST_DATA "/fixtures/agent", path, 65536), 0);
		assert_int_equal(host_os_release_parse(&p, &id, &v, text), 0);
		assert_string_equal(p, cases[i].pretty);
		assert_string_equal(id, cases[i].id);
		if (cases[i].version_id)
			assert_string_equal(v, cases[i].version_id);
		else
			assert_null(v);
		free(text);
		free(p);
		free(id);
		free(v);
	}
}

static void test_rootfs_resolve(void **state)
{
	char out[256];

	(void)state;
	/* relative link */
	assert_int_equal(rootfs_resolve(out, sizeof out, ROOTS "/h100", "/usr/local/cuda"), 0);
	assert_string_equal(out, "/usr/local/cuda-12.4");
	/* absolute links through /etc/alternatives stay inside the root */
	assert_int_equal(rootfs_resolve(out, sizeof out, ROOTS "/consumer", "/usr/local/cuda"), 0);
	assert_string_equal(out, "/usr/local/cuda-12.6");
	assert_int_equal(rootfs_resolve(out, sizeof out, ROOTS "/nodriver", "/usr/local/cuda"), -2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_host_h100),
		cmocka_unit_test(test_host_iowait_delta),
		cmocka_unit_test(test_host_missing_files),
		cmocka_unit_test(test_disks),
		cmocka_unit_test(test_os_release_files),
		cmocka_unit_test(test_rootfs_resolve),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
