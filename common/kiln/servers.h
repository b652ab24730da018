/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Several kilnd URLs for one fleet (kilnd instances sharing one store): the CLI and the agent
 * keep the list and move to the next URL when a request reaches nobody, so a dead instance
 * costs one refused connection, not a failed command or a silent agent.
 *
 *	for (size_t tries = 0;; tries++) {
 *		rc = request(kiln_servers_current(&s), ...);
 *		if (rc >= 0 || failure != KILN_HTTP_CONNECT || !kiln_servers_failover(&s, tries))
 *			break;
 *	}
 */
#ifndef KILN_SERVERS_H
#define KILN_SERVERS_H

#include <stddef.h>

struct kiln_servers {
	char **urls;  /* as given, a trailing /api/v1 and slashes dropped */
	size_t count;
	size_t cur;   /* the one the next request goes to */
};

/*
 * Parses "URL[,URL...]" (commas, optional spaces around them): each http:// or https://, at
 * most KILN_SERVERS_MAX, a repeat dropped. what names the option in errors ("--server").
 * 0, or KILN_EINVAL with a message naming the bad entry.
 */
#define KILN_SERVERS_MAX 16
int kiln_servers_parse(struct kiln_servers *s, const char *list, const char *what);
void kiln_servers_free(struct kiln_servers *s);

const char *kiln_servers_current(const struct kiln_servers *s);
/*
 * After try number tries (0 for the first) of one request reached nobody: moves to the next
 * URL and returns 1 when one is left that this request has not tried, else 0 (the request
 * has tried them all and fails).
 */
int kiln_servers_failover(struct kiln_servers *s, size_t tries);
/* "URL, URL, ..." for messages, into buf (truncated). */
void kiln_servers_describe(const struct kiln_servers *s, char *buf, size_t len);

#endif
