/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for agent/gpu_aer.c: a GPU's AER counters from sysfs files staged under a root. */
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

#include "gpu_aer.h"

/* The kernel's aer_dev_* texts (drivers/pci/pcie/aer.c) as an H100 behind a PCIe switch
 * shows them after a bad riser: replays and bad TLPs seen, one non-fatal completion
 * timeout, no fatal error. */
static const char correctable[] = "RxErr 0\nBadTLP 14\nBadDLLP 3\nRollover 0\nTimeout 2\n"
				  "NonFatalErr 0\nCorrIntErr 0\nHeaderOF 0\nTOTAL_ERR_COR 19\n";
static const char nonfatal[] = "Undefined 0\nDLP 0\nSDES 0\nTLP 0\nFCP 0\nCmpltTO 1\n"
			       "CmpltAbrt 0\nUnxCmplt 0\nRxOF 0\nMalfTLP 0\nECRC 0\nUnsupReq 0\n"
			       "ACSViol 0\nUncorrIntErr 0\nBlockedTLP 0\nAtomicOpBlocked 0\n"
			       "TLPBlockedErr 0\nPoisonTLPBlocked 0\nTOTAL_ERR_NONFATAL 1\n";
static const char fatal[] = "Undefined 0\nDLP 0\nSDES 0\nTLP 0\nFCP 0\nCmpltTO 0\n"
			    "TOTAL_ERR_FATAL 0\n";

static void test_sysfs_name(void **state)
{
	char out[32];

	(void)state;
	assert_int_equal(gpu_aer_sysfs_name(out, sizeof out, "00000000:1B:00.0"), 0);
	assert_string_equal(out, "0000:1b:00.0");
	assert_int_equal(gpu_aer_sysfs_name(out, sizeof out, "00000001:DB:1F.7"), 0);
	assert_string_equal(out, "0001:db:1f.7");
	assert_int_equal(gpu_aer_sysfs_name(out, sizeof out, "0000:3b:00"), -1);
	assert_int_equal(gpu_aer_sysfs_name(out, sizeof out, "00000000:1B:00.0/../x"), -1);
	assert_int_equal(gpu_aer_sysfs_name(out, sizeof out, "00000000:1B:40.0"), -1);
	assert_int_equal(gpu_aer_sysfs_name(out, sizeof out, NULL), -1);
}

static void test_total(void **state)
{
	(void)state;
	assert_int_equal(gpu_aer_total(correctable), 19);
	assert_int_equal(gpu_aer_total(nonfatal), 1);
	assert_int_equal(gpu_aer_total(fatal), 0);
	assert_int_equal(gpu_aer_total("RxErr 0\nBadTLP 2\n"), -1);
	assert_int_equal(gpu_aer_total("TOTAL_ERR_COR x\n"), -1);
	assert_int_equal(gpu_aer_total(""), -1);
}

static void put(const char *dir, const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_annotate(void **state)
{
	char root[] = "/tmp/kiln-aer-XXXXXX", dir[256], cmd[300];
	json_t *gpus, *g0, *g1, *g2;

	(void)state;
	assert_non_null(mkdtemp(root));
	snprintf(dir, sizeof dir, "%s/sys/bus/pci/devices/0000:1b:00.0", root);
	snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
	assert_int_equal(system(cmd), 0);
	put(dir, "aer_dev_correctable", correctable);
	put(dir, "aer_dev_nonfatal", nonfatal);
	put(dir, "aer_dev_fatal", fatal);
	gpus = json_pack("[{s:i,s:s},{s:i,s:s},{s:i}]", "index", 0, "pci_bus_id",
			 "00000000:1B:00.0", "index", 1, "pci_bus_id", "00000000:2A:00.0", "index", 2);
	gpu_aer_annotate(gpus, root);
	g0 = json_array_get(gpus, 0);
	g1 = json_array_get(gpus, 1);
	g2 = json_array_get(gpus, 2);
	assert_int_equal(json_integer_value(json_object_get(g0, "aer_correctable")), 19);
	assert_int_equal(json_integer_value(json_object_get(g0, "aer_nonfatal")), 1);
	assert_int_equal(json_integer_value(json_object_get(g0, "aer_fatal")), 0);
	/* no AER files (no device there, or a kernel without AER stats): nothing added */
	assert_null(json_object_get(g1, "aer_correctable"));
	assert_int_equal(json_object_size(g2), 1);
	json_decref(gpus);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sysfs_name),
		cmocka_unit_test(test_total),
		cmocka_unit_test(test_annotate),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
