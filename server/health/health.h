/* Node health rules in one place: pure functions from a struct of node facts to
 * ok / warning / critical and the reasons, each threshold a config key. */
#ifndef KILND_HEALTH_H
#define KILND_HEALTH_H

#include <stddef.h>
#include <stdint.h>

enum health_level { HEALTH_OK = 0, HEALTH_WARNING = 1, HEALTH_CRITICAL = 2 };

/* Thresholds (server/config.c's [health] section). */
struct health_config {
	int64_t agent_interval_s;   /* report interval assumed when a report names none */
	int hung_intervals;         /* powered on and silent for more than this many intervals */
	int64_t power_max_age_s;    /* hung needs a power reading at most this old */
	int64_t xid_window_s;       /* a critical Xid this recent counts */
	int64_t ecc_window_s;       /* uncorrected ECC compared over this window */
	double gpu_temp_max_c;
	double inlet_temp_max_c;
	int64_t starved_s;          /* starved for this long */
	double starved_util_max_pct;   /* GPUs mostly idle: average utilization at most this */
	double starved_iowait_min_pct; /* CPU iowait at least this */
	int64_t bmc_log_window_s;   /* a critical BMC log entry that arrived this recently counts */
};

/* The defaults: 30 s, 3 intervals, 1 h, 1 h, 90 C, 40 C, 10 min, 10 %, 20 %, 1 h. */
void health_config_defaults(struct health_config *cfg);

#define HEALTH_XIDS_MAX 32
#define HEALTH_REASONS_MAX 16
#define HEALTH_REASON_LEN 160
#define HEALTH_BMC_LOGS_MAX 4
#define HEALTH_NAME_LEN 64

/* A critical BMC log entry that arrived after the node's first log read. */
struct health_bmc_log {
	int64_t time;               /* when kilnd read it */
	char message[HEALTH_REASON_LEN];
};

/* What is known of one node. Unknown numbers are -1 (integers) or NAN (reals). */
struct health_facts {
	int64_t now;
	int has_bmc;
	int bmc_reachable;          /* 0 after failures (or the circuit open) */
	int64_t bmc_down_since;
	int credentials_rejected;
	int power;                  /* enum bmc_power: 0 unknown, 1 on, 2 off */
	int64_t power_on_since;     /* when it was seen turning on (0: not seen) */
	int64_t power_time;         /* when power was last read (0: never) */
	int maintenance;
	int reinstalling;           /* a reinstall job is queued or running */
	const char *reinstall_step; /* its step (may be NULL) */
	int64_t agent_last_seen;    /* 0: never reported */
	int64_t agent_interval_s;   /* from the report; 0: unknown */
	int64_t gpus_seen;          /* -1: no report */
	int64_t gpus_expected;      /* the most the node ever had; -1 unknown */
	int xids[HEALTH_XIDS_MAX];  /* Xid codes seen within the window */
	size_t nxids;
	int64_t ecc_first;          /* summed uncorrected ECC at the window's start / now */
	int64_t ecc_last;
	int remap_failure;          /* 1: some GPU's row remapping failed */
	double hottest_gpu_c;
	double inlet_c;
	int psu_failed;             /* PSUs reporting a failure */
	int psu_redundancy_lost;
	const char *nvidia_status;  /* "mismatch" flags a driver/module mismatch; may be NULL */
	const char *driver_version;
	const char *kernel_module_version;
	int starved_now;            /* the latest report alone looks starved */
	int64_t starved_since;      /* start of the current starved run (0: none) */
	/* The BMC's own evidence (kept at the end so that other rules' fields merge apart). */
	int bmc_busy;               /* the last read was answered "busy" (HTTP 503, IPMI 0xC0) */
	const char *bmc_busy_detail; /* what the BMC said ("503 'RAC0218: ...'"); may be NULL */
	char psu_failed_names[HEALTH_REASON_LEN]; /* "PS2 Status (Critical)", comma separated */
	char psu_redundancy_name[HEALTH_NAME_LEN]; /* the BMC's redundancy set; "" when none */
	int psu_healthy;            /* healthy PSUs of that set; -1 unknown */
	int psu_needed;             /* PSUs the set needs to be redundant; -1 unknown */
	struct health_bmc_log bmc_logs[HEALTH_BMC_LOGS_MAX]; /* newest first */
	size_t nbmc_logs;
};

struct health_result {
	enum health_level level;
	int hung;
	size_t nreasons;
	char reasons[HEALTH_REASONS_MAX][HEALTH_REASON_LEN]; /* "hung: ..." */
};

/* Facts with every field unknown (numbers -1 / NAN, flags 0) at time now. */
void health_facts_init(struct health_facts *f, int64_t now);

/* Applies every rule. */
void health_evaluate(struct health_result *out, const struct health_facts *f,
		     const struct health_config *cfg);

/* The hung rule alone: powered on, not in maintenance, agent silent for more than
 * hung_intervals report intervals (counted from the later of the last report and the
 * power-on). A node off, unknown, in maintenance, being reinstalled or never reported is
 * not hung (so never remediated). */
int health_is_hung(const struct health_facts *f, const struct health_config *cfg);

/* Xids that mean the GPU or the node needs attention now: 48, 62, 64, 74, 79, 94, 95, 119,
 * 120. */
int health_xid_critical(int xid);

/*
 * The starved test on one report: the GPUs mostly idle (average utilization at most the
 * limit) while some GPU memory is held by processes, and CPU iowait at least the limit.
 * util_avg_pct or iowait_pct NAN: not starved.
 */
int health_starved_sample(double util_avg_pct, int memory_held, double iowait_pct,
			  const struct health_config *cfg);

const char *health_level_name(enum health_level l); /* "ok", "warning", "critical" */

#endif
