/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for server/health: each rule as a table row of node facts and the expected verdict. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "health/health.h"
#include "health_fixture.h"

static void set_silent(struct health_facts *f) { f->agent_last_seen = NOW - 91; }
static void set_silent_edge(struct health_facts *f) { f->agent_last_seen = NOW - 90; }
static void set_silent_off(struct health_facts *f) { set_silent(f); f->power = 2; }
static void set_silent_unknown(struct health_facts *f) { set_silent(f); f->power = 0; }
static void set_silent_stale_power(struct health_facts *f)
{
	set_silent(f);
	f->power_time = NOW - 91; /* the BMC went quiet with the agent: its "on" is too old */
}
static void set_silent_power_edge(struct health_facts *f)
{
	set_silent(f);
	f->power_time = NOW - 90; /* 3 poll intervals of 30 s: still fresh */
}
static void set_silent_never_read(struct health_facts *f) { set_silent(f); f->power_time = 0; }
static void set_silent_maint(struct health_facts *f) { set_silent(f); f->maintenance = 1; }
static void set_never_reported(struct health_facts *f) { f->agent_last_seen = 0; f->gpus_seen = -1; }
static void set_just_on(struct health_facts *f)
{
	set_silent(f);
	f->power_on_since = NOW - 20; /* cycled 20 s ago: the agent gets its intervals again */
}
static void set_long_interval(struct health_facts *f)
{
	set_silent(f);
	f->agent_interval_s = 60; /* 91 s is under 3 x 60 */
}
static void set_default_interval(struct health_facts *f)
{
	set_silent(f);
	f->agent_interval_s = 0; /* the config's 30 s */
}
/* kilnd could not receive 40 s ago (its start, an ingest stall, a full listener) */
static void set_silent_gap(struct health_facts *f) { set_silent(f); f->receive_gap = NOW - 40; }
static void set_silent_gap_old(struct health_facts *f) { set_silent(f); f->receive_gap = NOW - 95; }
static void set_silent_fleet(struct health_facts *f) { set_silent(f); f->fleet_silence = 1; }
static void set_silent_fleet_ended(struct health_facts *f)
{
	set_silent(f);
	f->fleet_silence_ended = NOW - 60; /* 2 intervals of 30 s: still its grace */
}
static void set_silent_fleet_ended_long(struct health_facts *f)
{
	set_silent(f);
	f->fleet_silence_ended = NOW - 61;
}
static void set_off_outside(struct health_facts *f)
{
	f->power = 2;
	f->power_off_by = "";
	f->power_off_time = NOW - 300;
}
static void set_off_by_alice(struct health_facts *f)
{
	set_silent(f);
	f->power = 2;
	f->power_off_by = "alice";
	f->power_off_time = NOW - 300;
}
static void set_off_outside_maint(struct health_facts *f) { set_off_outside(f); f->maintenance = 1; }
static void set_off_first_seen(struct health_facts *f) { f->power = 2; } /* never seen going off */
static void set_hung_panic(struct health_facts *f)
{
	set_silent(f);
	f->console_line = "Kernel panic - not syncing: Fatal exception";
}
static void set_bmc_down(struct health_facts *f) { f->bmc_reachable = 0; f->bmc_down_since = NOW - 300; }
static void set_no_bmc(struct health_facts *f) { f->has_bmc = 0; f->bmc_reachable = 0; }
static void set_creds(struct health_facts *f) { f->credentials_rejected = 1; }
/* a BMC that answers but does not fit the node: not down */
static void set_bmc_misfit(struct health_facts *f)
{
	set_bmc_down(f);
	f->bmc_config_error = "this BMC has 2 systems (Blade1, Blade2); choose one with --bmc-system";
}
static void set_gpu_lost(struct health_facts *f) { f->gpus_seen = 7; }
static void set_xid79(struct health_facts *f) { f->xids[0] = 13; f->xids[1] = 79; f->nxids = 2; }
static void set_xid13(struct health_facts *f) { f->xids[0] = 13; f->xids[1] = 31; f->nxids = 2; }
static void set_xid_all(struct health_facts *f)
{
	static const int x[] = { 48, 62, 64, 74, 79, 94, 95, 119, 120 };

	for (size_t i = 0; i < 9; i++)
		f->xids[i] = x[i];
	f->nxids = 9;
}
static void set_ecc_up(struct health_facts *f) { f->ecc_first = 2; f->ecc_last = 5; }
static void set_ecc_flat(struct health_facts *f) { f->ecc_first = 5; f->ecc_last = 5; }
static void set_ecc_unknown(struct health_facts *f) { f->ecc_first = -1; f->ecc_last = 3; }
static void set_remap(struct health_facts *f) { f->remap_failure = 1; }
static void set_gpu_hot(struct health_facts *f) { f->hottest_gpu_c = 91; }
static void set_gpu_at_limit(struct health_facts *f) { f->hottest_gpu_c = 90; }
static void set_inlet_hot(struct health_facts *f) { f->inlet_c = 45; }
static void set_temps_unknown(struct health_facts *f) { f->hottest_gpu_c = NAN; f->inlet_c = NAN; }
static void set_psu_failed(struct health_facts *f) { f->psu_failed = 1; }
static void set_psu_redundancy(struct health_facts *f) { f->psu_redundancy_lost = 1; }
static void set_mismatch(struct health_facts *f) { f->kernel_module_version = "535.104.05"; }
static void set_mismatch_status(struct health_facts *f)
{
	f->nvidia_status = "mismatch";
	f->kernel_module_version = NULL;
}
static void set_starved(struct health_facts *f) { f->starved_now = 1; f->starved_since = NOW - 600; }
static void set_starved_short(struct health_facts *f) { f->starved_now = 1; f->starved_since = NOW - 599; }
static void set_starved_over(struct health_facts *f) { f->starved_now = 0; f->starved_since = NOW - 900; }
static void set_hung_and_hot(struct health_facts *f) { set_silent(f); set_gpu_hot(f); }
static void set_reinstalling(struct health_facts *f)
{
	f->reinstalling = 1;
	f->reinstall_step = "wait_boot";
}
static void set_reinstalling_silent(struct health_facts *f)
{
	set_reinstalling(f);
	set_silent(f); /* the installer runs: no agent for minutes, the BMC says on */
	f->agent_last_seen = NOW - 3600;
}
static void set_reinstalling_queued(struct health_facts *f)
{
	set_silent(f);
	f->reinstalling = 1;
	f->reinstall_step = NULL;
}
/* Reports on this node's token are refused: their host is not the node's. The node's own
 * host reported after the refusal began (another host on its token). */
static void set_identity(struct health_facts *f)
{
	f->identity_field = "host.machine_id";
	f->identity_since = NOW - 200;
	f->identity_last = NOW - 2;
	f->identity_node = "gpu02";
}
/* A Dell host refused since its first report (nothing stored since), retries held up for
 * long by a loaded kilnd: never hung, the refusal shown with both values. */
static void set_identity_never_stored(struct health_facts *f)
{
	set_identity(f);
	f->identity_field = "host.dmi_serial";
	f->identity_message = "host.dmi_serial '9QZK2X3' (reported) is not the BMC's serial "
			      "'CNIVC0033A0147'; refused: if the change is genuine (motherboard, "
			      "reinstall, rename), kiln agent accept-identity gpu02";
	f->agent_last_seen = NOW - 3600;
	f->identity_since = NOW - 3000;
	f->identity_last = NOW - 2000;
}
/* ... and its last accepted report ages: the silence is no hang, never cycled */
static void set_identity_silent(struct health_facts *f) { set_identity(f); set_silent(f); }
/* the refusals stopped 3 intervals ago (the foreign agent left): judged as usual again */
static void set_identity_over(struct health_facts *f)
{
	set_identity_silent(f);
	f->identity_last = NOW - 91;
}
static void set_identity_edge(struct health_facts *f)
{
	set_identity_silent(f);
	f->identity_last = NOW - 90;
}
/* This node's agent reports with another node's token: it looks silent here. */
static void set_elsewhere(struct health_facts *f)
{
	f->identity_elsewhere = "gpu02";
	f->identity_elsewhere_last = NOW - 2;
}
static void set_elsewhere_silent(struct health_facts *f) { set_elsewhere(f); set_silent(f); }
/* its agent stopped there too: its silence is its own again */
static void set_elsewhere_over(struct health_facts *f)
{
	set_elsewhere_silent(f);
	f->identity_elsewhere_last = NOW - 91;
}

/* Every report on the node's token refused whole (issue 17, finding 5): its agent is
 * alive, the node is critical for it and never judged hung (nor cycled). */
static void set_refused_silent(struct health_facts *f)
{
	set_silent(f);
	f->refused_reason = "report: field 'gpus' is required";
	f->refused_last = NOW - 2;
}
/* the refusals stopped 3 intervals ago: its silence is its own again */
static void set_refused_over(struct health_facts *f)
{
	set_refused_silent(f);
	f->refused_last = NOW - 91;
}
/* a refusal older than the last stored report says nothing now */
static void set_refused_before_report(struct health_facts *f)
{
	f->refused_reason = "report: field 'gpus' is required";
	f->refused_last = f->agent_last_seen - 1;
}
static void set_rejected_fields(struct health_facts *f)
{
	f->rejected_fields = "gpus[0].temperature_c";
}

/* Eight clean GPUs as the store gives them; gpu 3 is the one the GPU rows change. */
static struct health_gpu *gpus8(struct health_facts *f)
{
	static const char *const bus[] = { "0000:18:00.0", "0000:2A:00.0", "0000:3A:00.0",
					   "0000:1B:00.0", "0000:9A:00.0", "0000:AB:00.0",
					   "0000:BA:00.0", "0000:DB:00.0" };

	for (size_t i = 0; i < 8; i++)
		f->gpus[i] = (struct health_gpu){ .index = (int64_t)i, .pci_bus_id = bus[i] };
	f->ngpus = 8;
	return &f->gpus[3];
}
static void set_gpu_clean(struct health_facts *f) { gpus8(f); }
static void set_gpu_first_bad(struct health_facts *f)
{
	struct health_gpu *g = gpus8(f);

	g->ecc_volatile = 2; /* a first report: no rise seen, the values alone */
	g->ecc_aggregate = 2;
	g->remap_pending = 1;
}
static void set_gpu_volatile(struct health_facts *f) { gpus8(f)->ecc_volatile = 1; }
static void set_gpu_lifetime(struct health_facts *f) { gpus8(f)->ecc_aggregate = 3; }
static void set_gpu_lifetime_more(struct health_facts *f)
{
	struct health_gpu *g = gpus8(f);

	g->ecc_volatile = 2;
	g->ecc_aggregate = 5;
	g->ecc_rose_at = NOW - 600;
}
static void set_gpu_lifetime_rising(struct health_facts *f)
{
	struct health_gpu *g = gpus8(f);

	g->ecc_aggregate = 3;
	g->ecc_rose_at = NOW - 3600; /* the window's edge: still within */
}
static void set_gpu_lifetime_rose_long_ago(struct health_facts *f)
{
	struct health_gpu *g = gpus8(f);

	g->ecc_aggregate = 3;
	g->ecc_rose_at = NOW - 3601;
}
static void set_gpu_rose_then_reset(struct health_facts *f)
{
	struct health_gpu *g = gpus8(f);

	g->ecc_volatile = 0; /* the driver reloaded; no lifetime counter */
	g->ecc_aggregate = -1;
	g->ecc_rose_at = NOW - 720;
}
static void set_gpu_retire(struct health_facts *f) { gpus8(f)->retired_pages_pending = 1; }
static void set_gpu_both_pending(struct health_facts *f)
{
	struct health_gpu *g = gpus8(f);

	g->retired_pages_pending = 1;
	g->remap_pending = 1;
	g->remapped_rows = 1;
}
static void set_gpu_remap_failed(struct health_facts *f)
{
	struct health_gpu *g = gpus8(f);

	g->remap_failure = 1;
	g->remapped_rows = 4;
	f->remap_failure = 1; /* the node-wide fact the gather also sets */
}
static void set_gpu_remapped_only(struct health_facts *f) { gpus8(f)->remapped_rows = 2; }
static void set_gpu_unknown(struct health_facts *f)
{
	struct health_gpu *g = gpus8(f);

	g->ecc_volatile = g->ecc_aggregate = g->remapped_rows = -1;
	g->retired_pages_pending = g->remap_pending = g->remap_failure = -1;
}
static void set_gpu_no_bus(struct health_facts *f)
{
	struct health_gpu *g = gpus8(f);

	g->pci_bus_id = NULL;
	g->ecc_volatile = 1;
}
static void set_gpu_ecc_rising(struct health_facts *f)
{
	struct health_gpu *g = gpus8(f);

	set_ecc_up(f); /* the node-wide sum rose 2 -> 5: the GPU's reason says it instead */
	g->ecc_volatile = 5;
	g->ecc_rose_at = NOW - 60;
}
static void set_mismatch_gpus(struct health_facts *f)
{
	set_mismatch_status(f);
	f->driver_version = NULL; /* NVML gives no version when it cannot talk */
	f->kernel_module_version = "535.104.05";
	f->gpus_seen = 0;         /* a report with no GPUs: none counted */
}
static void set_no_driver_gpus(struct health_facts *f)
{
	f->nvidia_status = "no_driver";
	f->driver_version = NULL;
	f->gpus_seen = 0;
}
/* A BMC that answered 503 (or IPMI 0xC0): reachable, busy; the power it gave before is not
 * fresh, so a silent agent beside it is not hung. */
static void set_bmc_busy(struct health_facts *f)
{
	f->bmc_busy = 1;
	f->bmc_busy_detail = "503 'RAC0218: The maximum number of user sessions is reached.' "
			     "(Retry-After 60s)";
}
static void set_bmc_busy_bare(struct health_facts *f) { f->bmc_busy = 1; }
static void set_bmc_busy_silent(struct health_facts *f) { set_bmc_busy(f); set_silent(f); }
static void set_bmc_busy_down(struct health_facts *f) { set_bmc_busy(f); set_bmc_down(f); }
static void set_psu_named(struct health_facts *f)
{
	f->psu_failed = 1;
	snprintf(f->psu_failed_names, sizeof(f->psu_failed_names), "PS2 Status (Critical)");
}
static void set_psu_named_kept(struct health_facts *f)
{
	set_psu_named(f);
	snprintf(f->psu_redundancy_name, sizeof(f->psu_redundancy_name), "PS Redundancy");
	f->psu_healthy = 3;
	f->psu_needed = 2;
}
static void set_psu_named_lost(struct health_facts *f)
{
	set_psu_named_kept(f);
	f->psu_healthy = 1;
	f->psu_redundancy_lost = 1;
}
static void set_psu_set_lost(struct health_facts *f)
{
	snprintf(f->psu_redundancy_name, sizeof(f->psu_redundancy_name), "PS Redundancy");
	f->psu_redundancy_lost = 1; /* the BMC says so, counts unknown */
}
static void set_psu_set_ok(struct health_facts *f)
{
	snprintf(f->psu_redundancy_name, sizeof(f->psu_redundancy_name), "PS Redundancy");
	f->psu_healthy = 4;
	f->psu_needed = 2;
}
static void set_bmc_log(struct health_facts *f)
{
	f->bmc_logs[0].time = NOW - 3599;
	snprintf(f->bmc_logs[0].message, sizeof(f->bmc_logs[0].message),
		 "SEL 12: A fatal PCIe bus error was detected on slot 3.");
	f->nbmc_logs = 1;
}
static void set_bmc_log_old(struct health_facts *f)
{
	set_bmc_log(f);
	f->bmc_logs[0].time = NOW - 3601; /* past the 1 h window */
}

struct row {
	const char *name;
	void (*set)(struct health_facts *f);
	enum health_level level;
	int hung;
	const char *reason; /* a prefix of the first reason; NULL: none */
};

static const struct row rows[] = {
	{ "healthy", NULL, HEALTH_OK, 0, NULL },
	{ "agent silent > 3 intervals while on", set_silent, HEALTH_CRITICAL, 1, "hung: " },
	{ "silent exactly 3 intervals", set_silent_edge, HEALTH_OK, 0, NULL },
	{ "silent but powered off", set_silent_off, HEALTH_OK, 0, NULL },
	{ "silent, power unknown", set_silent_unknown, HEALTH_WARNING, 0, "agent silent for " },
	{ "silent, power read 91 s ago: stale", set_silent_stale_power, HEALTH_WARNING, 0,
	  "agent silent for " },
	{ "silent, power read 90 s ago: fresh", set_silent_power_edge, HEALTH_CRITICAL, 1, "hung: " },
	{ "silent, power never read", set_silent_never_read, HEALTH_WARNING, 0, "agent silent for " },
	{ "silent in maintenance", set_silent_maint, HEALTH_OK, 0, NULL },
	{ "never reported", set_never_reported, HEALTH_OK, 0, NULL },
	{ "silent, just powered on", set_just_on, HEALTH_OK, 0, NULL },
	{ "silent, report interval 60 s", set_long_interval, HEALTH_OK, 0, NULL },
	{ "silent, config interval", set_default_interval, HEALTH_CRITICAL, 1, "hung: " },
	{ "silent, but kilnd could not receive 40 s ago", set_silent_gap, HEALTH_OK, 0, NULL },
	{ "silent, kilnd's gap older than the silence", set_silent_gap_old, HEALTH_CRITICAL, 1,
	  "hung: " },
	{ "silent during a fleet-wide silence", set_silent_fleet, HEALTH_WARNING, 0,
	  "agent silent for 91s during a fleet-wide agent silence: not judged hung" },
	{ "silent, fleet-wide silence ended 2 intervals ago", set_silent_fleet_ended,
	  HEALTH_WARNING, 0, "agent silent for 91s: judged 2 intervals after" },
	{ "silent, fleet-wide silence ended over 2 intervals ago", set_silent_fleet_ended_long,
	  HEALTH_CRITICAL, 1, "hung: " },
	{ "off outside kiln", set_off_outside, HEALTH_WARNING, 0, "powered off outside kiln at " },
	{ "off by alice, agent silent", set_off_by_alice, HEALTH_OK, 0, "off, by alice at " },
	{ "off outside kiln in maintenance", set_off_outside_maint, HEALTH_OK, 0,
	  "powered off outside kiln at " },
	{ "off when first seen", set_off_first_seen, HEALTH_OK, 0, NULL },
	{ "hung with a panic on the console", set_hung_panic, HEALTH_CRITICAL, 1,
	  "hung: powered on, agent silent for 91s; console: Kernel panic - not syncing: Fatal "
	  "exception" },
	{ "bmc unreachable", set_bmc_down, HEALTH_WARNING, 0, "bmc unreachable for 5m" },
	{ "no bmc", set_no_bmc, HEALTH_OK, 0, NULL },
	{ "credentials rejected", set_creds, HEALTH_WARNING, 0, "bmc: credentials rejected" },
	{ "bmc misconfigured", set_bmc_misfit, HEALTH_WARNING, 0,
	  "bmc configuration error: this BMC has 2 systems (Blade1, Blade2); choose one with "
	  "--bmc-system" },
	{ "gpu lost", set_gpu_lost, HEALTH_CRITICAL, 0, "gpus: 7 of 8 seen" },
	{ "xid 79", set_xid79, HEALTH_CRITICAL, 0, "xid: critical Xid 79" },
	{ "harmless xids", set_xid13, HEALTH_OK, 0, NULL },
	{ "every critical xid", set_xid_all, HEALTH_CRITICAL, 0,
	  "xid: critical Xid 48,62,64,74,79,94,95,119,120" },
	{ "ecc rising", set_ecc_up, HEALTH_WARNING, 0, "ecc: uncorrected errors rising (2 -> 5)" },
	{ "ecc flat", set_ecc_flat, HEALTH_OK, 0, NULL },
	{ "ecc unknown start", set_ecc_unknown, HEALTH_OK, 0, NULL },
	{ "remap failure", set_remap, HEALTH_CRITICAL, 0, "remap: " },
	{ "gpu hot", set_gpu_hot, HEALTH_WARNING, 0, "temperature: GPU at 91 C" },
	{ "gpu at the limit", set_gpu_at_limit, HEALTH_OK, 0, NULL },
	{ "inlet hot", set_inlet_hot, HEALTH_WARNING, 0, "temperature: inlet at 45 C" },
	{ "temperatures unknown", set_temps_unknown, HEALTH_OK, 0, NULL },
	{ "psu failed", set_psu_failed, HEALTH_WARNING, 0, "psu: 1 failed" },
	{ "psu redundancy", set_psu_redundancy, HEALTH_WARNING, 0, "psu: redundancy lost" },
	{ "bmc busy", set_bmc_busy, HEALTH_WARNING, 0,
	  "bmc busy: 503 'RAC0218: The maximum number of user sessions is reached.'" },
	{ "bmc busy, nothing said", set_bmc_busy_bare, HEALTH_WARNING, 0, "bmc busy: try again later" },
	{ "bmc busy, agent silent: not hung", set_bmc_busy_silent, HEALTH_WARNING, 0, "bmc busy: " },
	{ "unreachable wins over an old busy mark", set_bmc_busy_down, HEALTH_WARNING, 0,
	  "bmc unreachable for 5m" },
	{ "psu named", set_psu_named, HEALTH_WARNING, 0, "psu: PS2 Status (Critical) failed" },
	{ "psu named, redundancy kept", set_psu_named_kept, HEALTH_WARNING, 0,
	  "psu: PS2 Status (Critical) failed, redundancy kept" },
	{ "psu named, redundancy lost", set_psu_named_lost, HEALTH_WARNING, 0,
	  "psu: PS2 Status (Critical) failed" },
	{ "psu set lost by the BMC's word", set_psu_set_lost, HEALTH_WARNING, 0,
	  "psu: redundancy lost (PS Redundancy)" },
	{ "psu set healthy", set_psu_set_ok, HEALTH_OK, 0, NULL },
	{ "bmc log entry within the window", set_bmc_log, HEALTH_CRITICAL, 0,
	  "bmc log: SEL 12: A fatal PCIe bus error was detected on slot 3. at 2023-11-14 21:13 UTC" },
	{ "bmc log entry past the window", set_bmc_log_old, HEALTH_OK, 0, NULL },
	{ "module differs", set_mismatch, HEALTH_WARNING, 0,
	  "driver: library 550.54.15, kernel module 535.104.05" },
	{ "status mismatch", set_mismatch_status, HEALTH_CRITICAL, 0, "driver: " },
	{ "starved 10 min", set_starved, HEALTH_WARNING, 0, "starved: " },
	{ "starved under 10 min", set_starved_short, HEALTH_OK, 0, NULL },
	{ "starved run ended", set_starved_over, HEALTH_OK, 0, NULL },
	{ "hung and hot: worst wins", set_hung_and_hot, HEALTH_CRITICAL, 1, "hung: " },
	{ "reinstalling", set_reinstalling, HEALTH_WARNING, 0, "reinstalling: step wait_boot" },
	{ "reinstalling, agent silent an hour: not hung", set_reinstalling_silent, HEALTH_WARNING, 0,
	  "reinstalling: step wait_boot" },
	{ "reinstall queued, agent silent: not hung", set_reinstalling_queued, HEALTH_WARNING, 0,
	  "reinstalling" },
	{ "identity refused", set_identity, HEALTH_CRITICAL, 0,
	  "agent identity mismatch: host.machine_id differs, reports refused "
	  "(kiln agent accept-identity gpu02)" },
	{ "identity refused, silent: not hung", set_identity_silent, HEALTH_CRITICAL, 0,
	  "agent identity mismatch: host.machine_id" },
	{ "agent reports elsewhere", set_elsewhere, HEALTH_CRITICAL, 0,
	  "agent identity mismatch: this node's agent reports with node gpu02's token" },
	{ "agent reports elsewhere, silent: not hung", set_elsewhere_silent, HEALTH_CRITICAL, 0,
	  "agent identity mismatch: this node's agent" },
	{ "refusals stopped: hung as usual", set_identity_over, HEALTH_CRITICAL, 1, "hung: " },
	{ "refused since before the last stored report, long ago: never hung",
	  set_identity_never_stored, HEALTH_CRITICAL, 0,
	  "agent identity mismatch: reports refused (kiln agent accept-identity gpu02): "
	  "host.dmi_serial '9QZK2X3' (reported) is not the BMC's serial 'CNIVC0033A0147'" },
	{ "refused 3 intervals ago: still not hung", set_identity_edge, HEALTH_CRITICAL, 0,
	  "agent identity mismatch: " },
	{ "reported elsewhere long ago: hung as usual", set_elsewhere_over, HEALTH_CRITICAL, 1,
	  "hung: " },
	{ "reports refused, silent: not hung", set_refused_silent, HEALTH_CRITICAL, 0,
	  "agent reports refused: report: field 'gpus' is required" },
	{ "reports refused long ago: hung as usual", set_refused_over, HEALTH_CRITICAL, 1,
	  "hung: " },
	{ "refused before the last report: ok", set_refused_before_report, HEALTH_OK, 0, NULL },
	{ "fields refused: a warning", set_rejected_fields, HEALTH_WARNING, 0,
	  "agent reports fields kiln refused: gpus[0].temperature_c" },
};

/* The GPU memory and NVML rows: each names its reasons' count and the first exactly. */
struct gpu_row {
	const char *name;
	void (*set)(struct health_facts *f);
	enum health_level level;
	const char *reason; /* the first reason; NULL: none */
	size_t nreasons;
};

static const struct gpu_row gpu_rows[] = {
	{ "status mismatch", set_mismatch_status, HEALTH_CRITICAL,
	  "driver: NVML/kernel module version mismatch (library 550.54.15, kernel module ?):"
	  " GPUs not counted, reboot pending", 1 },
	{ "mismatch, no GPU counted: not 0 of 8 seen", set_mismatch_gpus, HEALTH_CRITICAL,
	  "driver: NVML/kernel module version mismatch (library ?, kernel module 535.104.05):"
	  " GPUs not counted, reboot pending", 1 },
	{ "no driver, no GPU counted", set_no_driver_gpus, HEALTH_CRITICAL,
	  "gpus: not counted (nvidia status no_driver), the node had 8", 1 },
	{ "gpus clean", set_gpu_clean, HEALTH_OK, NULL, 0 },
	{ "gpu first report: ECC and remap pending", set_gpu_first_bad, HEALTH_CRITICAL,
	  "gpu 3 (0000:1B:00.0): 2 uncorrected ECC errors, row remap pending (reset needed)", 1 },
	{ "gpu uncorrected since boot", set_gpu_volatile, HEALTH_CRITICAL,
	  "gpu 3 (0000:1B:00.0): 1 uncorrected ECC error", 1 },
	{ "gpu lifetime errors only", set_gpu_lifetime, HEALTH_WARNING,
	  "gpu 3 (0000:1B:00.0): 3 uncorrected ECC errors in its lifetime", 1 },
	{ "gpu since boot and lifetime, rising", set_gpu_lifetime_more, HEALTH_CRITICAL,
	  "gpu 3 (0000:1B:00.0): 2 uncorrected ECC errors (5 lifetime, rising)", 1 },
	{ "gpu lifetime rising within the window", set_gpu_lifetime_rising, HEALTH_CRITICAL,
	  "gpu 3 (0000:1B:00.0): 3 uncorrected ECC errors in its lifetime (rising)", 1 },
	{ "gpu lifetime rose before the window", set_gpu_lifetime_rose_long_ago, HEALTH_WARNING,
	  "gpu 3 (0000:1B:00.0): 3 uncorrected ECC errors in its lifetime", 1 },
	{ "gpu rose, counter reset since", set_gpu_rose_then_reset, HEALTH_CRITICAL,
	  "gpu 3 (0000:1B:00.0): uncorrected ECC errors 12m ago", 1 },
	{ "gpu page retirement pending", set_gpu_retire, HEALTH_CRITICAL,
	  "gpu 3 (0000:1B:00.0): page retirement pending (reset needed)", 1 },
	{ "gpu retirement and remap pending", set_gpu_both_pending, HEALTH_CRITICAL,
	  "gpu 3 (0000:1B:00.0): page retirement and row remap pending (reset needed),"
	  " 1 row remapped", 1 },
	{ "gpu remap failed", set_gpu_remap_failed, HEALTH_CRITICAL,
	  "gpu 3 (0000:1B:00.0): row remap failed (service needed), 4 rows remapped", 1 },
	{ "gpu rows remapped alone: repaired", set_gpu_remapped_only, HEALTH_OK, NULL, 0 },
	{ "gpu counts unknown", set_gpu_unknown, HEALTH_OK, NULL, 0 },
	{ "gpu without bus id", set_gpu_no_bus, HEALTH_CRITICAL,
	  "gpu 3: 1 uncorrected ECC error", 1 },
	{ "ecc rising names the gpu", set_gpu_ecc_rising, HEALTH_CRITICAL,
	  "gpu 3 (0000:1B:00.0): 5 uncorrected ECC errors (rising)", 1 },
};

static void test_rules(void **state)
{
	struct health_config cfg;

	(void)state;
	health_config_defaults(&cfg);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *r = &rows[i];
		struct health_facts f;
		struct health_result res;

		healthy(&f);
		if (r->set)
			r->set(&f);
		health_evaluate(&res, &f, &cfg);
		if (res.level != r->level || res.hung != r->hung ||
		    (r->reason && (res.nreasons == 0 ||
				   strncmp(res.reasons[0], r->reason, strlen(r->reason)) != 0)) ||
		    (!r->reason && res.nreasons != 0))
			fail_msg("%s: got %s hung=%d reasons=%zu first='%s'", r->name,
				 health_level_name(res.level), res.hung, res.nreasons,
				 res.nreasons ? res.reasons[0] : "");
		assert_int_equal(health_is_hung(&f, &cfg), r->hung);
	}
}

/* The verdict on a healthy node changed by set. */
static void judge(struct health_result *res, void (*set)(struct health_facts *f),
		  const struct health_config *cfg)
{
	struct health_facts f;

	healthy(&f);
	set(&f);
	health_evaluate(res, &f, cfg);
}

static void test_gpu_rules(void **state)
{
	struct health_config cfg;
	int failed = 0;

	(void)state;
	health_config_defaults(&cfg);
	for (size_t i = 0; i < sizeof(gpu_rows) / sizeof(gpu_rows[0]); i++) {
		const struct gpu_row *r = &gpu_rows[i];
		struct health_result res;

		judge(&res, r->set, &cfg);
		/* the text before its repair mark (test_repair_classes checks the marks) */
		if (res.nreasons)
			res.reasons[0][strlen(res.reasons[0]) -
				       strlen(health_repair_mark(res.repairs[0]))] = '\0';
		if (res.level != r->level || res.hung || res.nreasons != r->nreasons ||
		    (r->reason && strcmp(res.reasons[0], r->reason) != 0)) {
			print_error("%s: got %s hung=%d reasons=%zu first='%s'\n", r->name,
				    health_level_name(res.level), res.hung, res.nreasons,
				    res.nreasons ? res.reasons[0] : "");
			failed++;
		}
	}
	assert_int_equal(failed, 0);
}

/* What will fix it: each rule's first reason and its class, carried by the reason's text. */
static const struct {
	const char *name;
	void (*set)(struct health_facts *f);
	enum health_repair repair;
} repair_rows[] = {
	{ "hung", set_silent, HEALTH_REPAIR_REBOOT },
	{ "hung, panic on the console", set_hung_panic, HEALTH_REPAIR_REBOOT },
	{ "silent, power unknown: a state", set_silent_unknown, HEALTH_REPAIR_NONE },
	{ "bmc unreachable: not the node's", set_bmc_down, HEALTH_REPAIR_NONE },
	{ "credentials: the operator's", set_creds, HEALTH_REPAIR_NONE },
	{ "off by alice", set_off_by_alice, HEALTH_REPAIR_NONE },
	{ "a GPU lost", set_gpu_lost, HEALTH_REPAIR_REBOOT },
	{ "Xid 79", set_xid79, HEALTH_REPAIR_REBOOT },
	{ "ECC rising", set_ecc_up, HEALTH_REPAIR_REBOOT },
	{ "remap failure", set_remap, HEALTH_REPAIR_INSPECTION },
	{ "a GPU's remap failed", set_gpu_remap_failed, HEALTH_REPAIR_INSPECTION },
	{ "a GPU's page retirement pending", set_gpu_retire, HEALTH_REPAIR_REBOOT },
	{ "a GPU's lifetime errors alone", set_gpu_lifetime, HEALTH_REPAIR_NONE },
	{ "GPU hot", set_gpu_hot, HEALTH_REPAIR_INSPECTION },
	{ "inlet hot", set_inlet_hot, HEALTH_REPAIR_INSPECTION },
	{ "PSU failed", set_psu_failed, HEALTH_REPAIR_INSPECTION },
	{ "critical BMC log entry", set_bmc_log, HEALTH_REPAIR_INSPECTION },
	{ "driver mismatch", set_mismatch_status, HEALTH_REPAIR_REBOOT },
	{ "starved: the job's I/O", set_starved, HEALTH_REPAIR_NONE },
	{ "identity refused: the operator's", set_identity, HEALTH_REPAIR_NONE },
};

static void test_repair_classes(void **state)
{
	struct health_config cfg;
	struct health_result res;
	int failed = 0;

	(void)state;
	health_config_defaults(&cfg);
	for (size_t i = 0; i < sizeof(repair_rows) / sizeof(repair_rows[0]); i++) {
		judge(&res, repair_rows[i].set, &cfg);
		if (res.nreasons == 0 || res.repairs[0] != repair_rows[i].repair ||
		    health_reason_repair(res.reasons[0]) != repair_rows[i].repair ||
		    res.repair < repair_rows[i].repair) {
			print_error("%s: got %zu reasons, first '%s' (%s)\n", repair_rows[i].name,
				    res.nreasons, res.nreasons ? res.reasons[0] : "",
				    health_repair_name(res.nreasons ? res.repairs[0] : 0));
			failed++;
		}
	}
	assert_int_equal(failed, 0);
	/* the mark survives a text cut short, and a hung node's class is the strongest */
	assert_int_equal(health_reason_repair("x [needs hardware inspection]"),
			 HEALTH_REPAIR_INSPECTION);
	assert_int_equal(health_reason_repair("x [reboot may clear it] "), HEALTH_REPAIR_NONE);
	assert_int_equal(health_reason_repair(NULL), HEALTH_REPAIR_NONE);
	assert_string_equal(health_repair_name(HEALTH_REPAIR_REBOOT), "reboot");
}

static void test_hung_threshold_from_config(void **state)
{
	struct health_config cfg;
	struct health_facts f;

	(void)state;
	health_config_defaults(&cfg);
	cfg.hung_intervals = 5;
	healthy(&f);
	f.agent_last_seen = NOW - 149;
	assert_false(health_is_hung(&f, &cfg));
	f.agent_last_seen = NOW - 151;
	assert_true(health_is_hung(&f, &cfg));
}

static void test_starved_sample(void **state)
{
	struct health_config cfg;

	(void)state;
	health_config_defaults(&cfg);
	assert_true(health_starved_sample(3, 1, 35, &cfg));
	assert_true(health_starved_sample(10, 1, 20, &cfg));
	assert_false(health_starved_sample(11, 1, 35, &cfg));  /* GPUs busy */
	assert_false(health_starved_sample(3, 0, 35, &cfg));   /* no memory held: idle node */
	assert_false(health_starved_sample(3, 1, 19.9, &cfg)); /* the disks keep up */
	assert_false(health_starved_sample(NAN, 1, 35, &cfg));
	assert_false(health_starved_sample(3, 1, NAN, &cfg));
}

static void test_xid_table(void **state)
{
	int crit = 0;

	(void)state;
	for (int x = 0; x < 200; x++)
		crit += health_xid_critical(x);
	assert_int_equal(crit, 9);
	assert_true(health_xid_critical(79));
	assert_false(health_xid_critical(13));
	assert_false(health_xid_critical(-1));
}

static void test_reasons_capped(void **state)
{
	struct health_config cfg;
	struct health_facts f;
	struct health_result res;

	(void)state;
	health_config_defaults(&cfg);
	healthy(&f);
	set_silent(&f);
	set_bmc_down(&f);
	set_gpu_lost(&f);
	set_xid79(&f);
	set_ecc_up(&f);
	set_remap(&f);
	set_gpu_hot(&f);
	set_inlet_hot(&f);
	set_psu_failed(&f);
	set_mismatch(&f);
	set_starved(&f);
	health_evaluate(&res, &f, &cfg);
	assert_int_equal(res.level, HEALTH_CRITICAL);
	assert_int_equal(res.nreasons, 11);
	assert_string_equal(health_level_name(res.level), "critical");
}

/* One reason per GPU up to HEALTH_GPU_REASONS_MAX, then one for the rest; a warning
 * beyond the cap does not lower the level, a critical one beyond it still counts. */
static void set_gpus12_lifetime(struct health_facts *f)
{
	static char bus[12][16];

	for (size_t i = 0; i < 12; i++) {
		snprintf(bus[i], sizeof(bus[i]), "0000:%02zX:00.0", 0x10 + i);
		f->gpus[i] = (struct health_gpu){ .index = (int64_t)i, .pci_bus_id = bus[i],
						   .ecc_aggregate = 1 };
	}
	f->gpus[11].retired_pages_pending = 1; /* beyond the cap: still critical */
	f->ngpus = 12;
}

static void test_gpu_reasons_capped(void **state)
{
	struct health_config cfg;
	struct health_result res;

	(void)state;
	health_config_defaults(&cfg);
	judge(&res, set_gpus12_lifetime, &cfg);
	assert_int_equal(res.level, HEALTH_CRITICAL);
	assert_int_equal(res.nreasons, HEALTH_GPU_REASONS_MAX + 1);
	assert_string_equal(res.reasons[0],
			    "gpu 0 (0000:10:00.0): 1 uncorrected ECC error in its lifetime");
	assert_string_equal(res.reasons[HEALTH_GPU_REASONS_MAX],
			    "gpus: 4 more with memory errors [reboot may clear it]");
}

/* Every finding at once with a long bus id and big counts: cut at the reason's length. */
static void test_gpu_reason_bounded(void **state)
{
	struct health_config cfg;
	struct health_gpu g = { .index = 63, .pci_bus_id = "00000000:1B:00.0-and-a-very-long-bus-id"
							  "-that-no-driver-would-give-but-a-report-"
							  "might-carry-all-the-same-so-the-reason-"
							  "must-still-stop-at-its-length",
				.ecc_volatile = INT64_MAX, .ecc_aggregate = INT64_MAX,
				.ecc_rose_at = NOW, .retired_pages_pending = 1,
				.remap_pending = 1, .remap_failure = 1,
				.remapped_rows = INT64_MAX };
	char out[HEALTH_REASON_LEN];

	(void)state;
	health_config_defaults(&cfg);
	assert_int_equal(health_gpu_verdict(out, sizeof(out), &g, NOW, &cfg), HEALTH_CRITICAL);
	assert_int_equal(strlen(out), HEALTH_REASON_LEN - 1);
	assert_int_equal(strncmp(out, "gpu 63 (00000000:1B:00.0-", 25), 0);
	/* as a reason, cut shorter so that its repair mark still ends it */
	{
		struct health_facts f;
		struct health_result res;

		healthy(&f);
		f.gpus[0] = g;
		f.ngpus = 1;
		health_evaluate(&res, &f, &cfg);
		assert_int_equal(strlen(res.reasons[0]), HEALTH_REASON_LEN - 1);
		assert_int_equal(health_reason_repair(res.reasons[0]), HEALTH_REPAIR_INSPECTION);
	}
}

/* A reinstall's silence is not a hang: nothing in the result would let the poller's
 * remediation (which acts on res.hung and "hung:" reasons only) cycle the node; once the job
 * is over the same silence is a hang again. */
/* Every reason of a node whose one PSU failed and took the redundancy with it. */
static void test_psu_reasons(void **state)
{
	struct health_config cfg;
	struct health_facts f;
	struct health_result res;

	(void)state;
	health_config_defaults(&cfg);
	healthy(&f);
	set_psu_named_lost(&f);
	health_evaluate(&res, &f, &cfg);
	assert_int_equal(res.nreasons, 2);
	assert_string_equal(res.reasons[0],
			    "psu: PS2 Status (Critical) failed [needs hardware inspection]");
	assert_string_equal(res.reasons[1], "psu: redundancy lost (PS Redundancy: 1 healthy, 2 "
			    "needed) [needs hardware inspection]");
}

/* Busy beside a silent agent: not hung (so never remediated), the silence shown as such. */
static void test_busy_never_hung(void **state)
{
	struct health_config cfg;
	struct health_facts f;
	struct health_result res;

	(void)state;
	health_config_defaults(&cfg);
	healthy(&f);
	set_silent(&f);
	f.power_time = NOW; /* even a power read this second says nothing while busy */
	set_bmc_busy(&f);
	health_evaluate(&res, &f, &cfg);
	assert_false(res.hung);
	assert_false(health_is_hung(&f, &cfg));
	assert_int_equal(res.nreasons, 2);
	assert_true(strncmp(res.reasons[1], "agent silent for ", 17) == 0);
	f.bmc_busy = 0;
	assert_true(health_is_hung(&f, &cfg));
}

static void test_reinstalling_never_hung(void **state)
{
	struct health_config cfg;
	struct health_facts f;
	struct health_result res;

	(void)state;
	health_config_defaults(&cfg);
	healthy(&f);
	f.agent_last_seen = NOW - 7200;
	f.power_on_since = NOW - 7000;
	f.reinstalling = 1;
	f.reinstall_step = "wait_boot";
	health_evaluate(&res, &f, &cfg);
	assert_int_equal(res.level, HEALTH_WARNING);
	assert_false(res.hung);
	assert_false(health_is_hung(&f, &cfg));
	assert_int_equal(res.nreasons, 1);
	assert_string_equal(res.reasons[0], "reinstalling: step wait_boot");
	for (size_t i = 0; i < res.nreasons; i++)
		assert_true(strncmp(res.reasons[i], "hung:", 5) != 0);

	f.reinstalling = 0;
	f.reinstall_step = NULL;
	health_evaluate(&res, &f, &cfg);
	assert_int_equal(res.level, HEALTH_CRITICAL);
	assert_true(res.hung);
}

/* The reason kinds the metrics label reasons with: each reason the rules write has its
 * kind, and the kinds are the small fixed set health_reason_kinds() lists. */
static void test_reason_kinds(void **state)
{
	static const struct {
		const char *reason, *kind;
	} vectors[] = {
		{ "hung: powered on, agent silent for 12m; console: Kernel panic", "hung" },
		{ "agent silent for 3m, power unknown: not judged hung", "agent_silent" },
		{ "agent identity mismatch: machine_id differs, reports refused", "agent_identity" },
		{ "bmc: credentials rejected", "bmc_credentials" },
		{ "bmc busy: 503 'RAC0218'", "bmc_busy" },
		{ "bmc unreachable for 5m", "bmc_unreachable" },
		{ "bmc log: PS2 failed at 2026-01-01 02:00 UTC", "bmc_log" },
		{ "reinstalling: step boot", "reinstalling" },
		{ "off, by alice at 02:10 UTC", "power_off" },
		{ "powered off outside kiln at 02:10 UTC", "power_off" },
		{ "gpus: 7 of 8 seen", "gpu_missing" },
		{ "gpus: not counted (nvidia status error), the node had 8", "gpu_missing" },
		{ "gpus: 3 more with memory errors", "ecc" },
		{ "xid: critical Xid 79", "xid" },
		{ "ecc: uncorrected errors rising (1 -> 3)", "ecc" },
		{ "remap: a GPU's row remapping failed", "ecc" },
		{ "gpu 2 (00000000:47:00.0): 2 uncorrected ECC errors", "ecc" },
		{ "temperature: inlet at 47 C (limit 40 C)", "temperature" },
		{ "psu: redundancy lost", "psu" },
		{ "driver: NVML/kernel module version mismatch (library 550, kernel module 535):"
		  " GPUs not counted, reboot pending", "driver_mismatch" },
		{ "driver: library 550.54.15, kernel module 535.1 (reboot pending)", "reboot_pending" },
		{ "starved: GPUs idle with memory held and high iowait for 12m", "starved" },
		{ "something new", "other" },
		{ NULL, "other" },
	};
	const char *const *kinds = health_reason_kinds();

	(void)state;
	for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
		const char *k = health_reason_kind(vectors[i].reason);
		size_t j;

		assert_string_equal(k, vectors[i].kind);
		for (j = 0; kinds[j] && strcmp(kinds[j], k) != 0; j++)
			;
		assert_non_null(kinds[j]);
	}
	assert_true(health_reboot_pending("mismatch", NULL, NULL));
	assert_true(health_reboot_pending("ok", "550.54.15", "535.1"));
	assert_false(health_reboot_pending("ok", "550.54.15", "550.54.15"));
	assert_false(health_reboot_pending(NULL, "550.54.15", NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rules),
		cmocka_unit_test(test_gpu_rules),
		cmocka_unit_test(test_repair_classes),
		cmocka_unit_test(test_hung_threshold_from_config),
		cmocka_unit_test(test_starved_sample),
		cmocka_unit_test(test_xid_table),
		cmocka_unit_test(test_reasons_capped),
		cmocka_unit_test(test_reinstalling_never_hung),
		cmocka_unit_test(test_gpu_reasons_capped),
		cmocka_unit_test(test_gpu_reason_bounded),
		cmocka_unit_test(test_psu_reasons),
		cmocka_unit_test(test_busy_never_hung),
		cmocka_unit_test(test_reason_kinds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
