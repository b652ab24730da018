/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the table-driven INI configuration: defaults, types, bounds, errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "kiln/config.h"
#include "kiln/error.h"

struct cfg {
	char *listen;
	int workers;
	int64_t max_body;
	bool tls;
	double ratio;
	int64_t interval;
	char *level;
	char *note;
};

static const struct kiln_cfg_key table[] = {
	{ "", "listen", KILN_CFG_STRING, offsetof(struct cfg, listen), 0, 0, 0, 0, NULL,
	  "127.0.0.1:8470", "address" },
	{ "server", "workers", KILN_CFG_INT, offsetof(struct cfg, workers), 1, 64, 0, 0, NULL, "4",
	  "threads" },
	{ "server", "max_body", KILN_CFG_INT64, offsetof(struct cfg, max_body), 1024,
	  INT64_C(1) << 40, 0, 0, NULL, "1048576", "bytes" },
	{ "server", "tls", KILN_CFG_BOOL, offsetof(struct cfg, tls), 0, 0, 0, 0, NULL, "no", "tls" },
	{ "poller", "ratio", KILN_CFG_DOUBLE, offsetof(struct cfg, ratio), 0, 0, 0.0, 1.0, NULL,
	  "0.5", "share" },
	{ "poller", "interval", KILN_CFG_DURATION, offsetof(struct cfg, interval), 10, 3600, 0, 0,
	  NULL, "1m", "period" },
	{ "log", "level", KILN_CFG_ENUM, offsetof(struct cfg, level), 0, 0, 0, 0,
	  "error|warn|info|debug", "info", "level" },
	{ "log", "note", KILN_CFG_STRING, offsetof(struct cfg, note), 0, 0, 0, 0, NULL, NULL,
	  "free text" },
};
#define NKEYS (sizeof(table) / sizeof(table[0]))

static char tmp_path[64];

static const char *write_file(const char *text)
{
	FILE *f;
	int fd;

	snprintf(tmp_path, sizeof(tmp_path), "/tmp/kiln-test-config-XXXXXX");
	fd = mkstemp(tmp_path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	assert_true(fputs(text, f) >= 0);
	assert_int_equal(fclose(f), 0);
	return tmp_path;
}

static void test_defaults(void **state)
{
	struct cfg c = { 0 };

	(void)state;
	assert_int_equal(kiln_config_defaults(&c, table, NKEYS), 0);
	assert_string_equal(c.listen, "127.0.0.1:8470");
	assert_int_equal(c.workers, 4);
	assert_int_equal(c.max_body, 1048576);
	assert_false(c.tls);
	assert_true(c.ratio == 0.5);
	assert_int_equal(c.interval, 60);
	assert_string_equal(c.level, "info");
	assert_null(c.note);
	/* twice: old strings are freed, not leaked (ASan checks) */
	assert_int_equal(kiln_config_defaults(&c, table, NKEYS), 0);
	kiln_config_free(&c, table, NKEYS);
	assert_null(c.listen);
	kiln_config_free(NULL, table, NKEYS);
}

static void test_bad_default(void **state)
{
	static const struct kiln_cfg_key bad[] = {
		{ "s", "n", KILN_CFG_INT, offsetof(struct cfg, workers), 1, 10, 0, 0, NULL, "11", "" },
	};
	struct cfg c = { 0 };

	(void)state;
	assert_int_equal(kiln_config_defaults(&c, bad, 1), KILN_EINVAL);
	assert_non_null(strstr(kiln_error_last(), "default of s.n"));
}

static void test_load_every_type(void **state)
{
	struct cfg c = { 0 };
	const char *path;

	(void)state;
	path = write_file("; comment\n"
			  "listen = 0.0.0.0:9000\n"
			  "\n"
			  "[server]\n"
			  "workers = 64\n"
			  "max_body = 2048\n"
			  "tls = yes\n"
			  "# another comment\n"
			  "[poller]\n"
			  "ratio = 0.25\n"
			  "interval = 30m\n"
			  "[log]\n"
			  "level = debug\n"
			  "note = hello world\n");
	assert_int_equal(kiln_config_defaults(&c, table, NKEYS), 0);
	if (kiln_config_load(&c, table, NKEYS, path) < 0)
		fail_msg("load: %s", kiln_error_last());
	unlink(path);
	assert_string_equal(c.listen, "0.0.0.0:9000");
	assert_int_equal(c.workers, 64);
	assert_int_equal(c.max_body, 2048);
	assert_true(c.tls);
	assert_true(c.ratio == 0.25);
	assert_int_equal(c.interval, 1800);
	assert_string_equal(c.level, "debug");
	assert_string_equal(c.note, "hello world");
	kiln_config_free(&c, table, NKEYS);
}

/* Keys not in the file keep their defaults. */
static void test_load_partial(void **state)
{
	struct cfg c = { 0 };
	const char *path;

	(void)state;
	path = write_file("[server]\nworkers = 8\n");
	assert_int_equal(kiln_config_defaults(&c, table, NKEYS), 0);
	assert_int_equal(kiln_config_load(&c, table, NKEYS, path), 0);
	unlink(path);
	assert_int_equal(c.workers, 8);
	assert_int_equal(c.interval, 60);
	assert_string_equal(c.level, "info");
	kiln_config_free(&c, table, NKEYS);
}

struct bad_file {
	const char *text;
	const char *msg; /* after "PATH:" */
};

static const struct bad_file bad_files[] = {
	{ "[server]\nworkers = 0\n", ":2: server.workers: 0 is out of range [1, 64]" },
	{ "[server]\nworkers = 65\n", ":2: server.workers: 65 is out of range [1, 64]" },
	{ "[server]\nworkers = four\n", ":2: server.workers: 'four' is not a whole number" },
	{ "[server]\nworkers = 4x\n", ":2: server.workers: '4x' is not a whole number" },
	{ "[server]\nworkers =\n", ":2: server.workers: empty number" },
	{ "[server]\nmax_body = 1023\n", ":2: server.max_body: 1023 is out of range" },
	{ "[server]\ntls = maybe\n", ":2: server.tls: 'maybe' is not a boolean" },
	{ "[poller]\nratio = 1.5\n", ":2: poller.ratio: 1.5 is out of range [0, 1]" },
	{ "[poller]\nratio = nan\n", ":2: poller.ratio: 'nan' is not a number" },
	{ "[poller]\n\n\ninterval = 5\n", ":4: poller.interval: 5s is out of range [10s, 3600s]" },
	{ "[poller]\ninterval = 2h\n", ":2: poller.interval: 7200s is out of range" },
	{ "[poller]\ninterval = 5x\n", ":2: poller.interval: duration '5x': unknown unit" },
	{ "[log]\nlevel = loud\n", ":2: log.level: 'loud' is not one of error|warn|info|debug" },
	{ "[server]\nworkrs = 4\n", ":2: server.workrs: unknown key" },
	{ "bogus = 1\n", ":1: bogus: unknown key" },
	{ "[nosuch]\nkey = 1\n", ":2: unknown section [nosuch]" },
	{ "[server]\nworkers = 4\nworkers = 5\n", ":3: server.workers: set more than once" },
	{ "[server]\nthis line has no equals sign\n", ":2: syntax error" },
	{ "[server\n", ":1: syntax error" },
	{ "[server]\nworkers = 0\n[log]\nlevel = loud\n", ":2: server.workers" },
};

static void test_load_errors(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bad_files) / sizeof(bad_files[0]); i++) {
		struct cfg c = { 0 };
		char want[256];
		const char *path = write_file(bad_files[i].text);
		int rc;

		assert_int_equal(kiln_config_defaults(&c, table, NKEYS), 0);
		rc = kiln_config_load(&c, table, NKEYS, path);
		unlink(path);
		snprintf(want, sizeof(want), "%s%s", path, bad_files[i].msg);
		if (rc != KILN_EINVAL)
			fail_msg("case %zu: rc %d, want KILN_EINVAL", i, rc);
		if (strncmp(kiln_error_last(), want, strlen(want)) != 0)
			fail_msg("case %zu: message '%s', want it to start with '%s'", i,
				 kiln_error_last(), want);
		kiln_config_free(&c, table, NKEYS);
	}
}

static void test_long_line(void **state)
{
	struct cfg c = { 0 };
	char text[600];
	const char *path;

	(void)state;
	memset(text, 'a', sizeof(text));
	memcpy(text, "[log]\nnote = ", 13);
	text[sizeof(text) - 2] = '\n';
	text[sizeof(text) - 1] = '\0';
	path = write_file(text);
	assert_int_equal(kiln_config_defaults(&c, table, NKEYS), 0);
	assert_int_equal(kiln_config_load(&c, table, NKEYS, path), KILN_EINVAL);
	unlink(path);
	assert_non_null(strstr(kiln_error_last(), ":2: line longer than"));
	kiln_config_free(&c, table, NKEYS);
}

static void test_missing_file(void **state)
{
	struct cfg c = { 0 };

	(void)state;
	assert_int_equal(kiln_config_load(&c, table, NKEYS, "/nonexistent/kilnd.conf"),
			 KILN_EINVAL);
	assert_non_null(strstr(kiln_error_last(), "/nonexistent/kilnd.conf: No such file"));
}

static void test_set(void **state)
{
	struct cfg c = { 0 };

	(void)state;
	assert_int_equal(kiln_config_defaults(&c, table, NKEYS), 0);
	assert_int_equal(kiln_config_set(&c, table, NKEYS, "server.workers", "16"), 0);
	assert_int_equal(c.workers, 16);
	assert_int_equal(kiln_config_set(&c, table, NKEYS, "listen", "[::1]:1"), 0);
	assert_string_equal(c.listen, "[::1]:1");
	assert_int_equal(kiln_config_set(&c, table, NKEYS, "log.level", "warn"), 0);
	assert_string_equal(c.level, "warn");
	assert_int_equal(kiln_config_set(&c, table, NKEYS, "server.workers", "100"), KILN_EINVAL);
	assert_string_equal(kiln_error_last(), "server.workers: 100 is out of range [1, 64]");
	assert_int_equal(c.workers, 16);
	assert_int_equal(kiln_config_set(&c, table, NKEYS, "server.nope", "1"), KILN_EINVAL);
	assert_string_equal(kiln_error_last(), "server.nope: unknown key");
	assert_int_equal(kiln_config_set(&c, table, NKEYS, "nope.x", "1"), KILN_EINVAL);
	assert_string_equal(kiln_error_last(), "unknown section [nope]");
	kiln_config_free(&c, table, NKEYS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_bad_default),
		cmocka_unit_test(test_load_every_type),
		cmocka_unit_test(test_load_partial),
		cmocka_unit_test(test_load_errors),
		cmocka_unit_test(test_long_line),
		cmocka_unit_test(test_missing_file),
		cmocka_unit_test(test_set),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
