/* Redfish event logs: entries of the system's and the manager's LogServices (Sel, Lclog, IML,
 * IEL, EventLog, ...), normalised, optionally only those since a time. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "bmc/redfish/internal.h"
#include "kiln/error.h"

#define LOG_PAGES_MAX 50

/* Services that are not event logs: the BMC's own OS journal, host console text, crash
 * dumps, iDRAC's list of current faults (derived, not events) and iLO's security log. */
int rf_log_service_wanted(const char *id)
{
	static const char *const skip[] = {"Journal", "HostLogger", "Crashdump", "Dump",
					   "FaultList", "SL", "AuditLog", NULL};
	if (!id)
		return 0;
	for (size_t i = 0; skip[i]; i++)
		if (strcasecmp(id, skip[i]) == 0)
			return 0;
	return strcasestr(id, "Dump") == NULL;
}

int64_t rf_time_parse(const char *s)
{
	struct tm tm = {0};
	int consumed = 0;
	if (!s || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
			 &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &consumed) != 6)
		return 0;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	const char *p = s + consumed;
	if (*p == '.')
		for (p++; isdigit((unsigned char)*p); p++)
			;
	int64_t t = (int64_t)timegm(&tm);
	if (*p == '+' || *p == '-') {
		int hh = 0, mm = 0;
		if (sscanf(p + 1, "%2d:%2d", &hh, &mm) >= 1) {
			int64_t off = (int64_t)hh * 3600 + (int64_t)mm * 60;
			t += *p == '+' ? -off : off;
		}
	}
	return t;
}

static const char *severity_of(const char *s)
{
	if (!s)
		return "info";
	if (strcasecmp(s, "Critical") == 0)
		return "critical";
	if (strcasecmp(s, "Warning") == 0)
		return "warning";
	return "info";
}

size_t rf_log_entries_append(json_t *out, json_t *out_meta, json_t *seen, const json_t *coll,
			     const char *service, int64_t since)
{
	size_t added = 0;
	size_t i;
	json_t *e;
	json_array_foreach(json_object_get(coll, "Members"), i, e) {
		const char *eid = json_string_value(json_object_get(e, "Id"));
		const char *odata = json_string_value(json_object_get(e, "@odata.id"));
		char id[300];
		if (!eid && !odata)
			continue;
		snprintf(id, sizeof(id), "%s/%s", service ? service : "log", eid ? eid : odata);
		if (json_object_get(seen, id))
			continue;
		json_object_set_new(seen, id, json_true());
		const char *created = json_string_value(json_object_get(e, "Created"));
		int64_t ts = rf_time_parse(created);
		json_t *newest = json_object_get(out_meta, "newest");
		if (ts > json_integer_value(newest))
			json_object_set_new(out_meta, "newest", json_integer(ts));
		/* an entry without a time cannot be told old: the caller's dedup decides */
		if (since > 0 && ts > 0 && ts < since)
			continue;
		const char *msg = json_string_value(json_object_get(e, "Message"));
		if (!msg)
			msg = json_string_value(json_object_get(e, "Name"));
		const char *mid = json_string_value(json_object_get(e, "MessageId"));
		json_t *o = json_pack("{s:s, s:s?, s:I, s:s, s:s, s:s?, s:s?}", "id", id, "time",
				      created, "timestamp", (json_int_t)ts, "severity",
				      severity_of(json_string_value(json_object_get(e, "Severity"))),
				      "message", msg ? msg : "", "message_id", mid, "service", service);
		if (o) {
			json_array_append_new(out, o);
			added++;
		}
	}
	return added;
}

/* The service of an Entries collection: the segment before "Entries". */
static void service_from_path(char *out, size_t n, const char *path)
{
	out[0] = '\0';
	if (!path)
		return;
	const char *e = strcasestr(path, "/Entries");
	if (!e)
		return;
	const char *start = e;
	while (start > path && start[-1] != '/')
		start--;
	size_t m = (size_t)(e - start) < n - 1 ? (size_t)(e - start) : n - 1;
	memcpy(out, start, m);
	out[m] = '\0';
}

static int on_entries(struct rf_op *op, const struct rf_reply *r)
{
	char service[128];
	if (r->status >= 400) {
		json_array_append_new(json_object_get(op->data, "unavailable"),
				      json_string(r->status == 404 ? "entries not found" : "error"));
		return 0;
	}
	service_from_path(service, sizeof(service),
			  json_string_value(json_object_get(r->json, "@odata.id")));
	size_t seen_before = json_object_size(op->scratch);
	rf_log_entries_append(json_object_get(op->data, "entries"), op->data, op->scratch, r->json,
			      service[0] ? service : NULL, op->op.sel_since);
	const char *next = json_string_value(json_object_get(r->json, "Members@odata.nextLink"));
	/* pages whose entries we have all seen end the walk (a BMC that ignores $skip); a page
	 * of entries older than since goes on: oldest first, the new ones are on the last */
	if (next && json_object_size(op->scratch) > seen_before && op->index++ < LOG_PAGES_MAX)
		rf_push(op, "GET", next, NULL, RF_ALLOW_ERROR | RF_LOG_PAGE, on_entries);
	return 0;
}

/* The first page of a service's entries: its Members@odata.count is the service's total
 * (the caller tells a cleared log by the total dropping). */
static int on_entries_first(struct rf_op *op, const struct rf_reply *r)
{
	json_t *n = json_object_get(r->json, "Members@odata.count");
	json_t *count = json_object_get(op->data, "count");
	if (r->status < 300 && json_is_integer(n) && json_integer_value(count) >= 0)
		json_object_set_new(op->data, "count",
				    json_integer(json_integer_value(count) + json_integer_value(n)));
	else
		json_object_set_new(op->data, "count", json_integer(-1)); /* not known */
	return on_entries(op, r);
}

static int on_service(struct rf_op *op, const struct rf_reply *r)
{
	const char *entries = rf_link(r->json, "Entries");
	if (entries)
		rf_push(op, "GET", entries, NULL, RF_ALLOW_ERROR | RF_LOG_PAGE, on_entries_first);
	return 0;
}

static int on_services(struct rf_op *op, const struct rf_reply *r)
{
	size_t i;
	json_t *m;
	json_array_foreach(json_object_get(r->json, "Members"), i, m) {
		const char *p = rf_link(m, "@odata.id");
		char id[128];
		if (!p)
			continue;
		size_t len = strlen(p);
		while (len > 1 && p[len - 1] == '/')
			len--;
		size_t start = len;
		while (start > 0 && p[start - 1] != '/')
			start--;
		snprintf(id, sizeof(id), "%.*s", (int)(len - start), p + start);
		if (rf_log_service_wanted(id))
			rf_push(op, "GET", p, NULL, 0, on_service);
	}
	return 0;
}

/* An empty answer says why: what the CLI prints instead of an empty table. */
static int logs_finish(struct rf_op *op)
{
	if (json_array_size(json_object_get(op->data, "entries")) == 0 &&
	    !json_object_get(op->data, "note"))
		json_object_set_new(op->data, "note",
				    json_string(op->op.sel_since > 0
							? "no event log entries in that time"
							: "the BMC's event logs are empty"));
	return 0;
}

int rf_logs_start(struct rf_op *op)
{
	op->finish = logs_finish;
	op->data = json_pack("{s:[], s:[], s:I, s:I}", "entries", "unavailable", "count",
			     (json_int_t)0, "newest", (json_int_t)0);
	op->scratch = json_object(); /* ids seen */
	if (op->bmc->logs_system)
		rf_push(op, "GET", op->bmc->logs_system, NULL, 0, on_services);
	if (op->bmc->logs_manager)
		rf_push(op, "GET", op->bmc->logs_manager, NULL, 0, on_services);
	/* a BMC without logs has no entries: an empty list, not a failure */
	if (!op->bmc->logs_system && !op->bmc->logs_manager)
		json_object_set_new(op->data, "note", json_string("no event logs on this BMC"));
	return 0;
}
