/* SPDX-License-Identifier: Apache-2.0 */
/* Leveled logging to stderr; only main-level code logs, libraries return errors. */
#ifndef KILN_LOG_H
#define KILN_LOG_H

#include <stddef.h>

enum kiln_log_level { KILN_LOG_ERROR, KILN_LOG_WARN, KILN_LOG_INFO, KILN_LOG_DEBUG };

void kiln_log_set_level(enum kiln_log_level level);
enum kiln_log_level kiln_log_get_level(void);

/* Parses "error|warn|info|debug"; returns KILN_EINVAL otherwise. */
int kiln_log_level_parse(enum kiln_log_level *out, const char *s);

/* Sets the program name printed before each line ("kilnd"). */
void kiln_log_set_ident(const char *ident);

void kiln_log(enum kiln_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Copies untrusted text into out (size outlen, always terminated) with control
 * characters and quotes escaped, for log lines. Returns out.
 */
char *kiln_log_quote(char *out, size_t outlen, const char *untrusted);

#define log_error(...) kiln_log(KILN_LOG_ERROR, __VA_ARGS__)
#define log_warn(...) kiln_log(KILN_LOG_WARN, __VA_ARGS__)
#define log_info(...) kiln_log(KILN_LOG_INFO, __VA_ARGS__)
#define log_debug(...) kiln_log(KILN_LOG_DEBUG, __VA_ARGS__)

#endif
