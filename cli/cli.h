/* SPDX-License-Identifier: Apache-2.0 */
/* The kiln CLI's shared pieces: global options, the command table and option parsing. */
#ifndef KILN_CLI_H
#define KILN_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <kiln/http.h>
#include <kiln/servers.h>

/*
 * Codes beyond kiln/error.h's that only the CLI uses; main() turns them into exit
 * statuses: 0 -> 0, CLI_EUSAGE -> 2, CLI_EPARTIAL -> 3, any other negative code -> 1.
 */
enum {
	CLI_EUSAGE = -100,   /* bad command line; the message is the one line to print */
	CLI_EPARTIAL = -101, /* some nodes failed; the output already says which */
};

enum cli_output { CLI_OUT_TABLE, CLI_OUT_JSON };

/* Global options (given before or after the command) and the resolved connection. */
struct cli_ctx {
	/* From the command line; NULL when not given. */
	const char *url;
	const char *token_file;
	const char *ca;
	const char *fingerprint;
	enum cli_output output;
	bool yes;
	bool dry_run;
	bool help;
	/*
	 * Not NULL while the command tables are listed (kiln --list-commands, kiln completion):
	 * --help then writes the command's synopsis and options here as tab-separated lines
	 * (cli_help_print) and walks every verb (cli_verb_dispatch) instead of printing help.
	 */
	FILE *list;
	char cmd_path[64]; /* "node add": the words so far, for messages and help */

	/* Filled by cli_client_open() (client.c); freed by cli_ctx_free(). */
	char *base_url;    /* the current server's: "http://127.0.0.1:8470/api/v1" */
	struct kiln_servers servers; /* --url/KILN_URL/url: one or several, comma-separated */
	char *token;
	char *ca_file;
	char *tls_fingerprint;
	struct kiln_tls_trust trust;
	int confirm_above;    /* cli.conf's confirm_above; -1 when not set there */
	bool opened;
};

void cli_ctx_free(struct cli_ctx *ctx);

/* One option of a command's table. */
struct cli_opt {
	const char *name;  /* long name without dashes: "bmc-user" */
	char short_name;   /* 'o', or 0 */
	const char *arg;   /* metavar ("URL") for an option with a value; NULL for a flag */
	int id;            /* handed to the command's callback */
	const char *help;  /* one line */
};

/*
 * Called for each option of the command's own table; value is NULL for a flag.
 * Returns 0, or a negative code with kiln_fail() set (CLI_EUSAGE for a bad value).
 */
typedef int (*cli_opt_fn)(void *ud, const struct cli_opt *opt, const char *value);

/* Positional arguments left after option parsing (borrowed from argv). */
struct cli_args {
	char **v;
	size_t n;
};

/*
 * Parses argv[0..argc) against opts (terminated by a zeroed entry; may be NULL) and the
 * global options, which set fields of ctx. "--name value", "--name=value", "-o json",
 * "-ojson" and "--" are understood. Positional arguments go into pos (the caller frees
 * pos->v). An unknown option or a missing value returns CLI_EUSAGE with one line.
 */
int cli_args_parse(struct cli_args *pos, struct cli_ctx *ctx, const struct cli_opt *opts,
		   int argc, char **argv, cli_opt_fn fn, void *ud);

/*
 * Parses the global options at the start of argv (up to the first positional argument or
 * "--"); *next is the index of the first argument not consumed.
 */
int cli_args_globals(struct cli_ctx *ctx, int argc, char **argv, int *next);

/* Returns CLI_EUSAGE with "<cmd_path>: <message> (see 'kiln <cmd_path> --help')". */
int cli_usage_error(const struct cli_ctx *ctx, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Prints "usage: kiln <cmd_path> <synopsis>", the summary, the options and the globals. */
void cli_help_print(FILE *f, const struct cli_ctx *ctx, const char *synopsis, const char *summary,
		    const struct cli_opt *opts);

/*
 * The name of names[0..n) nearest to word, for "did you mean": one edit away, else the only
 * name word starts, else two edits away (changing at most half of word: "s" is no typo of
 * "sel"); NULL when none is that near.
 */
const char *cli_nearest(const char *word, const char *const *names, size_t n);

/* The usage error "unknown <what> 'word'; did you mean 'nearest'?" (without the question
 * when no name is near). */
int cli_unknown_word(const struct cli_ctx *ctx, const char *what, const char *word,
		     const char *const *names, size_t n);

/* Appends word to ctx->cmd_path. */
void cli_ctx_push(struct cli_ctx *ctx, const char *word);

/* A top-level command: "node", "token", ... argv[0] is the command's name. */
struct cli_cmd {
	const char *name;
	const char *summary;
	int (*run)(struct cli_ctx *ctx, int argc, char **argv);
};

/* The command table (commands.c), terminated by a NULL entry. */
extern const struct cli_cmd *const cli_commands[];

/*
 * Writes every command, verb, synopsis and option of the tables, the global options and
 * the cli.conf keys to f, one tab-separated line each (see cmd_completion.c for the
 * format). Runs each command's --help in list mode: nothing is sent to kilnd.
 */
int cli_commands_list(FILE *f);

/* Writes s (NULL or empty: "-") with newlines and tabs as spaces, then end: a listing field. */
void cli_list_field(FILE *f, const char *s, char end);
/* Writes help text from column col wrapped at the terminal's width (80 columns when not a
 * terminal), further lines indented to column indent (its own line breaks kept), then a line
 * break. */
void cli_help_wrap(FILE *f, const char *text, int col, int indent);

/* Writes the global options as "global" lines of cli_commands_list's format. */
void cli_globals_list(FILE *f);

/* Writes the cli.conf keys (client.c) as "conf" lines of cli_commands_list's format. */
void cli_conf_keys_list(FILE *f);

/* A verb of a command with several ("node add", "node list", ...). */
struct cli_verb {
	const char *name;
	const char *synopsis; /* after "kiln node add " */
	const char *summary;
	int (*run)(struct cli_ctx *ctx, int argc, char **argv); /* argv[0] is the verb */
};

/*
 * Runs the verb named by argv[1] (argv[0] is the command). No verb, or --help before
 * one, prints the verb list; an unknown verb is a usage error.
 */
int cli_verb_dispatch(struct cli_ctx *ctx, const char *summary, const struct cli_verb *verbs,
		      int argc, char **argv);

extern const struct cli_cmd cmd_node;
extern const struct cli_cmd cmd_status;
extern const struct cli_cmd cmd_events;
/* "kiln node maintenance" (cmd_node_maintenance.c), a verb of cmd_node. */
int cli_node_maintenance(struct cli_ctx *ctx, int argc, char **argv);
extern const struct cli_cmd cmd_token;
extern const struct cli_cmd cmd_audit;
extern const struct cli_cmd cmd_report;
extern const struct cli_cmd cmd_agent;
extern const struct cli_cmd cmd_gpus;
/* Reinstall (cmd_image.c, cmd_reinstall.c, cmd_jobs.c). */
extern const struct cli_cmd cmd_image;
extern const struct cli_cmd cmd_reinstall;
extern const struct cli_cmd cmd_jobs;
/* The instances sharing a PostgreSQL store (cmd_cluster.c). */
extern const struct cli_cmd cmd_cluster;
/* Live BMC commands (cmd_power.c, cmd_boot.c, cmd_media.c, cmd_sensors.c, cmd_sel.c,
 * cmd_inventory.c). */
extern const struct cli_cmd cmd_power;
extern const struct cli_cmd cmd_boot;
extern const struct cli_cmd cmd_media;
extern const struct cli_cmd cmd_sensors;
extern const struct cli_cmd cmd_sel;
extern const struct cli_cmd cmd_inventory;
extern const struct cli_cmd cmd_console;
extern const struct cli_cmd cmd_completion;

#endif
