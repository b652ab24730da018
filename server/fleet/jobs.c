/* SPDX-License-Identifier: Apache-2.0 */
/* Reinstall jobs: the step logic (job_decide) and the thread that runs it on every active job. */
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <sodium.h>

#include "bmc/target.h"
#include "daemon/config.h"
#include "fleet/guard.h"
#include "cluster/cluster.h"
#include "cluster/handoff.h"
#include "fleet/jobs.h"
#include "kiln/error.h"
#include "kiln/log.h"
#include "cluster/node_lock.h"

static const char *const step_names[] = {
	[JOB_STEP_BOOT_ID] = "boot_id",         [JOB_STEP_MEDIA_INSERT] = "media_insert",
	[JOB_STEP_BOOT_SET] = "boot_set",       [JOB_STEP_POWER_CYCLE] = "power_cycle",
	[JOB_STEP_WAIT_BOOT] = "wait_boot",     [JOB_STEP_MEDIA_EJECT] = "media_eject",
	[JOB_STEP_DONE] = "done",
};

#define NSTEPS (sizeof(step_names) / sizeof(step_names[0]))

static const enum job_step plan_iso[] = { JOB_STEP_BOOT_ID, JOB_STEP_MEDIA_INSERT,
					  JOB_STEP_BOOT_SET, JOB_STEP_POWER_CYCLE,
					  JOB_STEP_WAIT_BOOT, JOB_STEP_MEDIA_EJECT, JOB_STEP_DONE };
static const enum job_step plan_pxe[] = { JOB_STEP_BOOT_ID, JOB_STEP_BOOT_SET,
					  JOB_STEP_POWER_CYCLE, JOB_STEP_WAIT_BOOT,
					  JOB_STEP_DONE };

const char *job_step_name(enum job_step s)
{
	return (size_t)s < NSTEPS ? step_names[s] : "?";
}

int job_step_parse(enum job_step *out, const char *name)
{
	for (size_t i = 0; name && i < NSTEPS; i++) {
		if (strcmp(name, step_names[i]) == 0) {
			*out = (enum job_step)i;
			return 0;
		}
	}
	return kiln_fail(KILN_EINVAL, "'%s' is not a job step", name ? name : "(null)");
}

static size_t plan_of(const enum job_step **out, int iso)
{
	*out = iso ? plan_iso : plan_pxe;
	return iso ? sizeof(plan_iso) / sizeof(plan_iso[0]) : sizeof(plan_pxe) / sizeof(plan_pxe[0]);
}

enum job_step job_step_after(enum job_step s, int iso)
{
	const enum job_step *plan;
	size_t n = plan_of(&plan, iso);

	for (size_t i = 0; i + 1 < n; i++)
		if (plan[i] == s)
			return plan[i + 1];
	return JOB_STEP_DONE;
}

void job_step_progress(int *out_index, int *out_total, enum job_step s, int iso)
{
	const enum job_step *plan;
	size_t n = plan_of(&plan, iso);

	*out_total = (int)n - 1;
	*out_index = (int)n - 1;
	for (size_t i = 0; i < n; i++) {
		if (plan[i] == s) {
			*out_index = s == JOB_STEP_DONE ? (int)n - 1 : (int)i + 1;
			return;
		}
	}
}

/* Whether the agent has come back from a boot after the job's cycle. */
static int boot_changed(const struct job *j, const struct job_facts *f)
{
	if (!f->boot_id || !f->boot_id[0])
		return 0;
	if (j->boot_id_before && j->boot_id_before[0])
		return strcmp(f->boot_id, j->boot_id_before) != 0;
	/* No boot id before: any report after the cycle was sent comes from a new boot. */
	return j->cycle_sent_at > 0 && f->agent_last_seen > j->cycle_sent_at;
}

static int os_matches(const char *want, const char *have)
{
	size_t n;

	if (!want || !want[0])
		return 1;
	if (!have)
		return 0;
	n = strlen(want);
	for (const char *p = have; *p; p++)
		if (strncasecmp(p, want, n) == 0)
			return 1;
	return 0;
}

/* Failures that retrying does not mend: a BMC without the device, a refused value, a BMC
 * that does not fit the node. */
static int permanent(int rc)
{
	return rc == KILN_ENOTFOUND || rc == KILN_EINVAL || rc == KILN_EAUTH || rc == KILN_EPERM ||
	       rc == KILN_ECONFIG;
}

static void decide_set(struct job_next *out, enum job_verdict v, enum job_step step)
{
	out->verdict = v;
	out->step = step;
}

void job_decide(struct job_next *out, const struct job *j, const struct job_facts *f,
		const struct job_limits *lim)
{
	enum job_step step = JOB_STEP_BOOT_ID;
	int iso = j->image_kind && strcmp(j->image_kind, "iso") == 0;
	int64_t limit, deadline;
	const char *name;

	memset(out, 0, sizeof(*out));
	if (job_step_parse(&step, j->step) < 0) {
		decide_set(out, JOB_FAIL, step);
		snprintf(out->message, sizeof(out->message), "unknown step '%.60s'",
			 j->step ? j->step : "");
		return;
	}
	name = job_step_name(step);
	limit = step == JOB_STEP_WAIT_BOOT ? lim->boot_timeout_s : lim->step_timeout_s;
	deadline = j->step_started + limit;

	switch (step) {
	case JOB_STEP_BOOT_ID:
		decide_set(out, JOB_ADVANCE, job_step_after(step, iso));
		out->record_boot_id = 1;
		return;
	case JOB_STEP_MEDIA_INSERT:
	case JOB_STEP_BOOT_SET:
	case JOB_STEP_POWER_CYCLE:
	case JOB_STEP_MEDIA_EJECT:
		if (f->op_in_flight) {
			decide_set(out, JOB_WAIT, step);
			return;
		}
		if (f->op_done && f->op_rc == 0) {
			decide_set(out, JOB_ADVANCE, job_step_after(step, iso));
			out->cycle_done = step == JOB_STEP_POWER_CYCLE;
			return;
		}
		if (step == JOB_STEP_POWER_CYCLE && boot_changed(j, f)) {
			/* Whatever the BMC said, the node came back from a new boot. */
			decide_set(out, JOB_ADVANCE, JOB_STEP_WAIT_BOOT);
			out->cycle_done = 1;
			return;
		}
		if (f->op_done) {
			const char *err = f->op_error && f->op_error[0] ? f->op_error
								      : kiln_error_name(f->op_rc);

			if (permanent(f->op_rc)) {
				decide_set(out, JOB_FAIL, step);
				snprintf(out->message, sizeof(out->message), "step %s: %s", name, err);
			} else if (f->now >= deadline) {
				decide_set(out, JOB_FAIL, step);
				snprintf(out->message, sizeof(out->message),
					 "step %s timed out after %llds: %s", name, (long long)limit,
					 err);
			} else {
				decide_set(out, JOB_RETRY_LATER, step);
				snprintf(out->message, sizeof(out->message), "step %s: %s", name, err);
			}
			return;
		}
		if (f->now >= deadline) {
			decide_set(out, JOB_FAIL, step);
			snprintf(out->message, sizeof(out->message), "step %s timed out after %llds%s%s",
				 name, (long long)limit, j->error ? ": " : "",
				 j->error ? j->error : "");
			return;
		}
		if (f->retry_at && f->now < f->retry_at) {
			decide_set(out, JOB_WAIT, step);
			return;
		}
		if (step == JOB_STEP_POWER_CYCLE && j->cycle_sent_at > 0) {
			/* Sent before kilnd stopped, outcome unknown: never cycle twice blindly. */
			decide_set(out, JOB_ADVANCE, JOB_STEP_WAIT_BOOT);
			return;
		}
		decide_set(out, JOB_SUBMIT, step);
		return;
	case JOB_STEP_WAIT_BOOT:
		if (boot_changed(j, f)) {
			if (os_matches(j->image_os, f->os)) {
				decide_set(out, JOB_ADVANCE, job_step_after(step, iso));
				out->cycle_done = 1;
				return;
			}
			if (f->now >= deadline) {
				decide_set(out, JOB_FAIL, step);
				snprintf(out->message, sizeof(out->message),
					 "step %s timed out after %llds: the agent reports os '%.120s', "
					 "not '%.120s'",
					 name, (long long)limit, f->os ? f->os : "", j->image_os);
				return;
			}
			decide_set(out, JOB_WAIT, step);
			return;
		}
		if (!j->cycle_done && j->cycle_sent_at > 0 && f->boot_id && j->boot_id_before &&
		    f->agent_last_seen > j->cycle_sent_at + lim->action_timeout_s &&
		    f->agent_report_time > j->cycle_sent_at + lim->action_timeout_s) {
			/* The old system still reports long after the cycle would have ended it:
			 * the cycle lost to the restart never happened. A report it made before
			 * the cycle took it down, spooled while kilnd was stopped and received
			 * only now, says no such thing (its own time tells). */
			decide_set(out, JOB_ADVANCE, JOB_STEP_POWER_CYCLE);
			out->cycle_reset = 1;
			return;
		}
		if (f->now >= deadline) {
			decide_set(out, JOB_FAIL, step);
			snprintf(out->message, sizeof(out->message),
				 "step %s timed out after %llds: no new boot id from the agent", name,
				 (long long)limit);
			return;
		}
		decide_set(out, JOB_WAIT, step);
		return;
	case JOB_STEP_DONE:
		decide_set(out, JOB_FINISH, step);
		return;
	}
	decide_set(out, JOB_WAIT, step);
}

/* --- the thread ---------------------------------------------------------------------- */

/* What the thread keeps in memory for one active job. */
struct job_slot {
	int64_t job_id;
	int64_t node_id;
	int in_flight;     /* a BMC operation of this job is running */
	int done;          /* it finished: rc, error */
	int rc;
	char error[512];
	int64_t op_audit_id;
	int64_t op_claim_id;  /* its node_calls claim (several kilnd), deleted with the result */
	int64_t retry_at;
	int claimed;       /* holds the node's in-flight mark */
	int live;          /* seen in this scan */
};

struct jobs {
	pthread_t thread;
	int thread_started;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int stopping;
	char *db_path;
	const struct secret_key *key; /* the state dir's, which outlives the jobs */
	struct bmc_engine *engine;
	struct guard *guard;
	struct cluster *cluster;
	struct job_limits limits;
	int64_t retry_s;
	int64_t tick_ms;
	struct job_slot *slots; /* guarded by lock: the engine's callbacks write results */
	size_t nslots, cap;
};

/* One operation handed to the engine. */
struct job_call {
	struct jobs *js;
	int64_t job_id;
};

static struct job_slot *slot_find(struct jobs *js, int64_t job_id)
{
	for (size_t i = 0; i < js->nslots; i++)
		if (js->slots[i].job_id == job_id)
			return &js->slots[i];
	return NULL;
}

static void on_done(void *ud, const struct bmc_result *res)
{
	struct job_call *call = ud;
	struct jobs *js = call->js;
	struct job_slot *s;

	pthread_mutex_lock(&js->lock);
	s = slot_find(js, call->job_id);
	if (s) {
		s->in_flight = 0;
		s->done = 1;
		s->rc = res->rc;
		snprintf(s->error, sizeof(s->error), "%s", res->rc < 0 ? res->error : "");
	}
	pthread_cond_signal(&js->cond);
	pthread_mutex_unlock(&js->lock);
	free(call);
}

static int64_t now_s(void)
{
	return (int64_t)time(NULL);
}

static void job_event(struct store *st, const struct job *j, enum event_severity sev,
		      const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void job_event(struct store *st, const struct job *j, enum event_severity sev,
		      const char *fmt, ...)
{
	struct event ev = { 0 };
	char msg[640];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ev.node_id = j->node_id;
	ev.severity = sev;
	ev.source = "action";
	ev.kind = "reinstall";
	ev.message = msg;
	if (store_event_insert(st, &ev, NULL) < 0)
		log_warn("jobs: job %lld: event not stored: %s", (long long)j->id,
			 kiln_error_last());
}

static int set_str(char **field, const char *v)
{
	char *copy = NULL;

	if (v && !(copy = strdup(v)))
		return kiln_fail(KILN_ERROR, "out of memory");
	free(*field);
	*field = copy;
	return 0;
}

static int set_state(struct job *j, const char *state)
{
	return set_str(&j->state, state);
}

/* Ends the job (done or failed), its audit row, its event and the node's mark. */
static void job_end(struct jobs *js, struct store *st, struct job *j, struct job_slot *slot,
		    const char *error)
{
	char outcome[600];

	if (set_state(j, error ? "failed" : "done") < 0 || set_str(&j->error, error) < 0)
		log_warn("jobs: job %lld: out of memory", (long long)j->id);
	j->finished_at = now_s();
	if (store_job_update(st, j) < 0)
		log_warn("jobs: job %lld: not stored: %s", (long long)j->id, kiln_error_last());
	if (error)
		snprintf(outcome, sizeof(outcome), "failed: %s", error);
	else
		snprintf(outcome, sizeof(outcome), "ok");
	if (j->audit_id > 0)
		store_audit_finish(st, j->audit_id, outcome); /* best effort */
	if (error) {
		job_event(st, j, SEV_WARNING, "reinstall %lld of %s from %s failed: %s",
			  (long long)j->id, j->node, j->image, error);
		log_warn("jobs: job %lld (%s): failed: %s", (long long)j->id, j->node, error);
	} else {
		job_event(st, j, SEV_INFO, "reinstall %lld of %s from %s done", (long long)j->id,
			  j->node, j->image);
		log_info("jobs: job %lld (%s): done", (long long)j->id, j->node);
	}
	if (slot->claimed) {
		node_lock_release(j->node_id);
		slot->claimed = 0;
	}
	/* kiln's drain ends once the reinstalled node's agent reports; a failed job leaves the
	 * node drained for a person to look at */
	if (j->drained && !error)
		guard_resume_after(js->guard, j->node_id, j->node, now_s());
}

static const char *op_audit_name(enum job_step step)
{
	switch (step) {
	case JOB_STEP_MEDIA_INSERT: return "media.insert";
	case JOB_STEP_BOOT_SET: return "boot.set";
	case JOB_STEP_POWER_CYCLE: return "power.cycle";
	case JOB_STEP_MEDIA_EJECT: return "media.eject";
	default: return "?";
	}
}

/* The step's BMC operation ended: its audit row says how, its claim goes. */
static void job_op_end(struct store *st, struct job_slot *slot, const char *outcome)
{
	if (slot->op_audit_id > 0)
		store_audit_finish(st, slot->op_audit_id, outcome); /* best effort */
	if (slot->op_claim_id > 0)
		store_node_call_delete(st, slot->op_claim_id);
	slot->op_audit_id = slot->op_claim_id = 0;
}

/* Sends the step's BMC operation: audit row first, then the engine. Returns 0 when sent,
 * or a negative code (the job fails with its message). */
static int job_submit(struct jobs *js, struct store *st, struct job *j, struct job_slot *slot,
		      enum job_step step)
{
	struct bmc_op op = { 0 };
	struct bmc_target target;
	struct node *n = NULL;
	struct job_call *call = NULL;
	char *password = NULL, *detail = NULL;
	int iso = j->image_kind && strcmp(j->image_kind, "iso") == 0;
	int rc;

	if (!js->engine)
		return kiln_fail(KILN_ERROR, "kilnd runs without a BMC engine");
	switch (step) {
	case JOB_STEP_MEDIA_INSERT:
		op.kind = BMC_OP_MEDIA_INSERT;
		op.media_url = j->image_url;
		break;
	case JOB_STEP_BOOT_SET:
		op.kind = BMC_OP_BOOT_SET;
		op.boot = iso ? BMC_BOOT_CD : BMC_BOOT_PXE;
		op.persistent = 0;
		break;
	case JOB_STEP_POWER_CYCLE:
		op.kind = BMC_OP_POWER_ACTION;
		op.action = BMC_ACT_CYCLE;
		op.on_if_off = 1;
		break;
	case JOB_STEP_MEDIA_EJECT:
		op.kind = BMC_OP_MEDIA_EJECT;
		break;
	default:
		return kiln_fail(KILN_ERROR, "step %s has no BMC operation", job_step_name(step));
	}
	if ((rc = store_node_get(st, &n, j->node)) < 0)
		goto cleanup;
	if ((rc = bmc_target_from_node(&target, &password, n, js->key)) < 0)
		goto cleanup;
	{
		json_t *d = json_pack("{s:I, s:s, s:s?}", "job", (json_int_t)j->id, "image", j->image,
				      "url", op.kind == BMC_OP_MEDIA_INSERT ? j->image_url : NULL);

		if (op.kind == BMC_OP_BOOT_SET && d)
			json_object_set_new(d, "device", json_string(iso ? "cd" : "pxe"));
		detail = d ? json_dumps(d, JSON_COMPACT) : NULL;
		json_decref(d);
	}
	/* The audit row, the claim (several kilnd) and a cycle's time, together and before the
	 * BMC hears of it: a restart, or the node's next owner, must know it may have happened. */
	if ((rc = store_begin(st)) < 0)
		goto cleanup;
	if ((rc = store_audit_begin(st, &slot->op_audit_id, j->created_by ? j->created_by : "?",
				    op_audit_name(step), j->node, detail)) < 0 ||
	    (rc = handoff_row(st, js->cluster, n->id, n->name, &op, slot->op_audit_id, NULL,
			      &slot->op_claim_id)) < 0)
		goto rollback;
	if (step == JOB_STEP_POWER_CYCLE) {
		j->cycle_sent_at = now_s();
		if ((rc = store_job_update(st, j)) < 0)
			goto rollback;
	}
	if ((rc = store_commit(st)) < 0)
		goto rollback;
	call = malloc(sizeof(*call));
	if (!call) {
		rc = kiln_fail(KILN_ERROR, "out of memory");
		job_op_end(st, slot, "failed: out of memory");
		goto cleanup;
	}
	call->js = js;
	call->job_id = j->id;
	pthread_mutex_lock(&js->lock);
	slot->in_flight = 1;
	slot->done = 0;
	pthread_mutex_unlock(&js->lock);
	rc = bmc_submit(js->engine, &target, &op, on_done, call);
	if (rc < 0) {
		pthread_mutex_lock(&js->lock);
		slot->in_flight = 0;
		pthread_mutex_unlock(&js->lock);
		free(call);
		job_op_end(st, slot, "failed: not sent");
	}
	goto cleanup;
rollback:
	store_rollback(st);
	slot->op_audit_id = slot->op_claim_id = 0;
	if (step == JOB_STEP_POWER_CYCLE)
		j->cycle_sent_at = 0;
cleanup:
	secret_free_string(password);
	node_free(n);
	free(detail);
	return rc;
}

/* A drain of the job's node: begun (kiln's reason in Slurm), the job stays queued. 1: it
 * waits, the job was ended otherwise. */
static int job_drain_begin(struct jobs *js, struct store *st, struct job *j, struct job_slot *slot,
			   const struct node_work *w, const char *msg)
{
	char reason[200], text[1200];
	int rc;

	snprintf(reason, sizeof(reason), "%s reinstall by %s", SCHED_TAG,
		 j->created_by ? j->created_by : "?");
	rc = guard_drain(js->guard, j->node, w, reason);
	if (rc < 0) {
		snprintf(text, sizeof(text), "refused: drain failed: %s", kiln_error_last());
		job_end(js, st, j, slot, text);
		return 1;
	}
	j->drained = rc == 1;
	j->drain_started = now_s();
	snprintf(text, sizeof(text), "draining: waiting for %s", msg);
	set_str(&j->error, text);
	if (store_job_update(st, j) < 0)
		log_warn("jobs: job %lld: %s", (long long)j->id, kiln_error_last());
	log_info("jobs: job %lld (%s): %s", (long long)j->id, j->node, text);
	return 1;
}

/*
 * A reinstall destroys what runs on the node: before its first step (nothing sent yet), the
 * work on the node refuses the job unless it was asked with force, or (drain) keeps it
 * queued, the node drained in Slurm, until the work ended or the drain's timeout (then the
 * job fails and kiln's drain is undone). On the jobs thread (a scheduler command waits
 * here, never on an HTTP thread), at most every [scheduler] drain_poll. Returns 1 when the
 * job does not start now (refused, ended, or still waiting).
 */
static int job_guard(struct jobs *js, struct store *st, struct job *j, struct job_slot *slot)
{
	struct node *n = NULL;
	struct node_work w;
	char msg[1024], text[1200];
	int64_t now = now_s();

	if (!js->guard)
		return 0;
	if (j->drain_started > 0 && slot->retry_at > now)
		return 1; /* the next look of the drain */
	if (store_node_get(st, &n, j->node) < 0) {
		kiln_error_clear();
		return 0;
	}
	guard_node_work(js->guard, st, n, &w);
	node_free(n);
	slot->retry_at = now + (guard_poll_ms(js->guard) + 999) / 1000;
	if (j->drain_started > 0 && w.sched_failed)
		return 1; /* Slurm could not be asked: again at the next look */
	if (!work_blocks(&w, msg, sizeof(msg))) {
		slot->retry_at = 0;
		return 0;
	}
	if (j->force) {
		log_info("jobs: job %lld (%s): forced although work runs: %s", (long long)j->id,
			 j->node, msg);
		job_event(st, j, SEV_WARNING, "reinstall %lld of %s forced by %s although work runs: "
			  "%.300s", (long long)j->id, j->node, j->created_by, msg);
		return 0;
	}
	if (j->drain && !w.sched_failed && j->drain_started == 0)
		return job_drain_begin(js, st, j, slot, &w, msg);
	if (j->drain && j->drain_started > 0) {
		if (now - j->drain_started < j->drain_timeout_s)
			return 1;
		if (j->drained)
			guard_resume(js->guard, j->node);
		j->drained = 0;
		snprintf(text, sizeof(text), "drain timed out: still running after %llds: %s",
			 (long long)j->drain_timeout_s, msg);
		job_end(js, st, j, slot, text);
		return 1;
	}
	snprintf(text, sizeof(text), "refused: work running: %s (--drain waits for it; --force "
		 "reinstalls anyway)", msg);
	job_end(js, st, j, slot, text);
	return 1;
}

/* Moves one job as far as it can go now. */
static void job_tick(struct jobs *js, struct store *st, struct job *j, struct job_slot *slot)
{
	for (int round = 0; round < 16; round++) {
		struct agent_state as = { 0 };
		struct job_facts f = { 0 };
		struct job_next next;
		char error[512] = "";
		enum job_step step;
		int have_agent;

		if (strcmp(j->state, "queued") == 0) {
			if (job_guard(js, st, j, slot))
				return;
			if (set_state(j, "running") < 0 || set_str(&j->step, "boot_id") < 0)
				return;
			j->started_at = j->step_started = now_s();
			if (store_job_update(st, j) < 0) {
				log_warn("jobs: job %lld: %s", (long long)j->id, kiln_error_last());
				return;
			}
			job_event(st, j, SEV_INFO, "reinstall %lld of %s from %s started by %s",
				  (long long)j->id, j->node, j->image, j->created_by);
			log_info("jobs: job %lld (%s): started", (long long)j->id, j->node);
		}
		have_agent = store_agent_state_get(st, &as, j->node_id, 0) == 0;
		f.now = now_s();
		f.boot_id = have_agent ? as.boot_id : NULL;
		f.os = have_agent ? as.os : NULL;
		f.agent_last_seen = have_agent ? as.last_seen : 0;
		f.agent_report_time = have_agent ? as.report_time : 0;
		pthread_mutex_lock(&js->lock);
		f.op_in_flight = slot->in_flight;
		f.op_done = slot->done;
		f.op_rc = slot->rc;
		snprintf(error, sizeof(error), "%s", slot->error);
		f.retry_at = slot->retry_at;
		pthread_mutex_unlock(&js->lock);
		f.op_error = error;
		if (f.op_done && slot->op_audit_id > 0) {
			char outcome[600];

			if (f.op_rc == 0)
				snprintf(outcome, sizeof(outcome), "ok");
			else
				snprintf(outcome, sizeof(outcome), "failed: %s",
					 error[0] ? error : kiln_error_name(f.op_rc));
			job_op_end(st, slot, outcome);
		}
		job_decide(&next, j, &f, &js->limits);
		if (next.verdict != JOB_WAIT && next.verdict != JOB_SUBMIT) {
			pthread_mutex_lock(&js->lock);
			slot->done = 0;
			pthread_mutex_unlock(&js->lock);
		}
		switch (next.verdict) {
		case JOB_WAIT:
			agent_state_clear(&as);
			return;
		case JOB_SUBMIT:
			job_step_parse(&step, j->step);
			if (job_submit(js, st, j, slot, step) < 0) {
				snprintf(next.message, sizeof(next.message), "step %s: %s",
					 job_step_name(step), kiln_error_last());
				job_end(js, st, j, slot, next.message);
			}
			agent_state_clear(&as);
			return;
		case JOB_RETRY_LATER:
			slot->retry_at = f.now + js->retry_s;
			set_str(&j->error, next.message);
			store_job_update(st, j); /* best effort: the last error, shown while running */
			log_info("jobs: job %lld (%s): %s; again in %llds", (long long)j->id, j->node,
				 next.message, (long long)js->retry_s);
			agent_state_clear(&as);
			return;
		case JOB_ADVANCE:
			if (next.record_boot_id)
				set_str(&j->boot_id_before, f.boot_id);
			if (next.cycle_done)
				j->cycle_done = 1;
			if (next.cycle_reset) {
				j->cycle_sent_at = 0;
				log_warn("jobs: job %lld (%s): the agent still reports the old boot id; "
					 "the power cycle never happened, sending it again",
					 (long long)j->id, j->node);
			}
			set_str(&j->step, job_step_name(next.step));
			set_str(&j->error, NULL);
			j->step_started = f.now;
			slot->retry_at = 0;
			agent_state_clear(&as);
			if (store_job_update(st, j) < 0) {
				log_warn("jobs: job %lld: %s", (long long)j->id, kiln_error_last());
				return;
			}
			continue;
		case JOB_FAIL:
			job_end(js, st, j, slot, next.message);
			agent_state_clear(&as);
			return;
		case JOB_FINISH:
			job_end(js, st, j, slot, NULL);
			agent_state_clear(&as);
			return;
		}
		agent_state_clear(&as);
		return;
	}
}

/* The slot of job j, made (and the node's mark claimed on resume) when new. */
static struct job_slot *slot_get(struct jobs *js, const struct job *j, int resumed)
{
	struct job_slot *s;

	pthread_mutex_lock(&js->lock);
	s = slot_find(js, j->id);
	if (!s) {
		if (js->nslots == js->cap) {
			size_t cap = js->cap ? js->cap * 2 : 16;
			struct job_slot *grown = realloc(js->slots, cap * sizeof(*grown));

			if (!grown) {
				pthread_mutex_unlock(&js->lock);
				return NULL;
			}
			js->slots = grown;
			js->cap = cap;
		}
		s = &js->slots[js->nslots++];
		memset(s, 0, sizeof(*s));
		s->job_id = j->id;
		s->node_id = j->node_id;
		/* A job queued through the API holds the mark the API took; a job found at start
		 * takes it now (nothing else runs on the node yet). */
		s->claimed = 1;
		if (resumed)
			node_lock_claim(j->node_id);
	}
	s->live = 1;
	pthread_mutex_unlock(&js->lock);
	return s;
}

/* Forgets slots of jobs that ended or vanished (a deleted node); keeps those in flight. */
static void slots_sweep(struct jobs *js)
{
	size_t k = 0;

	pthread_mutex_lock(&js->lock);
	for (size_t i = 0; i < js->nslots; i++) {
		struct job_slot *s = &js->slots[i];

		if (!s->live && !s->in_flight) {
			if (s->claimed)
				node_lock_release(s->node_id);
			continue;
		}
		s->live = 0;
		js->slots[k++] = *s;
	}
	js->nslots = k;
	pthread_mutex_unlock(&js->lock);
}

/* Whether this instance runs j: the owner of its node does (cluster.c), so that two kilnd
 * on one database do not both send its steps. A node that cannot be read is left to
 * job_tick, which fails the job as it did. */
static int job_owned(struct jobs *js, struct store *st, const struct job *j)
{
	struct node *n = NULL;
	int owned;

	if (!cluster_shared(js->cluster))
		return 1;
	if (store_node_get(st, &n, j->node) < 0) {
		kiln_error_clear();
		return 1;
	}
	owned = cluster_owns(js->cluster, n);
	node_free(n);
	return owned;
}

static void *jobs_main(void *arg)
{
	struct jobs *js = arg;
	struct store *st = NULL;
	int first = 1;

	if (store_open(&st, js->db_path) < 0) {
		log_error("jobs: %s", kiln_error_last());
		return NULL;
	}
	for (;;) {
		struct job *list = NULL;
		size_t n = 0;
		struct timespec until;

		pthread_mutex_lock(&js->lock);
		if (js->stopping) {
			pthread_mutex_unlock(&js->lock);
			break;
		}
		pthread_mutex_unlock(&js->lock);
		if (store_job_list(st, &list, &n, 1, 0) < 0) {
			log_warn("jobs: %s", kiln_error_last());
		} else {
			for (size_t i = 0; i < n; i++) {
				struct job_slot *slot;

				if (!job_owned(js, st, &list[i]))
					continue;
				slot = slot_get(js, &list[i], first);

				if (first && strcmp(list[i].state, "running") == 0)
					log_info("jobs: job %lld (%s): resuming at step %s",
						 (long long)list[i].id, list[i].node, list[i].step);
				if (slot && js->engine)
					job_tick(js, st, &list[i], slot);
			}
			job_list_free(list, n);
			first = 0;
			slots_sweep(js);
		}
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += js->tick_ms / 1000;
		until.tv_nsec += (js->tick_ms % 1000) * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_mutex_lock(&js->lock);
		if (!js->stopping)
			pthread_cond_timedwait(&js->cond, &js->lock, &until);
		pthread_mutex_unlock(&js->lock);
	}
	store_close(st);
	return NULL;
}

int jobs_start(struct jobs **out, const struct jobs_options *opt)
{
	struct jobs *js = calloc(1, sizeof(*js));

	if (!js)
		return kiln_fail(KILN_ERROR, "out of memory");
	pthread_mutex_init(&js->lock, NULL);
	pthread_cond_init(&js->cond, NULL);
	js->db_path = strdup(opt->db_path);
	js->key = opt->key;
	js->engine = opt->engine;
	js->guard = opt->guard;
	js->cluster = opt->cluster;
	js->limits = opt->limits;
	js->retry_s = opt->retry_s > 0 ? opt->retry_s : 5;
	js->tick_ms = opt->tick_ms > 0 ? opt->tick_ms : 1000;
	if (!js->db_path) {
		jobs_free(js);
		return kiln_fail(KILN_ERROR, "out of memory");
	}
	if (pthread_create(&js->thread, NULL, jobs_main, js) != 0) {
		jobs_free(js);
		return kiln_fail(KILN_ERROR, "jobs: cannot start the thread");
	}
	js->thread_started = 1;
	*out = js;
	return 0;
}

void jobs_stop(struct jobs *js)
{
	if (!js || !js->thread_started)
		return;
	pthread_mutex_lock(&js->lock);
	js->stopping = 1;
	pthread_cond_signal(&js->cond);
	pthread_mutex_unlock(&js->lock);
	pthread_join(js->thread, NULL);
	js->thread_started = 0;
}

void jobs_free(struct jobs *js)
{
	if (!js)
		return;
	jobs_stop(js);
	for (size_t i = 0; i < js->nslots; i++)
		if (js->slots[i].claimed)
			node_lock_release(js->slots[i].node_id);
	free(js->slots);
	free(js->db_path);
	pthread_cond_destroy(&js->cond);
	pthread_mutex_destroy(&js->lock);
	free(js);
}

void jobs_options_from(struct jobs_options *out, const struct kilnd_config *cfg)
{
	out->limits.step_timeout_s = cfg->jobs_step_timeout;
	out->limits.boot_timeout_s = cfg->jobs_boot_timeout;
	out->limits.action_timeout_s = cfg->bmc_action_timeout;
	out->retry_s = cfg->jobs_retry_interval;
	out->tick_ms = 1000;
}
