/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for the fleet-wide silence guard of server/health: when so many agents fall silent at
 * once that the silence is kilnd's or the network's, not each node's. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "health/health.h"

#define NOW 1700000000

/* The guard begins at 50 % and 4 agents, holds until half of those silent report again. */
static void test_fleet_silence_step(void **state)
{
	static const struct {
		const char *name;
		size_t reporting, silent;
		int began;
	} begin[] = {
		{ "all 10 silent", 0, 10, 1 },
		{ "5 of 10", 5, 5, 1 },
		{ "4 of 9: under half", 5, 4, 0 },
		{ "3 of 3: under the minimum", 0, 3, 0 },
		{ "4 of 4", 0, 4, 1 },
		{ "none silent", 10, 0, 0 },
		{ "no agents", 0, 0, 0 },
	};
	struct health_config cfg;

	(void)state;
	health_config_defaults(&cfg);
	for (size_t i = 0; i < sizeof(begin) / sizeof(begin[0]); i++) {
		struct health_fleet_silence g = { 0 };
		enum health_fleet_change c =
			health_fleet_silence_step(&g, begin[i].reporting, begin[i].silent, 0, NOW, &cfg);

		if ((c == HEALTH_FLEET_BEGAN) != begin[i].began || g.active != begin[i].began)
			fail_msg("%s: change %d active %d", begin[i].name, (int)c, g.active);
	}
	{
		struct health_fleet_silence g = { 0 };

		assert_int_equal(health_fleet_silence_step(&g, 2, 8, 0, NOW, &cfg),
				 HEALTH_FLEET_BEGAN);
		assert_int_equal(g.since, NOW);
		assert_int_equal(g.silent, 8);
		/* the counts no longer matter while active; only who came back */
		assert_int_equal(health_fleet_silence_step(&g, 10, 0, 3, NOW + 10, &cfg),
				 HEALTH_FLEET_SAME);
		assert_int_equal(health_fleet_silence_step(&g, 10, 0, 4, NOW + 20, &cfg),
				 HEALTH_FLEET_ENDED);
		assert_false(g.active);
		assert_int_equal(g.ended_at, NOW + 20);
	}
	cfg.fleet_silence_pct = 80;
	cfg.fleet_silence_min = 2;
	{
		struct health_fleet_silence g = { 0 };

		assert_int_equal(health_fleet_silence_step(&g, 3, 7, 0, NOW, &cfg), HEALTH_FLEET_SAME);
		assert_int_equal(health_fleet_silence_step(&g, 2, 8, 0, NOW, &cfg), HEALTH_FLEET_BEGAN);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fleet_silence_step),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
