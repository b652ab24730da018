/* SPDX-License-Identifier: Apache-2.0 */
/* The work on a node, gathered from the agent's report and the scheduler, and whether it
 * blocks a power cycle, a reinstall or an automatic remediation. */
#include <fnmatch.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "workload/work.h"

int work_proc_ignored(const char *ignore, const char *name)
{
	const char *p = ignore;

	if (!ignore || !name || !name[0])
		return 0;
	while (*p) {
		size_t n = strcspn(p, ",");
		char pat[128];

		while (n > 0 && (*p == ' ' || *p == '\t')) {
			p++;
			n--;
		}
		snprintf(pat, sizeof(pat), "%.*s", (int)n, p);
		for (size_t k = strlen(pat); k > 0 && (pat[k - 1] == ' ' || pat[k - 1] == '\t'); k--)
			pat[k - 1] = '\0';
		if (pat[0] && fnmatch(pat, name, 0) == 0)
			return 1;
		p += n;
		if (*p == ',')
			p++;
	}
	return 0;
}

static int proc_seen(const struct node_work *w, int64_t pid)
{
	for (size_t i = 0; i < w->nprocs; i++)
		if (w->procs[i].pid == pid)
			return 1;
	return 0;
}

static void copy_str(char *buf, size_t len, const json_t *v)
{
	snprintf(buf, len, "%s", json_is_string(v) ? json_string_value(v) : "");
}

void work_procs_from_report(struct node_work *w, const json_t *report, int64_t age_s,
			    int64_t fresh_s, const char *ignore)
{
	const json_t *gpus = json_object_get(report, "gpus"), *g;
	size_t i;

	w->nprocs = w->nprocs_all = 0;
	w->agent_report = report != NULL;
	w->report_age_s = age_s;
	w->fresh = report && age_s <= fresh_s;
	json_array_foreach(gpus, i, g) {
		const json_t *procs = json_object_get(g, "processes"), *p;
		json_t *idx = json_object_get(g, "index");
		json_t *util = json_object_get(g, "utilization_gpu_pct");
		/* a GPU that says it does nothing: a process there holding no memory is idle */
		int gpu_idle = json_is_integer(util) && json_integer_value(util) == 0;
		size_t j;

		json_array_foreach(procs, j, p) {
			const json_t *pid = json_object_get(p, "pid");
			const json_t *name = json_object_get(p, "name");
			const json_t *mem = json_object_get(p, "used_memory_bytes");
			struct work_proc *wp;

			if (!json_is_integer(pid) || proc_seen(w, json_integer_value(pid)))
				continue;
			if (json_is_string(name) && work_proc_ignored(ignore, json_string_value(name)))
				continue;
			/* no GPU memory (0 stated, not unknown) on an idle GPU: not work */
			if (gpu_idle && json_is_integer(mem) && json_integer_value(mem) == 0)
				continue;
			w->nprocs_all++;
			if (w->nprocs == WORK_PROCS_MAX)
				continue;
			wp = &w->procs[w->nprocs++];
			wp->pid = json_integer_value(pid);
			copy_str(wp->name, sizeof(wp->name), name);
			copy_str(wp->user, sizeof(wp->user), json_object_get(p, "user"));
			wp->used_memory_bytes = json_is_integer(mem) ? json_integer_value(mem) : -1;
			wp->gpu = json_is_integer(idx) ? (int)json_integer_value(idx) : (int)i;
		}
	}
}

/* Appends to buf at *off, never past len. */
static void put(char *buf, size_t len, size_t *off, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void put(char *buf, size_t len, size_t *off, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*off >= len)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf + *off, len - *off, fmt, ap);
	va_end(ap);
	if (n > 0)
		*off = *off + (size_t)n < len ? *off + (size_t)n : len;
}

static int procs_count(const struct node_work *w)
{
	return w->fresh && w->nprocs_all > 0;
}

/* Slurm's jobs there are gone: Slurm counts the node down, or its slurmd does not respond
 * and neither does its agent (Slurm also flags a live node not responding for a while after
 * a resume: alone that is no proof its jobs died). */
static int sched_gone(const struct node_work *w)
{
	return w->sched.down || (w->sched.not_responding && !w->fresh);
}

static int jobs_count(const struct node_work *w)
{
	return w->sched_asked && !w->sched_failed && !sched_gone(w) && w->sched.njobs_all > 0;
}

int work_blocks(const struct node_work *w, char *msg, size_t len)
{
	size_t off = 0;
	int blocked = 0;

	msg[0] = '\0';
	if (w->sched_asked && w->sched_failed) {
		put(msg, len, &off, "work not known: %s", w->sched_error);
		blocked = 1;
	}
	if (jobs_count(w)) {
		char jobs[768];

		sched_jobs_format(jobs, sizeof(jobs), &w->sched);
		put(msg, len, &off, "%s%s", blocked ? "; " : "", jobs);
		blocked = 1;
	}
	if (procs_count(w)) {
		for (size_t i = 0; i < w->nprocs; i++) {
			const struct work_proc *p = &w->procs[i];

			put(msg, len, &off, "%sgpu process %" PRId64 " %s (", blocked ? "; " : "",
			    p->pid, p->name[0] ? p->name : "?");
			if (p->user[0])
				put(msg, len, &off, "%s, ", p->user);
			if (p->used_memory_bytes >= 0)
				put(msg, len, &off, "%" PRId64 " MiB ", p->used_memory_bytes >> 20);
			put(msg, len, &off, "on gpu %d)", p->gpu);
			blocked = 1;
		}
		if (w->nprocs_all > w->nprocs)
			put(msg, len, &off, " and %zu more", w->nprocs_all - w->nprocs);
	}
	return blocked;
}

json_t *work_json(const struct node_work *w)
{
	json_t *o = json_object(), *procs = json_array(), *slurm = json_null();
	char msg[1024];

	for (size_t i = 0; procs && i < w->nprocs; i++) {
		const struct work_proc *p = &w->procs[i];

		json_array_append_new(procs, json_pack("{s:I, s:s?, s:s?, s:I, s:i}", "pid",
						       (json_int_t)p->pid,
						       "name", p->name[0] ? p->name : NULL, "user",
						       p->user[0] ? p->user : NULL, "used_memory_bytes",
						       (json_int_t)p->used_memory_bytes, "gpu", p->gpu));
	}
	if (w->sched_asked) {
		json_t *jobs = json_array();

		for (size_t i = 0; jobs && i < w->sched.njobs; i++)
			json_array_append_new(jobs, json_pack("{s:s, s:s, s:s, s:s}", "id",
							      w->sched.jobs[i].id, "state",
							      w->sched.jobs[i].state, "user",
							      w->sched.jobs[i].user, "name",
							      w->sched.jobs[i].name));
		slurm = w->sched_failed ? json_pack("{s:s}", "error", w->sched_error)
			: w->sched_unknown_node ? json_pack("{s:s}", "error", "no such slurm node")
			: json_pack("{s:s, s:s, s:b, s:b, s:b, s:I, s:O}", "state", w->sched.state,
				    "reason", w->sched.reason, "down", w->sched.down, "not_responding",
				    w->sched.not_responding, "drain", w->sched.drain, "jobs_total",
				    (json_int_t)w->sched.njobs_all, "jobs", jobs);
		json_decref(jobs);
	}
	if (!o || !procs || !slurm) {
		json_decref(o);
		json_decref(procs);
		json_decref(slurm);
		return NULL;
	}
	json_object_set_new(o, "gpu_processes", procs);
	json_object_set_new(o, "gpu_processes_total", json_integer((json_int_t)w->nprocs_all));
	json_object_set_new(o, "report_fresh", json_boolean(w->fresh));
	json_object_set_new(o, "slurm", slurm);
	json_object_set_new(o, "blocks", json_boolean(work_blocks(w, msg, sizeof(msg))));
	if (msg[0])
		json_object_set_new(o, "summary", json_string(msg));
	return o;
}

void work_cell(char *buf, size_t len, const struct node_work *w)
{
	size_t off = 0;

	buf[0] = '\0';
	if (w->sched_asked && w->sched_failed) {
		snprintf(buf, len, "?");
		return;
	}
	if (jobs_count(w))
		put(buf, len, &off, "%zu job%s", w->sched.njobs_all, w->sched.njobs_all == 1 ? "" : "s");
	if (w->nprocs_all > 0)
		put(buf, len, &off, "%s%zu proc%s%s", off ? ", " : "", w->nprocs_all,
		    w->nprocs_all == 1 ? "" : "s", w->fresh ? "" : " (stale)");
	if (!off)
		snprintf(buf, len, "-");
}

static const char *config_ignore = "nvidia-persistenced,nv-hostengine,dcgm*,nvidia-smi";
static int64_t config_fresh_s = 75;

void work_config_set(const char *ignore, int64_t fresh_s)
{
	config_ignore = ignore;
	config_fresh_s = fresh_s;
}

char *work_procs_extract(const json_t *report)
{
	const json_t *g;
	json_t *out = json_object(), *gpus = json_array();
	char *text = NULL;
	size_t i;

	if (!out || !gpus)
		goto cleanup;
	json_array_foreach(json_object_get(report, "gpus"), i, g) {
		json_t *procs = json_object_get(g, "processes");

		if (json_array_size(procs) == 0)
			continue;
		/* the GPU's utilisation goes with them: a process holding nothing on an idle
		 * GPU is not work (work_procs_from_report) */
		json_array_append_new(gpus, json_pack("{s:O?, s:O?, s:O}", "index",
						      json_object_get(g, "index"),
						      "utilization_gpu_pct",
						      json_object_get(g, "utilization_gpu_pct"),
						      "processes", procs));
	}
	if (json_array_size(gpus) == 0)
		goto cleanup;
	json_object_set(out, "gpus", gpus);
	text = json_dumps(out, JSON_COMPACT);
cleanup:
	json_decref(gpus);
	json_decref(out);
	return text;
}

void work_from_summary(struct node_work *out, const char *procs_json, int64_t age_s)
{
	json_t *procs = procs_json ? json_loads(procs_json, 0, NULL) : NULL;

	memset(out, 0, sizeof(*out));
	work_procs_from_report(out, procs, age_s, config_fresh_s, config_ignore);
	out->agent_report = 1;
	out->fresh = age_s <= config_fresh_s;
	json_decref(procs);
}
