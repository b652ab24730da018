/* SPDX-License-Identifier: Apache-2.0 */
/* kiln-bmcsim: the GET side of a Redfish request: the resources the BMC's state changes
 * (systems, virtual media, log entries, sensors), $select and $expand. redfish.c authenticates
 * and dispatches the request. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "kiln/error.h"
#include "kiln/parse.h"
#include "redfish.h"

/* The system's Boot object as the BMC shows it now: the tree's, with the overlay's settings. */
static json_t *system_boot(const struct bmc *b, const struct tree_res *r)
{
	const struct bmc_system *s = &b->systems[r->index];
	json_t *tb = json_object_get(r->json, "Boot");
	json_t *boot = tb ? json_deep_copy(tb) : json_object();
	json_object_set_new(boot, "BootSourceOverrideTarget", json_string(s->boot_target));
	json_object_set_new(boot, "BootSourceOverrideEnabled", json_string(s->boot_enabled));
	if (s->boot_mode[0])
		json_object_set_new(boot, "BootSourceOverrideMode", json_string(s->boot_mode));
	return boot;
}

/* The system's SerialNumber: the tree's, or with --unique-serials the tree's and "-<n>" for
 * the n-th BMC (real machines do not share serials; kilnd binds agents by them). */
static json_t *system_serial(const struct bmc *b, const struct tree_res *r)
{
	const char *sn = json_string_value(json_object_get(r->json, "SerialNumber"));
	char buf[160];

	if (!sn || !b->cfg->unique_serials)
		return json_incref(json_object_get(r->json, "SerialNumber"));
	snprintf(buf, sizeof(buf), "%s-%d", sn, b->index + 1);
	return json_string(buf);
}

/* An injected BootProgress: its LastState alone, as iDRAC 9 fills it. */
static json_t *system_boot_progress(const struct bmc_system *s)
{
	return json_pack("{s:s}", "LastState", s->boot_progress);
}

static json_t *render_system(struct bmc *b, const struct tree_res *r)
{
	const struct bmc_system *s = &b->systems[r->index];
	json_t *doc = json_deep_copy(r->json);
	char etag[32];
	bmc_system_etag(b, r->index, etag, sizeof(etag));
	json_object_set_new(doc, "PowerState", json_string(bmc_power_name(s->power)));
	json_object_set_new(doc, "@odata.etag", json_string(etag));
	json_object_set_new(doc, "Boot", system_boot(b, r));
	if (s->boot_progress[0])
		json_object_set_new(doc, "BootProgress", system_boot_progress(s));
	if (json_object_get(doc, "SerialNumber"))
		json_object_set_new(doc, "SerialNumber", system_serial(b, r));
	/* an injected part's health rolls up into the system's, as a BMC's does */
	int worst = bmc_injected_health(b);
	json_t *status = json_object_get(doc, "Status");
	const char *had = json_string_value(json_object_get(status, "HealthRollup"));
	if (worst > 0 && json_is_object(status) &&
	    !(had && strcasecmp(had, "Critical") == 0) && !(worst == 1 && had && strcasecmp(had, "Warning") == 0))
		json_object_set_new(status, "HealthRollup", json_string(worst == 2 ? "Critical" : "Warning"));
	return doc;
}

/* The system's answer as text. It is rendered again only when something it shows changed
 * (every GET used to copy, edit and serialise the whole document). */
static void reply_system(struct sim_reply *out, struct bmc *b, const struct tree_res *r)
{
	struct bmc_system *s = &b->systems[r->index];
	char etag[32];
	if (!s->rendered || s->rendered_power != s->power || s->rendered_etag_gen != s->etag_gen) {
		json_t *doc = render_system(b, r);
		char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
		json_decref(doc);
		if (!text) {
			redfish_error(out, 500, "Base.1.8.InternalError", "The request failed due to an internal service error.");
			return;
		}
		free(s->rendered);
		s->rendered = text;
		s->rendered_len = strlen(text);
		s->rendered_power = s->power;
		s->rendered_etag_gen = s->etag_gen;
	}
	/* a copy: the reply goes out after the latency, when the kept text may have changed */
	out->body = malloc(s->rendered_len + 1);
	if (!out->body) {
		redfish_error(out, 500, "Base.1.8.InternalError", "The request failed due to an internal service error.");
		return;
	}
	memcpy(out->body, s->rendered, s->rendered_len + 1);
	out->len = s->rendered_len;
	out->status = 200;
	out->ctype = "application/json;charset=utf-8";
	bmc_system_etag(b, r->index, etag, sizeof(etag));
	out->etag = strdup(etag);
}

/* ---- $select (DSP0266): a comma-separated list of properties of the resource, "/" between
 * the names of nested ones; the answer holds the selected properties plus the resource's
 * @odata.context, @odata.id, @odata.type and @odata.etag. Names the resource lacks are left
 * out; "*" is the whole resource. ---- */

#define SELECT_ITEMS_MAX 64

/* A member of the resource by name: a new reference, or NULL when it has none. */
typedef json_t *(*select_member_fn)(void *ctx, const char *name);

static json_t *doc_member(void *ctx, const char *name)
{
	return json_incref(json_object_get(ctx, name));
}

struct system_ctx {
	struct bmc *b;
	const struct tree_res *r;
};

/* The system's members without rendering the whole of it: the overlay's where it has them. */
static json_t *system_member(void *ctx, const char *name)
{
	struct system_ctx *sc = ctx;
	if (strcmp(name, "PowerState") == 0)
		return json_string(bmc_power_name(sc->b->systems[sc->r->index].power));
	if (strcmp(name, "@odata.etag") == 0) {
		char etag[32];
		bmc_system_etag(sc->b, sc->r->index, etag, sizeof(etag));
		return json_string(etag);
	}
	if (strcmp(name, "Boot") == 0)
		return system_boot(sc->b, sc->r);
	if (strcmp(name, "BootProgress") == 0 && sc->b->systems[sc->r->index].boot_progress[0])
		return system_boot_progress(&sc->b->systems[sc->r->index]);
	if (strcmp(name, "SerialNumber") == 0)
		return system_serial(sc->b, sc->r);
	return json_incref(json_object_get(sc->r->json, name));
}

static bool select_name_ok(const char *p, size_t n)
{
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)p[i]) && p[i] != '_' && p[i] != '@' && p[i] != '.' && p[i] != '#')
			return false;
	return true;
}

/* Copies item (a path "A/B/C") from the resource into out, creating the objects on the way;
 * a path the resource lacks, or that runs through something not an object, adds nothing.
 * Values are shared with the resource, never changed: an item under another selected one
 * is skipped by the caller. */
static int select_copy(json_t *out, const char *item, select_member_fn member, void *ctx)
{
	char name[256];
	const char *slash = strchr(item, '/');
	size_t n = slash ? (size_t)(slash - item) : strlen(item);
	if (n >= sizeof(name))
		return 0;
	memcpy(name, item, n);
	name[n] = '\0';
	json_t *v = member(ctx, name);
	json_t *dst = out;
	while (v && slash) {
		json_t *child = json_object_get(dst, name);
		if (!child) {
			child = json_object();
			if (json_object_set_new(dst, name, child) < 0) {
				json_decref(v);
				return -1;
			}
		}
		dst = child;
		item = slash + 1;
		slash = strchr(item, '/');
		n = slash ? (size_t)(slash - item) : strlen(item);
		json_t *next = NULL;
		if (n < sizeof(name)) {
			memcpy(name, item, n);
			name[n] = '\0';
			next = json_incref(json_object_get(v, name));
		}
		json_decref(v);
		v = next;
	}
	if (!v)
		return 0;
	return json_object_set_new(dst, name, v) < 0 ? -1 : 0;
}

/* Fills out with the selection from the resource, or with a 400 when the list is malformed;
 * status -1 when the list asks for everything ("*"). */
static void reply_select(struct sim_reply *out, const char *select, select_member_fn member, void *ctx)
{
	static const char *const always[] = { "@odata.context", "@odata.id", "@odata.type", "@odata.etag" };
	char buf[2048];
	const char *items[SELECT_ITEMS_MAX];
	size_t nitems = 0;
	if (kiln_strlcpy(buf, select, sizeof(buf)) >= sizeof(buf))
		goto bad;
	for (char *p = buf; p;) {
		char *comma = strchr(p, ',');
		if (comma)
			*comma = '\0';
		while (*p == ' ')
			p++;
		size_t len = strlen(p);
		while (len && p[len - 1] == ' ')
			p[--len] = '\0';
		if (strcmp(p, "*") == 0) {
			out->status = -1;
			return;
		}
		for (const char *q = p;;) { /* every name on the path: a property or an annotation */
			const char *sl = strchr(q, '/');
			if (!select_name_ok(q, sl ? (size_t)(sl - q) : strlen(q)))
				goto bad;
			if (!sl)
				break;
			q = sl + 1;
		}
		if (nitems == SELECT_ITEMS_MAX)
			goto bad;
		items[nitems++] = p;
		p = comma ? comma + 1 : NULL;
	}
	json_t *doc = json_object();
	if (!doc)
		goto nomem;
	for (size_t i = 0; i < sizeof(always) / sizeof(always[0]); i++) {
		json_t *v = member(ctx, always[i]);
		if (v && json_object_set_new(doc, always[i], v) < 0)
			goto nomem_doc;
	}
	for (size_t i = 0; i < nitems; i++) {
		/* a path under another selected item is in it already */
		bool covered = false;
		for (size_t j = 0; j < nitems && !covered; j++) {
			size_t lj = strlen(items[j]);
			covered = j != i && strncmp(items[i], items[j], lj) == 0 && items[i][lj] == '/';
		}
		if (!covered && select_copy(doc, items[i], member, ctx) < 0)
			goto nomem_doc;
	}
	redfish_reply_json(out, 200, doc);
	return;
bad:
	redfish_error(out, 400, "Base.1.8.QueryParameterValueFormatError",
		      "The value '%.200s' for the parameter $select is of a different format than the parameter can accept.",
		      select);
	return;
nomem_doc:
	json_decref(doc);
nomem:
	redfish_error(out, 500, "Base.1.8.InternalError", "The request failed due to an internal service error.");
}

/* $select over an answer already made (any JSON resource but the system): the body parsed,
 * the selection made from it. */
void redfish_select_after(struct sim_reply *out, const char *select)
{
	json_t *doc = json_loadb(out->body ? out->body : out->text, out->len, 0, NULL);
	struct sim_reply sel = { 0 };
	if (!json_is_object(doc)) {
		json_decref(doc);
		return; /* not a JSON object: served as it is */
	}
	reply_select(&sel, select, doc_member, doc);
	json_decref(doc);
	if (sel.status == -1)
		return; /* "*" */
	free(out->body);
	out->body = sel.body;
	out->len = sel.len;
	out->text = NULL;
	out->status = sel.status;
	out->ctype = sel.ctype;
}

static json_t *render_medium(struct bmc *b, const struct tree_res *r)
{
	const struct bmc_medium *m = &b->media[r->index];
	json_t *doc = json_deep_copy(r->json);
	const char *slash = strrchr(m->image, '/');
	bool ilo = b->cfg->profile->redundant_off_400;
	json_object_set_new(doc, "Inserted", json_boolean(m->inserted));
	json_object_set_new(doc, "Image", m->image[0] || ilo ? json_string(m->image) : json_null());
	json_object_set_new(doc, "ImageName", m->image[0] ? json_string(slash ? slash + 1 : m->image)
							 : (ilo ? json_string("") : json_null()));
	json_object_set_new(doc, "ConnectedVia", json_string(m->inserted ? "URI" : "NotConnected"));
	json_object_set_new(doc, "WriteProtected", json_boolean(m->write_protected));
	if (m->proto[0])
		json_object_set_new(doc, "TransferProtocolType", json_string(m->proto));
	return doc;
}

static json_t *render_entries(struct bmc *b, const struct tree_res *r, const char *skip)
{
	json_t *doc = json_deep_copy(r->json);
	json_t *tree_members = json_object_get(doc, "Members"), *all = json_array();
	bool cleared = b->log_cleared && b->log_cleared[r->index];
	bool newest_first = b->cfg->profile->newest_first;
	size_t injected = 0;
	if (newest_first) {
		for (size_t i = b->nentries; i-- > 0;)
			if (b->entries[i].log == r->index && ++injected)
				json_array_append(all, b->entries[i].entry);
	}
	if (!cleared)
		json_array_extend(all, tree_members);
	if (!newest_first) {
		for (size_t i = 0; i < b->nentries; i++)
			if (b->entries[i].log == r->index && ++injected)
				json_array_append(all, b->entries[i].entry);
	}
	json_int_t count = json_integer_value(json_object_get(doc, "Members@odata.count"));
	if (cleared || count < (json_int_t)json_array_size(tree_members))
		count = cleared ? 0 : (json_int_t)json_array_size(tree_members);
	count += (json_int_t)injected;
	int off = 0;
	if (skip && kiln_parse_int(&off, skip, 0, 1 << 30) < 0)
		off = 0;
	kiln_error_clear();
	json_t *page = json_array();
	for (size_t i = (size_t)off; i < json_array_size(all); i++)
		json_array_append(page, json_array_get(all, i));
	json_object_set_new(doc, "Members", page);
	json_object_set_new(doc, "Members@odata.count", json_integer(count));
	if (json_object_get(doc, "Members@odata.nextLink")) {
		if (off == 0 && !cleared) {
			char next[1024];
			snprintf(next, sizeof(next), "%s?$skip=%zu", r->path, json_array_size(all));
			json_object_set_new(doc, "Members@odata.nextLink", json_string(next));
		} else {
			json_object_del(doc, "Members@odata.nextLink");
		}
	}
	json_decref(all);
	return doc;
}

/* An injected log entry by path: <entries>/<id>. */
static json_t *find_entry(struct bmc *b, const char *key)
{
	for (size_t i = 0; i < b->nentries; i++) {
		char *k = tree_key(json_string_value(json_object_get(b->entries[i].entry, "@odata.id")));
		bool same = k && strcmp(k, key) == 0;
		free(k);
		if (same)
			return json_incref(b->entries[i].entry);
	}
	return NULL;
}

/* Answers a GET; true when select (when not NULL) was applied already. */
bool redfish_get(struct sim_reply *out, struct bmc *b, const struct sim_request *req, const char *key,
		const char *select)
{
	const struct tree_res *r = tree_find(b->tree, req->path);
	json_t *doc = NULL;
	if (!r) {
		doc = find_entry(b, key);
		if (doc)
			redfish_reply_json(out, 200, doc);
		else
			redfish_error(out, 404, "Base.1.8.ResourceMissingAtURI",
				      "The resource at the URI '%s' was not found.", req->path);
		return false;
	}
	switch (r->kind) {
	case RES_SYSTEM:
		if (select) {
			struct system_ctx sc = { b, r };
			char etag[32];
			reply_select(out, select, system_member, &sc);
			if (out->status == -1) { /* "*" */
				out->status = 0;
				reply_system(out, b, r);
			} else if (out->status == 200) {
				bmc_system_etag(b, r->index, etag, sizeof(etag));
				out->etag = strdup(etag);
			}
		} else {
			reply_system(out, b, r);
		}
		return true;
	case RES_VMEDIA:
		if (b->media[r->index].changed)
			doc = render_medium(b, r);
		break;
	case RES_ENTRIES: {
		bool any = req->skip || (b->log_cleared && b->log_cleared[r->index]);
		for (size_t i = 0; i < b->nentries && !any; i++)
			any = b->entries[i].log == r->index;
		if (any)
			doc = render_entries(b, r, req->skip);
		break;
	}
	case RES_SESSIONS:
		redfish_sessions_list(out, b, req);
		return false;
	case RES_SENSORS:
		if (b->nsensors || b->cfg->drift_pct) {
			doc = json_deep_copy(r->json);
			bmc_sensors_drift(b, doc, req->now);
			bmc_sensors_apply(b, doc); /* an injected reading stays as injected */
		}
		break;
	case RES_CLOCK: {
		char now[48];

		doc = json_deep_copy(r->json);
		bmc_clock_iso(b, now, sizeof(now),
			      json_string_value(json_object_get(doc, "DateTimeLocalOffset")));
		json_object_set_new(doc, "DateTime", json_string(now));
		break;
	}
	case RES_ERROR:
		out->status = r->status;
		out->text = r->text;
		out->len = r->len;
		out->ctype = r->ctype;
		return false;
	case RES_PLAIN:
		break;
	}
	if (doc) {
		redfish_reply_json(out, 200, doc);
	} else {
		out->status = 200;
		out->text = r->text;
		out->len = r->len;
		out->ctype = r->ctype;
	}
	return false;
}

/* $expand=. over a collection already answered (DSP0266: "." expands the Members, not the
 * Links, one level; this service advertises no more): each member link becomes the member's
 * own answer, as a GET of it would give it now. */
void redfish_expand_after(struct sim_reply *out, struct bmc *b, const struct sim_request *req)
{
	json_t *doc = json_loadb(out->body ? out->body : out->text, out->len, 0, NULL);
	json_t *members = json_object_get(doc, "Members"), *m;
	size_t i;
	char *text;

	if (!json_is_array(members)) {
		json_decref(doc);
		return; /* not a collection: served as it is */
	}
	json_array_foreach(members, i, m) {
		const char *id = json_string_value(json_object_get(m, "@odata.id"));
		struct sim_request one = *req;
		struct sim_reply sub = { 0 };
		char *key = id ? tree_key(id) : NULL;
		json_t *got;

		if (!key)
			continue;
		one.path = id;
		one.skip = one.select = one.expand = NULL;
		redfish_get(&sub, b, &one, key, NULL);
		got = sub.status == 200 ? json_loadb(sub.body ? sub.body : sub.text, sub.len, 0, NULL) : NULL;
		if (json_is_object(got))
			json_array_set(members, i, got);
		json_decref(got);
		sim_reply_free(&sub);
		free(key);
	}
	text = json_dumps(doc, JSON_COMPACT);
	json_decref(doc);
	if (!text)
		return;
	free(out->body);
	out->body = text;
	out->text = NULL;
	out->len = strlen(text);
}
