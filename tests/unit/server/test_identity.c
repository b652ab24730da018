/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for server/identity.c: the agent identity decision, one table row per case. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "agents/identity.h"

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
	{ "the same host", NULL, { SAME_HOST, "boot-b1", NULL }, IDENTITY_SAME, NULL, NULL },
	{ "the same host rebooted", NULL, { SAME_HOST, "boot-b2", NULL }, IDENTITY_SAME, NULL, NULL },
	{ "serial and host name in other case", NULL, { "GPU02", "bbbb", "sn-b", "boot-b1", NULL },
	  IDENTITY_SAME, NULL, NULL },
	{ "another node's agent on this token", NULL, { "gpu01", "aaaa", "SN-A", "boot-a1", NULL },
	  IDENTITY_MISMATCH, "host.dmi_serial", "host.machine_id 'bbbb' (stored) vs 'aaaa' (reported)" },
	{ "names the BMC's serial", NULL, { "gpu01", "aaaa", "SN-A", "boot-a1", NULL }, IDENTITY_MISMATCH,
	  "host.dmi_serial", "host.dmi_serial 'SN-A' (reported) is not the BMC's serial 'SN-B'" },
	{ "says what to do", NULL, { "gpu01", "aaaa", "SN-A", "boot-a1", NULL }, IDENTITY_MISMATCH,
	  "host.dmi_serial", "kiln agent accept-identity gpu02" },
	{ "machine id alone", NULL, { "gpu02", "cccc", "SN-B", "boot-b2", NULL }, IDENTITY_MISMATCH,
	  "host.machine_id", "host.machine_id 'bbbb' (stored) vs 'cccc' (reported)" },
	{ "host name alone (a rename) is refused too", NULL, { "gpu02-new", "bbbb", "SN-B", "b", NULL },
	  IDENTITY_MISMATCH, "host.hostname", "host.hostname 'gpu02' (stored) vs 'gpu02-new'" },
	{ "a field the report lacks", NULL, { NULL, NULL, NULL, "boot-b1", NULL }, IDENTITY_SAME, NULL,
	  NULL },
	{ "an empty field", NULL, { "", "", "", "boot-b1", NULL }, IDENTITY_SAME, NULL, NULL },
	{ "a field the stored state lacks", f_never_reported, { SAME_HOST, "boot-b1", NULL }, IDENTITY_SAME,
	  NULL, NULL },
	{ "placeholder serial reported", NULL, { "gpu02", "bbbb", "To be filled by O.E.M.", "b", NULL },
	  IDENTITY_SAME, NULL, NULL },
	{ "first report: serial is not the BMC's", f_fresh_with_bmc,
	  { "gpu01", "aaaa", "SN-A", "boot-a1", NULL }, IDENTITY_MISMATCH, "host.dmi_serial",
	  "is not the BMC's serial 'SN-B'" },
	{ "first report, no BMC serial", f_fresh_no_bmc, { "gpu01", "aaaa", "SN-A", "boot-a1", NULL },
	  IDENTITY_SAME, NULL, NULL },
	{ "no BMC serial, stored serial differs", f_no_bmc_serial, { "gpu02", "bbbb", "SN-X", "b", NULL },
	  IDENTITY_MISMATCH, "host.dmi_serial", "'SN-B' (stored) vs 'SN-X' (reported)" },
	{ "placeholder BMC serial", f_junk_bmc_serial, { "gpu02", "bbbb", "SN-B", "b", NULL },
	  IDENTITY_SAME, NULL, NULL },
	{ "admin accepted: anything binds", f_accept, { "gpu01", "aaaa", "SN-A", "boot-a1", NULL },
	  IDENTITY_ACCEPTED, NULL, NULL },
	{ "admin accepted this BMC serial with another DMI one", f_bmc_accepted,
	  { "gpu02", "bbbb", "SN-B", "b", NULL }, IDENTITY_SAME, NULL, NULL },
	{ "accepted BMC serial, stored DMI serial differs", f_bmc_accepted,
	  { "gpu02", "bbbb", "SN-X", "b", NULL }, IDENTITY_MISMATCH, "host.dmi_serial", "(stored)" },
	{ "an older accepted BMC serial does not cover a new one", f_bmc_accepted_old,
	  { "gpu02", "bbbb", "SN-X", "b", NULL }, IDENTITY_MISMATCH, "host.dmi_serial",
	  "is not the BMC's serial" },
	{ "reinstall: new machine id and boot", f_reinstall, { "gpu02", "cccc", "SN-B", "boot-b2", NULL },
	  IDENTITY_REINSTALL, NULL, NULL },
	{ "reinstall: new machine id, same boot", f_reinstall,
	  { "gpu02", "cccc", "SN-B", "boot-b1", NULL }, IDENTITY_MISMATCH, "host.machine_id", NULL },
	{ "reinstall: no boot id", f_reinstall, { "gpu02", "cccc", "SN-B", NULL, NULL }, IDENTITY_MISMATCH,
	  "host.machine_id", NULL },
	{ "reinstall: the job's change is spent", f_reinstall_used,
	  { "gpu02", "dddd", "SN-B", "boot-b3", NULL }, IDENTITY_MISMATCH, "host.machine_id", NULL },
	{ "reinstall: a later job gets its own", f_reinstall_other_used,
	  { "gpu02", "dddd", "SN-B", "boot-b3", NULL }, IDENTITY_REINSTALL, NULL, NULL },
	{ "reinstall takes no other serial", f_reinstall, { "gpu02", "cccc", "SN-X", "boot-b2", NULL },
	  IDENTITY_MISMATCH, "host.dmi_serial", NULL },
	{ "reinstall takes no other host name", f_reinstall, { "gpu09", "cccc", "SN-B", "boot-b2", NULL },
	  IDENTITY_MISMATCH, "host.hostname", NULL },
	{ "reinstall, same machine id", f_reinstall, { SAME_HOST, "boot-b2", NULL }, IDENTITY_SAME, NULL,
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

static void test_uuid(void **state)
{
	char forms[3][37];

	(void)state;
	assert_true(identity_uuid_useful("4c4c4544-0051-5a10-804b-b9c04f4b3233"));
	assert_true(identity_uuid_useful("{4C4C4544-0051-5A10-804B-B9C04F4B3233}"));
	assert_false(identity_uuid_useful(NULL));
	assert_false(identity_uuid_useful(""));
	assert_false(identity_uuid_useful("Not Settable"));
	assert_false(identity_uuid_useful("4c4c4544-0051-5a10-804b-b9c04f4b323"));
	assert_false(identity_uuid_useful("4c4c4544x0051-5a10-804b-b9c04f4b3233"));
	assert_false(identity_uuid_useful("00000000-0000-0000-0000-000000000000"));
	assert_false(identity_uuid_useful("FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF"));
	assert_false(identity_uuid_useful("03000200-0400-0500-0006-000700080009")); /* AMI */
	assert_false(identity_uuid_useful("00020003-0004-0005-0006-000700080009"));
	assert_int_equal(identity_uuid_compare("4c4c4544-0051-5a10-804b-b9c04f4b3233",
					       "4C4C4544-0051-5A10-804B-B9C04F4B3233"), UUID_SAME);
	assert_int_equal(identity_uuid_compare("4c4c4544-0051-5a10-804b-b9c04f4b3233",
					       "44454c4c-5100-105a-804b-b9c04f4b3233"), UUID_SWAPPED);
	assert_int_equal(identity_uuid_compare("4c4c4544-0051-5a10-804b-b9c04f4b3233",
					       "33324b4f-c0b9-4b80-105a-51004445 4c4c"), UUID_DIFFERENT); /* not hex */
	assert_int_equal(identity_uuid_compare("4c4c4544-0051-5a10-804b-b9c04f4b3233",
					       "33324b4f-c0b9-4b80-105a-510044454c4c"), UUID_REVERSED);
	assert_int_equal(identity_uuid_compare("4c4c4544-0051-5a10-804b-b9c04f4b3233",
					       "4c4c4544-0051-5a10-804b-b9c04f4b3234"), UUID_DIFFERENT);
	assert_int_equal(identity_uuid_compare("00000000-0000-0000-0000-000000000000",
					       "00000000-0000-0000-0000-000000000000"), UUID_DIFFERENT);
	assert_int_equal(identity_uuid_forms(forms, "4C4C4544-0051-5A10-804B-B9C04F4B3233"), 0);
	assert_string_equal(forms[0], "4c4c4544-0051-5a10-804b-b9c04f4b3233");
	assert_string_equal(forms[1], "44454c4c-5100-105a-804b-b9c04f4b3233");
	assert_string_equal(forms[2], "33324b4f-c0b9-4b80-105a-510044454c4c");
	assert_int_equal(identity_uuid_forms(forms, "03000200-0400-0500-0006-000700080009"), -1);
}

/*
 * Each vendor's host against its BMC, as the machines show them (tests/sim/fixtures/vendor/
 * IDENTITY.md and docs/identity.md): what /sys/class/dmi/id/product_serial and product_uuid
 * hold on the host, and what the BMC's Redfish System (SerialNumber, SKU, UUID) and chassis
 * (SerialNumber) or IPMI (FRU, Get System GUID) say.
 */
struct vendor_row {
	const char *name;
	struct identity_bmc bmc;        /* uuid, serial, sku, chassis_serial */
	const char *dmi_uuid, *dmi_serial;
	enum identity_bmc_verdict verdict;
	const char *how;                /* a part of what vouched, NULL: none */
};

static const struct vendor_row vendor_rows[] = {
	/* Dell: DMI's serial is the service tag, the System's SKU; SerialNumber is the board's */
	{ "Dell iDRAC 9", { "4c4c4544-0051-5a10-804b-b9c04f4b3233", "CNIVC0033A0147", "9QZK2X3",
			    "CNIVC0033A0147" },
	  "4C4C4544-0051-5A10-804B-B9C04F4B3233", "9QZK2X3", BMC_VOUCHES, "system UUID" },
	{ "Dell, an agent without the UUID", { "4c4c4544-0051-5a10-804b-b9c04f4b3233",
					       "CNIVC0033A0147", "9QZK2X3", "CNIVC0033A0147" },
	  NULL, "9QZK2X3", BMC_VOUCHES, "SKU (service tag)" },
	{ "Dell, another machine", { "4c4c4544-0051-5a10-804b-b9c04f4b3233", "CNIVC0033A0147",
				     "9QZK2X3", "CNIVC0033A0147" },
	  "4C4C4544-0032-3610-8034-C6C04F545233", "F264TR3", BMC_DIFFERS, NULL },
	/* HPE iLO: DMI's serial is the System's SerialNumber; SKU is the product number */
	{ "HPE iLO 5", { "39383250-3834-584d-5132-333930524857", "MXQ2390RHW", "P28948-B21",
			 "MXQ2390RHW" },
	  "39383250-3834-584D-5132-333930524857", "MXQ2390RHW", BMC_VOUCHES, "system UUID" },
	{ "HPE, serial only", { NULL, "MXQ2390RHW", "P28948-B21", NULL },
	  NULL, "MXQ2390RHW", BMC_VOUCHES, "system serial" },
	/* Lenovo XCC: the machine serial on both sides */
	{ "Lenovo XCC", { "b8d4a1c2-7e3f-11ec-9b2a-0a94ef5c1d2e", "J302XK4L", "7Z46CTO1WW",
			  "J302XK4L" },
	  "B8D4A1C2-7E3F-11EC-9B2A-0A94EF5C1D2E", "J302XK4L", BMC_VOUCHES, "system UUID" },
	/* Supermicro: a placeholder system serial on both sides, the UUID decides */
	{ "Supermicro", { "00000000-0000-0000-0000-3cecef8a1b2c", "0123456789", NULL,
			  "C8170LM44PA0123" },
	  "00000000-0000-0000-0000-3CECEF8A1B2C", "0123456789", BMC_VOUCHES, "system UUID" },
	{ "Supermicro, another board", { "00000000-0000-0000-0000-3cecef8a1b2c", "0123456789",
					 NULL, "C8170LM44PA0123" },
	  "00000000-0000-0000-0000-3CECEF8A9999", "0123456789", BMC_UUID_DIFFERS, NULL },
	/* NVIDIA DGX (AMI): the system serial and UUID on both sides */
	{ "NVIDIA DGX H100", { "a3c1e2d4-55f6-4b7a-9c8d-1e2f3a4b5c6d", "1650923004012", NULL,
			       "1650923004012" },
	  "A3C1E2D4-55F6-4B7A-9C8D-1E2F3A4B5C6D", "1650923004012", BMC_VOUCHES, "system UUID" },
	/* OpenBMC: the System often states no UUID; the FRU's serial is the DMI's */
	{ "OpenBMC", { NULL, "YL12AB345678", NULL, NULL }, "6f1e0c2a-94d3-4b8e-a7c1-2d3e4f5a6b7c",
	  "YL12AB345678", BMC_VOUCHES, "system serial" },
	/* A white box: placeholders everywhere but the UUID */
	{ "white box", { "5d2c8e90-1f3a-11ef-8000-a0b1c2d3e4f5", "To Be Filled By O.E.M.",
			 "To Be Filled By O.E.M.", "To Be Filled By O.E.M." },
	  "5D2C8E90-1F3A-11EF-8000-A0B1C2D3E4F5", "To Be Filled By O.E.M.", BMC_VOUCHES,
	  "system UUID" },
	{ "white box, AMI's placeholder UUID: nothing to compare", { "03000200-0400-0500-0006-000700080009",
	  "To Be Filled By O.E.M.", NULL, NULL }, "03000200-0400-0500-0006-000700080009",
	  "To Be Filled By O.E.M.", BMC_SILENT, NULL },
	/* SMBIOS before 2.6: the kernel prints the raw bytes, the BMC the fields' order */
	{ "an old SMBIOS", { "4c4c4544-0051-5a10-804b-b9c04f4b3233", NULL, NULL, NULL },
	  "44454C4C-5100-105A-804B-B9C04F4B3233", NULL, BMC_VOUCHES, "byte-swapped" },
	/* IPMI: Get System GUID in its own (reversed) byte order */
	{ "IPMI system GUID", { "33324b4f-c0b9-4b80-105a-510044454c4c", "FRU-SN-1", NULL, NULL },
	  "4c4c4544-0051-5a10-804b-b9c04f4b3233", NULL, BMC_VOUCHES, "IPMI byte order" },
	/* a BMC that gives a UUID of its own: the serial still vouches */
	{ "a BMC's own UUID, the serial matches", { "11111111-2222-4333-8444-555555555555",
						    "SN-77", NULL, NULL },
	  "a3c1e2d4-55f6-4b7a-9c8d-1e2f3a4b5c6d", "SN-77", BMC_VOUCHES, "system serial" },
	{ "no BMC values", { NULL, NULL, NULL, NULL }, "a3c1e2d4-55f6-4b7a-9c8d-1e2f3a4b5c6d",
	  "SN-77", BMC_SILENT, NULL },
};

static void test_vendor_identity(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(vendor_rows) / sizeof(vendor_rows[0]); i++) {
		const struct vendor_row *w = &vendor_rows[i];
		const char *how = NULL;
		char msg[400] = "";
		enum identity_bmc_verdict v = identity_bmc_vouch(&how, msg, sizeof(msg), &w->bmc,
								 w->dmi_uuid, w->dmi_serial);

		if (v != w->verdict || (w->how && (!how || !strstr(how, w->how))) ||
		    (!w->how && how))
			fail_msg("%s: got verdict %d how '%s' message '%s'", w->name, v,
				 how ? how : "", msg);
	}
}

/* The whole decision for a Dell node whose agent reports what a Dell host shows. */
static void test_dell_report_taken(void **state)
{
	struct agent_identity f;
	struct identity_decision d;
	const struct identity_report with_uuid = { "gpu02", "bbbb", "9QZK2X3", "boot-b1",
						   "4C4C4544-0051-5A10-804B-B9C04F4B3233" };
	const struct identity_report serial_only = { "gpu02", "bbbb", "9QZK2X3", "boot-b1", NULL };
	const struct identity_report other = { "gpu02", "bbbb", "F264TR3", "boot-b1",
					       "4C4C4544-0032-3610-8034-C6C04F545233" };

	(void)state;
	bound(&f);
	f.bmc_serial = "CNIVC0033A0147";
	f.bmc_sku = "9QZK2X3";
	f.bmc_uuid = "4c4c4544-0051-5a10-804b-b9c04f4b3233";
	f.bmc_chassis_serial = "CNIVC0033A0147";
	f.dmi_serial = "9QZK2X3";
	identity_decide(&d, &f, &with_uuid);
	assert_int_equal(d.verdict, IDENTITY_SAME);
	assert_string_equal(d.bound_by, "system UUID");
	identity_decide(&d, &f, &serial_only);
	assert_int_equal(d.verdict, IDENTITY_SAME);
	assert_string_equal(d.bound_by, "SKU (service tag)");
	f.dmi_serial = NULL;
	identity_decide(&d, &f, &other);
	assert_int_equal(d.verdict, IDENTITY_MISMATCH);
	assert_string_equal(d.field, "host.dmi_uuid");
	assert_non_null(strstr(d.message, "host.dmi_uuid '4C4C4544-0032-3610-8034-C6C04F545233' "
					  "(reported) is not the BMC's system UUID"));
	assert_non_null(strstr(d.message, "host.dmi_serial 'F264TR3' (reported) is not the BMC's "
					  "serial 'CNIVC0033A0147' nor its SKU '9QZK2X3'"));
	assert_null(d.bound_by);
	/* an admin accepted this host with this BMC: its UUID is the acceptance's key */
	f.bmc_serial_accepted = "4c4c4544-0051-5a10-804b-b9c04f4b3233";
	identity_decide(&d, &f, &other);
	assert_int_equal(d.verdict, IDENTITY_SAME);
	assert_non_null(strstr(d.bound_by, "admin"));
}

/* A UUID alone that differs refuses a first report; a host already bound (machine id and
 * host name the same) keeps reporting: its BMC states a UUID of its own. */
static void test_uuid_alone(void **state)
{
	struct agent_identity f;
	struct identity_decision d;
	const struct identity_report r = { "gpu02", "bbbb", "To Be Filled By O.E.M.", "boot-b1",
					   "5d2c8e90-1f3a-11ef-8000-a0b1c2d3e4f5" };

	(void)state;
	bound(&f);
	f.bmc_serial = NULL;
	f.dmi_serial = NULL;
	f.bmc_uuid = "11111111-2222-4333-8444-555555555555";
	identity_decide(&d, &f, &r);
	assert_int_equal(d.verdict, IDENTITY_SAME);
	assert_null(d.bound_by);
	f_never_reported(&f);
	identity_decide(&d, &f, &r);
	assert_int_equal(d.verdict, IDENTITY_MISMATCH);
	assert_string_equal(d.field, "host.dmi_uuid");
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
		cmocka_unit_test(test_uuid),
		cmocka_unit_test(test_vendor_identity),
		cmocka_unit_test(test_dell_report_taken),
		cmocka_unit_test(test_uuid_alone),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
