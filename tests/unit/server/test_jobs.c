/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for the reinstall step logic (job_decide): the plans, timeouts, retries, and what a
 * restarted kilnd does with a step that was in flight. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "fleet/jobs.h"
#include "kiln/error.h"

#define NOW 1700000000

static const struct job_limits LIM = { .step_timeout_s = 600, .boot_timeout_s = 3600,
				       .action_timeout_s = 120 };

static struct job job_at(const char *kind, const char *step, int64_t started)
{
	struct job j = { 0 };

	j.id = 7;
	j.node = "gpu09";
	j.image = "img";
	j.image_kind = (char *)kind;
	j.state = "running";
	j.step = (char *)step;
	j.step_started = started;
	j.boot_id_before = "boot-A";
	j.created_by = "admin";
	return j;
}

static void test_plans(void **state)
{
	int idx, total;

	(void)state;
	assert_int_equal(job_step_after(JOB_STEP_BOOT_ID, 1), JOB_STEP_MEDIA_INSERT);
	assert_int_equal(job_step_after(JOB_STEP_MEDIA_INSERT, 1), JOB_STEP_BOOT_SET);
	assert_int_equal(job_step_after(JOB_STEP_WAIT_BOOT, 1), JOB_STEP_MEDIA_EJECT);
	assert_int_equal(job_step_after(JOB_STEP_MEDIA_EJECT, 1), JOB_STEP_DONE);
	assert_int_equal(job_step_after(JOB_STEP_BOOT_ID, 0), JOB_STEP_BOOT_SET);
	assert_int_equal(job_step_after(JOB_STEP_WAIT_BOOT, 0), JOB_STEP_DONE);
	job_step_progress(&idx, &total, JOB_STEP_POWER_CYCLE, 1);
	assert_int_equal(idx, 4);
	assert_int_equal(total, 6);
	job_step_progress(&idx, &total, JOB_STEP_POWER_CYCLE, 0);
	assert_int_equal(idx, 3);
	assert_int_equal(total, 4);
	for (int s = JOB_STEP_BOOT_ID; s <= JOB_STEP_DONE; s++) {
		enum job_step back;

		assert_int_equal(job_step_parse(&back, job_step_name((enum job_step)s)), 0);
		assert_int_equal(back, s);
	}
	{
		enum job_step back;

		assert_int_equal(job_step_parse(&back, "reboot"), KILN_EINVAL);
	}
}

static void test_boot_id_recorded(void **state)
{
	struct job j = job_at("iso", "boot_id", NOW);
	struct job_facts f = { .now = NOW, .boot_id = "boot-A" };
	struct job_next n;

	(void)state;
	job_decide(&n, &j, &f, &LIM);
	assert_int_equal(n.verdict, JOB_ADVANCE);
	assert_int_equal(n.step, JOB_STEP_MEDIA_INSERT);
	assert_true(n.record_boot_id);
}

static void test_bmc_step_outcomes(void **state)
{
	static const struct {
		const char *step;
		struct job_facts f;
		enum job_verdict want;
		enum job_step next;
		const char *msg; /* a substring of the message, or NULL */
	} cases[] = {
		{ "media_insert", { .now = NOW }, JOB_SUBMIT, JOB_STEP_MEDIA_INSERT, NULL },
		{ "media_insert", { .now = NOW, .op_in_flight = 1 }, JOB_WAIT, JOB_STEP_MEDIA_INSERT, NULL },
		{ "media_insert", { .now = NOW, .op_done = 1 }, JOB_ADVANCE, JOB_STEP_BOOT_SET, NULL },
		{ "boot_set", { .now = NOW, .op_done = 1 }, JOB_ADVANCE, JOB_STEP_POWER_CYCLE, NULL },
		{ "media_eject", { .now = NOW, .op_done = 1 }, JOB_ADVANCE, JOB_STEP_DONE, NULL },
		/* A transient failure is retried; a missing device fails at once. */
		{ "media_insert", { .now = NOW, .op_done = 1, .op_rc = KILN_ERROR, .op_error = "503" },
		  JOB_RETRY_LATER, JOB_STEP_MEDIA_INSERT, "step media_insert: 503" },
		{ "media_insert",
		  { .now = NOW, .op_done = 1, .op_rc = KILN_ENOTFOUND, .op_error = "no CD device" },
		  JOB_FAIL, JOB_STEP_MEDIA_INSERT, "step media_insert: no CD device" },
		{ "boot_set", { .now = NOW + 5, .retry_at = NOW + 10 }, JOB_WAIT, JOB_STEP_BOOT_SET, NULL },
		{ "boot_set", { .now = NOW + 10, .retry_at = NOW + 10 }, JOB_SUBMIT, JOB_STEP_BOOT_SET, NULL },
		/* Past the step's deadline: the failure names the step. */
		{ "boot_set", { .now = NOW + 600, .op_done = 1, .op_rc = KILN_ETIMEOUT, .op_error = "hung" },
		  JOB_FAIL, JOB_STEP_BOOT_SET, "step boot_set timed out after 600s: hung" },
		{ "boot_set", { .now = NOW + 601 }, JOB_FAIL, JOB_STEP_BOOT_SET,
		  "step boot_set timed out after 600s" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct job j = job_at("iso", cases[i].step, NOW);
		struct job_next n;

		job_decide(&n, &j, &cases[i].f, &LIM);
		if (n.verdict != cases[i].want || n.step != cases[i].next)
			fail_msg("case %zu (%s): verdict %d step %d, want %d %d", i, cases[i].step,
				 n.verdict, n.step, cases[i].want, cases[i].next);
		if (cases[i].msg && !strstr(n.message, cases[i].msg))
			fail_msg("case %zu: message '%s' lacks '%s'", i, n.message, cases[i].msg);
	}
}

static void test_power_cycle(void **state)
{
	struct job j = job_at("pxe", "power_cycle", NOW);
	struct job_facts f = { .now = NOW + 1, .boot_id = "boot-A", .agent_last_seen = NOW };
	struct job_next n;

	(void)state;
	/* Never sent: send it. */
	job_decide(&n, &j, &f, &LIM);
	assert_int_equal(n.verdict, JOB_SUBMIT);
	/* Confirmed by the BMC. */
	f.op_done = 1;
	job_decide(&n, &j, &f, &LIM);
	assert_int_equal(n.verdict, JOB_ADVANCE);
	assert_int_equal(n.step, JOB_STEP_WAIT_BOOT);
	assert_true(n.cycle_done);
	/* Sent before a restart, outcome lost: not sent again, the job waits for the boot. */
	f.op_done = 0;
	j.cycle_sent_at = NOW;
	job_decide(&n, &j, &f, &LIM);
	assert_int_equal(n.verdict, JOB_ADVANCE);
	assert_int_equal(n.step, JOB_STEP_WAIT_BOOT);
	assert_false(n.cycle_done);
	/* Lost, but the agent already reports a new boot: the cycle happened. */
	f.boot_id = "boot-B";
	f.agent_last_seen = NOW + 30;
	job_decide(&n, &j, &f, &LIM);
	assert_int_equal(n.verdict, JOB_ADVANCE);
	assert_int_equal(n.step, JOB_STEP_WAIT_BOOT);
	assert_true(n.cycle_done);
	/* A failed confirmation while the node did come back from a new boot. */
	j.cycle_sent_at = NOW;
	f.op_done = 1;
	f.op_rc = KILN_ETIMEOUT;
	job_decide(&n, &j, &f, &LIM);
	assert_int_equal(n.verdict, JOB_ADVANCE);
}

static void test_wait_boot(void **state)
{
	struct job j = job_at("iso", "wait_boot", NOW);
	struct job_facts f = { .now = NOW + 10, .boot_id = "boot-A", .agent_last_seen = NOW + 9 };
	struct job_next n;

	(void)state;
	j.cycle_sent_at = NOW - 5;
	j.cycle_done = 1;
	j.image_os = "Ubuntu 22.04";
	job_decide(&n, &j, &f, &LIM);
	assert_int_equal(n.verdict, JOB_WAIT);
	/* New boot id, wrong OS: wait, then time out saying so. */
	f.boot_id = "boot-B";
	f.os = "Rocky Linux 9.3";
	job_decide(&n, &j, &f, &LIM);
	assert_int_equal(n.verdict, JOB_WAIT);
	f.now = NOW + 3600;
	job_decide(&n, &j, &f, &LIM);
	assert_int_equal(n.verdict, JOB_FAIL);
	assert_non_null(strstr(n.message, "step wait_boot timed out after 3600s"));
	assert_non_null(strstr(n.message, "Rocky Linux 9.3"));
	/* The right OS (a case-insensitive substring): on to the eject. */
	f.now = NOW + 20;
	f.os = "ubuntu 22.04.4 LTS";
	job_decide(&n, &j, &f, &LIM);
	assert_int_equal(n.verdict, JOB_ADVANCE);
	assert_int_equal(n.step, JOB_STEP_MEDIA_EJECT);
	/* No new boot by the deadline. */
	f.boot_id = "boot-A";
	f.now = NOW + 3600;
	job_decide(&n, &j, &f, &LIM);
	assert_int_equal(n.verdict, JOB_FAIL);
	assert_string_equal(n.message,
			    "step wait_boot timed out after 3600s: no new boot id from the agent");
}

static void test_wait_boot_after_lost_cycle(void **state)
{
	struct job j = job_at("pxe", "wait_boot", NOW);
	struct job_facts f = { .now = NOW + 60, .boot_id = "boot-A", .agent_last_seen = NOW + 60,
			       .agent_report_time = NOW + 60 };
	struct job_next n;

	(void)state;
	j.cycle_sent_at = NOW;
	j.cycle_done = 0;
	/* The old system still reports, but within the time a cycle may take: wait. */
	job_decide(&n, &j, &f, &LIM);
	assert_int_equal(n.verdict, JOB_WAIT);
	/* A report the old system made just before the cycle, received late (spooled while
	 * kilnd was stopped): no proof that the cycle never happened. */
	f.now = f.agent_last_seen = NOW + 300;
	f.agent_report_time = NOW + 2;
	job_decide(&n, &j, &f, &LIM);
	assert_int_equal(n.verdict, JOB_WAIT);
	/* Still reporting the old boot id well past it: the cycle never happened. */
	f.now = f.agent_last_seen = f.agent_report_time = NOW + 121;
	job_decide(&n, &j, &f, &LIM);
	assert_int_equal(n.verdict, JOB_ADVANCE);
	assert_int_equal(n.step, JOB_STEP_POWER_CYCLE);
	assert_true(n.cycle_reset);
	/* Once the BMC confirmed the cycle, an old report never sends it again. */
	j.cycle_done = 1;
	job_decide(&n, &j, &f, &LIM);
	assert_int_equal(n.verdict, JOB_WAIT);
}

static void test_no_boot_id_before(void **state)
{
	struct job j = job_at("pxe", "wait_boot", NOW);
	struct job_facts f = { .now = NOW + 30, .boot_id = "boot-X", .agent_last_seen = NOW - 1 };
	struct job_next n;

	(void)state;
	/* The agent never reported before: any report after the cycle is the new boot. */
	j.boot_id_before = NULL;
	j.cycle_sent_at = NOW;
	j.cycle_done = 1;
	job_decide(&n, &j, &f, &LIM);
	assert_int_equal(n.verdict, JOB_WAIT);
	f.agent_last_seen = NOW + 20;
	job_decide(&n, &j, &f, &LIM);
	assert_int_equal(n.verdict, JOB_ADVANCE);
	assert_int_equal(n.step, JOB_STEP_DONE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plans),
		cmocka_unit_test(test_boot_id_recorded),
		cmocka_unit_test(test_bmc_step_outcomes),
		cmocka_unit_test(test_power_cycle),
		cmocka_unit_test(test_wait_boot),
		cmocka_unit_test(test_wait_boot_after_lost_cycle),
		cmocka_unit_test(test_no_boot_id_before),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
