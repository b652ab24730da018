/* SPDX-License-Identifier: Apache-2.0 */
/* Reinstall jobs: a kilnd thread that takes each node through its steps (boot id, virtual
 * media or PXE, power cycle, wait for the agent's new boot id, eject) and resumes them after
 * a restart from the step stored in the database. */
#ifndef KILND_JOBS_H
#define KILND_JOBS_H

#include <stddef.h>
#include <stdint.h>

#include "bmc/bmc.h"
#include "daemon/secret.h"
#include "store/store.h"

enum job_step {
	JOB_STEP_BOOT_ID,      /* note the agent's current boot id */
	JOB_STEP_MEDIA_INSERT, /* iso: mount the image as virtual media */
	JOB_STEP_BOOT_SET,     /* one-time boot from CD (iso) or the network (pxe) */
	JOB_STEP_POWER_CYCLE,  /* a node that is off is powered on */
	JOB_STEP_WAIT_BOOT,    /* the agent reports a new boot id (and the image's OS) */
	JOB_STEP_MEDIA_EJECT,  /* iso */
	JOB_STEP_DONE,
};

/* "boot_id", "media_insert", ... */
const char *job_step_name(enum job_step s);
/* KILN_EINVAL for a name that is no step. */
int job_step_parse(enum job_step *out, const char *name);
/* The step after s for an iso (1) or pxe (0) image. */
enum job_step job_step_after(enum job_step s, int iso);
/* The step's position in its image kind's plan (1-based) and the plan's length (without
 * done): progress "3/6". */
void job_step_progress(int *out_index, int *out_total, enum job_step s, int iso);

struct job_limits {
	int64_t step_timeout_s;   /* a BMC step (with its retries) */
	int64_t boot_timeout_s;   /* wait_boot */
	int64_t action_timeout_s; /* the engine's power confirmation time */
};

/* What a job's runner knows now, besides the stored row. */
struct job_facts {
	int64_t now;
	const char *boot_id;      /* the agent's latest boot id; NULL when it never reported */
	const char *os;
	int64_t agent_last_seen;  /* when kilnd received its latest report */
	int64_t agent_report_time; /* when the agent made that report (its own clock): a
				    * report spooled while kilnd was down arrives late */
	int op_in_flight;         /* this job's BMC operation is running */
	int op_done;              /* it finished since the step's last decision: op_rc, op_error */
	int op_rc;
	const char *op_error;
	int64_t retry_at;         /* a failed operation may be sent again from then (0: now) */
};

enum job_verdict {
	JOB_WAIT,        /* nothing to do now */
	JOB_SUBMIT,      /* send the step's BMC operation */
	JOB_RETRY_LATER, /* the operation failed (message): send it again after a pause */
	JOB_ADVANCE,     /* go to step */
	JOB_FAIL,        /* the job failed (message names the step) */
	JOB_FINISH,      /* the job is done */
};

struct job_next {
	enum job_verdict verdict;
	enum job_step step;  /* ADVANCE: the next step */
	int record_boot_id;  /* ADVANCE: store facts->boot_id as boot_id_before */
	int cycle_done;      /* ADVANCE: the power cycle is known to have happened */
	int cycle_reset;     /* ADVANCE to power_cycle: the cycle was never seen; send it again */
	char message[512];
};

/*
 * The pure step logic: given a running job's row and the facts, what to do next. A power
 * cycle whose outcome a restart lost (cycle_sent_at set, no result) is never sent again
 * blindly: the job waits for the new boot id, and goes back to the cycle only when the
 * agent keeps reporting the old boot id past the time a cycle would have taken.
 */
void job_decide(struct job_next *out, const struct job *j, const struct job_facts *f,
		const struct job_limits *lim);

struct jobs_options {
	const char *db_path;          /* the thread opens its own store handle */
	const struct secret_key *key; /* kept, not copied: it must outlive this */
	struct bmc_engine *engine;    /* NULL: jobs stay queued */
	struct guard *guard;          /* NULL: a reinstall's power cycle asks no one */
	struct cluster *cluster;      /* runs only the jobs of nodes it owns; NULL: every job */
	struct job_limits limits;
	int64_t retry_s;              /* pause before a failed BMC step is sent again */
	int64_t tick_ms;              /* how often active jobs are looked at */
};

struct jobs;
struct cluster;

/* Starts the thread; running jobs of a previous kilnd are resumed at their stored step. */
int jobs_start(struct jobs **out, const struct jobs_options *opt);
/* Stops the thread (no new BMC operations); call before bmc_engine_stop. Accepts NULL. */
void jobs_stop(struct jobs *js);
/* Frees what the engine's callbacks may still touch; call after bmc_engine_stop. */
void jobs_free(struct jobs *js);

struct kilnd_config;
/* The [jobs] and [bmc] keys of kilnd.conf. */
void jobs_options_from(struct jobs_options *out, const struct kilnd_config *cfg);

#endif
