/* SPDX-License-Identifier: Apache-2.0 */
/* Table-driven INI configuration (inih): every key typed, bounded and validated. */
#ifndef KILN_CONFIG_H
#define KILN_CONFIG_H

#include <stddef.h>
#include <stdint.h>

enum kiln_cfg_type {
	KILN_CFG_INT,      /* int, bounds min..max */
	KILN_CFG_INT64,    /* int64_t, bounds min..max */
	KILN_CFG_BOOL,     /* bool */
	KILN_CFG_DOUBLE,   /* double, bounds dmin..dmax */
	KILN_CFG_DURATION, /* int64_t seconds ("30s", "5m"), bounds min..max */
	KILN_CFG_DURATION_MS, /* int64_t milliseconds ("1500ms", "2s"), bounds min..max in ms */
	KILN_CFG_STRING,   /* char * (malloc'd; the table's owner frees with kiln_config_free) */
	KILN_CFG_ENUM,     /* char *, one of the '|'-separated words in choices */
};

struct kiln_cfg_key {
	const char *section; /* "" for keys before any [section] */
	const char *name;
	enum kiln_cfg_type type;
	size_t offset;       /* offsetof(struct your_config, field) */
	int64_t min, max;
	double dmin, dmax;
	const char *choices; /* KILN_CFG_ENUM only */
	const char *def;     /* default as text, parsed like a file value; NULL: zero/NULL */
	const char *help;    /* one line, for docs and the example config */
};

/* Sets every key of table in target to its default. Returns 0 or KILN_EINVAL (bad default).
 * target must be zeroed or hold values set by these functions (old strings are freed). */
int kiln_config_defaults(void *target, const struct kiln_cfg_key *table, size_t n);

/*
 * Loads path into target (defaults should be applied first). An unknown section or key,
 * a bad value or an unreadable file fails with KILN_EINVAL and a message naming the file,
 * the line, the key and the problem: "kilnd.conf:12: poller.interval: 5 is out of range [10, 3600]".
 * A key set twice in one file is an error too. On failure target may be partly updated.
 */
int kiln_config_load(void *target, const struct kiln_cfg_key *table, size_t n, const char *path);

/* Sets one key from text ("section.name" = value), as from a file line. */
int kiln_config_set(void *target, const struct kiln_cfg_key *table, size_t n, const char *key,
		    const char *value);

/* Frees the STRING/ENUM fields of target. */
void kiln_config_free(void *target, const struct kiln_cfg_key *table, size_t n);

#endif
