/* SPDX-License-Identifier: Apache-2.0 */
/* Delivery of reports to kilnd: the token (file or enrollment), direct send, the spool, oldest first. */
#ifndef KILN_AGENT_DELIVER_H
#define KILN_AGENT_DELIVER_H

#include <stddef.h>

#include <jansson.h>

#include "kiln/http.h"

struct spool;

/* What delivery needs; the caller fills the configuration and owns the spool. */
struct delivery {
	struct kiln_servers *servers;  /* --server: one URL or several, tried in turn */
	const char *token_file;        /* one of token_file and enroll_token_file */
	const char *enroll_token_file;
	const char *state_dir;         /* where an enrolled token is kept */
	struct kiln_tls_trust trust;
	struct spool *spool;
	char *token;                   /* NULL until read or enrolled; delivery_free wipes it */
};

/*
 * Delivers one report (its JSON text and parsed form): sent directly when the spool is empty,
 * else spooled behind the waiting ones and the spool drained oldest first. A report that is
 * not acknowledged stays in the spool. Returns 0 when everything was acknowledged, KILN_EINVAL
 * when kilnd refused this report (it is dropped), KILN_EIDENTITY when kilnd refuses this
 * host's reports for the node (409: only the newest report stays spooled, for the next
 * interval), another negative code when reports wait.
 * Logs what it does (called from main only).
 */
int delivery_send(struct delivery *d, json_t *report, const char *text, size_t len);

/* Wipes and frees the token. */
void delivery_free(struct delivery *d);

#endif
