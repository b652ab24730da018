/* SPDX-License-Identifier: Apache-2.0 */
/* The gpu rules: GPU clocks held down (NVML clocks-event reasons), PCIe replay/AER and NVLink
 * error counters rising between reports. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "health/rules.h"

/* GPUs given a reason of their own by each rule; the rest are summed up in one. */
#define SHOWN_MAX 4

/* ---- the cut ---------------------------------------------------------------------------
 *
 * {"gpus":[{"index":3,"bus":"00000000:1B:00.0","util":97,"sm":1005,"sm_max":1980,
 *           "reasons":64,"held":2,"held_since":T,"nvl_act":16,"nvl_most":18,"nvl_low":2,
 *           "ecc":[1,1],"mig":[0,1],
 *           "c":{"pcie_replay":[V,B,AT],...},"nvl":1,"nvlink":{"3":{"crc":[V,B,AT],...}}}]}
 *
 * Each counter is [value, value before its last rise, when it last rose (0: never seen
 * rising)]. A counter seen for the first time, or lower than before (the driver reloaded,
 * the node rebooted: the count started again), is a new baseline, not a rise.
 */

static const char *const pcie_keys[] = { "pcie_replay", "aer_correctable", "aer_nonfatal",
					 "aer_fatal" };
static const char *const pcie_fields[] = { "pcie_replay_count", "aer_correctable",
					   "aer_nonfatal", "aer_fatal" };
static const char *const nvlink_keys[] = { "replay", "recovery", "crc" };

/* An integer field of o that is at least 0, else -1 (a number is rounded). */
static int64_t get_count(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	if (json_is_integer(v))
		return json_integer_value(v) >= 0 ? json_integer_value(v) : -1;
	if (json_is_real(v) && json_real_value(v) >= 0 && json_real_value(v) < 9e15)
		return (int64_t)llround(json_real_value(v));
	return -1;
}

/* The previous cut's entry of a GPU: the one of the same bus id, or of the same index when
 * neither names a bus. NULL: none. */
static json_t *prev_gpu(json_t *prev, int64_t index, const char *bus)
{
	json_t *gpus = json_object_get(prev, "gpus"), *p;
	size_t i;

	json_array_foreach(gpus, i, p) {
		const char *pbus = json_string_value(json_object_get(p, "bus"));

		if (bus && pbus ? strcmp(bus, pbus) == 0
				: !bus && !pbus && get_count(p, "index") == index)
			return p;
	}
	return NULL;
}

/* The counter's next [value, before, rose_at] from its previous one (NULL: none). */
static json_t *counter_step(json_t *prev, int64_t v, int64_t now)
{
	int64_t pv, pb, pat;

	if (!json_is_array(prev) || json_array_size(prev) != 3 ||
	    !json_is_integer(json_array_get(prev, 0)))
		return json_pack("[I,I,I]", (json_int_t)v, (json_int_t)v, (json_int_t)0);
	pv = json_integer_value(json_array_get(prev, 0));
	pb = json_integer_value(json_array_get(prev, 1));
	pat = json_integer_value(json_array_get(prev, 2));
	if (v > pv)
		return json_pack("[I,I,I]", (json_int_t)v, (json_int_t)pv, (json_int_t)now);
	if (v < pv) /* counting again from a reload or reboot */
		return json_pack("[I,I,I]", (json_int_t)v, (json_int_t)v, (json_int_t)0);
	return json_pack("[I,I,I]", (json_int_t)v, (json_int_t)pb, (json_int_t)pat);
}

static void set_count(json_t *o, const char *key, int64_t v)
{
	if (v >= 0)
		json_object_set_new(o, key, json_integer((json_int_t)v));
}

static void cut_clocks(json_t *e, json_t *g, json_t *pg, int64_t now)
{
	int64_t reasons = get_count(g, "clock_event_reasons"), held;

	set_count(e, "util", get_count(g, "utilization_gpu_pct"));
	set_count(e, "sm", get_count(g, "clock_sm_mhz"));
	set_count(e, "sm_max", get_count(g, "clock_sm_max_mhz"));
	if (reasons < 0)
		return;
	set_count(e, "reasons", reasons);
	if (!((uint64_t)reasons & HEALTH_CLOCK_TROUBLE_MASK))
		return;
	held = get_count(pg, "held");
	if (held > 0 && get_count(pg, "held_since") > 0) {
		set_count(e, "held", held + 1);
		set_count(e, "held_since", get_count(pg, "held_since"));
	} else {
		set_count(e, "held", 1);
		set_count(e, "held_since", now);
	}
}

static void cut_counters(json_t *e, json_t *g, json_t *pg, int64_t now)
{
	json_t *c = json_object(), *pc = json_object_get(pg, "c");
	size_t i;

	for (i = 0; i < sizeof pcie_keys / sizeof pcie_keys[0]; i++) {
		int64_t v = get_count(g, pcie_fields[i]);

		if (v >= 0)
			json_object_set_new(c, pcie_keys[i],
					    counter_step(json_object_get(pc, pcie_keys[i]), v, now));
	}
	if (json_object_size(c))
		json_object_set_new(e, "c", c);
	else
		json_decref(c);
}

/* The NVLink counters: only links with a count above 0 are kept ("nvl":1 says the GPU's
 * links were read, so that a link missing from a cut counted 0 then), which keeps the cut
 * of an 8-GPU node with 18 healthy links each small. */
static void cut_nvlinks(json_t *e, json_t *g, json_t *pg, int64_t now)
{
	json_t *links = json_object(), *pl = json_object_get(pg, "nvlink"), *l;
	json_t *zero = json_pack("[I,I,I]", (json_int_t)0, (json_int_t)0, (json_int_t)0);
	int prev_read = get_count(pg, "nvl") == 1;
	size_t i, k;

	json_array_foreach(json_object_get(g, "nvlink_errors"), i, l) {
		int64_t link = get_count(l, "link"), flit, data, v[3];
		json_t *o, *po, *pc;
		char name[16];

		if (link < 0 || link > 63)
			continue;
		json_object_set_new(e, "nvl", json_integer(1));
		flit = get_count(l, "crc_flit");
		data = get_count(l, "crc_data");
		v[0] = get_count(l, "replay");
		v[1] = get_count(l, "recovery");
		v[2] = flit < 0 && data < 0 ? -1 : (flit > 0 ? flit : 0) + (data > 0 ? data : 0);
		if (v[0] <= 0 && v[1] <= 0 && v[2] <= 0)
			continue;
		snprintf(name, sizeof name, "%d", (int)link);
		po = json_object_get(pl, name);
		o = json_object();
		for (k = 0; k < 3; k++) {
			if (v[k] < 0)
				continue;
			pc = json_object_get(po, nvlink_keys[k]);
			if (!pc && prev_read)
				pc = zero; /* counted 0 in the previous cut */
			json_object_set_new(o, nvlink_keys[k], counter_step(pc, v[k], now));
		}
		json_object_set_new(links, name, o);
	}
	json_decref(zero);
	if (json_object_size(links))
		json_object_set_new(e, "nvlink", links);
	else
		json_decref(links);
}

/* Active NVLinks against the most the GPU ever had active (kept across reports; the reboot
 * of a node whose links come up later is no drop: a link counts once it was seen active),
 * and for how many reports in a row they were fewer. */
static void cut_nvlink_active(json_t *e, json_t *g, json_t *pg)
{
	int64_t act = get_count(g, "nvlink_active"), most = get_count(pg, "nvl_most");
	int64_t low = get_count(pg, "nvl_low");

	if (act < 0)
		return;
	if (act > most)
		most = act;
	set_count(e, "nvl_act", act);
	set_count(e, "nvl_most", most);
	set_count(e, "nvl_low", act < most ? (low > 0 ? low : 0) + 1 : 0);
}

/* ECC and MIG: [current, pending] when the GPU reports the mode. */
static void cut_modes(json_t *e, json_t *g)
{
	static const char *const keys[][3] = { { "ecc", "ecc_enabled", "ecc_pending_enabled" },
					       { "mig", "mig_mode", "mig_mode_pending" } };

	for (size_t i = 0; i < 2; i++) {
		json_t *cur = json_object_get(g, keys[i][1]), *pend = json_object_get(g, keys[i][2]);

		if (json_is_boolean(cur))
			json_object_set_new(e, keys[i][0],
					    json_pack("[i,i]", json_is_true(cur),
						      json_is_boolean(pend) ? json_is_true(pend)
									    : json_is_true(cur)));
	}
}

json_t *health_gpu_cut(json_t *report, json_t *prev, int64_t now)
{
	json_t *gpus = json_object_get(report, "gpus"), *out, *arr, *g;
	size_t i;

	if (!json_is_array(gpus) || json_array_size(gpus) == 0)
		return NULL;
	out = json_object();
	arr = json_array();
	if (!out || !arr) {
		json_decref(out);
		json_decref(arr);
		return NULL;
	}
	json_array_foreach(gpus, i, g) {
		int64_t index = get_count(g, "index");
		const char *bus = json_string_value(json_object_get(g, "pci_bus_id"));
		json_t *pg, *e;

		if (index < 0 || json_object_get(g, "error"))
			continue;
		pg = prev_gpu(prev, index, bus);
		e = json_pack("{s:I}", "index", (json_int_t)index);
		if (!e)
			break;
		if (bus)
			json_object_set_new(e, "bus", json_string(bus));
		cut_clocks(e, g, pg, now);
		cut_counters(e, g, pg, now);
		cut_nvlinks(e, g, pg, now);
		cut_nvlink_active(e, g, pg);
		cut_modes(e, g);
		json_array_append_new(arr, e);
	}
	json_object_set_new(out, "gpus", arr);
	return out;
}

/* ---- the cut's facts ---------------------------------------------------------------- */

static void add_rise(struct health_gpu_facts *gf, int64_t index, const char *bus,
		     enum health_gpu_counter counter, int link, json_t *c)
{
	struct health_gpu_rise *r;

	if (!json_is_array(c) || json_array_size(c) != 3 ||
	    json_integer_value(json_array_get(c, 2)) <= 0 || gf->nrises >= HEALTH_GPU_RISES_MAX)
		return;
	r = &gf->rises[gf->nrises++];
	r->index = index;
	r->pci_bus_id = bus;
	r->counter = counter;
	r->link = link;
	r->value = json_integer_value(json_array_get(c, 0));
	r->before = json_integer_value(json_array_get(c, 1));
	r->rose_at = json_integer_value(json_array_get(c, 2));
}

/* A mode of the cut's [current, pending] pair: 0 or 1; -1 when not there. */
static int mode_of(json_t *pair, size_t i)
{
	json_t *v = json_array_get(pair, i);

	return json_is_integer(v) ? json_integer_value(v) != 0 : -1;
}

void health_gpu_cut_facts(struct health_facts *f, json_t *cut)
{
	struct health_gpu_facts *gf = &f->gpu;
	json_t *g;
	size_t i, k;

	json_array_foreach(json_object_get(cut, "gpus"), i, g) {
		int64_t index = get_count(g, "index");
		const char *bus = json_string_value(json_object_get(g, "bus"));
		json_t *c = json_object_get(g, "c"), *links = json_object_get(g, "nvlink"), *l;
		const char *name;

		if (index < 0)
			continue;
		if (json_object_get(g, "reasons") && gf->nclocks < HEALTH_GPU_CLOCKS_MAX) {
			struct health_gpu_clock *h = &gf->clocks[gf->nclocks++];

			h->index = index;
			h->pci_bus_id = bus;
			h->util_pct = get_count(g, "util");
			h->sm_mhz = get_count(g, "sm");
			h->sm_max_mhz = get_count(g, "sm_max");
			h->reasons = (uint64_t)get_count(g, "reasons");
			h->held_reports = get_count(g, "held") > 0 ? get_count(g, "held") : 0;
			h->held_since = get_count(g, "held_since") > 0 ? get_count(g, "held_since") : 0;
		}
		if ((json_object_get(g, "ecc") || json_object_get(g, "mig")) &&
		    gf->nmodes < HEALTH_GPU_CLOCKS_MAX) {
			json_t *ecc = json_object_get(g, "ecc"), *mig = json_object_get(g, "mig");

			gf->modes[gf->nmodes++] = (struct health_gpu_mode){
				.index = index,
				.pci_bus_id = bus,
				.ecc = mode_of(ecc, 0),
				.ecc_pending = mode_of(ecc, 1),
				.mig = mode_of(mig, 0),
				.mig_pending = mode_of(mig, 1),
			};
		}
		if (get_count(g, "nvl_low") > 0 && gf->nlinks_down < HEALTH_GPU_CLOCKS_MAX)
			gf->links_down[gf->nlinks_down++] = (struct health_gpu_links){
				.index = index,
				.pci_bus_id = bus,
				.active = get_count(g, "nvl_act"),
				.most = get_count(g, "nvl_most"),
				.low_reports = get_count(g, "nvl_low"),
			};
		for (k = 0; k < sizeof pcie_keys / sizeof pcie_keys[0]; k++)
			add_rise(gf, index, bus, (enum health_gpu_counter)(HEALTH_PCIE_REPLAY + k), -1,
				 json_object_get(c, pcie_keys[k]));
		json_object_foreach(links, name, l) {
			int link = (int)strtol(name, NULL, 10);

			for (k = 0; k < 3; k++)
				add_rise(gf, index, bus,
					 (enum health_gpu_counter)(HEALTH_NVLINK_REPLAY + k), link,
					 json_object_get(l, nvlink_keys[k]));
		}
	}
}

/* ---- the rules ---------------------------------------------------------------------- */

/* "gpu 3 (00000000:1B:00.0)" or "gpu 3" into buf. */
static const char *gpu_name(char *buf, size_t len, int64_t index, const char *bus)
{
	if (bus && *bus)
		snprintf(buf, len, "gpu %lld (%.40s)", (long long)index, bus);
	else
		snprintf(buf, len, "gpu %lld", (long long)index);
	return buf;
}

static const struct {
	uint64_t bit;
	const char *name;
} trouble[] = {
	{ 0x8, "hw_slowdown" },
	{ 0x20, "sw_thermal_slowdown" },
	{ 0x40, "hw_thermal_slowdown" },
	{ 0x80, "hw_power_brake_slowdown" },
};

/* 1 when the GPU is held down by a trouble reason while busy, for throttle_reports reports
 * in a row, and its SM clock is under its maximum (when both are known). */
static int held_down(const struct health_gpu_clock *c, const struct health_config *cfg)
{
	if (!(c->reasons & HEALTH_CLOCK_TROUBLE_MASK) || c->util_pct < 0 ||
	    (double)c->util_pct < cfg->throttle_busy_min_pct)
		return 0;
	if (c->held_reports < (cfg->throttle_reports > 1 ? cfg->throttle_reports : 1))
		return 0;
	return !(c->sm_mhz >= 0 && c->sm_max_mhz > 0 && c->sm_mhz >= c->sm_max_mhz);
}

static void rule_throttle(struct health_result *r, const struct health_gpu_facts *gf,
			  const struct health_config *cfg)
{
	char names[96], who[64], clock[64];
	size_t i, k, shown = 0, more = 0, used;

	for (i = 0; i < gf->nclocks && i < HEALTH_GPU_CLOCKS_MAX; i++) {
		const struct health_gpu_clock *c = &gf->clocks[i];

		if (!held_down(c, cfg))
			continue;
		if (shown >= SHOWN_MAX) {
			more++;
			continue;
		}
		used = 0;
		names[0] = '\0';
		for (k = 0; k < sizeof trouble / sizeof trouble[0]; k++)
			if (c->reasons & trouble[k].bit)
				health_part(names, sizeof names, &used, "%s", trouble[k].name);
		if (c->sm_mhz >= 0 && c->sm_max_mhz > 0)
			snprintf(clock, sizeof clock, "SM %lld of %lld MHz at ", (long long)c->sm_mhz,
				 (long long)c->sm_max_mhz);
		else if (c->sm_mhz >= 0)
			snprintf(clock, sizeof clock, "SM %lld MHz at ", (long long)c->sm_mhz);
		else
			clock[0] = '\0';
		health_add(r, HEALTH_WARNING, HEALTH_REPAIR_INSPECTION, "throttle: %s %s: %s%lld%% busy",
			   gpu_name(who, sizeof who, c->index, c->pci_bus_id), names, clock,
			   (long long)c->util_pct);
		shown++;
	}
	if (more)
		health_add(r, HEALTH_WARNING, HEALTH_REPAIR_INSPECTION,
			   "throttle: %zu more GPU%s held down", more, more == 1 ? "" : "s");
}

static int is_nvlink(enum health_gpu_counter c)
{
	return c >= HEALTH_NVLINK_REPLAY;
}

/* A fatal AER error or an NVLink recovery (the link went down and was retrained) is
 * critical; replays, CRC, correctable and non-fatal errors are a link degrading. */
static enum health_level rise_level(enum health_gpu_counter c)
{
	return c == HEALTH_AER_FATAL || c == HEALTH_NVLINK_RECOVERY ? HEALTH_CRITICAL
								    : HEALTH_WARNING;
}

static const char *counter_words(enum health_gpu_counter c)
{
	switch (c) {
	case HEALTH_PCIE_REPLAY:
		return "replays";
	case HEALTH_AER_CORRECTABLE:
		return "AER correctable errors";
	case HEALTH_AER_NONFATAL:
		return "AER non-fatal errors";
	case HEALTH_AER_FATAL:
		return "AER fatal errors";
	case HEALTH_NVLINK_REPLAY:
		return "replays";
	case HEALTH_NVLINK_RECOVERY:
		return "recovery errors";
	case HEALTH_NVLINK_CRC:
		return "CRC errors";
	}
	return "errors";
}

static int recent(const struct health_gpu_rise *x, int64_t now, const struct health_config *cfg)
{
	return x->rose_at > 0 && now - x->rose_at <= cfg->link_error_window_s;
}

static int same_group(const struct health_gpu_rise *a, const struct health_gpu_rise *b)
{
	return a->index == b->index && is_nvlink(a->counter) == is_nvlink(b->counter) &&
	       ((!a->pci_bus_id && !b->pci_bus_id) ||
		(a->pci_bus_id && b->pci_bus_id && strcmp(a->pci_bus_id, b->pci_bus_id) == 0));
}

/* One reason per GPU and topic (pcie, nvlink): every counter of it that rose recently. */
static void rule_links(struct health_result *r, const struct health_facts *f, int nvlink,
		       const struct health_config *cfg)
{
	const struct health_gpu_facts *gf = &f->gpu;
	enum health_level rest = HEALTH_OK;
	const char *topic = nvlink ? "nvlink" : "pcie";
	char text[HEALTH_REASON_LEN], who[64];
	size_t i, j, shown = 0, more = 0;

	for (i = 0; i < gf->nrises && i < HEALTH_GPU_RISES_MAX; i++) {
		const struct health_gpu_rise *a = &gf->rises[i];
		enum health_level level = HEALTH_OK;
		size_t used = 0;
		int first = 1;

		if (is_nvlink(a->counter) != nvlink || !recent(a, f->now, cfg))
			continue;
		for (j = 0; j < i && first; j++)
			if (same_group(&gf->rises[j], a) && recent(&gf->rises[j], f->now, cfg))
				first = 0;
		if (!first)
			continue; /* its GPU's reason is made */
		text[0] = '\0';
		for (j = i; j < gf->nrises && j < HEALTH_GPU_RISES_MAX; j++) {
			const struct health_gpu_rise *b = &gf->rises[j];

			if (!same_group(a, b) || !recent(b, f->now, cfg))
				continue;
			if (rise_level(b->counter) > level)
				level = rise_level(b->counter);
			if (nvlink)
				health_part(text, sizeof text, &used, "link %d %s rose %lld -> %lld", b->link,
				     counter_words(b->counter), (long long)b->before, (long long)b->value);
			else
				health_part(text, sizeof text, &used, "%s rose %lld -> %lld",
				     counter_words(b->counter), (long long)b->before, (long long)b->value);
		}
		if (shown >= SHOWN_MAX) {
			more++;
			if (level > rest)
				rest = level;
			continue;
		}
		health_add(r, level, HEALTH_REPAIR_INSPECTION, "%s: %s %s", topic,
			   gpu_name(who, sizeof who, a->index, a->pci_bus_id), text);
		shown++;
	}
	if (more)
		health_add(r, rest, HEALTH_REPAIR_INSPECTION, "%s: %zu more GPU%s with %s errors rising",
			   topic, more, more == 1 ? "" : "s", nvlink ? "NVLink" : "PCIe");
}

/* NVLinks down: fewer active than the GPU ever had, in 2 reports in a row (a link retraining
 * is seen once). Critical: NCCL falls back or fails; a reset or reboot may retrain it, and
 * a link down again after a reboot needs inspection (returned.c). */
static void rule_links_down(struct health_result *r, const struct health_gpu_facts *gf)
{
	char who[64];
	size_t shown = 0, more = 0;

	for (size_t i = 0; i < gf->nlinks_down && i < HEALTH_GPU_CLOCKS_MAX; i++) {
		const struct health_gpu_links *l = &gf->links_down[i];

		if (l->low_reports < 2)
			continue;
		if (shown >= SHOWN_MAX) {
			more++;
			continue;
		}
		health_add(r, HEALTH_CRITICAL, HEALTH_REPAIR_REBOOT,
			   "nvlink: %s %lld of %lld links active",
			   gpu_name(who, sizeof who, l->index, l->pci_bus_id), (long long)l->active,
			   (long long)l->most);
		shown++;
	}
	if (more)
		health_add(r, HEALTH_CRITICAL, HEALTH_REPAIR_REBOOT,
			   "nvlink: %zu more GPU%s with links down", more, more == 1 ? "" : "s");
}

/* A mode change waiting for a GPU reset (ECC or MIG turned on or off by an admin: the node
 * does not yet run as configured), and ECC off on a GPU that has it (uncorrected memory
 * errors go undetected and silently corrupt a run). */
static void rule_modes(struct health_result *r, const struct health_gpu_facts *gf)
{
	char who[64], what[96];
	size_t shown = 0, more = 0;

	for (size_t i = 0; i < gf->nmodes && i < HEALTH_GPU_CLOCKS_MAX; i++) {
		const struct health_gpu_mode *m = &gf->modes[i];
		size_t used = 0;
		int pending = (m->ecc >= 0 && m->ecc != m->ecc_pending) ||
			      (m->mig >= 0 && m->mig != m->mig_pending);

		what[0] = '\0';
		if (m->ecc >= 0 && m->ecc != m->ecc_pending)
			health_part(what, sizeof what, &used, "ECC turns %s",
				    m->ecc_pending ? "on" : "off");
		if (m->mig >= 0 && m->mig != m->mig_pending)
			health_part(what, sizeof what, &used, "MIG turns %s",
				    m->mig_pending ? "on" : "off");
		if (!pending && m->ecc != 0)
			continue;
		if (shown >= SHOWN_MAX) {
			more++;
			continue;
		}
		gpu_name(who, sizeof who, m->index, m->pci_bus_id);
		if (pending)
			health_add(r, HEALTH_WARNING, HEALTH_REPAIR_REBOOT,
				   "mode: %s %s at the next GPU reset", who, what);
		else
			health_add(r, HEALTH_WARNING, HEALTH_REPAIR_NONE,
				   "mode: %s ECC off (uncorrected memory errors go undetected)", who);
		shown++;
	}
	if (more)
		health_add(r, HEALTH_WARNING, HEALTH_REPAIR_NONE, "mode: %zu more GPUs", more);
}

void health_rules_gpu(struct health_result *r, const struct health_facts *f,
		      const struct health_config *cfg)
{
	rule_modes(r, &f->gpu);
	rule_throttle(r, &f->gpu, cfg);
	rule_links(r, f, 0, cfg);
	rule_links(r, f, 1, cfg);
	rule_links_down(r, &f->gpu);
}
