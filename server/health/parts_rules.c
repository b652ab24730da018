/* SPDX-License-Identifier: Apache-2.0 */
/* The parts rules: every part the BMC rates (fans, PSUs, memory, processors, drives...), its
 * HealthRollup, and the BMC's clock. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "health/rules.h"

/* A BMC's rating: Redfish's "OK"/"Warning"/"Critical", FreeIPMI's "ok"/"warning"/"critical"
 * (kilnd's IPMI driver), as 0, 1, 2; anything else (null, "unknown") is no rating. */
static int rating(const char *h)
{
	if (!h)
		return 0;
	if (strcasecmp(h, "critical") == 0)
		return 2;
	if (strcasecmp(h, "warning") == 0)
		return 1;
	return 0;
}

static const char *rating_word(int level)
{
	return level >= 2 ? "Critical" : level == 1 ? "Warning" : "OK";
}

static const char *str(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* A fan slot with nothing in it: Redfish's State (the driver drops "Absent" already; some
 * BMCs say "Disabled" or "UnavailableOffline" of an empty slot) or IPMI's discrete states. */
static int fan_not_installed(const json_t *s)
{
	const char *state = str(s, "state");
	json_t *states = json_object_get(s, "states"), *v;
	size_t i;

	if (state && (strcasecmp(state, "Absent") == 0 || strcasecmp(state, "Disabled") == 0 ||
		      strcasecmp(state, "UnavailableOffline") == 0))
		return 1;
	json_array_foreach(states, i, v) {
		const char *t = json_string_value(v);

		if (t && (strcasestr(t, "absent") || strcasestr(t, "not installed") ||
			  strcasestr(t, "removed")))
			return 1;
	}
	return 0;
}

static void part_add(struct health_parts_facts *p, const json_t *s, const char *type, int level,
		     int zero_rpm)
{
	struct health_part *part;
	const char *id = str(s, "id"), *name = str(s, "name"), *loc = str(s, "location");

	if (p->nparts >= HEALTH_PARTS_MAX) {
		p->parts_more++;
		return;
	}
	part = &p->parts[p->nparts++];
	snprintf(part->type, sizeof(part->type), "%s", type);
	snprintf(part->id, sizeof(part->id), "%s", id ? id : "");
	snprintf(part->name, sizeof(part->name), "%s", name ? name : "");
	snprintf(part->location, sizeof(part->location), "%s", loc ? loc : "");
	part->level = level;
	part->zero_rpm = zero_rpm;
}

/*
 * The sensors JSON's parts: {"sensors":[{"name","kind","health","value","unit",...}],
 * "rollups":[{"name","health"}], "bmc_clock":{"skew_s","read"}}. A row of kind "part" (a
 * Memory, Processor or Drive resource the Redfish driver found not OK: "part" its type, "id",
 * "location") or "fan" ("id", "location", "state"; IPMI: "states") the BMC rates Warning or
 * Critical, a fan at 0 RPM, and a row of any other kind the BMC rates Critical (an IPMI
 * sensor in the Critical state) are parts; a PSU is rule_psu's (health.c), not said twice.
 */
void health_parts_sensor_facts(struct health_facts *f, json_t *sensors)
{
	struct health_parts_facts *p = &f->parts;
	json_t *s, *clock;
	size_t i;

	json_array_foreach(json_object_get(sensors, "sensors"), i, s) {
		const char *kind = str(s, "kind"), *name = str(s, "name"), *unit = str(s, "unit");
		json_t *value = json_object_get(s, "value");
		int level = rating(str(s, "health")), zero = 0;

		if (!kind)
			continue;
		if (level > p->worst_read)
			p->worst_read = level;
		if (strcmp(kind, "psu") == 0 || (name && strcasestr(name, "redundan")))
			continue;
		if (strcmp(kind, "fan") == 0) {
			zero = unit && strcmp(unit, "RPM") == 0 && json_is_number(value) &&
			       json_number_value(value) == 0 && !fan_not_installed(s);
			if (level > 0 || zero)
				part_add(p, s, "fan", level, zero);
		} else if (strcmp(kind, "part") == 0) {
			const char *type = str(s, "part");

			if (level > 0)
				part_add(p, s, type ? type : "part", level, 0);
		} else if (level == 2) {
			part_add(p, s, "sensor", level, 0);
		}
	}
	json_array_foreach(json_object_get(sensors, "rollups"), i, s) {
		int level = rating(str(s, "health"));
		const char *name = str(s, "name");

		if (level > p->rollup_level) {
			p->rollup_level = level;
			snprintf(p->rollup_name, sizeof(p->rollup_name), "%s", name ? name : "system");
		}
	}
	clock = json_object_get(sensors, "bmc_clock");
	if (json_is_integer(json_object_get(clock, "skew_s"))) {
		p->clock_known = 1;
		p->clock_skew_s = json_integer_value(json_object_get(clock, "skew_s"));
		p->clock_read = json_integer_value(json_object_get(clock, "read"));
	}
}

/* "Fan.Embedded.2 (System Board Fan2A)": the Id (iDRAC's "0x17||Fan.Embedded.2" less its
 * sensor number; a bare list index "3" is no name), then the location or the name. */
static void part_label(char *out, size_t n, const struct health_part *part)
{
	const char *id = part->id, *bar = strstr(id, "||"), *other;
	size_t digits = strspn(id, "0123456789");

	if (bar)
		id = bar + 2;
	if (!id[0] || digits == strlen(id))
		id = "";
	other = part->location[0] ? part->location : part->name;
	if (!id[0]) {
		id = part->name[0] ? part->name : part->location;
		other = part->location[0] && strcmp(part->location, id) != 0 ? part->location : "";
	}
	if (other[0] && strcmp(other, id) != 0)
		snprintf(out, n, "%s (%s)", id[0] ? id : "?", other);
	else
		snprintf(out, n, "%s", id[0] ? id : "?");
}

/* "2d 3h", "5h 12m", "7m 30s", "45s". */
static void span_text(char *out, size_t n, int64_t s)
{
	int64_t d = s / 86400, h = s % 86400 / 3600, m = s % 3600 / 60, sec = s % 60;

	if (d > 0)
		snprintf(out, n, "%lldd %lldh", (long long)d, (long long)h);
	else if (h > 0)
		snprintf(out, n, "%lldh %lldm", (long long)h, (long long)m);
	else if (m > 0)
		snprintf(out, n, "%lldm %llds", (long long)m, (long long)sec);
	else
		snprintf(out, n, "%llds", (long long)sec);
}

static void rule_part(struct health_result *r, const struct health_facts *f,
		      const struct health_part *part)
{
	char label[200];
	enum health_level level = part->level >= 2 ? HEALTH_CRITICAL : HEALTH_WARNING;

	/* a fan that stands still with the host off, and the BMC not minding, is no fault */
	if (part->level == 0 && part->zero_rpm && f->power == 2)
		return;
	part_label(label, sizeof(label), part);
	if (strcmp(part->type, "fan") == 0 && part->zero_rpm && part->level > 0)
		health_add(r, level, HEALTH_REPAIR_INSPECTION, "fan: %s at 0 RPM, %s", label,
			   rating_word(part->level));
	else if (strcmp(part->type, "fan") == 0 && part->zero_rpm)
		health_add(r, level, HEALTH_REPAIR_INSPECTION, "fan: %s at 0 RPM", label);
	else if (strcmp(part->type, "fan") == 0)
		health_add(r, level, HEALTH_REPAIR_INSPECTION, "fan: %s %s", label,
			   rating_word(part->level));
	else
		health_add(r, level, HEALTH_REPAIR_INSPECTION, "part: %s %s %s", part->type, label,
			   rating_word(part->level));
}

void health_rules_parts(struct health_result *r, const struct health_facts *f,
			const struct health_config *cfg)
{
	const struct health_parts_facts *p = &f->parts;
	int worst = p->worst_read;

	for (size_t i = 0; i < p->nparts; i++) {
		rule_part(r, f, &p->parts[i]);
		if (p->parts[i].zero_rpm && worst < 1)
			worst = 1;
	}
	if (p->parts_more > 0)
		health_add(r, HEALTH_WARNING, HEALTH_REPAIR_INSPECTION,
			   "part: %zu more parts the BMC rates not OK (see kiln sensors)", p->parts_more);
	/* the BMC knows of a fault in something kiln does not read (a riser, a backplane, a
	 * BMC-internal part): the rollup is the one hint */
	if (p->rollup_level > worst)
		health_add(r, HEALTH_WARNING, HEALTH_REPAIR_INSPECTION,
			   "part: the BMC rates the %s %s (HealthRollup) but no part kiln reads is: "
			   "see the BMC's log", p->rollup_name[0] ? p->rollup_name : "system",
			   rating_word(p->rollup_level));
	if (p->clock_known && cfg->bmc_clock_skew_max_s > 0 &&
	    llabs((long long)p->clock_skew_s) > cfg->bmc_clock_skew_max_s) {
		char span[32];

		span_text(span, sizeof(span), llabs((long long)p->clock_skew_s));
		health_add(r, HEALTH_WARNING, HEALTH_REPAIR_NONE,
			   "bmc clock: %s %s kilnd's (log times are the BMC's)", span,
			   p->clock_skew_s < 0 ? "behind" : "ahead of");
	}
}
