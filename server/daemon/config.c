/* SPDX-License-Identifier: Apache-2.0 */
/* kilnd.conf: the table of kilnd's configuration keys and the example file generated from it. */
#include <inttypes.h>
#include <stddef.h>
#include <string.h>

#include "daemon/config.h"
#include "kiln/error.h"

#define KEY(sec, nm, ty, field, lo, hi, ch, df, hp)                                              \
	{ .section = sec, .name = nm, .type = ty, .offset = offsetof(struct kilnd_config, field),   \
	  .min = lo, .max = hi, .choices = ch, .def = df, .help = hp }

const struct kiln_cfg_key kilnd_config_table[] = {
	KEY("", "listen", KILN_CFG_STRING, listen, 0, 0, NULL, "127.0.0.1:8470",
	    "Address and port of the REST API (ADDR:PORT or [ADDR6]:PORT; port 0 lets the kernel "
	    "choose). Plain HTTP is served only on loopback."),
	KEY("", "log_level", KILN_CFG_ENUM, log_level, 0, 0, "error|warn|info|debug", "info",
	    "Least severe level written to stderr."),
	KEY("", "tls_cert", KILN_CFG_STRING, tls_cert, 0, 0, NULL, NULL,
	    "PEM certificate for HTTPS. Without it, a non-loopback listen uses a self-signed "
	    "ECDSA P-256 certificate generated into the state dir (tls.crt)."),
	KEY("", "tls_key", KILN_CFG_STRING, tls_key, 0, 0, NULL, NULL,
	    "PEM private key matching tls_cert."),
	KEY("", "allow_core_dumps", KILN_CFG_BOOL, allow_core_dumps, 0, 0, NULL, "no",
	    "Let kilnd leave a core file when it crashes. A core holds secret.key and the BMC "
	    "passwords in use: leave it off unless debugging on a machine you trust."),
	KEY("store", "backend", KILN_CFG_ENUM, store_backend, 0, 0, "sqlite|postgresql", "sqlite",
	    "Where kilnd keeps its data: sqlite, the file kiln.db in the state dir (one kilnd), "
	    "or postgresql, the database named by connection."),
	KEY("store", "connection", KILN_CFG_STRING, store_connection, 0, 0, NULL, NULL,
	    "With backend = postgresql: the libpq connection string (host=db.lab port=5432 "
	    "dbname=kiln user=kiln sslmode=verify-full) or URI (postgresql://kiln@db.lab/kiln). "
	    "Put the password in password_file, not here."),
	KEY("store", "password_file", KILN_CFG_STRING, store_password_file, 0, 0, NULL, NULL,
	    "With backend = postgresql: a file whose first line is the database password, read "
	    "at every connect and never logged. Others must not be able to read it (chmod 0600 "
	    "or 0640 with kilnd's group)."),
	KEY("cluster", "group", KILN_CFG_STRING, cluster_group, 0, 0, NULL, NULL,
	    "With backend = postgresql, where several kilnd share one database: the node group "
	    "(kiln node --group) this instance serves, e.g. its room or site. The nodes of a "
	    "group are divided among the live instances of that group; a node whose groups no "
	    "instance serves goes to the instances without a group. Empty: any group."),
	KEY("cluster", "url", KILN_CFG_STRING, cluster_url, 0, 0, NULL, NULL,
	    "With backend = postgresql: the address of this instance's API that the others give "
	    "out (a node's serial console is on its owner: kiln console goes there), e.g. "
	    "https://kiln2.example:8470. Empty: the listen address, with this host's name for "
	    "a wildcard address (0.0.0.0, ::)."),
	KEY("cluster", "lease", KILN_CFG_DURATION, cluster_lease, 5, 600, NULL, "30s",
	    "With backend = postgresql: this instance writes its heartbeat into the database "
	    "every lease/3; one whose heartbeat is older than its lease is dead, and the other "
	    "instances take its nodes at their next look (within another lease/3)."),
	KEY("http", "threads", KILN_CFG_INT, http_threads, 0, 256, NULL, "0",
	    "Threads serving the REST API (epoll each); 0 means one per CPU, at most 16."),
	KEY("http", "max_connections", KILN_CFG_INT, http_max_connections, 16, 1000000, NULL,
	    "16384",
	    "Most client connections open at once; kilnd raises its open-file limit to match."),
	KEY("http", "connection_timeout", KILN_CFG_DURATION, http_connection_timeout, 1, 86400,
	    NULL, "60s", "An idle client connection is closed after this long."),
	KEY("http", "request_timeout", KILN_CFG_DURATION, http_request_timeout, 1, 3600, NULL,
	    "10s",
	    "A request's line, headers and body must arrive within this long from the "
	    "connection's accept (a client sending a byte now and then is closed at it); the "
	    "next one on a kept-alive connection within connection_timeout; an "
	    "answer and a console stream take as long as they need."),
	KEY("http", "per_address_connections", KILN_CFG_INT, http_per_address_connections, 0,
	    1000000, NULL, "0",
	    "Most connections open at once from one client address; 0: no limit on a loopback "
	    "listen, 1024 on any other."),
	{ .section = "http", .name = "enroll_rate", .type = KILN_CFG_DOUBLE,
	  .offset = offsetof(struct kilnd_config, http_enroll_rate), .dmin = 0, .dmax = 100000,
	  .def = "5",
	  .help = "Agent enrollments a second from one client address (beyond enroll_burst at "
		  "once); more are answered 429 with Retry-After, which the agent waits. 0: no "
		  "limit." },
	KEY("http", "enroll_burst", KILN_CFG_INT, http_enroll_burst, 1, 1000000, NULL, "100",
	    "Agent enrollments from one client address at once before enroll_rate applies."),
	KEY("events", "per_node", KILN_CFG_INT, events_per_node, 0, 1000000, NULL, "100",
	    "Events one node may add a minute (as many at once); beyond it they are held back "
	    "and summed up in one event (kind events-held) once the node is quiet for 10 s, or "
	    "a minute on: one agent's burst of Xids is not thousands of events and webhook "
	    "POSTs. 0: no limit."),
	KEY("webhook", "urls", KILN_CFG_STRING, webhook_urls, 0, 0, NULL, NULL,
	    "Comma-separated URLs that each event at or above min_severity is POSTed to as JSON "
	    "with a Slack-compatible \"text\" field. Empty: no webhooks."),
	KEY("webhook", "min_severity", KILN_CFG_ENUM, webhook_min_severity, 0, 0,
	    "info|warning|critical", "critical", "Least severe event sent to the webhooks."),
	KEY("webhook", "timeout", KILN_CFG_DURATION, webhook_timeout, 1, 300, NULL, "10s",
	    "A webhook POST that takes longer has failed."),
	KEY("webhook", "retries", KILN_CFG_INT, webhook_retries, 0, 20, NULL, "5",
	    "Further attempts after a failed POST, 2, 4, 8, ... seconds apart (at most 5 minutes)."),
	KEY("webhook", "queue", KILN_CFG_INT, webhook_queue, 16, 1000000, NULL, "1000",
	    "Deliveries waiting at most; beyond it the oldest is dropped (and counted in the log)."),
	{ .section = "report", .name = "energy_price", .type = KILN_CFG_DOUBLE,
	  .offset = offsetof(struct kilnd_config, report_energy_price), .dmin = 0, .dmax = 1000,
	  .def = "0", .help = "Price of a kWh for the energy cost in `kiln report`; 0 shows no cost." },
	KEY("report", "currency", KILN_CFG_STRING, report_currency, 0, 0, NULL, NULL,
	    "Currency shown with the energy cost (\"EUR\", \"USD\")."),
	KEY("bmc", "fanout", KILN_CFG_INT, bmc_fanout, 1, 100000, NULL, "2048",
	    "BMC operations and requests in flight at most, fleet-wide (one at a time per BMC in "
	    "any case). A BMC that never answers holds its slot for the timeout: a sweep over "
	    "more hung BMCs than this takes several timeouts. New TLS connections are limited "
	    "to 64 at once on top of it."),
	KEY("bmc", "connect_timeout", KILN_CFG_DURATION, bmc_connect_timeout, 1, 300, NULL, "10s",
	    "A BMC that does not accept the connection within this has failed the request; "
	    "a serial console (SOL) session that hears nothing from its BMC for this long is lost."),
	KEY("bmc", "ca_dir", KILN_CFG_STRING, bmc_ca_dir, 0, 0, NULL, "/etc/kiln/ca",
	    "Folder that a node's tls_ca_file must be in (a CA file elsewhere is refused, so "
	    "that the API tells nothing of other files); empty: any absolute path."),
	KEY("bmc", "request_timeout", KILN_CFG_DURATION, bmc_request_timeout, 1, 600, NULL, "30s",
	    "A BMC request that takes longer has failed."),
	KEY("bmc", "status_timeout", KILN_CFG_DURATION_MS, bmc_status_timeout, 0, 600000, NULL, "0s",
	    "A request of a power-state read that takes longer has failed (the one GET of a BMC "
	    "already known, and the GETs of a first contact; a login keeps request_timeout), so "
	    "that a hung BMC does not hold a fleet-wide sweep; 0s: [bmc] request_timeout."),
	KEY("bmc", "action_timeout", KILN_CFG_DURATION, bmc_action_timeout, 5, 3600, NULL, "120s",
	    "How long a power action may take to be confirmed by reading the state back."),
	KEY("bmc", "redfish_threads", KILN_CFG_INT, bmc_redfish_threads, 0, 16, NULL, "0",
	    "Threads that run the Redfish requests (TLS and HTTP work), each holding its share "
	    "of the BMCs; 0: one per CPU core, at most 16."),
	KEY("bmc", "ipmi_session_idle", KILN_CFG_DURATION, bmc_ipmi_session_idle, 0, 50, NULL, "20s",
	    "An IPMI BMC's RMCP+ session is kept open after a request for the next one to the "
	    "same BMC, and closed once idle this long (BMCs end idle sessions after ~60 s); "
	    "0: a session per request, closed after it."),
	KEY("power", "batch", KILN_CFG_INT, power_batch, 0, 100000, NULL, "0",
	    "Power actions over a range go this many nodes at a time, batch after batch (kiln "
	    "power --batch, POST /power \"batch\"); 0: all at once under [bmc] fanout."),
	KEY("power", "interval", KILN_CFG_DURATION, power_interval, 0, 3600, NULL, "0s",
	    "Pause between two batches of a paced power action (kiln power --interval)."),
	KEY("poller", "interval", KILN_CFG_DURATION, poller_interval, 5, 3600, NULL, "30s",
	    "Every node's power state is read this often; the nodes are spread over the interval."),
	KEY("poller", "sensors_every", KILN_CFG_INT, poller_sensors_every, 1, 1000, NULL, "4",
	    "Sensors are read every this many power readings."),
	KEY("poller", "sel_every", KILN_CFG_INT, poller_sel_every, 1, 1000, NULL, "4",
	    "New event log (SEL) entries are read every this many power readings."),
	KEY("poller", "unreachable_failures", KILN_CFG_INT, poller_unreachable_failures, 1, 100,
	    NULL, "2", "Consecutive failed requests after which a BMC counts as unreachable."),
	KEY("poller", "circuit_failures", KILN_CFG_INT, poller_circuit_failures, 1, 1000, NULL, "5",
	    "Consecutive failures after which a BMC is only probed (every probe_interval)."),
	KEY("poller", "backoff_max", KILN_CFG_DURATION, poller_backoff_max, 1, 86400, NULL, "10m",
	    "Longest wait between tries of a failing BMC (the wait doubles from the interval)."),
	KEY("poller", "probe_interval", KILN_CFG_DURATION, poller_probe_interval, 1, 86400, NULL,
	    "5m", "How often a BMC whose circuit is open is tried again."),
	KEY("poller", "health_every", KILN_CFG_DURATION, poller_health_every, 1, 3600, NULL, "10s",
	    "How often every node's health is evaluated from the stored readings."),
	KEY("poller", "inventory_every", KILN_CFG_DURATION, poller_inventory_every, 60, 2592000,
	    NULL, "6h", "A node's inventory (serial, BMC firmware, ...) is read at its first "
	    "successful contact and then this often."),
	KEY("poller", "history_retention", KILN_CFG_DURATION, poller_history_retention, 3600,
	    31622400, NULL, "30d", "The BMC power and inlet readings kept for `kiln report` (one "
	    "row per node and sensor read) are deleted after this long."),
	KEY("health", "agent_interval", KILN_CFG_DURATION, health_agent_interval, 1, 86400, NULL,
	    "30s", "Agent report interval assumed when a report does not give its own."),
	KEY("health", "hung_intervals", KILN_CFG_INT, health_hung_intervals, 1, 1000, NULL, "3",
	    "A node powered on whose agent is silent for more than this many report intervals is "
	    "hung (not when powered off or in maintenance)."),
	KEY("health", "power_fresh_intervals", KILN_CFG_INT, health_power_fresh_intervals, 1, 100,
	    NULL, "3",
	    "The hung rule, and so remediation, needs a power reading younger than this many "
	    "poller intervals: a BMC that stopped answering is no evidence that the node is on."),
	{ .section = "health", .name = "fleet_silence_percent", .type = KILN_CFG_DOUBLE,
	  .offset = offsetof(struct kilnd_config, health_fleet_silence_pct), .dmin = 1,
	  .dmax = 100, .def = "50",
	  .help = "When this share (percent) of the reporting agents, and at least "
		  "fleet_silence_min, fall silent together, the fault is the network's or "
		  "kilnd's: one event says so, no node is judged hung and remediation does "
		  "nothing until half of them report again." },
	KEY("health", "fleet_silence_min", KILN_CFG_INT, health_fleet_silence_min, 1, 1000000,
	    NULL, "4", "The fewest agents silent together that count as a fleet-wide silence."),
	KEY("health", "xid_window", KILN_CFG_DURATION, health_xid_window, 1, 30 * 86400, NULL,
	    "1h", "A critical Xid (48, 62, 64, 74, 79, 94, 95, 119, 120) this recent makes a node "
	    "critical."),
	KEY("health", "ecc_window", KILN_CFG_DURATION, health_ecc_window, 60, 30 * 86400, NULL,
	    "1h", "A GPU whose uncorrected ECC count rose within this window makes a node critical."),
	{ .section = "health", .name = "gpu_temp_max", .type = KILN_CFG_DOUBLE,
	  .offset = offsetof(struct kilnd_config, health_gpu_temp_max), .dmin = 20, .dmax = 150,
	  .def = "90", .help = "A GPU hotter than this (Celsius) makes a node a warning." },
	{ .section = "health", .name = "inlet_temp_max", .type = KILN_CFG_DOUBLE,
	  .offset = offsetof(struct kilnd_config, health_inlet_temp_max), .dmin = 5, .dmax = 100,
	  .def = "40", .help = "An inlet sensor hotter than this (Celsius) makes a node a warning." },
	KEY("health", "starved_for", KILN_CFG_DURATION, health_starved_for, 1, 86400, NULL, "10m",
	    "GPUs idle while processes hold GPU memory and CPU iowait is high for this long: "
	    "the input pipeline starves the GPUs."),
	{ .section = "health", .name = "starved_util_max", .type = KILN_CFG_DOUBLE,
	  .offset = offsetof(struct kilnd_config, health_starved_util_max), .dmin = 0,
	  .dmax = 100, .def = "10",
	  .help = "Average GPU utilization (percent) at or under which the GPUs count as idle." },
	{ .section = "health", .name = "starved_iowait_min", .type = KILN_CFG_DOUBLE,
	  .offset = offsetof(struct kilnd_config, health_starved_iowait_min), .dmin = 0,
	  .dmax = 100, .def = "20",
	  .help = "CPU iowait (percent) at or over which the disks count as the bottleneck." },
	KEY("health", "bmc_log_window", KILN_CFG_DURATION, health_bmc_log_window, 1, 30 * 86400,
	    NULL, "1h", "A critical BMC log entry (a fatal bus error, a PSU failure) that arrives "
	    "after kilnd first read the node's log makes the node critical for this long."),
	KEY("health", "boot_time", KILN_CFG_DURATION, health_boot_time, 10, 86400, NULL, "10m",
	    "How long a node's boot may take (an 8-GPU server's firmware takes minutes): after a "
	    "boot kiln saw begin (power on, a cycle or reset, the BMC's BootProgress), a silent "
	    "agent is judged hung only this long after it, or 5/4 of the BMC's last boot time "
	    "when longer."),
	KEY("health", "fault_return_window", KILN_CFG_DURATION, health_fault_return_window, 60,
	    30 * 86400, NULL, "1d", "A fault a reboot may clear (a hang, a critical Xid, a GPU "
	    "lost, an ECC reset pending) that is back in the boot after, within this long, needs "
	    "hardware inspection: kiln says so and its remediation cycles the node no more."),
	KEY("health", "kernel_window", KILN_CFG_DURATION, health_kernel_window, 60, 30 * 86400,
	    NULL, "1h", "A kernel alarm in the node's log (soft or hard lockup, hung task, RCU "
	    "stall, machine check, OOM kill, panic) is a reason for this long; a reboot clears "
	    "those a reboot may fix, not a machine check."),
	{ .section = "health", .name = "disk_warn_pct", .type = KILN_CFG_DOUBLE,
	  .offset = offsetof(struct kilnd_config, health_disk_warn_pct), .dmin = 1, .dmax = 100,
	  .def = "90", .help = "A filesystem the agent reports (/, /tmp, its spool, --fs-paths) "
				"whose space or inodes are used above this (percent) is a warning." },
	{ .section = "health", .name = "disk_full_pct", .type = KILN_CFG_DOUBLE,
	  .offset = offsetof(struct kilnd_config, health_disk_full_pct), .dmin = 1, .dmax = 100,
	  .def = "98", .help = "A filesystem used at or above this (percent), or with no space or "
				"inodes left, is critical." },
	KEY("health", "bmc_clock_skew_max", KILN_CFG_DURATION, health_bmc_clock_skew_max, 1,
	    365 * 86400, NULL, "5m", "A BMC whose clock is further off kilnd's than this is a "
	    "warning (its log's times are its own): read every few minutes."),
	{ .section = "health", .name = "throttle_busy_min", .type = KILN_CFG_DOUBLE,
	  .offset = offsetof(struct kilnd_config, health_throttle_busy_min), .dmin = 0,
	  .dmax = 100, .def = "50",
	  .help = "A GPU at least this busy (percent) whose clocks a fault holds down (HW or "
		  "thermal slowdown, power brake; not the power cap) is a warning." },
	KEY("health", "throttle_reports", KILN_CFG_INT, health_throttle_reports, 1, 100, NULL, "2",
	    "A GPU held down (throttle_busy_min) is a warning once this many reports in a row "
	    "say so: one sample does not flag it."),
	KEY("health", "link_error_window", KILN_CFG_DURATION, health_link_error_window, 60,
	    30 * 86400, NULL, "1h", "A GPU's PCIe replay or AER count, or an NVLink's error count, "
	    "that rose between two reports within this window is a reason (fatal AER errors and "
	    "NVLink recoveries critical, the rest a warning)."),
	KEY("remediation", "enabled", KILN_CFG_BOOL, remediation_enabled, 0, 0, NULL, "no",
	    "Power-cycle a hung node automatically (once, after the grace period; never a node in "
	    "maintenance). Audited as actor \"kilnd\"."),
	KEY("remediation", "grace", KILN_CFG_DURATION, remediation_grace, 0, 86400, NULL, "5m",
	    "How long a node stays hung before the automatic power cycle."),
	KEY("remediation", "max_per_hour", KILN_CFG_INT, remediation_max_per_hour, 0, 100000, NULL,
	    "2", "Automatic power cycles at most per hour, fleet-wide."),
	KEY("metrics", "allow_unauthenticated_loopback", KILN_CFG_BOOL,
	    metrics_allow_unauthenticated_loopback, 0, 0, NULL, "no",
	    "GET /metrics answers a request from a loopback address without a token (a Prometheus "
	    "on this host); other addresses, and every other endpoint, still need one. A token "
	    "of the metrics role reads /metrics and nothing else."),
	KEY("scheduler", "type", KILN_CFG_ENUM, scheduler_type, 0, 0, "none|slurm", "none",
	    "The batch scheduler of the nodes. With slurm, a disruptive action (power off, soft, "
	    "reset, cycle, reinstall, automatic remediation) on a node running Slurm jobs is "
	    "refused unless --drain or --force; kiln drains hung nodes."),
	KEY("scheduler", "node_name", KILN_CFG_STRING, scheduler_node_name, 0, 0, NULL, "{name}",
	    "The Slurm name of a kiln node: {name} is the kiln name, {short} the kiln name up to "
	    "its first dot; other text is kept ({short}-ib)."),
	KEY("scheduler", "scontrol", KILN_CFG_STRING, scheduler_scontrol, 0, 0, NULL, "scontrol",
	    "The scontrol command (looked up in PATH): node state and reason, drain and resume."),
	KEY("scheduler", "squeue", KILN_CFG_STRING, scheduler_squeue, 0, 0, NULL, "squeue",
	    "The squeue command (looked up in PATH): the jobs running on a node."),
	KEY("scheduler", "timeout", KILN_CFG_DURATION, scheduler_timeout, 1, 600, NULL, "10s",
	    "A scheduler command that takes longer is killed; the node's work is then not known "
	    "and a disruptive action on it is refused (--force acts anyway)."),
	KEY("scheduler", "drain_poll", KILN_CFG_DURATION_MS, scheduler_drain_poll, 100, 600000,
	    NULL, "5s", "How often an action waiting on a drain (--drain) asks again whether the "
	    "node's work ended."),
	KEY("scheduler", "drain_hung", KILN_CFG_BOOL, scheduler_drain_hung, 0, 0, NULL, "yes",
	    "Drain a node kiln flags hung in the scheduler (reason \"kiln: hung: ...\"), so that "
	    "no new job lands there; resumed once its agent reports again, if the reason is "
	    "still kiln's."),
	KEY("scheduler", "view_interval", KILN_CFG_DURATION, scheduler_view_interval, 1, 3600,
	    NULL, "30s", "How often kilnd counts the jobs on every node (one squeue over the "
	    "cluster) for kiln status' WORK column. An action asks Slurm about its nodes anew."),
	KEY("work", "ignore_processes", KILN_CFG_STRING, work_ignore_processes, 0, 0, NULL,
	    "nvidia-persistenced,nv-hostengine,dcgm*,nvidia-smi",
	    "GPU processes that are not work (comma-separated names, * and ? as in the shell): "
	    "they never block an action."),
	KEY("work", "report_fresh", KILN_CFG_DURATION, work_report_fresh, 1, 86400, NULL, "75s",
	    "GPU processes block an action only from an agent report at most this old, and at "
	    "most two of the node's report intervals old: a hung node's last report does not "
	    "block its power cycle (nor does any report of a node kiln flags hung)."),
	KEY("jobs", "step_timeout", KILN_CFG_DURATION, jobs_step_timeout, 1, 86400, NULL, "10m",
	    "A reinstall step that talks to the BMC (media, boot override, power cycle, eject), "
	    "retries included, fails the job after this long."),
	KEY("jobs", "boot_timeout", KILN_CFG_DURATION, jobs_boot_timeout, 1, 7 * 86400, NULL, "1h",
	    "How long a reinstalled node may take until its agent reports a new boot id (and the "
	    "image's OS); the job fails naming the step wait_boot after this."),
	KEY("jobs", "retry_interval", KILN_CFG_DURATION, jobs_retry_interval, 1, 3600, NULL, "5s",
	    "Pause before a failed BMC step of a reinstall is sent again."),
};

const size_t kilnd_config_table_len = sizeof(kilnd_config_table) / sizeof(kilnd_config_table[0]);

int kilnd_config_init(struct kilnd_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	return kiln_config_defaults(cfg, kilnd_config_table, kilnd_config_table_len);
}

int kilnd_config_load(struct kilnd_config *cfg, const char *path)
{
	return kiln_config_load(cfg, kilnd_config_table, kilnd_config_table_len, path);
}

int kilnd_config_set(struct kilnd_config *cfg, const char *key, const char *value)
{
	return kiln_config_set(cfg, kilnd_config_table, kilnd_config_table_len, key, value);
}

void kilnd_config_free(struct kilnd_config *cfg)
{
	if (!cfg)
		return;
	kiln_config_free(cfg, kilnd_config_table, kilnd_config_table_len);
}

static void write_bounds(FILE *f, const struct kiln_cfg_key *k)
{
	switch (k->type) {
	case KILN_CFG_INT:
	case KILN_CFG_INT64:
		fprintf(f, "# Integer, %" PRId64 " to %" PRId64 ".\n", k->min, k->max);
		break;
	case KILN_CFG_DURATION:
		fprintf(f, "# Duration (90, 30s, 5m, 1h), %" PRId64 "s to %" PRId64 "s.\n", k->min,
			k->max);
		break;
	case KILN_CFG_DURATION_MS:
		fprintf(f, "# Duration (1500ms, 2s, 1m), %" PRId64 "ms to %" PRId64 "ms.\n", k->min,
			k->max);
		break;
	case KILN_CFG_DOUBLE:
		fprintf(f, "# Number, %g to %g.\n", k->dmin, k->dmax);
		break;
	case KILN_CFG_BOOL:
		fprintf(f, "# yes or no.\n");
		break;
	case KILN_CFG_ENUM:
		fprintf(f, "# One of: %s.\n", k->choices);
		break;
	case KILN_CFG_STRING:
		break;
	}
}

/* Wraps help text at about 90 columns behind "# ". */
static void write_help(FILE *f, const char *help)
{
	const char *p = help;

	while (*p) {
		size_t n = strlen(p), cut = n;

		if (n > 88) {
			cut = 88;
			while (cut > 0 && p[cut] != ' ')
				cut--;
			if (cut == 0)
				cut = 88;
		}
		fprintf(f, "# %.*s\n", (int)cut, p);
		p += cut;
		while (*p == ' ')
			p++;
	}
}

int kilnd_config_example_write(FILE *f)
{
	const char *section = "";

	fprintf(f, "# kilnd.conf: configuration of the kiln server (kilnd --config FILE).\n"
		   "# Generated by `kilnd --print-config-example`; every key is shown with its default,\n"
		   "# commented out. Command-line options override the file. An unknown key or a value\n"
		   "# out of bounds stops kilnd with an error naming the line.\n");
	for (size_t i = 0; i < kilnd_config_table_len; i++) {
		const struct kiln_cfg_key *k = &kilnd_config_table[i];

		if (strcmp(k->section, section) != 0) {
			section = k->section;
			fprintf(f, "\n[%s]\n", section);
		}
		fprintf(f, "\n");
		write_help(f, k->help);
		write_bounds(f, k);
		if (k->def)
			fprintf(f, "#%s = %s\n", k->name, k->def);
		else
			fprintf(f, "#%s =\n", k->name);
	}
	return ferror(f) ? kiln_fail(KILN_ERROR, "cannot write the example configuration") : 0;
}
