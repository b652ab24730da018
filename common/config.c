/* SPDX-License-Identifier: Apache-2.0 */
/* Table-driven INI configuration over inih: each key typed, bounded, named in errors. */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ini.h>

#include "kiln/config.h"
#include "kiln/error.h"
#include "kiln/parse.h"

#define FIELD(target, key, type) ((type *)(void *)((char *)(target) + (key)->offset))

static const struct kiln_cfg_key *key_find(const struct kiln_cfg_key *table, size_t n,
					   const char *section, const char *name)
{
	for (size_t i = 0; i < n; i++) {
		if (strcmp(table[i].section, section) == 0 && strcmp(table[i].name, name) == 0)
			return &table[i];
	}
	return NULL;
}

static int section_known(const struct kiln_cfg_key *table, size_t n, const char *section)
{
	for (size_t i = 0; i < n; i++) {
		if (strcmp(table[i].section, section) == 0)
			return 1;
	}
	return 0;
}

/* "section.name", or just "name" for keys before any section. */
static const char *key_label(char *buf, size_t len, const char *section, const char *name)
{
	snprintf(buf, len, "%s%s%s", section, section[0] ? "." : "", name);
	return buf;
}

/* Whether word is one of the '|'-separated choices. */
static int choice_valid(const char *choices, const char *word)
{
	size_t wlen = strlen(word);

	for (const char *p = choices; p && *p;) {
		const char *bar = strchr(p, '|');
		size_t len = bar ? (size_t)(bar - p) : strlen(p);

		if (len == wlen && memcmp(p, word, len) == 0)
			return 1;
		p = bar ? bar + 1 : NULL;
	}
	return 0;
}

static int string_set(char **field, const char *value)
{
	char *copy = strdup(value);

	if (!copy)
		return kiln_fail(KILN_ERROR, "out of memory");
	free(*field);
	*field = copy;
	return 0;
}

/* Parses value for key into target; the message (without the key) is set on failure. */
static int value_set(void *target, const struct kiln_cfg_key *k, const char *value)
{
	int64_t v64;
	double d;
	bool b;
	int rc;

	switch (k->type) {
	case KILN_CFG_INT:
		if ((rc = kiln_parse_int64(&v64, value, k->min < INT_MIN ? INT_MIN : k->min,
					   k->max > INT_MAX ? INT_MAX : k->max)) < 0)
			return rc;
		*FIELD(target, k, int) = (int)v64;
		return 0;
	case KILN_CFG_INT64:
		if ((rc = kiln_parse_int64(&v64, value, k->min, k->max)) < 0)
			return rc;
		*FIELD(target, k, int64_t) = v64;
		return 0;
	case KILN_CFG_BOOL:
		if ((rc = kiln_parse_bool(&b, value)) < 0)
			return rc;
		*FIELD(target, k, bool) = b;
		return 0;
	case KILN_CFG_DOUBLE:
		if ((rc = kiln_parse_double(&d, value, k->dmin, k->dmax)) < 0)
			return rc;
		*FIELD(target, k, double) = d;
		return 0;
	case KILN_CFG_DURATION:
	case KILN_CFG_DURATION_MS: {
		int ms = k->type == KILN_CFG_DURATION_MS;
		const char *u = ms ? "ms" : "s";

		rc = ms ? kiln_parse_duration_ms(&v64, value) : kiln_parse_duration(&v64, value);
		if (rc < 0)
			return rc;
		if (v64 < k->min || v64 > k->max)
			return kiln_fail(KILN_EINVAL, "%lld%s is out of range [%lld%s, %lld%s]",
					 (long long)v64, u, (long long)k->min, u, (long long)k->max, u);
		*FIELD(target, k, int64_t) = v64;
		return 0;
	}
	case KILN_CFG_STRING:
		return string_set(FIELD(target, k, char *), value);
	case KILN_CFG_ENUM:
		if (!choice_valid(k->choices, value))
			return kiln_fail(KILN_EINVAL, "'%s' is not one of %s", value,
					 k->choices ? k->choices : "(none)");
		return string_set(FIELD(target, k, char *), value);
	}
	return kiln_fail(KILN_EINVAL, "unknown key type %d", (int)k->type);
}

int kiln_config_defaults(void *target, const struct kiln_cfg_key *table, size_t n)
{
	char label[256];

	for (size_t i = 0; i < n; i++) {
		const struct kiln_cfg_key *k = &table[i];
		int rc;

		if (k->def) {
			if ((rc = value_set(target, k, k->def)) < 0)
				return kiln_fail_prefix(KILN_EINVAL, "default of %s",
							key_label(label, sizeof(label), k->section,
								  k->name));
			continue;
		}
		switch (k->type) {
		case KILN_CFG_INT: *FIELD(target, k, int) = 0; break;
		case KILN_CFG_INT64:
		case KILN_CFG_DURATION:
		case KILN_CFG_DURATION_MS: *FIELD(target, k, int64_t) = 0; break;
		case KILN_CFG_BOOL: *FIELD(target, k, bool) = false; break;
		case KILN_CFG_DOUBLE: *FIELD(target, k, double) = 0.0; break;
		case KILN_CFG_STRING:
		case KILN_CFG_ENUM:
			free(*FIELD(target, k, char *));
			*FIELD(target, k, char *) = NULL;
			break;
		}
	}
	return 0;
}

/* Applies one section/name/value; the message names the key but not the file. */
static int entry_apply(void *target, const struct kiln_cfg_key *table, size_t n,
		       const char *section, const char *name, const char *value,
		       const struct kiln_cfg_key **out_key)
{
	const struct kiln_cfg_key *k = key_find(table, n, section, name);
	char label[256];
	int rc;

	key_label(label, sizeof(label), section, name);
	if (!k) {
		if (section[0] && !section_known(table, n, section))
			return kiln_fail(KILN_EINVAL, "unknown section [%s]", section);
		return kiln_fail(KILN_EINVAL, "%s: unknown key", label);
	}
	if ((rc = value_set(target, k, value)) < 0)
		return kiln_fail_prefix(rc == KILN_ERROR ? KILN_ERROR : KILN_EINVAL, "%s", label);
	if (out_key)
		*out_key = k;
	return 0;
}

int kiln_config_set(void *target, const struct kiln_cfg_key *table, size_t n, const char *key,
		    const char *value)
{
	const char *dot = strchr(key, '.');
	char section[128];

	if (!dot)
		return entry_apply(target, table, n, "", key, value, NULL);
	if ((size_t)(dot - key) >= sizeof(section))
		return kiln_fail(KILN_EINVAL, "%s: unknown key", key);
	memcpy(section, key, (size_t)(dot - key));
	section[dot - key] = '\0';
	return entry_apply(target, table, n, section, dot + 1, value, NULL);
}

struct load_ctx {
	void *target;
	const struct kiln_cfg_key *table;
	size_t n;
	FILE *f;
	char *line;     /* getline buffer */
	size_t line_cap;
	int lineno;     /* line last handed to inih */
	int err_line;   /* first failing line, 0 when none */
	int err_code;
	char err[400];
	bool *seen;     /* per key: already set by this file */
};

static void ctx_fail(struct load_ctx *c, int code)
{
	if (c->err_line)
		return;
	c->err_line = c->lineno;
	c->err_code = code;
	snprintf(c->err, sizeof(c->err), "%s", kiln_error_last());
}

/* inih reader: one whole line per call, so the line count stays exact. */
static char *reader(char *str, int num, void *stream)
{
	struct load_ctx *c = stream;
	ssize_t len = getline(&c->line, &c->line_cap, c->f);

	if (len < 0)
		return NULL;
	c->lineno++;
	if (memchr(c->line, '\0', (size_t)len))
		ctx_fail(c, kiln_fail(KILN_EINVAL, "NUL character in line"));
	if (num < 2)
		return NULL;
	if (len > num - 1) {
		/* Hand inih a whole (cut) line so that it never reads on for the rest. */
		ctx_fail(c, kiln_fail(KILN_EINVAL, "line longer than %d characters", num - 2));
		len = num - 1;
		c->line[len - 1] = '\n';
	}
	memcpy(str, c->line, (size_t)len);
	str[len] = '\0';
	return str;
}

static int handler(void *user, const char *section, const char *name, const char *value)
{
	struct load_ctx *c = user;
	const struct kiln_cfg_key *k = NULL;
	char label[256];
	int rc;

	if (c->err_line)
		return 1; /* report the first problem only */
	rc = entry_apply(c->target, c->table, c->n, section, name, value, &k);
	if (rc < 0) {
		ctx_fail(c, rc);
		return 1;
	}
	if (c->seen[k - c->table]) {
		ctx_fail(c, kiln_fail(KILN_EINVAL, "%s: set more than once",
				      key_label(label, sizeof(label), section, name)));
		return 1;
	}
	c->seen[k - c->table] = true;
	return 1;
}

int kiln_config_load(void *target, const struct kiln_cfg_key *table, size_t n, const char *path)
{
	struct load_ctx c = { .target = target, .table = table, .n = n };
	int rc = 0, ini_rc;

	c.f = fopen(path, "re");
	if (!c.f) {
		rc = kiln_fail(KILN_EINVAL, "%s: %s", path, strerror(errno));
		goto cleanup;
	}
	c.seen = calloc(n ? n : 1, sizeof(*c.seen));
	if (!c.seen) {
		rc = kiln_fail(KILN_ERROR, "out of memory");
		goto cleanup;
	}
	ini_rc = ini_parse_stream(reader, &c, handler, &c);
	if (c.err_line) {
		rc = kiln_fail(c.err_code == KILN_ERROR ? KILN_ERROR : KILN_EINVAL, "%s:%d: %s",
			       path, c.err_line, c.err);
	} else if (ini_rc > 0) {
		rc = kiln_fail(KILN_EINVAL, "%s:%d: syntax error (expected [section] or key = value)",
			       path, ini_rc);
	} else if (ini_rc < 0 || ferror(c.f)) {
		rc = kiln_fail(KILN_EINVAL, "%s: read error", path);
	}
cleanup:
	if (c.f)
		fclose(c.f);
	free(c.line);
	free(c.seen);
	return rc;
}

void kiln_config_free(void *target, const struct kiln_cfg_key *table, size_t n)
{
	if (!target)
		return;
	for (size_t i = 0; i < n; i++) {
		if (table[i].type == KILN_CFG_STRING || table[i].type == KILN_CFG_ENUM) {
			free(*FIELD(target, &table[i], char *));
			*FIELD(target, &table[i], char *) = NULL;
		}
	}
}
