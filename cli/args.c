/* SPDX-License-Identifier: Apache-2.0 */
/* Command-line parsing for the kiln CLI: option tables, global options, help and verbs. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <kiln/error.h>
#include <kiln/parse.h>

#include "cli.h"

enum {
	G_URL = 1,
	G_TOKEN_FILE,
	G_CA,
	G_FINGERPRINT,
	G_OUTPUT,
	G_YES,
	G_DRY_RUN,
	G_HELP,
};

static const struct cli_opt global_opts[] = {
	{ "url", 0, "URL", G_URL, "kilnd's address, or several comma-separated (tried in turn) (KILN_URL; default http://127.0.0.1:8470)" },
	{ "token-file", 0, "FILE", G_TOKEN_FILE, "API token file (KILN_TOKEN_FILE, or KILN_TOKEN)" },
	{ "ca", 0, "FILE", G_CA, "trust kilnd's HTTPS certificate through this CA file" },
	{ "fingerprint", 0, "SHA256", G_FINGERPRINT, "trust kilnd's certificate with this SHA-256" },
	{ "output", 'o', "table|json", G_OUTPUT, "output format (default table)" },
	{ "yes", 'y', NULL, G_YES, "do not ask for confirmation" },
	{ "dry-run", 0, NULL, G_DRY_RUN, "print what would happen and change nothing" },
	{ "help", 'h', NULL, G_HELP, "show this help" },
	{ 0 },
};

void cli_ctx_push(struct cli_ctx *ctx, const char *word)
{
	size_t len = strlen(ctx->cmd_path);

	if (len && len + 1 < sizeof(ctx->cmd_path))
		ctx->cmd_path[len++] = ' ';
	kiln_strlcpy(ctx->cmd_path + len, word, sizeof(ctx->cmd_path) - len);
}

int cli_usage_error(const struct cli_ctx *ctx, const char *fmt, ...)
{
	char msg[384];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (ctx->cmd_path[0])
		return kiln_fail(CLI_EUSAGE, "%s: %s (see 'kiln %s --help')", ctx->cmd_path, msg,
				 ctx->cmd_path);
	return kiln_fail(CLI_EUSAGE, "%s (see 'kiln --help')", msg);
}

static const struct cli_opt *find_long(const struct cli_opt *opts, const char *name, size_t len)
{
	for (; opts && opts->name; opts++)
		if (strlen(opts->name) == len && strncmp(opts->name, name, len) == 0)
			return opts;
	return NULL;
}

static const struct cli_opt *find_short(const struct cli_opt *opts, char c)
{
	for (; opts && opts->name; opts++)
		if (opts->short_name && opts->short_name == c)
			return opts;
	return NULL;
}

static int apply_global(struct cli_ctx *ctx, const struct cli_opt *opt, const char *value)
{
	switch (opt->id) {
	case G_URL: ctx->url = value; break;
	case G_TOKEN_FILE: ctx->token_file = value; break;
	case G_CA: ctx->ca = value; break;
	case G_FINGERPRINT: ctx->fingerprint = value; break;
	case G_OUTPUT:
		if (strcmp(value, "table") == 0)
			ctx->output = CLI_OUT_TABLE;
		else if (strcmp(value, "json") == 0)
			ctx->output = CLI_OUT_JSON;
		else
			return cli_usage_error(ctx, "-o: '%s' is not table or json", value);
		break;
	case G_YES: ctx->yes = true; break;
	case G_DRY_RUN: ctx->dry_run = true; break;
	case G_HELP: ctx->help = true; break;
	default: break;
	}
	return 0;
}

static int apply(struct cli_ctx *ctx, const struct cli_opt *opt, bool global, const char *value,
		 cli_opt_fn fn, void *ud)
{
	if (global)
		return apply_global(ctx, opt, value);
	return fn ? fn(ud, opt, value) : 0;
}

/* Parses one "--name[=value]" at argv[*i]; may consume argv[*i + 1]. */
static int parse_long(struct cli_ctx *ctx, const struct cli_opt *opts, int argc, char **argv,
		      int *i, cli_opt_fn fn, void *ud)
{
	const char *name = argv[*i] + 2, *eq = strchr(name, '='), *value = NULL;
	size_t len = eq ? (size_t)(eq - name) : strlen(name);
	const struct cli_opt *opt = find_long(opts, name, len);
	bool global = false;

	if (!opt) {
		opt = find_long(global_opts, name, len);
		global = true;
	}
	if (!opt)
		return cli_usage_error(ctx, "unknown option '--%.*s'", (int)len, name);
	if (!opt->arg) {
		if (eq)
			return cli_usage_error(ctx, "option '--%s' takes no value", opt->name);
	} else if (eq) {
		value = eq + 1;
	} else if (*i + 1 < argc) {
		value = argv[++*i];
	} else {
		return cli_usage_error(ctx, "option '--%s' needs a value (%s)", opt->name, opt->arg);
	}
	return apply(ctx, opt, global, value, fn, ud);
}

/* Parses a cluster of short options "-yo json" / "-ojson" at argv[*i]. */
static int parse_short(struct cli_ctx *ctx, const struct cli_opt *opts, int argc, char **argv,
		       int *i, cli_opt_fn fn, void *ud)
{
	const char *p = argv[*i] + 1;

	for (; *p; p++) {
		const struct cli_opt *opt = find_short(opts, *p);
		bool global = false;
		const char *value = NULL;
		int rc;

		if (!opt) {
			opt = find_short(global_opts, *p);
			global = true;
		}
		if (!opt)
			return cli_usage_error(ctx, "unknown option '-%c'", *p);
		if (opt->arg) {
			if (p[1])
				value = p + 1;
			else if (*i + 1 < argc)
				value = argv[++*i];
			else
				return cli_usage_error(ctx, "option '-%c' needs a value (%s)", *p, opt->arg);
		}
		rc = apply(ctx, opt, global, value, fn, ud);
		if (rc < 0 || value)
			return rc;
	}
	return 0;
}

int cli_args_parse(struct cli_args *pos, struct cli_ctx *ctx, const struct cli_opt *opts,
		   int argc, char **argv, cli_opt_fn fn, void *ud)
{
	char **v = NULL;
	size_t n = 0;
	bool only_positional = false;
	int rc = 0;

	v = calloc((size_t)argc + 1, sizeof(*v));
	if (!v)
		return kiln_fail(KILN_ERROR, "out of memory");
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];

		if (only_positional || a[0] != '-' || a[1] == '\0') {
			v[n++] = argv[i];
		} else if (strcmp(a, "--") == 0) {
			only_positional = true;
		} else if (a[1] == '-') {
			rc = parse_long(ctx, opts, argc, argv, &i, fn, ud);
		} else {
			rc = parse_short(ctx, opts, argc, argv, &i, fn, ud);
		}
		if (rc < 0)
			goto cleanup;
	}
	pos->v = v;
	pos->n = n;
	v = NULL;
cleanup:
	free(v);
	return rc;
}

/* Help text is wrapped to the terminal's width, at least HELP_WIDTH_MIN; to HELP_WIDTH_PIPE
 * columns when not written to a terminal. */
#define HELP_WIDTH_MIN 60
#define HELP_WIDTH_PIPE 80

static int help_width(FILE *f)
{
	struct winsize ws;

	if (!isatty(fileno(f)) || ioctl(fileno(f), TIOCGWINSZ, &ws) < 0 || ws.ws_col == 0)
		return HELP_WIDTH_PIPE;
	return ws.ws_col < HELP_WIDTH_MIN ? HELP_WIDTH_MIN : ws.ws_col;
}

/*
 * Writes text from column col (where the line already stands) wrapped at help_width between
 * words, each further line indented to column indent; its own line breaks are kept. A word
 * longer than a line stands alone on its line. Ends with a line break.
 */
void cli_help_wrap(FILE *f, const char *text, int col, int indent)
{
	const char *p = text ? text : "";
	int fresh = 1, width = help_width(f); /* fresh: nothing of the text on this line yet */

	while (*p) {
		size_t word = strcspn(p, " \n");

		if (!fresh && col + 1 + (int)word > width) {
			fprintf(f, "\n%*s", indent, "");
			col = indent;
		} else if (!fresh) {
			fputc(' ', f);
			col++;
		}
		fwrite(p, 1, word, f);
		col += (int)word;
		fresh = 0;
		p += word;
		if (*p == '\n') {
			fprintf(f, "\n%*s", indent, "");
			col = indent;
			fresh = 1;
			p++;
		}
		while (*p == ' ')
			p++;
	}
	fputc('\n', f);
}

static void opts_print(FILE *f, const struct cli_opt *opts)
{
	for (; opts && opts->name; opts++) {
		char left[64];
		int n;

		if (opts->short_name)
			snprintf(left, sizeof(left), "-%c, --%s%s%s", opts->short_name, opts->name,
				 opts->arg ? " " : "", opts->arg ? opts->arg : "");
		else
			snprintf(left, sizeof(left), "    --%s%s%s", opts->name, opts->arg ? " " : "",
				 opts->arg ? opts->arg : "");
		/* an option too long for its column has its description on the next line */
		if (strlen(left) > 31)
			n = fprintf(f, "  %s\n%35s", left, "");
		else
			n = fprintf(f, "  %-31s  ", left);
		cli_help_wrap(f, opts->help, strlen(left) > 31 ? 35 : n, 35);
	}
}

void cli_list_field(FILE *f, const char *s, char end)
{
	if (!s || !*s)
		s = "-";
	for (; *s; s++)
		fputc(*s == '\n' || *s == '\t' ? ' ' : *s, f);
	fputc(end, f);
}

/* One "opt" (or "global", path NULL) line per option. */
static void opts_list(FILE *f, const char *path, const struct cli_opt *opts)
{
	for (; opts && opts->name; opts++) {
		char s[3] = "-";

		if (opts->short_name)
			snprintf(s, sizeof(s), "-%c", opts->short_name);
		if (path)
			fprintf(f, "opt\t%s\t", path);
		else
			fputs("global\t", f);
		fprintf(f, "--%s\t%s\t", opts->name, s);
		cli_list_field(f, opts->arg, '\t');
		cli_list_field(f, opts->help, '\n');
	}
}

void cli_globals_list(FILE *f)
{
	opts_list(f, NULL, global_opts);
}

void cli_help_print(FILE *f, const struct cli_ctx *ctx, const char *synopsis, const char *summary,
		    const struct cli_opt *opts)
{
	if (ctx->list) {
		fprintf(ctx->list, "usage\t%s\t", ctx->cmd_path);
		cli_list_field(ctx->list, synopsis, '\t');
		cli_list_field(ctx->list, summary, '\n');
		opts_list(ctx->list, ctx->cmd_path, opts);
		return;
	}
	{
		int n = fprintf(f, "usage: kiln%s%s ", ctx->cmd_path[0] ? " " : "", ctx->cmd_path);

		cli_help_wrap(f, synopsis, n, n);
	}
	fputc('\n', f);
	cli_help_wrap(f, summary, 0, 0);
	if (opts && opts->name) {
		fprintf(f, "\noptions:\n");
		opts_print(f, opts);
	}
	fprintf(f, "\nglobal options:\n");
	opts_print(f, global_opts);
}

int cli_args_globals(struct cli_ctx *ctx, int argc, char **argv, int *next)
{
	int i;

	for (i = 0; i < argc; i++) {
		const char *a = argv[i];
		int rc;

		if (a[0] != '-' || a[1] == '\0')
			break;
		if (strcmp(a, "--") == 0) {
			i++;
			break;
		}
		if (a[1] == '-')
			rc = parse_long(ctx, NULL, argc, argv, &i, NULL, NULL);
		else
			rc = parse_short(ctx, NULL, argc, argv, &i, NULL, NULL);
		if (rc < 0)
			return rc;
	}
	*next = i;
	return 0;
}

/* Edit distance (insertions, deletions, substitutions) between a and b, up to 63 chars. */
static size_t distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), row[64];

	if (la > 63 || lb > 63)
		return 64;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diag = row[0];

		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t up = row[j], best = diag + (a[i - 1] != b[j - 1]);

			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			diag = up;
			row[j] = best;
		}
	}
	return row[lb];
}

const char *cli_nearest(const char *word, const char *const *names, size_t n)
{
	const char *best = NULL, *prefixed = NULL;
	size_t best_d = 3, prefixes = 0; /* two edits at most: further is another word */

	for (size_t i = 0; i < n; i++) {
		size_t d = distance(word, names[i]);

		if (word[0] && strncmp(names[i], word, strlen(word)) == 0) {
			prefixed = names[i];
			prefixes++;
		}
		/* at most half of what was typed changed: "s" is not a typo of "sel" */
		if (d < best_d && d < strlen(names[i]) && 2 * d <= strlen(word)) {
			best = names[i];
			best_d = d;
		}
	}
	/* "po" is power when nothing else starts so; a typo close to a name beats that */
	if (best && best_d <= 1)
		return best;
	if (prefixes == 1)
		return prefixed;
	return best;
}

int cli_unknown_word(const struct cli_ctx *ctx, const char *what, const char *word,
		     const char *const *names, size_t n)
{
	const char *near = cli_nearest(word, names, n);

	if (near)
		return cli_usage_error(ctx, "unknown %s '%s'; did you mean '%s'?", what, word, near);
	return cli_usage_error(ctx, "unknown %s '%s'", what, word);
}

/* List mode: a "verb" line for each verb, then the verb's own --help (its usage and options). */
static int verbs_list(struct cli_ctx *ctx, const struct cli_verb *verbs)
{
	char saved[sizeof(ctx->cmd_path)];
	int rc = 0;

	memcpy(saved, ctx->cmd_path, sizeof(saved));
	for (const struct cli_verb *v = verbs; v->name && rc == 0; v++) {
		char help[] = "--help", *argv[] = { (char *)v->name, help, NULL };

		fprintf(ctx->list, "verb\t%s\t%s\t", saved, v->name);
		cli_list_field(ctx->list, v->synopsis, '\t');
		cli_list_field(ctx->list, v->summary, '\n');
		cli_ctx_push(ctx, v->name);
		rc = v->run(ctx, 2, argv);
		memcpy(ctx->cmd_path, saved, sizeof(saved));
	}
	return rc;
}

int cli_verb_dispatch(struct cli_ctx *ctx, const char *summary, const struct cli_verb *verbs,
		      int argc, char **argv)
{
	const struct cli_verb *v;
	int i, rc;

	/* Global options may come between the command and its verb ("kiln node -o json list"). */
	rc = cli_args_globals(ctx, argc - 1, argv + 1, &i);
	if (rc < 0)
		return rc;
	i++;
	if (i >= argc && ctx->list)
		return verbs_list(ctx, verbs);
	if (i >= argc && ctx->help) {
		int name_w = 0, synopsis_w = 0;

		printf("usage: kiln %s VERB [options]\n\n", ctx->cmd_path);
		cli_help_wrap(stdout, summary, 0, 0);
		printf("\nverbs:\n");
		/* a table: columns as wide as their longest (ASCII) text, two spaces apart */
		for (v = verbs; v->name; v++) {
			if ((int)strlen(v->name) > name_w)
				name_w = (int)strlen(v->name);
			if ((int)strlen(v->synopsis) > synopsis_w)
				synopsis_w = (int)strlen(v->synopsis);
		}
		for (v = verbs; v->name; v++) {
			int n = printf("  %-*s  %-*s  ", name_w, v->name, synopsis_w, v->synopsis);

			cli_help_wrap(stdout, v->summary, n, name_w + synopsis_w + 6);
		}
		printf("\n'kiln %s VERB --help' describes a verb and its options.\n", ctx->cmd_path);
		return 0;
	}
	if (i >= argc)
		return cli_usage_error(ctx, "missing verb");
	for (v = verbs; v->name; v++) {
		if (strcmp(v->name, argv[i]) == 0) {
			cli_ctx_push(ctx, v->name);
			return v->run(ctx, argc - i, argv + i);
		}
	}
	{
		const char *names[32];
		size_t n = 0;

		for (v = verbs; v->name && n < 32; v++)
			names[n++] = v->name;
		return cli_unknown_word(ctx, "verb", argv[i], names, n);
	}
}
