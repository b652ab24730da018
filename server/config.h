/* kilnd.conf: the server's settings, one table of typed, bounded keys (see deploy/kilnd.conf.example). */
#ifndef KILND_CONFIG_H
#define KILND_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "kiln/config.h"

struct kilnd_config {
	char *listen;            /* ADDR:PORT, [ADDR6]:PORT */
	char *log_level;         /* error|warn|info|debug */
	char *tls_cert;          /* PEM certificate, or NULL */
	char *tls_key;           /* PEM private key, or NULL */
	int http_threads;        /* MHD thread pool size; 0: one per CPU, at most 16 */
	int http_max_connections;
	int64_t http_connection_timeout; /* seconds an idle connection is kept */
	char *webhook_urls;      /* comma-separated URLs events are POSTed to, or NULL */
	char *webhook_min_severity; /* info|warning|critical */
	int64_t webhook_timeout; /* seconds per POST */
	int webhook_retries;     /* further attempts after a failed POST */
	int webhook_queue;       /* deliveries waiting at most; the oldest is dropped beyond */
	double report_energy_price; /* per kWh, 0: no cost in the report */
	char *report_currency;   /* shown with the cost, or NULL */
};

extern const struct kiln_cfg_key kilnd_config_table[];
extern const size_t kilnd_config_table_len;

/* Fills cfg with the defaults. Returns 0 or KILN_EINVAL (a bad default: a programming error). */
int kilnd_config_init(struct kilnd_config *cfg);

/* Loads path over cfg; a bad line fails with KILN_EINVAL naming the file, line and key. */
int kilnd_config_load(struct kilnd_config *cfg, const char *path);

/* Sets one key from text, as a file line would ("http.threads", "8"). */
int kilnd_config_set(struct kilnd_config *cfg, const char *key, const char *value);

void kilnd_config_free(struct kilnd_config *cfg);

/* Writes an example kilnd.conf that documents every key with its default, commented out. */
int kilnd_config_example_write(FILE *f);

#endif
