/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for the host rules (server/health/host_rules.c): the kernel's alarms and filesystems
 * filling up, as rows of facts to the reason, its level and repair class; and the health cut
 * that carries them from report to report (kept for the window, a resent line not renewed, a
 * reboot clearing what it fixes). Lines and numbers are shaped after real ones. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "health/health.h"
#include "health/health_cut.h"
#include "health/rules.h"

#define NOW 1700000000
#define GIB (INT64_C(1) << 30)

static const char lockup[] = "watchdog: BUG: soft lockup - CPU#12 stuck for 22s! [python3:4242]";

struct alarm_row {
	const char *what;
	const char *kind, *message;
	int64_t age_s;          /* logged this long ago */
	int this_boot;
	int64_t prior_age_s;    /* the same kind in an earlier boot this long ago (0: none) */
	const char *reason;     /* the reason expected, whole (NULL: none) */
	enum health_level level;
	enum health_repair repair;
};

static const struct alarm_row alarm_rows[] = {
	{ "soft lockup 10 min ago", "soft_lockup", lockup, 600, 1, 0,
	  "kernel: soft lockup: watchdog: BUG: soft lockup - CPU#12 stuck for 22s! [python3:4242] "
	  "[reboot may clear it]", HEALTH_CRITICAL, HEALTH_REPAIR_REBOOT },
	{ "soft lockup 2 h ago: past the window", "soft_lockup", lockup, 7200, 1, 0, NULL, 0, 0 },
	{ "soft lockup of the boot before: the reboot fixed it", "soft_lockup", lockup, 600, 0, 0,
	  NULL, 0, 0 },
	{ "soft lockup back after a reboot", "soft_lockup", lockup, 60, 1, 1800,
	  "kernel: soft lockup again after a reboot: watchdog: BUG: soft lockup - CPU#12 stuck for "
	  "22s! [python3:4242] [needs hardware inspection]", HEALTH_CRITICAL,
	  HEALTH_REPAIR_INSPECTION },
	{ "soft lockup, one in an earlier boot days ago", "soft_lockup", lockup, 60, 1, 3 * 86400,
	  "kernel: soft lockup: watchdog: BUG: soft lockup - CPU#12 stuck for 22s! [python3:4242] "
	  "[reboot may clear it]", HEALTH_CRITICAL, HEALTH_REPAIR_REBOOT },
	{ "hard lockup", "hard_lockup", "NMI watchdog: Watchdog detected hard LOCKUP on cpu 3", 30, 1,
	  0, "kernel: hard lockup: NMI watchdog: Watchdog detected hard LOCKUP on cpu 3 [reboot may "
	  "clear it]", HEALTH_CRITICAL, HEALTH_REPAIR_REBOOT },
	{ "hung task", "hung_task", "INFO: task jbd2/nvme0n1p2-8:512 blocked for more than 122 seconds.",
	  300, 1, 0, "kernel: hung task: INFO: task jbd2/nvme0n1p2-8:512 blocked for more than 122 "
	  "seconds. [reboot may clear it]", HEALTH_WARNING, HEALTH_REPAIR_REBOOT },
	{ "RCU stall", "rcu_stall", "rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:", 300, 1, 0,
	  "kernel: RCU stall: rcu: INFO: rcu_preempt detected stalls on CPUs/tasks: [reboot may "
	  "clear it]", HEALTH_CRITICAL, HEALTH_REPAIR_REBOOT },
	{ "machine check", "machine_check", "mce: [Hardware Error]: Machine check events logged", 900,
	  1, 0, "kernel: machine check: mce: [Hardware Error]: Machine check events logged [needs "
	  "hardware inspection]", HEALTH_CRITICAL, HEALTH_REPAIR_INSPECTION },
	{ "machine check of the boot before: a reboot does not clear it", "machine_check",
	  "mce: [Hardware Error]: Machine check events logged", 900, 0, 0,
	  "kernel: machine check: mce: [Hardware Error]: Machine check events logged [needs "
	  "hardware inspection]", HEALTH_CRITICAL, HEALTH_REPAIR_INSPECTION },
	{ "OOM kill: the job's memory", "oom_kill",
	  "Out of memory: Killed process 4242 (python3) total-vm:1094561792kB, anon-rss:1056734208kB",
	  120, 1, 0, "kernel: OOM kill: Out of memory: Killed process 4242 (python3) "
	  "total-vm:1094561792kB, anon-rss:1056734208kB", HEALTH_WARNING, HEALTH_REPAIR_NONE },
	{ "panic", "panic", "Kernel panic - not syncing: Fatal exception", 60, 1, 0,
	  "kernel: panic: Kernel panic - not syncing: Fatal exception [reboot may clear it]",
	  HEALTH_CRITICAL, HEALTH_REPAIR_REBOOT },
	{ "filesystem read-only", "fs_readonly",
	  "EXT4-fs (nvme0n1p2): Remounting filesystem read-only", 60, 1, 0,
	  "kernel: filesystem read-only: EXT4-fs (nvme0n1p2): Remounting filesystem read-only "
	  "[needs hardware inspection]", HEALTH_CRITICAL, HEALTH_REPAIR_INSPECTION },
	{ "a kind from a newer agent", "foo_stall", "foo: stalled", 60, 1, 0,
	  "kernel: foo_stall: foo: stalled", HEALTH_WARNING, HEALTH_REPAIR_NONE },
};

static void test_alarm_rows(void **state)
{
	struct health_config cfg;

	(void)state;
	health_config_defaults(&cfg);
	for (size_t i = 0; i < sizeof(alarm_rows) / sizeof(alarm_rows[0]); i++) {
		const struct alarm_row *w = &alarm_rows[i];
		struct health_result res = { 0 };
		struct health_facts f;

		health_facts_init(&f, NOW);
		f.host.alarms[0] = (struct health_kernel_alarm){ w->kind, w->message, NOW - w->age_s,
								 w->this_boot,
								 w->prior_age_s ? NOW - w->prior_age_s : 0 };
		f.host.nalarms = 1;
		health_rules_host(&res, &f, &cfg);
		if (!w->reason) {
			if (res.nreasons)
				fail_msg("%s: unexpected '%s'", w->what, res.reasons[0]);
			continue;
		}
		if (res.nreasons != 1 || strcmp(res.reasons[0], w->reason) != 0)
			fail_msg("%s: got '%s', expected '%s'", w->what,
				 res.nreasons ? res.reasons[0] : "(none)", w->reason);
		if (res.level != w->level || res.repairs[0] != w->repair)
			fail_msg("%s: level %d repair %d, expected %d %d", w->what, res.level,
				 res.repairs[0], w->level, w->repair);
		assert_string_equal(health_reason_kind(res.reasons[0]), "kernel");
	}
}

struct disk_row {
	const char *what;
	const char *path, *mount;
	int64_t size, avail;
	double used, inodes_used;
	int64_t inodes_avail;
	double warn;            /* disk_warn_pct (0: the default) */
	const char *reason;     /* the reason expected, whole (NULL: none) */
	enum health_level level;
};

static const struct disk_row disk_rows[] = {
	{ "root 96.6% used: a warning", "/", "/", 64 * GIB, 2254856192, 96.6, 6.3, 3932160, 0,
	  "disk: / 97% used (2.1 GiB free of 64 GiB)", HEALTH_WARNING },
	{ "root 98.5% used: full", "/", "/", 64 * GIB, 1006632960, 98.5, 6.3, 3932160, 0,
	  "disk: / 99% used (960 MiB free of 64 GiB)", HEALTH_CRITICAL },
	{ "nothing left to users (the reserve aside): full", "/var/lib/kiln-agent/spool",
	  "/var/lib", 931 * GIB, 0, 95.0, 10, 50000000, 0,
	  "disk: /var/lib 95% used (0 B free of 931 GiB)", HEALTH_CRITICAL },
	{ "85% used: fine", "/", "/", 64 * GIB, 10 * GIB, 85.0, 6.3, 3932160, 0, NULL, 0 },
	{ "85% used, disk_warn_pct 80: a warning", "/tmp", "/tmp", 62 * (GIB / 1024), 9 * (GIB / 1024),
	  85.0, 1, 1999000, 80, "disk: /tmp 85% used (9 MiB free of 62 MiB)", HEALTH_WARNING },
	{ "inodes 99.2% used: full", "/data", "/data", 7 * (GIB * 1024), (GIB * 1024) * 3 / 2, 78.6,
	  99.2, 1200, 0, "disk: /data inodes 99% used (1200 free)", HEALTH_CRITICAL },
	{ "inodes 93%: a warning", "/data", "/data", 7 * (GIB * 1024), (GIB * 1024) * 3 / 2, 78.6,
	  93.0, 4500000, 0, "disk: /data inodes 93% used (4500000 free)", HEALTH_WARNING },
	{ "btrfs counts no inodes", "/scratch", "/scratch", 3 * (GIB * 1024), 1536 * GIB, 50.0, NAN,
	  -1, 0, NULL, 0 },
	{ "no mount known: the path is named", "/scratch", NULL, 100 * GIB, 5 * GIB, 94.7, NAN, -1,
	  0, "disk: /scratch 95% used (5 GiB free of 100 GiB)", HEALTH_WARNING },
};

static void test_disk_rows(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(disk_rows) / sizeof(disk_rows[0]); i++) {
		const struct disk_row *w = &disk_rows[i];
		struct health_result res = { 0 };
		struct health_config cfg;
		struct health_facts f;

		health_config_defaults(&cfg);
		if (w->warn > 0)
			cfg.disk_warn_pct = w->warn;
		health_facts_init(&f, NOW);
		f.host.fs[0] = (struct health_filesystem){ w->path, w->mount, w->size, w->avail,
							   w->used, w->inodes_used, w->inodes_avail };
		f.host.nfs = 1;
		health_rules_host(&res, &f, &cfg);
		if (!w->reason) {
			if (res.nreasons)
				fail_msg("%s: unexpected '%s'", w->what, res.reasons[0]);
			continue;
		}
		if (res.nreasons != 1 || strcmp(res.reasons[0], w->reason) != 0)
			fail_msg("%s: got '%s', expected '%s'", w->what,
				 res.nreasons ? res.reasons[0] : "(none)", w->reason);
		if (res.level != w->level || res.repairs[0] != HEALTH_REPAIR_NONE)
			fail_msg("%s: level %d repair %d", w->what, res.level, res.repairs[0]);
		assert_string_equal(health_reason_kind(res.reasons[0]), "disk");
	}
}

/* Many filesystems full: four named, the rest summed up. */
static void test_disk_many(void **state)
{
	struct health_result res = { 0 };
	struct health_config cfg;
	struct health_facts f;

	(void)state;
	health_config_defaults(&cfg);
	health_facts_init(&f, NOW);
	for (size_t i = 0; i < 6; i++)
		f.host.fs[f.host.nfs++] = (struct health_filesystem){ "/", "/", 64 * GIB, 0, 100, 5,
								      1000, };
	f.host.fs[5].avail_bytes = GIB;
	f.host.fs[5].used_pct = 92;
	health_rules_host(&res, &f, &cfg);
	assert_int_equal(res.nreasons, 5);
	assert_string_equal(res.reasons[4], "disk: 2 more filesystems filling up");
	assert_int_equal(res.level, HEALTH_CRITICAL);
}

/* ---- the cut ------------------------------------------------------------------------- */

/* A report of boot BOOT, uptime 864123 s, with the alarms and filesystems given (JSON). */
static json_t *report(const char *boot, const char *alarms, const char *fs)
{
	char text[4096];
	json_t *r;

	snprintf(text, sizeof(text),
		 "{\"host\":{\"boot_id\":\"%s\",\"uptime_s\":864123},\"kernel_events\":%s,"
		 "\"filesystems\":%s}", boot, alarms, fs);
	r = json_loads(text, 0, NULL);
	assert_non_null(r);
	return r;
}

/* The cut of r made against *cut (replaced), read back into f (parsed cut in *keep). */
static void step(char **cut, json_t *r, int64_t now, struct health_facts *f, json_t **keep)
{
	char *next = health_cut_make(r, *cut, now);

	assert_non_null(next);
	free(*cut);
	*cut = next;
	json_decref(r);
	json_decref(*keep);
	health_facts_init(f, now);
	health_cut_facts(f, *cut, keep);
}

static const char lockup_json[] =
	"[{\"kind\":\"soft_lockup\",\"message\":\"watchdog: BUG: soft lockup - CPU#12 stuck for "
	"22s! [python3:4242]\",\"seq\":5002,\"time_us\":864000000000}]";
static const char mce_json[] =
	"[{\"kind\":\"machine_check\",\"message\":\"mce: [Hardware Error]: Machine check events "
	"logged\",\"seq\":5101,\"time_us\":864100000000}]";
static const char fs_json[] =
	"[{\"path\":\"/\",\"mount\":\"/\",\"fstype\":\"ext4\",\"size_bytes\":68719476736,"
	"\"avail_bytes\":2254856192,\"used_pct\":96.6,\"inodes_used_pct\":6.3,"
	"\"inodes_avail\":3932160}]";

static int has_reason(const struct health_result *res, const char *prefix)
{
	for (size_t i = 0; i < res->nreasons; i++)
		if (strncmp(res->reasons[i], prefix, strlen(prefix)) == 0)
			return 1;
	return 0;
}

static void test_cut(void **state)
{
	struct health_config cfg;
	struct health_result res;
	struct health_facts f;
	json_t *keep = NULL;
	char *cut = NULL;

	(void)state;
	health_config_defaults(&cfg);
	/* a lockup logged 123 s before the report, a disk nearly full */
	step(&cut, report("boot-a", lockup_json, fs_json), NOW, &f, &keep);
	assert_int_equal(f.host.nalarms, 1);
	assert_string_equal(f.host.alarms[0].kind, "soft_lockup");
	assert_int_equal(f.host.alarms[0].at, NOW - 123);
	assert_int_equal(f.host.alarms[0].this_boot, 1);
	assert_int_equal(f.host.alarms[0].prior_boot_at, 0);
	assert_int_equal(f.host.nfs, 1);
	assert_string_equal(f.host.fs[0].mount, "/");
	assert_int_equal(f.host.fs[0].avail_bytes, 2254856192);
	memset(&res, 0, sizeof(res));
	health_rules_host(&res, &f, &cfg);
	assert_int_equal(res.nreasons, 2);
	assert_true(has_reason(&res, "kernel: soft lockup: watchdog: BUG"));
	assert_true(has_reason(&res, "disk: / 97% used (2.1 GiB free of 64 GiB)"));

	/* the same line again (an agent restarted, a report resent), the disk cleaned up */
	step(&cut, report("boot-a", lockup_json, "[]"), NOW + 600, &f, &keep);
	assert_int_equal(f.host.nalarms, 1);
	assert_int_equal(f.host.alarms[0].at, NOW - 123); /* its time, not the report's */
	assert_int_equal(f.host.nfs, 0);
	memset(&res, 0, sizeof(res));
	health_rules_host(&res, &f, &cfg);
	assert_int_equal(res.nreasons, 1);

	/* a machine check, then the node reboots: the lockup is gone, the machine check not */
	step(&cut, report("boot-a", mce_json, "[]"), NOW + 900, &f, &keep);
	assert_int_equal(f.host.nalarms, 2);
	step(&cut, report("boot-b", "[]", "[]"), NOW + 1200, &f, &keep);
	assert_int_equal(f.host.nalarms, 2);
	assert_int_equal(f.host.alarms[0].this_boot, 0);
	memset(&res, 0, sizeof(res));
	health_rules_host(&res, &f, &cfg);
	assert_int_equal(res.nreasons, 1);
	assert_true(has_reason(&res, "kernel: machine check: mce: [Hardware Error]"));
	assert_int_equal(res.repair, HEALTH_REPAIR_INSPECTION);

	/* the lockup comes back in the new boot (its own seq and time): needs inspection */
	step(&cut, report("boot-b",
			  "[{\"kind\":\"soft_lockup\",\"message\":\"watchdog: BUG: soft lockup - "
			  "CPU#3 stuck for 23s! [python3:977]\",\"seq\":812,\"time_us\":864100000000}]",
			  "[]"),
	     NOW + 1500, &f, &keep);
	memset(&res, 0, sizeof(res));
	health_rules_host(&res, &f, &cfg);
	assert_true(has_reason(&res, "kernel: soft lockup again after a reboot: watchdog: BUG: "
				     "soft lockup - CPU#3 stuck for 23s! [python3:977] [needs "
				     "hardware inspection]"));

	/* past the window nothing is said; past 30 days nothing is kept */
	step(&cut, report("boot-b", "[]", "[]"), NOW + 1500 + 3700, &f, &keep);
	memset(&res, 0, sizeof(res));
	health_rules_host(&res, &f, &cfg);
	assert_int_equal(res.nreasons, 0);
	assert_int_equal(f.host.nalarms, 2);
	step(&cut, report("boot-b", "[]", "[]"), NOW + 31 * 86400, &f, &keep);
	assert_int_equal(f.host.nalarms, 0);
	json_decref(keep);
	free(cut);
}

/* A report without the fields (an older agent) and rejected (nulled) numbers: nothing made
 * up. */
/* An agent that cannot read /dev/kmsg sees no Xid and no kernel alarm: said, until it can. */
static void test_kmsg_blind(void **state)
{
	struct health_config cfg;
	struct health_result res;
	struct health_facts f;
	json_t *keep = NULL, *r = report("boot-a", "[]", "[]");
	char *cut = NULL;

	(void)state;
	health_config_defaults(&cfg);
	json_object_set_new(r, "agent", json_pack("{s:s}", "kmsg_error",
						  "/dev/kmsg: Permission denied"));
	step(&cut, r, NOW, &f, &keep);
	memset(&res, 0, sizeof(res));
	health_rules_host(&res, &f, &cfg);
	assert_int_equal(res.nreasons, 1);
	assert_string_equal(res.reasons[0], "kernel: the agent cannot read the kernel log "
			    "(/dev/kmsg: Permission denied): Xids and kernel alarms go unseen");
	assert_int_equal(res.level, HEALTH_WARNING);
	step(&cut, report("boot-a", "[]", "[]"), NOW + 60, &f, &keep);
	memset(&res, 0, sizeof(res));
	health_rules_host(&res, &f, &cfg);
	assert_int_equal(res.nreasons, 0);
	json_decref(keep);
	free(cut);
}

static void test_cut_sparse(void **state)
{
	struct health_config cfg;
	struct health_result res = { 0 };
	struct health_facts f;
	json_t *keep = NULL;
	char *cut = NULL;

	(void)state;
	health_config_defaults(&cfg);
	step(&cut, json_loads("{\"host\":{}}", 0, NULL), NOW, &f, &keep);
	assert_int_equal(f.host.nalarms + f.host.nfs, 0);
	step(&cut, report("b", "[{\"kind\":\"oom_kill\",\"message\":\"Out of memory: Killed "
			       "process 4242 (python3)\"}]",
			  "[{\"path\":\"/data\",\"size_bytes\":null,\"used_pct\":null}]"),
	     NOW, &f, &keep);
	assert_int_equal(f.host.nalarms, 1);
	assert_int_equal(f.host.alarms[0].at, NOW); /* no time_us: when it was reported */
	assert_int_equal(f.host.nfs, 1);
	assert_int_equal(f.host.fs[0].size_bytes, -1);
	assert_true(isnan(f.host.fs[0].used_pct));
	health_rules_host(&res, &f, &cfg);
	assert_int_equal(res.nreasons, 1);
	assert_int_equal(res.level, HEALTH_WARNING);
	assert_int_equal(res.repair, HEALTH_REPAIR_NONE);
	json_decref(keep);
	free(cut);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_alarm_rows),
		cmocka_unit_test(test_disk_rows),
		cmocka_unit_test(test_disk_many),
		cmocka_unit_test(test_cut),
		cmocka_unit_test(test_cut_sparse),
		cmocka_unit_test(test_kmsg_blind),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
