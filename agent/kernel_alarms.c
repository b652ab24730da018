/* SPDX-License-Identifier: Apache-2.0 */
/* Matching the kernel's alarm lines (kernel_alarms.h): a table of the kernel's own wordings. */
#include <stddef.h>
#include <string.h>

#include "kernel_alarms.h"

/* How a pattern is matched against a message. */
enum match { AT_START, ANYWHERE };

static const struct pattern {
	const char *kind;
	enum match how;
	const char *text;
	const char *also; /* a second text that must follow (ANYWHERE), or NULL */
} patterns[] = {
	/* kernel/watchdog.c: "watchdog: BUG: soft lockup - CPU#%d stuck for %us! [%s:%d]"
	 * (the "watchdog: " prefix since 4.x; older kernels print "BUG: soft lockup - ...") */
	{ "soft_lockup", ANYWHERE, "BUG: soft lockup - CPU#", NULL },
	/* kernel/watchdog_hld.c / watchdog_perf.c: "Watchdog detected hard LOCKUP on cpu %d",
	 * after "NMI watchdog: " (older) or "watchdog: " */
	{ "hard_lockup", ANYWHERE, "Watchdog detected hard LOCKUP on cpu", NULL },
	/* kernel/hung_task.c: "INFO: task %s:%d blocked for more than %ld seconds." */
	{ "hung_task", AT_START, "INFO: task ", " blocked for more than " },
	/* kernel/rcu/tree_stall.h: "rcu: INFO: rcu_sched detected stalls on CPUs/tasks:",
	 * "rcu: INFO: rcu_preempt self-detected stall on CPU" ("rcu: " since 4.19) */
	{ "rcu_stall", ANYWHERE, "INFO: rcu_", " detected stall" },
	{ "rcu_stall", ANYWHERE, "INFO: rcu_", " self-detected stall" },
	/* arch/x86/kernel/cpu/mce: "mce: [Hardware Error]: Machine check events logged",
	 * "mce: [Hardware Error]: CPU 3: Machine Check Exception: 5 Bank 4: ...", and the
	 * "[Hardware Error]: ..." lines of APEI/GHES and the decoders */
	{ "machine_check", ANYWHERE, "[Hardware Error]", NULL },
	{ "machine_check", ANYWHERE, "Machine check events logged", NULL },
	/* mm/oom_kill.c: "Out of memory: Killed process %d (%s) ..." and "Memory cgroup out of
	 * memory: Killed process %d (%s) ..." (older: "Killed process %d (%s) ...") */
	{ "oom_kill", AT_START, "Out of memory: Killed process ", NULL },
	{ "oom_kill", AT_START, "Memory cgroup out of memory: Killed process ", NULL },
	{ "oom_kill", AT_START, "Out of memory (oom_kill_allocating_task): Killed process ", NULL },
	/* kernel/panic.c: "Kernel panic - not syncing: %s" */
	{ "panic", AT_START, "Kernel panic - not syncing", NULL },
	/* arch oops and BUG() reports */
	{ "oops", AT_START, "Oops: ", NULL },
	{ "oops", AT_START, "kernel BUG at ", NULL },
	{ "oops", AT_START, "BUG: unable to handle ", NULL },
	{ "oops", AT_START, "general protection fault", NULL },
	/* fs/ext4/super.c, fs/xfs: the filesystem gave up writing */
	{ "fs_readonly", ANYWHERE, "Remounting filesystem read-only", NULL },
	{ "fs_readonly", ANYWHERE, "Corruption of in-memory data detected.  Shutting down filesystem", NULL },
};

const char *kernel_alarm_kind(const char *message)
{
	if (!message)
		return NULL;
	for (size_t i = 0; i < sizeof(patterns) / sizeof(patterns[0]); i++) {
		const struct pattern *p = &patterns[i];
		const char *at;

		if (p->how == AT_START)
			at = strncmp(message, p->text, strlen(p->text)) == 0 ? message : NULL;
		else
			at = strstr(message, p->text);
		if (!at)
			continue;
		if (p->also && !strstr(at + strlen(p->text), p->also))
			continue;
		return p->kind;
	}
	return NULL;
}
