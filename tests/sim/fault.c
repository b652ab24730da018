/* SPDX-License-Identifier: Apache-2.0 */
/* kiln-bmcsim: --fault SPEC parsing ("hang:1%", "503:ports=9001,9002:count=5") and targeting. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fault.h"
#include "kiln/error.h"
#include "kiln/parse.h"

/* Cuts the next sep-separated part off *cursor; NULL at the end. */
static char *next_part(char **cursor, char sep)
{
	char *start = *cursor;
	if (!start)
		return NULL;
	char *end = strchr(start, sep);
	if (end) {
		*end = '\0';
		*cursor = end + 1;
	} else {
		*cursor = NULL;
	}
	return start;
}

static int parse_list(int *out, int *n, char *list, int min, int max, const char *what)
{
	char *cursor = list;
	*n = 0;
	for (char *tok = next_part(&cursor, ','); tok; tok = next_part(&cursor, ',')) {
		if (*n >= FAULT_LIST_MAX)
			return kiln_fail(KILN_EINVAL, "fault: too many %s (at most %d)", what, FAULT_LIST_MAX);
		if (kiln_parse_int(&out[*n], tok, min, max) < 0)
			return kiln_fail_prefix(KILN_EINVAL, "fault: %s", what);
		(*n)++;
	}
	return *n ? 0 : kiln_fail(KILN_EINVAL, "fault: empty %s list", what);
}

int fault_parse(struct fault_spec *out, const char *spec)
{
	struct fault_spec s;
	char buf[2048];
	char *cursor = buf;
	memset(&s, 0, sizeof(s));
	s.share = 100;
	s.fault.count = -1;
	s.fault.prob = 100;
	if (kiln_strlcpy(buf, spec, sizeof(buf)) >= sizeof(buf))
		return kiln_fail(KILN_EINVAL, "fault: spec too long");
	char *kind = next_part(&cursor, ':');
	if (!kind || !*kind)
		return kiln_fail(KILN_EINVAL, "fault: empty spec");
	static const struct { const char *name; enum fault_kind kind; } kinds[] = {
		{ "hang", FAULT_HANG }, { "reset", FAULT_RESET }, { "slow", FAULT_SLOW },
		{ "malformed", FAULT_MALFORMED }, { "truncated", FAULT_TRUNCATED },
		{ "412", FAULT_STALE_ETAG }, { "busy", FAULT_BUSY },
	};
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (strcmp(kind, kinds[i].name) == 0)
			s.fault.kind = kinds[i].kind;
	if (s.fault.kind == FAULT_NONE) {
		if (kiln_parse_int(&s.fault.status, kind, 400, 599) < 0)
			return kiln_fail(KILN_EINVAL, "fault: unknown kind '%.32s' (hang, reset, slow, malformed, "
					 "truncated, 412, busy or a status 400-599)", kind);
		s.fault.kind = FAULT_STATUS;
	}
	for (char *tok = next_part(&cursor, ':'); tok; tok = next_part(&cursor, ':')) {
		size_t len = strlen(tok);
		int rc = 0;
		if (strcmp(tok, "all") == 0) {
			s.share = 100;
		} else if (len > 1 && tok[len - 1] == '%') {
			tok[len - 1] = '\0';
			rc = kiln_parse_int(&s.share, tok, 0, 100);
		} else if (strncmp(tok, "ports=", 6) == 0) {
			s.share = -1;
			rc = parse_list(s.ports, &s.nports, tok + 6, 1, 65535, "ports");
		} else if (strncmp(tok, "index=", 6) == 0) {
			s.share = -1;
			rc = parse_list(s.indexes, &s.nindexes, tok + 6, 0, 1 << 20, "index");
		} else if (strncmp(tok, "count=", 6) == 0) {
			int64_t c;
			rc = kiln_parse_int64(&c, tok + 6, 1, INT64_MAX);
			s.fault.count = c;
		} else if (strncmp(tok, "prob=", 5) == 0) {
			rc = kiln_parse_int(&s.fault.prob, tok + 5, 0, 100);
		} else if (strncmp(tok, "ms=", 3) == 0) {
			rc = kiln_parse_int(&s.fault.ms, tok + 3, 1, 600000);
		} else if (strncmp(tok, "retry=", 6) == 0) {
			rc = kiln_parse_int(&s.fault.retry_s, tok + 6, 0, 86400);
		} else {
			return kiln_fail(KILN_EINVAL, "fault: unknown part '%.32s' in '%.64s'", tok, spec);
		}
		if (rc < 0)
			return kiln_fail_prefix(KILN_EINVAL, "fault '%.64s'", spec);
	}
	*out = s;
	return 0;
}

bool fault_targets(const struct fault_spec *s, int index, int port)
{
	if (s->share >= 0) {
		/* spreads the share evenly: BMC i is hit when floor((i+1)p/100) steps up */
		long long p = s->share;
		return ((long long)(index + 1) * p) / 100 > ((long long)index * p) / 100;
	}
	for (int i = 0; i < s->nports; i++)
		if (s->ports[i] == port)
			return true;
	for (int i = 0; i < s->nindexes; i++)
		if (s->indexes[i] == index)
			return true;
	return false;
}
