/* Node health rules: every rule reads only struct health_facts, so each is a unit test row. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "health/health.h"

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
	cfg->bmc_log_window_s = 3600;
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

static void add(struct health_result *r, enum health_level level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void add(struct health_result *r, enum health_level level, const char *fmt, ...)
{
	va_list ap;

	if (level > r->level)
		r->level = level;
	if (r->nreasons >= HEALTH_REASONS_MAX)
		return;
	va_start(ap, fmt);
	vsnprintf(r->reasons[r->nreasons++], HEALTH_REASON_LEN, fmt, ap);
	va_end(ap);
}

/* The agent has been silent for more than hung_intervals (counted from a power-on too). */
static int agent_silent_long(const struct health_facts *f, const struct health_config *cfg)
{
	int64_t interval = f->agent_interval_s > 0 ? f->agent_interval_s : cfg->agent_interval_s;
	int64_t from = f->agent_last_seen;

	if (f->agent_last_seen <= 0)
		return 0;
	if (f->power == 1 && f->power_on_since > from)
		from = f->power_on_since; /* a node just powered on gets its intervals too */
	return f->now - from > interval * cfg->hung_intervals;
}

/* A power reading young enough to say the node is on now. A busy BMC answered without a
 * power state: the last one it gave says nothing of now either. */
static int power_fresh(const struct health_facts *f, const struct health_config *cfg)
{
	if (f->bmc_busy)
		return 0;
	return f->power_time > 0 && f->now - f->power_time <= cfg->power_max_age_s;
}

int health_is_hung(const struct health_facts *f, const struct health_config *cfg)
{
	if (f->power != 1 || f->maintenance || f->reinstalling)
		return 0;
	/* "on" read before the BMC went quiet says nothing now (a switch or PDU that took the
	 * BMC and the agent away together is not a hung node to cycle) */
	if (!power_fresh(f, cfg))
		return 0;
	return agent_silent_long(f, cfg);
}

static void rule_bmc(struct health_result *r, const struct health_facts *f)
{
	char age[32];

	if (!f->has_bmc)
		return;
	if (f->credentials_rejected) {
		add(r, HEALTH_WARNING, "bmc: credentials rejected");
		return;
	}
	/* It answered, so it is there: busy (sessions full, a firmware job) is not down. */
	if (f->bmc_reachable && f->bmc_busy) {
		add(r, HEALTH_WARNING, "bmc busy: %s",
		    f->bmc_busy_detail && f->bmc_busy_detail[0] ? f->bmc_busy_detail : "try again later");
		return;
	}
	if (f->bmc_reachable)
		return;
	age_text(age, sizeof(age), f->bmc_down_since > 0 ? f->now - f->bmc_down_since : 0);
	add(r, HEALTH_WARNING, "bmc unreachable for %s", age);
}

/* A node being reinstalled goes off and comes back with its agent silent: shown as such
 * (the hung rule leaves it alone meanwhile). */
static void rule_reinstalling(struct health_result *r, const struct health_facts *f)
{
	if (!f->reinstalling)
		return;
	if (f->reinstall_step && f->reinstall_step[0])
		add(r, HEALTH_WARNING, "reinstalling: step %s", f->reinstall_step);
	else
		add(r, HEALTH_WARNING, "reinstalling");
}

static void rule_hung(struct health_result *r, const struct health_facts *f,
		      const struct health_config *cfg)
{
	char age[32];

	if (!health_is_hung(f, cfg)) {
		/* Silent, and the BMC cannot say the node is on: shown, never acted on. */
		if (f->power != 2 && !f->maintenance && !f->reinstalling &&
		    (f->power == 0 || !power_fresh(f, cfg)) && agent_silent_long(f, cfg)) {
			age_text(age, sizeof(age), f->now - f->agent_last_seen);
			add(r, HEALTH_WARNING, "agent silent for %s, power unknown: not judged hung",
			    age);
		}
		return;
	}
	r->hung = 1;
	age_text(age, sizeof(age), f->now - f->agent_last_seen);
	add(r, HEALTH_CRITICAL, "hung: powered on, agent silent for %s", age);
}

static void rule_gpus(struct health_result *r, const struct health_facts *f)
{
	if (f->gpus_seen < 0 || f->gpus_expected < 0 || f->gpus_seen >= f->gpus_expected)
		return;
	add(r, HEALTH_CRITICAL, "gpus: %lld of %lld seen", (long long)f->gpus_seen,
	    (long long)f->gpus_expected);
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
		add(r, HEALTH_CRITICAL, "xid: critical Xid %s", list);
}

static void rule_ecc(struct health_result *r, const struct health_facts *f)
{
	if (f->ecc_first < 0 || f->ecc_last < 0 || f->ecc_last <= f->ecc_first)
		return;
	add(r, HEALTH_WARNING, "ecc: uncorrected errors rising (%lld -> %lld)",
	    (long long)f->ecc_first, (long long)f->ecc_last);
}

static void rule_remap(struct health_result *r, const struct health_facts *f)
{
	if (f->remap_failure > 0)
		add(r, HEALTH_CRITICAL, "remap: a GPU's row remapping failed");
}

static void rule_temperature(struct health_result *r, const struct health_facts *f,
			     const struct health_config *cfg)
{
	if (!isnan(f->hottest_gpu_c) && f->hottest_gpu_c > cfg->gpu_temp_max_c)
		add(r, HEALTH_WARNING, "temperature: GPU at %.0f C (limit %.0f C)", f->hottest_gpu_c,
		    cfg->gpu_temp_max_c);
	if (!isnan(f->inlet_c) && f->inlet_c > cfg->inlet_temp_max_c)
		add(r, HEALTH_WARNING, "temperature: inlet at %.0f C (limit %.0f C)", f->inlet_c,
		    cfg->inlet_temp_max_c);
}

/* Names the failed PSUs, and says whether the node still has power redundancy. */
static void rule_psu(struct health_result *r, const struct health_facts *f)
{
	const char *set = f->psu_redundancy_name;

	if (f->psu_failed > 0 && f->psu_failed_names[0])
		add(r, HEALTH_WARNING, "psu: %s failed%s", f->psu_failed_names,
		    set[0] && !f->psu_redundancy_lost ? ", redundancy kept" : "");
	else if (f->psu_failed > 0)
		add(r, HEALTH_WARNING, "psu: %d failed", f->psu_failed);
	if (!f->psu_redundancy_lost)
		return;
	if (set[0] && f->psu_healthy >= 0 && f->psu_needed > 0)
		add(r, HEALTH_WARNING, "psu: redundancy lost (%s: %d healthy, %d needed)", set,
		    f->psu_healthy, f->psu_needed);
	else if (set[0])
		add(r, HEALTH_WARNING, "psu: redundancy lost (%s)", set);
	else
		add(r, HEALTH_WARNING, "psu: redundancy lost");
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
		add(r, HEALTH_CRITICAL, "bmc log: %.100s at %s", e->message, at);
	}
}

static void rule_driver(struct health_result *r, const struct health_facts *f)
{
	const char *lib = f->driver_version, *mod = f->kernel_module_version;

	if ((f->nvidia_status && strcmp(f->nvidia_status, "mismatch") == 0) ||
	    (lib && mod && lib[0] && mod[0] && strcmp(lib, mod) != 0))
		add(r, HEALTH_WARNING, "driver: library %s, kernel module %s (reboot pending)",
		    lib && lib[0] ? lib : "?", mod && mod[0] ? mod : "?");
}

static void rule_starved(struct health_result *r, const struct health_facts *f,
			 const struct health_config *cfg)
{
	char age[32];

	if (!f->starved_now || f->starved_since <= 0 || f->now - f->starved_since < cfg->starved_s)
		return;
	age_text(age, sizeof(age), f->now - f->starved_since);
	add(r, HEALTH_WARNING, "starved: GPUs idle with memory held and high iowait for %s", age);
}

void health_evaluate(struct health_result *out, const struct health_facts *f,
		     const struct health_config *cfg)
{
	memset(out, 0, sizeof(*out));
	rule_reinstalling(out, f);
	rule_bmc(out, f);
	rule_hung(out, f, cfg);
	rule_gpus(out, f);
	rule_xid(out, f);
	rule_ecc(out, f);
	rule_remap(out, f);
	rule_temperature(out, f, cfg);
	rule_psu(out, f);
	rule_bmc_log(out, f, cfg);
	rule_driver(out, f);
	rule_starved(out, f, cfg);
}
