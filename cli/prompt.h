/* SPDX-License-Identifier: Apache-2.0 */
/* Secrets and questions for the CLI: no-echo password prompts, confirmations, secret files. */
#ifndef KILN_CLI_PROMPT_H
#define KILN_CLI_PROMPT_H

/* Longest secret accepted from a file or the terminal. */
#define PROMPT_SECRET_MAX 1024

/*
 * Reads a secret from the controlling terminal with echo off (restored on return and on
 * SIGINT/SIGTERM). The caller wipes and frees *out. KILN_ENOTFOUND when there is no
 * terminal; KILN_EINVAL for an empty answer.
 */
int prompt_secret(char **out, const char *prompt);

/*
 * Asks question on the terminal, answer y/yes or n (default no). Returns 1 for yes, 0 for
 * no, KILN_ENOTFOUND when there is no terminal.
 */
int prompt_confirm(const char *question);

/*
 * Reads a secret from path ("-": standard input): the first line without its line end,
 * at most PROMPT_SECRET_MAX bytes. The caller wipes and frees *out. KILN_EINVAL when it is
 * empty or too long, KILN_ERROR when unreadable (the message names the file).
 */
int secret_read_file(char **out, const char *path);

/* Wipes and frees a secret; accepts NULL. */
void secret_free(char *s);

#endif
