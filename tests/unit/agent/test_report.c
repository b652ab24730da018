/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for agent/report.c: ids, the report's shape without a driver, Xids tied to GPUs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nvml.h"
#include "report.h"
#include "xid.h"

#define ROOTS KILN_TEST_DATA "/fixtures/agent/roots"

static void test_report_id(void **state)
{
	char a[33], b[33];
	size_t i;

	(void)state;
	assert_int_equal(report_id_generate(a), 0);
	assert_int_equal(report_id_generate(b), 0);
	assert_int_equal(strlen(a), 32);
	for (i = 0; i < 32; i++)
		assert_non_null(strchr("0123456789abcdef", a[i]));
	assert_string_not_equal(a, b);
}

static void test_report_no_driver(void **state)
{
	struct report_ctx ctx = { 0 };
	json_t *r = NULL, *r2 = NULL;

	(void)state;
	ctx.root = ROOTS "/old";
	ctx.interval_s = 30;
	assert_int_equal(nvml_open(&ctx.nvml, "/nonexistent/libnvidia-ml.so.1", 1), 0);
	assert_int_equal(xid_reader_open(&ctx.xid, ctx.root), 0);
	assert_int_equal(report_build(&r, &ctx), 0);
	assert_string_equal(json_string_value(json_object_get(r, "schema")), REPORT_SCHEMA);
	assert_string_equal(json_string_value(json_object_get(json_object_get(r, "nvidia"), "status")),
			    "no_driver");
	/* the module is loaded even though the library is missing */
	assert_string_equal(json_string_value(json_object_get(json_object_get(r, "nvidia"),
							      "kernel_module_version")), "470.239.06");
	assert_string_equal(json_string_value(json_object_get(json_object_get(r, "host"), "hostname")),
			    "gpu-k80-03");
	assert_int_equal(json_array_size(json_object_get(r, "xid_events")), 3);
	assert_null(json_object_get(json_array_get(json_object_get(r, "xid_events"), 0), "gpu_index"));
	assert_string_equal(json_string_value(json_object_get(r, "cudnn_version")), "7.6.5");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "agent"), "seq")), 1);

	/* the next report has a new id and only new Xids */
	assert_int_equal(report_build(&r2, &ctx), 0);
	assert_string_not_equal(json_string_value(json_object_get(r, "report_id")),
				json_string_value(json_object_get(r2, "report_id")));
	assert_int_equal(json_array_size(json_object_get(r2, "xid_events")), 0);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(r2, "agent"), "seq")), 2);
	json_decref(r);
	json_decref(r2);
	xid_reader_close(ctx.xid);
	nvml_close(ctx.nvml);
}

static void test_report_without_kmsg(void **state)
{
	struct report_ctx ctx = { 0 };
	json_t *r = NULL;

	(void)state;
	ctx.root = ROOTS "/no-such-root";
	ctx.xid_error = "no /dev/kmsg";
	assert_int_equal(nvml_open(&ctx.nvml, "/nonexistent/libnvidia-ml.so.1", 1), 0);
	assert_int_equal(report_build(&r, &ctx), 0);
	assert_string_equal(json_string_value(json_object_get(json_object_get(r, "agent"), "kmsg_error")),
			    "no /dev/kmsg");
	assert_true(json_is_null(json_object_get(r, "cudnn_version")));
	assert_int_equal(json_object_size(json_object_get(r, "host")), 0);
	json_decref(r);
	nvml_close(ctx.nvml);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_report_id),
		cmocka_unit_test(test_report_no_driver),
		cmocka_unit_test(test_report_without_kmsg),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
