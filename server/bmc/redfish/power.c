/* SPDX-License-Identifier: Apache-2.0 */
/* Redfish power: read PowerState, act with a ResetType the BMC allows, and confirm the
 * outcome by reading PowerState back (a cycle or reset must be seen to happen). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bmc/redfish/internal.h"
#include "kiln/error.h"

#define POLL_MS 500

enum { GOAL_ON = 1, GOAL_OFF, GOAL_CYCLE };

enum bmc_power rf_power_parse(const char *s)
{
	if (!s)
		return BMC_POWER_UNKNOWN;
	if (strcmp(s, "On") == 0)
		return BMC_POWER_ON;
	if (strcmp(s, "Off") == 0)
		return BMC_POWER_OFF;
	return BMC_POWER_UNKNOWN; /* PoweringOn, PoweringOff, Paused, null */
}

json_t *rf_reset_allowed_parse(const json_t *obj)
{
	json_t *v = json_object_get(obj, "ResetType@Redfish.AllowableValues");
	if (json_is_array(v))
		return json_deep_copy(v);
	size_t i;
	json_t *p;
	json_array_foreach(json_object_get(obj, "Parameters"), i, p) {
		const char *name = json_string_value(json_object_get(p, "Name"));
		json_t *av = json_object_get(p, "AllowableValues");
		if (name && strcmp(name, "ResetType") == 0 && json_is_array(av))
			return json_deep_copy(av);
	}
	return NULL;
}

const char *rf_reset_pick(const json_t *allowed, const char *const *candidates)
{
	for (size_t c = 0; candidates[c]; c++) {
		if (!allowed)
			return candidates[c];
		size_t i;
		json_t *v;
		json_array_foreach(allowed, i, v)
			if (json_is_string(v) && strcmp(json_string_value(v), candidates[c]) == 0)
				return candidates[c];
	}
	return NULL;
}

static const char *const ON_TYPES[] = {"On", "ForceOn", NULL};
static const char *const OFF_TYPES[] = {"ForceOff", NULL};
static const char *const SOFT_TYPES[] = {"GracefulShutdown", NULL};
static const char *const RESET_TYPES[] = {"ForceRestart", "GracefulRestart", "PowerCycle", NULL};
static const char *const CYCLE_TYPES[] = {"PowerCycle", NULL};

static const char *action_name(enum bmc_power_action a)
{
	switch (a) {
	case BMC_ACT_ON: return "on";
	case BMC_ACT_OFF: return "off";
	case BMC_ACT_SOFT: return "soft";
	case BMC_ACT_RESET: return "reset";
	default: return "cycle";
	}
}

static int not_allowed(struct rf_op *op, const char *what)
{
	char *list = op->bmc->reset_allowed ? json_dumps(op->bmc->reset_allowed, JSON_COMPACT) : NULL;
	int rc = kiln_fail(KILN_EINVAL, "no allowed ResetType for '%s' (the BMC allows %s)", what,
			   list ? list : "none");
	free(list);
	return rc;
}

static int on_reset_reply(struct rf_op *op, const struct rf_reply *r);
static int on_poll(struct rf_op *op, const struct rf_reply *r);

static int send_reset(struct rf_op *op, const char *type, long delay_ms)
{
	char body[64];
	if (!op->bmc->reset_target)
		return kiln_fail(KILN_EPROTO, "the system has no ComputerSystem.Reset action");
	snprintf(body, sizeof(body), "{\"ResetType\":\"%s\"}", type);
	op->reset_type = type;
	rf_push(op, "POST", op->bmc->reset_target, body, RF_ALLOW_ERROR, on_reset_reply);
	if (delay_ms)
		op->last_pushed->not_before_ms = rf_now_ms() + delay_ms;
	return 0;
}

/* The first read right away (a short PoweringOff is easy to miss), then every POLL_MS. */
static int confirm_begin(struct rf_op *op)
{
	rf_push(op, "GET", op->bmc->system, NULL, 0, on_poll);
	return 0;
}

static int on_race_state(struct rf_op *op, const struct rf_reply *r)
{
	const char *raw = json_string_value(json_object_get(r->json, "PowerState"));
	enum bmc_power p = rf_power_parse(raw);
	/* a redundant request (ForceOff of a node already off): the state is what we wanted */
	if ((op->goal == GOAL_OFF && p == BMC_POWER_OFF) || (op->goal == GOAL_ON && p == BMC_POWER_ON))
		return confirm_begin(op);
	if (op->retried)
		return kiln_fail(KILN_EBUSY, "POST %s: the BMC refused %s twice in state '%s'",
				 op->bmc->reset_target, op->reset_type, raw ? raw : "null");
	op->retried = 1;
	return send_reset(op, op->reset_type, 2000);
}

static int on_reset_reply(struct rf_op *op, const struct rf_reply *r)
{
	if (r->status >= 400) {
		if (r->body_len && memmem(r->body, r->body_len, "InvalidOperationForSystemState", 30)) {
			rf_push(op, "GET", op->bmc->system, NULL, 0, on_race_state);
			return 0;
		}
		return rf_fail_reply("POST", op->bmc->reset_target, r);
	}
	const char *prev = json_string_value(json_object_get(op->data, "reset_type"));
	if (prev) { /* a cycle as off then on: "ForceOff+On" */
		char both[64];
		snprintf(both, sizeof(both), "%s+%s", prev, op->reset_type);
		json_object_set_new(op->data, "reset_type", json_string(both));
	} else {
		json_object_set_new(op->data, "reset_type", json_string(op->reset_type));
	}
	if (r->status == 202 && r->location)
		return rf_task_follow(op, r->location, r->retry_after_s, confirm_begin);
	return confirm_begin(op);
}

static void succeed(struct rf_op *op, enum bmc_power p, const char *result)
{
	json_object_set_new(op->data, "power", json_string(bmc_power_name(p)));
	json_object_set_new(op->data, "result", json_string(result));
}

static int on_poll(struct rf_op *op, const struct rf_reply *r)
{
	const char *raw = json_string_value(json_object_get(r->json, "PowerState"));
	enum bmc_power p = rf_power_parse(raw);

	/* PoweringOn after a reset of a node that was on also shows the cycle happened */
	if (raw && (strcmp(raw, "Off") == 0 || strcmp(raw, "PoweringOff") == 0 ||
		    strcmp(raw, "PoweringOn") == 0))
		op->seen_off = 1;
	if (op->goal == GOAL_ON && p == BMC_POWER_ON) {
		succeed(op, p, "ok");
		return 0;
	}
	if (op->goal == GOAL_OFF && p == BMC_POWER_OFF) {
		if (op->second_reset) {
			const char *on = op->second_reset;
			op->second_reset = NULL;
			op->goal = GOAL_ON;
			return send_reset(op, on, 0);
		}
		succeed(op, p, "ok");
		return 0;
	}
	if (op->goal == GOAL_CYCLE && p == BMC_POWER_ON && (op->seen_off || op->task_done)) {
		succeed(op, p, "ok");
		return 0;
	}
	if (rf_now_ms() > op->deadline_ms) {
		json_object_set_new(op->data, "power", json_string(bmc_power_name(p)));
		if (op->goal == GOAL_CYCLE && !op->seen_off)
			return kiln_fail(KILN_ETIMEOUT, "%s sent but the node was never seen going "
					 "off (PowerState '%s') before the action timeout",
					 op->reset_type, raw ? raw : "null");
		return kiln_fail(KILN_ETIMEOUT, "%s sent but PowerState is still '%s' at the "
				 "action timeout", op->reset_type, raw ? raw : "null");
	}
	rf_push_delayed(op, "GET", op->bmc->system, POLL_MS, on_poll);
	return 0;
}

static int act(struct rf_op *op, const char *const *types, const char *what, int goal)
{
	const char *t = rf_reset_pick(op->bmc->reset_allowed, types);
	if (!t)
		return not_allowed(op, what);
	op->goal = goal;
	return send_reset(op, t, 0);
}

void rf_power_read_system(struct rf_op *op, const json_t *sys)
{
	const char *raw = json_string_value(json_object_get(sys, "PowerState"));
	json_decref(op->data);
	op->data = json_object();
	json_object_set_new(op->data, "power", json_string(bmc_power_name(rf_power_parse(raw))));
	json_object_set_new(op->data, "power_state", raw ? json_string(raw) : json_null());
	rf_boot_progress_read(op->data, sys);
	/* kept for the sensors read that follows: its parts' rollups need no GET of their own */
	json_decref(op->bmc->system_doc);
	op->bmc->system_doc = rf_system_digest(sys);
	op->bmc->system_doc_ms = rf_now_ms();
}

/* BootProgress as vendors fill it: LastState alone (iDRAC 9), with LastBootTimeSeconds (iLO
 * 6), with LastStateTime too (DMTF's servers), "None" at an epoch time (OpenBMC before the
 * host reports). The state goes into data as "boot_progress" (not "None", nor an OEM one
 * without its OemLastState), the seconds as "last_boot_s". */
void rf_boot_progress_read(json_t *data, const json_t *sys)
{
	const json_t *bp = json_object_get(sys, "BootProgress");
	const char *state = json_string_value(json_object_get(bp, "LastState"));
	const json_t *secs = json_object_get(bp, "LastBootTimeSeconds");

	if (state && strcmp(state, "OEM") == 0)
		state = json_string_value(json_object_get(bp, "OemLastState"));
	if (state && state[0] && strlen(state) < 64 && strcmp(state, "None") != 0)
		json_object_set_new(data, "boot_progress", json_string(state));
	if (json_is_integer(secs) && json_integer_value(secs) > 0 &&
	    json_integer_value(secs) < 24 * 3600)
		json_object_set_new(data, "last_boot_s", json_integer(json_integer_value(secs)));
}

static int on_initial(struct rf_op *op, const struct rf_reply *r)
{
	const char *raw = json_string_value(json_object_get(r->json, "PowerState"));
	enum bmc_power p = rf_power_parse(raw);
	enum bmc_power_action a = op->op.action;

	if (op->op.kind == BMC_OP_POWER_GET) {
		rf_power_read_system(op, r->json);
		return 0;
	}
	op->data = json_object();
	json_object_set_new(op->data, "power", json_string(bmc_power_name(p)));
	json_object_set_new(op->data, "action", json_string(action_name(a)));
	if (p == BMC_POWER_UNKNOWN)
		return kiln_fail(KILN_EBUSY, "PowerState is '%s'; no action on an unknown state",
				 raw ? raw : "null");

	switch (a) {
	case BMC_ACT_ON:
		if (p == BMC_POWER_ON)
			break;
		return act(op, ON_TYPES, "on", GOAL_ON);
	case BMC_ACT_OFF:
		if (p == BMC_POWER_OFF)
			break;
		return act(op, OFF_TYPES, "off", GOAL_OFF);
	case BMC_ACT_SOFT:
		if (p == BMC_POWER_OFF)
			break;
		return act(op, SOFT_TYPES, "soft", GOAL_OFF);
	case BMC_ACT_RESET:
	case BMC_ACT_CYCLE:
		if (p == BMC_POWER_OFF) {
			if (!op->op.on_if_off)
				return kiln_fail(KILN_EINVAL, "the node is off; %s does not power it on "
						 "without --on-if-off", action_name(a));
			return act(op, ON_TYPES, "on", GOAL_ON);
		}
		if (a == BMC_ACT_RESET)
			return act(op, RESET_TYPES, "reset", GOAL_CYCLE);
		if (rf_reset_pick(op->bmc->reset_allowed, CYCLE_TYPES))
			return act(op, CYCLE_TYPES, "cycle", GOAL_CYCLE);
		/* no PowerCycle: off, wait for Off, then on */
		op->second_reset = rf_reset_pick(op->bmc->reset_allowed, ON_TYPES);
		if (!op->second_reset)
			return not_allowed(op, "on");
		return act(op, OFF_TYPES, "cycle (off then on)", GOAL_OFF);
	}
	json_object_set_new(op->data, "result", json_string("noop"));
	return 0;
}

/* A power read with $select: the answer is the few members asked for. A service that
 * refuses the query (400, 501) or answers without PowerState gets the plain GET, now and
 * from then on. */
static int on_selected(struct rf_op *op, const struct rf_reply *r)
{
	struct redfish_bmc *b = op->bmc;
	if (r->status == 400 || r->status == 501 ||
	    (r->status < 300 && !json_object_get(r->json, "PowerState"))) {
		b->select_refused = 1;
		rf_push(op, "GET", b->system, NULL, 0, on_initial);
		return 0;
	}
	if (r->status >= 300)
		return rf_fail_reply("GET", b->system, r);
	return on_initial(op, r);
}

int rf_power_start(struct rf_op *op)
{
	struct redfish_bmc *b = op->bmc;
	if (op->op.kind == BMC_OP_POWER_GET && op->data)
		return 0; /* read from the system resource that discovery fetched */
	if (op->op.kind == BMC_OP_POWER_GET && b->select_query && !b->select_refused) {
		/* "$" and "," are legal in a query (RFC 3986 sub-delims): written as DSP0266's
		 * examples write them */
		char path[1024];
		int n = snprintf(path, sizeof(path),
				 "%s%c$select=PowerState,BootProgress,Status,MemorySummary,"
				 "ProcessorSummary,Memory,Processors,Storage", b->system,
				 strchr(b->system, '?') ? '&' : '?');
		if (n > 0 && (size_t)n < sizeof(path)) {
			rf_push(op, "GET", path, NULL, RF_ALLOW_ERROR, on_selected);
			return 0;
		}
	}
	rf_push(op, "GET", b->system, NULL, 0, on_initial);
	return 0;
}
