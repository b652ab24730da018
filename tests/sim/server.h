/* SPDX-License-Identifier: Apache-2.0 */
/* kiln-bmcsim: the event loop: listening sockets, libmicrohttpd without listen sockets, delays, faults. */
#ifndef SIM_SERVER_H
#define SIM_SERVER_H

#include <stdbool.h>
#include <stddef.h>

#include "fault.h"
#include "sim.h"
#include "tree.h"

struct server_options {
	const char *host;        /* numeric IPv4 */
	int port;                /* first port; 0: the kernel picks each one */
	int count;
	bool tls;
	const char *cert_out;    /* where to write the generated certificate (PEM), or NULL */
	const char *ports_file;  /* where to write the ports, one a line, once listening */
};

struct sim_server;

/* Opens the listening sockets and the daemon; fails with kiln_fail() set. */
int server_create(struct sim_server **out, const struct tree *t, const struct sim_config *cfg,
		  const struct fault_spec *faults, size_t nfaults, const struct server_options *o);
/* Runs until SIGINT or SIGTERM. */
int server_run(struct sim_server *s);
void server_free(struct sim_server *s);

/* The first port and the TLS fingerprint (NULL without TLS), for the startup line. */
int server_port(const struct sim_server *s, int index);
const char *server_fingerprint(const struct sim_server *s);

#endif
