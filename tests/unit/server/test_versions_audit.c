/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for server/versions_audit.c: version order, the CUDA driver table, each check, the
 * groups (majority first, differences marked) and the policy. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/error.h"
#include "reports/versions_audit.h"

#define GIB (1024LL * 1024 * 1024)

/* A node as the tests describe it; NULL strings are left out of the report. */
struct fake {
	const char *name;
	const char *driver;
	const char *module;
	const char *cuda;
	const char *toolkits;   /* "12.2,12.4" */
	int gpus;               /* reported now */
	int gpus_max;           /* ever */
	const char *model;
	long long gpu_mem_gib;  /* each */
	long long host_mem_gib;
	const char *rotational; /* a disk name, or NULL */
	const char *group;      /* or NULL */
};

static json_t *report_of(const struct fake *f)
{
	json_t *r = json_pack("{s:i, s:s, s:{s:s, s:s}, s:{s:s}, s:[], s:[], s:[]}", "schema", 1,
			      "report_id", "r", "host", "hostname", f->name, "kernel", "6.1", "nvidia",
			      "status", "ok", "cuda_toolkits", "gpus", "disks");
	json_t *nv = json_object_get(r, "nvidia");
	char buf[128];

	assert_non_null(r);
	if (f->driver)
		json_object_set_new(nv, "driver_version", json_string(f->driver));
	if (f->module)
		json_object_set_new(nv, "kernel_module_version", json_string(f->module));
	if (f->cuda)
		json_object_set_new(nv, "cuda_driver_version", json_string(f->cuda));
	if (f->host_mem_gib)
		json_object_set_new(json_object_get(r, "host"), "memory_total_bytes",
				    json_integer(f->host_mem_gib * GIB));
	if (f->toolkits) {
		char *p;

		snprintf(buf, sizeof(buf), "%s", f->toolkits);
		for (char *tok = buf; tok; tok = p) {
			p = strchr(tok, ',');
			if (p)
				*p++ = '\0';
			json_array_append_new(json_object_get(r, "cuda_toolkits"),
					      json_pack("{s:s, s:s}", "version", tok, "path", "/x"));
		}
	}
	for (int i = 0; i < f->gpus; i++)
		json_array_append_new(json_object_get(r, "gpus"),
				      json_pack("{s:i, s:s, s:s, s:I}", "index", i, "name",
						f->model ? f->model : "NVIDIA H100 80GB HBM3",
						"vbios_version", "96.00.89.00.01", "memory_total_bytes",
						(json_int_t)((f->gpu_mem_gib ? f->gpu_mem_gib : 80) * GIB)));
	json_array_append_new(json_object_get(r, "disks"),
			      json_pack("{s:s, s:b}", "name", "nvme0n1", "rotational", 0));
	if (f->rotational)
		json_array_append_new(json_object_get(r, "disks"),
				      json_pack("{s:s, s:b}", "name", f->rotational, "rotational", 1));
	return r;
}

static void nodes_make(struct vaudit_node *out, const struct fake *f, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		json_t *r = report_of(&f[i]);
		char *groups[1] = { (char *)f[i].group };

		assert_int_equal(vaudit_node_from_report(&out[i], f[i].name, r, f[i].gpus_max,
							 groups, f[i].group ? 1 : 0),
				 0);
		json_decref(r);
	}
}

static void nodes_clear(struct vaudit_node *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		vaudit_node_clear(&v[i]);
}

/* "node:check node:check" of the findings, in order. */
static void findings_text(char *buf, size_t len, const json_t *res)
{
	size_t i, off = 0;
	json_t *f;

	buf[0] = '\0';
	json_array_foreach(json_object_get(res, "findings"), i, f)
		off += (size_t)snprintf(buf + off, len - off, "%s%s:%s", i ? " " : "",
					json_string_value(json_object_get(f, "node")),
					json_string_value(json_object_get(f, "check")));
}

static void test_version_cmp(void **state)
{
	static const struct {
		const char *a, *b;
		int want;
	} v[] = {
		{ "550.54.14", "550.54.14", 0 },  { "535.104.05", "550.54.14", -1 },
		{ "550.54.15", "550.54.14", 1 },  { "570.26", "570.26.01", -1 },
		{ "12.10", "12.9", 1 },		  { "12.4", "12.04", 0 },
		{ "525.60.13", "525.60.2", 1 },	  { "", "1", -1 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		int got = vaudit_version_cmp(v[i].a, v[i].b);

		if (got != v[i].want)
			fail_msg("cmp(%s, %s) = %d, want %d", v[i].a, v[i].b, got, v[i].want);
		if (vaudit_version_cmp(v[i].b, v[i].a) != -v[i].want)
			fail_msg("cmp(%s, %s) not antisymmetric", v[i].b, v[i].a);
	}
}

static void test_cuda_table(void **state)
{
	static const struct {
		const char *toolkit, *want;
	} v[] = {
		{ "12.0", "525.60.13" }, { "12.1.1", "530.30.02" }, { "12.2", "535.54.03" },
		{ "12.3", "545.23.06" }, { "12.4", "550.54.14" },   { "12.4.1", "550.54.14" },
		{ "12.5", "555.42.02" }, { "12.6", "560.28.03" },   { "12.7", "560.28.03" },
		{ "12.8", "570.26" },	 { "12.9.1", "575.51.03" }, { "13.0", "580.65.06" },
		{ "13.1", "580.65.06" }, { "11.8", "520.61.05" },   { "10.2", NULL },
		{ "abc", NULL },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		const char *got = vaudit_cuda_min_driver(v[i].toolkit);

		if ((got == NULL) != (v[i].want == NULL) || (got && strcmp(got, v[i].want) != 0))
			fail_msg("min driver for CUDA %s: %s, want %s", v[i].toolkit,
				 got ? got : "NULL", v[i].want ? v[i].want : "NULL");
	}
}

static void test_cuda_major_table(void **state)
{
	(void)state;
	assert_string_equal(vaudit_cuda_major_min_driver("12.4"), "525.60.13");
	assert_string_equal(vaudit_cuda_major_min_driver("12"), "525.60.13");
	assert_string_equal(vaudit_cuda_major_min_driver("13.0"), "580.65.06");
	assert_string_equal(vaudit_cuda_major_min_driver("11.7"), "450.36.06");
	assert_null(vaudit_cuda_major_min_driver("10.2"));
	assert_null(vaudit_cuda_major_min_driver("x"));
	assert_null(vaudit_cuda_major_min_driver(NULL));
}

/* A node with these frameworks ("env:framework:version:cuda;..."), audited alone: its
 * framework findings as "check(severity)" joined by spaces. */
static void framework_findings(char *buf, size_t len, const char *driver, const char *module,
			       const char *list)
{
	struct fake f = { .name = "gpu01", .driver = driver, .module = module, .gpus = 1,
			  .gpus_max = 1, .host_mem_gib = 1024 };
	json_t *r = report_of(&f), *fws = json_array(), *res = NULL, *o;
	struct vaudit_node n;
	char copy[512], *p, *save;
	size_t i, off = 0;

	snprintf(copy, sizeof(copy), "%s", list);
	for (p = copy; p && *p; p = save) {
		char *env = p, *fw, *ver, *cuda;

		save = strchr(p, ';');
		if (save)
			*save++ = '\0';
		fw = strchr(env, ':');
		*fw++ = '\0';
		ver = strchr(fw, ':');
		*ver++ = '\0';
		cuda = strchr(ver, ':');
		*cuda++ = '\0';
		json_array_append_new(fws, json_pack("{s:s, s:s, s:s, s:s}", "env", env, "framework",
						     fw, "version", ver, "cuda", cuda));
	}
	/* one without a CUDA (a CPU build) is never a finding */
	json_array_append_new(fws, json_pack("{s:s, s:s, s:s}", "env", "/cpu", "framework",
					     "torch", "version", "2.1.0+cpu"));
	json_object_set_new(r, "frameworks", fws);
	/* through the stored facts, as kiln audit reads them */
	{
		char *facts = vaudit_facts_extract(r);
		json_t *back = json_loads(facts, 0, NULL);

		assert_non_null(back);
		assert_int_equal(vaudit_node_from_report(&n, "gpu01", back, 1, NULL, 0), 0);
		json_decref(back);
		free(facts);
	}
	assert_int_equal(vaudit_run(&res, &n, 1, NULL), 0);
	buf[0] = '\0';
	json_array_foreach(json_object_get(res, "findings"), i, o) {
		const char *check = json_string_value(json_object_get(o, "check"));

		if (strncmp(check, "framework_", 10) != 0)
			continue;
		off += (size_t)snprintf(buf + off, len - off, "%s%s(%s)", off ? " " : "", check,
					json_string_value(json_object_get(o, "severity")));
	}
	json_decref(res);
	json_decref(r);
	vaudit_node_clear(&n);
}

static void test_framework_checks(void **state)
{
	static const struct {
		const char *driver, *module, *frameworks, *want;
	} v[] = {
		/* 12.1 on 550: fully supported */
		{ "550.54.15", "550.54.15", "/a:torch:2.3.1+cu121:12.1", "" },
		/* 12.4 needs 550.54.14; 535 is a 12.x driver: minor-version compatibility */
		{ "535.104.05", "535.104.05", "/a:torch:2.4.0+cu124:12.4", "framework_cuda_mvc(warning)" },
		/* exactly the release's minimum is enough */
		{ "550.54.14", "550.54.14", "/a:torch:2.4.0+cu124:12.4", "" },
		/* 12.x on a 470 (11.x) driver cannot run at all */
		{ "470.223.02", "470.223.02", "/a:tensorflow:2.15.0:12.2",
		  "framework_cuda_unsupported(critical)" },
		/* the lower of library and module counts: the module loaded is still 470 */
		{ "550.54.15", "470.223.02", "/a:torch:2.3.1+cu121:12.1",
		  "framework_cuda_unsupported(critical)" },
		/* a major only (jax's cuda12 plugin): only the major's minimum applies */
		{ "525.60.13", "525.60.13", "/a:jaxlib:0.4.28:12", "" },
		{ "520.61.05", "520.61.05", "/a:jaxlib:0.4.28:12", "framework_cuda_unsupported(critical)" },
		/* two environments needing CUDA 11 and 12 on one node */
		{ "550.54.15", "550.54.15", "/a:torch:2.3.1+cu121:12.1;/b:torch:1.13.1+cu117:11.7",
		  "framework_cuda_majors(warning)" },
		/* 13.0 needs 580.65.06 */
		{ "575.51.03", "575.51.03", "/a:torch:2.9.0+cu130:13.0",
		  "framework_cuda_unsupported(critical)" },
	};
	char got[512];

	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		framework_findings(got, sizeof(got), v[i].driver, v[i].module, v[i].frameworks);
		if (strcmp(got, v[i].want) != 0)
			fail_msg("%s on %s/%s: got '%s', want '%s'", v[i].frameworks, v[i].driver,
				 v[i].module, got, v[i].want);
	}
}

static void test_framework_groups(void **state)
{
	struct fake f[3] = {
		{ .name = "gpu01", .driver = "550.54.15", .gpus = 1, .gpus_max = 1 },
		{ .name = "gpu02", .driver = "550.54.15", .gpus = 1, .gpus_max = 1 },
		{ .name = "gpu03", .driver = "550.54.15", .gpus = 1, .gpus_max = 1 },
	};
	const char *vers[3] = { "2.3.1+cu121", "2.3.1+cu121", "2.4.0+cu124" };
	struct vaudit_node n[3];
	json_t *res = NULL, *g;
	char text[512] = "";
	size_t i, off = 0;

	(void)state;
	for (i = 0; i < 3; i++) {
		json_t *r = report_of(&f[i]);

		json_object_set_new(r, "frameworks",
				    json_pack("[{s:s, s:s, s:s, s:s}, {s:s, s:s, s:s, s:s}]", "env",
					      "/a", "framework", "torch", "version", vers[i], "cuda",
					      strstr(vers[i], "cu124") ? "12.4" : "12.1", "env", "/b",
					      "framework", "torch", "version", vers[i], "cuda",
					      strstr(vers[i], "cu124") ? "12.4" : "12.1"));
		assert_int_equal(vaudit_node_from_report(&n[i], f[i].name, r, 1, NULL, 0), 0);
		json_decref(r);
	}
	assert_int_equal(vaudit_run(&res, n, 3, NULL), 0);
	json_array_foreach(json_object_get(res, "frameworks"), i, g)
		off += (size_t)snprintf(text + off, sizeof(text) - off, "%s%s %s %s %lld %s",
					i ? "; " : "",
					json_string_value(json_object_get(g, "framework")),
					json_string_value(json_object_get(g, "version")),
					json_string_value(json_object_get(g, "cuda")),
					(long long)json_integer_value(json_object_get(g, "count")),
					json_string_value(json_object_get(g, "nodes")));
	/* a node counted once however many environments hold the same version */
	assert_string_equal(text, "torch 2.3.1+cu121 12.1 2 gpu[01-02]; torch 2.4.0+cu124 12.4 1 gpu03");
	json_decref(res);
	nodes_clear(n, 3);
}

/* One node each: the checks it must raise, exactly. */
static void test_checks(void **state)
{
	static const struct {
		struct fake f;
		const char *want;
	} v[] = {
		{ { "ok", "550.54.15", "550.54.15", "12.4", "12.4", 8, 8, NULL, 80, 2048, NULL, NULL },
		  "" },
		{ { "mm", "550.54.15", "560.35.03", "12.4", "12.4", 8, 8, NULL, 80, 2048, NULL, NULL },
		  "mm:module_mismatch" },
		{ { "new", "535.104.05", "535.104.05", "12.2", "12.2,12.8", 8, 8, NULL, 80, 2048, NULL,
		    NULL },
		  "new:toolkit_too_new" },
		{ { "lost", "550.54.15", "550.54.15", "12.4", "12.4", 7, 8, NULL, 80, 2048, NULL,
		    NULL },
		  "lost:gpu_missing" },
		{ { "ram", "550.54.15", "550.54.15", "12.4", "12.4", 8, 8, NULL, 80, 1024, NULL, NULL },
		  "ram:host_memory" },
		{ { "ram2", "550.54.15", "550.54.15", "12.4", "12.4", 8, 8, NULL, 80, 1280, NULL, NULL },
		  "" },
		{ { "hdd", "550.54.15", "550.54.15", "12.4", "12.4", 8, 8, NULL, 80, 2048, "sdb", NULL },
		  "hdd:rotational_disk" },
		{ { "all", "535.54.03", "550.54.15", "12.2", "12.4", 4, 8, NULL, 80, 256, "sda",
		    NULL },
		  "all:module_mismatch all:toolkit_too_new all:gpu_missing all:host_memory "
		  "all:rotational_disk" },
		{ { "nodrv", NULL, NULL, NULL, "12.4", 0, 0, NULL, 80, 64, NULL, NULL }, "" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct vaudit_node n;
		json_t *res = NULL;
		char got[512];

		nodes_make(&n, &v[i].f, 1);
		assert_int_equal(vaudit_run(&res, &n, 1, NULL), 0);
		findings_text(got, sizeof(got), res);
		if (strcmp(got, v[i].want) != 0)
			fail_msg("%s: findings '%s', want '%s'", v[i].f.name, got, v[i].want);
		assert_int_equal(json_integer_value(json_object_get(res, "deviations")),
				 json_array_size(json_object_get(res, "findings")));
		json_decref(res);
		nodes_clear(&n, 1);
	}
}

/* The acceptance case: three driver versions, one module/library mismatch and one toolkit
 * too new for its driver -> exactly those two findings, and the groups majority first. */
static void test_fleet(void **state)
{
	static const struct fake f[] = {
		{ "gpu01", "550.54.15", "550.54.15", "12.4", "12.4", 8, 8, NULL, 80, 2048, NULL, NULL },
		{ "gpu02", "550.54.15", "550.54.15", "12.4", "12.4", 8, 8, NULL, 80, 2048, NULL, NULL },
		{ "gpu03", "550.54.15", "550.54.15", "12.4", "12.4", 8, 8, NULL, 80, 2048, NULL, NULL },
		{ "gpu04", "550.54.15", "550.54.15", "12.4", "12.4", 8, 8, NULL, 80, 2048, NULL, NULL },
		{ "gpu05", "535.104.05", "535.104.05", "12.2", "12.2", 8, 8, NULL, 80, 2048, NULL,
		  NULL },
		{ "gpu06", "535.104.05", "535.104.05", "12.2", "12.2,12.8", 8, 8, NULL, 80, 2048, NULL,
		  NULL },
		{ "gpu07", "560.35.03", "560.35.03", "12.6", "12.4", 8, 8, NULL, 80, 2048, NULL, NULL },
		{ "gpu08", "550.54.15", "560.35.03", "12.4", "12.4", 8, 8, NULL, 80, 2048, NULL, NULL },
	};
	struct vaudit_node n[8];
	json_t *res = NULL, *groups, *g0, *g;
	char got[512];
	size_t i;
	int drivers = 0;
	const char *seen[8];

	(void)state;
	nodes_make(n, f, 8);
	assert_int_equal(vaudit_run(&res, n, 8, NULL), 0);
	findings_text(got, sizeof(got), res);
	assert_string_equal(got, "gpu06:toolkit_too_new gpu08:module_mismatch");
	assert_int_equal(json_integer_value(json_object_get(res, "deviations")), 2);
	assert_int_equal(json_integer_value(json_object_get(res, "nodes")), 8);
	assert_true(json_is_null(json_object_get(res, "unreported")));

	groups = json_object_get(res, "groups");
	assert_int_equal(json_array_size(groups), 5);
	g0 = json_array_get(groups, 0);
	assert_string_equal(json_string_value(json_object_get(g0, "nodes")), "gpu[01-04]");
	assert_true(json_is_true(json_object_get(g0, "majority")));
	assert_int_equal(json_array_size(json_object_get(g0, "differs")), 0);
	json_array_foreach(groups, i, g) {
		const char *d = json_string_value(json_object_get(g, "driver"));
		int known = 0;

		for (int k = 0; k < drivers; k++)
			known |= strcmp(seen[k], d) == 0;
		if (!known)
			seen[drivers++] = d;
		if (i > 0)
			assert_false(json_is_true(json_object_get(g, "majority")));
		if (i > 0)
			assert_true(json_array_size(json_object_get(g, "differs")) > 0);
		if (strcmp(json_string_value(json_object_get(g, "nodes")), "gpu08") == 0) {
			json_t *diff = json_object_get(g, "differs");

			assert_int_equal(json_array_size(diff), 1);
			assert_string_equal(json_string_value(json_array_get(diff, 0)),
					    "kernel_module");
		}
	}
	assert_int_equal(drivers, 3);
	json_decref(res);
	nodes_clear(n, 8);
}

static json_t *policy_parse(const char *text)
{
	json_t *p = json_loads(text, 0, NULL);

	assert_non_null(p);
	return p;
}

static void test_policy(void **state)
{
	static const struct fake f[] = {
		{ "a1", "550.54.15", "550.54.15", "12.4", "12.4", 8, 8, NULL, 80, 2048, NULL, "train" },
		{ "a2", "535.104.05", "535.104.05", "12.2", "12.2", 8, 8, NULL, 80, 2048, NULL,
		  "train" },
		{ "b1", "535.104.05", "535.104.05", "12.2", "12.2", 8, 8, NULL, 80, 2048, NULL,
		  "infer" },
	};
	static const struct {
		const char *policy;
		const char *want;
	} v[] = {
		{ "{\"train\":{\"driver\":\"550.54.15\"}}", "a2:policy" },
		{ "{\"train\":{\"driver\":\"550.54.15, 535.104.05\"}}", "" },
		{ "{\"all\":{\"driver\":\">=550\"}}", "a2:policy b1:policy" },
		{ "{\"infer\":{\"cuda\":\"12.2\",\"module\":\"535.104.05\",\"gpus\":\"8\"}}", "" },
		{ "{\"infer\":{\"toolkit\":\"12.4\"}}", "b1:policy" },
		{ "{\"train\":{\"toolkit\":\"12.4\"},\"infer\":{\"toolkit\":\"12.2\"}}", "a2:policy" },
		{ "{\"nobody\":{\"driver\":\"1\"}}", "" },
	};
	struct vaudit_node n[3];

	(void)state;
	nodes_make(n, f, 3);
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		json_t *p = policy_parse(v[i].policy), *res = NULL;
		char got[512];

		assert_int_equal(vaudit_policy_check(p), 0);
		assert_int_equal(vaudit_run(&res, n, 3, p), 0);
		findings_text(got, sizeof(got), res);
		if (strcmp(got, v[i].want) != 0)
			fail_msg("policy %s: '%s', want '%s'", v[i].policy, got, v[i].want);
		json_decref(res);
		json_decref(p);
	}
	nodes_clear(n, 3);
}

static void test_policy_refused(void **state)
{
	static const char *const bad[] = {
		"[]", "{\"g\":1}", "{\"g\":{\"drvier\":\"1\"}}", "{\"g\":{\"driver\":\"\"}}",
		"{\"g\":{\"driver\":5}}",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *p = policy_parse(bad[i]);

		if (vaudit_policy_check(p) != KILN_EINVAL)
			fail_msg("policy %s accepted", bad[i]);
		json_decref(p);
	}
}

static void test_unreported(void **state)
{
	struct vaudit_node n[2];
	static const struct fake f = { "r1", "550.54.15", "550.54.15", "12.4", "12.4", 8, 8,
				       NULL, 80, 2048, NULL, NULL };
	json_t *res = NULL;

	(void)state;
	nodes_make(&n[0], &f, 1);
	assert_int_equal(vaudit_node_unreported(&n[1], "r2"), 0);
	assert_int_equal(vaudit_run(&res, n, 2, NULL), 0);
	assert_string_equal(json_string_value(json_object_get(res, "unreported")), "r2");
	assert_int_equal(json_integer_value(json_object_get(res, "reported")), 1);
	assert_int_equal(json_array_size(json_object_get(res, "groups")), 1);
	json_decref(res);
	nodes_clear(n, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_version_cmp),
		cmocka_unit_test(test_cuda_table),
		cmocka_unit_test(test_cuda_major_table),
		cmocka_unit_test(test_framework_checks),
		cmocka_unit_test(test_framework_groups),
		cmocka_unit_test(test_checks),
		cmocka_unit_test(test_fleet),
		cmocka_unit_test(test_policy),
		cmocka_unit_test(test_policy_refused),
		cmocka_unit_test(test_unreported),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
