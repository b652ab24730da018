/* SPDX-License-Identifier: Apache-2.0 */
/* kiln power status|on|off|soft|reset|cycle NODERANGE|--hung: live power state and confirmed
 * power actions fanned out by kilnd, paced in batches, a result per node. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <kiln/buf.h>
#include <kiln/error.h>
#include <kiln/parse.h>

#include "bmc_cli.h"
#include "cli.h"
#include "client.h"
#include "output.h"

enum { O_ON_IF_OFF = 1, O_CONFIRM_ABOVE, O_HUNG, O_BATCH, O_INTERVAL, O_RETRY, O_FORCE, O_DRAIN,
       O_DRAIN_TIMEOUT };

static const struct cli_opt power_opts[] = {
	{ "on-if-off", 0, NULL, O_ON_IF_OFF, "reset/cycle: power on a node that is off" },
	{ "confirm-above", 0, "N", O_CONFIRM_ABOVE,
	  "ask for the count above N nodes (KILN_CONFIRM_THRESHOLD, cli.conf confirm_above; "
	  "default 1, on: 10)" },
	{ "hung", 0, NULL, O_HUNG,
	  "cycle/reset/off: the nodes kilnd flags hung (within NODERANGE when given)" },
	{ "batch", 0, "N", O_BATCH, "N nodes at a time, batch after batch (default: [power] batch)" },
	{ "interval", 0, "S", O_INTERVAL,
	  "pause between batches, seconds or 30s, 2m (default: [power] interval)" },
	BMC_CLI_OPT_RETRY(O_RETRY),
	{ "force", 0, NULL, O_FORCE,
	  "off/soft/reset/cycle: act although Slurm jobs or GPU processes run (audited as forced)" },
	{ "drain", 0, NULL, O_DRAIN,
	  "off/soft/reset/cycle: drain busy nodes in Slurm, wait for their work to end, act, "
	  "resume them once their agent reports" },
	{ "drain-timeout", 0, "DURATION", O_DRAIN_TIMEOUT,
	  "with --drain: give up after this long (default 1h): nothing is done, the node is resumed" },
	{ 0 },
};

static const char *const actions[] = { "status", "on", "off", "soft", "reset", "cycle", NULL };

struct power_args {
	int on_if_off;
	int hung;
	const char *confirm_above;
	const char *batch;    /* NULL: kilnd's [power] batch */
	const char *interval; /* NULL: kilnd's [power] interval */
	bool retry_unreachable;
	int force;
	int drain;
	const char *drain_timeout;
};

static int power_opt(void *ud, const struct cli_opt *opt, const char *value)
{
	struct power_args *a = ud;

	if (opt->id == O_ON_IF_OFF)
		a->on_if_off = 1;
	else if (opt->id == O_CONFIRM_ABOVE)
		a->confirm_above = value;
	else if (opt->id == O_HUNG)
		a->hung = 1;
	else if (opt->id == O_BATCH)
		a->batch = value;
	else if (opt->id == O_INTERVAL)
		a->interval = value;
	else if (opt->id == O_RETRY)
		a->retry_unreachable = true;
	else if (opt->id == O_FORCE)
		a->force = 1;
	else if (opt->id == O_DRAIN)
		a->drain = 1;
	else if (opt->id == O_DRAIN_TIMEOUT)
		a->drain_timeout = value;
	return 0;
}

static const char *const status_headers[] = { "NODE", "POWER", "ERROR" };
static const size_t status_widths[] = { 0, 7, 0 }; /* "unknown" */

static int status_row(struct bmc_cli_rows *r, const json_t *e)
{
	char node[128], power[16], err[512];
	const char *row[] = { out_cell(node, sizeof(node), json_object_get(e, "node")),
			      out_cell(power, sizeof(power), json_object_get(e, "power")),
			      out_cell(err, sizeof(err), json_object_get(e, "error")) };

	if (!json_object_get(e, "power"))
		row[1] = "unknown";
	bmc_cli_row(r, row);
	return 0;
}

static const char *const action_headers[] = { "NODE", "ACTION", "POWER", "RESULT" };
static const size_t action_widths[] = { 0, 6, 7, 0 };

static int action_row(struct bmc_cli_rows *r, const json_t *e)
{
	char node[128], action[32], power[16], result[560];
	const char *err = json_string_value(json_object_get(e, "error"));
	const char *row[] = { out_cell(node, sizeof(node), json_object_get(e, "node")),
			      out_cell(action, sizeof(action), json_object_get(e, "action")),
			      out_cell(power, sizeof(power), json_object_get(e, "power")),
			      out_cell(result, sizeof(result), json_object_get(e, "result")) };

	if (err) {
		snprintf(result, sizeof(result), "error: %s", err);
		row[3] = result;
	}
	bmc_cli_row(r, row);
	return 0;
}

static int dry_run_print(const struct cli_ctx *ctx, const json_t *res)
{
	size_t i;
	json_t *e;

	if (ctx->output == CLI_OUT_JSON)
		return out_json_print(res, stdout);
	json_array_foreach(res, i, e) {
		const char *node = json_string_value(json_object_get(e, "node"));
		const char *err = json_string_value(json_object_get(e, "error"));

		if (err)
			printf("%s: skipped: %s\n", node, err);
		else if (json_object_get(e, "batch"))
			printf("%s: would %s (batch %lld)\n", node,
			       json_string_value(json_object_get(e, "action")),
			       (long long)json_integer_value(json_object_get(e, "batch")));
		else
			printf("%s: would %s\n", node,
			       json_string_value(json_object_get(e, "action")));
	}
	return 0;
}

/*
 * --hung: the nodes GET /hung flags (within range when not NULL), as kilnd's compressed
 * range in *out (the caller frees); *out stays NULL when there is none.
 */
static int hung_range(char **out, struct cli_ctx *ctx, const char *range)
{
	struct kiln_buf path;
	json_t *res = NULL;
	const char *r;
	char *q = NULL;
	int rc;

	*out = NULL;
	kiln_buf_init(&path, 0);
	if (range && !(q = cli_url_escape(range))) {
		rc = kiln_fail(KILN_ERROR, "out of memory");
		goto cleanup;
	}
	rc = q ? kiln_buf_printf(&path, "/hung?range=%s", q) : kiln_buf_printf(&path, "/hung");
	if (rc < 0)
		goto cleanup;
	if ((rc = cli_api(&res, NULL, ctx, "GET", path.data, NULL)) < 0)
		goto cleanup;
	if (!json_is_array(json_object_get(res, "nodes"))) {
		rc = kiln_fail(KILN_EPROTO, "kilnd's answer to /hung has no node list");
		goto cleanup;
	}
	r = json_string_value(json_object_get(res, "range"));
	if (json_array_size(json_object_get(res, "nodes")) > 0 && r && r[0] &&
	    !(*out = strdup(r)))
		rc = kiln_fail(KILN_ERROR, "out of memory");
cleanup:
	json_decref(res);
	free(q);
	kiln_buf_free(&path);
	return rc;
}

static void pause_s(int64_t seconds)
{
	struct timespec ts = { .tv_sec = (time_t)seconds };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/*
 * Runs the action on the targets plan (kilnd's dry-run answer, each node with its "batch"):
 * one request per batch, interval_s apart, each node's row printed as it answers (rows), the
 * progress on a terminal. *out is the answer in plan order: a node skipped in the plan keeps
 * its error (its row printed after the others). body is the dry-run request.
 */
static int paced_run(json_t **out, struct cli_ctx *ctx, struct bmc_cli_rows *rows, json_t *body,
		     const json_t *plan)
{
	int rc = 0;
	bool ended = false;
	size_t i;
	int64_t interval_s = 0;
	json_t *results = json_object(), *arr = json_array(), *e;
	struct kiln_buf names;

	kiln_buf_init(&names, 0);
	*out = NULL;
	if (!results || !arr) {
		rc = kiln_fail(KILN_ERROR, "out of memory");
		goto cleanup;
	}
	/* the progress on a terminal with -o json too, a batch at a time */
	rows->tty = isatty(STDERR_FILENO);
	rows->batches = 1;
	json_array_foreach(plan, i, e) {
		int b = (int)json_integer_value(json_object_get(e, "batch"));

		if (!json_object_get(e, "error") && b > rows->batches)
			rows->batches = b;
		if (json_object_get(e, "interval_s"))
			interval_s = json_integer_value(json_object_get(e, "interval_s"));
	}
	/* In batches the plan's targets are all there will be; one request is the range as
	 * given, whose count kilnd announces. */
	rows->total = rows->batches > 1 ? bmc_cli_ok_count(plan) : json_array_size(plan);
	rows->total_fixed = rows->batches > 1;
	/* Each request is one batch already: kilnd must not pace it again. */
	json_object_set_new(body, "dry_run", json_false());
	json_object_set_new(body, "batch", json_integer(0));
	json_object_del(body, "interval_s");
	for (int b = 1; b <= rows->batches && rc == 0; b++) {
		size_t n = 0, first = json_array_size(rows->results), j;
		json_t *r;

		kiln_buf_free(&names);
		kiln_buf_init(&names, 0);
		json_array_foreach(plan, i, e) {
			if (rows->batches == 1 || json_object_get(e, "error") ||
			    json_integer_value(json_object_get(e, "batch")) != b)
				continue;
			rc = kiln_buf_printf(&names, "%s%s", n ? "," : "",
					     json_string_value(json_object_get(e, "node")));
			if (rc < 0)
				goto cleanup;
			n++;
		}
		/* One batch: the range as given (kilnd answers busy and unknown nodes itself). */
		if (rows->batches > 1 && n == 0)
			continue;
		if (b > 1 && interval_s > 0) {
			bmc_cli_rows_progress(rows, interval_s);
			pause_s(interval_s);
		}
		rows->batch = b;
		bmc_cli_rows_progress(rows, 0);
		if (rows->batches > 1)
			json_object_set_new(body, "range", json_string(names.data));
		rc = bmc_cli_rows_post(rows, ctx, "power", body);
		if (rc == KILN_EEXISTS && rows->batches > 1) {
			/* 409: every node of this batch is busy; the next batch may not be. */
			rc = 0;
			json_array_foreach(plan, i, e) {
				json_t *busy;

				if (json_object_get(e, "error") ||
				    json_integer_value(json_object_get(e, "batch")) != b)
					continue;
				busy = json_pack("{s:O, s:s}", "node", json_object_get(e, "node"),
						 "error", "action in flight");
				rc = busy ? bmc_cli_rows_add(rows, busy)
					  : kiln_fail(KILN_ERROR, "out of memory");
				json_decref(busy);
				if (rc < 0)
					goto cleanup;
			}
		}
		if (rc < 0)
			goto cleanup;
		for (j = first; j < json_array_size(rows->results); j++) {
			const char *node;

			r = json_array_get(rows->results, j);
			if ((node = json_string_value(json_object_get(r, "node"))))
				json_object_set(results, node, r);
		}
	}
	bmc_cli_rows_end(rows, true);
	ended = true;
	json_array_foreach(plan, i, e) {
		json_t *r = json_object_get(results, json_string_value(json_object_get(e, "node")));

		if (r) {
			json_array_append(arr, r);
		} else {
			json_t *copy = json_deep_copy(e);

			json_object_del(copy, "dry_run");
			json_object_del(copy, "batch");
			json_object_del(copy, "interval_s");
			if (!json_object_get(copy, "error"))
				json_object_set_new(copy, "error", json_string("no answer"));
			json_array_append_new(arr, copy);
			/* its row too, after the nodes that answered */
			if (rows->print && (rc = rows->print(rows, copy)) < 0)
				goto cleanup;
		}
	}
	*out = arr;
	arr = NULL;
cleanup:
	if (!ended)
		bmc_cli_rows_end(rows, true);
	kiln_buf_free(&names);
	json_decref(results);
	json_decref(arr);
	return rc;
}

static int power_run(struct cli_ctx *ctx, int argc, char **argv)
{
	struct power_args a = { 0 };
	struct cli_args pos = { 0 };
	json_t *body = NULL, *res = NULL, *plan = NULL;
	const char *action = NULL, *range = NULL;
	char *hung = NULL;
	struct bmc_cli_rows rows = { 0 };
	size_t widths[] = { 0, action_widths[1], action_widths[2], action_widths[3] };
	char what[64];
	int rc, threshold, batch = 0;
	int64_t interval_s = 0, drain_timeout_s = 3600;

	rc = cli_args_parse(&pos, ctx, power_opts, argc - 1, argv + 1, power_opt, &a);
	if (rc < 0)
		goto cleanup;
	if (ctx->help) {
		cli_help_print(stdout, ctx, "status|on|off|soft|reset|cycle NODERANGE | "
			       "cycle|reset|off --hung [NODERANGE]",
			       "Asks the BMCs for their power state, or powers nodes on, off (forced), "
			       "soft (graceful shutdown), reset or cycle, each result the state read "
			       "back. --hung targets exactly the nodes kilnd flags hung (none: says "
			       "so, sends nothing, exit 0). --batch N acts on N nodes at a time, one "
			       "request per batch, --interval apart (defaults: kilnd's [power] batch "
			       "and interval). Each node's row is printed as it answers, and on a terminal "
			       "the progress is shown on stderr. A BMC kilnd knows is down answers at "
			       "once with its last error unless --retry-unreachable. An "
			       "action on more nodes than the threshold asks for the count to be "
			       "typed unless --yes; --dry-run prints the targets (and their batch) and "
			       "sends nothing. A node running Slurm jobs or GPU processes (from a "
			       "fresh agent report) is refused by off, soft, reset and cycle, the "
			       "work named, unless --drain or --force. Exit status 3 when some nodes "
			       "failed.",
			       power_opts);
		goto cleanup;
	}
	if (pos.n < (a.hung ? 1u : 2u)) {
		rc = cli_usage_error(ctx, "an action (status, on, off, soft, reset, cycle) and a "
				     "NODERANGE are required");
		goto cleanup;
	}
	if (pos.n > 2) {
		rc = cli_usage_error(ctx, "unexpected argument '%s' (join ranges with ',')",
				     pos.v[2]);
		goto cleanup;
	}
	range = pos.n > 1 ? pos.v[1] : NULL;
	for (size_t i = 0; actions[i]; i++)
		if (strcmp(pos.v[0], actions[i]) == 0)
			action = actions[i];
	if (!action) {
		rc = cli_usage_error(ctx, "'%s' is not status, on, off, soft, reset or cycle",
				     pos.v[0]);
		goto cleanup;
	}
	if (a.hung && strcmp(action, "cycle") != 0 && strcmp(action, "reset") != 0 &&
	    strcmp(action, "off") != 0) {
		rc = cli_usage_error(ctx, "--hung goes with cycle, reset or off, not %s", action);
		goto cleanup;
	}
	if ((a.force || a.drain || a.drain_timeout) &&
	    (strcmp(action, "on") == 0 || strcmp(action, "status") == 0)) {
		rc = cli_usage_error(ctx, "--force, --drain and --drain-timeout go with off, soft, "
				     "reset or cycle, not %s", action);
		goto cleanup;
	}
	if (a.force && (a.drain || a.drain_timeout)) {
		rc = cli_usage_error(ctx, "--force and --drain exclude each other");
		goto cleanup;
	}
	if (a.drain_timeout && !a.drain) {
		rc = cli_usage_error(ctx, "--drain-timeout goes with --drain");
		goto cleanup;
	}
	if (a.drain_timeout && (kiln_parse_duration(&drain_timeout_s, a.drain_timeout) < 0 ||
				drain_timeout_s < 1 || drain_timeout_s > 7 * 86400)) {
		rc = cli_usage_error(ctx, "--drain-timeout: '%s' is not a duration from 1s to 7d",
				     a.drain_timeout);
		goto cleanup;
	}
	if (a.batch && kiln_parse_int(&batch, a.batch, 0, 100000) < 0) {
		rc = cli_usage_error(ctx, "--batch: '%s' is not a node count (0 to 100000)", a.batch);
		goto cleanup;
	}
	if (a.interval && (kiln_parse_duration(&interval_s, a.interval) < 0 || interval_s < 0 ||
			   interval_s > 3600)) {
		rc = cli_usage_error(ctx, "--interval: '%s' is not a duration up to 1h", a.interval);
		goto cleanup;
	}
	if ((rc = bmc_cli_threshold(&threshold, ctx, a.confirm_above,
				    strcmp(action, "on") == 0 ? BMC_CLI_CONFIRM_ON
							      : BMC_CLI_CONFIRM_DESTRUCTIVE)) < 0)
		goto cleanup;

	if (strcmp(action, "status") == 0) {
		const struct bmc_cli_query q = { .endpoint = "power", .key = "range", .value = range,
						 .retry_unreachable = a.retry_unreachable };

		rc = bmc_cli_read(ctx, &q, "power status", status_headers, status_widths, 3,
				  status_row);
		goto cleanup;
	}
	if (a.hung) {
		if ((rc = hung_range(&hung, ctx, range)) < 0)
			goto cleanup;
		if (!hung) {
			if (ctx->output == CLI_OUT_JSON)
				printf("[]\n");
			else
				printf("no hung nodes%s%s; nothing sent\n", range ? " in " : "",
				       range ? range : "");
			goto cleanup;
		}
		range = hung;
	}

	body = json_pack("{s:s, s:s, s:b, s:b}", "range", range, "action", action, "on_if_off",
			 a.on_if_off, "dry_run", 1);
	if (!body ||
	    (a.retry_unreachable &&
	     json_object_set_new(body, "retry_unreachable", json_true()) < 0) ||
	    (a.batch && json_object_set_new(body, "batch", json_integer(batch)) < 0) ||
	    (a.interval && json_object_set_new(body, "interval_s", json_integer(interval_s)) < 0) ||
	    (a.force && json_object_set_new(body, "force", json_true()) < 0) ||
	    (a.drain && (json_object_set_new(body, "drain", json_true()) < 0 ||
			 json_object_set_new(body, "drain_timeout_s",
					     json_integer(drain_timeout_s)) < 0))) {
		rc = kiln_fail(KILN_ERROR, "out of memory");
		goto cleanup;
	}
	snprintf(what, sizeof(what), "power %s", action);
	/* The targets and their batches first (nothing sent to a BMC): what --dry-run prints,
	 * what the confirmation counts and what the batches are made of. */
	if ((rc = bmc_cli_post(&plan, ctx, "power", body)) < 0)
		goto cleanup;
	if (ctx->dry_run) {
		rc = dry_run_print(ctx, plan);
		goto cleanup;
	}
	if (!ctx->yes && bmc_cli_ok_count(plan) > (size_t)threshold &&
	    (rc = bmc_cli_confirm_count(bmc_cli_ok_count(plan), what, range)) < 0)
		goto cleanup;
	widths[0] = bmc_cli_results_node_width(plan);
	rc = bmc_cli_rows_init(&rows, what, action_headers, widths, 4,
			       ctx->output == CLI_OUT_JSON ? NULL : action_row);
	if (rc == 0)
		rc = paced_run(&res, ctx, &rows, body, plan);
	if (rc < 0)
		goto cleanup;
	if (ctx->output == CLI_OUT_JSON)
		rc = out_json_print(res, stdout);
	if (rc == 0)
		rc = out_results_status(res);
cleanup:
	bmc_cli_rows_free(&rows);
	json_decref(body);
	json_decref(plan);
	json_decref(res);
	free(hung);
	free(pos.v);
	return rc;
}

const struct cli_cmd cmd_power = { "power", "power state and confirmed power actions (live)",
				   power_run };
