/* SPDX-License-Identifier: Apache-2.0 */
/* Leveled logging to stderr with timestamps. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "kiln/error.h"
#include "kiln/escape.h"
#include "kiln/log.h"

static enum kiln_log_level current_level = KILN_LOG_INFO;
static const char *ident = "kiln";
static const char *const level_names[] = { "error", "warn", "info", "debug" };

void kiln_log_set_level(enum kiln_log_level level)
{
	current_level = level;
}

enum kiln_log_level kiln_log_get_level(void)
{
	return current_level;
}

int kiln_log_level_parse(enum kiln_log_level *out, const char *s)
{
	for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (strcmp(s, level_names[i]) == 0) {
			*out = (enum kiln_log_level)i;
			return 0;
		}
	}
	return kiln_fail(KILN_EINVAL, "log level must be error, warn, info or debug, not '%s'", s);
}

void kiln_log_set_ident(const char *name)
{
	ident = name;
}

void kiln_log(enum kiln_log_level level, const char *fmt, ...)
{
	char line[2048], safe[4096], stamp[32];
	struct timespec ts;
	struct tm tm;
	va_list ap;

	if (level > current_level)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* Whatever untrusted text a line carries (a BMC's message, an agent's string) reaches
	 * the journal or a terminal as one line with nothing that steers it. One fprintf per
	 * line so concurrent threads do not interleave within a line. */
	fprintf(stderr, "%s.%03ldZ %s %s: %s\n", stamp, ts.tv_nsec / 1000000L, ident,
		level_names[level], kiln_escape(safe, sizeof(safe), line, 0));
}

char *kiln_log_quote(char *out, size_t outlen, const char *untrusted)
{
	return kiln_escape(out, outlen, untrusted, KILN_ESC_QUOTE);
}
