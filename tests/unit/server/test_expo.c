/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for server/metrics/expo.c: label escaping, HELP/TYPE once per family, no duplicate
 * series, names and values as the text format 0.0.4 writes them. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kiln/error.h"
#include "metrics/expo.h"

static void test_label_escape(void **state)
{
	static const struct {
		const char *in, *out;
	} vectors[] = {
		{ "", "" },
		{ "gpu01", "gpu01" },
		{ "a\"b", "a\\\"b" },
		{ "back\\slash", "back\\\\slash" },
		{ "two\nlines", "two\\nlines" },
		{ "\"\\\n", "\\\"\\\\\\n" },
		{ "tab\tstays", "tab\tstays" },
		{ "ünïcode", "ünïcode" },
	};
	struct kiln_buf b;

	(void)state;
	for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
		kiln_buf_init(&b, 0);
		assert_int_equal(expo_label_escape(&b, vectors[i].in), 0);
		assert_string_equal(b.data ? b.data : "", vectors[i].out);
		kiln_buf_free(&b);
	}
}

static void test_family_and_samples(void **state)
{
	const char *l1[] = { "node", "gpu01", "rack", "r1", NULL };
	const char *l2[] = { "node", "gpu\"02\n", "rack", NULL, NULL };
	struct expo_family *power, *watts, *x, *info, *empty;
	struct expo e;

	(void)state;
	expo_init(&e, 0);
	assert_int_equal(expo_family(&e, &power, "kiln_node_power_on", EXPO_GAUGE,
				     "1 when on.\nback\\slash"), 0);
	assert_int_equal(expo_family(&e, &watts, "kiln_gpu_power_watts", EXPO_GAUGE, "Watts."), 0);
	assert_int_equal(expo_family(&e, &x, "kiln_x_total", EXPO_COUNTER, "X."), 0);
	assert_int_equal(expo_family(&e, &info, "kiln_build_info", EXPO_INFO, "Build."), 0);
	assert_int_equal(expo_family(&e, &empty, "kiln_empty", EXPO_GAUGE, "None."), 0);
	/* samples in any order: each family's lines come out together, after its HELP/TYPE */
	assert_int_equal(expo_sample(power, NULL, l1, 1), 0);
	assert_int_equal(expo_sample(watts, NULL, l1, 612.345), 0);
	assert_int_equal(expo_sample(power, NULL, l2, 0), 0);
	assert_int_equal(expo_sample(info, NULL, l1, 1), 0);
	assert_int_equal(expo_sample(watts, NULL, NULL, NAN), 0);
	assert_int_equal(expo_sample(x, NULL, NULL, 85520809984.0), 0);
	assert_int_equal(expo_finish(&e), 0);
	assert_string_equal(e.out.data,
			    "# HELP kiln_node_power_on 1 when on.\\nback\\\\slash\n"
			    "# TYPE kiln_node_power_on gauge\n"
			    "kiln_node_power_on{node=\"gpu01\",rack=\"r1\"} 1\n"
			    "kiln_node_power_on{node=\"gpu\\\"02\\n\"} 0\n"
			    "# HELP kiln_gpu_power_watts Watts.\n"
			    "# TYPE kiln_gpu_power_watts gauge\n"
			    "kiln_gpu_power_watts{node=\"gpu01\",rack=\"r1\"} 612.345\n"
			    "kiln_gpu_power_watts NaN\n"
			    "# HELP kiln_x_total X.\n"
			    "# TYPE kiln_x_total counter\n"
			    "kiln_x_total 85520809984\n"
			    "# HELP kiln_build_info Build.\n"
			    "# TYPE kiln_build_info gauge\n"
			    "kiln_build_info{node=\"gpu01\",rack=\"r1\"} 1\n"
			    "# HELP kiln_empty None.\n"
			    "# TYPE kiln_empty gauge\n");
	assert_int_equal(e.series, 6);
	expo_free(&e);
}

static void test_family_once(void **state)
{
	struct expo_family *a, *b, *again = NULL;
	struct expo e;

	(void)state;
	expo_init(&e, 0);
	assert_int_equal(expo_family(&e, &a, "kiln_a", EXPO_GAUGE, "A."), 0);
	assert_int_equal(expo_family(&e, &b, "kiln_b", EXPO_GAUGE, "B."), 0);
	/* a family declared again: refused, its HELP and TYPE are written once */
	assert_int_equal(expo_family(&e, &again, "kiln_a", EXPO_GAUGE, "A."), KILN_EEXISTS);
	assert_null(again);
	assert_non_null(strstr(kiln_error_last(), "twice"));
	assert_int_equal(expo_finish(&e), 0);
	assert_non_null(strstr(e.out.data, "# TYPE kiln_a gauge"));
	assert_null(strstr(strstr(e.out.data, "# TYPE kiln_a") + 1, "# TYPE kiln_a"));
	assert_null(strstr(strstr(e.out.data, "# HELP kiln_a") + 1, "# HELP kiln_a"));
	expo_free(&e);
}

static void test_no_duplicate_series(void **state)
{
	const char *a[] = { "node", "n1", "gpu", "0", NULL };
	const char *same[] = { "node", "n1", "gpu", "0", NULL };
	const char *b[] = { "node", "n1", "gpu", "1", NULL };
	/* the separator keeps "n1"+"0" apart from "n10"+"" */
	const char *c[] = { "node", "n10", "gpu", NULL, NULL };
	const char *d[] = { "node", "n", "gpu", "10", NULL };
	struct expo_family *t, *p, *many;
	struct expo e;
	size_t len;

	(void)state;
	expo_init(&e, 0);
	assert_int_equal(expo_family(&e, &t, "kiln_gpu_temperature_celsius", EXPO_GAUGE, "T."), 0);
	assert_int_equal(expo_family(&e, &p, "kiln_gpu_power_watts", EXPO_GAUGE, "P."), 0);
	assert_int_equal(expo_family(&e, &many, "kiln_many", EXPO_GAUGE, "M."), 0);
	assert_int_equal(expo_sample(t, NULL, a, 41), 0);
	len = t->text.len;
	assert_int_equal(expo_sample(t, NULL, same, 42), KILN_EEXISTS);
	assert_int_equal(t->text.len, len); /* nothing written */
	assert_int_equal(expo_sample(t, NULL, b, 41), 0);
	assert_int_equal(expo_sample(t, NULL, c, 41), 0);
	assert_int_equal(expo_sample(t, NULL, d, 41), 0);
	/* the same labels in another family are another series */
	assert_int_equal(expo_sample(p, NULL, a, 1), 0);
	/* many series: the set grows and still finds each one */
	for (int i = 0; i < 5000; i++) {
		char v[16];
		const char *l[] = { "node", v, NULL };

		snprintf(v, sizeof(v), "n%d", i);
		assert_int_equal(expo_sample(many, NULL, l, i), 0);
	}
	for (int i = 0; i < 5000; i += 997) {
		char v[16];
		const char *l[] = { "node", v, NULL };

		snprintf(v, sizeof(v), "n%d", i);
		assert_int_equal(expo_sample(many, NULL, l, i), KILN_EEXISTS);
	}
	/* and the first family still refuses its duplicate after the others grew */
	assert_int_equal(expo_sample(t, NULL, same, 42), KILN_EEXISTS);
	expo_free(&e);
}

static void test_names_and_types(void **state)
{
	const char *bad_label[] = { "model-name", "x", NULL };
	const char *reserved[] = { "__name__", "x", NULL };
	struct expo_family *f;
	struct expo e;

	(void)state;
	assert_true(expo_metric_name_valid("kiln_gpu_temperature_celsius"));
	assert_true(expo_metric_name_valid("job:kiln:rate5m"));
	assert_false(expo_metric_name_valid("0kiln"));
	assert_false(expo_metric_name_valid("kiln-gpu"));
	assert_false(expo_metric_name_valid(""));
	assert_true(expo_label_name_valid("UUID"));
	assert_true(expo_label_name_valid("pci_bus_id"));
	assert_false(expo_label_name_valid("a:b"));
	assert_false(expo_label_name_valid("__name__"));
	expo_init(&e, 0);
	assert_int_equal(expo_family(&e, &f, "kiln-x", EXPO_GAUGE, "X."), KILN_EINVAL);
	assert_int_equal(expo_family(&e, &f, "kiln_reports", EXPO_COUNTER, "R."), KILN_EINVAL);
	assert_int_equal(expo_family(&e, &f, "kiln_up_total", EXPO_GAUGE, "U."), KILN_EINVAL);
	assert_int_equal(expo_family(&e, &f, "kiln_driver", EXPO_INFO, "D."), KILN_EINVAL);
	assert_int_equal(expo_family(&e, &f, "kiln_driver_info", EXPO_INFO, "D."), 0);
	assert_int_equal(expo_sample(f, NULL, NULL, 2), KILN_EINVAL); /* info is 1 */
	assert_int_equal(expo_sample(f, NULL, bad_label, 1), KILN_EINVAL);
	assert_int_equal(expo_sample(f, NULL, reserved, 1), KILN_EINVAL);
	assert_int_equal(expo_sample(f, "_sum", NULL, 1), KILN_EINVAL); /* not a histogram */
	expo_free(&e);
}

static void test_histogram(void **state)
{
	static const double bounds[] = { 0.1, 1, 2.5 };
	static const uint64_t counts[] = { 1, 3, 3, 4 };
	const char *l[] = { "protocol", "redfish", NULL };
	struct expo_family *h;
	struct expo e;

	(void)state;
	expo_init(&e, 0);
	assert_int_equal(expo_family(&e, &h, "kiln_poll_duration_seconds", EXPO_HISTOGRAM, "H."),
			 0);
	assert_int_equal(expo_sample(h, NULL, l, 1), KILN_EINVAL); /* needs a suffix */
	assert_int_equal(expo_histogram(h, l, bounds, counts, 3, 7.25), 0);
	assert_string_equal(h->text.data,
			    "kiln_poll_duration_seconds_bucket{protocol=\"redfish\",le=\"0.1\"} 1\n"
			    "kiln_poll_duration_seconds_bucket{protocol=\"redfish\",le=\"1\"} 3\n"
			    "kiln_poll_duration_seconds_bucket{protocol=\"redfish\",le=\"2.5\"} 3\n"
			    "kiln_poll_duration_seconds_bucket{protocol=\"redfish\",le=\"+Inf\"} 4\n"
			    "kiln_poll_duration_seconds_sum{protocol=\"redfish\"} 7.25\n"
			    "kiln_poll_duration_seconds_count{protocol=\"redfish\"} 4\n");
	/* the same label set again is a duplicate */
	assert_int_equal(expo_histogram(h, l, bounds, counts, 3, 7.25), KILN_EEXISTS);
	expo_free(&e);
}

static void test_values_and_cap(void **state)
{
	static const struct {
		double v;
		const char *text;
	} vectors[] = {
		{ 0, "0" }, { -0.0, "0" }, { 41, "41" }, { -3, "-3" }, { 0.1, "0.1" },
		{ 612.345, "612.345" }, { 1e20, "1e+20" }, { INFINITY, "+Inf" },
		{ -INFINITY, "-Inf" }, { 1.0 / 3, "0.33333333333333331" },
	};
	struct expo_family *f;
	struct expo e;
	char want[64];

	(void)state;
	for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
		expo_init(&e, 0);
		assert_int_equal(expo_family(&e, &f, "kiln_v", EXPO_GAUGE, ""), 0);
		assert_int_equal(expo_sample(f, NULL, NULL, vectors[i].v), 0);
		snprintf(want, sizeof(want), "kiln_v %s\n", vectors[i].text);
		assert_string_equal(f->text.data, want);
		expo_free(&e);
	}
	/* samples over the cap fail instead of being cut */
	expo_init(&e, 24);
	assert_int_equal(expo_family(&e, &f, "kiln_v", EXPO_GAUGE, "help"), 0);
	assert_int_equal(expo_sample(f, NULL, NULL, 1), 0);
	assert_int_equal(expo_sample(f, NULL, (const char *[]){ "node", "a-long-node-name", NULL },
				     1), KILN_ETOOBIG);
	expo_free(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_label_escape),
		cmocka_unit_test(test_family_and_samples),
		cmocka_unit_test(test_family_once),
		cmocka_unit_test(test_no_duplicate_series),
		cmocka_unit_test(test_names_and_types),
		cmocka_unit_test(test_histogram),
		cmocka_unit_test(test_values_and_cap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
