/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for agent/kernel_alarms.c and the kmsg reader's alarms: the kernel's own wordings. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "kernel_alarms.h"
#include "xid.h"

#define FIX KILN_TEST_DATA "/fixtures/agent"

/* Lines as the kernel prints them (kernel/watchdog.c, hung_task.c, rcu/tree_stall.h,
 * arch/x86/kernel/cpu/mce, mm/oom_kill.c, panic.c), without the kmsg prefix. */
static void test_kinds(void **state)
{
	static const struct {
		const char *message, *kind;
	} cases[] = {
		{ "watchdog: BUG: soft lockup - CPU#12 stuck for 22s! [python3:4242]", "soft_lockup" },
		{ "BUG: soft lockup - CPU#3 stuck for 23s! [kworker/3:1:213]", "soft_lockup" },
		{ "NMI watchdog: Watchdog detected hard LOCKUP on cpu 3", "hard_lockup" },
		{ "watchdog: Watchdog detected hard LOCKUP on cpu 17", "hard_lockup" },
		{ "INFO: task jbd2/nvme0n1p2-8:512 blocked for more than 122 seconds.", "hung_task" },
		{ "INFO: task python3:4242 blocked for more than 241 seconds.", "hung_task" },
		{ "rcu: INFO: rcu_sched detected stalls on CPUs/tasks:", "rcu_stall" },
		{ "rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:", "rcu_stall" },
		{ "INFO: rcu_sched detected stalls on CPUs/tasks: { 5} (detected by 3, t=60002 jiffies)",
		  "rcu_stall" },
		{ "rcu: INFO: rcu_preempt self-detected stall on CPU", "rcu_stall" },
		{ "mce: [Hardware Error]: Machine check events logged", "machine_check" },
		{ "mce: [Hardware Error]: CPU 3: Machine Check Exception: 5 Bank 4: b200000000070f0f",
		  "machine_check" },
		{ "{1}[Hardware Error]: Hardware error from APEI Generic Hardware Error Source: 0",
		  "machine_check" },
		{ "Out of memory: Killed process 4242 (python3) total-vm:1094561792kB, anon-rss:1056734208kB",
		  "oom_kill" },
		{ "Memory cgroup out of memory: Killed process 4242 (python3) total-vm:9000000kB",
		  "oom_kill" },
		{ "Kernel panic - not syncing: Fatal exception in interrupt", "panic" },
		{ "Kernel panic - not syncing: softlockup: hung tasks", "panic" },
		{ "Oops: 0000 [#1] SMP NOPTI", "oops" },
		{ "kernel BUG at mm/slub.c:305!", "oops" },
		{ "BUG: unable to handle page fault for address: ffffa0b1c2d3e4f8", "oops" },
		{ "general protection fault, probably for non-canonical address 0xdead000000000100: 0000 [#1] SMP",
		  "oops" },
		{ "EXT4-fs (nvme0n1p2): Remounting filesystem read-only", "fs_readonly" },
		{ "XFS (md0): Corruption of in-memory data detected.  Shutting down filesystem", "fs_readonly" },
		/* the same kill's other lines, and everyday lines that look alike */
		{ "oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0-1,global_oom,task=python3,pid=4242,uid=1000",
		  NULL },
		{ "python3 invoked oom-killer: gfp_mask=0x100cca(GFP_HIGHUSER_MOVABLE), order=0", NULL },
		{ "\"echo 0 > /proc/sys/kernel/hung_task_timeout_secs\" disables this message.", NULL },
		{ "INFO: task python3:4242 can't die for more than 120 seconds.", NULL },
		{ "NMI watchdog: Enabled. Permanently consumes one hw-PMU counter.", NULL },
		{ "mce: CPU0: Thermal monitoring enabled (TM1)", NULL },
		{ "rcu: Hierarchical RCU implementation.", NULL },
		{ "EXT4-fs (nvme0n1p2): mounted filesystem with ordered data mode.", NULL },
		{ "NVRM: Xid (PCI:0000:3b:00): 79, pid=4242, name=python3, GPU has fallen off the bus.", NULL },
		{ "", NULL },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *kind = kernel_alarm_kind(cases[i].message);

		if (!cases[i].kind && kind)
			fail_msg("case %zu '%s': kind %s, expected none", i, cases[i].message, kind);
		if (cases[i].kind && (!kind || strcmp(kind, cases[i].kind) != 0))
			fail_msg("case %zu '%s': kind %s, expected %s", i, cases[i].message,
				 kind ? kind : "none", cases[i].kind);
	}
	assert_null(kernel_alarm_kind(NULL));
}

static const char *kind_at(json_t *a, size_t i)
{
	return json_string_value(json_object_get(json_array_get(a, i), "kind"));
}

/* The reader picks the alarms out of a kmsg stream beside the Xids: one per alarm, its
 * sequence number and time, continuation records and userspace's records skipped. */
static void test_reader_alarms(void **state)
{
	struct xid_reader *r = NULL;
	json_t *xids = json_array(), *alarms = json_array(), *a;

	(void)state;
	assert_int_equal(xid_reader_open(&r, FIX "/roots/alarms"), 0);
	assert_int_equal(xid_reader_poll_alarms(r, xids, 10, alarms, 64), 0);
	assert_int_equal(json_array_size(xids), 1);
	assert_int_equal(json_array_size(alarms), 6);
	assert_string_equal(kind_at(alarms, 0), "soft_lockup");
	a = json_array_get(alarms, 0);
	assert_string_equal(json_string_value(json_object_get(a, "message")),
			    "watchdog: BUG: soft lockup - CPU#12 stuck for 22s! [python3:4242]");
	assert_int_equal(json_integer_value(json_object_get(a, "seq")), 4002);
	assert_int_equal(json_integer_value(json_object_get(a, "time_us")), 2712345678LL);
	assert_string_equal(kind_at(alarms, 1), "hung_task");
	assert_string_equal(kind_at(alarms, 2), "rcu_stall");
	assert_string_equal(kind_at(alarms, 3), "oom_kill"); /* one for the kill, not three */
	assert_int_equal(json_integer_value(json_object_get(json_array_get(alarms, 3), "seq")), 4012);
	/* 4013 was written by userspace (facility user): no alarm */
	assert_string_equal(kind_at(alarms, 4), "machine_check");
	assert_string_equal(kind_at(alarms, 5), "machine_check");
	assert_int_equal(xid_reader_alarms_dropped(r), 0);
	xid_reader_close(r);

	/* over the cap: the rest are counted */
	json_array_clear(xids);
	json_array_clear(alarms);
	assert_int_equal(xid_reader_open(&r, FIX "/roots/alarms"), 0);
	assert_int_equal(xid_reader_poll_alarms(r, xids, 10, alarms, 2), 0);
	assert_int_equal(json_array_size(alarms), 2);
	assert_int_equal(xid_reader_alarms_dropped(r), 4);
	xid_reader_close(r);

	/* the old call reads no alarms */
	json_array_clear(xids);
	assert_int_equal(xid_reader_open(&r, FIX "/roots/alarms"), 0);
	assert_int_equal(xid_reader_poll(r, xids, 10), 0);
	assert_int_equal(json_array_size(xids), 1);
	assert_int_equal(xid_reader_alarms_dropped(r), 0);
	xid_reader_close(r);
	json_decref(xids);
	json_decref(alarms);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kinds),
		cmocka_unit_test(test_reader_alarms),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
