/* SPDX-License-Identifier: Apache-2.0 */
/* Node health rules in one place: pure functions from a struct of node facts to
 * ok / warning / critical and the reasons, each threshold a config key. */
#ifndef KILND_HEALTH_H
#define KILND_HEALTH_H

#include <stddef.h>
#include <stdint.h>

#include "health/gpu_facts.h"
#include "health/host_facts.h"
#include "health/parts_facts.h"

enum health_level { HEALTH_OK = 0, HEALTH_WARNING = 1, HEALTH_CRITICAL = 2 };

/* What will fix what a reason names, as gpud and NVIDIA's health validation class it: nothing
 * on the node (a state, or kiln's or the operator's to mend: the reason says what), a
 * reboot (a GPU reset, a hung kernel), or a person at the machine (a failed part, a fan, a
 * row-remap failure, a fault that came back after a reboot). Remediation never power-cycles
 * a node that has a reason of class inspection. */
enum health_repair {
	HEALTH_REPAIR_NONE = 0,
	HEALTH_REPAIR_REBOOT = 1,
	HEALTH_REPAIR_INSPECTION = 2,
};

/* The class's mark at the end of a reason's text, which carries it wherever the reason goes
 * (stored state, events, the CLI): " [reboot may clear it]", " [needs hardware inspection]";
 * "" for none. */
const char *health_repair_mark(enum health_repair c);
/* "none", "reboot", "inspection": the JSON value (`repair` of kiln status -o json). */
const char *health_repair_name(enum health_repair c);
/* A reason's class, from its mark. */
enum health_repair health_reason_repair(const char *reason);

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
	double fleet_silence_pct;   /* this share of the reporting agents silent together ... */
	int fleet_silence_min;      /* ... and at least this many: kilnd's or the network's fault */
	int64_t bmc_log_window_s;   /* a critical BMC log entry that arrived this recently counts */
	int64_t fault_return_window_s; /* a reboot-class fault back after a reboot within this
					* long of it needs inspection */
	int64_t boot_time_s;        /* a boot may take this long before the hung window opens (or
				     * longer: 5/4 of the BMC's LastBootTimeSeconds) */
	int64_t kernel_window_s;    /* a kernel alarm (soft lockup, machine check...) this recent
				     * counts */
	double disk_warn_pct;       /* a filesystem (space or inodes) used above this: a warning */
	double disk_full_pct;       /* ... at or above this, or nothing left: critical */
	double throttle_busy_min_pct; /* a GPU held down by a trouble reason this busy: a warning */
	int throttle_reports;       /* ... in this many reports in a row */
	int64_t link_error_window_s; /* a PCIe/NVLink error counter that rose this recently counts */
	int64_t bmc_clock_skew_max_s; /* the BMC's clock further off kilnd's than this: a warning */
};

/* The defaults: 30 s, 3 intervals, 1 h, 1 h, 90 C, 40 C, 10 min, 10 %, 20 %, 50 %, 4, 1 h,
 * boot 10 min. */
void health_config_defaults(struct health_config *cfg);

#define HEALTH_XIDS_MAX 32
#define HEALTH_REASONS_MAX 24
#define HEALTH_REASON_LEN 280
#define HEALTH_BMC_LOGS_MAX 4
#define HEALTH_NAME_LEN 64

/* A critical BMC log entry that arrived after the node's first log read. */
struct health_bmc_log {
	int64_t time;               /* when kilnd read it */
	char message[HEALTH_REASON_LEN];
};

#define HEALTH_GPUS_MAX 64      /* as many as a report may carry (INGEST_GPUS_MAX) */
#define HEALTH_GPU_REASONS_MAX 8 /* GPUs given a reason each; the rest summed up in one */

/* One GPU's memory health from its latest report. Unknown numbers are -1, flags -1. */
struct health_gpu {
	int64_t index;
	const char *pci_bus_id;      /* may be NULL */
	int64_t ecc_volatile;        /* uncorrected ECC errors since the driver loaded */
	int64_t ecc_aggregate;       /* uncorrected ECC errors in the GPU's lifetime */
	int64_t ecc_rose_at;         /* when the uncorrected count last rose (0: not seen) */
	int retired_pages_pending;   /* a page retirement waits for a GPU reset */
	int remap_pending;           /* a row remap waits for a GPU reset */
	int remap_failure;           /* row remapping failed: the GPU needs service */
	int64_t remapped_rows;       /* rows remapped for uncorrectable errors */
};

/* What is known of one node. Unknown numbers are -1 (integers) or NAN (reals). */
struct health_facts {
	int64_t now;
	int has_bmc;
	int bmc_reachable;          /* 0 after failures (or the circuit open) */
	int64_t bmc_down_since;
	int credentials_rejected;
	const char *bmc_config_error; /* the BMC answered but does not fit the node ("this BMC
				       * has 2 systems (...); choose one with --bmc-system"), or NULL */
	int power;                  /* enum bmc_power: 0 unknown, 1 on, 2 off */
	int64_t power_on_since;     /* when it was seen turning on (0: not seen) */
	int64_t boot_started;       /* when kiln saw its last boot begin (0: never): power seen
				     * going on, an on/cycle/reset that went through, the BMC's
				     * BootProgress entering a booting state */
	const char *boot_state;     /* the BMC's BootProgress.LastState, or NULL */
	const char *boot_id;        /* the agent's boot id in its latest report, or NULL */
	const char *returned_kinds; /* reason kinds of class reboot seen in the boot before this
				     * one, within fault_return_window_s ("xid,hung"), or NULL:
				     * seen again, they need inspection */
	int64_t boot_last_s;        /* the BMC's LastBootTimeSeconds (0: not said) */
	int64_t power_time;         /* when power was last read (0: never) */
	int maintenance;
	int reinstalling;           /* a reinstall job is queued or running */
	const char *reinstall_step; /* its step (may be NULL) */
	int64_t agent_last_seen;    /* 0: never reported */
	int64_t agent_interval_s;   /* from the report; 0: unknown */
	int64_t receive_gap;        /* the last moment kilnd could not receive reports (0: none):
				     * silence counts from the later of it and agent_last_seen */
	int fleet_silence;          /* many agents fell silent together: none is hung */
	int64_t fleet_silence_ended; /* when that last ended (0: never) */
	const char *power_off_by;   /* off through kiln: who ("alice"); "": off outside kiln;
				     * NULL: not seen turning off */
	int64_t power_off_time;     /* when that was */
	const char *console_line;   /* the console's last meaningful line (a hung node's
				     * evidence; may be NULL) */
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
	/* An agent bound to its node (identity.h): reports on this node's token refused
	 * because their host is not the node's (while nothing was stored since the refusal
	 * began, or within hung_intervals agent intervals of the last), or this node's agent
	 * seen reporting with another node's token (within that window). Either explains a
	 * silence: the node is not hung meanwhile. */
	const char *identity_field;     /* the pending refusal's differing field, or NULL */
	const char *identity_message;   /* its message (both values, what to do), or NULL */
	int64_t identity_since;         /* when it began */
	int64_t identity_last;          /* when a report was last refused */
	const char *identity_node;      /* this node's name, for the command in the reason */
	const char *identity_elsewhere; /* the node whose token this node's agent uses, or NULL */
	int64_t identity_elsewhere_last; /* when that was last seen */
	/* Reports on the node's token refused whole (400: no shape of a report): the agent is
	 * alive, so a refusal since the last stored report, within hung_intervals agent
	 * intervals, explains a silence as a refused identity does. */
	const char *refused_reason;     /* the last refusal's message, or NULL */
	int64_t refused_last;           /* when (0: never) */
	const char *rejected_fields;    /* fields the latest stored report had refused, or NULL */
	int starved_now;            /* the latest report alone looks starved */
	int64_t starved_since;      /* start of the current starved run (0: none) */
	/* The stored GPUs of the latest report, by index. With any, the per-GPU memory rule
	 * judges them and the node-wide ECC and remap rules (ecc_first/last, remap_failure)
	 * stand down: it names the GPU and sees counts at a first report too. */
	struct health_gpu gpus[HEALTH_GPUS_MAX];
	size_t ngpus;
	/* The BMC's own evidence (kept at the end so that other rules' fields merge apart). */
	int bmc_busy;               /* the last read was answered "busy" (HTTP 503, IPMI 0xC0) */
	const char *bmc_busy_detail; /* what the BMC said ("503 'RAC0218: ...'"); may be NULL */
	char psu_failed_names[HEALTH_REASON_LEN]; /* "PS2 Status (Critical)", comma separated */
	char psu_redundancy_name[HEALTH_NAME_LEN]; /* the BMC's redundancy set; "" when none */
	int psu_healthy;            /* healthy PSUs of that set; -1 unknown */
	int psu_needed;             /* PSUs the set needs to be redundant; -1 unknown */
	struct health_bmc_log bmc_logs[HEALTH_BMC_LOGS_MAX]; /* newest first */
	size_t nbmc_logs;
	/* The facts of the rules kept in their own files (rules.h). */
	struct health_gpu_facts gpu;     /* gpu_rules.c, from the report's health cut */
	struct health_host_facts host;   /* host_rules.c, from the cut and kernel events */
	struct health_parts_facts parts; /* parts_rules.c, from the BMC's readings */
};

struct health_result {
	enum health_level level;
	enum health_repair repair;  /* the strongest class of the reasons */
	int hung;
	size_t nreasons;
	char reasons[HEALTH_REASONS_MAX][HEALTH_REASON_LEN]; /* "hung: ... [reboot may clear it]" */
	enum health_repair repairs[HEALTH_REASONS_MAX];      /* each reason's class */
};

/*
 * Faults back after a reboot (returned.c): the kinds (health_reason_kind) of a node's
 * reboot-class reasons, kept per boot of its agent, stored with the node's poller state.
 */
#define HEALTH_RETURNED_TEXT " (back after a reboot)"
#define HEALTH_KINDS_LEN 160
struct health_boot_faults {
	char boot_id[64];                  /* the boot kinds were seen in ("": none known) */
	char kinds[HEALTH_KINDS_LEN];      /* "xid,hung" */
	char prev_kinds[HEALTH_KINDS_LEN]; /* those of the boot before it */
	int64_t prev_end;                  /* when kiln saw that boot end */
};

/* From its stored JSON (NULL or bad: all empty), and back (to free; NULL: out of memory). */
void health_boot_faults_load(struct health_boot_faults *b, const char *json);
char *health_boot_faults_dump(const struct health_boot_faults *b);
/* The node's agent reports boot_id (NULL: unknown): a new one moves kinds to prev_kinds.
 * 1 when changed. */
int health_boot_faults_rotate(struct health_boot_faults *b, const char *boot_id, int64_t now);
/* Notes the kinds of r's reboot-class reasons (and of those escalated for coming back) as
 * seen in the current boot. 1 when changed. */
int health_boot_faults_note(struct health_boot_faults *b, const struct health_result *r);

/* Facts with every field unknown (numbers -1 / NAN, flags 0) at time now. */
void health_facts_init(struct health_facts *f, int64_t now);

/* Applies every rule. */
void health_evaluate(struct health_result *out, const struct health_facts *f,
		     const struct health_config *cfg);

/* The hung rule alone: powered on, not in maintenance, agent silent for more than
 * hung_intervals report intervals (counted from the later of the last report and the
 * power-on). A node off, unknown, in maintenance, being reinstalled, never reported or
 * with its agent identity in question (a refusal pending, or its agent reporting with
 * another node's token within that silence window) is not hung (so never remediated). */
int health_is_hung(const struct health_facts *f, const struct health_config *cfg);

/*
 * The fleet-wide silence guard: when many agents fall silent together the fault is the
 * network's or kilnd's, and no node is judged hung. One step a health sweep.
 */
struct health_fleet_silence {
	int active;
	int64_t since;              /* when it began */
	int64_t ended_at;           /* when it last ended (0: never) */
	size_t silent;              /* agents found silent when it began */
	size_t agents;              /* agents counted then (silent and reporting) */
};

enum health_fleet_change { HEALTH_FLEET_SAME, HEALTH_FLEET_BEGAN, HEALTH_FLEET_ENDED };

/*
 * One agent's part in the count at now: 0 not counted (never reported, off, maintenance,
 * reinstalling, or silent so long that its silence is old news), 1 reporting, 2 fallen
 * silent lately (for more than hung_intervals - 1.5 intervals, at least one, counted from
 * the later of its last report and receive_gap).
 */
int health_fleet_part(const struct health_facts *f, const struct health_config *cfg);

/*
 * Takes a sweep's counts: reporting and silent agents (health_fleet_part) and, while the
 * guard is active, how many of those silent at its start reported since (returned). It
 * begins when silent >= fleet_silence_min and silent is at least fleet_silence_pct of
 * silent + reporting; it ends when half of those silent at its start report again.
 */
enum health_fleet_change health_fleet_silence_step(struct health_fleet_silence *g,
						   size_t reporting, size_t silent,
						   size_t returned, int64_t now,
						   const struct health_config *cfg);

/*
 * The console's last meaningful line in text (a capture's tail): a kernel panic, Oops, BUG
 * or lockup line when there is one, else the last line that is not blank or a prompt.
 * Copied (printable ASCII only) into out; 0 when there is none.
 */
int health_console_evidence(char *out, size_t outlen, const char *text, size_t len);

/* The memory verdict of one GPU: HEALTH_CRITICAL for uncorrected ECC errors since the
 * driver loaded, a lifetime count that rose within ecc_window_s, a pending page retirement
 * or row remap (the GPU needs a reset) or a failed remap (it needs service); HEALTH_WARNING
 * for lifetime uncorrected errors alone (repaired history, worth watching); else HEALTH_OK.
 * The reason ("gpu 3 (0000:1B:00.0): 2 uncorrected ECC errors, row remap pending (reset
 * needed)") goes into out[len] when the level is not ok. */
enum health_level health_gpu_verdict(char *out, size_t len, const struct health_gpu *g,
				     int64_t now, const struct health_config *cfg);

/* boot.c: a BootProgress.LastState that means the host's firmware or its OS loader runs
 * ("PrimaryProcessorInitializationStarted" ... "OSBootStarted"; not "OSRunning", "None" nor
 * an OEM state); a BMC log line that says a boot began ("System Boot Initiated", iDRAC's
 * "System CPU Resetting.", iLO's "Server reset."...). */
int health_boot_state_booting(const char *state);

/* host_rules.c: a kernel alarm kind of the agent's ("soft_lockup") as the reasons word it
 * ("soft lockup"; an unknown kind as it is), and its level (*level, may be NULL). */
const char *health_kernel_alarm_name(const char *kind, enum health_level *level);
int health_boot_log_line(const char *message);

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

/* A reboot is pending: NVML and the loaded kernel module disagree (status "mismatch"), or
 * the installed library's version is not the loaded module's. Strings may be NULL. */
int health_reboot_pending(const char *nvidia_status, const char *lib, const char *mod);

/* The kind of one of the reasons health_evaluate writes ("hung", "xid", "psu", ...; "other"
 * for one it does not know), from its first words: a small fixed set, for labels. */
const char *health_reason_kind(const char *reason);
/* Every kind health_reason_kind can answer, NULL-terminated. */
const char *const *health_reason_kinds(void);

#endif
