/* SPDX-License-Identifier: Apache-2.0 */
/* Redfish event logs: entries of the LogServices of the system, its manager, the host's HGX
 * baseboard and the system's chassis (Sel, Lclog, IML, IEL, EventLog, a DGX's chassis SEL, an
 * HGX GPU's XID log, ...), each entry once, normalised, optionally only those since a time. */
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
 * dumps, iDRAC's list of current faults (derived, not events), iLO's security log and the
 * audit logs of logins (Lenovo's XCC logs every Redfish session there, kiln's own too: each
 * would be an event). */
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

/* The service an entry or an Entries collection belongs to: the path before its last
 * "/Entries" segment ("/redfish/v1/Systems/1/LogServices/Log1" of ".../Log1/Entries/3");
 * 0 when the path has none. */
static int service_of(char *out, size_t n, const char *path)
{
	const char *p, *at = NULL;

	for (p = path ? strcasestr(path, "/Entries") : NULL; p; p = strcasestr(p + 1, "/Entries")) {
		char next = p[strlen("/Entries")];

		if (next == '\0' || next == '/' || next == '?' || next == '#')
			at = p;
	}
	if (!at || at == path)
		return 0;
	snprintf(out, n, "%.*s", (int)(at - path), path);
	return 1;
}

/* The segment of path that follows the segment named after ("Chassis"), into out. */
static int segment_after(char *out, size_t n, const char *path, const char *after)
{
	size_t alen = strlen(after);

	for (const char *p = path; p && (p = strcasestr(p, after)); p += alen) {
		if ((p > path && p[-1] != '/') || p[alen] != '/')
			continue;
		const char *id = p + alen + 1;
		size_t len = strcspn(id, "/#?");

		if (len == 0)
			continue;
		snprintf(out, n, "%.*s", (int)len, id);
		return 1;
	}
	return 0;
}

/* 1 when path lies under one of the resources kiln read logs of before (ids->host). */
static int under_host(const struct rf_log_ids *ids, const char *path_key)
{
	char key[1024];

	for (size_t i = 0; i < sizeof(ids->host) / sizeof(ids->host[0]); i++) {
		size_t len;

		if (!ids->host[i])
			continue;
		rf_path_key(key, sizeof(key), ids->host[i]);
		len = strlen(key);
		if (len > 0 && strncmp(path_key, key, len) == 0 && path_key[len] == '/')
			return 1;
	}
	return 0;
}

const char *rf_log_label(struct rf_log_ids *ids, const char *service_path)
{
	char key[1024], label[300];
	const char *have, *rel, *seg;
	size_t len;

	rf_path_key(key, sizeof(key), service_path);
	have = json_string_value(json_object_get(ids->labels, key));
	if (have)
		return have;
	/* the last segment, as kiln has always named a service */
	len = strcspn(service_path, "#?");
	while (len > 1 && service_path[len - 1] == '/')
		len--;
	seg = service_path + len;
	while (seg > service_path && seg[-1] != '/')
		seg--;
	snprintf(label, sizeof(label), "%.*s", (int)(service_path + len - seg), seg);
	if (!label[0] || json_object_get(ids->taken, label) || !under_host(ids, key)) {
		/* elsewhere, or taken by a service read before: its path from the root, less
		 * "LogServices/" */
		rel = strcasestr(service_path, "/redfish/v1/");
		rel = rel ? rel + strlen("/redfish/v1/") : service_path;
		const char *ls = strcasestr(rel, "/LogServices/");
		if (ls && ls < service_path + len)
			snprintf(label, sizeof(label), "%.*s/%.*s", (int)(ls - rel), rel,
				 (int)(service_path + len - ls - strlen("/LogServices/")),
				 ls + strlen("/LogServices/"));
		else
			snprintf(label, sizeof(label), "%.*s", (int)(service_path + len - rel), rel);
		for (int i = 2; json_object_get(ids->taken, label) && i < 100; i++) {
			size_t l = strlen(label);

			snprintf(label + l, sizeof(label) - l, "~%d", i);
		}
	}
	json_object_set_new(ids->taken, label, json_true());
	json_object_set_new(ids->labels, key, json_string(label));
	return json_string_value(json_object_get(ids->labels, key));
}

/* The number after "XID" (or "SXID": *sxid) as a word in text: "XID 79 GPU has fallen off
 * the bus", "SXID 20034 Fatal ...", the driver's "Xid (PCI:0000:3b:00): 79, pid=...". */
int rf_log_xid_parse(const char *text, long *out_xid, int *out_sxid)
{
	for (const char *p = text ? strcasestr(text, "xid") : NULL; p; p = strcasestr(p + 1, "xid")) {
		int sxid = p > text && (p[-1] == 'S' || p[-1] == 's');
		const char *before = sxid ? p - 1 : p;
		const char *q = p + 3;
		long v = 0;
		int digits = 0;

		if (before > text && isalnum((unsigned char)before[-1]))
			continue;
		if (isalnum((unsigned char)*q) || *q == '_')
			continue;
		while (*q == ' ' || *q == ':')
			q++;
		if (*q == '(') { /* the kernel's "(PCI:...)" */
			q = strchr(q, ')');
			if (!q)
				continue;
			q++;
			while (*q == ' ' || *q == ':')
				q++;
		}
		for (; isdigit((unsigned char)*q) && digits < 9; q++, digits++)
			v = v * 10 + (*q - '0');
		if (digits == 0 || isdigit((unsigned char)*q))
			continue;
		*out_xid = v;
		*out_sxid = sxid;
		return 1;
	}
	return 0;
}

/* A GPU ("GPU_SXM_5", "GPU_1") or NVSwitch ("NVSwitch_1") name at the start of word,
 * "HGX_" dropped, into out (len: how much of word it is). */
static int device_word(char *out, size_t n, const char *word, size_t len)
{
	size_t stem;

	if (len > 4 && strncasecmp(word, "HGX_", 4) == 0) {
		word += 4;
		len -= 4;
	}
	if (len > 3 && strncasecmp(word, "GPU", 3) == 0)
		stem = 3;
	else if (len > 8 && strncasecmp(word, "NVSwitch", 8) == 0)
		stem = 8;
	else
		return 0;
	if (word[stem] != '_' && !isdigit((unsigned char)word[stem]))
		return 0; /* "GPUs", "GPUDirect" */
	snprintf(out, n, "%.*s", (int)len, word);
	return 1;
}

/* The first device word of text (words split at spaces, quotes and slashes). */
static int device_in(char *out, size_t n, const char *text, int last)
{
	int found = 0;

	while (text && *text) {
		size_t skip = strspn(text, " /'\"(),.:;[]");
		size_t len;

		text += skip;
		len = strcspn(text, " /'\"(),.:;[]");
		if (len && device_word(out, n, text, len)) {
			found = 1;
			if (!last)
				return 1;
		}
		text += len;
	}
	return found;
}

/* Where an entry names an Xid: "xid" (or "sxid") and the "gpu" (or "nvswitch") it is about,
 * from OriginOfCondition, else MessageArgs' first, else the message, else the chassis of the
 * XID service that listed it. */
static void xid_tie(json_t *o, const json_t *e, const char *listed_in)
{
	const char *msg = json_string_value(json_object_get(e, "Message"));
	const char *origin = rf_link(json_object_get(e, "Links"), "OriginOfCondition");
	json_t *args = json_object_get(e, "MessageArgs"), *a;
	char dev[128] = "";
	long xid = 0;
	int sxid = 0, found = 0;
	size_t i;

	found = rf_log_xid_parse(msg, &xid, &sxid);
	json_array_foreach(args, i, a)
		if (!found)
			found = rf_log_xid_parse(json_string_value(a), &xid, &sxid);
	if (!found)
		return;
	if (!(origin && device_in(dev, sizeof(dev), origin, 1)) &&
	    !device_in(dev, sizeof(dev), json_string_value(json_array_get(args, 0)), 0) &&
	    !device_in(dev, sizeof(dev), msg, 0)) {
		char chassis[128];

		if (!(listed_in && segment_after(chassis, sizeof(chassis), listed_in, "Chassis") &&
		      device_word(dev, sizeof(dev), chassis, strlen(chassis))))
			dev[0] = '\0';
	}
	json_object_set_new(o, sxid ? "sxid" : "xid", json_integer(xid));
	if (dev[0])
		json_object_set_new(o, strncasecmp(dev, "NVSwitch", 8) == 0 ? "nvswitch" : "gpu",
				    json_string(dev));
}

uint64_t rf_log_entry_hash(const char *id, const char *created)
{
	uint64_t h = 14695981039346656037ULL; /* FNV-1a */

	for (const char *p = id ? id : ""; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ULL;
	h = (h ^ '\n') * 1099511628211ULL;
	for (const char *p = created ? created : ""; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ULL;
	return h;
}

static int hash_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

uint64_t *rf_log_kept_list(const json_t *kept, size_t *n)
{
	size_t count = json_object_size(kept), i = 0;
	uint64_t *list;
	const char *k;
	json_t *v;

	*n = 0;
	if (count == 0 || !(list = malloc(count * sizeof(*list))))
		return NULL;
	json_object_foreach((json_t *)kept, k, v)
		list[i++] = strtoull(k, NULL, 16);
	qsort(list, i, sizeof(*list), hash_cmp);
	*n = i;
	return list;
}

static void kept_mark(json_t *kept, uint64_t h)
{
	char key[20];

	if (!kept)
		return;
	snprintf(key, sizeof(key), "%016llx", (unsigned long long)h);
	json_object_set_new(kept, key, json_true());
}

/* Whether the last read listed the entry (by arrival), or its time is before since. */
static int entry_old(struct rf_log_ids *ids, const char *id, const char *created, int64_t ts,
		     int64_t since)
{
	uint64_t h = rf_log_entry_hash(id, created);

	/* what this read lists is the next read's "before", whichever way it is told old */
	kept_mark(ids->kept, h);
	if (ids->by_arrival)
		return ids->nbefore > 0 &&
		       bsearch(&h, ids->before, ids->nbefore, sizeof(h), hash_cmp) != NULL;
	/* the first read of this process (after a restart): by time, as the poller's cursor
	 * says (an entry older than the cursor is not asked for again: an old log service
	 * kiln did not store); an entry without a time cannot be told old: the caller's
	 * dedup decides */
	return since > 0 && ts > 0 && ts < since;
}

size_t rf_log_entries_append(json_t *out, json_t *out_meta, struct rf_log_ids *ids,
			     const json_t *coll, const char *service_path, int64_t since,
			     size_t *out_dups)
{
	const char *listed_label = service_path ? rf_log_label(ids, service_path) : "log";
	char key[1024], own[1024];
	size_t added = 0;
	size_t i;
	json_t *e;

	json_array_foreach(json_object_get(coll, "Members"), i, e) {
		const char *eid = json_string_value(json_object_get(e, "Id"));
		const char *odata = json_string_value(json_object_get(e, "@odata.id"));
		const char *label = listed_label;
		char id[300];

		if (!eid && !odata)
			continue;
		/* an entry that is another service's (a DGX's XID view lists the HGX
		 * EventLog's): its id is that service's, and it is listed once */
		if (odata && service_of(own, sizeof(own), odata) &&
		    !(service_path && rf_path_equal(own, service_path)))
			label = rf_log_label(ids, own);
		if (odata) {
			key[0] = '@';
			rf_path_key(key + 1, sizeof(key) - 1, odata);
		}
		snprintf(id, sizeof(id), "%s/%s", label ? label : "log", eid ? eid : odata);
		if ((odata && json_object_get(ids->seen, key)) || json_object_get(ids->seen, id)) {
			if (out_dups)
				(*out_dups)++;
			continue;
		}
		if (odata)
			json_object_set_new(ids->seen, key, json_true());
		json_object_set_new(ids->seen, id, json_true());
		const char *created = json_string_value(json_object_get(e, "Created"));
		int64_t ts = rf_time_parse(created);
		json_t *newest = json_object_get(out_meta, "newest");
		if (ts > json_integer_value(newest))
			json_object_set_new(out_meta, "newest", json_integer(ts));
		if (entry_old(ids, id, created, ts, since))
			continue;
		const char *msg = json_string_value(json_object_get(e, "Message"));
		if (!msg)
			msg = json_string_value(json_object_get(e, "Name"));
		const char *mid = json_string_value(json_object_get(e, "MessageId"));
		json_t *o = json_pack("{s:s, s:s?, s:I, s:s, s:s, s:s?, s:s?}", "id", id, "time",
				      created, "timestamp", (json_int_t)ts, "severity",
				      severity_of(json_string_value(json_object_get(e, "Severity"))),
				      "message", msg ? msg : "", "message_id", mid, "service", label);
		if (o) {
			xid_tie(o, e, service_path);
			json_array_append_new(out, o);
			added++;
		}
	}
	return added;
}

/* --- the crawl --------------------------------------------------------------------------- */

/*
 * op->data: {"entries", "services" (the labels of the services read), "count", "newest",
 * "skipped"}; op->scratch: {"seen", "labels", "taken" (struct rf_log_ids), "asked" (paths
 * asked for: a collection or service linked from several resources is read once), "pages"
 * (per service), "order" (the Entries collections read, for b->log_entries), "broken" (a
 * collection or service that did not read: the order is not kept)}.
 */
static struct rf_log_ids log_ids(struct rf_op *op)
{
	struct redfish_bmc *b = op->bmc;
	int poller = op->op.background != 0;

	return (struct rf_log_ids){ json_object_get(op->scratch, "labels"),
				    json_object_get(op->scratch, "taken"),
				    json_object_get(op->scratch, "seen"),
				    { b->system, b->manager },
				    b->log_seen, b->nlog_seen, poller && b->log_seen_known,
				    poller ? json_object_get(op->scratch, "kept") : NULL };
}

/* After the poller's read: what it listed is what the next one tells new entries from. A
 * read that missed a service keeps what the last one knew as well (the missed service's
 * entries are not new next time). */
static void log_seen_keep(struct rf_op *op, int complete)
{
	struct redfish_bmc *b = op->bmc;
	json_t *kept = json_object_get(op->scratch, "kept");
	char key[20];
	size_t n = 0;
	uint64_t *list;

	if (!op->op.background)
		return;
	if (!complete) {
		for (size_t i = 0; i < b->nlog_seen; i++) {
			snprintf(key, sizeof(key), "%016llx", (unsigned long long)b->log_seen[i]);
			json_object_set_new(kept, key, json_true());
		}
	}
	list = rf_log_kept_list(kept, &n);
	if (!list && json_object_size(kept) > 0)
		return; /* out of memory: the old list stays */
	free(b->log_seen);
	b->log_seen = list;
	b->nlog_seen = n;
	b->log_seen_known = 1;
}

static json_t *skipped(struct rf_op *op)
{
	return json_object_get(op->data, "skipped");
}

/* GET of path once per read; 0 when it was asked for already. */
static int push_once(struct rf_op *op, const char *path, int flags, rf_handler h)
{
	json_t *asked = json_object_get(op->scratch, "asked");
	char key[1024];

	if (!path)
		return 0;
	rf_path_key(key, sizeof(key), path);
	if (json_object_get(asked, key))
		return 0;
	json_object_set_new(asked, key, json_true());
	rf_push(op, "GET", path, NULL, flags, h);
	return 1;
}

static void count_unknown(struct rf_op *op)
{
	json_object_set_new(op->data, "count", json_integer(-1));
	json_object_set_new(op->scratch, "broken", json_true());
}

static void count_add(struct rf_op *op, json_int_t n)
{
	json_int_t count = json_integer_value(json_object_get(op->data, "count"));

	if (count >= 0)
		json_object_set_new(op->data, "count", json_integer(count + n));
}

static int on_entries(struct rf_op *op, const struct rf_reply *r)
{
	struct rf_log_ids ids = log_ids(op);
	char service[1024], key[1024];
	size_t dups = 0, seen_before;
	int ok = rf_reply_usable(r, skipped(op));

	if (ok <= 0)
		return ok; /* the entries listed so far stay; the count says more */
	if (!service_of(service, sizeof(service), rf_link(r->json, "@odata.id")) &&
	    !service_of(service, sizeof(service), r->path))
		snprintf(service, sizeof(service), "%s", r->path ? r->path : "log");
	seen_before = json_object_size(ids.seen);
	rf_log_entries_append(json_object_get(op->data, "entries"), op->data, &ids, r->json, service,
			      op->op.sel_since, &dups);
	/* the count is of distinct entries: one listed by two services counts once */
	count_add(op, -(json_int_t)dups);
	const char *next = json_string_value(json_object_get(r->json, "Members@odata.nextLink"));
	if (!next)
		return 0;
	json_t *pages = json_object_get(op->scratch, "pages");
	rf_path_key(key, sizeof(key), service);
	json_int_t n = json_integer_value(json_object_get(pages, key)) + 1;
	json_object_set_new(pages, key, json_integer(n));
	/* pages whose entries we have all seen end the walk (a BMC that ignores $skip); a page
	 * of entries older than since goes on: oldest first, the new ones are on the last */
	if (json_object_size(ids.seen) > seen_before && n < LOG_PAGES_MAX) {
		rf_push(op, "GET", next, NULL, RF_ALLOW_ERROR | RF_LOG_PAGE, on_entries);
		return 0;
	}
	char line[1200];
	snprintf(line, sizeof(line), "%s: not read past page %lld (%s)", next, (long long)n,
		 n < LOG_PAGES_MAX ? "the page before it held nothing new" : "the page limit");
	json_array_append_new(skipped(op), json_string(line));
	return 0;
}

/* The first page of a service's entries: its Members@odata.count is the service's total
 * (the caller tells a cleared log by the total dropping). */
static int on_entries_first(struct rf_op *op, const struct rf_reply *r)
{
	struct rf_log_ids ids = log_ids(op);
	json_t *n = json_object_get(r->json, "Members@odata.count");
	char service[1024];
	int ok = rf_reply_usable(r, skipped(op));

	if (ok <= 0) {
		if (ok == 0)
			count_unknown(op); /* how many it holds is not known */
		return ok;
	}
	if (!service_of(service, sizeof(service), rf_link(r->json, "@odata.id")) &&
	    !service_of(service, sizeof(service), r->path))
		snprintf(service, sizeof(service), "%s", r->path ? r->path : "log");
	json_array_append_new(json_object_get(op->data, "services"),
			      json_string(rf_log_label(&ids, service)));
	if (r->path)
		json_array_append_new(json_object_get(op->scratch, "order"), json_string(r->path));
	if (json_is_integer(n))
		count_add(op, json_integer_value(n));
	else
		count_unknown(op);
	return on_entries(op, r);
}

static int on_service(struct rf_op *op, const struct rf_reply *r)
{
	int ok = rf_reply_usable(r, skipped(op));

	if (ok <= 0) {
		if (ok == 0)
			count_unknown(op);
		return ok;
	}
	push_once(op, rf_link(r->json, "Entries"), RF_ALLOW_ERROR | RF_LOG_PAGE, on_entries_first);
	return 0;
}

static int on_services(struct rf_op *op, const struct rf_reply *r)
{
	size_t i;
	json_t *m;
	int ok = rf_reply_usable(r, skipped(op));

	if (ok <= 0) {
		if (ok == 0)
			count_unknown(op);
		return ok;
	}
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
			push_once(op, p, RF_ALLOW_ERROR, on_service);
	}
	return 0;
}

/* The HGX baseboard's LogServices (its EventLog holds the GPUs' Xids), learned once. */
static int on_hgx_system(struct rf_op *op, const struct rf_reply *r)
{
	struct redfish_bmc *b = op->bmc;
	int ok = rf_reply_usable(r, skipped(op));

	if (ok <= 0)
		return ok;
	free(b->logs_hgx);
	b->logs_hgx = rf_link(r->json, "LogServices") ? strdup(rf_link(r->json, "LogServices"))
						      : NULL;
	b->logs_hgx_known = 1;
	push_once(op, b->logs_hgx, RF_ALLOW_ERROR, on_services);
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
	log_seen_keep(op, !json_is_true(json_object_get(op->scratch, "broken")));
	if (json_array_size(skipped(op)) == 0)
		json_object_del(op->data, "skipped");
	/* the Entries collections of a read that found them all: the next read asks only
	 * those, in the same order (so the same labels), a third of the requests */
	if (!json_is_true(json_object_get(op->scratch, "broken")) &&
	    json_array_size(json_object_get(op->scratch, "order")) > 0) {
		json_decref(op->bmc->log_entries);
		op->bmc->log_entries = json_incref(json_object_get(op->scratch, "order"));
	} else if (json_is_true(json_object_get(op->scratch, "broken"))) {
		json_decref(op->bmc->log_entries); /* one of them went: crawl again next time */
		op->bmc->log_entries = NULL;
	}
	return 0;
}

/* The system's services first, then its manager's, as kiln read them before it read the HGX
 * baseboard's and the chassis' too: their entries keep the ids the poller stored then
 * (rf_log_label), and where two share a name the system's keeps it, as it did. */
int rf_logs_start(struct rf_op *op)
{
	struct redfish_bmc *b = op->bmc;
	int any = 0;

	op->finish = logs_finish;
	op->data = json_pack("{s:[], s:[], s:[], s:I, s:I}", "entries", "services", "skipped",
			     "count", (json_int_t)0, "newest", (json_int_t)0);
	op->scratch = json_pack("{s:{}, s:{}, s:{}, s:{}, s:{}, s:[], s:{}}", "seen", "labels",
				"taken", "asked", "pages", "order", "kept");
	if (!op->data || !op->scratch)
		return kiln_fail(KILN_ERROR, "out of memory");
	if (json_array_size(b->log_entries) > 0) {
		size_t i;
		json_t *p;

		json_array_foreach(b->log_entries, i, p)
			push_once(op, json_string_value(p), RF_ALLOW_ERROR | RF_LOG_PAGE,
				  on_entries_first);
		return 0;
	}
	any |= push_once(op, b->logs_system, RF_ALLOW_ERROR, on_services);
	any |= push_once(op, b->logs_manager, RF_ALLOW_ERROR, on_services);
	if (b->hgx_system && !b->logs_hgx_known)
		any |= push_once(op, b->hgx_system, RF_ALLOW_ERROR, on_hgx_system);
	else
		any |= push_once(op, b->logs_hgx, RF_ALLOW_ERROR, on_services);
	for (size_t i = 0; i < b->nchassis; i++)
		any |= push_once(op, b->chassis[i].logs, RF_ALLOW_ERROR, on_services);
	/* a BMC without logs has no entries: an empty list, not a failure */
	if (!any)
		json_object_set_new(op->data, "note", json_string("no event logs on this BMC"));
	return 0;
}
