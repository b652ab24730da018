/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for server/config.c: kilnd.conf's key table, its bounds, its errors, and the example. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/config.h"
#include "kiln/error.h"

static char tmpdir[64];

static int dir_setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/kiln-conf-XXXXXX");
	assert_non_null(mkdtemp(tmpdir));
	return 0;
}

static int dir_teardown(void **state)
{
	char path[128];

	(void)state;
	snprintf(path, sizeof(path), "%s/kilnd.conf", tmpdir);
	unlink(path);
	rmdir(tmpdir);
	return 0;
}

/* Writes text to a kilnd.conf in the temporary dir and loads it over the defaults. */
static int load_text(struct kilnd_config *cfg, const char *text)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/kilnd.conf", tmpdir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	assert_int_equal(kilnd_config_init(cfg), 0);
	return kilnd_config_load(cfg, path);
}

static void test_defaults(void **state)
{
	struct kilnd_config cfg;

	(void)state;
	assert_int_equal(kilnd_config_init(&cfg), 0);
	assert_string_equal(cfg.listen, "127.0.0.1:8470");
	assert_string_equal(cfg.log_level, "info");
	assert_null(cfg.tls_cert);
	assert_null(cfg.tls_key);
	assert_int_equal(cfg.http_threads, 0);
	assert_int_equal(cfg.http_max_connections, 16384);
	assert_int_equal(cfg.http_connection_timeout, 60);
	kilnd_config_free(&cfg);
}

static void test_load_good(void **state)
{
	struct kilnd_config cfg;

	(void)state;
	assert_int_equal(load_text(&cfg, "# comment\n"
					 "listen = 0.0.0.0:9443\n"
					 "log_level = debug\n"
					 "tls_cert = /etc/kiln/tls.crt\n"
					 "tls_key = /etc/kiln/tls.key\n"
					 "[http]\n"
					 "threads = 8\n"
					 "max_connections = 65536\n"
					 "connection_timeout = 5m\n"),
			 0);
	assert_string_equal(cfg.listen, "0.0.0.0:9443");
	assert_string_equal(cfg.log_level, "debug");
	assert_string_equal(cfg.tls_cert, "/etc/kiln/tls.crt");
	assert_string_equal(cfg.tls_key, "/etc/kiln/tls.key");
	assert_int_equal(cfg.http_threads, 8);
	assert_int_equal(cfg.http_max_connections, 65536);
	assert_int_equal(cfg.http_connection_timeout, 300);
	kilnd_config_free(&cfg);
}

/* Each bad file fails with KILN_EINVAL and a message holding every needle. */
static void test_load_bad(void **state)
{
	static const struct {
		const char *text;
		const char *needle1, *needle2;
	} cases[] = {
		{ "listen = 127.0.0.1:1\ncolour = red\n", ":2", "colour" },
		{ "[http]\nthreads = 4\nfanciness = 3\n", ":3", "fanciness" },
		{ "[pollster]\ninterval = 30\n", ":2", "pollster" },
		{ "[http]\nthreads = many\n", ":2", "threads" },
		{ "[http]\nthreads = 257\n", ":2", "threads" },
		{ "[http]\nthreads = -1\n", ":2", "threads" },
		{ "[http]\nmax_connections = 15\n", ":2", "max_connections" },
		{ "[http]\nmax_connections = 1000001\n", ":2", "max_connections" },
		{ "[http]\nconnection_timeout = 0\n", ":2", "connection_timeout" },
		{ "[http]\nconnection_timeout = 2d\n", ":2", "connection_timeout" },
		{ "[http]\nconnection_timeout = soon\n", ":2", "connection_timeout" },
		{ "log_level = verbose\n", ":1", "log_level" },
		{ "listen = 127.0.0.1:1\nlisten = 127.0.0.1:2\n", ":2", "listen" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct kilnd_config cfg;
		int rc = load_text(&cfg, cases[i].text);

		if (rc != KILN_EINVAL || !strstr(kiln_error_last(), cases[i].needle1) ||
		    !strstr(kiln_error_last(), cases[i].needle2))
			fail_msg("case %zu (%s): rc %d, message '%s'", i, cases[i].text, rc,
				 kiln_error_last());
		kilnd_config_free(&cfg);
	}
}

static void test_bounds_inclusive(void **state)
{
	struct kilnd_config cfg;

	(void)state;
	assert_int_equal(load_text(&cfg, "[http]\nthreads = 256\nmax_connections = 16\n"
					 "connection_timeout = 86400\n"),
			 0);
	assert_int_equal(cfg.http_threads, 256);
	assert_int_equal(cfg.http_max_connections, 16);
	assert_int_equal(cfg.http_connection_timeout, 86400);
	kilnd_config_free(&cfg);
}

static void test_set(void **state)
{
	struct kilnd_config cfg;

	(void)state;
	assert_int_equal(kilnd_config_init(&cfg), 0);
	assert_int_equal(kilnd_config_set(&cfg, "listen", "127.0.0.1:0"), 0);
	assert_string_equal(cfg.listen, "127.0.0.1:0");
	assert_int_equal(kilnd_config_set(&cfg, "log_level", "warn"), 0);
	assert_string_equal(cfg.log_level, "warn");
	assert_int_equal(kilnd_config_set(&cfg, "http.threads", "3"), 0);
	assert_int_equal(cfg.http_threads, 3);
	assert_int_equal(kilnd_config_set(&cfg, "log_level", "loud"), KILN_EINVAL);
	assert_int_equal(kilnd_config_set(&cfg, "no_such_key", "1"), KILN_EINVAL);
	kilnd_config_free(&cfg);
}

static char *example_generate(void)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	assert_int_equal(kilnd_config_example_write(f), 0);
	fclose(f);
	return text;
}

/* deploy/kilnd.conf.example is the generator's output, so it documents every key. */
static void test_example_in_sync(void **state)
{
	char path[512], *want = example_generate(), *have;
	FILE *f;
	long n;

	(void)state;
	snprintf(path, sizeof(path), "%s/../deploy/kilnd.conf.example", KILN_TEST_DATA);
	f = fopen(path, "r");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	have = calloc(1, (size_t)n + 1);
	assert_non_null(have);
	assert_int_equal(fread(have, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	if (strcmp(want, have) != 0)
		fail_msg("deploy/kilnd.conf.example is stale: regenerate it with "
			 "`kilnd --print-config-example > deploy/kilnd.conf.example`");
	for (size_t i = 0; i < kilnd_config_table_len; i++) {
		char line[128];

		assert_non_null(kilnd_config_table[i].help);
		snprintf(line, sizeof(line), "\n#%s =", kilnd_config_table[i].name);
		if (!strstr(have, line))
			fail_msg("key %s is not in the example", kilnd_config_table[i].name);
	}
	free(want);
	free(have);
}

/* The example's defaults, uncommented, load and give the built-in defaults. */
static void test_example_uncommented_loads(void **state)
{
	char *text = example_generate(), *out = calloc(1, strlen(text) + 1);
	struct kilnd_config cfg;
	const char *p = text;
	size_t o = 0;

	(void)state;
	assert_non_null(out);
	while (*p) {
		size_t n = strcspn(p, "\n");
		int keyline = p[0] == '#' && p[1] != ' ' && n > 1 && p[n - 1] != '=';

		memcpy(out + o, keyline ? p + 1 : p, keyline ? n - 1 : n);
		o += keyline ? n - 1 : n;
		if (p[n] == '\n')
			out[o++] = '\n';
		p += n + (p[n] == '\n');
	}
	out[o] = '\0';
	assert_non_null(strstr(out, "\nmax_connections = 16384\n"));
	assert_int_equal(load_text(&cfg, out), 0);
	assert_string_equal(cfg.listen, "127.0.0.1:8470");
	assert_int_equal(cfg.http_max_connections, 16384);
	assert_int_equal(cfg.http_connection_timeout, 60);
	kilnd_config_free(&cfg);
	free(text);
	free(out);
}

/* [bmc] status_timeout takes milliseconds as well as durations; out of range is refused. */
static void test_status_timeout_ms(void **state)
{
	struct kilnd_config cfg;

	(void)state;
	assert_int_equal(load_text(&cfg, "[bmc]\nstatus_timeout = 1500ms\n"), 0);
	assert_int_equal(cfg.bmc_status_timeout, 1500);
	kilnd_config_free(&cfg);
	assert_int_equal(load_text(&cfg, "[bmc]\nstatus_timeout = 2s\n"), 0);
	assert_int_equal(cfg.bmc_status_timeout, 2000);
	kilnd_config_free(&cfg);
	assert_int_equal(load_text(&cfg, "[bmc]\nstatus_timeout = 0s\n"), 0);
	assert_int_equal(cfg.bmc_status_timeout, 0);
	kilnd_config_free(&cfg);
	assert_int_equal(load_text(&cfg, "[bmc]\nstatus_timeout = 600001ms\n"), KILN_EINVAL);
	assert_non_null(strstr(kiln_error_last(), "bmc.status_timeout"));
	kilnd_config_free(&cfg);
	assert_int_equal(load_text(&cfg, "[bmc]\nstatus_timeout = 1.5s\n"), KILN_EINVAL);
	kilnd_config_free(&cfg);
	assert_int_equal(load_text(&cfg, "[bmc]\nstatus_timeout = xms\n"), KILN_EINVAL);
	kilnd_config_free(&cfg);
	assert_int_equal(kilnd_config_init(&cfg), 0);
	assert_int_equal(kilnd_config_set(&cfg, "bmc.status_timeout", "250ms"), 0);
	assert_int_equal(cfg.bmc_status_timeout, 250);
	kilnd_config_free(&cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_load_good),
		cmocka_unit_test(test_load_bad),
		cmocka_unit_test(test_bounds_inclusive),
		cmocka_unit_test(test_set),
		cmocka_unit_test(test_status_timeout_ms),
		cmocka_unit_test(test_example_in_sync),
		cmocka_unit_test(test_example_uncommented_loads),
	};

	return cmocka_run_group_tests(tests, dir_setup, dir_teardown);
}
