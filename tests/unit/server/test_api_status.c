/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for the rows form of GET /status: the JSON string escaper and the rows read from a store. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "api/api_status.h"
#include "kiln/buf.h"
#include "kiln/error.h"
#include "kiln/noderange.h"
#include "store/store.h"
#include "store_fixture.h"

/* --- the escaper -------------------------------------------------------------------- */

struct esc_case {
	const char *in;
	const char *want; /* the JSON text, quotes included */
};

static const struct esc_case esc_cases[] = {
	{ "", "\"\"" },
	{ "gpu01", "\"gpu01\"" },
	{ "a\"b\\c/d", "\"a\\\"b\\\\c/d\"" },
	{ "\b\f\n\r\t", "\"\\b\\f\\n\\r\\t\"" },
	{ "\x01x\x1f", "\"\\u0001x\\u001F\"" },
	{ "del\x7f", "\"del\x7f\"" },                       /* jansson leaves DEL as it is */
	{ "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\xa5", "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\xa5\"" },
	{ "\xef\xbf\xbf\xf4\x8f\xbf\xbf", "\"\xef\xbf\xbf\xf4\x8f\xbf\xbf\"" }, /* U+FFFF, U+10FFFF */
	/* not UTF-8: each bad byte becomes U+FFFD */
	{ "a\x80z", "\"a\xef\xbf\xbdz\"" },                 /* lone continuation byte */
	{ "\xc0\xaf", "\"\xef\xbf\xbd\xef\xbf\xbd\"" },    /* overlong '/' */
	{ "\xe0\x80\x80", "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"" }, /* overlong 3-byte */
	{ "\xed\xa0\x80", "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"" }, /* a surrogate */
	{ "\xf4\x90\x80\x80", "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"" }, /* > U+10FFFF */
	{ "x\xe2\x82", "\"x\xef\xbf\xbd\xef\xbf\xbd\"" },  /* cut short at the end */
	{ "\xff\xfe", "\"\xef\xbf\xbd\xef\xbf\xbd\"" },
};

static void test_escape_vectors(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(esc_cases) / sizeof(esc_cases[0]); i++) {
		struct kiln_buf b;
		json_t *back;

		kiln_buf_init(&b, 0);
		assert_int_equal(api_json_string_append(&b, esc_cases[i].in), 0);
		if (strcmp(b.data, esc_cases[i].want) != 0)
			fail_msg("case %zu: got %s, want %s", i, b.data, esc_cases[i].want);
		/* always parses, as a string */
		back = json_loads(b.data, JSON_DECODE_ANY, NULL);
		assert_true(json_is_string(back));
		json_decref(back);
		kiln_buf_free(&b);
	}
}

/* Every valid string comes out byte for byte as jansson's compact dump writes it. */
static void test_escape_matches_jansson(void **state)
{
	char s[300];

	(void)state;
	srand(7);
	for (int round = 0; round < 2000; round++) {
		size_t n = (size_t)(rand() % 40), i;
		struct kiln_buf b;
		json_t *v;
		char *dump;

		for (i = 0; i < n; i++) {
			int pick = rand() % 6;

			if (pick == 0)
				s[i] = (char)(1 + rand() % 0x1f);          /* control */
			else if (pick == 1)
				s[i] = "\"\\/\x7f"[rand() % 4];
			else
				s[i] = (char)(0x20 + rand() % 0x5f);       /* printable */
		}
		s[i] = '\0';
		if (round % 3 == 0) /* some UTF-8 too */
			snprintf(s + i, sizeof(s) - i, "\xc3\xa9\xe2\x82\xac");
		v = json_string(s);
		assert_non_null(v);
		dump = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
		kiln_buf_init(&b, 0);
		assert_int_equal(api_json_string_append(&b, s), 0);
		assert_string_equal(b.data, dump);
		free(dump);
		json_decref(v);
		kiln_buf_free(&b);
	}
}

/* --- rows from a store -------------------------------------------------------------- */

static int64_t node_add(struct store *st, const char *name)
{
	struct node n = { .name = (char *)name, .ipmi_cipher = 3 };

	assert_int_equal(store_node_insert(st, &n), 0);
	return n.id;
}

/* The fleet: a node nobody wrote (n1), one the poller found critical and unreachable (n2), one
 * with an agent (n3), one in maintenance with an agent that reported no temperatures (n4). */
static void fleet_fill(struct store *st)
{
	struct fleet_state fs;
	struct agent_state a = { 0 };
	int64_t id;

	node_add(st, "n1");
	id = node_add(st, "n2");
	fleet_state_init(&fs, id);
	snprintf(fs.power, sizeof(fs.power), "on");
	fs.power_time = 900;
	fs.power_error = "redfish: \"timed out\"";
	fs.reachable = 0;
	snprintf(fs.health, sizeof(fs.health), "critical");
	fs.reasons = "[\"hung: powered on, agent silent\",\"bmc: unreachable\\n\"]";
	fs.health_time = 990;
	fs.hung_since = 950;
	assert_int_equal(store_fleet_state_put(st, &fs), 0);

	id = node_add(st, "n3");
	a.node_id = id;
	a.report_id = "r3";
	a.report = "{}";
	a.last_seen = 400;
	a.report_time = 400;
	a.driver_version = "550.54.15";
	a.cuda_driver_version = "12.4";
	a.gpu_count = 7;
	a.gpu_count_max = 8;
	a.gpu_hottest_c = 41.04;
	a.gpu_power_w = 4898.75;
	assert_int_equal(store_agent_state_put(st, &a), 0);

	id = node_add(st, "n4");
	a.node_id = id;
	a.report_id = "r4";
	a.last_seen = 1000;
	a.driver_version = NULL;
	a.gpu_count = 0;
	a.gpu_count_max = 0;
	a.gpu_hottest_c = NAN;
	a.gpu_power_w = -0.04;
	assert_int_equal(store_agent_state_put(st, &a), 0);
	assert_int_equal(store_maintenance_set(st, id, "PSU \"2\"", "admin"), 0);
}

static json_t *rows_get(struct store *st, const struct kiln_nodelist *want, int problems)
{
	struct kiln_buf b;
	json_error_t err;
	json_t *v;

	kiln_buf_init(&b, 0);
	assert_int_equal(api_status_rows_write(&b, st, want, problems, 1000), 0);
	v = json_loads(b.data, 0, &err);
	if (!v)
		fail_msg("rows form does not parse: %s: %s", err.text, b.data);
	kiln_buf_free(&b);
	return v;
}

static void row_is(const json_t *rows, size_t i, const char *want)
{
	json_t *w = json_loads(want, 0, NULL);
	json_t *got = json_array_get(rows, i);

	assert_non_null(w);
	if (!json_equal(w, got)) {
		char *g = json_dumps(got, JSON_COMPACT);

		fail_msg("row %zu: got %s, want %s", i, g ? g : "?", want);
	}
	json_decref(w);
}

static void test_rows_fleet(void **state)
{
	struct fx *f = *state;
	json_t *v, *rows;

	fleet_fill(f->st);
	v = rows_get(f->st, NULL, 0);
	{
		json_t *cols = json_loads("[" API_STATUS_ROW_COLUMNS "]", 0, NULL);

		assert_true(json_equal(json_object_get(v, "columns"), cols));
		json_decref(cols);
	}
	rows = json_object_get(v, "rows");
	assert_int_equal(json_array_size(rows), 4);
	row_is(rows, 0, "[\"n1\",\"unknown\",null,null,\"unknown\",null,null,null,null,null,null,"
			"null,[],null,null]");
	row_is(rows, 1, "[\"n2\",\"on\",100,null,\"critical\",null,null,null,null,null,null,null,"
			"[\"hung: powered on, agent silent\",\"bmc: unreachable\\n\"],\"unreachable\",null]");
	row_is(rows, 2, "[\"n3\",\"unknown\",null,600,\"unknown\",null,7,8,\"550.54.15\",\"12.4\","
			"41.0,4898.8,[],null,\"-\"]");
	row_is(rows, 3, "[\"n4\",\"unknown\",null,0,\"unknown\",\"PSU \\\"2\\\"\",0,0,null,"
			"\"12.4\",null,-0.0,[],null,\"-\"]");
	/* the reals are the object form's round(v * 10) / 10, bit for bit */
	assert_true(json_real_value(json_array_get(json_array_get(rows, 2), 10)) ==
		    round(41.04 * 10) / 10);
	assert_true(json_real_value(json_array_get(json_array_get(rows, 2), 11)) ==
		    round(4898.75 * 10) / 10);
	assert_true(signbit(json_real_value(json_array_get(json_array_get(rows, 3), 11))));
	{
		json_t *want = json_loads("{\"nodes\":4,\"ok\":0,\"warning\":0,\"critical\":1,"
					  "\"unknown\":3,\"maintenance\":1,\"hung\":1,\"power_on\":1,"
					  "\"power_off\":0,\"power_unknown\":3}", 0, NULL);

		assert_true(json_equal(json_object_get(v, "summary"), want));
		json_decref(want);
	}
	json_decref(v);
}

static void test_rows_columns(void **state)
{
	json_t *cols = json_loads("[" API_STATUS_ROW_COLUMNS "]", 0, NULL);
	const char *want[] = { "node", "power", "power_age_s", "agent_age_s", "health",
			       "maintenance_reason", "gpus_seen", "gpus_expected", "driver", "cuda",
			       "hottest_gpu_c", "power_draw_w", "reasons", "bmc", "work" };

	(void)state;
	assert_int_equal(json_array_size(cols), sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		assert_string_equal(json_string_value(json_array_get(cols, i)), want[i]);
	json_decref(cols);
}

static void test_rows_range_and_problems(void **state)
{
	struct fx *f = *state;
	struct kiln_nodelist want = { 0 };
	json_t *v, *rows;

	fleet_fill(f->st);
	/* problems: not ok (unknown counts), unreachable, or in maintenance: all four here */
	v = rows_get(f->st, NULL, 1);
	assert_int_equal(json_array_size(json_object_get(v, "rows")), 4);
	json_decref(v);
	/* a range: only its rows, and the summary counts only the range */
	assert_int_equal(noderange_expand(&want, "n[2-3]", NULL, NULL), 0);
	v = rows_get(f->st, &want, 0);
	rows = json_object_get(v, "rows");
	assert_int_equal(json_array_size(rows), 2);
	assert_string_equal(json_string_value(json_array_get(json_array_get(rows, 0), 0)), "n2");
	assert_string_equal(json_string_value(json_array_get(json_array_get(rows, 1), 0)), "n3");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(v, "summary"), "nodes")),
			 2);
	json_decref(v);
	kiln_nodelist_free(&want);
}

/* NVML could not count (a driver/library mismatch): the GPUs seen are unknown, not 0 of 8. */
static void test_rows_gpus_not_counted(void **state)
{
	struct fx *f = *state;
	struct agent_state a = { .report_id = "r1", .report = "{}", .last_seen = 990,
				 .report_time = 990, .nvidia_status = "mismatch",
				 .kernel_module_version = "550.54.15", .gpu_count = 0,
				 .gpu_count_max = 8, .gpu_hottest_c = NAN, .gpu_power_w = NAN };
	json_t *v;

	a.node_id = node_add(f->st, "n1");
	assert_int_equal(store_agent_state_put(f->st, &a), 0);
	v = rows_get(f->st, NULL, 0);
	row_is(json_object_get(v, "rows"), 0,
	       "[\"n1\",\"unknown\",null,10,\"unknown\",null,null,8,null,null,null,null,[],null,"
	       "\"-\"]");
	json_decref(v);
}

/* A BMC that answered 503 is "busy", reachable and no problem of reachability; its stale
 * "on" stays with its age. */
static void test_rows_busy(void **state)
{
	struct fx *f = *state;
	struct fleet_state fs;
	json_t *v;

	fleet_state_init(&fs, node_add(f->st, "b1"));
	snprintf(fs.power, sizeof(fs.power), "on");
	fs.power_time = 940;
	fs.power_error = "bmc busy: 503 'RAC0218: sessions full'";
	snprintf(fs.health, sizeof(fs.health), "warning");
	fs.reasons = "[\"bmc busy: 503 'RAC0218: sessions full'\"]";
	fs.health_time = 990;
	assert_int_equal(store_fleet_state_put(f->st, &fs), 0);
	v = rows_get(f->st, NULL, 0);
	row_is(json_object_get(v, "rows"), 0,
	       "[\"b1\",\"on\",60,null,\"warning\",null,null,null,null,null,null,null,"
	       "[\"bmc busy: 503 'RAC0218: sessions full'\"],\"busy\",null]");
	json_decref(v);
	/* the same error text while unreachable is no busy mark */
	fs.reachable = 0;
	assert_int_equal(store_fleet_state_put(f->st, &fs), 0);
	v = rows_get(f->st, NULL, 0);
	assert_string_equal(json_string_value(json_array_get(json_array_get(json_object_get(v, "rows"),
									    0), 13)),
			    "unreachable");
	json_decref(v);
}

static void test_rows_empty(void **state)
{
	struct fx *f = *state;
	json_t *v = rows_get(f->st, NULL, 0);

	assert_int_equal(json_array_size(json_object_get(v, "rows")), 0);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(v, "summary"), "nodes")),
			 0);
	json_decref(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escape_vectors),
		cmocka_unit_test(test_escape_matches_jansson),
		cmocka_unit_test(test_rows_columns),
		cmocka_unit_test_setup_teardown(test_rows_fleet, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_rows_range_and_problems, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_rows_empty, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_rows_gpus_not_counted, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_rows_busy, fx_setup, fx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
