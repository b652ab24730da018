/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for agent/spool.c: order, caps, oldest dropped and counted, reopen after restart. */
#include <dirent.h>
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
#include "spool.h"

static char dir[64];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof dir, "/tmp/kiln-spool-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void put(struct spool *s, const char *text)
{
	assert_int_equal(spool_put(s, text, strlen(text)), 0);
}

/* Takes the oldest report, checks it, removes it. */
static void take(struct spool *s, const char *expect)
{
	char name[64], *data = NULL;
	size_t len = 0;

	assert_int_equal(spool_oldest(s, &data, &len, name), 0);
	assert_string_equal(data, expect);
	assert_int_equal(len, strlen(expect));
	free(data);
	assert_int_equal(spool_remove(s, name), 0);
}

static size_t files_in(const char *path)
{
	struct dirent *de;
	size_t n = 0;
	DIR *d = opendir(path);

	assert_non_null(d);
	while ((de = readdir(d)))
		if (strstr(de->d_name, ".json"))
			n++;
	closedir(d);
	return n;
}

static void test_order(void **state)
{
	struct spool *s = NULL;
	char name[64], *data;
	size_t len;

	(void)state;
	assert_int_equal(spool_open(&s, dir, 1 << 20, 100), 0);
	assert_int_equal(spool_oldest(s, &data, &len, name), KILN_ENOTFOUND);
	put(s, "{\"n\":1}");
	put(s, "{\"n\":2}");
	put(s, "{\"n\":3}");
	assert_int_equal(spool_count(s), 3);
	assert_int_equal(files_in(dir), 3);
	take(s, "{\"n\":1}");
	put(s, "{\"n\":4}");
	take(s, "{\"n\":2}");
	take(s, "{\"n\":3}");
	take(s, "{\"n\":4}");
	assert_int_equal(spool_count(s), 0);
	assert_int_equal(spool_bytes(s), 0);
	assert_int_equal(files_in(dir), 0);
	assert_int_equal(spool_dropped(s), 0);
	assert_int_equal(spool_remove(s, "0000000000000000.json"), KILN_ENOTFOUND);
	assert_int_equal(spool_remove(s, "../etc/passwd"), KILN_EINVAL);
	spool_close(s);
}

static void test_file_cap_drops_oldest(void **state)
{
	struct spool *s = NULL;
	char text[32];
	int i;

	(void)state;
	assert_int_equal(spool_open(&s, dir, 1 << 20, 3), 0);
	for (i = 1; i <= 5; i++) {
		snprintf(text, sizeof text, "report %d", i);
		put(s, text);
	}
	assert_int_equal(spool_count(s), 3);
	assert_int_equal(spool_dropped(s), 2);
	assert_int_equal(files_in(dir), 3);
	take(s, "report 3");
	take(s, "report 4");
	take(s, "report 5");
	spool_close(s);
}

static void test_byte_cap_drops_oldest(void **state)
{
	struct spool *s = NULL;
	char big[101];

	(void)state;
	memset(big, 'x', 100);
	big[100] = '\0';
	assert_int_equal(spool_open(&s, dir, 250, 1000), 0);
	put(s, big);
	put(s, big);
	assert_int_equal(spool_bytes(s), 200);
	big[0] = 'y';
	put(s, big); /* 300 > 250: the first goes */
	assert_int_equal(spool_count(s), 2);
	assert_int_equal(spool_bytes(s), 200);
	assert_int_equal(spool_dropped(s), 1);
	/* a report bigger than the whole spool is refused, nothing dropped */
	{
		char *huge = calloc(1, 300);

		memset(huge, 'z', 299);
		assert_int_equal(spool_put(s, huge, 299), KILN_ETOOBIG);
		free(huge);
	}
	assert_int_equal(spool_count(s), 2);
	assert_int_equal(spool_dropped(s), 1);
	spool_close(s);
}

static void test_reopen_keeps_order_and_count(void **state)
{
	struct spool *s = NULL;
	char path[128];
	FILE *f;

	(void)state;
	assert_int_equal(spool_open(&s, dir, 1 << 20, 2), 0);
	put(s, "a");
	put(s, "b");
	put(s, "c"); /* drops a */
	spool_close(s);
	/* a crash in the middle of a write leaves a temporary file: removed on open */
	snprintf(path, sizeof path, "%s/tmp-00000000000000ff.json", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("half", f);
	fclose(f);

	assert_int_equal(spool_open(&s, dir, 1 << 20, 2), 0);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(spool_count(s), 2);
	assert_int_equal(spool_dropped(s), 1);
	put(s, "d"); /* numbered after what is there; drops b */
	take(s, "c");
	take(s, "d");
	assert_int_equal(spool_dropped(s), 2);
	spool_close(s);
}

static void test_open_creates_private_dir(void **state)
{
	struct spool *s = NULL;
	char sub[128];
	struct stat st;

	(void)state;
	snprintf(sub, sizeof sub, "%s/a/b/spool", dir);
	assert_int_equal(spool_open(&s, sub, 1000, 10), 0);
	assert_int_equal(stat(sub, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	spool_close(s);
	spool_close(NULL);
	assert_int_equal(spool_open(&s, sub, 0, 10), KILN_EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_file_cap_drops_oldest, setup, teardown),
		cmocka_unit_test_setup_teardown(test_byte_cap_drops_oldest, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reopen_keeps_order_and_count, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_creates_private_dir, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
