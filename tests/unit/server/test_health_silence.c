/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for server/health: when a silent node is not judged hung (a boot in progress, a
 * fleet-wide silence), what its console says when it is, and faults back after a reboot. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "health/health.h"
#include "health_fixture.h"

/* A node that rebooted by itself (power never off; the BMC's BootProgress went back to its
 * firmware's states, kiln saw that 5 minutes ago) through a 5-minute boot: never hung with
 * the default boot time; hung once the boot should have ended plus the usual intervals; a
 * BMC that says its last boot took 11 minutes lengthens the window. */
static void test_boot_in_progress(void **state)
{
	struct health_config cfg;
	struct health_facts f;
	struct health_result res;

	(void)state;
	health_config_defaults(&cfg);
	assert_int_equal(cfg.boot_time_s, 600);
	for (int64_t t = 0; t <= 300; t += 10) {
		healthy(&f);
		f.boot_started = NOW - t;          /* t seconds into the boot */
		f.agent_last_seen = NOW - t - 10; /* its last report, just before the reboot */
		f.boot_state = "PCIResourceConfigStarted";
		health_evaluate(&res, &f, &cfg);
		assert_false(res.hung);
		assert_false(health_is_hung(&f, &cfg));
		assert_int_equal(res.level, HEALTH_OK);
	}
	/* shown while it lasts, as no verdict */
	assert_int_equal(res.nreasons, 1);
	assert_string_equal(res.reasons[0], "boot: began 5m ago (BMC: PCIResourceConfigStarted), "
			    "agent not back yet: not judged hung before 10m");
	/* the boot should have ended 10 min after it began: hung 3 intervals later */
	f.boot_started = NOW - 600 - 90;
	f.agent_last_seen = NOW - 700;
	assert_false(health_is_hung(&f, &cfg));
	f.boot_started = NOW - 600 - 91;
	health_evaluate(&res, &f, &cfg);
	assert_true(res.hung);
	assert_true(strncmp(res.reasons[0], "hung: powered on, agent silent for 11m; boot began "
			    "11m ago (BMC: PCIResourceConfigStarted) [reboot", 96) == 0);
	/* the BMC measured its last boot at 676 s: 845 s before the window opens */
	f.boot_last_s = 676;
	assert_false(health_is_hung(&f, &cfg));
	f.boot_started = NOW - 845 - 91;
	f.agent_last_seen = NOW - 940;
	assert_true(health_is_hung(&f, &cfg));
	/* a report after the boot began ends it: the usual silence counts */
	healthy(&f);
	f.boot_started = NOW - 200;
	f.agent_last_seen = NOW - 100;
	assert_true(health_is_hung(&f, &cfg));
	/* a boot seen while the node is off says nothing */
	f.power = 2;
	f.agent_last_seen = NOW - 300;
	health_evaluate(&res, &f, &cfg);
	assert_int_equal(res.nreasons, 0);
}

/* Which agents count: reporting, fallen silent lately, or not at all. */
static void test_fleet_part(void **state)
{
	struct health_config cfg;
	struct health_facts f;

	(void)state;
	health_config_defaults(&cfg);
	healthy(&f);
	assert_int_equal(health_fleet_part(&f, &cfg), 1);
	f.agent_last_seen = NOW - 45; /* 1.5 intervals (hung_intervals - 1.5): not yet */
	assert_int_equal(health_fleet_part(&f, &cfg), 1);
	f.agent_last_seen = NOW - 46;
	assert_int_equal(health_fleet_part(&f, &cfg), 2);
	f.agent_last_seen = NOW - 150; /* 5 intervals: the edge of "lately" */
	assert_int_equal(health_fleet_part(&f, &cfg), 2);
	f.agent_last_seen = NOW - 151; /* silent since well before: its own trouble */
	assert_int_equal(health_fleet_part(&f, &cfg), 0);
	f.agent_last_seen = NOW - 90;
	f.receive_gap = NOW - 10; /* kilnd could not receive: not silent */
	assert_int_equal(health_fleet_part(&f, &cfg), 1);
	f.receive_gap = 0;
	f.power = 2;
	assert_int_equal(health_fleet_part(&f, &cfg), 0);
	f.power = 0; /* a switch took the BMC too: still counted */
	assert_int_equal(health_fleet_part(&f, &cfg), 2);
	f.maintenance = 1;
	assert_int_equal(health_fleet_part(&f, &cfg), 0);
	healthy(&f);
	cfg.hung_intervals = 2; /* at least one interval */
	f.agent_last_seen = NOW - 30;
	assert_int_equal(health_fleet_part(&f, &cfg), 1);
	f.agent_last_seen = NOW - 31;
	assert_int_equal(health_fleet_part(&f, &cfg), 2);
	f.agent_last_seen = 0;
	assert_int_equal(health_fleet_part(&f, &cfg), 0);
}

static void test_console_evidence(void **state)
{
	static const struct {
		const char *name, *text, *want;
	} lines[] = {
		{ "panic wins over what follows",
		  "[  101.000001] BUG: unable to handle page fault\n"
		  "[  101.000200] Kernel panic - not syncing: Fatal exception\n"
		  "[  101.000300] ---[ end Kernel panic - not syncing: Fatal exception ]---\n",
		  "Kernel panic - not syncing: Fatal exception" },
		{ "the last alarm", "ok\nwatchdog: BUG: soft lockup - CPU#3 stuck for 22s!\nfoo\n",
		  "watchdog: BUG: soft lockup - CPU#3 stuck for 22s!" },
		{ "else the last line", "Debian GNU/Linux 12 gpu03 ttyS0\n\ngpu03 login: \n\n",
		  "gpu03 login:" },
		{ "escapes and CR removed", "\x1b[0;31mINFO: task python:812 blocked for more than "
					    "120 seconds.\x1b[0m\r\n",
		  "INFO: task python:812 blocked for more than 120 seconds." },
		{ "blank only", "\n  \r\n", NULL },
		{ "empty", "", NULL },
	};
	char out[HEALTH_REASON_LEN];

	(void)state;
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		int found = health_console_evidence(out, sizeof(out), lines[i].text,
						    strlen(lines[i].text));

		if (found != (lines[i].want != NULL) || (lines[i].want && strcmp(out, lines[i].want)))
			fail_msg("%s: found %d '%s'", lines[i].name, found, out);
	}
	assert_int_equal(health_console_evidence(out, 8, "Kernel panic - x\n", 17), 1);
	assert_string_equal(out, "Kernel"); /* cut to fit, trailing blank trimmed */
}

/* A node hangs and has a critical Xid; kiln cycles it; in the next boot the Xid comes back:
 * now it needs inspection (and remediation would not cycle it again), while a driver update's
 * pending reboot is no fault that comes back. */
static void test_fault_back_after_reboot(void **state)
{
	struct health_config cfg;
	struct health_boot_faults b;
	struct health_facts f;
	struct health_result res;
	char *text;

	(void)state;
	health_config_defaults(&cfg);
	health_boot_faults_load(&b, NULL);
	assert_int_equal(health_boot_faults_rotate(&b, "boot-a", NOW - 7200), 1);
	healthy(&f);
	f.agent_last_seen = NOW - 3700;
	f.now = NOW - 3600;
	f.xids[0] = 79;
	f.nxids = 1;
	f.driver_version = "550.90.07"; /* an update waits for the reboot too */
	health_evaluate(&res, &f, &cfg);
	assert_true(res.hung);
	assert_int_equal(res.repair, HEALTH_REPAIR_REBOOT);
	assert_int_equal(health_boot_faults_note(&b, &res), 1);
	assert_string_equal(b.kinds, "hung,xid");
	assert_int_equal(health_boot_faults_note(&b, &res), 0); /* noted once */
	/* kept across a restart of kilnd */
	text = health_boot_faults_dump(&b);
	health_boot_faults_load(&b, text);
	free(text);
	assert_string_equal(b.boot_id, "boot-a");
	/* the cycle: a new boot, the Xid again */
	assert_int_equal(health_boot_faults_rotate(&b, "boot-b", NOW - 600), 1);
	assert_string_equal(b.prev_kinds, "hung,xid");
	assert_string_equal(b.kinds, "");
	healthy(&f);
	f.xids[0] = 79;
	f.nxids = 1;
	f.boot_id = "boot-b";
	f.returned_kinds = b.prev_kinds;
	health_evaluate(&res, &f, &cfg);
	assert_int_equal(res.nreasons, 1);
	assert_string_equal(res.reasons[0], "xid: critical Xid 79 (back after a reboot) "
			    "[needs hardware inspection]");
	assert_int_equal(res.repair, HEALTH_REPAIR_INSPECTION);
	assert_int_equal(health_boot_faults_note(&b, &res), 1);
	assert_string_equal(b.kinds, "xid");
	/* the driver's pending reboot was not kept as a fault */
	f.driver_version = "550.90.07";
	f.xids[0] = 13;
	health_evaluate(&res, &f, &cfg);
	assert_int_equal(res.repair, HEALTH_REPAIR_REBOOT);
	/* a kernel alarm is its rule's to escalate (per alarm kind): never noted here */
	{
		struct health_result k = { .nreasons = 1, .repairs = { HEALTH_REPAIR_REBOOT } };

		snprintf(k.reasons[0], sizeof(k.reasons[0]), "kernel: hung task: INFO: task "
			 "jbd2:512 blocked for more than 122 seconds. [reboot may clear it]");
		assert_int_equal(health_boot_faults_note(&b, &k), 0);
		assert_null(strstr(b.kinds, "kernel"));
	}
	/* the same boot id again is no reboot */
	assert_int_equal(health_boot_faults_rotate(&b, "boot-b", NOW), 0);
	assert_int_equal(health_boot_faults_rotate(&b, NULL, NOW), 0);
}

/* What says a boot began, as vendors word it; what does not. */
static void test_boot_signs(void **state)
{
	static const char *const begun[] = {
		"System Boot Initiated: Initiated by warm reset", /* FreeIPMI's SEL wording */
		"System Boot Initiated ; Initiated by power up",
		"System CPU Resetting.",                          /* iDRAC SYS1003 */
		"System is turning on.",                          /* iDRAC SYS1000 */
		"The OS run-time software initiated a warm reset.",
		"Server reset.",                                  /* iLO IML/IEL */
		"Host server reset by: Administrator.",
		"Server power restored.",
	};
	static const char *const not_begun[] = {
		"Server power removed.", "The server could not be powered on.",
		"OS Boot: C: boot completed", "Power Supply 2 failed", NULL,
	};

	(void)state;
	for (size_t i = 0; i < sizeof(begun) / sizeof(begun[0]); i++)
		if (!health_boot_log_line(begun[i]))
			fail_msg("not seen as a boot: %s", begun[i]);
	for (size_t i = 0; i < sizeof(not_begun) / sizeof(not_begun[0]); i++)
		if (health_boot_log_line(not_begun[i]))
			fail_msg("seen as a boot: %s", not_begun[i]);
	assert_true(health_boot_state_booting("MemoryInitializationStarted"));
	assert_true(health_boot_state_booting("OSBootStarted"));
	assert_false(health_boot_state_booting("OSRunning"));
	assert_false(health_boot_state_booting("None"));
	assert_false(health_boot_state_booting(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_boot_in_progress),
		cmocka_unit_test(test_fleet_part),
		cmocka_unit_test(test_console_evidence),
		cmocka_unit_test(test_fault_back_after_reboot),
		cmocka_unit_test(test_boot_signs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
