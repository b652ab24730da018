/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for the gpu rules (server/health/gpu_rules.c): reports made into a health cut, each
 * against the one before, read back into facts and judged. The GPUs' values are shaped after
 * HGX H100 (SM max 1980 MHz) and A100 SXM (SM max 1410 MHz) nodes: a thermal slowdown that
 * halves the SM clock, a PSU's power brake, PCIe replays from a badly seated riser, NVLink
 * CRC errors from a bad cable or board. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "agents/ingest.h"
#include "health/health.h"
#include "health/health_cut.h"

#define NOW 1700000000
#define MARK " [needs hardware inspection]"

static struct health_facts facts; /* large: kept off the stack */

/* The cut of a report (its "gpus" array's text) made against prev (NULL: none) at now. */
static char *cut_of(const char *gpus, const char *prev, int64_t now)
{
	char text[8192];
	json_t *report;
	char *cut;

	snprintf(text, sizeof text, "{\"gpus\":%s}", gpus);
	report = json_loads(text, 0, NULL);
	assert_non_null(report);
	cut = health_cut_make(report, prev, now);
	assert_non_null(cut);
	json_decref(report);
	return cut;
}

/* Cuts each report in turn (one a minute, the last at now), each against the one before:
 * the last cut, to free. */
static char *cuts_of(const char *const *reports, size_t n, int64_t now)
{
	char *prev = NULL, *cut = NULL;

	for (size_t i = 0; i < n; i++) {
		cut = cut_of(reports[i], prev, now - (int64_t)(n - 1 - i) * 60);
		free(prev);
		prev = cut;
	}
	return cut;
}

/* Judges a healthy node whose report's cut is cut, at now. */
static void judge(struct health_result *r, const char *cut, int64_t now,
		  const struct health_config *cfg)
{
	json_t *keep = NULL;

	health_facts_init(&facts, now);
	facts.has_bmc = 1;
	facts.bmc_reachable = 1;
	facts.power = 1;
	facts.power_time = now - 5;
	facts.agent_last_seen = now - 10;
	facts.agent_interval_s = 30;
	facts.gpus_seen = facts.gpus_expected = 8;
	facts.hottest_gpu_c = 60;
	facts.inlet_c = 24;
	facts.ecc_first = facts.ecc_last = 0;
	facts.nvidia_status = "ok";
	facts.driver_version = facts.kernel_module_version = "550.54.15";
	health_cut_facts(&facts, cut, &keep);
	health_evaluate(r, &facts, cfg);
	json_decref(keep);
}

/* The gpu rules' reasons (throttle:, pcie:, nvlink:) of r, in order. */
static size_t ours(const struct health_result *r, const char **out, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < r->nreasons; i++)
		if ((strncmp(r->reasons[i], "throttle: ", 10) == 0 ||
		     strncmp(r->reasons[i], "pcie: ", 6) == 0 ||
		     strncmp(r->reasons[i], "nvlink: ", 8) == 0) && n < max)
			out[n++] = r->reasons[i];
	return n;
}

/* Judges the reports in turn and checks the gpu rules' one reason (NULL: none) and level. */
static void expect(const char *const *reports, size_t n, const struct health_config *cfg,
		   const char *want, enum health_level level)
{
	struct health_result r;
	const char *got[HEALTH_REASONS_MAX];
	char *cut = cuts_of(reports, n, NOW);
	size_t k;

	judge(&r, cut, NOW, cfg);
	k = ours(&r, got, HEALTH_REASONS_MAX);
	if (!want) {
		if (k)
			fail_msg("unexpected reason: %s", got[0]);
		assert_int_equal(r.level, HEALTH_OK);
	} else {
		if (k != 1)
			fail_msg("want one reason '%s', got %zu (%s)", want, k, k ? got[0] : "");
		assert_string_equal(got[0], want);
		assert_int_equal(r.level, level);
		assert_int_equal(health_reason_repair(got[0]), HEALTH_REPAIR_INSPECTION);
		assert_int_equal(r.repair, HEALTH_REPAIR_INSPECTION);
	}
	free(cut);
}

/* An H100 GPU of a report: index, bus id, busy %, SM clock, clock event reasons. */
#define H100(i, bus, util, sm, reasons)                                                        \
	"{\"index\":" #i ",\"pci_bus_id\":\"" bus "\",\"utilization_gpu_pct\":" #util              \
	",\"clock_sm_mhz\":" #sm ",\"clock_sm_max_mhz\":1980,\"clock_event_reasons\":" #reasons "}"

static void test_throttle(void **state)
{
	struct health_config cfg;
	/* hw_slowdown + hw_thermal_slowdown (0x48): the SM clock halved at 97% busy */
	const char *hot = "[" H100(3, "00000000:1B:00.0", 97, 1005, 72) "]";
	const char *hot_thermal = "[" H100(3, "00000000:1B:00.0", 97, 1005, 64) "]";
	const char *cool = "[" H100(3, "00000000:1B:00.0", 97, 1980, 0) "]";
	/* an A100 SXM's PSU asserting the power brake (hw_slowdown + hw_power_brake, 0x88) */
	const char *brake = "[{\"index\":0,\"pci_bus_id\":\"00000000:07:00.0\","
			    "\"utilization_gpu_pct\":100,\"clock_sm_mhz\":765,"
			    "\"clock_sm_max_mhz\":1410,\"clock_event_reasons\":136}]";
	/* at its power budget (sw_power_cap, 0x4) under full load: normal */
	const char *capped = "[" H100(3, "00000000:1B:00.0", 100, 1755, 4) "]";
	/* sw_thermal_slowdown (0x20) with the max clock unknown (an older driver) */
	const char *sw_hot = "[{\"index\":1,\"pci_bus_id\":\"00000000:2A:00.0\","
			     "\"utilization_gpu_pct\":88,\"clock_sm_mhz\":1410,"
			     "\"clock_event_reasons\":32}]";
	/* a thermal bit while idle, and a bit with the clock at its maximum: not held down */
	const char *idle = "[" H100(3, "00000000:1B:00.0", 12, 345, 64) "]";
	const char *at_max = "[" H100(3, "00000000:1B:00.0", 97, 1980, 64) "]";

	(void)state;
	health_config_defaults(&cfg);
	assert_int_equal(cfg.throttle_reports, 2);
	{
		const char *r[] = { hot, hot };

		expect(r, 2, &cfg,
		       "throttle: gpu 3 (00000000:1B:00.0) hw_slowdown, hw_thermal_slowdown: SM 1005 "
		       "of 1980 MHz at 97% busy" MARK,
		       HEALTH_WARNING);
	}
	{
		const char *r[] = { hot_thermal, hot };

		expect(r, 2, &cfg,
		       "throttle: gpu 3 (00000000:1B:00.0) hw_slowdown, hw_thermal_slowdown: SM 1005 "
		       "of 1980 MHz at 97% busy" MARK,
		       HEALTH_WARNING);
	}
	{
		const char *r[] = { brake, brake, brake };

		expect(r, 3, &cfg,
		       "throttle: gpu 0 (00000000:07:00.0) hw_slowdown, hw_power_brake_slowdown: SM 765 "
		       "of 1410 MHz at 100% busy" MARK,
		       HEALTH_WARNING);
	}
	{
		const char *r[] = { sw_hot, sw_hot };

		expect(r, 2, &cfg,
		       "throttle: gpu 1 (00000000:2A:00.0) sw_thermal_slowdown: SM 1410 MHz at 88% busy" MARK,
		       HEALTH_WARNING);
	}
	{
		const char *one[] = { hot }, *broken[] = { hot, cool, hot }, *cap[] = { capped, capped },
			   *lazy[] = { idle, idle }, *full[] = { at_max, at_max };

		expect(one, 1, &cfg, NULL, HEALTH_OK);    /* one sample does not flag */
		expect(broken, 3, &cfg, NULL, HEALTH_OK); /* the run starts again */
		expect(cap, 2, &cfg, NULL, HEALTH_OK);
		expect(lazy, 2, &cfg, NULL, HEALTH_OK);
		expect(full, 2, &cfg, NULL, HEALTH_OK);
		cfg.throttle_reports = 1;
		expect(one, 1, &cfg,
		       "throttle: gpu 3 (00000000:1B:00.0) hw_slowdown, hw_thermal_slowdown: SM 1005 "
		       "of 1980 MHz at 97% busy" MARK,
		       HEALTH_WARNING);
		cfg.throttle_busy_min_pct = 98;
		expect(one, 1, &cfg, NULL, HEALTH_OK);
	}
}

/* Eight GPUs held down: four named, the rest summed up in one reason. */
static void test_throttle_many(void **state)
{
	const char *gpus = "[" H100(0, "00000000:18:00.0", 99, 990, 72) "," H100(1, "00000000:2A:00.0", 99, 990, 72) ","
		H100(2, "00000000:3A:00.0", 99, 990, 72) "," H100(3, "00000000:5D:00.0", 99, 990, 72) ","
		H100(4, "00000000:9A:00.0", 99, 990, 72) "," H100(5, "00000000:AB:00.0", 99, 990, 72) ","
		H100(6, "00000000:BA:00.0", 99, 990, 72) "," H100(7, "00000000:DB:00.0", 99, 990, 72) "]";
	const char *r[] = { gpus, gpus };
	struct health_config cfg;
	struct health_result res;
	const char *got[HEALTH_REASONS_MAX];
	char *cut;
	size_t k;

	(void)state;
	health_config_defaults(&cfg);
	cut = cuts_of(r, 2, NOW);
	judge(&res, cut, NOW, &cfg);
	k = ours(&res, got, HEALTH_REASONS_MAX);
	assert_int_equal(k, 5);
	assert_string_equal(got[0], "throttle: gpu 0 (00000000:18:00.0) hw_slowdown, hw_thermal_slowdown: "
				    "SM 990 of 1980 MHz at 99% busy" MARK);
	assert_string_equal(got[3], "throttle: gpu 3 (00000000:5D:00.0) hw_slowdown, hw_thermal_slowdown: "
				    "SM 990 of 1980 MHz at 99% busy" MARK);
	assert_string_equal(got[4], "throttle: 4 more GPUs held down" MARK);
	assert_int_equal(res.level, HEALTH_WARNING);
	free(cut);
}

#define LINKS(i, bus, replay, cor, nonfatal, fatal)                                           \
	"{\"index\":" #i ",\"pci_bus_id\":\"" bus "\",\"pcie_replay_count\":" #replay                \
	",\"aer_correctable\":" #cor ",\"aer_nonfatal\":" #nonfatal ",\"aer_fatal\":" #fatal "}"

static void test_pcie(void **state)
{
	struct health_config cfg;
	const char *clean = "[" LINKS(2, "00000000:3B:00.0", 0, 0, 0, 0) "]";
	const char *replays = "[" LINKS(2, "00000000:3B:00.0", 57, 0, 0, 0) "]";
	const char *more = "[" LINKS(2, "00000000:3B:00.0", 80, 19, 1, 0) "]";
	const char *fatal = "[" LINKS(2, "00000000:3B:00.0", 80, 19, 1, 1) "]";
	const char *reloaded = "[" LINKS(2, "00000000:3B:00.0", 3, 19, 1, 0) "]";
	const char *again = "[" LINKS(2, "00000000:3B:00.0", 10, 19, 1, 0) "]";
	/* the GPUs enumerated in another order after a reboot: the same bus id is the same GPU */
	const char *moved = "[" LINKS(0, "00000000:18:00.0", 0, 0, 0, 0) "," LINKS(5, "00000000:3B:00.0", 57, 0, 0, 0) "]";
	const char *first_moved = "[" LINKS(2, "00000000:3B:00.0", 57, 0, 0, 0) "," LINKS(5, "00000000:18:00.0", 0, 0, 0, 0) "]";

	(void)state;
	health_config_defaults(&cfg);
	{
		const char *r[] = { clean, replays };

		expect(r, 2, &cfg, "pcie: gpu 2 (00000000:3B:00.0) replays rose 0 -> 57" MARK,
		       HEALTH_WARNING);
	}
	{
		const char *r[] = { clean, replays, replays, replays }; /* kept while recent */

		expect(r, 4, &cfg, "pcie: gpu 2 (00000000:3B:00.0) replays rose 0 -> 57" MARK,
		       HEALTH_WARNING);
	}
	{
		const char *r[] = { clean, replays, more };

		expect(r, 3, &cfg,
		       "pcie: gpu 2 (00000000:3B:00.0) replays rose 57 -> 80, AER correctable errors "
		       "rose 0 -> 19, AER non-fatal errors rose 0 -> 1" MARK,
		       HEALTH_WARNING);
	}
	{
		const char *r[] = { more, fatal };

		expect(r, 2, &cfg, "pcie: gpu 2 (00000000:3B:00.0) AER fatal errors rose 0 -> 1" MARK,
		       HEALTH_CRITICAL);
	}
	{
		/* a first report, and a counter lower than before (the driver reloaded): no rise */
		const char *first[] = { replays }, *reload[] = { more, reloaded };
		const char *after[] = { more, reloaded, again };

		expect(first, 1, &cfg, NULL, HEALTH_OK);
		expect(reload, 2, &cfg, NULL, HEALTH_OK);
		expect(after, 3, &cfg, "pcie: gpu 2 (00000000:3B:00.0) replays rose 3 -> 10" MARK,
		       HEALTH_WARNING);
	}
	{
		const char *r[] = { first_moved, moved }, *noindex[] = { clean, replays };
		struct health_result res;
		char *cut;

		expect(r, 2, &cfg, NULL, HEALTH_OK);
		/* the window: a rise an hour old still counts, one older does not */
		cut = cuts_of(noindex, 2, NOW);
		judge(&res, cut, NOW + 3600, &cfg);
		assert_int_equal(res.level, HEALTH_WARNING);
		judge(&res, cut, NOW + 3601, &cfg);
		assert_int_equal(res.level, HEALTH_OK);
		cfg.link_error_window_s = 86400;
		judge(&res, cut, NOW + 3601, &cfg);
		assert_int_equal(res.level, HEALTH_WARNING);
		free(cut);
	}
}

#define NVL(i, bus, l3, l7)                                                                   \
	"{\"index\":" #i ",\"pci_bus_id\":\"" bus "\",\"nvlink_errors\":[{\"link\":0,\"replay\":0,"    \
	"\"recovery\":0,\"crc_flit\":0,\"crc_data\":0},{\"link\":3," l3 "},{\"link\":7," l7 "}]}"
#define ZERO "\"replay\":0,\"recovery\":0,\"crc_flit\":0,\"crc_data\":0"

static void test_nvlink(void **state)
{
	struct health_config cfg;
	const char *clean = "[" NVL(5, "00000000:AB:00.0", ZERO, ZERO) "]";
	const char *crc = "[" NVL(5, "00000000:AB:00.0",
				  "\"replay\":0,\"recovery\":0,\"crc_flit\":100,\"crc_data\":20", ZERO) "]";
	const char *recovery = "[" NVL(5, "00000000:AB:00.0",
				       "\"replay\":4,\"recovery\":0,\"crc_flit\":100,\"crc_data\":20",
				       "\"replay\":0,\"recovery\":1,\"crc_flit\":0,\"crc_data\":0") "]";
	/* an older driver without the CRC data counter */
	const char *no_data = "[" NVL(5, "00000000:AB:00.0", "\"replay\":0,\"recovery\":0,\"crc_flit\":7",
				      ZERO) "]";
	const char *no_data2 = "[" NVL(5, "00000000:AB:00.0", "\"replay\":0,\"recovery\":0,\"crc_flit\":9",
				       ZERO) "]";

	(void)state;
	health_config_defaults(&cfg);
	{
		const char *r[] = { clean, crc };

		expect(r, 2, &cfg, "nvlink: gpu 5 (00000000:AB:00.0) link 3 CRC errors rose 0 -> 120" MARK,
		       HEALTH_WARNING);
	}
	{
		const char *r[] = { crc, recovery };

		expect(r, 2, &cfg,
		       "nvlink: gpu 5 (00000000:AB:00.0) link 3 replays rose 0 -> 4, link 7 recovery "
		       "errors rose 0 -> 1" MARK,
		       HEALTH_CRITICAL);
	}
	{
		const char *r[] = { no_data, no_data2 }, *first[] = { crc }, *same[] = { crc, crc };

		expect(r, 2, &cfg, "nvlink: gpu 5 (00000000:AB:00.0) link 3 CRC errors rose 7 -> 9" MARK,
		       HEALTH_WARNING);
		expect(first, 1, &cfg, NULL, HEALTH_OK);
		expect(same, 2, &cfg, NULL, HEALTH_OK);
	}
	{
		/* healthy links are not kept in the cut, only that they were read */
		char *cut = cut_of(clean, NULL, NOW);

		assert_non_null(strstr(cut, "\"nvl\":1"));
		assert_null(strstr(cut, "\"nvlink\""));
		free(cut);
	}
}

/* An HGX H100 GPU's 18 NVLinks: one goes down (NCCL falls back or fails). Seen in one report
 * only (a link retraining) it is no verdict; in two in a row it is critical, reboot class;
 * links that come up after a reboot count once seen; all back up clears it. */
static void test_nvlinks_down(void **state)
{
	struct health_config cfg;
	struct health_result r;
	const char *got[HEALTH_REASONS_MAX];
	const char *full = "[{\"index\":2,\"pci_bus_id\":\"00000000:3A:00.0\",\"nvlink_links\":18,"
			   "\"nvlink_active\":18}]";
	const char *down = "[{\"index\":2,\"pci_bus_id\":\"00000000:3A:00.0\",\"nvlink_links\":18,"
			   "\"nvlink_active\":17}]";
	const char *none = "[{\"index\":2,\"pci_bus_id\":\"00000000:3A:00.0\",\"nvlink_links\":18,"
			   "\"nvlink_active\":0}]";
	char *cut;

	(void)state;
	health_config_defaults(&cfg);
	{
		const char *once[] = { full, down }, *twice[] = { full, down, down },
			   *back[] = { full, down, down, full }, *rising[] = { none, full };

		cut = cuts_of(once, 2, NOW);
		judge(&r, cut, NOW, &cfg);
		assert_int_equal(ours(&r, got, HEALTH_REASONS_MAX), 0);
		free(cut);
		cut = cuts_of(twice, 3, NOW);
		judge(&r, cut, NOW, &cfg);
		assert_int_equal(ours(&r, got, HEALTH_REASONS_MAX), 1);
		assert_string_equal(got[0], "nvlink: gpu 2 (00000000:3A:00.0) 17 of 18 links active "
				    "[reboot may clear it]");
		assert_int_equal(r.level, HEALTH_CRITICAL);
		assert_int_equal(r.repair, HEALTH_REPAIR_REBOOT);
		free(cut);
		cut = cuts_of(back, 4, NOW);
		judge(&r, cut, NOW, &cfg);
		assert_int_equal(ours(&r, got, HEALTH_REASONS_MAX), 0);
		free(cut);
		cut = cuts_of(rising, 2, NOW);
		judge(&r, cut, NOW, &cfg);
		assert_int_equal(ours(&r, got, HEALTH_REASONS_MAX), 0);
		free(cut);
	}
}

/* ECC or MIG turned on or off by an admin waits for a GPU reset (reboot class); ECC off on a
 * GPU that has it is said (no class: the operator's setting); a GPU without either says
 * nothing. */
static void test_modes(void **state)
{
	static const struct {
		const char *gpu, *want;
		enum health_repair repair;
	} rows[] = {
		{ "\"ecc_enabled\":true,\"ecc_pending_enabled\":true,\"mig_mode\":false,"
		  "\"mig_mode_pending\":false", NULL, 0 },
		{ "\"ecc_enabled\":false,\"ecc_pending_enabled\":true",
		  "mode: gpu 1 (00000000:18:00.0) ECC turns on at the next GPU reset [reboot may clear it]",
		  HEALTH_REPAIR_REBOOT },
		{ "\"ecc_enabled\":true,\"ecc_pending_enabled\":true,\"mig_mode\":false,"
		  "\"mig_mode_pending\":true",
		  "mode: gpu 1 (00000000:18:00.0) MIG turns on at the next GPU reset [reboot may clear it]",
		  HEALTH_REPAIR_REBOOT },
		{ "\"ecc_enabled\":false,\"ecc_pending_enabled\":false",
		  "mode: gpu 1 (00000000:18:00.0) ECC off (uncorrected memory errors go undetected)",
		  HEALTH_REPAIR_NONE },
		{ "\"utilization_gpu_pct\":5", NULL, 0 }, /* a GeForce: no ECC, no MIG */
	};
	struct health_config cfg;
	struct health_result r;
	char gpus[512], *cut;

	(void)state;
	health_config_defaults(&cfg);
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		const char *got = NULL;

		snprintf(gpus, sizeof gpus,
			 "[{\"index\":1,\"pci_bus_id\":\"00000000:18:00.0\",%s}]", rows[i].gpu);
		cut = cut_of(gpus, NULL, NOW);
		judge(&r, cut, NOW, &cfg);
		for (size_t k = 0; k < r.nreasons; k++)
			if (strncmp(r.reasons[k], "mode: ", 6) == 0)
				got = r.reasons[k];
		if (!rows[i].want ? got != NULL : !got || strcmp(got, rows[i].want) != 0)
			fail_msg("row %zu: got '%s'", i, got ? got : "(none)");
		if (got)
			assert_int_equal(health_reason_repair(got), rows[i].repair);
		free(cut);
	}
}

/* A cut is made of what a report has: a lost GPU, a report without GPUs, garbage. */
static void test_cut_edges(void **state)
{
	struct health_config cfg;
	const char *lost = "[{\"index\":2,\"error\":\"GPU is lost\"}]";
	const char *odd = "[{\"index\":2,\"pci_bus_id\":\"00000000:3B:00.0\",\"pcie_replay_count\":\"x\","
			  "\"nvlink_errors\":[{\"link\":99,\"replay\":5},7]}]";
	const char *replays = "[" LINKS(2, "00000000:3B:00.0", 57, 0, 0, 0) "]";

	(void)state;
	health_config_defaults(&cfg);
	{
		/* the GPU lost for a report: its counters start again from what comes next */
		const char *r[] = { replays, lost, replays }, *r2[] = { odd, replays }, *r3[] = { "[]", replays };

		expect(r, 3, &cfg, NULL, HEALTH_OK);
		expect(r2, 2, &cfg, NULL, HEALTH_OK);
		expect(r3, 2, &cfg, NULL, HEALTH_OK);
	}
	{
		struct health_result res;
		json_t *keep = NULL;

		/* no cut, a cut without "gpu", a broken one */
		judge(&res, NULL, NOW, &cfg);
		assert_int_equal(res.level, HEALTH_OK);
		judge(&res, "{\"gpu\":{\"gpus\":[{\"index\":1,\"c\":{\"pcie_replay\":[5,1]}}]}}", NOW, &cfg);
		assert_int_equal(res.level, HEALTH_OK);
		health_facts_init(&facts, NOW);
		health_cut_facts(&facts, "{\"gpu\":{\"gpus\":[{\"index\":1,\"c\":{\"pcie_replay\":[5,1,10]}}]}}", &keep);
		assert_int_equal(facts.gpu.nrises, 1);
		assert_int_equal(facts.gpu.rises[0].before, 1);
		assert_int_equal(facts.gpu.rises[0].value, 5);
		json_decref(keep);
	}
}

/* What kilnd takes of the new GPU fields: good ones stored, bad ones refused field by field. */
static void check_fields(const char *gpu, const char *want_rejected)
{
	char text[4096], field[128] = "";
	struct ingest_report *ir = NULL;
	json_t *report, *rej;
	char *got;

	snprintf(text, sizeof text,
		 "{\"schema\":\"kiln.agent.report/1\",\"report_id\":\"0123456789abcdef0123456789abcdef\","
		 "\"agent\":{\"version\":\"0.1.0\"},\"host\":{\"hostname\":\"gpu01\","
		 "\"boot_id\":\"b\"},\"nvidia\":{\"status\":\"ok\"},\"gpus\":[%s],"
		 "\"xid_events\":[],\"cuda_toolkits\":[],\"disks\":[]}",
		 gpu);
	report = json_loads(text, 0, NULL);
	assert_non_null(report);
	if (ingest_report_parse(&ir, report, field, sizeof field) < 0)
		fail_msg("report refused: %s", field);
	rej = ingest_report_rejected(ir);
	got = rej ? json_dumps(rej, JSON_COMPACT) : NULL;
	if (want_rejected)
		assert_string_equal(got ? got : "(none)", want_rejected);
	else if (got)
		fail_msg("refused %s", got);
	free(got);
	ingest_report_free(ir);
	json_decref(report);
}

static void test_report_fields(void **state)
{
	(void)state;
	check_fields("{\"index\":0,\"pci_bus_id\":\"00000000:18:00.0\",\"clock_sm_mhz\":1005,"
		     "\"clock_sm_max_mhz\":1980,\"clock_mem_max_mhz\":2619,\"pcie_replay_count\":57,"
		     "\"aer_correctable\":19,\"aer_nonfatal\":1,\"aer_fatal\":0,\"nvlink_errors\":"
		     "[{\"link\":3,\"replay\":0,\"recovery\":0,\"crc_flit\":100,\"crc_data\":20},"
		     "{\"link\":17,\"crc_flit\":0}]}",
		     NULL);
	check_fields("{\"index\":0,\"clock_sm_max_mhz\":\"x\",\"aer_fatal\":-1,"
		     "\"pcie_replay_count\":1.5}",
		     "[\"gpus[0].clock_sm_max_mhz\",\"gpus[0].pcie_replay_count\",\"gpus[0].aer_fatal\"]");
	check_fields("{\"index\":0,\"nvlink_errors\":[{\"link\":99,\"replay\":0}]}",
		     "[\"gpus[0].nvlink_errors\"]");
	check_fields("{\"index\":0,\"nvlink_errors\":[{\"link\":1,\"crc_data\":-4}]}",
		     "[\"gpus[0].nvlink_errors\"]");
	check_fields("{\"index\":0,\"nvlink_errors\":{\"link\":1}}", "[\"gpus[0].nvlink_errors\"]");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_throttle),
		cmocka_unit_test(test_throttle_many),
		cmocka_unit_test(test_pcie),
		cmocka_unit_test(test_nvlink),
		cmocka_unit_test(test_nvlinks_down),
		cmocka_unit_test(test_modes),
		cmocka_unit_test(test_cut_edges),
		cmocka_unit_test(test_report_fields),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
