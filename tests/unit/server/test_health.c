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

#define NOW 1700000000

/* A healthy powered-on node with a BMC and an agent that reported 10 s ago. */
static void healthy(struct health_facts *f)
{
	health_facts_init(f, NOW);
	f->has_bmc = 1;
	f->bmc_reachable = 1;
	f->power = 1;
	f->power_time = NOW - 5;
	f->agent_last_seen = NOW - 10;
	f->agent_interval_s = 30;
	f->gpus_seen = 8;
	f->gpus_expected = 8;
	f->hottest_gpu_c = 60;
	f->inlet_c = 24;
	f->ecc_first = 0;
	f->ecc_last = 0;
	f->nvidia_status = "ok";
	f->driver_version = "550.54.15";
	f->kernel_module_version = "550.54.15";
}

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
static void set_bmc_down(struct health_facts *f) { f->bmc_reachable = 0; f->bmc_down_since = NOW - 300; }
static void set_no_bmc(struct health_facts *f) { f->has_bmc = 0; f->bmc_reachable = 0; }
static void set_creds(struct health_facts *f) { f->credentials_rejected = 1; }
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
	{ "bmc unreachable", set_bmc_down, HEALTH_WARNING, 0, "bmc unreachable for 5m" },
	{ "no bmc", set_no_bmc, HEALTH_OK, 0, NULL },
	{ "credentials rejected", set_creds, HEALTH_WARNING, 0, "bmc: credentials rejected" },
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
	{ "status mismatch", set_mismatch_status, HEALTH_WARNING, 0, "driver: " },
	{ "starved 10 min", set_starved, HEALTH_WARNING, 0, "starved: " },
	{ "starved under 10 min", set_starved_short, HEALTH_OK, 0, NULL },
	{ "starved run ended", set_starved_over, HEALTH_OK, 0, NULL },
	{ "hung and hot: worst wins", set_hung_and_hot, HEALTH_CRITICAL, 1, "hung: " },
	{ "reinstalling", set_reinstalling, HEALTH_WARNING, 0, "reinstalling: step wait_boot" },
	{ "reinstalling, agent silent an hour: not hung", set_reinstalling_silent, HEALTH_WARNING, 0,
	  "reinstalling: step wait_boot" },
	{ "reinstall queued, agent silent: not hung", set_reinstalling_queued, HEALTH_WARNING, 0,
	  "reinstalling" },
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
	assert_string_equal(res.reasons[0], "psu: PS2 Status (Critical) failed");
	assert_string_equal(res.reasons[1],
			    "psu: redundancy lost (PS Redundancy: 1 healthy, 2 needed)");
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rules),
		cmocka_unit_test(test_hung_threshold_from_config),
		cmocka_unit_test(test_starved_sample),
		cmocka_unit_test(test_xid_table),
		cmocka_unit_test(test_reasons_capped),
		cmocka_unit_test(test_reinstalling_never_hung),
		cmocka_unit_test(test_psu_reasons),
		cmocka_unit_test(test_busy_never_hung),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
