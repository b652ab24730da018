/* SPDX-License-Identifier: Apache-2.0 */
/* Node health rules: every rule reads only struct health_facts, so each is a unit test row. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "health/health.h"
#include "health/rules.h"

void health_config_defaults(struct health_config *cfg)
{
	cfg->agent_interval_s = 30;
	cfg->hung_intervals = 3;
	cfg->power_max_age_s = 90;
	cfg->xid_window_s = 3600;
	cfg->ecc_window_s = 3600;
	cfg->gpu_temp_max_c = 90;
	cfg->inlet_temp_max_c = 40;
	cfg->starved_s = 600;
	cfg->starved_util_max_pct = 10;
	cfg->starved_iowait_min_pct = 20;
	cfg->fleet_silence_pct = 50;
	cfg->fleet_silence_min = 4;
	cfg->bmc_log_window_s = 3600;
	/* An 8-GPU server's firmware trains memory, PCIe and every GPU: 5 min is common, some
	 * take 8; the BMC's own measure of the last boot lengthens it. */
	cfg->boot_time_s = 600;
	cfg->fault_return_window_s = 86400;
	cfg->kernel_window_s = 3600;
	cfg->disk_warn_pct = 90;
	cfg->disk_full_pct = 98;
	cfg->throttle_busy_min_pct = 50;
	cfg->throttle_reports = 2;
	cfg->link_error_window_s = 3600;
	cfg->bmc_clock_skew_max_s = 300;
}

void health_facts_init(struct health_facts *f, int64_t now)
{
	memset(f, 0, sizeof(*f));
	f->now = now;
	f->gpus_seen = -1;
	f->gpus_expected = -1;
	f->ecc_first = -1;
	f->ecc_last = -1;
	f->hottest_gpu_c = NAN;
	f->inlet_c = NAN;
	f->bmc_reachable = 1;
	f->psu_healthy = -1;
	f->psu_needed = -1;
}

const char *health_level_name(enum health_level l)
{
	switch (l) {
	case HEALTH_WARNING: return "warning";
	case HEALTH_CRITICAL: return "critical";
	default: return "ok";
	}
}

int health_xid_critical(int xid)
{
	static const int critical[] = { 48, 62, 64, 74, 79, 94, 95, 119, 120 };

	for (size_t i = 0; i < sizeof(critical) / sizeof(critical[0]); i++)
		if (critical[i] == xid)
			return 1;
	return 0;
}

int health_starved_sample(double util_avg_pct, int memory_held, double iowait_pct,
			  const struct health_config *cfg)
{
	if (isnan(util_avg_pct) || isnan(iowait_pct) || !memory_held)
		return 0;
	return util_avg_pct <= cfg->starved_util_max_pct &&
	       iowait_pct >= cfg->starved_iowait_min_pct;
}

/* "12m", "3h", "45s": a short age for reasons. */
static void age_text(char *out, size_t len, int64_t s)
{
	if (s < 0)
		s = 0;
	if (s < 120)
		snprintf(out, len, "%llds", (long long)s);
	else if (s < 7200)
		snprintf(out, len, "%lldm", (long long)(s / 60));
	else
		snprintf(out, len, "%lldh", (long long)(s / 3600));
}

const char *health_repair_mark(enum health_repair c)
{
	switch (c) {
	case HEALTH_REPAIR_REBOOT: return " [reboot may clear it]";
	case HEALTH_REPAIR_INSPECTION: return " [needs hardware inspection]";
	default: return "";
	}
}

const char *health_repair_name(enum health_repair c)
{
	switch (c) {
	case HEALTH_REPAIR_REBOOT: return "reboot";
	case HEALTH_REPAIR_INSPECTION: return "inspection";
	default: return "none";
	}
}

enum health_repair health_reason_repair(const char *reason)
{
	size_t len = reason ? strlen(reason) : 0;

	for (int c = HEALTH_REPAIR_REBOOT; c <= HEALTH_REPAIR_INSPECTION; c++) {
		const char *m = health_repair_mark((enum health_repair)c);
		size_t mlen = strlen(m);

		if (len >= mlen && strcmp(reason + len - mlen, m) == 0)
			return (enum health_repair)c;
	}
	return HEALTH_REPAIR_NONE;
}

void health_add(struct health_result *r, enum health_level level, enum health_repair repair,
		const char *fmt, ...)
{
	const char *mark = health_repair_mark(repair);
	size_t room = HEALTH_REASON_LEN - strlen(mark);
	char *out;
	va_list ap;

	if (level > r->level)
		r->level = level;
	if (repair > r->repair)
		r->repair = repair;
	if (r->nreasons >= HEALTH_REASONS_MAX)
		return;
	out = r->reasons[r->nreasons];
	r->repairs[r->nreasons++] = repair;
	/* the text cut where it must be, so that the mark always fits */
	va_start(ap, fmt);
	vsnprintf(out, room, fmt, ap);
	va_end(ap);
	strcat(out, mark);
}

static int64_t interval_of(const struct health_facts *f, const struct health_config *cfg)
{
	return f->agent_interval_s > 0 ? f->agent_interval_s : cfg->agent_interval_s;
}

/* How long the node's boot may take: the configured time, or 5/4 of what the BMC says the
 * last boot took when that is longer. */
static int64_t boot_window(const struct health_facts *f, const struct health_config *cfg)
{
	int64_t w = cfg->boot_time_s, last = f->boot_last_s + f->boot_last_s / 4;

	return last > w ? last : w;
}

/* A boot began and the agent has not reported since: the node is on its way up. */
static int boot_pending(const struct health_facts *f)
{
	return f->power == 1 && f->boot_started > 0 && f->agent_last_seen < f->boot_started;
}

/* Silence counts from the later of the last report, the last moment kilnd itself could not
 * receive (its start, an ingest stall, a full listener), a power-on (a node just powered on
 * gets its intervals too) and the moment a boot kiln saw begin should have ended. */
static int64_t silence_from_cfg(const struct health_facts *f, const struct health_config *cfg)
{
	int64_t from = f->agent_last_seen;

	if (f->receive_gap > from)
		from = f->receive_gap;
	if (f->power == 1 && f->power_on_since > from)
		from = f->power_on_since;
	if (cfg && boot_pending(f) && f->boot_started + boot_window(f, cfg) > from)
		from = f->boot_started + boot_window(f, cfg);
	return from;
}

static int64_t silence_from(const struct health_facts *f)
{
	return silence_from_cfg(f, NULL);
}

/* The agent has been silent for more than hung_intervals. */
static int agent_silent_long(const struct health_facts *f, const struct health_config *cfg)
{
	if (f->agent_last_seen <= 0)
		return 0;
	return f->now - silence_from_cfg(f, cfg) > interval_of(f, cfg) * cfg->hung_intervals;
}

/* Something of the node's agent seen at t (0: never), within hung_intervals report
 * intervals of now: a refusal that recent explains a silence. */
static int agent_window(const struct health_facts *f, const struct health_config *cfg, int64_t t)
{
	int64_t interval = f->agent_interval_s > 0 ? f->agent_interval_s : cfg->agent_interval_s;

	return t > 0 && f->now - t <= interval * cfg->hung_intervals;
}

/* A refusal pending. While no report was stored since it began (in the same second counts
 * as before), the refused host may be the node's own (a BMC that states other values, a
 * loaded kilnd that delays its retries): its silence says nothing of the node, however long
 * ago it was last refused. Once the node's own host reported after it began, the refused
 * one is another host on its token: the refusal counts while it goes on (hung_intervals
 * agent intervals). */
static int identity_refused(const struct health_facts *f, const struct health_config *cfg)
{
	return f->identity_field && (f->agent_last_seen <= f->identity_since ||
				     agent_window(f, cfg, f->identity_last));
}

static int identity_elsewhere(const struct health_facts *f, const struct health_config *cfg)
{
	return f->identity_elsewhere && agent_window(f, cfg, f->identity_elsewhere_last);
}

/* Reports arrive but are refused whole: refused since the last one stored, lately. */
static int reports_refused(const struct health_facts *f, const struct health_config *cfg)
{
	return f->refused_reason && f->refused_last >= f->agent_last_seen &&
	       agent_window(f, cfg, f->refused_last);
}

/* A power reading young enough to say the node is on now. A busy BMC answered without a
 * power state: the last one it gave says nothing of now either. */
static int power_fresh(const struct health_facts *f, const struct health_config *cfg)
{
	if (f->bmc_busy)
		return 0;
	return f->power_time > 0 && f->now - f->power_time <= cfg->power_max_age_s;
}

/* Just after a fleet-wide silence: a node silent since before its end gets two intervals
 * more to report. */
static int fleet_grace(const struct health_facts *f, const struct health_config *cfg)
{
	return f->fleet_silence_ended > 0 && f->agent_last_seen < f->fleet_silence_ended &&
	       f->now - f->fleet_silence_ended <= 2 * interval_of(f, cfg);
}

int health_is_hung(const struct health_facts *f, const struct health_config *cfg)
{
	if (f->power != 1 || f->maintenance || f->reinstalling)
		return 0;
	/* Reports arrive but are refused, or this node's agent speaks with another node's
	 * token: the silence is no hang, and a cycle would hit a working machine. */
	if (identity_refused(f, cfg) || identity_elsewhere(f, cfg) || reports_refused(f, cfg))
		return 0;
	/* "on" read before the BMC went quiet says nothing now (a switch or PDU that took the
	 * BMC and the agent away together is not a hung node to cycle) */
	if (!power_fresh(f, cfg))
		return 0;
	/* many agents silent together: the network's or kilnd's trouble, not this node's */
	if (f->fleet_silence || fleet_grace(f, cfg))
		return 0;
	return agent_silent_long(f, cfg);
}

int health_fleet_part(const struct health_facts *f, const struct health_config *cfg)
{
	int64_t interval = interval_of(f, cfg), silent_for;
	/* Agents stopped together reported last within one interval of each other: when the
	 * first passes hung_intervals, every other one is past hung_intervals - 1, and half an
	 * interval more covers a report's own delay. */
	double overdue = cfg->hung_intervals - 1.5 > 1 ? cfg->hung_intervals - 1.5 : 1;

	if (f->agent_last_seen <= 0 || f->power == 2 || f->maintenance || f->reinstalling)
		return 0;
	silent_for = f->now - silence_from(f);
	if ((double)silent_for <= (double)interval * overdue)
		return 1;
	/* Silent since well before the others: a node of its own, not part of this silence. */
	if (silent_for > interval * (cfg->hung_intervals + 2))
		return 0;
	return 2;
}

enum health_fleet_change health_fleet_silence_step(struct health_fleet_silence *g,
						   size_t reporting, size_t silent,
						   size_t returned, int64_t now,
						   const struct health_config *cfg)
{
	size_t agents = reporting + silent;

	if (g->active) {
		if (returned * 2 < g->silent)
			return HEALTH_FLEET_SAME;
		g->active = 0;
		g->ended_at = now;
		return HEALTH_FLEET_ENDED;
	}
	if (silent == 0 || silent < (size_t)cfg->fleet_silence_min ||
	    (double)silent * 100 < cfg->fleet_silence_pct * (double)agents)
		return HEALTH_FLEET_SAME;
	g->active = 1;
	g->since = now;
	g->silent = silent;
	g->agents = agents;
	return HEALTH_FLEET_BEGAN;
}

/* Whether a console line shows the kernel in trouble. */
static int console_alarm(const char *line, size_t len)
{
	static const char *const words[] = { "Kernel panic", "BUG:", "Oops", "soft lockup",
					     "hard LOCKUP", "general protection fault",
					     "blocked for more than", "Out of memory",
					     "MCE", "Machine check" };

	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		size_t w = strlen(words[i]);

		for (size_t k = 0; k + w <= len; k++)
			if (memcmp(line + k, words[i], w) == 0)
				return i == 0 ? 2 : 1; /* a panic line above all others */
	}
	return 0;
}

/* Copies line without escape sequences, control bytes or a leading "[  12.345678] ". */
static void console_copy(char *out, size_t outlen, const char *line, size_t len)
{
	size_t i = 0, o = 0;

	while (i < len && line[i] == ' ')
		i++;
	if (i < len && line[i] == '[') {
		size_t j = i + 1;

		while (j < len && (line[j] == ' ' || line[j] == '.' ||
				   (line[j] >= '0' && line[j] <= '9')))
			j++;
		if (j < len && line[j] == ']')
			i = j + 1;
	}
	while (i < len && line[i] == ' ')
		i++;
	for (; i < len && o + 1 < outlen; i++) {
		unsigned char c = (unsigned char)line[i];

		if (c == 0x1b) { /* ESC [ ... letter */
			while (i + 1 < len && !((line[i + 1] >= 'A' && line[i + 1] <= 'Z') ||
						(line[i + 1] >= 'a' && line[i + 1] <= 'z')))
				i++;
			i++;
			continue;
		}
		if (c >= 0x20 && c < 0x7f)
			out[o++] = (char)c;
	}
	while (o > 0 && out[o - 1] == ' ')
		o--;
	out[o] = '\0';
}

int health_console_evidence(char *out, size_t outlen, const char *text, size_t len)
{
	const char *best = NULL, *last = NULL;
	size_t best_len = 0, last_len = 0;
	int best_rank = 0;

	if (outlen == 0)
		return 0;
	out[0] = '\0';
	for (size_t i = 0; text && i < len;) {
		size_t j = i, k;
		int rank, blank = 1;

		while (j < len && text[j] != '\n' && text[j] != '\r')
			j++;
		for (k = i; k < j; k++)
			if ((unsigned char)text[k] > ' ' && text[k] != 0x7f)
				blank = 0;
		if (!blank) {
			last = text + i;
			last_len = j - i;
			rank = console_alarm(text + i, j - i);
			/* the first panic line (its cause), else the last other alarm */
			if (rank > best_rank || (rank == 1 && best_rank == 1)) {
				best = text + i;
				best_len = j - i;
				best_rank = rank;
			}
		}
		i = j + 1;
	}
	if (!best) {
		best = last;
		best_len = last_len;
	}
	if (!best)
		return 0;
	console_copy(out, outlen, best, best_len);
	return out[0] != '\0';
}

static void rule_bmc(struct health_result *r, const struct health_facts *f)
{
	char age[32];

	if (!f->has_bmc)
		return;
	if (f->credentials_rejected) {
		health_add(r, HEALTH_WARNING, HEALTH_REPAIR_NONE, "bmc: credentials rejected");
		return;
	}
	if (f->bmc_config_error) {
		health_add(r, HEALTH_WARNING, HEALTH_REPAIR_NONE,
			   "bmc configuration error: %s", f->bmc_config_error);
		return;
	}
	/* It answered, so it is there: busy (sessions full, a firmware job) is not down. */
	if (f->bmc_reachable && f->bmc_busy) {
		health_add(r, HEALTH_WARNING, HEALTH_REPAIR_NONE, "bmc busy: %s",
		    f->bmc_busy_detail && f->bmc_busy_detail[0] ? f->bmc_busy_detail : "try again later");
		return;
	}
	if (f->bmc_reachable)
		return;
	age_text(age, sizeof(age), f->bmc_down_since > 0 ? f->now - f->bmc_down_since : 0);
	health_add(r, HEALTH_WARNING, HEALTH_REPAIR_NONE, "bmc unreachable for %s", age);
}

/* A node being reinstalled goes off and comes back with its agent silent: shown as such
 * (the hung rule leaves it alone meanwhile). */
static void rule_reinstalling(struct health_result *r, const struct health_facts *f)
{
	if (!f->reinstalling)
		return;
	if (f->reinstall_step && f->reinstall_step[0])
		health_add(r, HEALTH_WARNING, HEALTH_REPAIR_NONE,
			   "reinstalling: step %s", f->reinstall_step);
	else
		health_add(r, HEALTH_WARNING, HEALTH_REPAIR_NONE, "reinstalling");
}

/* A boot in progress while the agent is away: shown (no verdict), with when it will be
 * judged. 1 when said. */
static int boot_shown(struct health_result *r, const struct health_facts *f,
		      const struct health_config *cfg)
{
	char age[32], window[32];
	int64_t since = f->now - f->boot_started;

	if (!boot_pending(f) || f->maintenance || f->reinstalling || since > boot_window(f, cfg) ||
	    since <= interval_of(f, cfg))
		return 0;
	age_text(age, sizeof(age), since);
	age_text(window, sizeof(window), boot_window(f, cfg));
	if (f->boot_state && f->boot_state[0])
		health_add(r, HEALTH_OK, HEALTH_REPAIR_NONE,
			   "boot: began %s ago (BMC: %.64s), agent not back yet: not judged hung "
			   "before %s", age, f->boot_state, window);
	else
		health_add(r, HEALTH_OK, HEALTH_REPAIR_NONE,
			   "boot: began %s ago, agent not back yet: not judged hung before %s", age,
			   window);
	return 1;
}

static void rule_hung(struct health_result *r, const struct health_facts *f,
		      const struct health_config *cfg)
{
	char age[32], boot[120] = "";

	age_text(age, sizeof(age), f->now - f->agent_last_seen);
	if (!health_is_hung(f, cfg)) {
		if (f->power == 1 && boot_shown(r, f, cfg))
			return;
		/* Silent, and kiln cannot say this node alone is at fault: shown, never acted on. */
		if (f->power == 2 || f->maintenance || f->reinstalling || !agent_silent_long(f, cfg))
			return;
		if (f->power == 0 || !power_fresh(f, cfg))
			health_add(r, HEALTH_WARNING, HEALTH_REPAIR_NONE,
				   "agent silent for %s, power unknown: not judged hung",
			    age);
		else if (f->fleet_silence)
			health_add(r, HEALTH_WARNING, HEALTH_REPAIR_NONE,
			    "agent silent for %s during a fleet-wide agent silence: not judged hung",
			    age);
		else if (fleet_grace(f, cfg))
			health_add(r, HEALTH_WARNING, HEALTH_REPAIR_NONE,
			    "agent silent for %s: judged 2 intervals after the fleet-wide silence ended",
			    age);
		return;
	}
	r->hung = 1;
	if (boot_pending(f)) {
		char since[32];

		/* a boot that never came up: where the BMC last saw it */
		age_text(since, sizeof(since), f->now - f->boot_started);
		snprintf(boot, sizeof(boot), "; boot began %s ago%s%.64s%s", since,
			 f->boot_state ? " (BMC: " : "", f->boot_state ? f->boot_state : "",
			 f->boot_state ? ")" : "");
	}
	if (f->console_line && f->console_line[0])
		health_add(r, HEALTH_CRITICAL, HEALTH_REPAIR_REBOOT,
			   "hung: powered on, agent silent for %s%s; console: %s", age, boot,
			   f->console_line);
	else
		health_add(r, HEALTH_CRITICAL, HEALTH_REPAIR_REBOOT,
			   "hung: powered on, agent silent for %s%s", age, boot);
}

/* "02:10 UTC" today, "2026-11-30 02:10 UTC" further back. */
static void when_text(char *out, size_t len, int64_t t, int64_t now)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (t <= 0 || !gmtime_r(&tt, &tm)) {
		snprintf(out, len, "an unknown time");
		return;
	}
	strftime(out, len, now - t < 20 * 3600 && now >= t ? "%H:%M UTC" : "%Y-%m-%d %H:%M UTC",
		 &tm);
}

/* Power that changed by itself is a warning; one changed through kiln says who did it. */
static void rule_power_off(struct health_result *r, const struct health_facts *f)
{
	char when[40];

	if (f->power != 2 || !f->power_off_by)
		return;
	when_text(when, sizeof(when), f->power_off_time, f->now);
	if (f->power_off_by[0])
		health_add(r, HEALTH_OK, HEALTH_REPAIR_NONE,
			   "off, by %s at %s", f->power_off_by, when);
	else if (f->maintenance)
		health_add(r, HEALTH_OK, HEALTH_REPAIR_NONE,
			   "powered off outside kiln at %s (in maintenance)", when);
	else
		health_add(r, HEALTH_WARNING, HEALTH_REPAIR_NONE,
			   "powered off outside kiln at %s", when);
}

/* NVML answered and counted the GPUs: a status other than "ok" means no count was made. */
static int nvml_counted(const struct health_facts *f)
{
	return !f->nvidia_status || strcmp(f->nvidia_status, "ok") == 0;
}

static int nvml_mismatch(const struct health_facts *f)
{
	return f->nvidia_status && strcmp(f->nvidia_status, "mismatch") == 0;
}

/* A refusal is shown while it goes on, with what differs (both values) and the command
 * that accepts it; an agent seen elsewhere likewise. */
static void rule_identity(struct health_result *r, const struct health_facts *f,
			  const struct health_config *cfg)
{
	const char *node = f->identity_node ? f->identity_node : "NODE";

	if (identity_refused(f, cfg)) {
		/* the stored message up to its own advice, which the reason words shorter */
		const char *m = f->identity_message;
		const char *end = m ? strstr(m, "; refused:") : NULL;
		int len = m ? (end ? (int)(end - m) : (int)strlen(m)) : 0;

		if (len > 0)
			health_add(r, HEALTH_CRITICAL, HEALTH_REPAIR_NONE,
				   "agent identity mismatch: reports refused (kiln agent "
			    "accept-identity %s): %.*s", node, len, m);
		else
			health_add(r, HEALTH_CRITICAL, HEALTH_REPAIR_NONE,
				   "agent identity mismatch: %s differs, reports "
			    "refused (kiln agent accept-identity %s)", f->identity_field, node);
	}
	if (identity_elsewhere(f, cfg))
		health_add(r, HEALTH_CRITICAL, HEALTH_REPAIR_NONE,
			   "agent identity mismatch: this node's agent reports with "
		    "node %s's token", f->identity_elsewhere);
}

/* What ingest refused: whole reports (the agent speaks, kiln cannot read it: critical, the
 * node is not watched meanwhile) or fields of the stored one (a warning). */
static void rule_refused(struct health_result *r, const struct health_facts *f,
			 const struct health_config *cfg)
{
	if (reports_refused(f, cfg))
		health_add(r, HEALTH_CRITICAL, HEALTH_REPAIR_NONE,
			   "agent reports refused: %.300s", f->refused_reason);
	if (f->rejected_fields)
		health_add(r, HEALTH_WARNING, HEALTH_REPAIR_NONE,
			   "agent reports fields kiln refused: %.300s",
		    f->rejected_fields);
}

static void rule_gpus(struct health_result *r, const struct health_facts *f)
{
	if (f->gpus_seen < 0 || f->gpus_expected < 0 || f->gpus_seen >= f->gpus_expected)
		return;
	if (nvml_counted(f))
		health_add(r, HEALTH_CRITICAL, HEALTH_REPAIR_REBOOT,
			   "gpus: %lld of %lld seen", (long long)f->gpus_seen,
		    (long long)f->gpus_expected);
	else if (!nvml_mismatch(f)) /* a mismatch is rule_driver's to say */
		health_add(r, HEALTH_CRITICAL, HEALTH_REPAIR_REBOOT,
			   "gpus: not counted (nvidia status %s), the node had %lld",
		    f->nvidia_status, (long long)f->gpus_expected);
}

static void rule_xid(struct health_result *r, const struct health_facts *f)
{
	char list[64] = "";
	size_t len = 0;
	int found = 0;

	for (size_t i = 0; i < f->nxids && i < HEALTH_XIDS_MAX; i++) {
		int dup = 0;

		if (!health_xid_critical(f->xids[i]))
			continue;
		for (size_t j = 0; j < i; j++)
			dup |= f->xids[j] == f->xids[i];
		if (dup)
			continue;
		if (len < sizeof(list))
			len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%d", found ? "," : "",
						f->xids[i]);
		found = 1;
	}
	if (found)
		health_add(r, HEALTH_CRITICAL, HEALTH_REPAIR_REBOOT, "xid: critical Xid %s", list);
}

static void rule_ecc(struct health_result *r, const struct health_facts *f)
{
	if (f->ngpus > 0)
		return; /* rule_gpu_memory names the GPUs */
	if (f->ecc_first < 0 || f->ecc_last < 0 || f->ecc_last <= f->ecc_first)
		return;
	health_add(r, HEALTH_WARNING, HEALTH_REPAIR_REBOOT,
		   "ecc: uncorrected errors rising (%lld -> %lld)",
	    (long long)f->ecc_first, (long long)f->ecc_last);
}

static void rule_remap(struct health_result *r, const struct health_facts *f)
{
	if (f->remap_failure > 0 && f->ngpus == 0)
		health_add(r, HEALTH_CRITICAL, HEALTH_REPAIR_INSPECTION,
			   "remap: a GPU's row remapping failed");
}

void health_part(char *buf, size_t len, size_t *used, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*used >= len - 1)
		return;
	if (*used > 0)
		*used += (size_t)snprintf(buf + *used, len - *used, ", ");
	if (*used >= len - 1)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf + *used, len - *used, fmt, ap);
	va_end(ap);
	if (n > 0)
		*used += (size_t)n;
}

static const char *plural(int64_t n)
{
	return n == 1 ? "" : "s";
}

/* The ECC part of a GPU's verdict: the count since the driver loaded is what running work
 * hit (critical); the lifetime count alone is history the GPU was repaired from (a warning)
 * unless it rose within the ECC window. */
static enum health_level gpu_ecc(char *buf, size_t len, size_t *used, const struct health_gpu *g,
				 int64_t now, const struct health_config *cfg)
{
	int rising = g->ecc_rose_at > 0 && now - g->ecc_rose_at <= cfg->ecc_window_s;

	if (g->ecc_volatile > 0) {
		if (g->ecc_aggregate > g->ecc_volatile)
			health_part(buf, len, used, "%lld uncorrected ECC error%s (%lld lifetime%s)",
			     (long long)g->ecc_volatile, plural(g->ecc_volatile),
			     (long long)g->ecc_aggregate, rising ? ", rising" : "");
		else
			health_part(buf, len, used, "%lld uncorrected ECC error%s%s",
			     (long long)g->ecc_volatile, plural(g->ecc_volatile),
			     rising ? " (rising)" : "");
		return HEALTH_CRITICAL;
	}
	if (g->ecc_aggregate > 0) {
		health_part(buf, len, used, "%lld uncorrected ECC error%s in its lifetime%s",
		     (long long)g->ecc_aggregate, plural(g->ecc_aggregate),
		     rising ? " (rising)" : "");
		return rising ? HEALTH_CRITICAL : HEALTH_WARNING;
	}
	if (rising) {
		char age[32];

		/* rose, then the counter was reset (a reload) and no lifetime count is known */
		age_text(age, sizeof(age), now - g->ecc_rose_at);
		health_part(buf, len, used, "uncorrected ECC errors %s ago", age);
		return HEALTH_CRITICAL;
	}
	return HEALTH_OK;
}

enum health_level health_gpu_verdict(char *out, size_t len, const struct health_gpu *g,
				     int64_t now, const struct health_config *cfg)
{
	char parts[HEALTH_REASON_LEN] = "";
	size_t used = 0;
	enum health_level level = gpu_ecc(parts, sizeof(parts), &used, g, now, cfg);
	int retire = g->retired_pages_pending == 1, remap = g->remap_pending == 1;

	if (g->remap_failure == 1) {
		health_part(parts, sizeof(parts), &used, "row remap failed (service needed)");
		level = HEALTH_CRITICAL;
	}
	if (retire || remap) {
		health_part(parts, sizeof(parts), &used, "%s pending (reset needed)",
		     retire && remap ? "page retirement and row remap"
		     : retire	     ? "page retirement"
				     : "row remap");
		level = HEALTH_CRITICAL;
	}
	if (level == HEALTH_OK)
		return level; /* rows remapped alone: a repair that worked */
	if (g->remapped_rows > 0)
		health_part(parts, sizeof(parts), &used, "%lld row%s remapped", (long long)g->remapped_rows,
		     plural(g->remapped_rows));
	if (g->pci_bus_id && g->pci_bus_id[0])
		snprintf(out, len, "gpu %lld (%s): %s", (long long)g->index, g->pci_bus_id, parts);
	else
		snprintf(out, len, "gpu %lld: %s", (long long)g->index, parts);
	return level;
}

/* One reason per GPU with a memory finding, the first HEALTH_GPU_REASONS_MAX of them, and
 * one that counts the rest (reasons are bounded; the level still counts every GPU). */
static void rule_gpu_memory(struct health_result *r, const struct health_facts *f,
			    const struct health_config *cfg)
{
	enum health_level rest = HEALTH_OK;
	enum health_repair rest_repair = HEALTH_REPAIR_NONE;
	char reason[HEALTH_REASON_LEN];
	size_t shown = 0, more = 0;

	for (size_t i = 0; i < f->ngpus && i < HEALTH_GPUS_MAX; i++) {
		enum health_level l = health_gpu_verdict(reason, sizeof(reason), &f->gpus[i],
							 f->now, cfg);
		enum health_repair c;

		if (l == HEALTH_OK)
			continue;
		/* a failed remap needs the GPU serviced; errors and pending repairs want a
		 * reset; repaired history alone is only watched */
		c = f->gpus[i].remap_failure == 1 ? HEALTH_REPAIR_INSPECTION
		    : l == HEALTH_CRITICAL	   ? HEALTH_REPAIR_REBOOT
						   : HEALTH_REPAIR_NONE;
		if (shown < HEALTH_GPU_REASONS_MAX) {
			health_add(r, l, c, "%s", reason);
			shown++;
		} else {
			more++;
			if (l > rest)
				rest = l;
			if (c > rest_repair)
				rest_repair = c;
		}
	}
	if (more)
		health_add(r, rest, rest_repair, "gpus: %zu more with memory errors", more);
}

static void rule_temperature(struct health_result *r, const struct health_facts *f,
			     const struct health_config *cfg)
{
	if (!isnan(f->hottest_gpu_c) && f->hottest_gpu_c > cfg->gpu_temp_max_c)
		health_add(r, HEALTH_WARNING, HEALTH_REPAIR_INSPECTION,
			   "temperature: GPU at %.0f C (limit %.0f C)", f->hottest_gpu_c,
		    cfg->gpu_temp_max_c);
	if (!isnan(f->inlet_c) && f->inlet_c > cfg->inlet_temp_max_c)
		health_add(r, HEALTH_WARNING, HEALTH_REPAIR_INSPECTION,
			   "temperature: inlet at %.0f C (limit %.0f C)", f->inlet_c,
		    cfg->inlet_temp_max_c);
}

/* Names the failed PSUs, and says whether the node still has power redundancy. */
static void rule_psu(struct health_result *r, const struct health_facts *f)
{
	const char *set = f->psu_redundancy_name;

	if (f->psu_failed > 0 && f->psu_failed_names[0])
		health_add(r, HEALTH_WARNING, HEALTH_REPAIR_INSPECTION,
			   "psu: %s failed%s", f->psu_failed_names,
		    set[0] && !f->psu_redundancy_lost ? ", redundancy kept" : "");
	else if (f->psu_failed > 0)
		health_add(r, HEALTH_WARNING, HEALTH_REPAIR_INSPECTION,
			   "psu: %d failed", f->psu_failed);
	if (!f->psu_redundancy_lost)
		return;
	if (set[0] && f->psu_healthy >= 0 && f->psu_needed > 0)
		health_add(r, HEALTH_WARNING, HEALTH_REPAIR_INSPECTION,
			   "psu: redundancy lost (%s: %d healthy, %d needed)", set,
		    f->psu_healthy, f->psu_needed);
	else if (set[0])
		health_add(r, HEALTH_WARNING, HEALTH_REPAIR_INSPECTION,
			   "psu: redundancy lost (%s)", set);
	else
		health_add(r, HEALTH_WARNING, HEALTH_REPAIR_INSPECTION, "psu: redundancy lost");
}

/* A critical entry the BMC logged since kilnd first read its log (a fatal bus error, a PSU
 * failure) counts for the window even when no sensor shows it any more. */
static void rule_bmc_log(struct health_result *r, const struct health_facts *f,
			 const struct health_config *cfg)
{
	char at[32];

	for (size_t i = 0; i < f->nbmc_logs && i < HEALTH_BMC_LOGS_MAX; i++) {
		const struct health_bmc_log *e = &f->bmc_logs[i];
		struct tm tm;
		time_t t = (time_t)e->time;

		if (f->now - e->time > cfg->bmc_log_window_s)
			continue;
		if (!gmtime_r(&t, &tm) || strftime(at, sizeof(at), "%Y-%m-%d %H:%M UTC", &tm) == 0)
			snprintf(at, sizeof(at), "?");
		health_add(r, HEALTH_CRITICAL, HEALTH_REPAIR_INSPECTION,
			   "bmc log: %.100s at %s", e->message, at);
	}
}

int health_reboot_pending(const char *nvidia_status, const char *lib, const char *mod)
{
	if (nvidia_status && strcmp(nvidia_status, "mismatch") == 0)
		return 1;
	return lib && mod && lib[0] && mod[0] && strcmp(lib, mod) != 0;
}

/* The reasons' first words, as the rules above write them, and the kind each one is. */
static const struct {
	const char *prefix;
	const char *kind;
} reason_kinds[] = {
	{ "hung:", "hung" },
	{ "agent silent", "agent_silent" },
	{ "agent identity mismatch", "agent_identity" },
	{ "bmc: credentials", "bmc_credentials" },
	{ "bmc busy:", "bmc_busy" },
	{ "bmc unreachable", "bmc_unreachable" },
	{ "bmc log:", "bmc_log" },
	{ "reinstalling", "reinstalling" },
	{ "off, by ", "power_off" },
	{ "powered off outside kiln", "power_off" },
	{ "gpus: not counted", "gpu_missing" },
	{ "gpus: ", "gpu_missing" }, /* but "gpus: N more with memory errors", below */
	{ "xid:", "xid" },
	{ "ecc:", "ecc" },
	{ "remap:", "ecc" },
	{ "gpu ", "ecc" },           /* one GPU's memory verdict: "gpu 2 (...): ..." */
	{ "temperature:", "temperature" },
	{ "psu:", "psu" },
	{ "driver: NVML/kernel module version mismatch", "driver_mismatch" },
	{ "driver:", "reboot_pending" },
	{ "starved:", "starved" },
	{ "throttle:", "throttle" },
	{ "pcie:", "pcie" },
	{ "nvlink:", "nvlink" },
	{ "kernel:", "kernel" },
	{ "disk:", "disk" },
	{ "fan:", "fan" },
	{ "part:", "part" },
	{ "bmc clock:", "bmc_clock" },
	{ "boot:", "boot" },
	{ "mode:", "gpu_mode" },
};

const char *health_reason_kind(const char *reason)
{
	if (!reason)
		return "other";
	if (strncmp(reason, "gpus: ", 6) == 0 && strstr(reason, " more with memory errors"))
		return "ecc";
	for (size_t i = 0; i < sizeof(reason_kinds) / sizeof(reason_kinds[0]); i++)
		if (strncmp(reason, reason_kinds[i].prefix, strlen(reason_kinds[i].prefix)) == 0)
			return reason_kinds[i].kind;
	return "other";
}

const char *const *health_reason_kinds(void)
{
	static const char *const kinds[] = {
		"hung", "agent_silent", "agent_identity", "bmc_credentials", "bmc_busy",
		"bmc_unreachable", "bmc_log", "reinstalling", "power_off", "gpu_missing", "xid",
		"ecc", "temperature", "psu", "driver_mismatch", "reboot_pending", "starved",
		"throttle", "pcie", "nvlink", "kernel", "disk", "fan", "part", "bmc_clock", "boot",
		"gpu_mode",
		"other", NULL,
	};

	return kinds;
}

static void rule_driver(struct health_result *r, const struct health_facts *f)
{
	const char *lib = f->driver_version, *mod = f->kernel_module_version;

	if (nvml_mismatch(f)) {
		/* NVML cannot talk to the loaded module: no GPU is usable or counted until the
		 * reboot, and none is known missing */
		health_add(r, HEALTH_CRITICAL, HEALTH_REPAIR_REBOOT,
		    "driver: NVML/kernel module version mismatch (library %s, kernel module %s):"
		    " GPUs not counted, reboot pending",
		    lib && lib[0] ? lib : "?", mod && mod[0] ? mod : "?");
		return;
	}
	if (health_reboot_pending(f->nvidia_status, lib, mod))
		health_add(r, HEALTH_WARNING, HEALTH_REPAIR_REBOOT,
			   "driver: library %s, kernel module %s (reboot pending)",
		    lib && lib[0] ? lib : "?", mod && mod[0] ? mod : "?");
}

static void rule_starved(struct health_result *r, const struct health_facts *f,
			 const struct health_config *cfg)
{
	char age[32];

	if (!f->starved_now || f->starved_since <= 0 || f->now - f->starved_since < cfg->starved_s)
		return;
	age_text(age, sizeof(age), f->now - f->starved_since);
	health_add(r, HEALTH_WARNING, HEALTH_REPAIR_NONE,
		   "starved: GPUs idle with memory held and high iowait for %s", age);
}

void health_evaluate(struct health_result *out, const struct health_facts *f,
		     const struct health_config *cfg)
{
	memset(out, 0, sizeof(*out));
	rule_reinstalling(out, f);
	rule_bmc(out, f);
	rule_hung(out, f, cfg);
	rule_power_off(out, f);
	rule_identity(out, f, cfg);
	rule_refused(out, f, cfg);
	rule_gpus(out, f);
	rule_xid(out, f);
	rule_ecc(out, f);
	rule_remap(out, f);
	rule_gpu_memory(out, f, cfg);
	rule_temperature(out, f, cfg);
	rule_psu(out, f);
	rule_bmc_log(out, f, cfg);
	rule_driver(out, f);
	rule_starved(out, f, cfg);
	health_rules_gpu(out, f, cfg);
	health_rules_host(out, f, cfg);
	health_rules_parts(out, f, cfg);
	health_escalate_returned(out, f);
}
