/* SPDX-License-Identifier: Apache-2.0 */
/* kiln completion bash|zsh|nodes: shell completion generated from the command tables, and the
 * walk over those tables (kiln --list-commands) that the completion and the man page test use. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kiln/error.h>

#include "cli.h"
#include "client.h"

/*
 * The listing, one tab-separated line each ("-" for an empty field):
 *   cmd     NAME SUMMARY                      a command of cli_commands
 *   verb    PARENT NAME SYNOPSIS SUMMARY      a verb of a command ("node" "add")
 *   usage   PATH SYNOPSIS SUMMARY             what PATH's --help prints ("node add")
 *   opt     PATH --NAME -S ARG HELP           an option of PATH (ARG "-": a flag)
 *   global  --NAME -S ARG HELP                an option every command takes
 *   conf    KEY HELP                          a key of cli.conf
 */
int cli_commands_list(FILE *f)
{
	for (const struct cli_cmd *const *c = cli_commands; *c; c++) {
		struct cli_ctx ctx = { .list = f };
		char help[] = "--help", *argv[] = { (char *)(*c)->name, help, NULL };
		int rc;

		fprintf(f, "cmd\t%s\t", (*c)->name);
		cli_list_field(f, (*c)->summary, '\n');
		cli_ctx_push(&ctx, (*c)->name);
		rc = (*c)->run(&ctx, 2, argv);
		cli_ctx_free(&ctx);
		if (rc < 0)
			return rc;
	}
	cli_globals_list(f);
	cli_conf_keys_list(f);
	return 0;
}

/*
 * The shell code around the tables, in the syntax bash and zsh share: the walk over the words
 * typed so far. (Not "path": zsh ties it to PATH.)
 */
static const char walk_code[] =
	"# Completes subcommands, verbs, keywords (power cycle), options and their fixed values,\n"
	"# node names and @groups. Names come from `kiln completion nodes` (kilnd's node list),\n"
	"# cached for a minute per KILN_URL under ${XDG_CACHE_HOME:-~/.cache}/kiln.\n"
	"_kiln_targets() {\n"
	"\tlocal dir=${XDG_CACHE_HOME:-$HOME/.cache}/kiln f\n"
	"\tf=$dir/complete-$(printf '%s' \"${KILN_URL:-default}\" | cksum | cut -d' ' -f1)\n"
	"\tif [[ ! -f $f || -n $(find \"$f\" -mmin +1 2>/dev/null) ]]; then\n"
	"\t\t(umask 077; mkdir -p \"$dir\" &&\n"
	"\t\t\t{ timeout 3 \"$1\" completion nodes >\"$f.$$\" 2>/dev/null || : >\"$f.$$\"; } &&\n"
	"\t\t\tmv -f \"$f.$$\" \"$f\")\n"
	"\tfi\n"
	"\tcat \"$f\" 2>/dev/null\n"
	"}\n"
	"\n"
	"# _kiln_candidates PROGRAM WORD... CURRENT: the words CURRENT may become, or @file.\n"
	"_kiln_candidates() {\n"
	"\tlocal prog=$1 at=kiln w prev= kw=0 skip=0 pre= list=\n"
	"\tshift\n"
	"\twhile (($# > 1)); do\n"
	"\t\tw=$1\n"
	"\t\tshift\n"
	"\t\tprev=$w\n"
	"\t\tif ((skip)); then\n"
	"\t\t\tskip=0\n"
	"\t\t\tcontinue\n"
	"\t\tfi\n"
	"\t\tcase $w in\n"
	"\t\t--*=*) ;;\n"
	"\t\t-?*)\n"
	"\t\t\tif [[ -n ${_kiln_optarg[$at/$w]+x} || -n ${_kiln_optarg[kiln/$w]+x} ]]; then\n"
	"\t\t\t\tskip=1\n"
	"\t\t\tfi ;;\n"
	"\t\t*)\n"
	"\t\t\tif ((kw == 0)) && [[ -n ${_kiln_paths[$at/$w]+x} ]]; then\n"
	"\t\t\t\tat=$at/$w\n"
	"\t\t\telif [[ \" ${_kiln_words[$at]} \" == *\" $w \"* ]]; then\n"
	"\t\t\t\tkw=1\n"
	"\t\t\tfi ;;\n"
	"\t\tesac\n"
	"\tdone\n"
	"\tif ((skip)); then # the value of the option before\n"
	"\t\tif [[ -n ${_kiln_optarg[$at/$prev]+x} ]]; then\n"
	"\t\t\tprintf '%s\\n' \"${_kiln_optarg[$at/$prev]}\"\n"
	"\t\telse\n"
	"\t\t\tprintf '%s\\n' \"${_kiln_optarg[kiln/$prev]}\"\n"
	"\t\tfi\n"
	"\t\treturn 0\n"
	"\tfi\n"
	"\tif [[ $1 == -* ]]; then\n"
	"\t\tprintf '%s\\n' \"${_kiln_opts[$at]} ${_kiln_opts[kiln]}\"\n"
	"\t\treturn 0\n"
	"\tfi\n"
	"\t# a noderange completes its last comma-separated part\n"
	"\t[[ $1 == *,* ]] && pre=${1%,*},\n"
	"\t((kw == 0)) && [[ -z $pre ]] && list=${_kiln_words[$at]}\n"
	"\tif [[ -n ${_kiln_nodes[$at]+x} ]]; then\n"
	"\t\tfor w in $(_kiln_targets \"$prog\"); do\n"
	"\t\t\tlist=\"$list $pre$w\"\n"
	"\t\tdone\n"
	"\tfi\n"
	"\tprintf '%s\\n' \"$list\"\n"
	"}\n";

static const char bash_code[] =
	"\n"
	"_kiln_complete() {\n"
	"\tlocal cur=${COMP_WORDS[COMP_CWORD]} cands\n"
	"\tcands=$(_kiln_candidates \"${COMP_WORDS[@]:0:COMP_CWORD+1}\")\n"
	"\tif [[ $cands == @file ]]; then\n"
	"\t\tCOMPREPLY=($(compgen -f -- \"$cur\"))\n"
	"\telse\n"
	"\t\tCOMPREPLY=($(compgen -W \"$cands\" -- \"$cur\"))\n"
	"\tfi\n"
	"}\n"
	"complete -F _kiln_complete kiln\n";

static const char zsh_code[] =
	"\n"
	"_kiln() {\n"
	"\tlocal cands\n"
	"\tcands=$(_kiln_candidates \"${(@)words[1,CURRENT]}\")\n"
	"\tif [[ $cands == @file ]]; then\n"
	"\t\t_files\n"
	"\telse\n"
	"\t\tcompadd -- ${=cands}\n"
	"\tfi\n"
	"}\n"
	"\n"
	"# autoloaded from $fpath as _kiln, or sourced: `source <(kiln completion zsh)`\n"
	"if [[ ${funcstack[1]} == _kiln ]]; then\n"
	"\t_kiln \"$@\"\n"
	"else\n"
	"\tcompdef _kiln kiln\n"
	"fi\n";

/* The fields of one listing line, split in place at the tabs. */
#define FIELDS_MAX 6

static size_t fields_split(char **out, char *line)
{
	size_t n = 0;

	while (n < FIELDS_MAX) {
		char *tab = strchr(line, '\t');

		out[n++] = line;
		if (!tab)
			break;
		*tab = '\0';
		line = tab + 1;
	}
	return n;
}

/* Words written into the script unquoted: names, options, keywords. */
static bool plain(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!strchr("abcdefghijklmnopqrstuvwxyz0123456789-_.", *s))
			return false;
	return true;
}

/* A command path, "node add": plain words separated by single spaces. */
static bool path_plain(const char *s)
{
	char word[64];

	while (*s) {
		size_t len = strcspn(s, " ");

		if (len == 0 || len >= sizeof(word))
			return false;
		memcpy(word, s, len);
		word[len] = '\0';
		if (!plain(word))
			return false;
		s += len;
		if (*s == ' ')
			s++;
	}
	return true;
}

/* "-o" or "-" (none). */
static bool short_plain(const char *s)
{
	return strcmp(s, "-") == 0 || (s[0] == '-' && s[1] && strchr("abcdefghijklmnopqrstuvwxyz"
				       "ABCDEFGHIJKLMNOPQRSTUVWXYZ", s[1]) && !s[2]);
}

/* "a|b|c" (an option's fixed values, a synopsis' keywords): true when every part is plain. */
static bool alternatives(const char *s)
{
	char part[64];
	const char *bar;
	size_t len;

	if (!strchr(s, '|'))
		return false;
	for (;;) {
		bar = strchr(s, '|');
		len = bar ? (size_t)(bar - s) : strlen(s);

		if (len == 0 || len >= sizeof(part))
			return false;
		memcpy(part, s, len);
		part[len] = '\0';
		if (!plain(part))
			return false;
		if (!bar)
			return true;
		s = bar + 1;
	}
}

/* Writes "kiln/node/add" for the command path "node add" (empty: "kiln"). */
static void key_print(FILE *f, const char *path)
{
	fputs(*path ? "kiln/" : "kiln", f);
	for (; *path; path++)
		fputc(*path == ' ' ? '/' : *path, f);
}

static void words_print(FILE *f, const char *alts)
{
	for (; *alts; alts++)
		fputc(*alts == '|' ? ' ' : *alts, f);
}

/* One option: its names into _kiln_opts, and what its value completes to into _kiln_optarg. */
static void opt_print(FILE *f, const char *path, const char *name, const char *s, const char *arg)
{
	const char *names[] = { name, s };

	fputs("_kiln_opts[", f);
	key_print(f, path);
	fprintf(f, "]+=\" %s%s%s\"\n", name, strcmp(s, "-") ? " " : "", strcmp(s, "-") ? s : "");
	if (strcmp(arg, "-") == 0)
		return;
	for (size_t i = 0; i < 2; i++) {
		if (strcmp(names[i], "-") == 0)
			continue;
		fputs("_kiln_optarg[", f);
		key_print(f, path);
		fprintf(f, "/%s]=\"", names[i]);
		if (alternatives(arg))
			words_print(f, arg);
		else if (strstr(arg, "FILE"))
			fputs("@file", f);
		fputs("\"\n", f);
	}
}

/*
 * A synopsis: its first keyword alternatives ("status|on|off", not an option's values as in
 * "--capture on|off") and whether it takes node names.
 */
static void usage_print(FILE *f, const char *path, const char *synopsis)
{
	char word[128];
	const char *p = synopsis;
	bool after_opt = false;

	while (*p) {
		size_t len = strcspn(p, " ");

		if (len > 0 && len < sizeof(word)) {
			memcpy(word, p, len);
			word[len] = '\0';
			if (!after_opt && alternatives(word)) {
				fputs("_kiln_words[", f);
				key_print(f, path);
				fputs("]+=\" ", f);
				words_print(f, word);
				fputs("\"\n", f);
				break;
			}
			after_opt = word[0] == '-';
		}
		p += len;
		p += strspn(p, " ");
	}
	if (strstr(synopsis, "NODE")) {
		fputs("_kiln_nodes[", f);
		key_print(f, path);
		fputs("]=1\n", f);
	}
}

/* A command or a verb: a path of its own and a word of its parent. */
static void path_print(FILE *f, const char *parent, const char *name)
{
	fputs("_kiln_paths[", f);
	key_print(f, parent);
	fprintf(f, "/%s]=1\n_kiln_words[", name);
	key_print(f, parent);
	fprintf(f, "]+=\" %s\"\n", name);
}

/* Turns the listing into the tables the shell code reads. */
static void tables_print(FILE *f, char *listing)
{
	char *line = listing, *next, *fl[FIELDS_MAX];

	for (; line && *line; line = next) {
		size_t n;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		n = fields_split(fl, line);
		/* every name goes into the script unquoted: anything else is left out */
		if (strcmp(fl[0], "cmd") == 0 && n >= 2 && plain(fl[1]))
			path_print(f, "", fl[1]);
		else if (strcmp(fl[0], "verb") == 0 && n >= 3 && path_plain(fl[1]) && plain(fl[2]))
			path_print(f, fl[1], fl[2]);
		else if (strcmp(fl[0], "usage") == 0 && n >= 3 && path_plain(fl[1]))
			usage_print(f, fl[1], fl[2]);
		else if (strcmp(fl[0], "opt") == 0 && n >= 5 && path_plain(fl[1]) && plain(fl[2]) &&
			 short_plain(fl[3]))
			opt_print(f, fl[1], fl[2], fl[3], fl[4]);
		else if (strcmp(fl[0], "global") == 0 && n >= 4 && plain(fl[1]) && short_plain(fl[2]))
			opt_print(f, "", fl[1], fl[2], fl[3]);
	}
}

/* kiln completion nodes: the node names and @groups, one a line, for the shell code. */
static int nodes_print(struct cli_ctx *ctx)
{
	json_t *nodes = NULL, *n, *g;
	size_t i, j;
	int rc;

	rc = cli_api(&nodes, NULL, ctx, "GET", "/nodes", NULL);
	if (rc < 0)
		return rc;
	if (!json_is_array(nodes)) {
		json_decref(nodes);
		return kiln_fail(KILN_EPROTO, "kilnd's node list is not an array");
	}
	json_array_foreach(nodes, i, n) {
		const char *name = json_string_value(json_object_get(n, "name"));

		if (name)
			printf("%s\n", name);
	}
	/* a group once, however many nodes it has */
	json_t *seen = json_object();

	json_array_foreach(nodes, i, n) {
		json_array_foreach(json_object_get(n, "groups"), j, g) {
			const char *group = json_string_value(g);

			if (group && seen && !json_object_get(seen, group)) {
				json_object_set_new(seen, group, json_true());
				printf("@%s\n", group);
			}
		}
	}
	json_decref(seen);
	json_decref(nodes);
	return 0;
}

static int script_print(const char *shell)
{
	char *listing = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&listing, &len);
	bool zsh = strcmp(shell, "zsh") == 0;
	int rc;

	if (!mem)
		return kiln_fail(KILN_ERROR, "out of memory");
	rc = cli_commands_list(mem);
	if (fclose(mem) != 0 && rc == 0)
		rc = kiln_fail(KILN_ERROR, "out of memory");
	if (rc == 0) {
		printf("%s", zsh ? "#compdef kiln\n" : "");
		printf("# %s completion for kiln, generated by `kiln completion %s` from kiln's own\n"
		       "# command and option tables: regenerate it rather than editing it.\n",
		       shell, shell);
		printf("typeset -gA _kiln_paths _kiln_words _kiln_opts _kiln_optarg _kiln_nodes\n");
		tables_print(stdout, listing);
		printf("\n%s%s", walk_code, zsh ? zsh_code : bash_code);
	}
	free(listing);
	return rc;
}

static int completion_run(struct cli_ctx *ctx, int argc, char **argv)
{
	struct cli_args pos = { 0 };
	int rc;

	rc = cli_args_parse(&pos, ctx, NULL, argc - 1, argv + 1, NULL, NULL);
	if (rc < 0)
		goto cleanup;
	if (ctx->help) {
		cli_help_print(stdout, ctx, "bash|zsh|nodes",
			       "Prints the shell completion script (bash, zsh), generated from kiln's "
			       "command tables; 'nodes' prints the node names and @groups it completes.",
			       NULL);
		goto cleanup;
	}
	if (pos.n != 1) {
		rc = cli_usage_error(ctx, pos.n ? "unexpected argument '%s'" : "missing shell%s",
				     pos.n ? pos.v[1] : "");
		goto cleanup;
	}
	if (strcmp(pos.v[0], "bash") == 0 || strcmp(pos.v[0], "zsh") == 0)
		rc = script_print(pos.v[0]);
	else if (strcmp(pos.v[0], "nodes") == 0)
		rc = nodes_print(ctx);
	else
		rc = cli_usage_error(ctx, "'%s' is not bash, zsh or nodes", pos.v[0]);
cleanup:
	free(pos.v);
	return rc;
}

const struct cli_cmd cmd_completion = { "completion", "shell completion script (bash, zsh)",
					completion_run };
