/* SPDX-License-Identifier: Apache-2.0 */
/* kiln gpus NODERANGE: each node's GPUs, driver and CUDA versions from its latest agent report. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <kiln/buf.h>
#include <kiln/error.h>
#include <kiln/escape.h>

#include "cli.h"
#include "client.h"
#include "output.h"

/* A number with unit into buf, "-" when v is not a number. */
static const char *num(char *buf, size_t len, const json_t *v, double scale, const char *fmt)
{
	if (!json_is_number(v))
		return NULL;
	snprintf(buf, len, fmt, json_number_value(v) / scale);
	return buf;
}

/* The work on GPU index of node n (kilnd's "work": the processes that count, ignored
 * daemons left out): "4242 python3 (alice), 4243 torchrun", "-" when none. */
static char *gpu_work(char *buf, size_t len, const json_t *n, json_int_t index)
{
	const json_t *procs = json_object_get(json_object_get(n, "work"), "gpu_processes"), *p;
	size_t i, off = 0;

	buf[0] = '\0';
	json_array_foreach(procs, i, p) {
		const char *name = json_string_value(json_object_get(p, "name"));
		const char *user = json_string_value(json_object_get(p, "user"));
		int w;

		if (json_integer_value(json_object_get(p, "gpu")) != index || off >= len)
			continue;
		w = snprintf(buf + off, len - off, "%s%" JSON_INTEGER_FORMAT " %s%s%s%s",
			     off ? ", " : "", json_integer_value(json_object_get(p, "pid")),
			     name ? name : "?", user ? " (" : "", user ? user : "", user ? ")" : "");
		if (w > 0)
			off += (size_t)w;
	}
	if (off >= len)
		out_cut_mark(buf, len); /* the processes that fit, and "…" */
	if (!buf[0])
		snprintf(buf, len, "-");
	for (char *c = buf; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	return buf;
}

static int gpu_rows(struct out_table *t, const json_t *n)
{
	const char *node = json_string_value(json_object_get(n, "node"));
	json_t *gpus = json_object_get(n, "gpus"), *g;
	char drvbuf[64], cudabuf[32], seen[32];
	/* NULL (no driver: the report has none) is a cell left empty, as the table writes it */
	const char *drv = out_cell(drvbuf, sizeof(drvbuf), json_object_get(n, "driver_version"));
	const char *cuda = out_cell(cudabuf, sizeof(cudabuf),
				    json_object_get(n, "cuda_driver_version"));
	size_t i;
	int rc;

	snprintf(seen, sizeof(seen), "%" JSON_INTEGER_FORMAT "s ago",
		 json_integer_value(json_object_get(n, "age_s")));
	if (json_array_size(gpus) == 0) {
		/* No GPU to show: the NVIDIA status says why (no_driver, mismatch, error). */
		char status[64];
		const char *row[] = { node, "-", out_cell(status, sizeof(status),
							 json_object_get(n, "nvidia_status")),
				      NULL, NULL, NULL, NULL, NULL, drv, cuda, seen, NULL };

		return out_table_add(t, row);
	}
	json_array_foreach(gpus, i, g) {
		char idx[16], name[128], mem[32], temp[16], power[32], util[16], ecc[32], work[256];
		const char *row[] = {
			node,
			out_cell(idx, sizeof(idx), json_object_get(g, "index")),
			out_cell(name, sizeof(name), json_object_get(g, "name")),
			num(mem, sizeof(mem), json_object_get(g, "memory_total_bytes"), 1073741824.0,
			    "%.1f GiB"),
			num(temp, sizeof(temp), json_object_get(g, "temperature_c"), 1, "%.0f C"),
			num(power, sizeof(power), json_object_get(g, "power_draw_w"), 1, "%.0f W"),
			num(util, sizeof(util), json_object_get(g, "utilization_gpu_pct"), 1, "%.0f%%"),
			out_cell(ecc, sizeof(ecc), json_object_get(g, "ecc_volatile_uncorrected")),
			drv,
			cuda,
			seen,
			gpu_work(work, sizeof(work), n,
				 json_integer_value(json_object_get(g, "index"))),
		};

		if ((rc = out_table_add(t, row)) < 0)
			return rc;
	}
	return 0;
}

static int gpus_run(struct cli_ctx *ctx, int argc, char **argv)
{
	static const char *const headers[] = { "NODE", "GPU", "NAME", "MEMORY", "TEMP", "POWER",
						"UTIL", "ECC UNC", "DRIVER", "CUDA", "REPORTED",
						"WORK" };
	struct cli_args pos = { 0 };
	struct kiln_buf path;
	struct out_table t;
	json_t *res = NULL, *n;
	char *q = NULL;
	size_t i;
	int rc;

	kiln_buf_init(&path, 0);
	out_table_init(&t, headers, sizeof(headers) / sizeof(headers[0]));
	rc = cli_args_parse(&pos, ctx, NULL, argc - 1, argv + 1, NULL, NULL);
	if (rc < 0)
		goto cleanup;
	if (ctx->help) {
		cli_help_print(stdout, ctx, "[NODERANGE]",
			       "Shows the GPUs, driver and CUDA versions of each node as its agent last "
			       "reported them (all nodes without a range), and the compute processes "
			       "that count as work on each GPU (pid, name, user).", NULL);
		goto cleanup;
	}
	if (pos.n > 1) {
		rc = cli_usage_error(ctx, "one NODERANGE only (join ranges with ',')");
		goto cleanup;
	}
	if (pos.n == 1 && !(q = cli_url_escape(pos.v[0]))) {
		rc = kiln_fail(KILN_ERROR, "out of memory");
		goto cleanup;
	}
	rc = kiln_buf_printf(&path, "/gpus%s%s", q ? "?range=" : "", q ? q : "");
	if (rc == 0)
		rc = cli_api(&res, NULL, ctx, "GET", path.data, NULL);
	if (rc < 0)
		goto cleanup;
	if (!json_is_array(res)) {
		rc = kiln_fail(KILN_EPROTO, "kilnd's GPU list is not an array");
		goto cleanup;
	}
	/* A node without a report (switched off, no agent yet) is a fact to show, not a failed
	 * command: the objects say so, and the exit status stays 0. */
	if (ctx->output == CLI_OUT_JSON) {
		rc = out_json_print(res, stdout);
		goto cleanup;
	}
	json_array_foreach(res, i, n) {
		const char *err = json_string_value(json_object_get(n, "error"));
		json_int_t have = json_integer_value(json_object_get(n, "gpu_count"));
		json_int_t had = json_integer_value(json_object_get(n, "gpu_count_max"));

		if (err) {
			char safe[1024];

			fprintf(stderr, "kiln: %s: %s\n",
				json_string_value(json_object_get(n, "node")),
				kiln_escape(safe, sizeof(safe), err, 0));
			continue;
		}
		if (have < had)
			fprintf(stderr, "kiln: %s: %" JSON_INTEGER_FORMAT " GPUs reported, the node "
				"had %" JSON_INTEGER_FORMAT "\n",
				json_string_value(json_object_get(n, "node")), have, had);
		if ((rc = gpu_rows(&t, n)) < 0)
			goto cleanup;
	}
	if (t.nrows > 0)
		out_table_print(&t, stdout);
	else if (json_array_size(res) == 0)
		printf("no nodes%s%s\n", q ? " in " : "", q ? pos.v[0] : "");
	rc = 0;
cleanup:
	out_table_free(&t);
	kiln_buf_free(&path);
	json_decref(res);
	free(q);
	free(pos.v);
	return rc;
}

const struct cli_cmd cmd_gpus = { "gpus", "GPUs, driver and CUDA versions from the agents",
				  gpus_run };
