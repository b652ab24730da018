/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for server/workload/slurm.c: what scontrol and squeue print, parsed; and
 * server/workload/work.c's decision over the work they and the agent report. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workload/slurm.h"
#include "workload/work.h"

/* scontrol -o show node lines (22.05), shortened to the fields that matter, and what they say. */
static const struct {
	const char *line;
	const char *state;
	const char *reason;
	int down, nr, drain;
} nodes[] = {
	{ "NodeName=n1 Arch=x86_64 CPUAlloc=1 State=ALLOCATED ThreadsPerCore=1 TmpDisk=0",
	  "ALLOCATED", "", 0, 0, 0 },
	{ "NodeName=n2 CPUAlloc=0 State=IDLE+DRAIN ThreadsPerCore=1 Partitions=debug "
	  "Reason=kiln: power cycle by alice [root@2026-12-02T03:49:09]",
	  "IDLE+DRAIN", "kiln: power cycle by alice", 0, 0, 1 },
	{ "NodeName=n3 State=MIXED+DRAIN Reason=hardware check [by bob] [bob@2026-12-01T10:00:00]",
	  "MIXED+DRAIN", "hardware check [by bob]", 0, 0, 1 },
	{ "NodeName=n4 State=DOWN*+NOT_RESPONDING Reason=Not responding [slurm@2026-12-02T01:00:00]",
	  "DOWN*+NOT_RESPONDING", "Not responding", 1, 1, 0 },
	{ "NodeName=n5 State=ALLOCATED*+DRAIN Reason=kiln: hung: agent silent", "ALLOCATED*+DRAIN",
	  "kiln: hung: agent silent", 0, 1, 1 },
	{ "NodeName=n6 State=IDLE+DRAINED Weight=1", "IDLE+DRAINED", "", 0, 0, 1 },
	/* a word that only starts like DOWN is not DOWN */
	{ "NodeName=n7 State=DOWNLOADING+FUTURE", "DOWNLOADING+FUTURE", "", 0, 0, 0 },
	/* Partitions=... holds "State" too: only the field counts */
	{ "NodeName=n8 NodeState=x State=IDLE", "IDLE", "", 0, 0, 0 },
	{ "NodeName=n9 State=ALLOCATED+NOT_RESPONDING", "ALLOCATED+NOT_RESPONDING", "", 0, 1, 0 },
};

static void test_parse_node(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(nodes) / sizeof(nodes[0]); i++) {
		struct sched_node n;

		assert_int_equal(sched_parse_node(&n, nodes[i].line), 0);
		assert_string_equal(n.state, nodes[i].state);
		assert_string_equal(n.reason, nodes[i].reason);
		if (n.down != nodes[i].down || n.not_responding != nodes[i].nr ||
		    n.drain != nodes[i].drain)
			fail_msg("%s: down %d not responding %d drain %d", nodes[i].line, n.down,
				 n.not_responding, n.drain);
	}
}

static void test_parse_node_refuses(void **state)
{
	struct sched_node n;

	(void)state;
	assert_int_not_equal(sched_parse_node(&n, "NodeName=n1 Arch=x86_64"), 0);
	assert_int_not_equal(sched_parse_node(&n, ""), 0);
}

static void test_parse_jobs(void **state)
{
	struct sched_node n = { 0 };
	char buf[512];

	(void)state;
	assert_int_equal(sched_parse_jobs(&n, "12|RUNNING|alice|train|big\n13|COMPLETING|bob|eval\n"),
			 0);
	assert_int_equal(n.njobs, 2);
	assert_string_equal(n.jobs[0].id, "12");
	assert_string_equal(n.jobs[0].state, "RUNNING");
	assert_string_equal(n.jobs[0].user, "alice");
	assert_string_equal(n.jobs[0].name, "train|big"); /* the name last: it may hold a '|' */
	sched_jobs_format(buf, sizeof(buf), &n);
	assert_string_equal(buf, "slurm job 12 (alice, train|big), slurm job 13 (bob, eval)");
	assert_int_equal(sched_parse_jobs(&n, ""), 0);
	assert_int_equal(n.njobs_all, 0);
	assert_int_not_equal(sched_parse_jobs(&n, "12 RUNNING alice\n"), 0);
}

static void test_parse_jobs_many(void **state)
{
	static char text[SCHED_JOBS_MAX * 2 * 32];
	struct sched_node n = { 0 };
	size_t off = 0;
	char buf[8192];

	(void)state;
	for (int i = 0; i < SCHED_JOBS_MAX + 5; i++)
		off += (size_t)snprintf(text + off, sizeof(text) - off, "%d|RUNNING|u|j\n", i);
	assert_int_equal(sched_parse_jobs(&n, text), 0);
	assert_int_equal(n.njobs, SCHED_JOBS_MAX);
	assert_int_equal(n.njobs_all, SCHED_JOBS_MAX + 5);
	sched_jobs_format(buf, sizeof(buf), &n);
	assert_non_null(strstr(buf, " and 5 more"));
}

static void test_parse_fleet(void **state)
{
	struct sched_count *c = NULL;
	size_t n = 0;

	(void)state;
	/* a two-node job, a pending one (no node yet), two on n2 */
	assert_int_equal(sched_parse_fleet(&c, &n, "n[1-2]|12\n|13\nn2|14\n(null)|15\n"), 0);
	assert_int_equal(n, 2);
	assert_string_equal(c[0].name, "n1");
	assert_int_equal(c[0].njobs, 1);
	assert_string_equal(c[1].name, "n2");
	assert_int_equal(c[1].njobs, 2);
	free(c);
	assert_int_equal(sched_parse_fleet(&c, &n, ""), 0);
	assert_int_equal(n, 0);
	free(c);
	assert_int_not_equal(sched_parse_fleet(&c, &n, "n1 12\n"), 0);
	assert_int_not_equal(sched_parse_fleet(&c, &n, "n[1-|12\n"), 0);
}

static void test_node_name(void **state)
{
	static const struct {
		const char *template, *name, *want;
	} v[] = {
		{ NULL, "gpu01", "gpu01" },
		{ "", "gpu01.lab.example", "gpu01.lab.example" },
		{ "{name}", "gpu01", "gpu01" },
		{ "{short}", "gpu01.lab.example", "gpu01" },
		{ "{short}-ib", "gpu01.lab.example", "gpu01-ib" },
		{ "slurm-{name}", "gpu01", "slurm-gpu01" },
		{ "{nope}", "gpu01", "{nope}" },
	};
	char out[64], tiny[4];

	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		sched_node_name(out, sizeof(out), v[i].template, v[i].name);
		if (strcmp(out, v[i].want) != 0)
			fail_msg("%s / %s: got '%s', want '%s'", v[i].template ? v[i].template : "NULL",
				 v[i].name, out, v[i].want);
	}
	sched_node_name(tiny, sizeof(tiny), "{name}", "gpu01");
	assert_string_equal(tiny, "gpu");
}

/* --- work.c ----------------------------------------------------------------------------- */

static const char *const report_text =
	"{\"gpus\":[{\"index\":0,\"processes\":["
	"{\"pid\":4242,\"name\":\"python3\",\"user\":\"alice\",\"used_memory_bytes\":1073741824},"
	"{\"pid\":77,\"name\":\"nvidia-persistenced\"},"
	"{\"pid\":78,\"name\":\"dcgm-exporter\"}]},"
	"{\"index\":1,\"processes\":[{\"pid\":4242,\"name\":\"python3\"},{\"pid\":5000}]}]}";
static const char *const ignore = "nvidia-persistenced, nv-hostengine ,dcgm*";

static void test_ignore_list(void **state)
{
	(void)state;
	assert_true(work_proc_ignored(ignore, "nvidia-persistenced"));
	assert_true(work_proc_ignored(ignore, "nv-hostengine"));
	assert_true(work_proc_ignored(ignore, "dcgm-exporter"));
	assert_false(work_proc_ignored(ignore, "python3"));
	assert_false(work_proc_ignored(ignore, "nvidia-persistenced2"));
	assert_false(work_proc_ignored(ignore, ""));
	assert_false(work_proc_ignored(NULL, "dcgm"));
}

static void test_processes_block_when_fresh(void **state)
{
	json_t *r = json_loads(report_text, 0, NULL);
	struct node_work w = { 0 };
	char msg[512];

	(void)state;
	assert_non_null(r);
	work_procs_from_report(&w, r, 10, 75, ignore);
	/* 4242 once (it runs on two GPUs), 5000 without a name; the daemons left out */
	assert_int_equal(w.nprocs_all, 2);
	assert_int_equal(work_blocks(&w, msg, sizeof(msg)), 1);
	assert_string_equal(msg, "gpu process 4242 python3 (alice, 1024 MiB on gpu 0); "
				 "gpu process 5000 ? (on gpu 1)");
	/* the same report from a node silent for longer than report_fresh: no longer work */
	work_procs_from_report(&w, r, 76, 75, ignore);
	assert_int_equal(work_blocks(&w, msg, sizeof(msg)), 0);
	assert_string_equal(msg, "");
	json_decref(r);
}

/* A process that holds no GPU memory on a GPU that does nothing is not work (an admin's power
 * off was refused for "gpu process 4242 (0 MiB on gpu 0)"); one whose memory is not known, or
 * that holds nothing on a busy GPU, still is. */
static void test_idle_process_not_work(void **state)
{
	json_t *r = json_loads("{\"gpus\":["
			       "{\"index\":0,\"utilization_gpu_pct\":0,\"processes\":["
			       "{\"pid\":4242,\"name\":\"python3\",\"used_memory_bytes\":0},"
			       "{\"pid\":4300,\"name\":\"python3\"}]},"
			       "{\"index\":1,\"utilization_gpu_pct\":35,\"processes\":["
			       "{\"pid\":4400,\"name\":\"python3\",\"used_memory_bytes\":0}]},"
			       "{\"index\":2,\"processes\":["
			       "{\"pid\":4500,\"name\":\"python3\",\"used_memory_bytes\":0}]}]}",
			       0, NULL);
	struct node_work w = { 0 };
	char msg[512];

	(void)state;
	assert_non_null(r);
	work_procs_from_report(&w, r, 10, 75, ignore);
	assert_int_equal(w.nprocs_all, 3);
	assert_int_equal(work_blocks(&w, msg, sizeof(msg)), 1);
	assert_string_equal(msg, "gpu process 4300 python3 (on gpu 0); "
				 "gpu process 4400 python3 (0 MiB on gpu 1); "
				 "gpu process 4500 python3 (0 MiB on gpu 2)");
	json_decref(r);

	/* alone, the idle process blocks nothing */
	r = json_loads("{\"gpus\":[{\"index\":0,\"utilization_gpu_pct\":0,\"processes\":["
		       "{\"pid\":4242,\"name\":\"python3\",\"used_memory_bytes\":0}]}]}",
		       0, NULL);
	assert_non_null(r);
	work_procs_from_report(&w, r, 10, 75, ignore);
	assert_int_equal(w.nprocs_all, 0);
	assert_int_equal(work_blocks(&w, msg, sizeof(msg)), 0);
	json_decref(r);
}

static void test_slurm_work(void **state)
{
	struct node_work w = { 0 };
	char msg[512];

	(void)state;
	w.sched_asked = 1;
	assert_int_equal(sched_parse_jobs(&w.sched, "12|RUNNING|alice|train\n"), 0);
	assert_int_equal(work_blocks(&w, msg, sizeof(msg)), 1);
	assert_string_equal(msg, "slurm job 12 (alice, train)");
	/* Slurm marks the node down: its jobs are no reason to wait */
	w.sched.down = 1;
	assert_int_equal(work_blocks(&w, msg, sizeof(msg)), 0);
	/* not responding counts so only while the agent is not fresh either */
	w.sched.down = 0;
	w.sched.not_responding = 1;
	w.fresh = 1;
	assert_int_equal(work_blocks(&w, msg, sizeof(msg)), 1);
	w.fresh = 0;
	assert_int_equal(work_blocks(&w, msg, sizeof(msg)), 0);
	w.sched.not_responding = 0;
	/* Slurm could not be asked: the work is not known, which blocks */
	w.sched.down = 0;
	w.sched_failed = 1;
	snprintf(w.sched_error, sizeof(w.sched_error), "slurm: squeue: no answer within 10000 ms");
	assert_int_equal(work_blocks(&w, msg, sizeof(msg)), 1);
	assert_string_equal(msg, "work not known: slurm: squeue: no answer within 10000 ms");
}

static void test_cell(void **state)
{
	json_t *r = json_loads(report_text, 0, NULL);
	struct node_work w = { 0 };
	char cell[64];
	char *kept;

	(void)state;
	work_cell(cell, sizeof(cell), &w);
	assert_string_equal(cell, "-");
	work_procs_from_report(&w, r, 10, 75, ignore);
	work_cell(cell, sizeof(cell), &w);
	assert_string_equal(cell, "2 procs");
	w.sched_asked = 1;
	assert_int_equal(sched_parse_jobs(&w.sched, "12|RUNNING|alice|train\n"), 0);
	work_cell(cell, sizeof(cell), &w);
	assert_string_equal(cell, "1 job, 2 procs");
	work_procs_from_report(&w, r, 100, 75, ignore);
	w.sched_asked = 0;
	work_cell(cell, sizeof(cell), &w);
	assert_string_equal(cell, "2 procs (stale)");
	/* what the summary row keeps parses back to the same processes */
	kept = work_procs_extract(r);
	assert_non_null(kept);
	work_config_set(ignore, 75);
	work_from_summary(&w, kept, 10);
	assert_int_equal(w.nprocs_all, 2);
	work_from_summary(&w, NULL, 10);
	assert_int_equal(w.nprocs_all, 0);
	free(kept);
	json_decref(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_node),
		cmocka_unit_test(test_parse_node_refuses),
		cmocka_unit_test(test_parse_jobs),
		cmocka_unit_test(test_parse_jobs_many),
		cmocka_unit_test(test_parse_fleet),
		cmocka_unit_test(test_node_name),
		cmocka_unit_test(test_ignore_list),
		cmocka_unit_test(test_processes_block_when_fresh),
		cmocka_unit_test(test_idle_process_not_work),
		cmocka_unit_test(test_slurm_work),
		cmocka_unit_test(test_cell),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
