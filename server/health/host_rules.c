/* SPDX-License-Identifier: Apache-2.0 */
/* The host rules: the kernel's alarms (soft lockup, hung task, RCU stall, machine check, OOM
 * kill) and filesystems filling up. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "health/rules.h"

/* How long the cut keeps an alarm: the longest kernel_window a config may set. */
#define KEEP_S (30 * 86400)
/* Filesystems given a reason of their own; the rest are summed up in one. */
#define FS_SHOWN_MAX 4

/* ---- the kinds --------------------------------------------------------------------------
 *
 * What each alarm of the agent's kernel_alarms.h means, after gpud's kernel-log component
 * and NHC: a CPU or the scheduler stalled (lockups, RCU stalls, a panic, an oops) leaves
 * the kernel unfit to run work until a reboot; a hung task is often storage or NFS slow to
 * answer (a warning, which a reboot may clear); a machine check is the CPU or memory
 * reporting a hardware error (inspection, and a reboot does not clear it); an OOM kill is
 * the job's memory (nothing on the node to mend); a filesystem gone read-only is the
 * filesystem or its disk failing.
 */
static const struct kernel_kind {
	const char *kind, *name;
	enum health_level level;
	enum health_repair repair;
} kinds[] = {
	{ "soft_lockup", "soft lockup", HEALTH_CRITICAL, HEALTH_REPAIR_REBOOT },
	{ "hard_lockup", "hard lockup", HEALTH_CRITICAL, HEALTH_REPAIR_REBOOT },
	{ "rcu_stall", "RCU stall", HEALTH_CRITICAL, HEALTH_REPAIR_REBOOT },
	{ "panic", "panic", HEALTH_CRITICAL, HEALTH_REPAIR_REBOOT },
	{ "oops", "oops", HEALTH_CRITICAL, HEALTH_REPAIR_REBOOT },
	{ "hung_task", "hung task", HEALTH_WARNING, HEALTH_REPAIR_REBOOT },
	{ "machine_check", "machine check", HEALTH_CRITICAL, HEALTH_REPAIR_INSPECTION },
	{ "fs_readonly", "filesystem read-only", HEALTH_CRITICAL, HEALTH_REPAIR_INSPECTION },
	{ "oom_kill", "OOM kill", HEALTH_WARNING, HEALTH_REPAIR_NONE },
};

/* An alarm of a kind this kilnd does not know (a newer agent's): a warning. */
static const struct kernel_kind unknown_kind = { NULL, NULL, HEALTH_WARNING, HEALTH_REPAIR_NONE };

static const struct kernel_kind *kind_of(const char *kind)
{
	for (size_t i = 0; kind && i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (strcmp(kinds[i].kind, kind) == 0)
			return &kinds[i];
	return &unknown_kind;
}

const char *health_kernel_alarm_name(const char *kind, enum health_level *level)
{
	const struct kernel_kind *k = kind_of(kind);

	if (level)
		*level = k->level;
	return k->name ? k->name : kind;
}

/* ---- the cut ---------------------------------------------------------------------------
 *
 * {"boot":"<boot id>",
 *  "kernel":[{"kind":"soft_lockup","msg":"watchdog: BUG: ...","at":T,"boot":"<boot id>",
 *             "seq":N,"prior_at":T0}],
 *  "fs":[{"path":"/","mount":"/","size":N,"avail":N,"used":96.6,"inodes_used":6.3,
 *         "inodes_avail":N}]}
 *
 * "kernel" keeps the latest alarm of each kind, from this report and the earlier ones, for
 * KEEP_S; "at" is when the kernel logged it (the report's uptime less the line's time since
 * boot, so that a line read again by a restarted agent keeps its age). A line of the same
 * boot with a sequence number no later than the kept one's is one already seen. An alarm of a
 * new boot replacing one of an earlier boot keeps the earlier one's time as "prior_at".
 * "fs" is the latest report's alone.
 */

static int64_t get_int(json_t *o, const char *key, int64_t dflt)
{
	json_t *v = json_object_get(o, key);

	return json_is_integer(v) ? (int64_t)json_integer_value(v) : dflt;
}

static double get_num(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return json_is_number(v) ? json_number_value(v) : NAN;
}

static const char *get_str(json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* The previous cut's alarms still kept at now, copied. */
static json_t *kept_alarms(json_t *prev, int64_t now)
{
	json_t *out = json_array(), *a;
	size_t i;

	if (!out)
		return NULL;
	json_array_foreach(json_object_get(prev, "kernel"), i, a)
		if (get_str(a, "kind") && get_str(a, "msg") && now - get_int(a, "at", 0) <= KEEP_S)
			json_array_append_new(out, json_deep_copy(a));
	return out;
}

/* When the kernel logged a line: now less its age (the report's uptime less the line's
 * time since boot), or now when the report does not say. */
static int64_t logged_at(json_t *report, json_t *alarm, int64_t now)
{
	int64_t up = get_int(json_object_get(report, "host"), "uptime_s", -1);
	int64_t us = get_int(alarm, "time_us", -1);

	if (up < 0 || us < 0 || us / 1000000 > up)
		return now;
	return now - (up - us / 1000000);
}

/* Takes one alarm of the report into the kept ones. */
static void alarm_take(json_t *kept, json_t *report, json_t *alarm, const char *boot, int64_t now)
{
	const char *kind = get_str(alarm, "kind"), *msg = get_str(alarm, "message");
	int64_t seq = get_int(alarm, "seq", -1), at = logged_at(report, alarm, now), prior = 0;
	json_t *a, *entry;
	size_t i;

	if (!kind || !msg)
		return;
	json_array_foreach(kept, i, a) {
		if (strcmp(get_str(a, "kind"), kind) != 0)
			continue;
		if (strcmp(get_str(a, "boot") ? get_str(a, "boot") : "", boot) == 0) {
			if (seq >= 0 && seq <= get_int(a, "seq", -1))
				return; /* seen: a report sent again, or kmsg read again */
			prior = get_int(a, "prior_at", 0);
		} else {
			prior = get_int(a, "at", 0);
		}
		json_array_remove(kept, i);
		break;
	}
	entry = json_pack("{s:s,s:s,s:I,s:s,s:I,s:I}", "kind", kind, "msg", msg, "at",
			  (json_int_t)at, "boot", boot, "seq", (json_int_t)seq, "prior_at",
			  (json_int_t)prior);
	if (entry && json_array_size(kept) < HEALTH_KERNEL_ALARMS_MAX)
		json_array_append_new(kept, entry);
	else
		json_decref(entry);
}

static json_t *fs_cut(json_t *report)
{
	json_t *out = json_array(), *f, *o;
	size_t i;

	if (!out)
		return NULL;
	json_array_foreach(json_object_get(report, "filesystems"), i, f) {
		if (json_array_size(out) >= HEALTH_FILESYSTEMS_MAX || !get_str(f, "path"))
			break;
		o = json_pack("{s:s,s:I,s:I}", "path", get_str(f, "path"), "size",
			      (json_int_t)get_int(f, "size_bytes", -1), "avail",
			      (json_int_t)get_int(f, "avail_bytes", -1));
		if (!o)
			continue;
		if (get_str(f, "mount"))
			json_object_set_new(o, "mount", json_string(get_str(f, "mount")));
		if (!isnan(get_num(f, "used_pct")))
			json_object_set_new(o, "used", json_real(get_num(f, "used_pct")));
		if (!isnan(get_num(f, "inodes_used_pct")))
			json_object_set_new(o, "inodes_used", json_real(get_num(f, "inodes_used_pct")));
		if (get_int(f, "inodes_avail", -1) >= 0)
			json_object_set_new(o, "inodes_avail",
					    json_integer(get_int(f, "inodes_avail", -1)));
		json_array_append_new(out, o);
	}
	return out;
}

json_t *health_host_cut(json_t *report, json_t *prev, int64_t now)
{
	const char *boot = get_str(json_object_get(report, "host"), "boot_id");
	json_t *cut, *kept, *fs, *a;
	size_t i;

	if (!boot)
		boot = "";
	kept = kept_alarms(prev, now);
	fs = fs_cut(report);
	cut = json_object();
	if (!kept || !fs || !cut) {
		json_decref(kept);
		json_decref(fs);
		json_decref(cut);
		return NULL;
	}
	json_array_foreach(json_object_get(report, "kernel_events"), i, a)
		alarm_take(kept, report, a, boot, now);
	json_object_set_new(cut, "boot", json_string(boot));
	if ((a = json_object_get(json_object_get(report, "agent"), "kmsg_error")) &&
	    json_is_string(a)) { /* the agent's words, kept short */
		char why[160];
		size_t n;

		snprintf(why, sizeof(why), "%s", json_string_value(a));
		n = strlen(why);
		if (n == sizeof(why) - 1) { /* cut: not inside a UTF-8 sequence */
			while (n > 0 && ((unsigned char)why[n - 1] & 0xC0) == 0x80)
				n--;
			if (n > 0 && (unsigned char)why[n - 1] >= 0xC0)
				n--;
			why[n] = '\0';
		}
		json_object_set_new(cut, "kmsg_error", json_string(why));
	}
	json_object_set_new(cut, "kernel", kept);
	json_object_set_new(cut, "fs", fs);
	return cut;
}

void health_host_cut_facts(struct health_facts *f, json_t *cut)
{
	struct health_host_facts *h = &f->host;
	const char *boot = get_str(cut, "boot");
	json_t *a;
	size_t i;

	json_array_foreach(json_object_get(cut, "kernel"), i, a) {
		struct health_kernel_alarm *k;

		if (h->nalarms >= HEALTH_KERNEL_ALARMS_MAX || !get_str(a, "kind") || !get_str(a, "msg"))
			continue;
		k = &h->alarms[h->nalarms++];
		k->kind = get_str(a, "kind");
		k->message = get_str(a, "msg");
		k->at = get_int(a, "at", 0);
		k->this_boot = strcmp(get_str(a, "boot") ? get_str(a, "boot") : "", boot ? boot : "") == 0;
		k->prior_boot_at = get_int(a, "prior_at", 0);
	}
	h->kmsg_error = get_str(cut, "kmsg_error");
	json_array_foreach(json_object_get(cut, "fs"), i, a) {
		struct health_filesystem *s;

		if (h->nfs >= HEALTH_FILESYSTEMS_MAX || !get_str(a, "path"))
			continue;
		s = &h->fs[h->nfs++];
		s->path = get_str(a, "path");
		s->mount = get_str(a, "mount");
		s->size_bytes = get_int(a, "size", -1);
		s->avail_bytes = get_int(a, "avail", -1);
		s->used_pct = get_num(a, "used");
		s->inodes_used_pct = get_num(a, "inodes_used");
		s->inodes_avail = get_int(a, "inodes_avail", -1);
	}
}

/* ---- the rules ------------------------------------------------------------------------- */

/*
 * Each kind's latest alarm logged within kernel_window_s is a reason quoting the line. An
 * alarm a reboot may clear counts only while the node runs the boot it was logged in (the
 * reboot that followed a lockup fixed it, and the node is back); one that needs inspection
 * (a machine check) stays across a reboot. A reboot-class alarm that came back in a new boot
 * within the window of the last one escalates to inspection.
 */
static void rule_kernel(struct health_result *r, const struct health_facts *f,
			const struct health_config *cfg)
{
	for (size_t i = 0; i < f->host.nalarms; i++) {
		const struct health_kernel_alarm *a = &f->host.alarms[i];
		const struct kernel_kind *k = kind_of(a->kind);
		const char *name = k->name ? k->name : a->kind;
		enum health_repair repair = k->repair;

		if (f->now - a->at > cfg->kernel_window_s)
			continue;
		if (!a->this_boot && repair != HEALTH_REPAIR_INSPECTION)
			continue;
		if (a->this_boot && repair == HEALTH_REPAIR_REBOOT && a->prior_boot_at > 0 &&
		    a->at - a->prior_boot_at <= cfg->kernel_window_s) {
			health_add(r, HEALTH_CRITICAL, HEALTH_REPAIR_INSPECTION,
				   "kernel: %s again after a reboot: %s", name, a->message);
			continue;
		}
		health_add(r, k->level, repair, "kernel: %s: %s", name, a->message);
	}
}

/* "2.1 GiB", "64 GiB", "512 MiB", "1.5 TiB". */
static void bytes_text(char *out, size_t len, int64_t bytes)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	double v = (double)bytes;
	size_t u = 0;

	while (v >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
		v /= 1024;
		u++;
	}
	if (v >= 10 || fabs(v - round(v)) < 0.05)
		snprintf(out, len, "%.0f %s", v, units[u]);
	else
		snprintf(out, len, "%.1f %s", v, units[u]);
}

/* A share's level against the thresholds (full: at or above disk_full_pct, or none left). */
static enum health_level fill_level(double pct, int none_left, const struct health_config *cfg)
{
	if (none_left || (!isnan(pct) && pct >= cfg->disk_full_pct))
		return HEALTH_CRITICAL;
	if (!isnan(pct) && pct > cfg->disk_warn_pct)
		return HEALTH_WARNING;
	return HEALTH_OK;
}

/*
 * Each filesystem whose space or inodes are used above disk_warn_pct is a warning, at or
 * above disk_full_pct (or with none left) critical, naming its mount: "disk: / 97% used
 * (2.1 GiB free of 64 GiB)", "disk: /data inodes 99% used (1200 free)". Cleaning up fixes
 * it: repair none.
 */
static void rule_disk(struct health_result *r, const struct health_facts *f,
		      const struct health_config *cfg)
{
	enum health_level rest = HEALTH_OK;
	size_t shown = 0, more = 0;

	for (size_t i = 0; i < f->host.nfs; i++) {
		const struct health_filesystem *s = &f->host.fs[i];
		const char *name = s->mount && s->mount[0] ? s->mount : s->path;
		enum health_level space, inodes;
		char avail[32], size[32];

		space = fill_level(s->used_pct, s->size_bytes > 0 && s->avail_bytes == 0, cfg);
		inodes = fill_level(s->inodes_used_pct, s->inodes_avail == 0, cfg);
		if (space == HEALTH_OK && inodes == HEALTH_OK)
			continue;
		if (shown >= FS_SHOWN_MAX) {
			more++;
			rest = space > rest ? space : rest;
			rest = inodes > rest ? inodes : rest;
			continue;
		}
		shown++;
		if (space != HEALTH_OK) {
			bytes_text(avail, sizeof(avail), s->avail_bytes > 0 ? s->avail_bytes : 0);
			bytes_text(size, sizeof(size), s->size_bytes > 0 ? s->size_bytes : 0);
			health_add(r, space, HEALTH_REPAIR_NONE, "disk: %s %.0f%% used (%s free of %s)",
				   name, isnan(s->used_pct) ? 100.0 : floor(s->used_pct + 0.5), avail,
				   size);
		}
		if (inodes != HEALTH_OK)
			health_add(r, inodes, HEALTH_REPAIR_NONE, "disk: %s inodes %.0f%% used (%lld free)",
				   name, isnan(s->inodes_used_pct) ? 100.0 : floor(s->inodes_used_pct + 0.5),
				   (long long)(s->inodes_avail > 0 ? s->inodes_avail : 0));
	}
	if (more)
		health_add(r, rest, HEALTH_REPAIR_NONE, "disk: %zu more filesystems filling up", more);
}

/* An agent that cannot read the kernel log sees no Xid and no kernel alarm: the node may look
 * healthy while it is not, which the operator must know (the agent's permissions, a kernel
 * without /dev/kmsg). */
static void rule_kmsg_blind(struct health_result *r, const struct health_facts *f)
{
	if (f->host.kmsg_error && f->host.kmsg_error[0])
		health_add(r, HEALTH_WARNING, HEALTH_REPAIR_NONE,
			   "kernel: the agent cannot read the kernel log (%.120s): Xids and kernel "
			   "alarms go unseen", f->host.kmsg_error);
}

void health_rules_host(struct health_result *r, const struct health_facts *f,
		       const struct health_config *cfg)
{
	rule_kernel(r, f, cfg);
	rule_kmsg_blind(r, f);
	rule_disk(r, f, cfg);
}
