/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for agent/versions.c: kernel module, CUDA toolkits, cuDNN, fabric manager. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kiln/error.h"
#include "rootfs.h"
#include "versions.h"

#define FIX KILN_TEST_DATA "/fixtures/agent"
#define ROOTS FIX "/roots"

static void test_kernel_module_files(void **state)
{
	static const struct {
		const char *file, *version;
		int open;
	} cases[] = {
		{ "proprietary", "550.54.15", 0 },
		{ "open", "560.35.03", 1 },
		{ "aarch64", "550.90.07", 1 },
	};
	char ver[64], *text = NULL, path[128];
	size_t i;
	int open_module = -1;

	(void)state;
	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		snprintf(path, sizeof path, "/nvidia-version/%s", cases[i].file);
		assert_int_equal(rootfs_read(&text, NULL, FIX, path, 8192), 0);
		assert_int_equal(versions_kernel_module_parse(ver, sizeof ver, &open_module, text), 0);
		assert_string_equal(ver, cases[i].version);
		assert_int_equal(open_module, cases[i].open);
		free(text);
	}
	assert_int_equal(rootfs_read(&text, NULL, FIX, "/nvidia-version/garbage", 8192), 0);
	assert_int_equal(versions_kernel_module_parse(ver, sizeof ver, &open_module, text), KILN_EINVAL);
	free(text);
	assert_int_equal(versions_kernel_module_parse(ver, sizeof ver, &open_module, ""), KILN_EINVAL);
	assert_int_equal(versions_kernel_module_parse(ver, sizeof ver, &open_module,
		"NVRM version: NVIDIA UNIX x86_64 Kernel Module   Tue Mar 5\n"), KILN_EINVAL);
}

static void test_kernel_module_collect(void **state)
{
	json_t *n = json_object();

	(void)state;
	versions_kernel_module_collect(n, ROOTS "/consumer");
	assert_string_equal(json_string_value(json_object_get(n, "kernel_module_version")), "560.35.03");
	assert_string_equal(json_string_value(json_object_get(n, "kernel_module_type")), "open");
	json_object_clear(n);
	versions_kernel_module_collect(n, ROOTS "/nodriver");
	assert_int_equal(json_object_size(n), 0);
	json_decref(n);
}

static void test_cuda_parsers(void **state)
{
	char ver[32];

	(void)state;
	assert_int_equal(versions_cuda_json_parse(ver, sizeof ver, "{\"cuda\":{\"version\":\"12.4.1\"}}"), 0);
	assert_string_equal(ver, "12.4.1");
	assert_int_equal(versions_cuda_json_parse(ver, sizeof ver, "{\"cuda\":{}}"), KILN_EINVAL);
	assert_int_equal(versions_cuda_json_parse(ver, sizeof ver, "not json"), KILN_EINVAL);
	assert_int_equal(versions_cuda_json_parse(ver, sizeof ver, "{\"cuda\":{\"version\":\"x\"}}"), KILN_EINVAL);
	assert_int_equal(versions_cuda_txt_parse(ver, sizeof ver, "CUDA Version 10.2.89\n"), 0);
	assert_string_equal(ver, "10.2.89");
	assert_int_equal(versions_cuda_txt_parse(ver, sizeof ver, "CUDA Version \n"), KILN_EINVAL);
	assert_int_equal(versions_cuda_txt_parse(ver, sizeof ver, "hello"), KILN_EINVAL);
}

static void test_cuda_collect(void **state)
{
	json_t *t = NULL;
	char *s;

	(void)state;
	assert_int_equal(versions_cuda_collect(&t, ROOTS "/h100"), 0);
	s = json_dumps(t, JSON_COMPACT);
	assert_string_equal(s, "[{\"version\":\"12.2.2\",\"path\":\"/usr/local/cuda-12.2\",\"default\":false},"
			       "{\"version\":\"12.4.1\",\"path\":\"/usr/local/cuda-12.4\",\"default\":true}]");
	free(s);
	json_decref(t);
	/* version.txt, a leftover empty folder, the link absolute */
	assert_int_equal(versions_cuda_collect(&t, ROOTS "/old"), 0);
	s = json_dumps(t, JSON_COMPACT);
	assert_string_equal(s, "[{\"version\":\"10.2.89\",\"path\":\"/usr/local/cuda-10.2\",\"default\":true},"
			       "{\"version\":\"11.0.207\",\"path\":\"/usr/local/cuda-11.0\",\"default\":false}]");
	free(s);
	json_decref(t);
	assert_int_equal(versions_cuda_collect(&t, ROOTS "/nodriver"), 0);
	assert_int_equal(json_array_size(t), 0);
	json_decref(t);
}

static void test_cudnn(void **state)
{
	char ver[32];
	json_t *tk = NULL, *c = NULL;

	(void)state;
	assert_int_equal(versions_cudnn_parse(ver, sizeof ver,
		"#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 1\n#define CUDNN_PATCHLEVEL 0\n"), 0);
	assert_string_equal(ver, "9.1.0");
	assert_int_equal(versions_cudnn_parse(ver, sizeof ver, "#define CUDNN_MAJOR 9\n"), KILN_EINVAL);
	/* CUDNN_MAJOR_X must not be read as CUDNN_MAJOR */
	assert_int_equal(versions_cudnn_parse(ver, sizeof ver,
		"#define CUDNN_MAJOR_X 1\n#define CUDNN_MAJOR 8\n#define CUDNN_MINOR 2\n"), 0);
	assert_string_equal(ver, "8.2.0");

	assert_int_equal(versions_cuda_collect(&tk, ROOTS "/consumer"), 0);
	assert_int_equal(versions_cudnn_collect(&c, ROOTS "/consumer", tk), 0);
	/* found through /usr/local/cuda/include and the toolkit's include: reported once */
	assert_int_equal(json_array_size(c), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(c, 0), "version")), "9.3.0");
	assert_null(json_object_get(json_array_get(c, 0), "resolved"));
	json_decref(c);
	json_decref(tk);
	assert_int_equal(versions_cudnn_collect(&c, ROOTS "/old", NULL), 0);
	assert_string_equal(json_string_value(json_object_get(json_array_get(c, 0), "path")),
			    "/usr/include/cudnn.h");
	json_decref(c);
}

static void test_fabric_manager(void **state)
{
	struct versions_fm_cache cache = { 0 };
	json_t *n = json_object();

	(void)state;
	versions_fabric_manager_collect(n, &cache, ROOTS "/h100");
	assert_string_equal(json_string_value(json_object_get(n, "fabric_manager_version")), "550.54.15");
	assert_true(cache.valid);
	json_object_clear(n);
	versions_fabric_manager_collect(n, &cache, ROOTS "/h100"); /* from the cache */
	assert_string_equal(json_string_value(json_object_get(n, "fabric_manager_version")), "550.54.15");
	json_object_clear(n);
	memset(&cache, 0, sizeof cache);
	versions_fabric_manager_collect(n, &cache, ROOTS "/consumer");
	assert_null(json_object_get(n, "fabric_manager_version"));
	json_decref(n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kernel_module_files),
		cmocka_unit_test(test_kernel_module_collect),
		cmocka_unit_test(test_cuda_parsers),
		cmocka_unit_test(test_cuda_collect),
		cmocka_unit_test(test_cudnn),
		cmocka_unit_test(test_fabric_manager),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
