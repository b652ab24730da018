/* Tests for server/identity.c: the agent identity decision, one table row per case. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "identity.h"

/* Node gpu02: its BMC says serial SN-B, its agent reported SN-B / machine bbbb / gpu02. */
static void bound(struct agent_identity *f)
{
	memset(f, 0, sizeof(*f));
	f->node_id = 2;
	f->node = "gpu02";
	f->bmc_serial = "SN-B";
	f->has_agent = 1;
	f->hostname = "gpu02";
	f->machine_id = "bbbb";
	f->dmi_serial = "SN-B";
	f->boot_id = "boot-b1";
}

static void f_never_reported(struct agent_identity *f)
{
	f->has_agent = 0;
	f->hostname = f->machine_id = f->dmi_serial = f->boot_id = NULL;
}
static void f_no_bmc_serial(struct agent_identity *f) { f->bmc_serial = NULL; }
static void f_junk_bmc_serial(struct agent_identity *f) { f->bmc_serial = "To be filled by O.E.M."; }
static void f_accept(struct agent_identity *f) { f->accept_next = 1; }
static void f_bmc_accepted(struct agent_identity *f) { f->bmc_serial_accepted = "SN-B"; }
static void f_bmc_accepted_old(struct agent_identity *f) { f->bmc_serial_accepted = "SN-OLD"; }
static void f_reinstall(struct agent_identity *f) { f->reinstall_running = 7; }
static void f_reinstall_used(struct agent_identity *f)
{
	f->reinstall_running = 7;
	f->reinstall_job = 7; /* this job's one change is spent */
}
static void f_reinstall_other_used(struct agent_identity *f)
{
	f->reinstall_running = 8;
	f->reinstall_job = 7;
}
static void f_fresh_with_bmc(struct agent_identity *f)
{
	f_never_reported(f); /* a first report: only the BMC's serial to compare with */
}
static void f_fresh_no_bmc(struct agent_identity *f)
{
	f_never_reported(f);
	f->bmc_serial = NULL;
}

struct row {
	const char *name;
	void (*set)(struct agent_identity *f);
	struct identity_report r;
	enum identity_verdict verdict;
	const char *field;   /* the first differing field, NULL: none */
	const char *message; /* a part of the message, NULL: not checked */
};

#define SAME_HOST "gpu02", "bbbb", "SN-B"

static const struct row rows[] = {
	{ "the same host", NULL, { SAME_HOST, "boot-b1" }, IDENTITY_SAME, NULL, NULL },
	{ "the same host rebooted", NULL, { SAME_HOST, "boot-b2" }, IDENTITY_SAME, NULL, NULL },
	{ "serial and host name in other case", NULL, { "GPU02", "bbbb", "sn-b", "boot-b1" },
	  IDENTITY_SAME, NULL, NULL },
	{ "another node's agent on this token", NULL, { "gpu01", "aaaa", "SN-A", "boot-a1" },
	  IDENTITY_MISMATCH, "host.dmi_serial", "host.machine_id 'bbbb' (stored) vs 'aaaa' (reported)" },
	{ "names the BMC's serial", NULL, { "gpu01", "aaaa", "SN-A", "boot-a1" }, IDENTITY_MISMATCH,
	  "host.dmi_serial", "host.dmi_serial 'SN-A' (reported) is not the BMC's serial 'SN-B'" },
	{ "says what to do", NULL, { "gpu01", "aaaa", "SN-A", "boot-a1" }, IDENTITY_MISMATCH,
	  "host.dmi_serial", "kiln agent accept-identity gpu02" },
	{ "machine id alone", NULL, { "gpu02", "cccc", "SN-B", "boot-b2" }, IDENTITY_MISMATCH,
	  "host.machine_id", "host.machine_id 'bbbb' (stored) vs 'cccc' (reported)" },
	{ "host name alone (a rename) is refused too", NULL, { "gpu02-new", "bbbb", "SN-B", "b" },
	  IDENTITY_MISMATCH, "host.hostname", "host.hostname 'gpu02' (stored) vs 'gpu02-new'" },
	{ "a field the report lacks", NULL, { NULL, NULL, NULL, "boot-b1" }, IDENTITY_SAME, NULL,
	  NULL },
	{ "an empty field", NULL, { "", "", "", "boot-b1" }, IDENTITY_SAME, NULL, NULL },
	{ "a field the stored state lacks", f_never_reported, { SAME_HOST, "boot-b1" }, IDENTITY_SAME,
	  NULL, NULL },
	{ "placeholder serial reported", NULL, { "gpu02", "bbbb", "To be filled by O.E.M.", "b" },
	  IDENTITY_SAME, NULL, NULL },
	{ "first report: serial is not the BMC's", f_fresh_with_bmc,
	  { "gpu01", "aaaa", "SN-A", "boot-a1" }, IDENTITY_MISMATCH, "host.dmi_serial",
	  "is not the BMC's serial 'SN-B'" },
	{ "first report, no BMC serial", f_fresh_no_bmc, { "gpu01", "aaaa", "SN-A", "boot-a1" },
	  IDENTITY_SAME, NULL, NULL },
	{ "no BMC serial, stored serial differs", f_no_bmc_serial, { "gpu02", "bbbb", "SN-X", "b" },
	  IDENTITY_MISMATCH, "host.dmi_serial", "'SN-B' (stored) vs 'SN-X' (reported)" },
	{ "placeholder BMC serial", f_junk_bmc_serial, { "gpu02", "bbbb", "SN-B", "b" },
	  IDENTITY_SAME, NULL, NULL },
	{ "admin accepted: anything binds", f_accept, { "gpu01", "aaaa", "SN-A", "boot-a1" },
	  IDENTITY_ACCEPTED, NULL, NULL },
	{ "admin accepted this BMC serial with another DMI one", f_bmc_accepted,
	  { "gpu02", "bbbb", "SN-B", "b" }, IDENTITY_SAME, NULL, NULL },
	{ "accepted BMC serial, stored DMI serial differs", f_bmc_accepted,
	  { "gpu02", "bbbb", "SN-X", "b" }, IDENTITY_MISMATCH, "host.dmi_serial", "(stored)" },
	{ "an older accepted BMC serial does not cover a new one", f_bmc_accepted_old,
	  { "gpu02", "bbbb", "SN-X", "b" }, IDENTITY_MISMATCH, "host.dmi_serial",
	  "is not the BMC's serial" },
	{ "reinstall: new machine id and boot", f_reinstall, { "gpu02", "cccc", "SN-B", "boot-b2" },
	  IDENTITY_REINSTALL, NULL, NULL },
	{ "reinstall: new machine id, same boot", f_reinstall,
	  { "gpu02", "cccc", "SN-B", "boot-b1" }, IDENTITY_MISMATCH, "host.machine_id", NULL },
	{ "reinstall: no boot id", f_reinstall, { "gpu02", "cccc", "SN-B", NULL }, IDENTITY_MISMATCH,
	  "host.machine_id", NULL },
	{ "reinstall: the job's change is spent", f_reinstall_used,
	  { "gpu02", "dddd", "SN-B", "boot-b3" }, IDENTITY_MISMATCH, "host.machine_id", NULL },
	{ "reinstall: a later job gets its own", f_reinstall_other_used,
	  { "gpu02", "dddd", "SN-B", "boot-b3" }, IDENTITY_REINSTALL, NULL, NULL },
	{ "reinstall takes no other serial", f_reinstall, { "gpu02", "cccc", "SN-X", "boot-b2" },
	  IDENTITY_MISMATCH, "host.dmi_serial", NULL },
	{ "reinstall takes no other host name", f_reinstall, { "gpu09", "cccc", "SN-B", "boot-b2" },
	  IDENTITY_MISMATCH, "host.hostname", NULL },
	{ "reinstall, same machine id", f_reinstall, { SAME_HOST, "boot-b2" }, IDENTITY_SAME, NULL,
	  NULL },
};

static void test_decide(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *w = &rows[i];
		struct agent_identity f;
		struct identity_decision d;

		bound(&f);
		if (w->set)
			w->set(&f);
		identity_decide(&d, &f, &w->r);
		if (d.verdict != w->verdict || (w->field && (!d.field || strcmp(d.field, w->field))) ||
		    (!w->field && d.field) || (w->message && !strstr(d.message, w->message)))
			fail_msg("%s: got verdict %d field '%s' message '%s'", w->name, d.verdict,
				 d.field ? d.field : "", d.message);
	}
}

static void test_serial_useful(void **state)
{
	(void)state;
	assert_true(identity_serial_useful("CN7475123A0042"));
	assert_false(identity_serial_useful(NULL));
	assert_false(identity_serial_useful(""));
	assert_false(identity_serial_useful("To Be Filled By O.E.M."));
	assert_false(identity_serial_useful("Default string"));
	assert_false(identity_serial_useful("0"));
}

/* Enrollment: the fleet token is on every node, so only the BMC's serial takes a node, and
 * only one without an agent (or a running reinstall job's one enrollment). */
struct enroll_row {
	const char *name;
	struct enroll_facts f;
	enum enroll_verdict verdict;
	const char *reason; /* a part of the reason, NULL: none expected */
};

static const struct enroll_row enroll_rows[] = {
	{ "no node matches", { NULL, 0, 0, 0, 0 }, ENROLL_PENDING, "no node matches" },
	{ "the BMC's serial, no agent yet", { "gpu03", 1, 0, 0, 0 }, ENROLL_ISSUE, NULL },
	{ "the BMC's serial, the node has an agent", { "gpu03", 1, 1, 0, 0 }, ENROLL_PENDING,
	  "node gpu03 already has an agent token" },
	{ "host name only, no agent yet", { "gpu03", 0, 0, 0, 0 }, ENROLL_PENDING,
	  "host name matches node gpu03" },
	{ "host name only, the node has an agent", { "gpu03", 0, 1, 0, 0 }, ENROLL_PENDING,
	  "only an admin binds by name" },
	{ "host name only, during a reinstall", { "gpu03", 0, 1, 7, 0 }, ENROLL_PENDING,
	  "host name matches" },
	{ "the BMC's serial during a reinstall", { "gpu03", 1, 1, 7, 0 }, ENROLL_REINSTALL, NULL },
	{ "the reinstall's one enrollment is spent", { "gpu03", 1, 1, 7, 1 }, ENROLL_PENDING,
	  "already took its enrollment" },
	{ "a reinstall, no agent yet", { "gpu03", 1, 0, 7, 0 }, ENROLL_ISSUE, NULL },
};

static void test_enroll_decide(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(enroll_rows) / sizeof(enroll_rows[0]); i++) {
		const struct enroll_row *w = &enroll_rows[i];
		struct enroll_decision d;

		enroll_decide(&d, &w->f);
		if (d.verdict != w->verdict || (w->reason && !strstr(d.reason, w->reason)) ||
		    (!w->reason && d.reason[0]))
			fail_msg("%s: got verdict %d reason '%s'", w->name, d.verdict, d.reason);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decide),
		cmocka_unit_test(test_enroll_decide),
		cmocka_unit_test(test_serial_useful),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
