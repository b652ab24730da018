/* SPDX-License-Identifier: Apache-2.0 */
/* kiln report [--since 12h] [--format text|markdown]: the overnight digest of what went wrong,
 * what was done and by whom, temperature and power peaks and energy per rack. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <kiln/error.h>
#include <kiln/parse.h>

#include "cli.h"
#include "client.h"
#include "output.h"

enum { O_SINCE = 1, O_FORMAT };

static const struct cli_opt opts[] = {
	{ "since", 0, "DURATION", O_SINCE, "the window, ending now (default 12h)" },
	{ "format", 0, "text|markdown", O_FORMAT, "text (default) or markdown for a wiki or a chat" },
	{ 0 },
};

struct args {
	struct cli_ctx *ctx;
	int64_t since;
	int markdown;
};

static int opt_cb(void *ud, const struct cli_opt *opt, const char *value)
{
	struct args *a = ud;

	if (opt->id == O_SINCE &&
	    (kiln_parse_duration(&a->since, value) < 0 || a->since <= 0))
		return cli_usage_error(a->ctx, "--since: '%s' is not a duration like 12h", value);
	if (opt->id == O_FORMAT) {
		if (strcmp(value, "markdown") == 0 || strcmp(value, "md") == 0)
			a->markdown = 1;
		else if (strcmp(value, "text") == 0)
			a->markdown = 0;
		else
			return cli_usage_error(a->ctx, "--format must be text or markdown, not '%s'",
					       value);
	}
	return 0;
}

/* Prints a markdown cell: '|' escaped, newlines as spaces. */
static void md_cell(const char *s)
{
	for (; s && *s; s++) {
		if (*s == '|')
			fputs("\\|", stdout);
		else if (*s == '\n' || *s == '\r')
			putchar(' ');
		else
			putchar(*s);
	}
}

/* A section: its title and its table, or "none". */
static void section_print(int markdown, const char *title, const struct out_table *t)
{
	if (markdown)
		printf("\n## %s\n\n", title);
	else
		printf("\n%s\n", title);
	if (t->nrows == 0) {
		printf(markdown ? "_none_\n" : "  none\n");
		return;
	}
	if (!markdown) {
		out_table_print(t, stdout);
		return;
	}
	for (size_t c = 0; c < t->ncols; c++) {
		fputs("| ", stdout);
		md_cell(t->headers[c]);
		fputs(" ", stdout);
	}
	puts("|");
	for (size_t c = 0; c < t->ncols; c++)
		fputs("|---", stdout);
	puts("|");
	for (size_t r = 0; r < t->nrows; r++) {
		for (size_t c = 0; c < t->ncols; c++) {
			const char *cell = t->cells[r * t->ncols + c];

			fputs("| ", stdout);
			md_cell(cell ? cell : "-");
			fputs(" ", stdout);
		}
		puts("|");
	}
}

static const char *num(char *buf, size_t len, const json_t *v, const char *unit)
{
	if (!json_is_number(v))
		return NULL;
	snprintf(buf, len, "%.*f%s", json_is_integer(v) ? 0 : 1, json_number_value(v), unit);
	return buf;
}

static int went_bad(int markdown, const json_t *res)
{
	static const char *const h[] = { "NODE", "SEVERITY", "EVENTS", "FIRST", "LAST", "NOW",
					 "WHAT" };
	struct out_table t;
	size_t i;
	json_t *e;
	int rc = 0;

	out_table_init(&t, h, 7);
	json_array_foreach(json_object_get(res, "went_bad"), i, e) {
		char a[128], b[16], c[16], d[32], f[32], g[600];
		const char *row[] = {
			out_cell(a, sizeof(a), json_object_get(e, "node")),
			out_cell(b, sizeof(b), json_object_get(e, "severity")),
			out_cell(c, sizeof(c), json_object_get(e, "events")),
			out_time(d, sizeof(d), json_object_get(e, "first")),
			out_time(f, sizeof(f), json_object_get(e, "last")),
			json_is_true(json_object_get(e, "recovered")) ? "recovered" : "still bad",
			out_cell(g, sizeof(g), json_object_get(e, "message")),
		};

		if ((rc = out_table_add(&t, row)) < 0)
			goto cleanup;
	}
	section_print(markdown, "Nodes that went bad", &t);
cleanup:
	out_table_free(&t);
	return rc;
}

static int actions(int markdown, const json_t *res)
{
	static const char *const h[] = { "TIME", "BY", "ACTION", "TARGET", "OUTCOME" };
	struct out_table t;
	size_t i;
	json_t *e;
	int rc = 0;

	out_table_init(&t, h, 5);
	json_array_foreach(json_object_get(res, "actions"), i, e) {
		char a[32], b[160], c[128], d[512], f[300];
		const char *actor = json_string_value(json_object_get(e, "actor"));
		const char *row[] = { out_time(a, sizeof(a), json_object_get(e, "time")), b,
				      out_cell(c, sizeof(c), json_object_get(e, "action")),
				      out_cell(d, sizeof(d), json_object_get(e, "target")),
				      out_cell(f, sizeof(f), json_object_get(e, "outcome")) };

		out_cellf(b, sizeof(b), "%s%s", actor ? actor : "?",
			 json_is_true(json_object_get(e, "automatic")) ? " (automatic)" : "");
		if ((rc = out_table_add(&t, row)) < 0)
			goto cleanup;
	}
	section_print(markdown, "Actions taken", &t);
cleanup:
	out_table_free(&t);
	return rc;
}

static int critical(int markdown, const json_t *res)
{
	static const char *const h[] = { "TIME", "NODE", "SOURCE", "KIND", "MESSAGE" };
	struct out_table t;
	size_t i;
	json_t *e;
	int rc = 0;

	out_table_init(&t, h, 5);
	json_array_foreach(json_object_get(res, "critical_events"), i, e) {
		char a[32], b[128], c[64], d[64], f[600];
		const char *row[] = { out_time(a, sizeof(a), json_object_get(e, "time")),
				      out_cell(b, sizeof(b), json_object_get(e, "node")),
				      out_cell(c, sizeof(c), json_object_get(e, "source")),
				      out_cell(d, sizeof(d), json_object_get(e, "kind")),
				      out_cell(f, sizeof(f), json_object_get(e, "message")) };

		if ((rc = out_table_add(&t, row)) < 0)
			goto cleanup;
	}
	section_print(markdown, "Critical events", &t);
cleanup:
	out_table_free(&t);
	return rc;
}

/* "47.5 C gpu03" from a rack's PREFIX_UNIT and PREFIX_node (the BMC's readings), or "-". */
static void bmc_peak(char *out, size_t outlen, const json_t *rack, const char *prefix,
		     const char *unit_key, const char *unit)
{
	char key[64], v[32];
	const json_t *node;

	snprintf(key, sizeof(key), "%s_node", prefix);
	node = json_object_get(rack, key);
	snprintf(key, sizeof(key), "%s_%s", prefix, unit_key);
	if (!json_is_string(node) || !json_is_number(json_object_get(rack, key))) {
		snprintf(out, outlen, "-");
		return;
	}
	out_cellf(out, outlen, "%s %s", num(v, sizeof(v), json_object_get(rack, key), unit),
		  json_string_value(node));
}

static int racks(int markdown, const json_t *res)
{
	static const char *const h[] = { "RACK", "NODES", "GPU TEMP PEAK", "AT", "GPU POWER PEAK",
					 "AT", "INLET PEAK", "SYSTEM POWER PEAK", "ENERGY", "COST" };
	const json_t *energy = json_object_get(res, "energy");
	const char *currency = json_string_value(json_object_get(energy, "currency"));
	struct out_table t;
	size_t i;
	json_t *e;
	int rc = 0;

	out_table_init(&t, h, 10);
	json_array_foreach(json_object_get(res, "racks"), i, e) {
		char a[128], b[16], c[32], d[200], f[32], g[200], k[32], m[48], in[200], sp[200];
		char cur[24];

		snprintf(cur, sizeof(cur), " %s", currency ? currency : "");
		if (json_is_string(json_object_get(e, "temperature_peak_node"))) {
			char tm[32];

			out_cellf(d, sizeof(d), "%s %s",
				  json_string_value(json_object_get(e, "temperature_peak_node")),
				  out_time(tm, sizeof(tm), json_object_get(e, "temperature_peak_time")));
		} else {
			snprintf(d, sizeof(d), "-");
		}
		if (json_is_string(json_object_get(e, "power_peak_node"))) {
			char tm[32];

			out_cellf(g, sizeof(g), "%s %s",
				  json_string_value(json_object_get(e, "power_peak_node")),
				  out_time(tm, sizeof(tm), json_object_get(e, "power_peak_time")));
		} else {
			snprintf(g, sizeof(g), "-");
		}
		bmc_peak(in, sizeof(in), e, "inlet_peak", "c", " C");
		bmc_peak(sp, sizeof(sp), e, "system_power_peak", "w", " W");
		{
			const char *row[] = {
				out_cell(a, sizeof(a), json_object_get(e, "rack")),
				out_cell(b, sizeof(b), json_object_get(e, "nodes")),
				num(c, sizeof(c), json_object_get(e, "temperature_peak_c"), " C"),
				d,
				num(f, sizeof(f), json_object_get(e, "power_peak_w"), " W"),
				g,
				in,
				sp,
				json_is_number(json_object_get(e, "energy_kwh")) ?
					(snprintf(k, sizeof(k), "%.3f kWh",
						  json_number_value(json_object_get(e, "energy_kwh"))),
					 k) :
					NULL,
				json_is_number(json_object_get(e, "cost")) ?
					(snprintf(m, sizeof(m), "%.2f%s",
						  json_number_value(json_object_get(e, "cost")),
						  currency ? cur : ""),
					 m) :
					NULL,
			};

			if ((rc = out_table_add(&t, row)) < 0)
				goto cleanup;
		}
	}
	section_print(markdown, "Temperature, power and energy per rack", &t);
	if (json_is_number(json_object_get(energy, "total_kwh")))
		printf("%sEnergy %.3f kWh in all (%s)", markdown ? "\n" : "\n  ",
		       json_number_value(json_object_get(energy, "total_kwh")),
		       json_string_value(json_object_get(energy, "source")));
	if (json_is_number(json_object_get(energy, "total_cost")))
		printf(", cost %.2f %s", json_number_value(json_object_get(energy, "total_cost")),
		       currency ? currency : "");
	printf("\n");
cleanup:
	out_table_free(&t);
	return rc;
}

static int attention(int markdown, const json_t *res)
{
	static const char *const h[] = { "NODE", "WHY", "MAINTENANCE" };
	struct out_table t;
	size_t i;
	json_t *e;
	int rc = 0;

	out_table_init(&t, h, 3);
	json_array_foreach(json_object_get(res, "attention"), i, e) {
		char a[128], b[1024], c[300];
		const char *row[] = { out_cell(a, sizeof(a), json_object_get(e, "node")), b,
				      out_cell(c, sizeof(c), json_object_get(e, "maintenance")) };
		size_t k, off = 0;
		json_t *r;

		b[0] = '\0';
		json_array_foreach(json_object_get(e, "reasons"), k, r) {
			int n = snprintf(b + off, sizeof(b) - off, "%s%s", k ? "; " : "",
					 json_string_value(r) ? json_string_value(r) : "?");

			if (n < 0 || (size_t)n >= sizeof(b) - off) {
				out_cut_mark(b, sizeof(b)); /* the reasons that fit, and "…" */
				break;
			}
			off += (size_t)n;
		}
		if ((rc = out_table_add(&t, row)) < 0)
			goto cleanup;
	}
	section_print(markdown, "Still needing attention", &t);
cleanup:
	out_table_free(&t);
	return rc;
}

static int report_print(int markdown, const json_t *res)
{
	char from[32], to[32];
	int rc;

	out_time(from, sizeof(from), json_object_get(res, "since"));
	out_time(to, sizeof(to), json_object_get(res, "until"));
	if (markdown)
		printf("# kiln report %s to %s\n", from, to);
	else
		printf("kiln report %s to %s\n", from, to);
	if ((rc = went_bad(markdown, res)) < 0 || (rc = actions(markdown, res)) < 0 ||
	    (rc = critical(markdown, res)) < 0 || (rc = racks(markdown, res)) < 0 ||
	    (rc = attention(markdown, res)) < 0)
		return rc;
	return 0;
}

static int report_run(struct cli_ctx *ctx, int argc, char **argv)
{
	struct args a = { .ctx = ctx, .since = 12 * 3600 };
	struct cli_args pos = { 0 };
	json_t *res = NULL;
	char path[64];
	int rc;

	rc = cli_args_parse(&pos, ctx, opts, argc - 1, argv + 1, opt_cb, &a);
	if (rc < 0)
		goto cleanup;
	if (ctx->help) {
		cli_help_print(stdout, ctx, "[--since 12h] [--format text|markdown]",
			       "The overnight digest: nodes that went bad (and recovered), actions "
			       "taken and by whom, critical events, temperature and power peaks and "
			       "energy per rack, nodes still needing attention.",
			       opts);
		goto cleanup;
	}
	if (pos.n > 0) {
		rc = cli_usage_error(ctx, "unexpected argument '%s'", pos.v[0]);
		goto cleanup;
	}
	snprintf(path, sizeof(path), "/report?since=%" PRId64, a.since);
	rc = cli_api(&res, NULL, ctx, "GET", path, NULL);
	if (rc < 0)
		goto cleanup;
	if (ctx->output == CLI_OUT_JSON)
		rc = out_json_print(res, stdout);
	else
		rc = report_print(a.markdown, res);
cleanup:
	json_decref(res);
	free(pos.v);
	return rc;
}

const struct cli_cmd cmd_report = { "report", "the overnight report (--since 12h)", report_run };
