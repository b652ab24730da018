/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for the poller's pure pieces: jitter spread, exponential backoff, circuit breaker. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fleet/poller.h"

#define NOW 1700000000

static void test_jitter_spread(void **state)
{
	int64_t buckets[10] = { 0 };
	char name[32];

	(void)state;
	/* Deterministic, inside the interval, and spread: 1,000 nodes over 10 buckets of 3 s. */
	for (int i = 0; i < 1000; i++) {
		int64_t j;

		snprintf(name, sizeof(name), "gpu%04d", i);
		j = poller_jitter_ms(name, 30000);
		assert_true(j >= 0 && j < 30000);
		assert_int_equal(j, poller_jitter_ms(name, 30000));
		buckets[j / 3000]++;
	}
	for (int b = 0; b < 10; b++)
		if (buckets[b] < 50 || buckets[b] > 150)
			fail_msg("bucket %d holds %lld of 1000 nodes", b, (long long)buckets[b]);
	assert_int_equal(poller_jitter_ms("gpu01", 0), 0);
}

static void test_backoff(void **state)
{
	static const struct {
		int failures;
		int64_t want;
	} rows[] = { { 1, 30 }, { 2, 60 }, { 3, 120 }, { 4, 240 }, { 5, 480 }, { 6, 600 },
		     { 40, 600 } };

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		assert_int_equal(poller_backoff_s(rows[i].failures, 30, 600), rows[i].want);
	assert_int_equal(poller_backoff_s(1, 0, 600), 1);
}

static void test_circuit(void **state)
{
	struct poller_config cfg;
	struct fleet_state s;

	(void)state;
	poller_config_defaults(&cfg);
	fleet_state_init(&s, 7);
	snprintf(s.power, sizeof(s.power), "on");

	/* One failure: still reachable, retried after one interval; the last "on" is not the
	 * node's state any more (kept, it made a quiet BMC and a silent agent look hung). */
	assert_int_equal(poller_record_failure(&s, NOW, &cfg), POLLER_SAME);
	assert_true(s.reachable);
	assert_string_equal(s.power, "unknown");
	assert_int_equal(s.down_since, NOW);
	assert_int_equal(s.next_try, NOW + 30);
	assert_false(poller_may_poll(&s, NOW + 29));
	assert_true(poller_may_poll(&s, NOW + 30));

	/* The second makes it unreachable (one event), backoff doubles. */
	assert_int_equal(poller_record_failure(&s, NOW + 30, &cfg), POLLER_DOWN);
	assert_false(s.reachable);
	assert_int_equal(s.next_try, NOW + 30 + 60);
	assert_int_equal(poller_record_failure(&s, NOW + 90, &cfg), POLLER_SAME);
	assert_int_equal(poller_record_failure(&s, NOW + 210, &cfg), POLLER_SAME);
	assert_false(s.circuit_open);
	assert_string_equal(s.power, "unknown");

	/* The fifth opens the circuit: probes only. */
	assert_int_equal(poller_record_failure(&s, NOW + 450, &cfg), POLLER_SAME);
	assert_true(s.circuit_open);
	assert_int_equal(s.next_try, NOW + 450 + 300);
	assert_string_equal(s.power, "unknown");
	assert_int_equal(s.down_since, NOW);
	assert_int_equal(poller_record_failure(&s, NOW + 750, &cfg), POLLER_SAME);
	assert_int_equal(s.next_try, NOW + 750 + 300);

	/* An answer closes it and says so once. */
	assert_int_equal(poller_record_success(&s, NOW + 1050), POLLER_UP);
	assert_true(s.reachable);
	assert_false(s.circuit_open);
	assert_int_equal(s.failures, 0);
	assert_int_equal(s.down_since, 0);
	assert_int_equal(s.last_ok, NOW + 1050);
	assert_true(poller_may_poll(&s, NOW + 1050));
	assert_int_equal(poller_record_success(&s, NOW + 1080), POLLER_SAME);
	fleet_state_clear(&s);
}

/* A busy answer (503) is an answer: reachable at once, no backoff, the circuit closed, and
 * nothing counted toward it; the power it did not give is left as it was, with its time. */
static void test_busy(void **state)
{
	struct poller_config cfg;
	struct fleet_state s;

	(void)state;
	poller_config_defaults(&cfg);
	fleet_state_init(&s, 7);
	snprintf(s.power, sizeof(s.power), "on");
	s.power_time = NOW - 30;
	s.last_ok = NOW - 30;
	assert_int_equal(poller_record_busy(&s, "503 'RAC0218: sessions full'"), POLLER_SAME);
	assert_true(s.reachable);
	assert_true(poller_state_busy(&s));
	assert_string_equal(s.power_error, "bmc busy: 503 'RAC0218: sessions full'");
	assert_string_equal(s.power, "on");
	assert_int_equal(s.power_time, NOW - 30);
	assert_int_equal(s.last_ok, NOW - 30);
	assert_int_equal(s.failures, 0);
	assert_int_equal(s.down_since, 0);
	assert_true(poller_may_poll(&s, NOW + 1));
	/* however many: never unreachable, never the circuit */
	for (int i = 1; i <= 10; i++)
		assert_int_equal(poller_record_busy(&s, NULL), POLLER_SAME);
	assert_string_equal(s.power_error, "bmc busy: try again later");
	assert_false(s.circuit_open);
	assert_true(poller_may_poll(&s, NOW + 301));

	/* A dead BMC that comes back busy is reachable again (said once) and polled on time. */
	for (int i = 0; i < cfg.circuit_failures; i++)
		poller_record_failure(&s, NOW + 400 + i, &cfg);
	assert_true(s.circuit_open);
	assert_false(poller_state_busy(&s));
	assert_int_equal(poller_record_busy(&s, "503"), POLLER_UP);
	assert_false(s.circuit_open);
	assert_int_equal(s.failures, 0);
	assert_true(poller_may_poll(&s, NOW + 900));
	/* the next normal answer ends it */
	poller_record_success(&s, NOW + 930);
	free(s.power_error);
	s.power_error = NULL;
	assert_false(poller_state_busy(&s));
	fleet_state_clear(&s);
}

/* The history's power and inlet: the consumed watts over a chassis reading, the hottest inlet
 * or ambient sensor, NAN when the BMC gave none. */
static void test_sensors_summary(void **state)
{
	json_t *j = json_loads(
		"{\"sensors\":["
		"{\"name\":\"Chassis Power\",\"kind\":\"power\",\"value\":900,\"unit\":\"W\"},"
		"{\"name\":\"System Power Control\",\"kind\":\"power\",\"value\":3120,\"unit\":\"W\"},"
		"{\"name\":\"CPU1 Temp\",\"kind\":\"temperature\",\"value\":70},"
		"{\"name\":\"System Board Inlet Temp\",\"kind\":\"temperature\",\"value\":24},"
		"{\"name\":\"Ambient\",\"kind\":\"temperature\",\"value\":26.5},"
		"{\"name\":\"PSU1\",\"kind\":\"psu\",\"value\":null}]}",
		0, NULL);
	double w, t;

	(void)state;
	assert_non_null(j);
	bmc_sensors_summary(j, &w, &t);
	assert_true(w == 3120);
	assert_true(t == 26.5);
	json_decref(j);
	j = json_loads("{\"sensors\":[{\"name\":\"Fan1\",\"kind\":\"fan\",\"value\":5000}]}", 0, NULL);
	bmc_sensors_summary(j, &w, &t);
	assert_true(isnan(w) && isnan(t));
	json_decref(j);
	j = json_loads("{\"sensors\":[{\"name\":\"Chassis Power\",\"kind\":\"power\",\"value\":800}]}", 0, NULL);
	bmc_sensors_summary(j, &w, &t);
	assert_true(w == 800);
	json_decref(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_jitter_spread),
		cmocka_unit_test(test_backoff),
		cmocka_unit_test(test_circuit),
		cmocka_unit_test(test_busy),
		cmocka_unit_test(test_sensors_summary),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
