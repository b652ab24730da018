/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for kiln status's table (cli/cmd_status.c): the rows form and the object form lay out the
 * same table, byte for byte the table the CLI printed before the rows form (kept below as the
 * reference, printf and all, with issue 32's "…" at the end of a cut cell). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "kiln/escape.h"
#include <kiln/error.h>

#include "cmd_status.h"
#include "output.h"

#define NCOLS 10
#define CELL 256

/* --- the table as kiln status printed it up to commit 0683611 (the reference) --------- */

/* "12s", "5m", "3h", "2d" */
static void old_age(char *out, size_t len, const json_t *v)
{
	json_int_t s;

	if (!json_is_integer(v)) {
		snprintf(out, len, "-");
		return;
	}
	s = json_integer_value(v);
	if (s < 120)
		snprintf(out, len, "%llds", (long long)s);
	else if (s < 7200)
		snprintf(out, len, "%lldm", (long long)(s / 60));
	else if (s < 172800)
		snprintf(out, len, "%lldh", (long long)(s / 3600));
	else
		snprintf(out, len, "%lldd", (long long)(s / 86400));
}

static const char *old_colour_of(const char *health, int maintenance)
{
	if (maintenance)
		return "\033[36m";
	if (strcmp(health, "ok") == 0)
		return "\033[32m";
	if (strcmp(health, "warning") == 0)
		return "\033[33m";
	if (strcmp(health, "critical") == 0)
		return "\033[1;31m";
	return "\033[2m";
}

/* Display width of a UTF-8 string (code points). */
static size_t old_width(const char *s)
{
	size_t w = 0;

	for (; *s; s++)
		w += ((unsigned char)*s & 0xC0) != 0x80;
	return w;
}

static const char *old_str_or(const json_t *v, const char *dflt)
{
	return json_is_string(v) ? json_string_value(v) : dflt;
}

static void old_fill_row(char cells[NCOLS][CELL], const json_t *n)
{
	char a[32], b[32];
	const json_t *reasons = json_object_get(n, "reasons"), *r;
	int maint = json_is_object(json_object_get(n, "maintenance"));
	size_t i, len = 0;

	out_cell(cells[0], CELL, json_object_get(n, "node"));
	old_age(a, sizeof(a), json_object_get(n, "power_age_s"));
	out_cellf(cells[1], CELL, "%s (%s)", json_string_value(json_object_get(n, "power")), a);
	old_age(b, sizeof(b), json_object_get(n, "agent_age_s"));
	out_cellf(cells[2], CELL, "%s", strcmp(b, "-") == 0 ? "never" : b);
	out_cellf(cells[3], CELL, "%s%s", maint ? "maint/" : "",
		  json_string_value(json_object_get(n, "health")));
	if (json_is_integer(json_object_get(n, "gpus_seen")))
		out_cellf(cells[4], CELL, "%" JSON_INTEGER_FORMAT "/%" JSON_INTEGER_FORMAT,
			  json_integer_value(json_object_get(n, "gpus_seen")),
			  json_integer_value(json_object_get(n, "gpus_expected")));
	else
		out_cellf(cells[4], CELL, "-");
	out_cellf(cells[5], CELL, "%s/%s",
		  old_str_or(json_object_get(n, "driver"), "-"), old_str_or(json_object_get(n, "cuda"), "-"));
	if (json_is_number(json_object_get(n, "hottest_gpu_c")))
		out_cellf(cells[6], CELL, "%.0fC",
			  json_number_value(json_object_get(n, "hottest_gpu_c")));
	else
		out_cellf(cells[6], CELL, "-");
	if (json_is_number(json_object_get(n, "power_draw_w")))
		out_cellf(cells[7], CELL, "%.0fW", json_number_value(json_object_get(n, "power_draw_w")));
	else
		out_cellf(cells[7], CELL, "-");
	out_cellf(cells[8], CELL, "%s", old_str_or(json_object_get(n, "work"), "-"));
	cells[9][0] = '\0';
	if (maint) {
		const char *why = json_string_value(
			json_object_get(json_object_get(n, "maintenance"), "reason"));

		len += (size_t)snprintf(cells[9], CELL, "maintenance: %s", why ? why : "");
	}
	json_array_foreach(reasons, i, r) {
		if (len < CELL)
			len += (size_t)snprintf(cells[9] + len, CELL - len, "%s%s", len ? "; " : "",
						old_str_or(r, ""));
	}
	if (len >= CELL)
		out_cut_mark(cells[9], CELL);
	/* since issue 17 every cell is escaped (kiln_escape), not just the reasons' controls;
	 * since issue 32 a cell cut, before or after escaping, ends in "…" (out_cellf) */
	for (int c = 0; c < NCOLS; c++) {
		char safe[CELL * 4];

		out_cellf(cells[c], CELL, "%s", kiln_escape(safe, sizeof(safe), cells[c], 0));
	}
}

static void old_print_table(FILE *out, const json_t *nodes, const json_t *summary, int colour)
{
	static const char *const headers[NCOLS] = { "NODE",   "POWER", "AGENT", "HEALTH", "GPUS",
						    "DRIVER/CUDA", "HOT", "DRAW",  "WORK",
						    "REASONS" };
	size_t n = json_array_size(nodes), w[NCOLS];
	char (*cells)[NCOLS][CELL] = calloc(n ? n : 1, sizeof(*cells));
	const char *keys[] = { "ok", "warning", "critical", "unknown", "maintenance", "hung" };
	size_t i;

	if (!cells)
		return;
	for (size_t c = 0; c < NCOLS; c++)
		w[c] = strlen(headers[c]);
	for (i = 0; i < n; i++) {
		old_fill_row(cells[i], json_array_get(nodes, i));
		for (size_t c = 0; c < NCOLS; c++)
			if (old_width(cells[i][c]) > w[c])
				w[c] = old_width(cells[i][c]);
	}
	for (size_t c = 0; c < NCOLS; c++)
		fprintf(out, "%s%-*s", c ? "  " : "", c + 1 < NCOLS ? (int)w[c] : 0, headers[c]);
	fputc('\n', out);
	for (i = 0; i < n; i++) {
		const json_t *node = json_array_get(nodes, i);
		const char *health = json_string_value(json_object_get(node, "health"));
		int maint = json_is_object(json_object_get(node, "maintenance"));

		for (size_t c = 0; c < NCOLS; c++) {
			int pad = c + 1 < NCOLS ? (int)(w[c] - old_width(cells[i][c])) : 0;

			if (c)
				fprintf(out, "  ");
			if (c == 3 && colour)
				fprintf(out, "%s%s\033[0m%*s", old_colour_of(health ? health : "", maint),
				       cells[i][c], pad, "");
			else
				fprintf(out, "%s%*s", cells[i][c], pad, "");
		}
		fputc('\n', out);
	}
	fprintf(out, "%" JSON_INTEGER_FORMAT " nodes:",
	       json_integer_value(json_object_get(summary, "nodes")));
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		json_int_t v = json_integer_value(json_object_get(summary, keys[i]));

		if (v || i < 3)
			fprintf(out, "%s %" JSON_INTEGER_FORMAT " %s", i ? "," : "", v, keys[i]);
	}
	fputc('\n', out);
	free(cells);
}

/* --- generated fleets ------------------------------------------------------------------ */

static const char *const names[] = { "gpu01", "a-very-long-node-name-of-a-rack-row-17",
				     "n\xc3\xa9\xc5\x93ud-\xe2\x82\xac", "x" };
static const char *const powers[] = { "on", "off", "unknown" };
static const char *const healths[] = { "ok", "warning", "critical", "unknown" };
static const char *const words[] = { "hung: powered on, agent silent", "xid: critical Xid 48,79",
				     "tab\there\nnewline\x7f", "\xc3\xa9t\xc3\xa9 \xe2\x82\xac",
				     "" };

static json_t *maybe_int(long long v)
{
	return rand() % 5 == 0 ? json_null() : json_integer(v);
}

static json_t *long_string(size_t n, char c)
{
	char buf[700];

	if (n >= sizeof(buf))
		n = sizeof(buf) - 1;
	memset(buf, c, n);
	buf[n] = '\0';
	return json_string(buf);
}

static json_t *some_real(void)
{
	static const double v[] = { 41.0, 40.5, 41.5, -0.0, 0.4, -0.4, 4898.8, 2.5, 1e20,
				    699.95, 12345678.9 };

	switch (rand() % 4) {
	case 0: return json_null();
	case 1: return json_integer(rand() % 100);
	default: return json_real(v[rand() % (sizeof(v) / sizeof(v[0]))]);
	}
}

static json_t *some_string(void)
{
	switch (rand() % 6) {
	case 0: return json_null();
	case 1: return long_string((size_t)(250 + rand() % 20), 'd');
	default: return json_string(rand() % 2 ? "550.54.15" : "12.4");
	}
}

/* One node of the object form (the documented fields the table reads). */
static json_t *node_object(int i)
{
	json_t *o = json_object(), *reasons = json_array();
	long long ages[] = { 0, 59, 119, 120, 7199, 7200, 172799, 172800, 10000000 };
	int nreasons = rand() % 4;
	char name[64];

	snprintf(name, sizeof(name), "%s%d", names[rand() % 4], i);
	json_object_set_new(o, "node", json_string(name));
	json_object_set_new(o, "power", json_string(powers[rand() % 3]));
	json_object_set_new(o, "power_age_s", maybe_int(ages[rand() % 9]));
	json_object_set_new(o, "agent_last_seen", json_null());
	json_object_set_new(o, "agent_age_s", maybe_int(ages[rand() % 9]));
	json_object_set_new(o, "health", json_string(healths[rand() % 4]));
	for (int r = 0; r < nreasons; r++)
		json_array_append_new(reasons, rand() % 8 ? json_string(words[rand() % 5])
							  : long_string(200, 'r'));
	json_object_set_new(o, "reasons", reasons);
	if (rand() % 4 == 0)
		json_object_set_new(o, "maintenance",
				    json_pack("{s:o, s:s, s:i}", "reason",
					      rand() % 3 ? json_string("PSU 2 \"swap\"\x01")
							 : long_string(500, 'm'),
					      "by", "admin", "since", 5));
	else
		json_object_set_new(o, "maintenance", json_false());
	if (rand() % 5) {
		json_object_set_new(o, "gpus_seen", json_integer(rand() % 9));
		json_object_set_new(o, "gpus_expected", json_integer(8));
	} else {
		json_object_set_new(o, "gpus_seen", json_null());
		json_object_set_new(o, "gpus_expected", json_null());
	}
	json_object_set_new(o, "driver", some_string());
	json_object_set_new(o, "cuda", some_string());
	json_object_set_new(o, "hottest_gpu_c", some_real());
	json_object_set_new(o, "power_draw_w", some_real());
	json_object_set_new(o, "work", some_string());
	json_object_set_new(o, "bmc_reachable", json_true());
	json_object_set_new(o, "hung", json_false());
	return o;
}

/* The rows form of the same nodes, as kilnd writes it (maintenance: its reason or null). */
static json_t *rows_of(const json_t *nodes, const json_t *summary, int shuffle)
{
	const char *cols[] = { "node", "power", "power_age_s", "agent_age_s", "health",
			       "maintenance_reason", "gpus_seen", "gpus_expected", "driver", "cuda",
			       "hottest_gpu_c", "power_draw_w", "reasons", "work" };
	size_t ncols = sizeof(cols) / sizeof(cols[0]), order[16], i;
	json_t *columns = json_array(), *rows = json_array(), *n;

	for (i = 0; i < ncols; i++)
		order[i] = shuffle ? ncols - 1 - i : i; /* a server may order them otherwise */
	for (i = 0; i < ncols; i++)
		json_array_append_new(columns, json_string(cols[order[i]]));
	if (shuffle)
		json_array_append_new(columns, json_string("a_later_column"));
	json_array_foreach(nodes, i, n) {
		json_t *row = json_array();

		for (size_t c = 0; c < ncols; c++) {
			const char *k = cols[order[c]];
			json_t *v;

			if (strcmp(k, "maintenance_reason") == 0) {
				v = json_object_get(json_object_get(n, "maintenance"), "reason");
				v = v ? json_incref(v) : json_null();
			} else {
				v = json_incref(json_object_get(n, k));
			}
			json_array_append_new(row, v);
		}
		if (shuffle)
			json_array_append_new(row, json_integer(1));
		json_array_append_new(rows, row);
	}
	return json_pack("{s:o, s:o, s:O}", "columns", columns, "rows", rows, "summary", summary);
}

static char *reference(const json_t *nodes, const json_t *summary, int colour)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	old_print_table(f, nodes, summary, colour);
	assert_int_equal(fclose(f), 0);
	return text;
}

static char *table_of(const json_t *answer, int colour)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	assert_int_equal(status_table_write(f, answer, colour), 0);
	assert_int_equal(fclose(f), 0);
	return text;
}

static void check_same(const char *what, const char *got, const char *want)
{
	size_t i = 0;

	if (strcmp(got, want) == 0)
		return;
	while (got[i] && got[i] == want[i])
		i++;
	fail_msg("%s: differs at byte %zu:\n got: %.120s\nwant: %.120s", what, i, got + i,
		 want + i);
}

static void test_table_matches_reference(void **state)
{
	(void)state;
	srand(11);
	for (int round = 0; round < 60; round++) {
		int n = round == 0 ? 0 : 1 + rand() % 40;
		json_t *nodes = json_array(), *summary, *objects, *rows;

		for (int i = 0; i < n; i++)
			json_array_append_new(nodes, node_object(i));
		summary = json_pack("{s:i, s:i, s:i, s:i, s:i, s:i, s:i}", "nodes", n, "ok",
				    rand() % 3, "warning", 0, "critical", rand() % 2, "unknown",
				    rand() % 2, "maintenance", rand() % 2, "hung", rand() % 2);
		objects = json_pack("{s:O, s:O}", "nodes", nodes, "summary", summary);
		rows = rows_of(nodes, summary, round % 2);
		for (int colour = 0; colour < 2; colour++) {
			char *want = reference(nodes, summary, colour);
			char *from_objects = table_of(objects, colour);
			char *from_rows = table_of(rows, colour);

			check_same("object form", from_objects, want);
			check_same("rows form", from_rows, want);
			free(want);
			free(from_objects);
			free(from_rows);
		}
		json_decref(nodes);
		json_decref(summary);
		json_decref(objects);
		json_decref(rows);
	}
}

static void test_table_example(void **state)
{
	const char *answer =
		"{\"columns\":[\"node\",\"power\",\"power_age_s\",\"agent_age_s\",\"health\","
		"\"maintenance_reason\",\"gpus_seen\",\"gpus_expected\",\"driver\",\"cuda\","
		"\"hottest_gpu_c\",\"power_draw_w\",\"reasons\",\"work\"],\"rows\":["
		"[\"gpu01\",\"on\",12,300,\"ok\",null,8,8,\"550.54.15\",\"12.4\",41.5,4898.8,[],"
		"\"2 procs\"],"
		"[\"gpu02\",\"off\",null,null,\"critical\",\"PSU\",null,null,null,null,null,null,"
		"[\"xid: critical Xid 48\"],null]],"
		"\"summary\":{\"nodes\":2,\"ok\":1,\"warning\":0,\"critical\":1,\"unknown\":0,"
		"\"maintenance\":1,\"hung\":0}}";
	const char *want =
		"NODE   POWER     AGENT  HEALTH          GPUS  DRIVER/CUDA     HOT  DRAW   WORK     "
		"REASONS\n"
		"gpu01  on (12s)  5m     ok              8/8   550.54.15/12.4  42C  4899W  2 procs  \n"
		"gpu02  off (-)   never  maint/critical  -     -/-             -    -      -        "
		"maintenance: PSU; xid: critical Xid 48\n"
		"2 nodes: 1 ok, 0 warning, 1 critical, 1 maintenance\n";
	json_t *v = json_loads(answer, 0, NULL);
	char *got;

	(void)state;
	assert_non_null(v);
	got = table_of(v, 0);
	check_same("example", got, want);
	free(got);
	json_decref(v);
}

static void test_table_refuses_other_answers(void **state)
{
	json_t *v = json_loads("{\"error\":\"x\"}", 0, NULL);

	(void)state;
	assert_int_equal(status_table_write(stdout, v, 0), KILN_EPROTO);
	json_decref(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table_example),
		cmocka_unit_test(test_table_matches_reference),
		cmocka_unit_test(test_table_refuses_other_answers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
