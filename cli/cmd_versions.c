/* SPDX-License-Identifier: Apache-2.0 */
/* kiln audit [NODERANGE] [--policy FILE]: nodes grouped by driver, kernel module, CUDA and GPU
 * versions, the majority first and differences marked, then every finding. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ini.h>
#include <kiln/error.h>

#include "client.h"
#include "cmd_versions.h"
#include "output.h"

#define POLICY_FILE_MAX (1024 * 1024)

enum { O_POLICY = 1 };

static const struct cli_opt opts[] = {
	{ "policy", 0, "FILE", O_POLICY,
	  "expected versions per group: [group NAME] with driver=, module=, cuda=, toolkit=, "
	  "gpu_model=, vbios=, bmc_firmware=, gpus= (a comma list of accepted values, or >=VERSION)" },
	{ 0 },
};

struct args {
	struct cli_ctx *ctx;
	const char *policy;
};

static int opt_cb(void *ud, const struct cli_opt *opt, const char *value)
{
	struct args *a = ud;

	if (opt->id == O_POLICY)
		a->policy = value;
	return 0;
}

struct policy_parse {
	json_t *policy;
	char error[256];
};

static int policy_line(void *ud, const char *section, const char *name, const char *value)
{
	struct policy_parse *p = ud;
	json_t *group;

	if (strncmp(section, "group ", 6) != 0 || !section[6]) {
		snprintf(p->error, sizeof(p->error), "section [%.60s] is not [group NAME]", section);
		return 0;
	}
	section += 6;
	while (*section == ' ')
		section++;
	group = json_object_get(p->policy, section);
	if (!group) {
		group = json_object();
		if (!group || json_object_set_new(p->policy, section, group) < 0) {
			snprintf(p->error, sizeof(p->error), "out of memory");
			return 0;
		}
	}
	if (json_object_get(group, name)) {
		snprintf(p->error, sizeof(p->error), "%.60s set twice in [group %.60s]", name,
			 section);
		return 0;
	}
	json_object_set_new(group, name, json_string(value));
	return 1;
}

int cmd_versions_policy_read(json_t **out, const char *path)
{
	struct policy_parse p = { .policy = json_object() };
	FILE *f = NULL;
	int line, rc = 0;

	if (!p.policy)
		return kiln_fail(KILN_ERROR, "out of memory");
	f = fopen(path, "re");
	if (!f) {
		rc = kiln_fail(KILN_EINVAL, "%s: %s", path, strerror(errno));
		goto cleanup;
	}
	line = ini_parse_file(f, policy_line, &p);
	if (line != 0) {
		rc = kiln_fail(KILN_EINVAL, "%s:%d: %s", path, line,
			       p.error[0] ? p.error : "not an INI line");
		goto cleanup;
	}
	if (json_object_size(p.policy) == 0) {
		rc = kiln_fail(KILN_EINVAL, "%s: no [group NAME] section", path);
		goto cleanup;
	}
	*out = p.policy;
	p.policy = NULL;
cleanup:
	if (f)
		fclose(f);
	json_decref(p.policy);
	return rc;
}

static const char *const fields[] = { "driver", "kernel_module", "cuda_driver", "cuda_toolkits",
				       "gpu_model", "vbios", "bmc_firmware" };
#define NFIELDS (sizeof(fields) / sizeof(fields[0]))

static int differs(const json_t *group, const char *field)
{
	size_t i;
	json_t *d;

	json_array_foreach(json_object_get(group, "differs"), i, d)
		if (json_is_string(d) && strcmp(json_string_value(d), field) == 0)
			return 1;
	return 0;
}

static int print_table(const json_t *res)
{
	static const char *const gh[] = { "NODES", "COUNT", "DRIVER", "MODULE", "CUDA", "TOOLKITS",
					  "GPU", "VBIOS", "BMC FW" };
	static const char *const fh[] = { "NODE", "CHECK", "FINDING" };
	static const char *const wh[] = { "FRAMEWORK", "VERSION", "CUDA", "COUNT", "NODES" };
	struct out_table groups, findings, frameworks;
	size_t i;
	json_t *g;
	int rc = 0;

	out_table_init(&groups, gh, 2 + NFIELDS);
	out_table_init(&findings, fh, 3);
	out_table_init(&frameworks, wh, 5);
	json_array_foreach(json_object_get(res, "groups"), i, g) {
		char cells[2 + NFIELDS][256];
		const char *row[2 + NFIELDS];

		out_cell(cells[0], sizeof(cells[0]), json_object_get(g, "nodes"));
		out_cell(cells[1], sizeof(cells[1]), json_object_get(g, "count"));
		for (size_t f = 0; f < NFIELDS; f++) {
			char v[240];

			/* Like collate -d: a value that differs from the majority is marked. */
			if (!out_cell(v, sizeof(v), json_object_get(g, fields[f])))
				snprintf(v, sizeof(v), "-");
			snprintf(cells[2 + f], sizeof(cells[2 + f]), "%s%s",
				 differs(g, fields[f]) ? "*" : "", v);
		}
		for (size_t c = 0; c < 2 + NFIELDS; c++)
			row[c] = cells[c];
		if ((rc = out_table_add(&groups, row)) < 0)
			goto cleanup;
	}
	json_array_foreach(json_object_get(res, "findings"), i, g) {
		char a[128], b[64], c[600];
		const char *row[] = { out_cell(a, sizeof(a), json_object_get(g, "node")),
				      out_cell(b, sizeof(b), json_object_get(g, "check")),
				      out_cell(c, sizeof(c), json_object_get(g, "message")) };

		if ((rc = out_table_add(&findings, row)) < 0)
			goto cleanup;
	}
	/* the fleet by framework version, when agents found any */
	json_array_foreach(json_object_get(res, "frameworks"), i, g) {
		char a[64], b[64], c[32], d[24], e[256];
		const char *row[] = { out_cell(a, sizeof(a), json_object_get(g, "framework")),
				      out_cell(b, sizeof(b), json_object_get(g, "version")),
				      out_cell(c, sizeof(c), json_object_get(g, "cuda")),
				      out_cell(d, sizeof(d), json_object_get(g, "count")),
				      out_cell(e, sizeof(e), json_object_get(g, "nodes")) };

		if ((rc = out_table_add(&frameworks, row)) < 0)
			goto cleanup;
	}
	out_table_print(&groups, stdout);
	if (frameworks.nrows > 0) {
		printf("\n");
		out_table_print(&frameworks, stdout);
	}
	if (findings.nrows > 0) {
		printf("\n");
		out_table_print(&findings, stdout);
	}
	printf("\n%lld nodes, %zu version groups (* differs from the majority), %lld deviations\n",
	       (long long)json_integer_value(json_object_get(res, "nodes")),
	       json_array_size(json_object_get(res, "groups")),
	       (long long)json_integer_value(json_object_get(res, "deviations")));
	if (json_is_string(json_object_get(res, "unreported")))
		printf("no agent report from: %s\n",
		       json_string_value(json_object_get(res, "unreported")));
cleanup:
	out_table_free(&groups);
	out_table_free(&findings);
	out_table_free(&frameworks);
	return rc;
}

int cmd_versions_audit_run(struct cli_ctx *ctx, int argc, char **argv)
{
	struct args a = { .ctx = ctx };
	struct cli_args pos = { 0 };
	json_t *policy = NULL, *body = NULL, *res = NULL;
	int rc;

	rc = cli_args_parse(&pos, ctx, opts, argc - 1, argv + 1, opt_cb, &a);
	if (rc < 0)
		goto cleanup;
	if (ctx->help) {
		cli_help_print(stdout, ctx, "[NODERANGE] [--policy FILE]",
			       "Groups the nodes by driver, kernel module, CUDA driver, CUDA toolkits, "
			       "GPU model and VBIOS (the majority first, * marks what differs), and "
			       "reports a loaded module that differs from the driver library (reboot "
			       "pending), a toolkit newer than the driver supports, missing GPUs, host "
			       "RAM under twice the GPU memory, rotational data disks and deviations "
			       "from --policy. Exit status 3 when anything deviates. (kiln audit log shows "
			       "the audit log.)",
			       opts);
		goto cleanup;
	}
	if (pos.n > 1) {
		rc = cli_usage_error(ctx, "unexpected argument '%s'", pos.v[1]);
		goto cleanup;
	}
	if (a.policy && (rc = cmd_versions_policy_read(&policy, a.policy)) < 0) {
		rc = cli_usage_error(ctx, "--policy %s", kiln_error_last());
		goto cleanup;
	}
	body = json_object();
	if (!body) {
		rc = kiln_fail(KILN_ERROR, "out of memory");
		goto cleanup;
	}
	if (pos.n == 1)
		json_object_set_new(body, "range", json_string(pos.v[0]));
	if (policy)
		json_object_set(body, "policy", policy);
	rc = cli_api(&res, NULL, ctx, "POST", "/versions/audit", body);
	if (rc < 0)
		goto cleanup;
	if (ctx->output == CLI_OUT_JSON)
		rc = out_json_print(res, stdout);
	else
		rc = print_table(res);
	if (rc == 0 && json_integer_value(json_object_get(res, "deviations")) > 0)
		rc = CLI_EPARTIAL;
cleanup:
	json_decref(policy);
	json_decref(body);
	json_decref(res);
	free(pos.v);
	return rc;
}
