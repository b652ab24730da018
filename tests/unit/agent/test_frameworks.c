/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for agent/frameworks.c: the frameworks of fixture site-packages trees
 * (tests/fixtures/agent/site-packages, one environment per kind), and the parsers. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frameworks.h"

#define ROOT KILN_TEST_DATA "/fixtures/agent/site-packages"

static void test_py_assign(void **state)
{
	char v[64];

	(void)state;
	assert_int_equal(frameworks_py_assign(v, sizeof(v), "__version__ = '2.3.1+cu121'\n",
					      "__version__"), 0);
	assert_string_equal(v, "2.3.1+cu121");
	assert_int_equal(frameworks_py_assign(v, sizeof(v), "x = 1\ncuda: Optional[str] = \"12.4\"\n",
					      "cuda"), 0);
	assert_string_equal(v, "12.4");
	/* a CPU build, a comparison, another name that starts the same, no quote's end */
	assert_int_not_equal(frameworks_py_assign(v, sizeof(v), "cuda = None\n", "cuda"), 0);
	assert_int_not_equal(frameworks_py_assign(v, sizeof(v), "cuda == '1'\n", "cuda"), 0);
	assert_int_not_equal(frameworks_py_assign(v, sizeof(v), "cudart = '1'\n", "cuda"), 0);
	assert_int_not_equal(frameworks_py_assign(v, sizeof(v), "cuda = '12.1\n", "cuda"), 0);
	assert_int_equal(frameworks_py_dict(v, sizeof(v), "{'cuda_version': '12.2', 'x': 1}",
					    "cuda_version"), 0);
	assert_string_equal(v, "12.2");
	assert_int_equal(frameworks_py_dict(v, sizeof(v), "{\"cudnn_version\" : \"9\"}",
					    "cudnn_version"), 0);
	assert_string_equal(v, "9");
	assert_int_not_equal(frameworks_py_dict(v, sizeof(v), "{'cuda_version': None}",
						"cuda_version"), 0);
}

/* The entry of framework in env (a suffix of its path), or NULL. */
static const json_t *find(const json_t *arr, const char *env_end, const char *framework)
{
	size_t i;
	const json_t *o;

	json_array_foreach(arr, i, o) {
		const char *env = json_string_value(json_object_get(o, "env"));
		const char *fw = json_string_value(json_object_get(o, "framework"));

		if (env && fw && strcmp(fw, framework) == 0 && strlen(env) >= strlen(env_end) &&
		    strcmp(env + strlen(env) - strlen(env_end), env_end) == 0)
			return o;
	}
	return NULL;
}

static void is(const json_t *o, const char *key, const char *want)
{
	const char *got = json_string_value(json_object_get(o, key));

	if (!o)
		fail_msg("entry missing (%s %s)", key, want ? want : "null");
	if (!want && got)
		fail_msg("%s: got '%s', want none", key, got);
	if (want && (!got || strcmp(got, want) != 0))
		fail_msg("%s: got '%s', want '%s'", key, got ? got : "(none)", want);
}

static void test_collect(void **state)
{
	json_t *arr = NULL;
	const json_t *o;
	char *text;

	(void)state;
	assert_int_equal(frameworks_collect(&arr, ROOT, "/srv/venvs/*/lib/python3*/site-packages"),
			 0);
	text = json_dumps(arr, JSON_COMPACT);
	/* env (a suffix of its path), framework, version, cuda, cudnn */
	static const struct {
		const char *env, *framework, *version, *cuda, *cudnn;
	} want[] = {
		/* a conda env with PyTorch and NVIDIA's wheels */
		{ "/opt/conda/envs/train/lib/python3.11/site-packages", "torch", "2.3.1+cu121", "12.1",
		  NULL },
		{ "/envs/train/lib/python3.11/site-packages", "nvidia-cudnn", "8.9.2.26", "12", NULL },
		{ "/envs/train/lib/python3.11/site-packages", "nvidia-cuda-runtime", "12.1.105", "12.1",
		  NULL },
		/* TensorFlow: its version from the dist-info, CUDA and cuDNN from build_info.py */
		{ "/envs/tf/lib/python3.10/site-packages", "tensorflow", "2.15.0", "12.2", "8" },
		/* JAX: jaxlib and its CUDA 12 plugin */
		{ "/usr/local/lib/python3.11/dist-packages", "jaxlib", "0.4.28", "12", NULL },
		/* a CPU build of PyTorch: no CUDA */
		{ "/usr/lib/python3/dist-packages", "torch", "2.1.0+cpu", NULL, NULL },
		/* an environment from the agent's --site-packages */
		{ "/srv/venvs/old/lib/python3.9/site-packages", "torch", "1.13.1+cu117", "11.7", NULL },
	};

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		o = find(arr, want[i].env, want[i].framework);
		is(o, "version", want[i].version);
		is(o, "cuda", want[i].cuda);
		is(o, "cudnn", want[i].cudnn);
	}
	/* the environment as the node sees it, without the root */
	is(find(arr, "/train/lib/python3.11/site-packages", "torch"), "env",
	   "/opt/conda/envs/train/lib/python3.11/site-packages");
	if (json_array_size(arr) != 7)
		fail_msg("%zu entries: %s", json_array_size(arr), text);
	free(text);
	json_decref(arr);
	/* without the extra path the venv is not looked at; a root without Python: none */
	assert_int_equal(frameworks_collect(&arr, ROOT, NULL), 0);
	assert_int_equal(json_array_size(arr), 6);
	json_decref(arr);
	assert_int_equal(frameworks_collect(&arr, KILN_TEST_DATA "/fixtures/agent/roots/h100", NULL),
			 0);
	assert_int_equal(json_array_size(arr), 0);
	json_decref(arr);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_py_assign),
		cmocka_unit_test(test_collect),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
