/* SPDX-License-Identifier: Apache-2.0 */
/* kiln-bmcsim: loads a DMTF short-form mockup tree into one shared, read-only index. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kiln/buf.h"
#include "kiln/error.h"
#include "tree.h"

#define TREE_FILE_MAX (64u << 20)
#define TREE_DEPTH_MAX 32

char *tree_key(const char *path)
{
	size_t n = strlen(path);
	while (n > 1 && path[n - 1] == '/')
		n--;
	char *k = malloc(n + 1);
	if (!k)
		return NULL;
	for (size_t i = 0; i < n; i++)
		k[i] = (char)tolower((unsigned char)path[i]);
	k[n] = '\0';
	return k;
}

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ull;
	}
	return h;
}

static int read_file(char **out, size_t *out_len, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return kiln_fail(KILN_ERROR, "%s: %s", path, strerror(errno));
	struct stat st;
	char *data = NULL;
	int rc = KILN_ERROR;
	if (fstat(fd, &st) != 0 || st.st_size < 0 || (size_t)st.st_size > TREE_FILE_MAX) {
		rc = kiln_fail(KILN_ETOOBIG, "%s: unreadable or too big", path);
		goto cleanup;
	}
	size_t size = (size_t)st.st_size, got = 0;
	data = malloc(size + 1);
	if (!data)
		goto cleanup;
	while (got < size) {
		ssize_t r = read(fd, data + got, size - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			rc = kiln_fail(KILN_ERROR, "%s: short read", path);
			goto cleanup;
		}
		got += (size_t)r;
	}
	data[size] = '\0';
	*out = data;
	*out_len = size;
	data = NULL;
	rc = 0;
cleanup:
	free(data);
	close(fd);
	return rc;
}

static void res_free(struct tree_res *r)
{
	if (!r)
		return;
	free(r->path);
	free(r->key);
	free(r->text);
	json_decref(r->json);
	free(r);
}

static int res_add(struct tree *t, struct tree_res *r)
{
	if (t->nres == t->capres) {
		size_t cap = t->capres ? t->capres * 2 : 256;
		struct tree_res **n = realloc(t->res, cap * sizeof(*n));
		if (!n)
			return KILN_ERROR;
		t->res = n;
		t->capres = cap;
	}
	t->res[t->nres++] = r;
	return 0;
}

static bool type_has(json_t *doc, const char *prefix)
{
	const char *type = json_string_value(json_object_get(doc, "@odata.type"));
	return type && strncmp(type, prefix, strlen(prefix)) == 0;
}

static bool is_sensorish(json_t *doc)
{
	static const char *const types[] = { "#Thermal.", "#Power.", "#Sensor.", "#SensorCollection.",
		"#ThermalMetrics.", "#EnvironmentMetrics.", "#PowerSupply.", "#Fan.",
		"#ThermalSubsystem.", "#PowerSubsystem.", "#PowerSupplyMetrics.",
		/* parts whose Status.Health may be injected */
		"#Memory.", "#Processor.", "#Drive.", NULL };
	for (size_t i = 0; types[i]; i++)
		if (type_has(doc, types[i]))
			return true;
	return false;
}

int tree_error_status(json_t *doc)
{
	static const struct { const char *id; int status; } ids[] = {
		{ "ResourceMissingAtURI", 404 }, { "ResourceNotFound", 404 },
		{ "ServiceTemporarilyUnavailable", 503 }, { "ServiceShuttingDown", 503 },
		{ "ServiceInUnknownState", 503 }, { "InternalError", 500 }, { "GeneralError", 500 },
		{ "Success", 200 },
	};
	json_t *err = json_object_get(doc, "error");
	if (!json_is_object(doc) || json_object_size(doc) != 1 || !json_is_object(err))
		return 0;
	const char *id = json_string_value(json_object_get(
		json_array_get(json_object_get(err, "@Message.ExtendedInfo"), 0), "MessageId"));
	if (!id)
		id = json_string_value(json_object_get(err, "code"));
	const char *last = id ? strrchr(id, '.') : NULL;
	last = last ? last + 1 : id;
	for (size_t i = 0; last && i < sizeof(ids) / sizeof(ids[0]); i++)
		if (strcmp(last, ids[i].id) == 0)
			return ids[i].status;
	return 400;
}

/* Loads one file as the resource at url (e.g. /redfish/v1/Systems/1). */
static int load_one(struct tree *t, const char *file, const char *url, bool xml)
{
	struct tree_res *r = calloc(1, sizeof(*r));
	char *raw = NULL;
	size_t rawlen = 0;
	json_t *doc = NULL;
	int rc = KILN_ERROR;
	if (!r)
		goto cleanup;
	rc = read_file(&raw, &rawlen, file);
	if (rc < 0)
		goto cleanup;
	rc = KILN_ERROR;
	r->path = strdup(url);
	r->key = tree_key(url);
	if (!r->path || !r->key)
		goto cleanup;
	if (xml) {
		r->text = raw;
		r->len = rawlen;
		raw = NULL;
		r->ctype = "application/xml";
	} else {
		json_error_t jerr;
		doc = json_loadb(raw, rawlen, 0, &jerr);
		if (!doc) {
			/* integers past 64 bits (real BIOS registries have them): served as stored */
			json_t *lax = json_loadb(raw, rawlen, JSON_DECODE_INT_AS_REAL, NULL);
			json_decref(lax);
			if (!lax) {
				rc = kiln_fail(KILN_EINVAL, "%s:%d:%d: %s", file, jerr.line, jerr.column, jerr.text);
				goto cleanup;
			}
			r->text = raw;
			r->len = rawlen;
			raw = NULL;
			r->ctype = "application/json;charset=utf-8";
			t->bytes += r->len;
			rc = res_add(t, r);
			if (rc == 0)
				r = NULL;
			goto cleanup;
		}
		r->text = json_dumps(doc, JSON_COMPACT);
		if (!r->text)
			goto cleanup;
		r->len = strlen(r->text);
		r->ctype = "application/json;charset=utf-8";
		int error_status = tree_error_status(doc);
		if (error_status && error_status != 200) {
			r->kind = RES_ERROR; /* what the vendor's service answered there */
			r->status = error_status;
		} else if (json_is_object(doc)) {
			if (type_has(doc, "#ComputerSystem.") && !type_has(doc, "#ComputerSystemCollection"))
				r->kind = RES_SYSTEM;
			else if (type_has(doc, "#VirtualMedia.") &&
				 !type_has(doc, "#VirtualMediaCollection"))
				r->kind = RES_VMEDIA;
			else if (type_has(doc, "#LogEntryCollection."))
				r->kind = RES_ENTRIES;
			else if (type_has(doc, "#SessionCollection."))
				r->kind = RES_SESSIONS;
			else if (is_sensorish(doc))
				r->kind = RES_SENSORS;
			else if (type_has(doc, "#Manager.") && !type_has(doc, "#ManagerCollection") &&
				 json_is_string(json_object_get(doc, "DateTime")))
				r->kind = RES_CLOCK;
			r->json = doc; /* dropped after indexing unless dynamic */
			doc = NULL;
		}
	}
	t->bytes += r->len;
	rc = res_add(t, r);
	if (rc == 0)
		r = NULL;
cleanup:
	res_free(r);
	json_decref(doc);
	free(raw);
	return rc;
}

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)tolower((unsigned char)c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Appends "/name" with %XX escapes decoded: mockup folders hold the URI segment as sent,
 * while libmicrohttpd hands us request paths already decoded. */
static int url_append_segment(struct kiln_buf *url, const char *name)
{
	int rc = kiln_buf_puts(url, "/");
	for (const char *p = name; rc == 0 && *p; p++) {
		int hi, lo;
		if (p[0] == '%' && (hi = hex_value(p[1])) >= 0 && (lo = hex_value(p[2])) >= 0) {
			char c = (char)(hi * 16 + lo);
			rc = kiln_buf_append(url, &c, 1);
			p += 2;
		} else {
			rc = kiln_buf_append(url, p, 1);
		}
	}
	return rc;
}

static int walk(struct tree *t, struct kiln_buf *fs, struct kiln_buf *url, int depth)
{
	if (depth > TREE_DEPTH_MAX)
		return kiln_fail(KILN_EINVAL, "%s: tree too deep", fs->data);
	DIR *d = opendir(fs->data);
	if (!d)
		return kiln_fail(KILN_ERROR, "%s: %s", fs->data, strerror(errno));
	int rc = 0;
	size_t fslen = fs->len, urllen = url->len;
	struct dirent *e;
	while (rc == 0 && (e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		rc = kiln_buf_printf(fs, "/%s", e->d_name);
		if (rc < 0)
			break;
		struct stat st;
		if (stat(fs->data, &st) != 0) {
			/* dangling entry: skip */
		} else if (S_ISDIR(st.st_mode)) {
			rc = url_append_segment(url, e->d_name);
			if (rc == 0)
				rc = walk(t, fs, url, depth + 1);
		} else if (strcmp(e->d_name, "index.json") == 0) {
			rc = load_one(t, fs->data, url->data, false);
		} else if (strcmp(e->d_name, "index.xml") == 0) {
			rc = load_one(t, fs->data, url->data, true);
		}
		fs->len = fslen;
		fs->data[fslen] = '\0';
		url->len = urllen;
		if (url->data)
			url->data[urllen] = '\0';
	}
	closedir(d);
	return rc;
}

static int index_build(struct tree *t)
{
	t->nslots = 16;
	while (t->nslots < t->nres * 2)
		t->nslots *= 2;
	t->slots = calloc(t->nslots, sizeof(*t->slots));
	if (!t->slots)
		return KILN_ERROR;
	for (size_t i = 0; i < t->nres; i++) {
		size_t s = hash_str(t->res[i]->key) & (t->nslots - 1);
		while (t->slots[s]) {
			if (strcmp(t->res[t->slots[s] - 1]->key, t->res[i]->key) == 0)
				break; /* same path in two cases: the first one wins */
			s = (s + 1) & (t->nslots - 1);
		}
		if (!t->slots[s])
			t->slots[s] = i + 1;
	}
	return 0;
}

struct tree_res *tree_find(const struct tree *t, const char *path)
{
	char *key = tree_key(path);
	struct tree_res *found = NULL;
	if (!key)
		return NULL;
	size_t s = hash_str(key) & (t->nslots - 1);
	while (t->slots[s]) {
		struct tree_res *r = t->res[t->slots[s] - 1];
		if (strcmp(r->key, key) == 0) {
			found = r;
			break;
		}
		s = (s + 1) & (t->nslots - 1);
	}
	free(key);
	return found;
}

const struct tree_action *tree_action_find(const struct tree *t, const char *path)
{
	char *key = tree_key(path);
	const struct tree_action *found = NULL;
	for (size_t i = 0; key && i < t->nactions; i++) {
		if (strcmp(t->actions[i].key, key) == 0) {
			found = &t->actions[i];
			break;
		}
	}
	free(key);
	return found;
}

static int action_add(struct tree *t, const char *target, const char *name, enum tree_action_kind kind,
		      int index)
{
	char *key = tree_key(target);
	if (!key)
		return KILN_ERROR;
	for (size_t i = 0; i < t->nactions; i++) {
		if (strcmp(t->actions[i].key, key) == 0) {
			free(key);
			return 0;
		}
	}
	if (t->nactions == t->capactions) {
		size_t cap = t->capactions ? t->capactions * 2 : 32;
		struct tree_action *n = realloc(t->actions, cap * sizeof(*n));
		if (!n) {
			free(key);
			return KILN_ERROR;
		}
		t->actions = n;
		t->capactions = cap;
	}
	char *nm = strdup(name);
	if (!nm) {
		free(key);
		return KILN_ERROR;
	}
	t->actions[t->nactions++] = (struct tree_action){ key, nm, kind, index };
	return 0;
}

static const char *link_of(json_t *doc, const char *key)
{
	return json_string_value(json_object_get(json_object_get(doc, key), "@odata.id"));
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

static json_t *reset_types_of(const struct tree *t, json_t *reset)
{
	json_t *vals = json_object_get(reset, "ResetType@Redfish.AllowableValues");
	if (json_is_array(vals))
		return json_incref(vals);
	const char *info = json_string_value(json_object_get(reset, "@Redfish.ActionInfo"));
	struct tree_res *ir = info ? tree_find(t, info) : NULL;
	if (ir && ir->json) {
		size_t i;
		json_t *p;
		json_array_foreach(json_object_get(ir->json, "Parameters"), i, p) {
			const char *n = json_string_value(json_object_get(p, "Name"));
			json_t *av = json_object_get(p, "AllowableValues");
			if (n && strcmp(n, "ResetType") == 0 && json_is_array(av))
				return json_incref(av);
		}
	}
	return json_pack("[sssss]", "On", "ForceOff", "GracefulShutdown", "GracefulRestart",
			 "ForceRestart");
}

static int systems_index(struct tree *t)
{
	struct tree_res *root = tree_find(t, "/redfish/v1");
	const char *sys = root && root->json ? link_of(root->json, "Systems") : NULL;
	struct tree_res *coll = sys ? tree_find(t, sys) : NULL;
	json_t *members = coll && coll->json ? json_object_get(coll->json, "Members") : NULL;
	size_t n = json_array_size(members);
	t->systems = calloc(n ? n : 1, sizeof(*t->systems));
	if (!t->systems)
		return KILN_ERROR;
	for (size_t i = 0; i < n; i++) {
		const char *id = json_string_value(json_object_get(json_array_get(members, i), "@odata.id"));
		struct tree_res *r = id ? tree_find(t, id) : NULL;
		if (!r || r->kind != RES_SYSTEM)
			continue;
		struct tree_system *s = &t->systems[t->nsystems++];
		json_t *doc = r->json, *boot = json_object_get(doc, "Boot");
		json_t *reset = json_object_get(json_object_get(doc, "Actions"), "#ComputerSystem.Reset");
		const char *ps = json_string_value(json_object_get(doc, "PowerState"));
		s->res = r;
		s->id = dup_or_null(json_string_value(json_object_get(doc, "Id")));
		s->power = strdup(ps && strncmp(ps, "Off", 3) == 0 ? "Off" : "On");
		s->reset_types = reset_types_of(t, reset);
		s->boot_targets = json_incref(
			json_object_get(boot, "BootSourceOverrideTarget@Redfish.AllowableValues"));
		s->boot_enabled = json_incref(
			json_object_get(boot, "BootSourceOverrideEnabled@Redfish.AllowableValues"));
		const char *bt = json_string_value(json_object_get(boot, "BootSourceOverrideTarget"));
		const char *be = json_string_value(json_object_get(boot, "BootSourceOverrideEnabled"));
		const char *bm = json_string_value(json_object_get(boot, "BootSourceOverrideMode"));
		s->boot_target = strdup(bt ? bt : "None");
		s->boot_enabled_init = strdup(be ? be : "Disabled");
		s->boot_mode = dup_or_null(bm);
		if (!s->power || !s->reset_types || !s->boot_target || !s->boot_enabled_init)
			return KILN_ERROR;
		r->index = (int)t->nsystems - 1;
		const char *target = json_string_value(json_object_get(reset, "target"));
		char std[1024];
		snprintf(std, sizeof(std), "%s/Actions/ComputerSystem.Reset", r->path);
		if ((target && action_add(t, target, "ComputerSystem.Reset", ACT_RESET, r->index) < 0) ||
		    action_add(t, std, "ComputerSystem.Reset", ACT_RESET, r->index) < 0)
			return KILN_ERROR;
	}
	/* Systems not listed in the collection stay plain resources. */
	for (size_t i = 0; i < t->nres; i++) {
		struct tree_res *r = t->res[i];
		bool listed = false;
		for (size_t j = 0; j < t->nsystems; j++)
			listed = listed || t->systems[j].res == r;
		if (r->kind == RES_SYSTEM && !listed)
			r->kind = RES_PLAIN;
	}
	return 0;
}

static int media_index(struct tree *t)
{
	size_t n = 0;
	for (size_t i = 0; i < t->nres; i++)
		n += t->res[i]->kind == RES_VMEDIA;
	t->media = calloc(n ? n : 1, sizeof(*t->media));
	if (!t->media)
		return KILN_ERROR;
	for (size_t i = 0; i < t->nres; i++) {
		struct tree_res *r = t->res[i];
		if (r->kind != RES_VMEDIA)
			continue;
		struct tree_medium *m = &t->media[t->nmedia++];
		const char *id = json_string_value(json_object_get(r->json, "Id"));
		const char *img = json_string_value(json_object_get(r->json, "Image"));
		char name[256];
		snprintf(name, sizeof(name), "%s", id ? id : "media");
		for (size_t j = 0; j + 1 < t->nmedia; j++) {
			if (strcmp(t->media[j].id, name) == 0) {
				snprintf(name, sizeof(name), "%s", r->path);
				break;
			}
		}
		m->res = r;
		m->id = strdup(name);
		m->inserted = json_is_true(json_object_get(r->json, "Inserted"));
		m->image = strdup(img ? img : "");
		m->under_systems = strncmp(r->key, "/redfish/v1/systems/", 20) == 0;
		if (!m->id || !m->image)
			return KILN_ERROR;
		r->index = (int)t->nmedia - 1;
		json_t *acts = json_object_get(r->json, "Actions");
		const char *ins = json_string_value(
			json_object_get(json_object_get(acts, "#VirtualMedia.InsertMedia"), "target"));
		const char *ej = json_string_value(
			json_object_get(json_object_get(acts, "#VirtualMedia.EjectMedia"), "target"));
		char std[1024];
		if (ins && action_add(t, ins, "VirtualMedia.InsertMedia", ACT_INSERT, r->index) < 0)
			return KILN_ERROR;
		if (ej && action_add(t, ej, "VirtualMedia.EjectMedia", ACT_EJECT, r->index) < 0)
			return KILN_ERROR;
		snprintf(std, sizeof(std), "%s/Actions/VirtualMedia.InsertMedia", r->path);
		if (action_add(t, std, "VirtualMedia.InsertMedia", ACT_INSERT, r->index) < 0)
			return KILN_ERROR;
		snprintf(std, sizeof(std), "%s/Actions/VirtualMedia.EjectMedia", r->path);
		if (action_add(t, std, "VirtualMedia.EjectMedia", ACT_EJECT, r->index) < 0)
			return KILN_ERROR;
	}
	return 0;
}

static int64_t id_number(const char *s)
{
	int64_t v = 0;
	if (!s || !*s)
		return -1;
	for (; *s; s++) {
		if (!isdigit((unsigned char)*s) || v > INT64_MAX / 20)
			return -1;
		v = v * 10 + (*s - '0');
	}
	return v;
}

static int logs_index(struct tree *t)
{
	size_t n = 0;
	for (size_t i = 0; i < t->nres; i++)
		n += t->res[i]->kind == RES_ENTRIES;
	t->logs = calloc(n ? n : 1, sizeof(*t->logs));
	if (!t->logs)
		return KILN_ERROR;
	for (size_t i = 0; i < t->nres; i++) {
		struct tree_res *r = t->res[i];
		if (r->kind != RES_ENTRIES)
			continue;
		struct tree_log *l = &t->logs[t->nlogs++];
		/* the service is the parent folder: .../LogServices/Sel/Entries */
		const char *end = r->path + strlen(r->path);
		const char *slash = end;
		while (slash > r->path && slash[-1] != '/')
			slash--;
		const char *svc_end = slash > r->path ? slash - 1 : slash;
		const char *svc = svc_end;
		while (svc > r->path && svc[-1] != '/')
			svc--;
		l->res = r;
		l->service = strndup(svc, (size_t)(svc_end - svc));
		if (!l->service)
			return KILN_ERROR;
		json_t *members = json_object_get(r->json, "Members"), *m;
		size_t j;
		l->tree_count = json_array_size(members);
		l->max_id = 0;
		json_array_foreach(members, j, m) {
			int64_t v = id_number(json_string_value(json_object_get(m, "Id")));
			if (v > l->max_id)
				l->max_id = v;
		}
		r->index = (int)t->nlogs - 1;
		/* ClearLog on the service */
		char target[1024];
		snprintf(target, sizeof(target), "%.*s/Actions/LogService.ClearLog",
			 (int)(svc_end - r->path), r->path);
		if (action_add(t, target, "LogService.ClearLog", ACT_CLEARLOG, r->index) < 0)
			return KILN_ERROR;
	}
	return 0;
}

static int other_actions_index(struct tree *t)
{
	for (size_t i = 0; i < t->nres; i++) {
		json_t *acts = t->res[i]->json ? json_object_get(t->res[i]->json, "Actions") : NULL;
		const char *k;
		json_t *v;
		json_object_foreach(acts, k, v) {
			const char *target = json_string_value(json_object_get(v, "target"));
			if (k[0] == '#' && target && action_add(t, target, k + 1, ACT_OTHER, -1) < 0)
				return KILN_ERROR;
		}
	}
	return 0;
}

static void facts_read(struct tree *t)
{
	struct tree_res *root = tree_find(t, "/redfish/v1");
	if (!root || !root->json)
		return;
	const char *vendor = json_string_value(json_object_get(root->json, "Vendor"));
	json_t *oem = json_object_get(root->json, "Oem");
	if (!vendor && json_object_get(oem, "Hpe"))
		vendor = "HPE";
	if (!vendor && json_object_get(oem, "Dell"))
		vendor = "Dell";
	t->vendor = dup_or_null(vendor);
	json_t *features = json_object_get(root->json, "ProtocolFeaturesSupported");
	t->select_query = json_is_true(json_object_get(features, "SelectQuery"));
	t->expand_query = json_is_true(json_object_get(json_object_get(features, "ExpandQuery"), "NoLinks"));
	t->expand_advertised = json_object_get(features, "ExpandQuery") != NULL;
	const char *mgrs = link_of(root->json, "Managers");
	struct tree_res *mc = mgrs ? tree_find(t, mgrs) : NULL;
	const char *m0 = mc && mc->json ? json_string_value(json_object_get(
			json_array_get(json_object_get(mc->json, "Members"), 0), "@odata.id")) : NULL;
	struct tree_res *mr = m0 ? tree_find(t, m0) : NULL;
	if (mr && mr->json) {
		t->manager_firmware = dup_or_null(json_string_value(json_object_get(mr->json, "FirmwareVersion")));
		t->manager_model = dup_or_null(json_string_value(json_object_get(mr->json, "Model")));
		t->manager_openbmc = json_object_get(json_object_get(mr->json, "Oem"), "OpenBmc") != NULL;
	}
	const char *sess = json_string_value(json_object_get(
		json_object_get(json_object_get(root->json, "Links"), "Sessions"), "@odata.id"));
	if (sess) {
		t->sessions = tree_find(t, sess);
		t->sessions_key = tree_key(sess);
	}
	if (!t->sessions_key)
		t->sessions_key = tree_key("/redfish/v1/SessionService/Sessions");
}

int tree_query_features_set(struct tree *t, int select, int expand)
{
	struct tree_res *root = tree_find(t, "/redfish/v1");
	json_t *doc = root ? json_loadb(root->text, root->len, 0, NULL) : NULL;
	json_t *pf = json_object_get(doc, "ProtocolFeaturesSupported");
	char *text = NULL;
	int rc = KILN_ERROR;
	if (!json_is_object(doc))
		goto cleanup;
	if (!json_is_object(pf)) {
		pf = json_object();
		if (json_object_set_new(doc, "ProtocolFeaturesSupported", pf) < 0)
			goto cleanup;
	}
	if (select >= 0 && json_object_set_new(pf, "SelectQuery", json_boolean(select)) < 0)
		goto cleanup;
	if (expand == 0)
		json_object_del(pf, "ExpandQuery");
	if (expand > 0 && json_object_set_new(pf, "ExpandQuery", json_pack("{s:b, s:b, s:b, s:i, s:b}",
		"ExpandAll", 0, "Levels", 1, "Links", 0, "MaxLevels", 1, "NoLinks", 1)) < 0)
		goto cleanup;
	if (!(text = json_dumps(doc, JSON_COMPACT)))
		goto cleanup;
	t->bytes += strlen(text) - root->len;
	free(root->text);
	root->text = text;
	root->len = strlen(text);
	if (select >= 0)
		t->select_query = select;
	if (expand >= 0)
		t->expand_query = expand;
	rc = 0;
cleanup:
	json_decref(doc);
	return rc;
}

const char *tree_profile_guess(const struct tree *t)
{
	const char *fw = t->manager_firmware ? t->manager_firmware : "";
	const char *model = t->manager_model ? t->manager_model : "";
	if (t->vendor && strcasecmp(t->vendor, "Dell") == 0)
		return "idrac9";
	if (strstr(fw, "iLO 7") || strstr(model, "iLO 7"))
		return "ilo7";
	if (strstr(fw, "iLO 6") || strstr(model, "iLO 6"))
		return "ilo6";
	if ((t->vendor && strcasecmp(t->vendor, "HPE") == 0) || strstr(fw, "iLO") || strstr(model, "iLO"))
		return "ilo5";
	if (strcasecmp(model, "OpenBmc") == 0 || t->manager_openbmc)
		return "openbmc";
	return "generic";
}

int tree_load(struct tree **out, const char *dir)
{
	struct tree *t = calloc(1, sizeof(*t));
	struct kiln_buf fs, url;
	int rc = KILN_ERROR;
	kiln_buf_init(&fs, 8192);
	kiln_buf_init(&url, 8192);
	if (!t)
		goto cleanup;
	t->dir = strdup(dir);
	if (!t->dir || kiln_buf_puts(&fs, dir) < 0 || kiln_buf_puts(&url, "/redfish/v1") < 0)
		goto cleanup;
	rc = walk(t, &fs, &url, 0);
	if (rc < 0)
		goto cleanup;
	rc = kiln_fail(KILN_EINVAL, "%s: no service root (index.json) found", dir);
	if (index_build(t) < 0 || !tree_find(t, "/redfish/v1"))
		goto cleanup;
	rc = kiln_fail(KILN_ERROR, "%s: out of memory indexing the tree", dir);
	facts_read(t);
	if (systems_index(t) < 0 || media_index(t) < 0 || logs_index(t) < 0 || other_actions_index(t) < 0)
		goto cleanup;
	/* Drop the parsed documents of static resources: their text is what is served. */
	for (size_t i = 0; i < t->nres; i++) {
		if (t->res[i]->kind == RES_PLAIN || t->res[i]->kind == RES_ERROR) {
			json_decref(t->res[i]->json);
			t->res[i]->json = NULL;
		}
	}
	if (t->sessions && t->sessions->kind != RES_SESSIONS)
		t->sessions = NULL;
	*out = t;
	t = NULL;
	rc = 0;
cleanup:
	kiln_buf_free(&fs);
	kiln_buf_free(&url);
	tree_free(t);
	return rc;
}

void tree_free(struct tree *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nres; i++)
		res_free(t->res[i]);
	for (size_t i = 0; i < t->nactions; i++) {
		free(t->actions[i].key);
		free(t->actions[i].name);
	}
	for (size_t i = 0; i < t->nsystems; i++) {
		struct tree_system *s = &t->systems[i];
		free(s->id);
		free(s->power);
		json_decref(s->reset_types);
		json_decref(s->boot_targets);
		json_decref(s->boot_enabled);
		free(s->boot_target);
		free(s->boot_enabled_init);
		free(s->boot_mode);
	}
	for (size_t i = 0; i < t->nmedia; i++) {
		free(t->media[i].id);
		free(t->media[i].image);
	}
	for (size_t i = 0; i < t->nlogs; i++)
		free(t->logs[i].service);
	free(t->res);
	free(t->slots);
	free(t->actions);
	free(t->systems);
	free(t->media);
	free(t->logs);
	free(t->sessions_key);
	free(t->vendor);
	free(t->manager_firmware);
	free(t->manager_model);
	free(t->dir);
	free(t);
}
