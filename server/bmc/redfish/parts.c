/* SPDX-License-Identifier: Apache-2.0 */
/* Parts and the BMC's clock, read with the sensors: the System's HealthRollup on every read
 * (one GET), and its Memory, Processors and Storage drives only where a rollup over them is
 * not OK (a healthy node costs one request more, not one per DIMM); the manager's DateTime
 * every few minutes. Each part the BMC rates Warning or Critical becomes a sensor row of kind
 * "part" that health reads (server/health/parts_rules.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "bmc/redfish/internal.h"
#include "kiln/error.h"

#define CLOCK_EVERY_MS (240 * 1000) /* the manager's DateTime at most this often */

static const char *status_of(const json_t *obj, const char *key)
{
	return json_string_value(json_object_get(json_object_get(obj, "Status"), key));
}

static int not_ok(const char *health)
{
	return health && (strcasecmp(health, "Warning") == 0 || strcasecmp(health, "Critical") == 0);
}

/* A summary's rollup (MemorySummary, ProcessorSummary: HealthRollup, or Health on older
 * firmware) that is not OK. */
static int summary_bad(const json_t *sys, const char *summary)
{
	const json_t *s = json_object_get(sys, summary);

	return not_ok(status_of(s, "HealthRollup")) || not_ok(status_of(s, "Health"));
}

/* A short string of obj[key] (a BMC's words, capped), else NULL. */
static const char *short_str(const json_t *v)
{
	const char *s = json_string_value(v);

	return s && strlen(s) < 256 ? s : NULL;
}

/* Status {Health, HealthRollup} of obj, as short strings only. */
static json_t *status_digest(const json_t *obj)
{
	json_t *st = json_object_get(obj, "Status"), *out = json_object();
	const char *keys[] = { "Health", "HealthRollup" };

	for (size_t i = 0; out && i < 2; i++) {
		const char *v = short_str(json_object_get(st, keys[i]));

		if (v)
			json_object_set_new(out, keys[i], json_string(v));
	}
	return json_pack("{s:o*}", "Status", out);
}

json_t *rf_system_digest(const json_t *sys)
{
	json_t *d = status_digest(sys);
	const char *sums[] = { "MemorySummary", "ProcessorSummary" };
	const char *links[] = { "Memory", "Processors", "Storage" };

	for (size_t i = 0; d && i < 2; i++)
		json_object_set_new(d, sums[i], status_digest(json_object_get(sys, sums[i])));
	for (size_t i = 0; d && i < 3; i++) {
		const char *l = rf_link(sys, links[i]);

		if (l && strlen(l) < 512)
			json_object_set_new(d, links[i], json_string(l));
	}
	return d;
}

int rf_parts_from_system(json_t *rollups, const json_t *sys)
{
	const char *rollup = status_of(sys, "HealthRollup");
	int want = 0;

	if (!rollup)
		rollup = status_of(sys, "Health");
	if (rollup)
		json_array_append_new(rollups, json_pack("{s:s, s:s}", "name", "system", "health",
							 rollup));
	if (not_ok(rollup))
		want = RF_PARTS_MEMORY | RF_PARTS_PROCESSORS | RF_PARTS_STORAGE;
	if (summary_bad(sys, "MemorySummary"))
		want |= RF_PARTS_MEMORY;
	if (summary_bad(sys, "ProcessorSummary"))
		want |= RF_PARTS_PROCESSORS;
	return want;
}

/* Where the part sits: Location.PartLocation.ServiceLabel (Redfish 2018+), a Drive's
 * PhysicalLocation (older), a Memory's DeviceLocator ("PROC 1 DIMM 8" on iLO). */
static const char *location_of(const json_t *m)
{
	const char *l = json_string_value(json_object_get(
		json_object_get(json_object_get(m, "Location"), "PartLocation"), "ServiceLabel"));

	if (!l)
		l = json_string_value(json_object_get(
			json_object_get(json_object_get(m, "PhysicalLocation"), "PartLocation"),
			"ServiceLabel"));
	if (!l)
		l = json_string_value(json_object_get(m, "DeviceLocator"));
	return l;
}

int rf_part_from_member(json_t *out, const char *type, const json_t *m)
{
	const char *health = status_of(m, "Health"), *state = status_of(m, "State");
	const char *id = json_string_value(json_object_get(m, "Id"));
	const char *name = json_string_value(json_object_get(m, "Name"));
	const char *ptype = json_string_value(json_object_get(m, "ProcessorType"));
	const char *loc = location_of(m);
	json_t *s;

	if (!json_is_object(m) || !not_ok(health) || (state && strcmp(state, "Absent") == 0))
		return 0;
	if (strcmp(type, "processor") == 0 && ptype && strcasecmp(ptype, "GPU") == 0)
		type = "gpu";
	s = json_pack("{s:s, s:s, s:s, s:n, s:s, s:s}", "name", name ? name : id ? id : type, "kind",
		      "part", "part", type, "value", "unit", "", "health", health);
	if (!s)
		return 0;
	if (id)
		json_object_set_new(s, "id", json_string(id));
	if (loc && *loc)
		json_object_set_new(s, "location", json_string(loc));
	if (state)
		json_object_set_new(s, "state", json_string(state));
	json_array_append_new(out, s);
	return 1;
}

int64_t rf_manager_clock(const json_t *manager)
{
	const char *dt = json_string_value(json_object_get(manager, "DateTime"));
	const char *off = json_string_value(json_object_get(manager, "DateTimeLocalOffset"));
	char buf[96];
	size_t len;

	if (!dt)
		return 0;
	len = strlen(dt);
	/* "2024-05-02T10:00:00" without a zone: the local offset says which */
	if (len >= 19 && len < 40 && !strchr(dt + 19, 'Z') && !strchr(dt + 19, '+') &&
	    !strchr(dt + 19, '-') && off && (off[0] == '+' || off[0] == '-')) {
		snprintf(buf, sizeof(buf), "%s%.8s", dt, off);
		return rf_time_parse(buf);
	}
	return rf_time_parse(dt);
}

/* --- the crawl: op->scratch {"sensors", "skipped", "rollups"} ------------------------------ */

static json_t *found(struct rf_op *op)
{
	return json_object_get(op->scratch, "sensors");
}

static json_t *skipped(struct rf_op *op)
{
	return json_object_get(op->scratch, "skipped");
}

static int on_member(struct rf_op *op, const struct rf_reply *r, const char *type)
{
	int ok = rf_reply_usable(r, skipped(op));

	if (ok > 0)
		rf_part_from_member(found(op), type, r->json);
	return ok < 0 ? ok : 0;
}

static int on_memory(struct rf_op *op, const struct rf_reply *r)
{
	return on_member(op, r, "memory");
}

static int on_processor(struct rf_op *op, const struct rf_reply *r)
{
	return on_member(op, r, "processor");
}

static int on_drive(struct rf_op *op, const struct rf_reply *r)
{
	return on_member(op, r, "drive");
}

static int on_storage(struct rf_op *op, const struct rf_reply *r)
{
	size_t i;
	json_t *d;
	int ok = rf_reply_usable(r, skipped(op));

	if (ok <= 0)
		return ok;
	rf_part_from_member(found(op), "storage", r->json);
	json_array_foreach(json_object_get(r->json, "Drives"), i, d) {
		const char *p = rf_link(d, "@odata.id");

		if (json_object_get(d, "Status"))
			rf_part_from_member(found(op), "drive", d); /* expanded already */
		else if (p)
			rf_push(op, "GET", p, NULL, RF_ALLOW_ERROR, on_drive);
	}
	return 0;
}

/* A collection's members: each one as $expand gave it, else one GET each. */
static int members(struct rf_op *op, const struct rf_reply *r, rf_handler each, const char *type)
{
	size_t i;
	json_t *m;
	int ok = rf_reply_usable(r, skipped(op));

	if (ok <= 0)
		return ok;
	json_array_foreach(json_object_get(r->json, "Members"), i, m) {
		const char *p = rf_link(m, "@odata.id");

		if (json_object_get(m, "Status") || json_object_get(m, "Id")) {
			struct rf_reply one = *r;

			one.json = m;
			if (strcmp(type, "storage") == 0)
				on_storage(op, &one);
			else
				rf_part_from_member(found(op), type, m);
		} else if (p) {
			rf_push(op, "GET", p, NULL, RF_ALLOW_ERROR, each);
		}
	}
	return 0;
}

static int on_memory_coll(struct rf_op *op, const struct rf_reply *r)
{
	return members(op, r, on_memory, "memory");
}

static int on_processor_coll(struct rf_op *op, const struct rf_reply *r)
{
	return members(op, r, on_processor, "processor");
}

static int on_storage_coll(struct rf_op *op, const struct rf_reply *r)
{
	return members(op, r, on_storage, "storage");
}

/* A collection asked with $expand=.: a refusal (400, 501) is remembered as discovery's is,
 * and the plain GET follows. */
static int expanded(struct rf_op *op, const struct rf_reply *r, rf_handler plain)
{
	if (r->status == 400 || r->status == 501) {
		char path[1024];
		const char *q = r->path ? strstr(r->path, "$expand") : NULL;

		op->bmc->expand_refused = 1;
		if (!q)
			return 0;
		snprintf(path, sizeof(path), "%.*s", (int)(q - r->path - 1), r->path);
		rf_push(op, "GET", path, NULL, RF_ALLOW_ERROR, plain);
		return 0;
	}
	return plain(op, r);
}

static int on_memory_expanded(struct rf_op *op, const struct rf_reply *r)
{
	return expanded(op, r, on_memory_coll);
}

static int on_processor_expanded(struct rf_op *op, const struct rf_reply *r)
{
	return expanded(op, r, on_processor_coll);
}

static int on_storage_expanded(struct rf_op *op, const struct rf_reply *r)
{
	return expanded(op, r, on_storage_coll);
}

/* GET of a collection, with $expand=. where the service expands (one request for every
 * DIMM). */
static void push_collection(struct rf_op *op, const char *path, rf_handler h)
{
	struct redfish_bmc *b = op->bmc;
	char url[1024];
	rf_handler ex = h == on_memory_coll ? on_memory_expanded
			: h == on_processor_coll ? on_processor_expanded : on_storage_expanded;
	int n;

	if (!path)
		return;
	n = snprintf(url, sizeof(url), "%s%c$expand=.", path, strchr(path, '?') ? '&' : '?');
	if (b->expand_query && !b->expand_refused && n > 0 && (size_t)n < sizeof(url))
		rf_push(op, "GET", url, NULL, RF_ALLOW_ERROR, ex);
	else
		rf_push(op, "GET", path, NULL, RF_ALLOW_ERROR, h);
}

/* The system's rollups, and the members of what is not OK. */
static void system_parts(struct rf_op *op, const json_t *sys)
{
	int want = rf_parts_from_system(json_object_get(op->scratch, "rollups"), sys);

	if (want & RF_PARTS_MEMORY)
		push_collection(op, rf_link(sys, "Memory"), on_memory_coll);
	if (want & RF_PARTS_PROCESSORS)
		push_collection(op, rf_link(sys, "Processors"), on_processor_coll);
	if (want & RF_PARTS_STORAGE)
		push_collection(op, rf_link(sys, "Storage"), on_storage_coll);
}

static int on_system(struct rf_op *op, const struct rf_reply *r)
{
	int ok = rf_reply_usable(r, skipped(op));

	if (ok <= 0)
		return ok;
	system_parts(op, r->json);
	return 0;
}

static int on_manager(struct rf_op *op, const struct rf_reply *r)
{
	struct redfish_bmc *b = op->bmc;
	int ok = rf_reply_usable(r, skipped(op));
	int64_t bmc, now_ms = rf_now_ms();

	if (ok <= 0)
		return ok;
	bmc = rf_manager_clock(r->json);
	b->clock_read_ms = now_ms; /* a manager without a clock is not asked again at once */
	if (bmc <= 0)
		return 0;
	b->clock_known = 1;
	b->clock_skew_s = bmc - (int64_t)time(NULL);
	return 0;
}

/* A power read this recent stands for the system's state (the poller's chain reads power,
 * then sensors, within the same interval). */
#define SYSTEM_DOC_FRESH_MS 60000

void rf_parts_start(struct rf_op *op)
{
	struct redfish_bmc *b = op->bmc;

	json_object_set_new(op->scratch, "rollups", json_array());
	/* the power read before this one (the poller's chain) had the system: no second GET */
	if (b->system_doc && json_object_get(b->system_doc, "Status") &&
	    rf_now_ms() - b->system_doc_ms < SYSTEM_DOC_FRESH_MS)
		system_parts(op, b->system_doc);
	else if (b->system)
		rf_push(op, "GET", b->system, NULL, RF_ALLOW_ERROR, on_system);
	if (b->manager && (b->clock_read_ms == 0 || rf_now_ms() - b->clock_read_ms >= CLOCK_EVERY_MS))
		rf_push(op, "GET", b->manager, NULL, RF_ALLOW_ERROR, on_manager);
}

void rf_parts_finish(struct rf_op *op, json_t *data)
{
	struct redfish_bmc *b = op->bmc;
	json_t *rollups = json_object_get(op->scratch, "rollups");

	if (json_array_size(rollups) > 0)
		json_object_set(data, "rollups", rollups);
	if (b->clock_known)
		json_object_set_new(data, "bmc_clock",
				    json_pack("{s:I, s:I}", "skew_s", (json_int_t)b->clock_skew_s,
					      "read", (json_int_t)((int64_t)time(NULL) -
								   (rf_now_ms() - b->clock_read_ms) / 1000)));
}
