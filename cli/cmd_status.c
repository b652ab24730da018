/* SPDX-License-Identifier: Apache-2.0 */
/* kiln status: the fleet at a glance from kilnd's stored state, a line per node and a summary. */
#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kiln/error.h>
#include <kiln/escape.h>
#include <kiln/json_arena.h>
#include <kiln/parse.h>

#include "cli.h"
#include "client.h"
#include "cmd_status.h"
#include "output.h"

#define NCOLS 10
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

/* One node's table line, read from either form; the values are borrowed from the answer. */
struct line {
	const json_t *node, *power, *power_age, *agent_age, *health, *gpus_seen, *gpus_expected;
	const json_t *driver, *cuda, *hottest, *draw, *reasons, *work;
	int maint;
	const char *maint_reason;
};

/* The rows form's columns the table reads, by name (the server may add columns). */
enum {
	COL_NODE, COL_POWER, COL_POWER_AGE, COL_AGENT_AGE, COL_HEALTH, COL_MAINT, COL_GPUS_SEEN,
	COL_GPUS_EXPECTED, COL_DRIVER, COL_CUDA, COL_HOTTEST, COL_DRAW, COL_REASONS, COL_WORK,
	COL_COUNT
};
static const char *const col_names[COL_COUNT] = {
	"node", "power", "power_age_s", "agent_age_s", "health", "maintenance_reason", "gpus_seen",
	"gpus_expected", "driver", "cuda", "hottest_gpu_c", "power_draw_w", "reasons", "work"
};

static void line_from_object(struct line *l, const json_t *n)
{
	const json_t *m = json_object_get(n, "maintenance");

	l->node = json_object_get(n, "node");
	l->power = json_object_get(n, "power");
	l->power_age = json_object_get(n, "power_age_s");
	l->agent_age = json_object_get(n, "agent_age_s");
	l->health = json_object_get(n, "health");
	l->gpus_seen = json_object_get(n, "gpus_seen");
	l->gpus_expected = json_object_get(n, "gpus_expected");
	l->driver = json_object_get(n, "driver");
	l->cuda = json_object_get(n, "cuda");
	l->hottest = json_object_get(n, "hottest_gpu_c");
	l->draw = json_object_get(n, "power_draw_w");
	l->reasons = json_object_get(n, "reasons");
	l->work = json_object_get(n, "work");
	l->maint = json_is_object(m);
	l->maint_reason = json_string_value(json_object_get(m, "reason"));
}

static void line_from_row(struct line *l, const json_t *row, const long col[COL_COUNT])
{
	const json_t *v[COL_COUNT];

	for (int i = 0; i < COL_COUNT; i++)
		v[i] = col[i] >= 0 ? json_array_get(row, (size_t)col[i]) : NULL;
	l->node = v[COL_NODE];
	l->power = v[COL_POWER];
	l->power_age = v[COL_POWER_AGE];
	l->agent_age = v[COL_AGENT_AGE];
	l->health = v[COL_HEALTH];
	l->gpus_seen = v[COL_GPUS_SEEN];
	l->gpus_expected = v[COL_GPUS_EXPECTED];
	l->driver = v[COL_DRIVER];
	l->cuda = v[COL_CUDA];
	l->hottest = v[COL_HOTTEST];
	l->draw = v[COL_DRAW];
	l->reasons = v[COL_REASONS];
	l->work = v[COL_WORK];
	l->maint = json_is_string(v[COL_MAINT]);
	l->maint_reason = json_string_value(v[COL_MAINT]);
}

/* A cell as out_cellf into CELL bytes would leave it: text past CELL - 1 bytes is cut at a
 * character and ends in "…", and nothing is added after that. */
struct cell {
	char s[CELL];
	size_t len;
	int cut;
};

static void cell_put(struct cell *c, const char *p, size_t n)
{
	if (c->cut)
		return;
	if (n > CELL - 1 - c->len) {
		memcpy(c->s + c->len, p, CELL - 1 - c->len);
		c->s[CELL - 1] = '\0';
		c->len = strlen(out_cut_mark(c->s, CELL));
		c->cut = 1;
		return;
	}
	memcpy(c->s + c->len, p, n);
	c->len += n;
	c->s[c->len] = '\0';
}

static void cell_str(struct cell *c, const char *s)
{
	cell_put(c, s, strlen(s));
}

static void cell_int(struct cell *c, long long v)
{
	char tmp[24], *p = tmp + sizeof(tmp);
	unsigned long long u = v < 0 ? 0 - (unsigned long long)v : (unsigned long long)v;

	do {
		*--p = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		*--p = '-';
	cell_put(c, p, (size_t)(tmp + sizeof(tmp) - p));
}

/* printf's "%.0f" (round half to even) for the values a table shows, without printf. */
static void cell_whole(struct cell *c, double v)
{
	double r = nearbyint(v);
	char tmp[64];
	int n;

	if (fabs(r) < 1e18) {
		if (r == 0 && signbit(r))
			cell_str(c, "-0");
		else
			cell_int(c, (long long)r);
		return;
	}
	n = snprintf(tmp, sizeof(tmp), "%.0f", v);
	cell_put(c, tmp, n > 0 ? (size_t)n : 0);
}

/* "12s", "5m", "3h", "2d"; "-" when v is not an integer */
static void cell_age(struct cell *c, const json_t *v)
{
	json_int_t s;

	if (!json_is_integer(v)) {
		cell_str(c, "-");
		return;
	}
	s = json_integer_value(v);
	if (s < 120) {
		cell_int(c, (long long)s);
		cell_str(c, "s");
	} else if (s < 7200) {
		cell_int(c, (long long)(s / 60));
		cell_str(c, "m");
	} else if (s < 172800) {
		cell_int(c, (long long)(s / 3600));
		cell_str(c, "h");
	} else {
		cell_int(c, (long long)(s / 86400));
		cell_str(c, "d");
	}
}

static const char *str_or(const json_t *v, const char *dflt)
{
	return json_is_string(v) ? json_string_value(v) : dflt;
}

static void fill_row(struct cell cells[NCOLS], const struct line *l)
{
	const json_t *r;
	size_t i;

	for (int c = 0; c < NCOLS; c++) {
		cells[c].len = 0;
		cells[c].cut = 0;
		cells[c].s[0] = '\0';
	}
	if (out_cell(cells[0].s, CELL, l->node))
		cells[0].len = strlen(cells[0].s);
	cell_str(&cells[1], str_or(l->power, "(null)"));
	cell_str(&cells[1], " (");
	cell_age(&cells[1], l->power_age);
	cell_str(&cells[1], ")");
	if (json_is_integer(l->agent_age))
		cell_age(&cells[2], l->agent_age);
	else
		cell_str(&cells[2], "never");
	if (l->maint)
		cell_str(&cells[3], "maint/");
	cell_str(&cells[3], str_or(l->health, "(null)"));
	if (json_is_integer(l->gpus_seen)) {
		cell_int(&cells[4], (long long)json_integer_value(l->gpus_seen));
		cell_str(&cells[4], "/");
		cell_int(&cells[4], (long long)json_integer_value(l->gpus_expected));
	} else {
		cell_str(&cells[4], "-");
	}
	cell_str(&cells[5], str_or(l->driver, "-"));
	cell_str(&cells[5], "/");
	cell_str(&cells[5], str_or(l->cuda, "-"));
	if (json_is_number(l->hottest)) {
		cell_whole(&cells[6], json_number_value(l->hottest));
		cell_str(&cells[6], "C");
	} else {
		cell_str(&cells[6], "-");
	}
	if (json_is_number(l->draw)) {
		cell_whole(&cells[7], json_number_value(l->draw));
		cell_str(&cells[7], "W");
	} else {
		cell_str(&cells[7], "-");
	}
	cell_str(&cells[8], str_or(l->work, "-"));
	if (l->maint) {
		cell_str(&cells[9], "maintenance: ");
		cell_str(&cells[9], l->maint_reason ? l->maint_reason : "");
	}
	json_array_foreach(l->reasons, i, r) {
		if (cells[9].len)
			cell_str(&cells[9], "; ");
		cell_str(&cells[9], str_or(r, ""));
	}
	/* agent and BMC text (versions, reasons quoting a BMC's log) reaches the terminal
	 * with nothing that steers it (kiln_escape; an escape is at most 4 bytes a byte), cut
	 * with "…" when its escapes make it longer than a cell */
	for (int c = 0; c < NCOLS; c++) {
		char safe[CELL * 4];

		kiln_escape(safe, sizeof(safe), cells[c].s, 0);
		cells[c].len = strlen(safe);
		if (cells[c].len >= CELL)
			cells[c].len = strlen(out_cut_mark(safe, CELL));
		memcpy(cells[c].s, safe, cells[c].len + 1);
	}
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
static size_t width(const char *s, size_t len)
{
	size_t w = 0;

	for (size_t i = 0; i < len; i++)
		w += ((unsigned char)s[i] & 0xC0) != 0x80;
	return w;
}

/* Every cell's text, one after the other, and where each line's cells start. */
struct laid {
	char *text;
	size_t len, cap;
	size_t (*off)[NCOLS + 1]; /* cell c of line i: text[off[i][c] .. off[i][c + 1]) */
	size_t (*w)[NCOLS];       /* its display width */
};

/* Room for one more line of cells (each under CELL bytes), so they are copied unchecked. */
static int laid_reserve(struct laid *t)
{
	size_t need = t->len + NCOLS * CELL, cap = t->cap ? t->cap : 65536;
	char *p;

	if (need <= t->cap)
		return 0;
	while (cap < need)
		cap *= 2;
	p = realloc(t->text, cap);
	if (!p)
		return kiln_fail(KILN_ERROR, "out of memory");
	t->text = p;
	t->cap = cap;
	return 0;
}

static void summary_print(FILE *out, const json_t *summary)
{
	static const char *const keys[] = { "ok", "warning", "critical", "unknown", "maintenance",
					     "hung" };

	fprintf(out, "%" JSON_INTEGER_FORMAT " nodes:",
		json_integer_value(json_object_get(summary, "nodes")));
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		json_int_t v = json_integer_value(json_object_get(summary, keys[i]));

		if (v || i < 3)
			fprintf(out, "%s %" JSON_INTEGER_FORMAT " %s", i ? "," : "", v, keys[i]);
	}
	fputc('\n', out);
}

int status_table_write(FILE *out, const json_t *answer, int colour)
{
	static const char *const headers[NCOLS] = { "NODE",   "POWER", "AGENT", "HEALTH", "GPUS",
						    "DRIVER/CUDA", "HOT", "DRAW",  "WORK",
						    "REASONS" };
	const json_t *rows = json_object_get(answer, "rows"), *list = rows, *v;
	const json_t *columns = json_object_get(answer, "columns");
	struct laid t = { 0 };
	struct cell cells[NCOLS];
	struct line *lines = NULL;
	char *body = NULL, *p;
	long col[COL_COUNT];
	size_t n, w[NCOLS], i, size = 0;
	int rc = 0;

	if (!rows)
		list = json_object_get(answer, "nodes");
	if (!json_is_array(list) || (rows && !json_is_array(columns)))
		return kiln_fail(KILN_EPROTO, "kilnd's status answer has neither rows nor nodes");
	for (int c = 0; c < COL_COUNT; c++) {
		col[c] = -1;
		json_array_foreach(columns, i, v)
			if (json_is_string(v) && strcmp(json_string_value(v), col_names[c]) == 0)
				col[c] = (long)i;
	}
	n = json_array_size(list);
	lines = calloc(n ? n : 1, sizeof(*lines));
	t.off = calloc(n ? n : 1, sizeof(*t.off));
	t.w = calloc(n ? n : 1, sizeof(*t.w));
	if (!lines || !t.off || !t.w) {
		rc = kiln_fail(KILN_ERROR, "out of memory");
		goto cleanup;
	}
	/* Pass 1: every cell once, and the widths. */
	for (size_t c = 0; c < NCOLS; c++)
		w[c] = strlen(headers[c]);
	for (i = 0; i < n; i++) {
		if (rows)
			line_from_row(&lines[i], json_array_get(list, i), col);
		else
			line_from_object(&lines[i], json_array_get(list, i));
		fill_row(cells, &lines[i]);
		if ((rc = laid_reserve(&t)) < 0)
			goto cleanup;
		for (size_t c = 0; c < NCOLS; c++) {
			t.off[i][c] = t.len;
			t.w[i][c] = width(cells[c].s, cells[c].len);
			if (t.w[i][c] > w[c])
				w[c] = t.w[i][c];
			memcpy(t.text + t.len, cells[c].s, cells[c].len);
			t.len += cells[c].len;
		}
		t.off[i][NCOLS] = t.len;
	}
	/* Pass 2: the lines' exact size, then the lines into one buffer. */
	for (i = 0; i < n; i++) {
		size += t.off[i][NCOLS] - t.off[i][0] + 2 * (NCOLS - 1) + 1;
		for (size_t c = 0; c + 1 < NCOLS; c++)
			size += w[c] - t.w[i][c];
		if (colour) {
			const char *health = json_string_value(lines[i].health);

			size += strlen(colour_of(health ? health : "", lines[i].maint)) + 4;
		}
	}
	body = malloc(size ? size : 1);
	if (!body) {
		rc = kiln_fail(KILN_ERROR, "out of memory");
		goto cleanup;
	}
	p = body;
	for (i = 0; i < n; i++) {
		for (size_t c = 0; c < NCOLS; c++) {
			size_t len = t.off[i][c + 1] - t.off[i][c];

			if (c) {
				memcpy(p, "  ", 2);
				p += 2;
			}
			if (c == 3 && colour) {
				const char *health = json_string_value(lines[i].health);
				const char *on = colour_of(health ? health : "", lines[i].maint);

				memcpy(p, on, strlen(on));
				p += strlen(on);
				memcpy(p, t.text + t.off[i][c], len);
				p += len;
				memcpy(p, "\033[0m", 4);
				p += 4;
			} else {
				memcpy(p, t.text + t.off[i][c], len);
				p += len;
			}
			if (c + 1 < NCOLS) {
				memset(p, ' ', w[c] - t.w[i][c]);
				p += w[c] - t.w[i][c];
			}
		}
		*p++ = '\n';
	}
	assert((size_t)(p - body) == size);
	for (size_t c = 0; c < NCOLS; c++)
		fprintf(out, "%s%-*s", c ? "  " : "", c + 1 < NCOLS ? (int)w[c] : 0, headers[c]);
	fputc('\n', out);
	fwrite(body, 1, size, out);
	summary_print(out, json_object_get(answer, "summary"));
	if (ferror(out))
		rc = kiln_fail(KILN_ERROR, "writing the table failed");
cleanup:
	free(body);
	free(t.text);
	free(t.off);
	free(t.w);
	free(lines);
	return rc;
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
	struct kiln_json_arena *arena = NULL, *prev = NULL;
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
	/* The table asks for the rows form (a fraction of the objects' size); -o json keeps the
	 * documented objects. A kilnd without the rows form answers objects, which the table
	 * reads too. */
	snprintf(path, sizeof(path), "/status?problems=%d%s%s%s", a.problems,
		 ctx->output == CLI_OUT_JSON ? "" : "&form=rows", range ? "&range=" : "",
		 range ? range : "");
	for (;;) {
		json_decref(res);
		res = NULL;
		kiln_json_arena_free(arena);
		arena = NULL;
		/* The answer of 10,000 nodes is ~150,000 JSON values, each a malloc (and a free
		 * when it is released): about a third of the time jansson takes. The table's
		 * answer is read into an arena (kiln/json_arena.h) that goes as a whole once the
		 * answer is released; nothing inside the window hands jansson's memory to free()
		 * (no json_dumps). */
		if (ctx->output != CLI_OUT_JSON && (arena = kiln_json_arena_new()))
			prev = kiln_json_arena_enter(arena);
		rc = cli_api(&res, NULL, ctx, "GET", path, NULL);
		if (arena)
			kiln_json_arena_leave(prev);
		if (rc < 0)
			goto cleanup;
		if (every && tty)
			printf("\033[H\033[2J");
		if (ctx->output == CLI_OUT_JSON) {
			rc = out_json_print(json_object_get(res, "nodes"), stdout);
		} else {
			rc = status_table_write(stdout, res, tty && !(nc && nc[0]));
			if (rc < 0)
				goto cleanup;
		}
		fflush(stdout);
		if (!every)
			break;
		sleep((unsigned)every);
	}
cleanup:
	json_decref(res);
	kiln_json_arena_free(arena);
	free(range);
	free(pos.v);
	return rc;
}

const struct cli_cmd cmd_status = { "status", "the fleet at a glance: power, agent, health",
				    status_run };
