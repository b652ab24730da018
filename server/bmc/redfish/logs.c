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

size_t rf_log_entries_append(json_t *out, json_t *seen, const json_t *coll, const char *service,
			     int64_t since)
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
		if (since > 0 && ts < since)
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
	size_t added = rf_log_entries_append(json_object_get(op->data, "entries"), op->scratch,
					     r->json, service[0] ? service : NULL,
					     op->op.sel_since);
	const char *next = json_string_value(json_object_get(r->json, "Members@odata.nextLink"));
	/* pages whose entries we have all seen end the walk (a BMC that ignores $skip) */
	if (next && added > 0 && op->index++ < LOG_PAGES_MAX)
		rf_push(op, "GET", next, NULL, RF_ALLOW_ERROR | RF_LOG_PAGE, on_entries);
	return 0;
}

static int on_service(struct rf_op *op, const struct rf_reply *r)
{
	const char *entries = rf_link(r->json, "Entries");
	if (entries)
		rf_push(op, "GET", entries, NULL, RF_ALLOW_ERROR | RF_LOG_PAGE, on_entries);
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

int rf_logs_start(struct rf_op *op)
{
	op->data = json_pack("{s:[], s:[]}", "entries", "unavailable");
	op->scratch = json_object(); /* ids seen */
	if (op->bmc->logs_system)
		rf_push(op, "GET", op->bmc->logs_system, NULL, 0, on_services);
	if (op->bmc->logs_manager)
		rf_push(op, "GET", op->bmc->logs_manager, NULL, 0, on_services);
	if (!op->bmc->logs_system && !op->bmc->logs_manager)
		return kiln_fail(KILN_ENOTFOUND, "no LogServices on this BMC");
	return 0;
}
