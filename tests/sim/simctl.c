/* SPDX-License-Identifier: Apache-2.0 */
/* kiln-bmcsim: /_sim/state, /_sim/requests and /_sim/inject on every simulated BMC's port. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "fault.h"
#include "kiln/error.h"
#include "simctl.h"

static void reply(struct sim_reply *out, int status, json_t *doc)
{
	out->status = status;
	out->ctype = "application/json;charset=utf-8";
	out->body = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
	out->len = out->body ? strlen(out->body) : 0;
	json_decref(doc);
}

static void fail(struct sim_reply *out, int status, const char *msg)
{
	reply(out, status, json_pack("{s:s}", "error", msg));
}

static int inject_power(struct bmc *b, json_t *v, uint64_t now, const char **err)
{
	const char *p = json_string_value(v);
	if (!p || (strcmp(p, "On") != 0 && strcmp(p, "Off") != 0)) {
		*err = "power: expected \"On\" or \"Off\"";
		return KILN_EINVAL;
	}
	if (b->tree->nsystems == 0) {
		*err = "power: the tree has no system";
		return KILN_ENOTFOUND;
	}
	bmc_power_force(b, 0, strcmp(p, "On") == 0, now);
	return 0;
}

/* {"boot_progress":"MemoryInitializationStarted"}: the first system's BootProgress.LastState
 * from now on (a host rebooting by itself); "" serves the tree's again. */
static int inject_boot_progress(struct bmc *b, json_t *v, const char **err)
{
	const char *p = json_string_value(v);
	struct bmc_system *s;
	if (!p || strlen(p) >= sizeof(b->systems[0].boot_progress)) {
		*err = "boot_progress: expected a BootProgress LastState string";
		return KILN_EINVAL;
	}
	if (b->tree->nsystems == 0) {
		*err = "boot_progress: the tree has no system";
		return KILN_ENOTFOUND;
	}
	s = &b->systems[0];
	snprintf(s->boot_progress, sizeof(s->boot_progress), "%s", p);
	s->etag_gen++; /* its answer is rendered again */
	return 0;
}

static int inject_fault(struct bmc *b, json_t *v, const char **err)
{
	static char msg[256];
	const char *spec = json_string_value(v);
	struct fault_spec fs;
	if (!spec) {
		*err = "fault: expected a string";
		return KILN_EINVAL;
	}
	if (strcmp(spec, "none") == 0) {
		b->nfaults = 0;
		return 0;
	}
	if (fault_parse(&fs, spec) < 0) {
		snprintf(msg, sizeof(msg), "%s", kiln_error_last());
		*err = msg;
		return KILN_EINVAL;
	}
	if (bmc_fault_add(b, &fs.fault) < 0) {
		*err = "fault: too many faults on this BMC";
		return KILN_ETOOBIG;
	}
	return 0;
}

static int inject_sensor(struct bmc *b, json_t *v, const char **err)
{
	const char *name = json_string_value(json_object_get(v, "name"));
	json_t *reading = json_object_get(v, "reading");
	json_t *health = json_object_get(v, "health");
	double r = json_number_value(reading);
	if (!name || (!json_is_number(reading) && !json_is_string(health)) ||
	    (reading && !json_is_number(reading)) || (health && !json_is_string(health))) {
		*err = "sensor: expected {\"name\": string, \"reading\": number, \"health\": string} "
		       "with a reading, a health or both";
		return KILN_EINVAL;
	}
	int rc = bmc_sensor_set(b, name, json_is_number(reading) ? &r : NULL,
				json_string_value(health));
	if (rc == KILN_ENOTFOUND)
		*err = "sensor: no sensor of that name in the tree";
	else if (rc == KILN_EINVAL)
		*err = "sensor: health too long";
	else if (rc < 0)
		*err = "sensor: too many overrides";
	return rc;
}

static void inject(struct sim_reply *out, struct bmc *b, const char *body, size_t len, uint64_t now)
{
	json_error_t jerr;
	json_t *doc = len ? json_loadb(body, len, 0, &jerr) : NULL;
	const char *k, *err = NULL;
	json_t *v;
	int rc = 0;
	if (!json_is_object(doc) || json_object_size(doc) == 0) {
		json_decref(doc);
		fail(out, 400, "inject: expected a JSON object with log, sensor, fault, power or sessions");
		return;
	}
	json_object_foreach(doc, k, v) {
		if (strcmp(k, "log") != 0 && strcmp(k, "sensor") != 0 && strcmp(k, "fault") != 0 &&
		    strcmp(k, "power") != 0 && strcmp(k, "sessions") != 0 &&
		    strcmp(k, "boot_progress") != 0) {
			json_decref(doc);
			fail(out, 400, "inject: unknown key (log, sensor, fault, power, sessions, "
			     "boot_progress)");
			return;
		}
	}
	json_object_foreach(doc, k, v) {
		if (strcmp(k, "log") == 0)
			rc = bmc_log_inject(b, v, &err);
		else if (strcmp(k, "sensor") == 0)
			rc = inject_sensor(b, v, &err);
		else if (strcmp(k, "fault") == 0)
			rc = inject_fault(b, v, &err);
		else if (strcmp(k, "power") == 0)
			rc = inject_power(b, v, now, &err);
		else if (strcmp(k, "boot_progress") == 0)
			rc = inject_boot_progress(b, v, &err);
		else if (json_is_string(v) && strcmp(json_string_value(v), "expire") == 0)
			bmc_sessions_clear(b);
		else {
			rc = KILN_EINVAL;
			err = "sessions: expected \"expire\"";
		}
		if (rc < 0)
			break;
	}
	json_decref(doc);
	if (rc < 0)
		fail(out, rc == KILN_ENOTFOUND ? 404 : 400, err ? err : "inject failed");
	else
		reply(out, 200, json_pack("{s:b}", "ok", 1));
}

void simctl_handle(struct sim_reply *out, struct bmc *b, const char *method, const char *path,
		   const char *body, size_t body_len, uint64_t now, const char *fingerprint)
{
	if (strcmp(path, "/_sim/state") == 0 && strcmp(method, "GET") == 0) {
		json_t *st = bmc_state_json(b, now);
		if (st && fingerprint)
			json_object_set_new(st, "tls_fingerprint", json_string(fingerprint));
		reply(out, st ? 200 : 500, st);
	} else if (strcmp(path, "/_sim/requests") == 0 && strcmp(method, "GET") == 0) {
		reply(out, 200, bmc_requests_json(b));
	} else if (strcmp(path, "/_sim/requests") == 0 && strcmp(method, "DELETE") == 0) {
		bmc_requests_clear(b);
		reply(out, 200, json_pack("{s:b}", "ok", 1));
	} else if (strcmp(path, "/_sim/inject") == 0 && strcmp(method, "POST") == 0) {
		inject(out, b, body, body_len, now);
	} else {
		fail(out, 404, "unknown /_sim/ endpoint (GET state, GET|DELETE requests, POST inject)");
	}
}
