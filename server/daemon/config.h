/* SPDX-License-Identifier: Apache-2.0 */
/* kilnd.conf: the server's settings, one table of typed, bounded keys (see deploy/kilnd.conf.example). */
#ifndef KILND_CONFIG_H
#define KILND_CONFIG_H

#include <stdbool.h>
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
	int64_t http_request_timeout;    /* seconds from accept to the whole request */
	int http_per_address_connections; /* 0: none on loopback, 1024 elsewhere */
	double http_enroll_rate;         /* enrollments a second per address; 0: no limit */
	int http_enroll_burst;
	bool allow_core_dumps;
	int events_per_node;     /* events a node may add a minute; 0: no limit */
	char *webhook_urls;      /* comma-separated URLs events are POSTed to, or NULL */
	char *webhook_min_severity; /* info|warning|critical */
	int64_t webhook_timeout; /* seconds per POST */
	int webhook_retries;     /* further attempts after a failed POST */
	int webhook_queue;       /* deliveries waiting at most; the oldest is dropped beyond */
	double report_energy_price; /* per kWh, 0: no cost in the report */
	char *report_currency;   /* shown with the cost, or NULL */
	/* [store] */
	char *store_backend;       /* sqlite|postgresql */
	char *store_connection;    /* libpq connection string or URI, or NULL */
	char *store_password_file; /* or NULL */
	/* [cluster] several kilnd on one PostgreSQL database (cluster.c) */
	char *cluster_group;       /* or NULL: any group */
	char *cluster_url;         /* what the others give out for this one; NULL: derived */
	int64_t cluster_lease;     /* seconds */
	/* [bmc] the engine shared by the poller and the actions */
	int bmc_fanout;          /* BMC requests in flight at most */
	char *bmc_ca_dir;        /* nodes' tls_ca_file must be in it; NULL or "": anywhere */
	int64_t bmc_connect_timeout;
	int64_t bmc_request_timeout;
	int64_t bmc_action_timeout;
	int64_t bmc_ipmi_session_idle; /* seconds a kept IPMI session may idle; 0: none kept */
	int bmc_redfish_threads; /* Redfish loop threads; 0: one per core */
	int64_t bmc_status_timeout; /* milliseconds, 0: bmc_request_timeout */
	/* [power] pacing of power actions over a range */
	int power_batch;         /* nodes per batch; 0: all at once */
	int64_t power_interval;  /* seconds between batches */
	/* [poller] */
	int64_t poller_interval;
	int poller_sensors_every;
	int poller_sel_every;
	int poller_unreachable_failures;
	int poller_circuit_failures;
	int64_t poller_backoff_max;
	int64_t poller_probe_interval;
	int64_t poller_health_every;
	int64_t poller_inventory_every;
	int64_t poller_history_retention;
	/* [health] thresholds of server/health/health.c */
	int64_t health_agent_interval;
	int health_hung_intervals;
	int health_power_fresh_intervals;
	int64_t health_xid_window;
	int64_t health_ecc_window;
	double health_gpu_temp_max;
	double health_inlet_temp_max;
	int64_t health_starved_for;
	double health_starved_util_max;
	double health_starved_iowait_min;
	double health_fleet_silence_pct;
	int health_fleet_silence_min;
	int64_t health_bmc_log_window;
	int64_t health_boot_time;
	int64_t health_fault_return_window;
	int64_t health_kernel_window;
	double health_disk_warn_pct;
	double health_disk_full_pct;
	int64_t health_bmc_clock_skew_max;
	double health_throttle_busy_min;
	int health_throttle_reports;
	int64_t health_link_error_window;
	/* [remediation] automatic power cycles of hung nodes */
	bool remediation_enabled;
	int64_t remediation_grace;
	int remediation_max_per_hour;
	/* [metrics] GET /metrics */
	bool metrics_allow_unauthenticated_loopback;
	/* [scheduler] the batch scheduler of the nodes (guard.c, sched.c) */
	char *scheduler_type;    /* none|slurm */
	char *scheduler_scontrol;
	char *scheduler_squeue;
	int64_t scheduler_timeout; /* seconds a scheduler command may take */
	int64_t scheduler_drain_poll; /* milliseconds between two looks of a drain */
	bool scheduler_drain_hung;
	int64_t scheduler_view_interval; /* seconds between two counts of the cluster's jobs */
	char *scheduler_node_name; /* the Slurm name of a kiln node: {name}, {short} */
	/* [work] what counts as work on a node */
	char *work_ignore_processes;
	int64_t work_report_fresh;
	/* [jobs] reinstall jobs */
	int64_t jobs_step_timeout;
	int64_t jobs_boot_timeout;
	int64_t jobs_retry_interval;
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
