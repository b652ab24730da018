/* SPDX-License-Identifier: Apache-2.0 */
/* A list of kilnd URLs with failover to the next on a request that reached nobody. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/error.h"
#include "kiln/servers.h"

static int is_space(char c)
{
	return c == ' ' || c == '\t';
}

/* Adds list[0..len) (spaces trimmed, trailing slashes dropped) unless it is a repeat. */
static int add(struct kiln_servers *s, const char *p, size_t len, const char *what)
{
	char *url, **urls;

	while (len > 0 && is_space(*p)) {
		p++;
		len--;
	}
	while (len > 0 && (is_space(p[len - 1]) || p[len - 1] == '/'))
		len--;
	if (len > 7 && strncmp(p + len - 7, "/api/v1", 7) == 0)
		len -= 7; /* the callers add the API's path */
	while (len > 0 && p[len - 1] == '/')
		len--;
	if (len == 0)
		return kiln_fail(KILN_EINVAL, "%s: an empty URL in the list", what);
	if (!((len > 7 && strncmp(p, "http://", 7) == 0) ||
	      (len > 8 && strncmp(p, "https://", 8) == 0)))
		return kiln_fail(KILN_EINVAL, "%s: '%.*s' is not an http:// or https:// URL", what,
				 (int)(len > 200 ? 200 : len), p);
	for (size_t i = 0; i < s->count; i++)
		if (strlen(s->urls[i]) == len && strncmp(s->urls[i], p, len) == 0)
			return 0;
	if (s->count == KILN_SERVERS_MAX)
		return kiln_fail(KILN_EINVAL, "%s: more than %d URLs", what, KILN_SERVERS_MAX);
	url = strndup(p, len);
	urls = url ? realloc(s->urls, (s->count + 1) * sizeof(*urls)) : NULL;
	if (!urls) {
		free(url);
		return kiln_fail(KILN_ERROR, "out of memory");
	}
	urls[s->count++] = url;
	s->urls = urls;
	return 0;
}

int kiln_servers_parse(struct kiln_servers *s, const char *list, const char *what)
{
	const char *p = list, *comma;
	int rc;

	memset(s, 0, sizeof(*s));
	if (!list || !*list)
		return kiln_fail(KILN_EINVAL, "%s: no URL", what);
	for (;;) {
		comma = strchr(p, ',');
		rc = add(s, p, comma ? (size_t)(comma - p) : strlen(p), what);
		if (rc < 0) {
			kiln_servers_free(s);
			return rc;
		}
		if (!comma)
			return 0;
		p = comma + 1;
	}
}

void kiln_servers_free(struct kiln_servers *s)
{
	for (size_t i = 0; i < s->count; i++)
		free(s->urls[i]);
	free(s->urls);
	memset(s, 0, sizeof(*s));
}

const char *kiln_servers_current(const struct kiln_servers *s)
{
	return s->count ? s->urls[s->cur] : NULL;
}

int kiln_servers_failover(struct kiln_servers *s, size_t tries)
{
	if (s->count < 2)
		return 0;
	s->cur = (s->cur + 1) % s->count;
	return tries + 1 < s->count;
}

void kiln_servers_describe(const struct kiln_servers *s, char *buf, size_t len)
{
	size_t used = 0;

	if (len == 0)
		return;
	buf[0] = '\0';
	for (size_t i = 0; i < s->count && used < len; i++) {
		int n = snprintf(buf + used, len - used, "%s%s", i ? ", " : "", s->urls[i]);

		if (n < 0)
			break;
		used += (size_t)n;
	}
}
