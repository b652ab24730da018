/* SPDX-License-Identifier: Apache-2.0 */
/* The kernel's own alarms in its log: lockups, hung tasks, RCU stalls, machine checks, OOM kills, panics. */
#ifndef KILN_AGENT_KERNEL_ALARMS_H
#define KILN_AGENT_KERNEL_ALARMS_H

/* Kernel alarms carried in one report at most; more are counted in agent.kernel_events_dropped. */
#define KERNEL_ALARMS_MAX 64
/* The longest message an alarm carries (the kernel's line, cut). */
#define KERNEL_ALARM_MESSAGE_MAX 400

/*
 * The kind of alarm a kernel log message (without the kmsg "prio,seq,usec,flags;" prefix)
 * raises, in the kernel's own wording: "soft_lockup" ("watchdog: BUG: soft lockup - CPU#12
 * stuck for 22s! [python3:4242]"), "hard_lockup" ("NMI watchdog: Watchdog detected hard
 * LOCKUP on cpu 3"), "hung_task" ("INFO: task jbd2/nvme0n1p2-8:512 blocked for more than 122
 * seconds."), "rcu_stall" ("rcu: INFO: rcu_sched detected stalls on CPUs/tasks:"),
 * "machine_check" ("mce: [Hardware Error]: Machine check events logged"), "oom_kill" ("Out
 * of memory: Killed process 4242 (python3) ..." and its memory cgroup form), "panic"
 * ("Kernel panic - not syncing: ..."), "oops" ("Oops: 0000 [#1] SMP PTI", "kernel BUG at
 * ...", "BUG: unable to handle page fault ..."), "fs_readonly" ("EXT4-fs (nvme0n1p2):
 * Remounting filesystem read-only"). NULL for any other message. One OOM kill logs several
 * lines ("invoked oom-killer", "oom-kill:constraint=...", "Killed process"): only the
 * "Killed process" line, which names the victim, is the alarm.
 */
const char *kernel_alarm_kind(const char *message);

#endif
