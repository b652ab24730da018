/* SPDX-License-Identifier: Apache-2.0 */
/* The batch scheduler a node belongs to (Slurm through scontrol and squeue): its jobs on a
 * node, its state and reason, drain and resume. Every call runs a command and waits for it:
 * never call these on an HTTP thread or the poller's (guard.c runs them on its own). */
#ifndef KILND_SCHEDULER_H
#define KILND_SCHEDULER_H

#include <stddef.h>
#include <stdint.h>

enum sched_type { SCHED_NONE = 0, SCHED_SLURM };

struct sched_config {
	enum sched_type type;
	const char *scontrol;       /* command names or paths, looked up in PATH */
	const char *squeue;
	int64_t timeout_ms;         /* a command that takes longer is killed and has failed */
	const char *node_name;      /* the Slurm name of a kiln node ({name}, {short}); NULL: same */
};

/*
 * The Slurm name of kiln node name under template: "{name}" is the kiln name, "{short}" the
 * kiln name up to its first '.', anything else is kept ("{short}-ib"); NULL: the kiln name.
 * Every sched_node_* call below takes kiln names and maps them so.
 */
void sched_node_name(char *out, size_t len, const char *template, const char *name);

/* The reason every drain kiln makes starts with: what it alone resumes. */
#define SCHED_TAG "kiln:"

#define SCHED_JOBS_MAX 64

struct sched_job {
	char id[32];
	char state[24];
	char user[64];
	char name[128];
};

struct sched_node {
	char state[128];            /* "IDLE+DRAIN", "ALLOCATED", "DOWN*+NOT_RESPONDING" */
	char reason[256];           /* without Slurm's " [user@time]" suffix; "" when none */
	int down;                   /* Slurm itself counts the node DOWN (or FAIL) */
	int not_responding;         /* its slurmd missed a ping (NOT_RESPONDING, '*'); also set
				     * for a while after a resume, before the node registers */
	int drain;                  /* DRAIN, DRAINING or DRAINED */
	struct sched_job jobs[SCHED_JOBS_MAX];
	size_t njobs;               /* the jobs listed (at most SCHED_JOBS_MAX) */
	size_t njobs_all;           /* the jobs squeue named */
};

/* "none" | "slurm" into *out; KILN_EINVAL otherwise. */
int sched_type_parse(enum sched_type *out, const char *s);

/* Parses `scontrol -o show node NAME` (one line) into out's state, reason and flags. */
int sched_parse_node(struct sched_node *out, const char *text);

/* Parses `squeue -h -o '%i|%T|%u|%j'` lines into out's jobs. */
int sched_parse_jobs(struct sched_node *out, const char *text);

/* The node's state, reason and running jobs. KILN_ENOTFOUND: Slurm knows no such node. */
int sched_node_query(const struct sched_config *cfg, struct sched_node *out, const char *name);

/* Drains the node with reason (which should start with SCHED_TAG). */
int sched_node_drain(const struct sched_config *cfg, const char *name, const char *reason);

/* Resumes the node (State=RESUME). */
int sched_node_resume(const struct sched_config *cfg, const char *name);

/* One node's count in the fleet's view (sched_fleet_jobs). */
struct sched_count {
	char name[128];
	int njobs;
};

/*
 * Counts the running jobs of every node in one squeue over the whole cluster (`squeue -h -o
 * '%N|%i'`, node lists such as n[1-4] expanded). *out (caller frees) is sorted by name and
 * holds only nodes with jobs.
 */
int sched_fleet_jobs(const struct sched_config *cfg, struct sched_count **out, size_t *out_count);

/* Parses what sched_fleet_jobs' squeue prints. */
int sched_parse_fleet(struct sched_count **out, size_t *out_count, const char *text);

/* "job 12 (alice, train)" for each job, "; "-separated, into buf. */
void sched_jobs_format(char *buf, size_t len, const struct sched_node *n);

#endif
