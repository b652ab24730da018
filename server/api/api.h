/* SPDX-License-Identifier: Apache-2.0 */
/* kilnd's REST API server (libmicrohttpd, epoll): what main.c starts and stops. */
#ifndef KILND_API_H
#define KILND_API_H

#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

#include "daemon/secret.h"

/* Request bodies are capped; a bigger one is answered 413 without reading it. */
#define API_BODY_MAX (1024 * 1024)

struct api_server;
struct bmc_engine;
struct live;
struct cluster;

/* A parsed --listen ADDR:PORT. */
struct api_listen {
	struct sockaddr_storage addr;
	socklen_t addr_len;
	char host[64];  /* numeric address as given or resolved, without brackets */
	int port;       /* the bound port once api_listen_open succeeded */
	int loopback;   /* 127.0.0.0/8 or ::1 */
};

/* Parses "ADDR:PORT", "[ADDR6]:PORT" or "localhost:PORT" (numeric addresses otherwise). */
int api_listen_parse(struct api_listen *out, const char *text);

/* Opens, binds and listens (O_CLOEXEC); fills l->port with the bound port (for port 0). */
int api_listen_open(int *out_fd, struct api_listen *l);

/* The base URL clients use ("http://127.0.0.1:8470"); a wildcard address becomes loopback. */
void api_listen_url(char *out, size_t outlen, const struct api_listen *l, int tls);

struct api_options {
	const char *db_path;            /* every server thread opens its own store on it */
	const struct secret_key *key;   /* kept, not copied: it must outlive this */
	int listen_fd;                  /* from api_listen_open; the server owns it once started */
	int ipv6;
	unsigned threads;               /* 1: one epoll thread; more: a pool */
	unsigned max_connections;
	unsigned connection_timeout;    /* seconds */
	const char *tls_cert_pem;       /* both NULL: plain HTTP */
	const char *tls_key_pem;
	struct bmc_engine *engine;     /* the BMC engine; NULL: none */
	struct live *live;             /* live BMC calls (power, sensors, ...); NULL: none */
	struct cluster *cluster;       /* this instance (GET /cluster); NULL: none */
	double enroll_rate;            /* enrollments a second per client address; 0: no limit */
	unsigned enroll_burst;         /* ... and at once */
	unsigned request_timeout;      /* seconds from accept to the whole request; 0: none */
	unsigned per_address_connections; /* connections per client address; 0: no limit */
};

/* Starts serving. The caller stops it with api_server_stop. */
int api_server_start(struct api_server **out, const struct api_options *opt);

/* Stops accepting, finishes the requests in flight, joins the threads; accepts NULL. */
void api_server_stop(struct api_server *srv);

/* GET /metrics' settings ([metrics] and [health]), set before the server starts. */
struct api_metrics_config {
	int allow_unauthenticated_loopback; /* a request from loopback needs no token */
	int hung_intervals;                 /* an agent silent longer exports no agent series */
	int64_t agent_interval_s;           /* for a report that names no interval */
	const char *store_target;           /* what store_open takes: the series are made
					     * from kilnd's start and kept up to date between
					     * scrapes through it (NULL: at scrape time only);
					     * valid until api_metrics_stop */
};
void api_metrics_configure(const struct api_metrics_config *cfg);
/* Stops keeping the series between scrapes and frees them (after the API stopped). */
void api_metrics_stop(void);

/* The pacing of POST /power when a request gives none ([power] batch and interval). */
void api_power_pacing_set(int batch, int64_t interval_s);

/* Prints the route table, "METHOD PATH ROLE" a line: the single list of endpoints. */
int api_routes_print(FILE *f);

#endif
