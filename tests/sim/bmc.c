/* SPDX-License-Identifier: Apache-2.0 */
/* kiln-bmcsim: per-BMC state (power model, sessions, boot, media, logs, sensors, faults, records). */
#include <ctype.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>

#include "bmc.h"
#include "kiln/error.h"
#include "kiln/parse.h"

#define RESETS_MAX 64
#define ENTRIES_MAX 4096
#define SENSORS_MAX 64
#define TASKS_MAX 64
#define RECORD_BODY_MAX 2048

extern char **environ;

int bmc_init(struct bmc *b, int index, int port, const struct tree *t, const struct sim_config *cfg)
{
	memset(b, 0, sizeof(*b));
	b->index = index;
	b->port = port;
	b->tree = t;
	b->cfg = cfg;
	b->next_session = 1;
	b->next_task = 1;
	if (t->nsystems) {
		b->systems = calloc(t->nsystems, sizeof(*b->systems));
		if (!b->systems)
			return KILN_ERROR;
	}
	for (size_t i = 0; i < t->nsystems; i++) {
		struct bmc_system *s = &b->systems[i];
		s->power = strcmp(t->systems[i].power, "Off") == 0 ? PWR_OFF : PWR_ON;
		kiln_strlcpy(s->boot_target, t->systems[i].boot_target, sizeof(s->boot_target));
		kiln_strlcpy(s->boot_enabled, t->systems[i].boot_enabled_init, sizeof(s->boot_enabled));
		kiln_strlcpy(s->boot_mode, t->systems[i].boot_mode ? t->systems[i].boot_mode : "",
			     sizeof(s->boot_mode));
	}
	if (t->nmedia) {
		b->media = calloc(t->nmedia, sizeof(*b->media));
		if (!b->media)
			return KILN_ERROR;
	}
	return 0;
}

static void record_free(struct bmc_record *r)
{
	free(r->path);
	free(r->if_match);
	free(r->body);
}

void bmc_fini(struct bmc *b)
{
	if (!b)
		return;
	for (size_t i = 0; b->systems && i < b->tree->nsystems; i++)
		free(b->systems[i].rendered);
	free(b->systems);
	for (size_t i = 0; b->media && i < b->tree->nmedia; i++)
		free(b->media[i].image);
	free(b->media);
	free(b->sessions);
	for (size_t i = 0; i < b->nresets; i++)
		free(b->resets[i]);
	free(b->resets);
	for (size_t i = 0; i < b->nentries; i++)
		json_decref(b->entries[i].entry);
	free(b->entries);
	free(b->log_cleared);
	for (size_t i = 0; i < b->nsensors; i++)
		free(b->sensors[i].name);
	free(b->sensors);
	free(b->tasks);
	for (size_t i = 0; i < b->nrecords; i++)
		record_free(&b->records[i]);
	free(b->records);
	memset(b, 0, sizeof(*b));
}

const char *bmc_power_name(enum bmc_power p)
{
	switch (p) {
	case PWR_ON: return "On";
	case PWR_OFF: return "Off";
	case PWR_POWERING_ON: return "PoweringOn";
	case PWR_POWERING_OFF: return "PoweringOff";
	}
	return "Unknown";
}

/* Runs `HOOK INDEX on|off` without waiting; SIGCHLD is ignored by the server, so no zombies. */
static void hook_run(struct bmc *b, bool on)
{
	b->hook_runs++;
	if (!b->cfg->power_hook || !*b->cfg->power_hook)
		return;
	char idx[16];
	snprintf(idx, sizeof(idx), "%d", b->index);
	char *argv[] = { "/bin/sh", "-c", NULL, "kiln-bmcsim-hook", idx, on ? "on" : "off", NULL };
	char script[4096];
	snprintf(script, sizeof(script), "%s \"$@\"", b->cfg->power_hook);
	argv[2] = script;
	posix_spawnattr_t attr;
	sigset_t def;
	posix_spawnattr_init(&attr);
	sigemptyset(&def);
	sigaddset(&def, SIGCHLD);
	sigaddset(&def, SIGPIPE);
	posix_spawnattr_setsigdefault(&attr, &def);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF);
	pid_t pid;
	(void)posix_spawn(&pid, "/bin/sh", NULL, &attr, argv, environ);
	posix_spawnattr_destroy(&attr);
}

static void power_tick(void *arg, uint64_t data);

static void power_schedule(struct bmc *b, int sys, uint64_t now)
{
	struct bmc_system *s = &b->systems[sys];
	s->gen++;
	uint64_t data = ((uint64_t)(uint32_t)sys << 32) | s->gen;
	if (sim_timer_add(now + (uint64_t)b->cfg->power_delay_ms, power_tick, b, data) < 0)
		power_tick(b, data); /* out of memory: finish the phase at once */
}

/* Moves a system one phase on: PoweringOff -> Off (-> PoweringOn), PoweringOn -> On. */
static void power_step(struct bmc *b, int sys, uint64_t now)
{
	struct bmc_system *s = &b->systems[sys];
	if (s->power == PWR_POWERING_OFF) {
		s->power = PWR_OFF;
		s->off_at = now;
		hook_run(b, false);
		if (s->pending_on) {
			s->pending_on = false;
			s->power = PWR_POWERING_ON;
			if (b->cfg->power_delay_ms > 0)
				power_schedule(b, sys, now);
			else
				power_step(b, sys, now);
		}
	} else if (s->power == PWR_POWERING_ON) {
		s->power = PWR_ON;
		hook_run(b, true);
	}
}

static void power_tick(void *arg, uint64_t data)
{
	struct bmc *b = arg;
	int sys = (int)(data >> 32);
	if (!b->systems || (size_t)sys >= b->tree->nsystems || b->systems[sys].gen != (uint32_t)data)
		return;
	power_step(b, sys, sim_now_ms());
}

static void power_begin(struct bmc *b, int sys, enum bmc_power phase, bool then_on, uint64_t now)
{
	struct bmc_system *s = &b->systems[sys];
	s->power = phase;
	s->pending_on = then_on;
	if (b->cfg->power_delay_ms > 0)
		power_schedule(b, sys, now);
	else
		power_step(b, sys, now);
}

static void reset_record(struct bmc *b, const char *type)
{
	if (!b->resets) {
		b->resets = calloc(RESETS_MAX, sizeof(*b->resets));
		if (!b->resets)
			return;
	}
	if (b->nresets == RESETS_MAX) {
		free(b->resets[0]);
		memmove(b->resets, b->resets + 1, (RESETS_MAX - 1) * sizeof(*b->resets));
		b->nresets--;
	}
	b->resets[b->nresets] = strdup(type);
	if (b->resets[b->nresets])
		b->nresets++;
}

int bmc_power_reset(struct bmc *b, int sys, const char *type, uint64_t now, int64_t *out_ms)
{
	struct bmc_system *s = &b->systems[sys];
	const struct sim_profile *p = b->cfg->profile;
	bool on = s->power == PWR_ON, off = s->power == PWR_OFF;
	int64_t d = b->cfg->power_delay_ms;
	enum { NOOP, TO_OFF, TO_ON, CYCLE } what = NOOP;

	if (!on && !off)
		return BMC_E_BUSY;
	if (strcmp(type, "On") == 0 || strcmp(type, "ForceOn") == 0)
		what = off ? TO_ON : NOOP;
	else if (strcmp(type, "ForceOff") == 0 || strcmp(type, "GracefulShutdown") == 0) {
		if (off && p->redundant_off_400)
			return BMC_E_REDUNDANT;
		what = on ? TO_OFF : NOOP;
	} else if (strcmp(type, "PushPowerButton") == 0)
		what = on ? TO_OFF : TO_ON;
	else if (strcmp(type, "ForceRestart") == 0 || strcmp(type, "GracefulRestart") == 0 ||
		 strcmp(type, "PowerCycle") == 0)
		what = on ? CYCLE : TO_ON;
	else if (strcmp(type, "Nmi") == 0 && off && p->redundant_off_400)
		return BMC_E_REDUNDANT;
	if (what == TO_ON && p->on_after_off_409 && s->off_at &&
	    now < s->off_at + (uint64_t)b->cfg->settle_ms)
		return BMC_E_SETTLING;
	reset_record(b, type);
	*out_ms = what == NOOP ? 0 : what == CYCLE ? 2 * d : d;
	if (what == TO_OFF)
		power_begin(b, sys, PWR_POWERING_OFF, false, now);
	else if (what == CYCLE)
		power_begin(b, sys, PWR_POWERING_OFF, true, now);
	else if (what == TO_ON)
		power_begin(b, sys, PWR_POWERING_ON, false, now);
	return BMC_OK;
}

void bmc_power_force(struct bmc *b, int sys, bool on, uint64_t now)
{
	struct bmc_system *s = &b->systems[sys];
	enum bmc_power want = on ? PWR_ON : PWR_OFF;
	s->gen++; /* cancels a transition in flight */
	s->pending_on = false;
	if (s->power == want)
		return;
	s->power = want;
	if (!on)
		s->off_at = now;
	hook_run(b, on);
}

bool bmc_credentials_ok(const struct bmc *b, const char *user, const char *pass)
{
	return user && pass && strcmp(user, b->cfg->user) == 0 && strcmp(pass, b->cfg->password) == 0;
}

static void random_hex(char *out, size_t nbytes)
{
	unsigned char raw[32];
	if (nbytes > sizeof(raw))
		nbytes = sizeof(raw);
	if (getrandom(raw, nbytes, 0) != (ssize_t)nbytes) {
		for (size_t i = 0; i < nbytes; i++)
			raw[i] = (unsigned char)rand();
	}
	for (size_t i = 0; i < nbytes; i++)
		snprintf(out + 2 * i, 3, "%02x", raw[i]);
}

void bmc_sessions_expire(struct bmc *b, uint64_t now)
{
	for (size_t i = 0; i < b->nsessions;) {
		if (now > b->sessions[i].last_used + (uint64_t)b->cfg->session_timeout_ms) {
			b->sessions[i] = b->sessions[--b->nsessions];
			b->sessions_expired++;
		} else {
			i++;
		}
	}
}

void bmc_sessions_clear(struct bmc *b)
{
	b->sessions_expired += b->nsessions;
	b->nsessions = 0;
}

void bmc_login_failed(struct bmc *b, const char *via, const char *user, uint64_t now)
{
	b->auth_failures++;
	if (b->nlogin_failures == BMC_LOGIN_FAILURES_MAX)
		return;
	struct bmc_login_failure *f = &b->login_failures[b->nlogin_failures++];
	f->ms = now;
	kiln_strlcpy(f->via, via, sizeof(f->via));
	kiln_strlcpy(f->user, user ? user : "", sizeof(f->user));
}

int bmc_session_create(struct bmc *b, struct bmc_session **out, const char *user, const char *pass,
		       uint64_t now)
{
	bmc_sessions_expire(b, now);
	if (!bmc_credentials_ok(b, user, pass)) {
		bmc_login_failed(b, "session", user, now);
		return BMC_E_AUTH;
	}
	if ((int)b->nsessions >= b->cfg->session_cap)
		return BMC_E_CAP;
	if (!b->sessions) {
		b->sessions = calloc((size_t)b->cfg->session_cap, sizeof(*b->sessions));
		if (!b->sessions)
			return BMC_E_NOMEM;
	}
	struct bmc_session *s = &b->sessions[b->nsessions++];
	memset(s, 0, sizeof(*s));
	snprintf(s->id, sizeof(s->id), "%u", b->next_session++);
	random_hex(s->token, 16);
	kiln_strlcpy(s->user, user, sizeof(s->user));
	s->last_used = now;
	b->sessions_created++;
	if (b->nsessions > b->sessions_peak)
		b->sessions_peak = b->nsessions;
	*out = s;
	return BMC_OK;
}

struct bmc_session *bmc_session_by_token(struct bmc *b, const char *token, uint64_t now)
{
	bmc_sessions_expire(b, now);
	for (size_t i = 0; token && i < b->nsessions; i++) {
		if (strcmp(b->sessions[i].token, token) == 0) {
			b->sessions[i].last_used = now;
			return &b->sessions[i];
		}
	}
	return NULL;
}

struct bmc_session *bmc_session_by_id(struct bmc *b, const char *id, uint64_t now)
{
	bmc_sessions_expire(b, now);
	for (size_t i = 0; i < b->nsessions; i++)
		if (strcmp(b->sessions[i].id, id) == 0)
			return &b->sessions[i];
	return NULL;
}

void bmc_session_delete(struct bmc *b, struct bmc_session *s)
{
	size_t i = (size_t)(s - b->sessions);
	if (i >= b->nsessions)
		return;
	b->sessions[i] = b->sessions[--b->nsessions];
	b->sessions_deleted++;
}

void bmc_system_etag(const struct bmc *b, int sys, char *out, size_t outlen)
{
	const struct bmc_system *s = &b->systems[sys];
	uint32_t h = 2166136261u;
	const char *parts[] = { s->boot_target, s->boot_enabled, s->boot_mode };
	for (size_t i = 0; i < 3; i++) {
		for (const char *c = parts[i]; *c; c++) {
			h ^= (unsigned char)*c;
			h *= 16777619u;
		}
		h ^= '|';
	}
	h ^= s->etag_gen * 2654435761u;
	snprintf(out, outlen, "W/\"%08X\"", h);
}

int bmc_medium_set(struct bmc *b, int idx, bool inserted, const char *image, const char *proto, bool wp)
{
	struct bmc_medium *m = &b->media[idx];
	char *img = strdup(image ? image : "");
	if (!img)
		return KILN_ERROR;
	free(m->image);
	m->image = img;
	m->changed = true;
	m->inserted = inserted;
	m->write_protected = wp;
	kiln_strlcpy(m->proto, proto ? proto : "", sizeof(m->proto));
	return 0;
}

void bmc_clock_iso(const struct bmc *b, char *out, size_t outlen, const char *offset)
{
	int sign = 1, hh = 0, mm = 0;
	time_t now = time(NULL) + (b->cfg ? b->cfg->clock_skew_s : 0);
	struct tm tm;

	if (offset && (offset[0] == '+' || offset[0] == '-') &&
	    sscanf(offset + 1, "%2d:%2d", &hh, &mm) == 2 && hh < 24 && mm < 60)
		sign = offset[0] == '-' ? -1 : 1;
	else
		hh = mm = 0;
	now += sign * (hh * 3600 + mm * 60);
	gmtime_r(&now, &tm);
	size_t n = strftime(out, outlen, "%Y-%m-%dT%H:%M:%S", &tm);
	if (n > 0 && n < outlen)
		snprintf(out + n, outlen - n, "%c%02d:%02d", sign < 0 ? '-' : '+', hh, mm);
}

int bmc_log_inject(struct bmc *b, json_t *spec, const char **err)
{
	const struct tree *t = b->tree;
	const char *svc = json_string_value(json_object_get(spec, "service"));
	const char *msg = json_string_value(json_object_get(spec, "message"));
	const char *sev = json_string_value(json_object_get(spec, "severity"));
	const char *mid = json_string_value(json_object_get(spec, "message_id"));
	/* "created": an entry dated in the past, as a BMC's log holds before kiln first looks */
	const char *when = json_string_value(json_object_get(spec, "created"));
	int log = -1;
	if (!msg) {
		*err = "log: field 'message' is required";
		return KILN_EINVAL;
	}
	if (when && (strlen(when) < 20 || strlen(when) > 32 || when[4] != '-' || when[10] != 'T')) {
		*err = "log: 'created' must be an ISO 8601 time (2024-05-02T10:00:00Z)";
		return KILN_EINVAL;
	}
	for (size_t i = 0; i < t->nlogs && log < 0; i++)
		if (!svc || strcasecmp(t->logs[i].service, svc) == 0)
			log = (int)i;
	if (log < 0) {
		*err = "log: no such log service in the tree";
		return KILN_ENOTFOUND;
	}
	if (b->nentries >= ENTRIES_MAX) {
		*err = "log: too many injected entries";
		return KILN_ETOOBIG;
	}
	if (!b->entries) {
		b->entries = calloc(ENTRIES_MAX, sizeof(*b->entries));
		if (!b->entries)
			return KILN_ERROR;
	}
	int64_t id = t->logs[log].max_id + 1;
	for (size_t i = 0; i < b->nentries; i++)
		if (b->entries[i].log == log && b->entries[i].id >= id)
			id = b->entries[i].id + 1;
	char ids[32], path[1024], created[40], name[64];
	snprintf(ids, sizeof(ids), "%lld", (long long)id);
	snprintf(path, sizeof(path), "%s/%s", t->logs[log].res->path, ids);
	snprintf(name, sizeof(name), "Log Entry %s", ids);
	if (when)
		snprintf(created, sizeof(created), "%s", when);
	else
		bmc_clock_iso(b, created, sizeof(created), NULL);
	json_t *e = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "@odata.id", path,
			      "@odata.type", "#LogEntry.v1_6_0.LogEntry", "Id", ids, "Name", name,
			      "EntryType", "Event", "Severity", sev ? sev : "Warning", "Message", msg,
			      "Created", created);
	if (!e)
		return KILN_ERROR;
	if (mid)
		json_object_set_new(e, "MessageId", json_string(mid));
	b->entries[b->nentries++] = (struct bmc_entry){ log, id, e };
	return 0;
}

void bmc_log_clear(struct bmc *b, int log)
{
	if (!b->log_cleared) {
		b->log_cleared = calloc(b->tree->nlogs ? b->tree->nlogs : 1, sizeof(bool));
		if (!b->log_cleared)
			return;
	}
	b->log_cleared[log] = true;
	for (size_t i = 0; i < b->nentries;) {
		if (b->entries[i].log == log) {
			json_decref(b->entries[i].entry);
			memmove(&b->entries[i], &b->entries[i + 1], (b->nentries - i - 1) * sizeof(b->entries[0]));
			b->nentries--;
		} else {
			i++;
		}
	}
}

static const char *const reading_keys[] = { "ReadingCelsius", "Reading", "ReadingVolts",
	"PowerConsumedWatts", "ReadingRPM", NULL };

/* Finds (or, with set, overrides) readings of objects named name under v. */
static bool sensor_walk(json_t *v, const char *name, bool set, double reading)
{
	bool found = false;
	if (json_is_object(v)) {
		const char *n = json_string_value(json_object_get(v, "Name"));
		if (!n)
			n = json_string_value(json_object_get(v, "DeviceName"));
		if (n && strcasecmp(n, name) == 0) {
			for (size_t i = 0; reading_keys[i]; i++) {
				json_t *r = json_object_get(v, reading_keys[i]);
				if (r && (json_is_number(r) || json_is_null(r))) {
					if (set)
						json_object_set_new(v, reading_keys[i], json_real(reading));
					found = true;
					break;
				}
			}
		}
		const char *k;
		json_t *c;
		json_object_foreach(v, k, c)
			if (json_is_object(c) || json_is_array(c))
				found = sensor_walk(c, name, set, reading) || found;
	} else if (json_is_array(v)) {
		size_t i;
		json_t *c;
		json_array_foreach(v, i, c)
			found = sensor_walk(c, name, set, reading) || found;
	}
	return found;
}

/* Finds (or, with set, overrides) Status.Health of objects named name under v. */
static bool health_walk(json_t *v, const char *name, const char *set)
{
	bool found = false;
	if (json_is_object(v)) {
		const char *n = json_string_value(json_object_get(v, "Name"));
		json_t *status = json_object_get(v, "Status");
		if (n && strcasecmp(n, name) == 0 && json_is_object(status)) {
			if (set)
				json_object_set_new(status, "Health", json_string(set));
			found = true;
		}
		const char *k;
		json_t *c;
		json_object_foreach(v, k, c)
			if (json_is_object(c) || json_is_array(c))
				found = health_walk(c, name, set) || found;
	} else if (json_is_array(v)) {
		size_t i;
		json_t *c;
		json_array_foreach(v, i, c)
			found = health_walk(c, name, set) || found;
	}
	return found;
}

int bmc_sensor_set(struct bmc *b, const char *name, const double *reading, const char *health)
{
	bool exists = false;
	if (health && strlen(health) >= sizeof(b->sensors[0].health))
		return KILN_EINVAL;
	for (size_t i = 0; i < b->tree->nres && !exists; i++) {
		const struct tree_res *r = b->tree->res[i];
		if (r->kind == RES_SENSORS && r->json)
			exists = reading ? sensor_walk(r->json, name, false, 0)
					 : health_walk(r->json, name, NULL);
	}
	if (!exists)
		return KILN_ENOTFOUND;
	struct bmc_sensor *o = NULL;
	for (size_t i = 0; i < b->nsensors && !o; i++)
		if (strcasecmp(b->sensors[i].name, name) == 0)
			o = &b->sensors[i];
	if (!o) {
		if (b->nsensors >= SENSORS_MAX)
			return KILN_ETOOBIG;
		if (!b->sensors) {
			b->sensors = calloc(SENSORS_MAX, sizeof(*b->sensors));
			if (!b->sensors)
				return KILN_ERROR;
		}
		char *n = strdup(name);
		if (!n)
			return KILN_ERROR;
		o = &b->sensors[b->nsensors++];
		*o = (struct bmc_sensor){ .name = n };
	}
	if (reading) {
		o->has_reading = true;
		o->reading = *reading;
	}
	if (health) {
		kiln_strlcpy(o->health, health, sizeof(o->health));
		/* the systems' HealthRollup shows it: render them again */
		for (size_t i = 0; i < b->tree->nsystems; i++)
			b->systems[i].etag_gen++;
	}
	return 0;
}

/* The worst Status.Health injected (0 none or OK, 1 Warning, 2 Critical). */
int bmc_injected_health(const struct bmc *b)
{
	int worst = 0;

	for (size_t i = 0; i < b->nsensors; i++) {
		if (strcasecmp(b->sensors[i].health, "Critical") == 0)
			worst = 2;
		else if (strcasecmp(b->sensors[i].health, "Warning") == 0 && worst < 1)
			worst = 1;
	}
	return worst;
}

/* One swing every DRIFT_PERIOD_MS: slow enough to look like a machine warming and cooling,
 * fast enough that two polls a few seconds apart differ. */
#define DRIFT_PERIOD_MS 60000.0

static void drift_walk(json_t *v, double share, double t, unsigned seed)
{
	if (json_is_object(v)) {
		const char *n = json_string_value(json_object_get(v, "Name"));
		unsigned h = seed;

		for (const char *c = n ? n : ""; *c; c++)
			h = h * 31u + (unsigned char)*c;
		for (size_t i = 0; n && reading_keys[i]; i++) {
			json_t *r = json_object_get(v, reading_keys[i]);

			if (r && json_is_number(r)) {
				double phase = (h % 1000) / 1000.0 * 2 * M_PI;
				double value = json_number_value(r) * (1 + share * sin(t + phase));

				json_object_set_new(v, reading_keys[i], json_real(round(value * 100) / 100));
				break;
			}
		}
		const char *k;
		json_t *c;
		json_object_foreach(v, k, c)
			if (json_is_object(c) || json_is_array(c))
				drift_walk(c, share, t, seed);
	} else if (json_is_array(v)) {
		size_t i;
		json_t *c;
		json_array_foreach(v, i, c)
			drift_walk(c, share, t, seed);
	}
}

void bmc_sensors_drift(const struct bmc *b, json_t *doc, uint64_t now_ms)
{
	if (b->cfg->drift_pct <= 0)
		return;
	drift_walk(doc, b->cfg->drift_pct / 100.0, (double)now_ms / DRIFT_PERIOD_MS * 2 * M_PI,
		   (unsigned)b->index * 2654435761u);
}

void bmc_sensors_apply(const struct bmc *b, json_t *doc)
{
	for (size_t i = 0; i < b->nsensors; i++) {
		if (b->sensors[i].has_reading)
			sensor_walk(doc, b->sensors[i].name, true, b->sensors[i].reading);
		if (b->sensors[i].health[0])
			health_walk(doc, b->sensors[i].name, b->sensors[i].health);
	}
}

struct bmc_task *bmc_task_create(struct bmc *b, const char *action, uint64_t now, int64_t min_ms)
{
	if (!b->tasks) {
		b->tasks = calloc(TASKS_MAX, sizeof(*b->tasks));
		if (!b->tasks)
			return NULL;
	}
	if (b->ntasks == TASKS_MAX) {
		memmove(b->tasks, b->tasks + 1, (TASKS_MAX - 1) * sizeof(*b->tasks));
		b->ntasks--;
	}
	struct bmc_task *t = &b->tasks[b->ntasks++];
	int64_t ms = b->cfg->task_ms > min_ms ? b->cfg->task_ms : min_ms;
	t->id = b->next_task++;
	t->start = now;
	t->done_at = now + (uint64_t)ms;
	kiln_strlcpy(t->action, action, sizeof(t->action));
	return t;
}

struct bmc_task *bmc_task_find(struct bmc *b, unsigned id)
{
	for (size_t i = 0; i < b->ntasks; i++)
		if (b->tasks[i].id == id)
			return &b->tasks[i];
	return NULL;
}

int bmc_fault_add(struct bmc *b, const struct sim_fault *f)
{
	if (b->nfaults >= sizeof(b->faults) / sizeof(b->faults[0]))
		return KILN_ETOOBIG;
	b->faults[b->nfaults++] = *f;
	return 0;
}

struct sim_fault bmc_fault_take(struct bmc *b, bool stale_etag_only)
{
	struct sim_fault none = { 0 };
	for (size_t i = 0; i < b->nfaults; i++) {
		struct sim_fault *f = &b->faults[i];
		if ((f->kind == FAULT_STALE_ETAG) != stale_etag_only)
			continue;
		if (f->prob < 100 && rand() % 100 >= f->prob)
			continue;
		struct sim_fault hit = *f;
		if (f->count > 0 && --f->count == 0) {
			memmove(f, f + 1, (b->nfaults - i - 1) * sizeof(*f));
			b->nfaults--;
		}
		b->faults_hit++;
		return hit;
	}
	return none;
}

static char *body_for_record(const char *body, size_t len)
{
	if (!body || len == 0)
		return NULL;
	json_t *doc = json_loadb(body, len, 0, NULL);
	if (doc && json_object_get(doc, "Password")) {
		json_object_set_new(doc, "Password", json_string("***"));
		char *s = json_dumps(doc, JSON_COMPACT);
		json_decref(doc);
		return s;
	}
	json_decref(doc);
	return strndup(body, len > RECORD_BODY_MAX ? RECORD_BODY_MAX : len);
}

struct bmc_record *bmc_record_add(struct bmc *b, const char *method, const char *path, const char *auth,
				  bool token, const char *if_match, const char *body, size_t body_len)
{
	size_t max = (size_t)b->cfg->record_max;
	if (max == 0)
		return NULL;
	if (!b->records) {
		b->records = calloc(max, sizeof(*b->records));
		if (!b->records)
			return NULL;
	}
	struct bmc_record *r;
	if (b->nrecords < max) {
		r = &b->records[b->nrecords++];
	} else {
		r = &b->records[b->rec_next];
		record_free(r);
		b->rec_next = (b->rec_next + 1) % max;
	}
	memset(r, 0, sizeof(*r));
	r->ms = sim_now_ms();
	kiln_strlcpy(r->method, method, sizeof(r->method));
	r->path = strdup(path);
	if (auth && strncasecmp(auth, "Basic ", 6) == 0)
		kiln_strlcpy(r->auth, "Basic", sizeof(r->auth));
	else if (auth && strncasecmp(auth, "Bearer ", 7) == 0)
		kiln_strlcpy(r->auth, "Bearer", sizeof(r->auth));
	else if (auth)
		kiln_strlcpy(r->auth, "Other", sizeof(r->auth));
	r->token = token;
	r->if_match = if_match ? strdup(if_match) : NULL;
	r->body = body_for_record(body, body_len);
	return r;
}

static json_t *media_json(const struct bmc *b)
{
	json_t *o = json_object();
	for (size_t i = 0; o && i < b->tree->nmedia; i++) {
		const struct tree_medium *tm = &b->tree->media[i];
		const struct bmc_medium *m = &b->media[i];
		json_object_set_new(o, tm->id, json_pack("{s:s, s:b, s:s, s:s*}", "path", tm->res->path,
			"Inserted", m->changed ? m->inserted : tm->inserted,
			"Image", m->changed ? m->image : tm->image,
			"TransferProtocolType", m->changed && m->proto[0] ? m->proto : NULL));
	}
	return o;
}

static json_t *boot_json(const struct bmc_system *s)
{
	return json_pack("{s:s, s:s, s:s*}", "BootSourceOverrideTarget", s->boot_target,
			 "BootSourceOverrideEnabled", s->boot_enabled, "BootSourceOverrideMode",
			 s->boot_mode[0] ? s->boot_mode : NULL);
}

json_t *bmc_state_json(struct bmc *b, uint64_t now)
{
	bmc_sessions_expire(b, now);
	json_t *resets = json_array(), *systems = json_array(), *faults = json_array();
	for (size_t i = 0; i < b->nresets; i++)
		json_array_append_new(resets, json_string(b->resets[i]));
	for (size_t i = 0; i < b->tree->nsystems; i++) {
		char etag[32];
		bmc_system_etag(b, (int)i, etag, sizeof(etag));
		json_array_append_new(systems, json_pack("{s:s, s:s, s:s, s:o, s:s}", "id",
			b->tree->systems[i].id ? b->tree->systems[i].id : "", "path",
			b->tree->systems[i].res->path, "power", bmc_power_name(b->systems[i].power),
			"boot", boot_json(&b->systems[i]), "etag", etag));
	}
	static const char *const kinds[] = { "none", "hang", "reset", "status", "slow", "malformed",
		"truncated", "412", "busy" };
	for (size_t i = 0; i < b->nfaults; i++)
		json_array_append_new(faults, json_pack("{s:s, s:i, s:I, s:i}", "kind",
			kinds[b->faults[i].kind], "status", b->faults[i].status, "count",
			(json_int_t)b->faults[i].count, "prob", b->faults[i].prob));
	json_t *failed = json_array();
	for (size_t i = 0; i < b->nlogin_failures; i++)
		json_array_append_new(failed, json_pack("{s:I, s:s, s:s}", "ms",
			(json_int_t)b->login_failures[i].ms, "via", b->login_failures[i].via,
			"user", b->login_failures[i].user));
	json_t *st = json_pack("{s:i, s:i, s:s, s:s, s:i, s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I}, s:b, s:b, s:o, s:o, s:o, "
			       "s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o}",
		"index", b->index, "port", b->port, "profile", b->cfg->profile->name,
		"power", b->tree->nsystems ? bmc_power_name(b->systems[0].power) : "Unknown",
		"sessions", (int)b->nsessions,
		"requests", "GET", (json_int_t)b->n_get, "POST", (json_int_t)b->n_post,
		"PATCH", (json_int_t)b->n_patch, "DELETE", (json_int_t)b->n_delete,
		"other", (json_int_t)b->n_other, "selected", (json_int_t)b->n_selected,
		"expanded", (json_int_t)b->n_expanded,
		"select_query", b->tree->select_query, "expand_query", b->tree->expand_query,
		"resets", resets, "systems", systems, "media", media_json(b),
		"sessions_created", (json_int_t)b->sessions_created,
		"sessions_deleted", (json_int_t)b->sessions_deleted,
		"sessions_expired", (json_int_t)b->sessions_expired,
		"auth_failures", (json_int_t)b->auth_failures,
		"power_transitions", (json_int_t)b->hook_runs,
		"log_entries_injected", (json_int_t)b->nentries,
		"faults_hit", (json_int_t)b->faults_hit,
		"connections", (json_int_t)b->connections, "faults", faults);
	json_t *logs = json_array();
	for (size_t i = 0; i < b->tree->nlogs; i++) {
		size_t n = 0;
		for (size_t j = 0; j < b->nentries; j++)
			n += b->entries[j].log == (int)i;
		json_array_append_new(logs, json_pack("{s:s, s:s, s:I}", "service", b->tree->logs[i].service,
			"path", b->tree->logs[i].res->path, "injected", (json_int_t)n));
	}
	if (st) {
		json_object_set_new(st, "sessions_peak", json_integer((json_int_t)b->sessions_peak));
		json_object_set_new(st, "login_failures", failed);
	} else {
		json_decref(failed);
	}
	if (st)
		json_object_set_new(st, "logs", logs);
	else
		json_decref(logs);
	if (st)
		json_object_set_new(st, "boot", b->tree->nsystems ? boot_json(&b->systems[0]) : json_object());
	return st;
}

json_t *bmc_requests_json(const struct bmc *b)
{
	json_t *a = json_array();
	size_t n = b->nrecords, max = (size_t)b->cfg->record_max;
	for (size_t k = 0; a && k < n; k++) {
		const struct bmc_record *r = &b->records[n < max ? k : (b->rec_next + k) % max];
		json_array_append_new(a, json_pack("{s:I, s:s, s:s, s:{s:s*, s:b, s:s*}, s:s*, s:i}",
			"ms", (json_int_t)r->ms, "method", r->method, "path", r->path ? r->path : "",
			"headers", "Authorization", r->auth[0] ? r->auth : NULL, "X-Auth-Token", r->token,
			"If-Match", r->if_match, "body", r->body, "status", r->status));
	}
	return a;
}

void bmc_requests_clear(struct bmc *b)
{
	for (size_t i = 0; i < b->nrecords; i++)
		record_free(&b->records[i]);
	b->nrecords = 0;
	b->rec_next = 0;
}
