/* kiln power status|on|off|soft|reset|cycle NODERANGE|--hung: live power state and confirmed
 * power actions fanned out by kilnd, paced in batches, a result per node. */
#include <errno.h>
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

enum { O_ON_IF_OFF = 1, O_CONFIRM_ABOVE, O_HUNG, O_BATCH, O_INTERVAL };

static const struct cli_opt power_opts[] = {
	{ "on-if-off", 0, NULL, O_ON_IF_OFF, "reset/cycle: power on a node that is off" },
	{ "confirm-above", 0, "N", O_CONFIRM_ABOVE,
	  "ask for the count above N nodes (KILN_CONFIRM_THRESHOLD; default 10)" },
	{ "hung", 0, NULL, O_HUNG,
	  "cycle/reset/off: the nodes kilnd flags hung (within NODERANGE when given)" },
	{ "batch", 0, "N", O_BATCH, "N nodes at a time, batch after batch (default: [power] batch)" },
	{ "interval", 0, "S", O_INTERVAL,
	  "pause between batches, seconds or 30s, 2m (default: [power] interval)" },
	{ 0 },
};

static const char *const actions[] = { "status", "on", "off", "soft", "reset", "cycle", NULL };

struct power_args {
	int on_if_off;
	int hung;
	const char *confirm_above;
	const char *batch;    /* NULL: kilnd's [power] batch */
	const char *interval; /* NULL: kilnd's [power] interval */
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
	return 0;
}

static int status_print(const json_t *res)
{
	static const char *const headers[] = { "NODE", "POWER", "ERROR" };
	struct out_table t;
	size_t i;
	json_t *e;
	int rc = 0;

	out_table_init(&t, headers, 3);
	json_array_foreach(res, i, e) {
		char node[128], power[16], err[512];
		const char *row[] = { out_cell(node, sizeof(node), json_object_get(e, "node")),
				      out_cell(power, sizeof(power), json_object_get(e, "power")),
				      out_cell(err, sizeof(err), json_object_get(e, "error")) };

		if (!json_object_get(e, "power"))
			row[1] = "unknown";
		if ((rc = out_table_add(&t, row)) < 0)
			break;
	}
	if (rc == 0)
		out_table_print(&t, stdout);
	out_table_free(&t);
	return rc;
}

static int action_print(const json_t *res)
{
	static const char *const headers[] = { "NODE", "ACTION", "POWER", "RESULT" };
	struct out_table t;
	size_t i;
	json_t *e;
	int rc = 0;

	out_table_init(&t, headers, 4);
	json_array_foreach(res, i, e) {
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
		if ((rc = out_table_add(&t, row)) < 0)
			break;
	}
	if (rc == 0)
		out_table_print(&t, stdout);
	out_table_free(&t);
	return rc;
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

/* The progress line on stderr, rewritten in place; only called when stderr is a terminal. */
static void progress_print(const char *what, size_t done, size_t total, size_t failed,
			   int batch, int batches, int64_t next_in)
{
	fprintf(stderr, "\r\033[Kkiln: %s: %zu/%zu nodes done", what, done, total);
	if (failed)
		fprintf(stderr, ", %zu failed", failed);
	if (batches > 1)
		fprintf(stderr, " (batch %d/%d)", batch, batches);
	if (next_in > 0)
		fprintf(stderr, ", next batch in %llds", (long long)next_in);
	fflush(stderr);
}

static void pause_s(int64_t seconds)
{
	struct timespec ts = { .tv_sec = (time_t)seconds };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/*
 * Runs the action on the targets plan (kilnd's dry-run answer, each node with its "batch"):
 * one request per batch, interval_s apart, the progress on a terminal. *out is the answer in
 * plan order: a node skipped in the plan keeps its error. body is the dry-run request.
 */
static int paced_run(json_t **out, struct cli_ctx *ctx, json_t *body, const json_t *plan,
		     const char *what)
{
	int tty = isatty(STDERR_FILENO), batches = 1, rc = 0;
	size_t i, total = bmc_cli_ok_count(plan), done = 0, failed = 0;
	int64_t interval_s = 0;
	json_t *results = json_object(), *arr = json_array(), *e;
	struct kiln_buf names;

	kiln_buf_init(&names, 0);
	*out = NULL;
	if (!results || !arr) {
		rc = kiln_fail(KILN_ERROR, "out of memory");
		goto cleanup;
	}
	json_array_foreach(plan, i, e) {
		int b = (int)json_integer_value(json_object_get(e, "batch"));

		if (!json_object_get(e, "error") && b > batches)
			batches = b;
		if (json_object_get(e, "interval_s"))
			interval_s = json_integer_value(json_object_get(e, "interval_s"));
	}
	/* Each request is one batch already: kilnd must not pace it again. */
	json_object_set_new(body, "dry_run", json_false());
	json_object_set_new(body, "batch", json_integer(0));
	json_object_del(body, "interval_s");
	for (int b = 1; b <= batches && rc == 0; b++) {
		json_t *res = NULL, *r;
		size_t n = 0, j;

		kiln_buf_free(&names);
		kiln_buf_init(&names, 0);
		json_array_foreach(plan, i, e) {
			if (batches == 1 || json_object_get(e, "error") ||
			    json_integer_value(json_object_get(e, "batch")) != b)
				continue;
			rc = kiln_buf_printf(&names, "%s%s", n ? "," : "",
					     json_string_value(json_object_get(e, "node")));
			if (rc < 0)
				goto cleanup;
			n++;
		}
		/* One batch: the range as given (kilnd answers busy and unknown nodes itself). */
		if (batches > 1 && n == 0)
			continue;
		if (b > 1 && interval_s > 0) {
			if (tty)
				progress_print(what, done, total, failed, b - 1, batches, interval_s);
			pause_s(interval_s);
		}
		if (tty)
			progress_print(what, done, total, failed, b, batches, 0);
		if (batches > 1)
			json_object_set_new(body, "range", json_string(names.data));
		rc = bmc_cli_post(&res, ctx, "power", body);
		if (rc == KILN_EEXISTS && batches > 1) {
			/* 409: every node of this batch is busy; the next batch may not be. */
			json_array_foreach(plan, i, e)
				if (!json_object_get(e, "error") &&
				    json_integer_value(json_object_get(e, "batch")) == b)
					json_object_set_new(results,
							    json_string_value(json_object_get(e, "node")),
							    json_pack("{s:O, s:s}", "node",
								      json_object_get(e, "node"),
								      "error", "action in flight"));
			done += n;
			failed += n;
			rc = 0;
			continue;
		}
		if (rc < 0)
			goto cleanup;
		json_array_foreach(res, j, r) {
			const char *node = json_string_value(json_object_get(r, "node"));

			if (node)
				json_object_set(results, node, r);
			if (json_object_get(r, "error"))
				failed++;
			done++;
		}
		json_decref(res);
	}
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
		}
	}
	*out = arr;
	arr = NULL;
cleanup:
	if (tty) {
		if (rc == 0)
			progress_print(what, done, total, failed, batches, batches, 0);
		fputc('\n', stderr);
	}
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
	char what[64];
	int rc, threshold, batch = 0;
	int64_t interval_s = 0;

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
			       "and interval); on a terminal the progress is shown on stderr. An "
			       "action on more nodes than the threshold asks for the count to be "
			       "typed unless --yes; --dry-run prints the targets (and their batch) and "
			       "sends nothing. Exit status 3 when some nodes failed.",
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
	if (a.batch && kiln_parse_int(&batch, a.batch, 0, 100000) < 0) {
		rc = cli_usage_error(ctx, "--batch: '%s' is not a node count (0 to 100000)", a.batch);
		goto cleanup;
	}
	if (a.interval && (kiln_parse_duration(&interval_s, a.interval) < 0 || interval_s < 0 ||
			   interval_s > 3600)) {
		rc = cli_usage_error(ctx, "--interval: '%s' is not a duration up to 1h", a.interval);
		goto cleanup;
	}
	if ((rc = bmc_cli_threshold(&threshold, ctx, a.confirm_above)) < 0)
		goto cleanup;

	if (strcmp(action, "status") == 0) {
		rc = bmc_cli_get(&res, ctx, "power", "range", range, NULL, NULL);
		if (rc < 0)
			goto cleanup;
		if (ctx->output == CLI_OUT_JSON)
			rc = out_json_print(res, stdout);
		else
			rc = status_print(res);
		if (rc == 0)
			rc = out_results_status(res);
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
	if (!body || (a.batch && json_object_set_new(body, "batch", json_integer(batch)) < 0) ||
	    (a.interval && json_object_set_new(body, "interval_s", json_integer(interval_s)) < 0)) {
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
	rc = paced_run(&res, ctx, body, plan, what);
	if (rc < 0)
		goto cleanup;
	if (ctx->output == CLI_OUT_JSON)
		rc = out_json_print(res, stdout);
	else
		rc = action_print(res);
	if (rc == 0)
		rc = out_results_status(res);
cleanup:
	json_decref(body);
	json_decref(plan);
	json_decref(res);
	free(hung);
	free(pos.v);
	return rc;
}

const struct cli_cmd cmd_power = { "power", "power state and confirmed power actions (live)",
				   power_run };
