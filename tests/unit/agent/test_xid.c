/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for agent/xid.c: the Xid line parser and the kmsg reader on plain-file fixtures. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "kiln/error.h"
#include "xid.h"

#define FIX KILN_TEST_DATA "/fixtures/agent"

static void test_parse_vectors(void **state)
{
	static const struct {
		const char *line;
		int rc, xid;
		const char *bus, *message;
		long long seq;
	} cases[] = {
		{ "4,17,5000,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=x, GPU has fallen off the bus.",
		  0, 79, "00000000:3B:00.0", "pid=1, name=x, GPU has fallen off the bus.", 17 },
		{ "NVRM: Xid (PCI:0000:3B:00.0): 48, An uncorrectable double bit error", 0, 48,
		  "00000000:3B:00.0", "An uncorrectable double bit error", -1 },
		{ "NVRM: Xid (0000:03:00): 13, 0003 00000000", 0, 13, "00000000:03:00.0", "0003 00000000", -1 },
		{ "NVRM: Xid (PCI:00000001:c1:00): 94, Contained", 0, 94, "00000001:C1:00.0", "Contained", -1 },
		{ "NVRM: Xid: 62, 0 0 0", 0, 62, "", "0 0 0", -1 },
		{ "[ 12.5] NVRM: Xid (PCI:0000:01:00): 8, ", 0, 8, "00000000:01:00.0", "", -1 },
		{ "NVRM: Xid (PCI:garbage): 31, msg", 0, 31, "", "msg", -1 },
		{ "6,1,1,-;usb 1-1: new device", KILN_ENOTFOUND, 0, NULL, NULL, 0 },
		{ "NVRM: GPU at PCI:0000:1b:00: GPU-1234", KILN_ENOTFOUND, 0, NULL, NULL, 0 },
		{ "NVRM: Xid (PCI:0000:3b:00 79, no close", KILN_EINVAL, 0, NULL, NULL, 0 },
		{ "NVRM: Xid (PCI:0000:3b:00) 79, no colon", KILN_EINVAL, 0, NULL, NULL, 0 },
		{ "NVRM: Xid (PCI:0000:3b:00): abc", KILN_EINVAL, 0, NULL, NULL, 0 },
		{ "", KILN_ENOTFOUND, 0, NULL, NULL, 0 },
	};
	struct xid_event ev;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int rc = xid_line_parse(&ev, cases[i].line);

		if (rc != cases[i].rc)
			fail_msg("case %zu '%s': rc %d, expected %d", i, cases[i].line, rc, cases[i].rc);
		if (rc != 0)
			continue;
		assert_int_equal(ev.xid, cases[i].xid);
		assert_string_equal(ev.pci_bus_id, cases[i].bus);
		assert_string_equal(ev.message, cases[i].message);
		assert_int_equal(ev.seq, cases[i].seq);
	}
}

static void test_pci_normalize(void **state)
{
	char out[32];

	(void)state;
	assert_int_equal(xid_pci_normalize(out, "0000:3b:00"), 0);
	assert_string_equal(out, "00000000:3B:00.0");
	assert_int_equal(xid_pci_normalize(out, "00000000:DB:00.0"), 0);
	assert_string_equal(out, "00000000:DB:00.0");
	assert_int_equal(xid_pci_normalize(out, "0000:3B:00.1"), 0);
	assert_string_equal(out, "00000000:3B:00.1");
	assert_int_equal(xid_pci_normalize(out, "3b"), KILN_EINVAL);
	assert_int_equal(xid_pci_normalize(out, "0000:3b:00.0x"), KILN_EINVAL);
}

static json_t *poll_file(const char *root_dev_kmsg_dir, size_t max, struct xid_reader **keep)
{
	struct xid_reader *r = NULL;
	json_t *ev = json_array();

	assert_int_equal(xid_reader_open(&r, root_dev_kmsg_dir), 0);
	assert_int_equal(xid_reader_poll(r, ev, max), 0);
	if (keep)
		*keep = r;
	else
		xid_reader_close(r);
	return ev;
}

static void test_reader_with_pci(void **state)
{
	json_t *ev = poll_file(FIX "/roots/h100", 100, NULL);
	json_t *e;

	(void)state;
	assert_int_equal(json_array_size(ev), 2);
	e = json_array_get(ev, 0);
	assert_int_equal(json_integer_value(json_object_get(e, "xid")), 79);
	assert_string_equal(json_string_value(json_object_get(e, "pci_bus_id")), "00000000:1B:00.0");
	assert_string_equal(json_string_value(json_object_get(e, "source")), "kmsg");
	assert_int_equal(json_integer_value(json_object_get(e, "seq")), 1002);
	assert_int_equal(json_integer_value(json_object_get(e, "time_us")), 86400123456LL);
	json_decref(ev);
}

/* A temporary root whose dev/kmsg is a copy of a fixture file, appended to between polls. */
struct tmproot {
	char dir[64];
	char kmsg[96];
};

static void tmproot_make(struct tmproot *t, const char *fixture)
{
	char cmd[512];

	snprintf(t->dir, sizeof t->dir, "/tmp/kiln-xid-XXXXXX");
	assert_non_null(mkdtemp(t->dir));
	snprintf(cmd, sizeof cmd, "%s/dev", t->dir);
	assert_int_equal(mkdir(cmd, 0700), 0);
	snprintf(t->kmsg, sizeof t->kmsg, "%s/dev/kmsg", t->dir);
	snprintf(cmd, sizeof cmd, "cp '%s' '%s'", fixture, t->kmsg);
	assert_int_equal(system(cmd), 0);
}

static void tmproot_free(struct tmproot *t)
{
	char path[128];

	unlink(t->kmsg);
	snprintf(path, sizeof path, "%s/dev", t->dir);
	rmdir(path);
	rmdir(t->dir);
}

static void append(const char *path, const char *text)
{
	FILE *f = fopen(path, "a");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_reader_incremental(void **state)
{
	struct xid_reader *r = NULL;
	struct tmproot t;
	json_t *ev;

	(void)state;
	tmproot_make(&t, FIX "/kmsg/with-pci.kmsg");
	ev = poll_file(t.dir, 100, &r);
	assert_int_equal(json_array_size(ev), 3);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(ev, 1), "xid")), 119);
	assert_string_equal(json_string_value(json_object_get(json_array_get(ev, 2), "pci_bus_id")),
			    "00000002:C1:00.0");
	json_array_clear(ev);

	/* nothing new: nothing reported again */
	assert_int_equal(xid_reader_poll(r, ev, 100), 0);
	assert_int_equal(json_array_size(ev), 0);

	/* a partial line waits until it is complete */
	append(t.kmsg, "4,2005,93000000,-;NVRM: Xid (PCI:0000:3b:00): 4");
	assert_int_equal(xid_reader_poll(r, ev, 100), 0);
	assert_int_equal(json_array_size(ev), 0);
	append(t.kmsg, "3, Graphics Exception\n6,2006,1,-;other\n");
	assert_int_equal(xid_reader_poll(r, ev, 100), 0);
	assert_int_equal(json_array_size(ev), 1);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(ev, 0), "xid")), 43);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(ev, 0), "seq")), 2005);
	json_decref(ev);
	xid_reader_close(r);
	tmproot_free(&t);
}

static void test_reader_without_pci_and_cap(void **state)
{
	struct xid_reader *r = NULL;
	struct tmproot t;
	json_t *ev;

	(void)state;
	tmproot_make(&t, FIX "/kmsg/without-pci.kmsg");
	ev = poll_file(t.dir, 2, &r);
	assert_int_equal(json_array_size(ev), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(ev, 0), "pci_bus_id")),
			    "00000000:03:00.0");
	assert_null(json_object_get(json_array_get(ev, 1), "pci_bus_id"));
	assert_null(json_object_get(json_array_get(ev, 1), "seq"));
	assert_int_equal(xid_reader_dropped(r), 1); /* the third Xid was over the cap */
	assert_int_equal(xid_reader_overruns(r), 0);
	json_decref(ev);
	xid_reader_close(r);
	tmproot_free(&t);
}

static void test_reader_missing(void **state)
{
	struct xid_reader *r = NULL;

	(void)state;
	assert_int_equal(xid_reader_open(&r, FIX "/roots/no-such-root"), KILN_ENOTFOUND);
	assert_null(r);
	xid_reader_close(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_vectors),
		cmocka_unit_test(test_pci_normalize),
		cmocka_unit_test(test_reader_with_pci),
		cmocka_unit_test(test_reader_incremental),
		cmocka_unit_test(test_reader_without_pci_and_cap),
		cmocka_unit_test(test_reader_missing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
