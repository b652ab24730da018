/* SPDX-License-Identifier: Apache-2.0 */
/* The guard in front of every disruptive action: the work on each node (GPU processes of a
 * fresh agent report, Slurm jobs) refuses it, or the node is drained in Slurm and waited
 * for (--drain), or it goes ahead and is audited as forced (--force). The guard's own
 * thread drains hung nodes, resumes what kiln drained once the node's agent reports again,
 * and keeps the Slurm state that automatic remediation consults. Scheduler commands run
 * only on the guard's threads, never on an HTTP thread or the poller's. */
#ifndef KILND_GUARD_H
#define KILND_GUARD_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "workload/slurm.h"
#include "store/store.h"
#include "workload/work.h"

struct guard;
struct live_call;

struct guard_options {
	const char *db_path;          /* the guard's threads open their own store handles */
	struct sched_config sched;    /* borrowed: the strings live as long as the guard */
	const char *ignore;           /* process names that are not work (fnmatch list) */
	int64_t fresh_s;              /* the oldest agent report whose GPU processes count */
	int64_t agent_interval_s;     /* a report's interval when it gives none */
	int64_t poll_ms;              /* how often a drain looks again */
	int drain_hung;               /* drain a node kiln flags hung */
	int64_t view_s;               /* how often the cluster's jobs are counted (guard_view_jobs) */
};

int guard_start(struct guard **out, const struct guard_options *opt);

/* Stops the thread (a drain in progress ends at its next look). Accepts NULL. */
void guard_free(struct guard *g);

/* The node's work now: its agent's latest report and (with a scheduler) Slurm, asked now.
 * Runs scheduler commands: not on an HTTP thread. */
void guard_node_work(struct guard *g, struct store *st, const struct node *n,
		     struct node_work *out);

/*
 * Whether the GPU processes of n's agent report block kilnd's automatic power cycle: the
 * operator's rule (a fresh report; [work] ignore_processes and idle processes left out),
 * but a node already flagged hung is not excepted, so kilnd never cycles a node for work
 * that refused, or would refuse, an operator's power off a moment before. 1 with the work
 * named in msg, else 0. Reads the store only (no scheduler command): the poller's thread.
 */
int guard_remediation_work(struct guard *g, struct store *st, const struct node *n, char *msg,
			   size_t len);

/*
 * Runs a guarded live call's guard (on a thread of the caller's, never an HTTP thread):
 * each targeted node with work is refused (its answer says what runs; an audit row says
 * refused), or forced (its audit detail says so), or drained and waited for up to the
 * call's drain timeout; a node still busy then is resumed if kiln drained it, answered
 * "drain timed out" and audited so. *stop set: the wait ends, the nodes still waiting are
 * not sent. Nodes it refuses get targeted 0.
 */
void guard_call_run(struct guard *g, struct live_call *call, const atomic_int *stop);

/* Whether a scheduler is configured ([scheduler] type): without one --drain has nothing to
 * keep new work off a node with, and is refused at once with GUARD_DRAIN_NEEDS_SCHEDULER. */
int guard_scheduler_on(void);
#define GUARD_DRAIN_NEEDS_SCHEDULER                                                                \
	"drain needs a scheduler, and none is configured ([scheduler] type = none in kilnd.conf): "  \
	"nothing would keep new work off the node while kiln waited; nothing was done. --force "   \
	"acts although work runs (audited as forced); without either, a node with work is refused"

/* Drains node name (its work w, just gathered) in Slurm with reason, unless it runs no Slurm
 * job, Slurm counts it down, or it is drained already (someone's drain stays theirs). 1 when
 * kiln set the drain, 0 when not, negative when scontrol failed. Runs a command. */
int guard_drain(struct guard *g, const char *name, const struct node_work *w,
		const char *reason);

/* Resumes node name now if Slurm still shows kiln's drain reason. Runs commands. */
void guard_resume(struct guard *g, const char *name);

/* How often a drain looks again ([scheduler] drain_poll). */
int64_t guard_poll_ms(const struct guard *g);

/* The node (drained by kiln) is resumed in Slurm once its agent reports after `after`,
 * if its reason is still kiln's. Queued for the guard's thread. */
void guard_resume_after(struct guard *g, int64_t node_id, const char *name, int64_t after);

/* Kiln flagged the node hung (reason says why): drained in Slurm with a kiln reason, on
 * the guard's thread, and resumed once its agent reports again. No-op without a scheduler
 * or with drain_hung off. */
void guard_hung(struct guard *g, int64_t node_id, const char *name, const char *reason);

/*
 * Whether automatic remediation may cycle the node now: without a scheduler, yes; with one,
 * only when Slurm showed (within the last minute, asked on the guard's thread) no job
 * running there or the node down. Returns 1 or 0 with why in msg; a 0 asks Slurm again.
 */
int guard_remediation_allowed(struct guard *g, int64_t node_id, const char *name, char *msg,
			      size_t len);

/*
 * The Slurm jobs running on the node in the guard thread's last view of the whole cluster
 * (one squeue every view_s): what kiln status' WORK column shows without running a
 * command on an HTTP thread. GUARD_VIEW_NONE without a scheduler, GUARD_VIEW_UNKNOWN when
 * the last view failed or is older than three periods; else the count.
 */
#define GUARD_VIEW_NONE (-1)
#define GUARD_VIEW_UNKNOWN (-2)
int guard_view_jobs(const char *name);

/* Adds the view's jobs of name to w (a node_work from work_from_summary). */
void guard_view_apply(struct node_work *w, const char *name);

#endif
