/* SPDX-License-Identifier: Apache-2.0 */
/* Work on a node: the GPU compute processes of its agent's latest report and its scheduler
 * jobs, and the one decision every disruptive action asks: does this work block it? */
#ifndef KILND_WORK_H
#define KILND_WORK_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "workload/slurm.h"

#define WORK_PROCS_MAX 32

struct work_proc {
	int64_t pid;
	char name[64];              /* "" when the agent could not tell */
	char user[32];              /* "" when the agent could not tell */
	int64_t used_memory_bytes;  /* -1: unknown */
	int gpu;                    /* index of the first GPU it runs on */
};

struct node_work {
	/* the agent's GPU compute processes, those not ignored */
	int agent_report;           /* the node has a report at all */
	int64_t report_age_s;
	int fresh;                  /* the report is young enough for its processes to count */
	struct work_proc procs[WORK_PROCS_MAX];
	size_t nprocs;              /* listed */
	size_t nprocs_all;          /* counted */
	/* the scheduler */
	int sched_asked;            /* a scheduler is configured and was asked */
	int sched_failed;           /* it could not be asked: the work is not known */
	int sched_unknown_node;     /* it knows no such node */
	char sched_error[256];
	struct sched_node sched;
};

/*
 * Fills w's processes from report (the agent's report, parsed) received age_s ago: every
 * GPU's processes, one entry a pid, those whose name matches a pattern of ignore (a comma-
 * separated fnmatch list: "nvidia-persistenced,nv-hostengine,dcgm*") left out, and those that
 * hold no GPU memory (0 stated) on a GPU whose utilisation is 0: a process holding nothing
 * and running nothing is not work. Memory not known counts. fresh_s: the oldest report
 * whose processes count.
 */
void work_procs_from_report(struct node_work *w, const json_t *report, int64_t age_s,
			    int64_t fresh_s, const char *ignore);

/* 1 when name matches a pattern of the comma-separated list ignore. */
int work_proc_ignored(const char *ignore, const char *name);

/*
 * Whether w blocks a disruptive action, with the work named in msg ("slurm job 12 (alice,
 * train); gpu process 1880 python (bob, 300 MiB on gpu 0)"). GPU processes count only from
 * a fresh report (a hung node's last report does not block its cycle); Slurm jobs do not
 * count on a node Slurm marks down, or not responding while its agent's report is not fresh
 * either; a scheduler that could not be asked
 * blocks (the work is not known). Returns 1 (blocked) or 0.
 */
int work_blocks(const struct node_work *w, char *msg, size_t len);

/* w as the API shows it: {"gpu_processes":[...],"fresh":bool,"slurm":{...}|null}. */
json_t *work_json(const struct node_work *w);

/* The short form for a table cell: "2 jobs, 1 proc", "-" when none, "?" when not known. */
void work_cell(char *buf, size_t len, const struct node_work *w);


/* The [work] settings the API's views use (the guard gets its own): set once at start,
 * before any thread reads them. ignore is borrowed and must outlive every reader. */
void work_config_set(const char *ignore, int64_t fresh_s);

/*
 * The report's GPU processes as the summary row keeps them (JSON text the caller frees):
 * {"gpus":[{"index","utilization_gpu_pct","processes":[...]}]} with only the GPUs that have
 * any; NULL when none.
 */
char *work_procs_extract(const json_t *report);

/* A node's work as far as its stored processes tell (procs_json from work_procs_extract, or
 * NULL; its report received age_s ago), under the [work] settings. */
void work_from_summary(struct node_work *out, const char *procs_json, int64_t age_s);

#endif
