/* kiln status: the fleet at a glance from kilnd's stored state, a line per node and a summary. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kiln/error.h>
#include <kiln/parse.h>

#include "cli.h"
#include "client.h"
#include "output.h"

#define NCOLS 9
#define CELL 256

enum { O_PROBLEMS = 1 };

static const struct cli_opt status_opts[] = {
	{ "problems", 0, NULL, O_PROBLEMS, "only the nodes that need attention" },
	{ 0 },
};

struct status_args {
	struct cli_ctx *ctx;
	int problems;
};

static int status_opt(void *ud, const struct cli_opt *opt, const char *value)
{
	struct status_args *a = ud;

	(void)value;
	if (opt->id == O_PROBLEMS)
		a->problems = 1;
	return 0;
}

/* "12s", "5m", "3h", "2d" */
static void age(char *out, size_t len, const json_t *v)
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

static const char *colour_of(const char *health, int maintenance)
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
static size_t width(const char *s)
{
	size_t w = 0;

	for (; *s; s++)
		w += ((unsigned char)*s & 0xC0) != 0x80;
	return w;
}

static const char *str_or(const json_t *v, const char *dflt)
{
	return json_is_string(v) ? json_string_value(v) : dflt;
}

static void fill_row(char cells[NCOLS][CELL], const json_t *n)
{
	char a[32], b[32];
	const json_t *reasons = json_object_get(n, "reasons"), *r;
	int maint = json_is_object(json_object_get(n, "maintenance"));
	size_t i, len = 0;

	out_cell(cells[0], CELL, json_object_get(n, "node"));
	age(a, sizeof(a), json_object_get(n, "power_age_s"));
	snprintf(cells[1], CELL, "%s (%s)", json_string_value(json_object_get(n, "power")), a);
	age(b, sizeof(b), json_object_get(n, "agent_age_s"));
	snprintf(cells[2], CELL, "%s", strcmp(b, "-") == 0 ? "never" : b);
	snprintf(cells[3], CELL, "%s%s", maint ? "maint/" : "",
		 json_string_value(json_object_get(n, "health")));
	if (json_is_integer(json_object_get(n, "gpus_seen")))
		snprintf(cells[4], CELL, "%" JSON_INTEGER_FORMAT "/%" JSON_INTEGER_FORMAT,
			 json_integer_value(json_object_get(n, "gpus_seen")),
			 json_integer_value(json_object_get(n, "gpus_expected")));
	else
		snprintf(cells[4], CELL, "-");
	snprintf(cells[5], CELL, "%s/%s",
		 str_or(json_object_get(n, "driver"), "-"), str_or(json_object_get(n, "cuda"), "-"));
	if (json_is_number(json_object_get(n, "hottest_gpu_c")))
		snprintf(cells[6], CELL, "%.0fC",
			 json_number_value(json_object_get(n, "hottest_gpu_c")));
	else
		snprintf(cells[6], CELL, "-");
	if (json_is_number(json_object_get(n, "power_draw_w")))
		snprintf(cells[7], CELL, "%.0fW", json_number_value(json_object_get(n, "power_draw_w")));
	else
		snprintf(cells[7], CELL, "-");
	cells[8][0] = '\0';
	if (maint) {
		const char *why = json_string_value(
			json_object_get(json_object_get(n, "maintenance"), "reason"));

		len += (size_t)snprintf(cells[8], CELL, "maintenance: %s", why ? why : "");
	}
	json_array_foreach(reasons, i, r) {
		if (len < CELL)
			len += (size_t)snprintf(cells[8] + len, CELL - len, "%s%s", len ? "; " : "",
						str_or(r, ""));
	}
	for (char *p = cells[8]; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
}

static void print_table(const json_t *nodes, const json_t *summary, int colour)
{
	static const char *const headers[NCOLS] = { "NODE",   "POWER", "AGENT", "HEALTH", "GPUS",
						    "DRIVER/CUDA", "HOT", "DRAW",  "REASONS" };
	size_t n = json_array_size(nodes), w[NCOLS];
	char (*cells)[NCOLS][CELL] = calloc(n ? n : 1, sizeof(*cells));
	const char *keys[] = { "ok", "warning", "critical", "unknown", "maintenance", "hung" };
	size_t i;

	if (!cells)
		return;
	for (size_t c = 0; c < NCOLS; c++)
		w[c] = strlen(headers[c]);
	for (i = 0; i < n; i++) {
		fill_row(cells[i], json_array_get(nodes, i));
		for (size_t c = 0; c < NCOLS; c++)
			if (width(cells[i][c]) > w[c])
				w[c] = width(cells[i][c]);
	}
	for (size_t c = 0; c < NCOLS; c++)
		printf("%s%-*s", c ? "  " : "", c + 1 < NCOLS ? (int)w[c] : 0, headers[c]);
	printf("\n");
	for (i = 0; i < n; i++) {
		const json_t *node = json_array_get(nodes, i);
		const char *health = json_string_value(json_object_get(node, "health"));
		int maint = json_is_object(json_object_get(node, "maintenance"));

		for (size_t c = 0; c < NCOLS; c++) {
			int pad = c + 1 < NCOLS ? (int)(w[c] - width(cells[i][c])) : 0;

			if (c)
				printf("  ");
			if (c == 3 && colour)
				printf("%s%s\033[0m%*s", colour_of(health ? health : "", maint),
				       cells[i][c], pad, "");
			else
				printf("%s%*s", cells[i][c], pad, "");
		}
		printf("\n");
	}
	printf("%" JSON_INTEGER_FORMAT " nodes:",
	       json_integer_value(json_object_get(summary, "nodes")));
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		json_int_t v = json_integer_value(json_object_get(summary, keys[i]));

		if (v || i < 3)
			printf("%s %" JSON_INTEGER_FORMAT " %s", i ? "," : "", v, keys[i]);
	}
	printf("\n");
	free(cells);
}

/* Takes "--watch [S]" and "--watch=S" out of argv (the option table has no optional values). */
static int watch_take(struct cli_ctx *ctx, int *argc, char **argv, int64_t *out_every)
{
	int j = 0;

	for (int i = 0; i < *argc; i++) {
		const char *v = NULL;

		if (strcmp(argv[i], "--") == 0) {
			while (i < *argc)
				argv[j++] = argv[i++];
			break;
		}
		if (strcmp(argv[i], "--watch") == 0) {
			*out_every = 2;
			if (i + 1 < *argc && argv[i + 1][0] >= '0' && argv[i + 1][0] <= '9' &&
			    kiln_parse_duration(out_every, argv[i + 1]) == 0)
				i++;
			continue;
		}
		if (strncmp(argv[i], "--watch=", 8) == 0) {
			v = argv[i] + 8;
			if (kiln_parse_duration(out_every, v) < 0 || *out_every < 1)
				return cli_usage_error(ctx, "--watch: '%s' is not a number of seconds", v);
			continue;
		}
		argv[j++] = argv[i];
	}
	*argc = j;
	return 0;
}

static int status_run(struct cli_ctx *ctx, int argc, char **argv)
{
	struct status_args a = { .ctx = ctx };
	struct cli_args pos = { 0 };
	json_t *res = NULL;
	char *range = NULL, path[2048];
	int64_t every = 0;
	int rc, tty = isatty(STDOUT_FILENO);
	const char *nc = getenv("NO_COLOR");

	rc = watch_take(ctx, &argc, argv, &every);
	if (rc < 0)
		return rc;
	rc = cli_args_parse(&pos, ctx, status_opts, argc - 1, argv + 1, status_opt, &a);
	if (rc < 0)
		goto cleanup;
	if (ctx->help) {
		cli_help_print(stdout, ctx, "[NODERANGE] [--problems] [--watch [S]]",
			       "Shows every node's stored state: power, agent, health and why, GPUs, "
			       "driver, CUDA, the hottest GPU and the power draw (no BMC is asked).\n"
			       "--watch [S] refreshes every S seconds (default 2).",
			       status_opts);
		goto cleanup;
	}
	if (pos.n > 1) {
		rc = cli_usage_error(ctx, "unexpected argument '%s'", pos.v[1]);
		goto cleanup;
	}
	if (pos.n == 1 && !(range = cli_url_escape(pos.v[0]))) {
		rc = kiln_fail(KILN_ERROR, "out of memory");
		goto cleanup;
	}
	snprintf(path, sizeof(path), "/status%s%s%s", range || a.problems ? "?" : "",
		 range ? "range=" : "", range ? range : "");
	if (a.problems)
		snprintf(path + strlen(path), sizeof(path) - strlen(path), "%sproblems=1",
			 range ? "&" : "");
	for (;;) {
		json_decref(res);
		res = NULL;
		rc = cli_api(&res, NULL, ctx, "GET", path, NULL);
		if (rc < 0)
			goto cleanup;
		if (every && tty)
			printf("\033[H\033[2J");
		if (ctx->output == CLI_OUT_JSON)
			rc = out_json_print(json_object_get(res, "nodes"), stdout);
		else
			print_table(json_object_get(res, "nodes"), json_object_get(res, "summary"),
				    tty && !(nc && nc[0]));
		fflush(stdout);
		if (!every)
			break;
		sleep((unsigned)every);
	}
cleanup:
	json_decref(res);
	free(range);
	free(pos.v);
	return rc;
}

const struct cli_cmd cmd_status = { "status", "the fleet at a glance: power, agent, health",
				    status_run };
