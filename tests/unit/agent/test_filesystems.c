/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for agent/host.c's filesystems: statvfs under the root, the mount of each path,
 * one entry per filesystem, and the test-only staged numbers. */
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

#include "host.h"
#include "kiln/error.h"

struct root {
	char dir[64];
};

static void put(const struct root *r, const char *path, const char *text)
{
	char full[256];
	FILE *f;

	snprintf(full, sizeof full, "%s%s", r->dir, path);
	f = fopen(full, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void sub(const struct root *r, const char *path)
{
	char full[256];

	snprintf(full, sizeof full, "%s%s", r->dir, path);
	assert_int_equal(mkdir(full, 0700), 0);
}

static void root_make(struct root *r)
{
	snprintf(r->dir, sizeof r->dir, "/tmp/kiln-fs-XXXXXX");
	assert_non_null(mkdtemp(r->dir));
	sub(r, "/proc");
	sub(r, "/proc/self");
	sub(r, "/.kiln-test");
}

static void root_free(struct root *r)
{
	char cmd[128];

	snprintf(cmd, sizeof cmd, "rm -rf '%s'", r->dir);
	assert_int_equal(system(cmd), 0);
}

/* A node's mounts, shaped after a GPU server's /proc/self/mounts. */
static const char mounts[] =
	"/dev/nvme0n1p2 / ext4 rw,relatime,errors=remount-ro 0 0\n"
	"proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0\n"
	"tmpfs /tmp tmpfs rw,nosuid,nodev,size=65536000k 0 0\n"
	"/dev/nvme1n1p1 /var/lib ext4 rw,relatime 0 0\n"
	"/dev/md0 /raid\\040data xfs rw,relatime,attr2,inode64 0 0\n"
	"/dev/sdb1 /scratch btrfs rw,relatime,ssd,space_cache=v2 0 0\n";

static json_t *find(json_t *arr, const char *path)
{
	size_t i;
	json_t *o;

	json_array_foreach(arr, i, o)
		if (strcmp(json_string_value(json_object_get(o, "path")), path) == 0)
			return o;
	return NULL;
}

static double real(json_t *o, const char *k)
{
	return json_number_value(json_object_get(o, k));
}

static void test_staged(void **state)
{
	struct root r;
	json_t *arr = NULL, *o;

	(void)state;
	root_make(&r);
	put(&r, "/proc/self/mounts", mounts);
	/* PATH FRSIZE BLOCKS BFREE BAVAIL FILES FFREE FAVAIL: a 64 GiB root with 2.1 GiB left
	 * to users (5% reserved), a /tmp of 62.5 MiB, the spool on /var/lib, an XFS raid
	 * almost out of inodes, and a btrfs scratch (no inode counts) */
	put(&r, HOST_FS_STAGED,
	    "/ 4096 16777216 1337525 550502 4194304 3932160 3932160\n"
	    "/tmp 4096 16000 15000 15000 2000000 1999000 1999000\n"
	    "/var/lib/kiln-agent/spool 4096 244190646 200000000 187790000 61054976 61000000 61000000\n"
	    "/raid\\040data 4096 1000 10 10 100 0 0\n"
	    "/scratch 4096 1000000 500000 500000 0 0 0\n");
	assert_int_equal(host_filesystems_collect(&arr, r.dir, "/var/lib/kiln-agent/spool",
						  " /raid data,/scratch,relative,/missing,/"),
			 0);
	assert_int_equal(json_array_size(arr), 5); /* "/" once, relative and missing left out */
	o = find(arr, "/");
	assert_non_null(o);
	assert_string_equal(json_string_value(json_object_get(o, "mount")), "/");
	assert_string_equal(json_string_value(json_object_get(o, "fstype")), "ext4");
	assert_int_equal(json_integer_value(json_object_get(o, "size_bytes")), 68719476736LL);
	assert_int_equal(json_integer_value(json_object_get(o, "avail_bytes")), 550502LL * 4096);
	/* df: used / (used + avail) = 15439691 / 15990193 */
	assert_true(real(o, "used_pct") > 96.55 && real(o, "used_pct") < 96.65);
	assert_true(real(o, "inodes_used_pct") > 6.25 && real(o, "inodes_used_pct") < 6.35);
	o = find(arr, "/var/lib/kiln-agent/spool");
	assert_non_null(o);
	assert_string_equal(json_string_value(json_object_get(o, "mount")), "/var/lib");
	o = find(arr, "/raid data");
	assert_non_null(o);
	assert_string_equal(json_string_value(json_object_get(o, "mount")), "/raid data");
	assert_true(real(o, "inodes_used_pct") == 100.0);
	assert_int_equal(json_integer_value(json_object_get(o, "inodes_avail")), 0);
	assert_true(real(o, "used_pct") == 99.0);
	o = find(arr, "/scratch");
	assert_non_null(o);
	assert_null(json_object_get(o, "inodes_used_pct"));
	assert_true(real(o, "used_pct") == 50.0);
	json_decref(arr);

	/* a staged file that is not numbers is an error, not a guess */
	put(&r, HOST_FS_STAGED, "/ 4096 lots 1 1 1 1 1\n");
	assert_int_equal(host_filesystems_collect(&arr, r.dir, NULL, NULL), KILN_EINVAL);
	root_free(&r);
}

/* Without a staged file the numbers are statvfs(2)'s, under the root; the paths on one
 * filesystem give one entry. */
static void test_statvfs(void **state)
{
	struct root r;
	json_t *arr = NULL, *o;

	(void)state;
	root_make(&r);
	sub(&r, "/tmp");
	assert_int_equal(host_filesystems_collect(&arr, r.dir, NULL, "/proc"), 0);
	assert_int_equal(json_array_size(arr), 1); /* /, /tmp and /proc: one filesystem here */
	o = json_array_get(arr, 0);
	assert_string_equal(json_string_value(json_object_get(o, "path")), "/");
	assert_null(json_object_get(o, "mount")); /* no mounts file in this root */
	assert_true(json_integer_value(json_object_get(o, "size_bytes")) > 0);
	assert_true(real(o, "used_pct") >= 0 && real(o, "used_pct") <= 100);
	json_decref(arr);
	root_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_staged),
		cmocka_unit_test(test_statvfs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
