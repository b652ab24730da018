/* SPDX-License-Identifier: Apache-2.0 */
/* kiln reinstall NODERANGE --image NAME [--wait]: a reinstall job per node, followed to the end
 * with --wait (a progress line per node on a terminal, a line per change otherwise). */
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kiln/error.h>
#include <kiln/escape.h>
#include <kiln/parse.h>

#include "bmc_cli.h"
#include "cli.h"
#include "client.h"
#include "output.h"

#define WAIT_POLL_US 1000000

enum { O_IMAGE = 1, O_WAIT, O_FORCE, O_DRAIN, O_DRAIN_TIMEOUT };

static const struct cli_opt reinstall_opts[] = {
	{ "image", 0, "NAME", O_IMAGE, "the image to install (kiln image list)" },
	{ "wait", 0, NULL, O_WAIT, "follow the jobs until every node is done or failed" },
	{ "force", 0, NULL, O_FORCE,
	  "reinstall although Slurm jobs or GPU processes run (else the job is refused)" },
	{ "drain", 0, NULL, O_DRAIN,
	  "drain busy nodes in Slurm and keep their job queued until the work ended" },
	{ "drain-timeout", 0, "DURATION", O_DRAIN_TIMEOUT,
	  "with --drain: fail the job after this long (default 1h); kiln's drain is undone" },
	{ 0 },
};

struct reinstall_args {
	const char *image;
	int wait;
	int force;
	int drain;
	const char *drain_timeout;
};

static int reinstall_opt(void *ud, const struct cli_opt *opt, const char *value)
{
	struct reinstall_args *a = ud;

	if (opt->id == O_IMAGE)
		a->image = value;
	else if (opt->id == O_WAIT)
		a->wait = 1;
	else if (opt->id == O_FORCE)
		a->force = 1;
	else if (opt->id == O_DRAIN)
		a->drain = 1;
	else if (opt->id == O_DRAIN_TIMEOUT)
		a->drain_timeout = value;
	return 0;
}

/* Asks on the terminal to type the number of nodes. 1 when typed right, 0 otherwise,
 * KILN_ENOTFOUND without a terminal. */
static int confirm_count(size_t count)
{
	char line[32];
	ssize_t n;
	size_t len = 0;
	int fd = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
	int64_t typed;

	if (fd < 0)
		return KILN_ENOTFOUND;
	dprintf(fd, "This reinstalls %zu nodes (their disks are overwritten). Type %zu to go on: ",
		count, count);
	while (len + 1 < sizeof(line) && (n = read(fd, line + len, 1)) == 1 && line[len] != '\n')
		len++;
	line[len] = '\0';
	close(fd);
	return kiln_parse_int64(&typed, line, 0, INT64_MAX) == 0 && (size_t)typed == count;
}

static int job_finished(const char *state)
{
	return state && (strcmp(state, "done") == 0 || strcmp(state, "failed") == 0 ||
			 strcmp(state, "cancelled") == 0);
}

/* "gpu01  job 4  running  3/6 power_cycle (12s)" or "... failed: why": the node and the job's
 * id padded to the widest of the jobs followed (node_w, id_w; node names are ASCII), the
 * state to the longest ("cancelled"), each two spaces from what follows; the BMC's and the
 * agent's words escaped, a line longer than len cut with "…". */
static void job_line(char *out, size_t len, const json_t *j, int node_w, int id_w)
{
	const char *node = json_string_value(json_object_get(j, "node"));
	const char *state = json_string_value(json_object_get(j, "state"));
	const char *step = json_string_value(json_object_get(j, "step"));
	const char *err = json_string_value(json_object_get(j, "error"));
	json_int_t age = json_integer_value(json_object_get(j, "step_age_s"));
	int failed = state && strcmp(state, "failed") == 0;
	char safe_step[128], safe_err[1024], age_s[32] = "";

	kiln_escape(safe_step, sizeof(safe_step), step ? step : "?", 0);
	kiln_escape(safe_err, sizeof(safe_err), err ? err : "", 0);
	if (state && strcmp(state, "running") == 0)
		snprintf(age_s, sizeof(age_s), " (%llds)", (long long)age);
	out_cellf(out, len, "%-*s  job %-*" JSON_INTEGER_FORMAT "  %-9s  %d/%d %s%s%s%s%s", node_w,
		  node ? node : "?", id_w, json_integer_value(json_object_get(j, "id")),
		  state ? state : "?", (int)json_integer_value(json_object_get(j, "step_index")),
		  (int)json_integer_value(json_object_get(j, "step_total")), safe_step, age_s,
		  err ? (failed ? ": " : " [") : "", safe_err, err && !failed ? "]" : "");
}

/* The id column's width for jobs: the most digits of an id among them. */
static int job_id_width(const json_t *jobs)
{
	size_t i;
	json_t *j;
	int w = 1;

	json_array_foreach(jobs, i, j) {
		char id[32];
		int n = snprintf(id, sizeof(id), "%" JSON_INTEGER_FORMAT,
				 json_integer_value(json_object_get(j, "id")));

		if (n > w)
			w = n;
	}
	return w;
}

/*
 * Polls GET /jobs until every job in ids is finished; *out gets their final objects.
 * On a terminal the lines are redrawn in place; otherwise a line is printed per change.
 */
static int follow(json_t **out, struct cli_ctx *ctx, const char *range, const json_t *ids)
{
	char path[2048], *esc = cli_url_escape(range);
	json_t *last = json_object(), *mine = NULL, *res = NULL;
	int tty = isatty(STDOUT_FILENO) && ctx->output != CLI_OUT_JSON, drawn = 0, rc = 0;
	int node_w, id_w;

	if (!esc || !last) {
		rc = kiln_fail(KILN_ERROR, "out of memory");
		goto cleanup;
	}
	snprintf(path, sizeof(path), "/jobs?range=%s", esc);
	for (;;) {
		size_t i, k, pending = 0;
		json_t *j, *id;

		json_decref(res);
		res = NULL;
		if ((rc = cli_api(&res, NULL, ctx, "GET", path, NULL)) < 0)
			goto cleanup;
		json_decref(mine);
		mine = json_array();
		json_array_foreach(ids, k, id)
			json_array_foreach(res, i, j)
				if (json_integer_value(json_object_get(j, "id")) == json_integer_value(id))
					json_array_append(mine, j);
		node_w = (int)bmc_cli_results_node_width(mine);
		id_w = job_id_width(mine);
		if (tty && drawn)
			printf("\033[%dA", drawn);
		drawn = 0;
		json_array_foreach(mine, i, j) {
			char line[1024], key[32];
			const char *prev;

			job_line(line, sizeof(line), j, node_w, id_w);
			if (!job_finished(json_string_value(json_object_get(j, "state"))))
				pending++;
			if (tty) {
				printf("\033[2K%s\n", line);
				drawn++;
				continue;
			}
			if (ctx->output == CLI_OUT_JSON)
				continue;
			/* Plain output: a line when the state or step changes. */
			snprintf(key, sizeof(key), "%" JSON_INTEGER_FORMAT,
				 json_integer_value(json_object_get(j, "id")));
			prev = json_string_value(json_object_get(last, key));
			snprintf(line, sizeof(line), "%s %s",
				 json_string_value(json_object_get(j, "state")),
				 json_string_value(json_object_get(j, "step")));
			if (!prev || strcmp(prev, line) != 0) {
				char shown[1024];

				json_object_set_new(last, key, json_string(line));
				job_line(shown, sizeof(shown), j, node_w, id_w);
				printf("%s\n", shown);
			}
		}
		fflush(stdout);
		if (pending == 0 || json_array_size(mine) < json_array_size(ids))
			break;
		usleep(WAIT_POLL_US);
	}
	if (json_array_size(mine) < json_array_size(ids)) {
		rc = kiln_fail(KILN_ERROR, "a job vanished (its node was deleted?)");
		goto cleanup;
	}
	*out = mine;
	mine = NULL;
cleanup:
	free(esc);
	json_decref(last);
	json_decref(mine);
	json_decref(res);
	return rc;
}

static int reinstall_run(struct cli_ctx *ctx, int argc, char **argv)
{
	struct reinstall_args a = { 0 };
	struct cli_args pos = { 0 };
	json_t *body = NULL, *res = NULL, *jobs = NULL, *ids = NULL, *e;
	size_t i, ok = 0, failed = 0, targets = 0;
	int rc, threshold;
	int64_t drain_timeout_s = 3600;

	rc = cli_args_parse(&pos, ctx, reinstall_opts, argc - 1, argv + 1, reinstall_opt, &a);
	if (rc < 0)
		goto cleanup;
	if (ctx->help) {
		cli_help_print(stdout, ctx, "NODERANGE --image NAME [--wait] [--yes] [--dry-run]",
			       "Reinstalls nodes: per node, notes the boot id, mounts the ISO as virtual "
			       "media or sets a one-time PXE boot, power-cycles, waits for the agent to "
			       "report a new boot id (and the image's OS), ejects the media. More than "
			       "one node asks to type the count (or --yes; cli.conf confirm_above, "
			       "KILN_CONFIRM_THRESHOLD). A node running Slurm jobs or GPU processes "
			       "(from a fresh agent report) fails its job before anything is sent, "
			       "the work named, unless --force, or --drain (drained in Slurm, the job "
			       "waits queued until the work ended). Exit 0 when every node is "
			       "done, 3 when some failed, 1 when all failed.",
			       reinstall_opts);
		goto cleanup;
	}
	if (pos.n != 1) {
		rc = cli_usage_error(ctx, pos.n ? "unexpected argument '%s'" : "NODERANGE is required%s",
				     pos.n ? pos.v[1] : "");
		goto cleanup;
	}
	if (!a.image || !a.image[0]) {
		rc = cli_usage_error(ctx, "--image NAME is required");
		goto cleanup;
	}
	if (a.force && (a.drain || a.drain_timeout)) {
		rc = cli_usage_error(ctx, "--force and --drain exclude each other");
		goto cleanup;
	}
	if (a.drain_timeout && (!a.drain || kiln_parse_duration(&drain_timeout_s, a.drain_timeout) < 0 ||
				drain_timeout_s < 1 || drain_timeout_s > 7 * 86400)) {
		rc = cli_usage_error(ctx, "--drain-timeout goes with --drain and is a duration from "
				     "1s to 7d, not '%s'", a.drain_timeout);
		goto cleanup;
	}
	body = json_pack("{s:s, s:s, s:b}", "range", pos.v[0], "image", a.image, "dry_run", 1);
	if (body && ((a.force && json_object_set_new(body, "force", json_true()) < 0) ||
		     (a.drain && (json_object_set_new(body, "drain", json_true()) < 0 ||
				  json_object_set_new(body, "drain_timeout_s",
						      json_integer(drain_timeout_s)) < 0)))) {
		json_decref(body);
		body = NULL;
	}
	if (!body) {
		rc = kiln_fail(KILN_ERROR, "out of memory");
		goto cleanup;
	}
	/* The targets first (kilnd expands the range): the count decides the confirmation. */
	if ((rc = cli_api(&res, NULL, ctx, "POST", "/reinstall", body)) < 0)
		goto cleanup;
	json_array_foreach(res, i, e)
		if (!json_object_get(e, "error"))
			targets++;
	if (ctx->dry_run) {
		if (ctx->output == CLI_OUT_JSON) {
			rc = out_json_print(res, stdout);
			goto cleanup;
		}
		json_array_foreach(res, i, e) {
			const char *err = json_string_value(json_object_get(e, "error"));
			char steps[512] = "";
			size_t k;
			json_t *s;

			json_array_foreach(json_object_get(e, "steps"), k, s)
				snprintf(steps + strlen(steps), sizeof(steps) - strlen(steps), "%s%s",
					 k ? ", " : "", json_string_value(s));
			if (err)
				printf("%s: %s\n", json_string_value(json_object_get(e, "node")), err);
			else
				printf("%s: would reinstall from %s: %s\n",
				       json_string_value(json_object_get(e, "node")), a.image, steps);
		}
		rc = out_results_status(res);
		goto cleanup;
	}
	if ((rc = bmc_cli_threshold(&threshold, ctx, NULL, BMC_CLI_CONFIRM_DESTRUCTIVE)) < 0)
		goto cleanup;
	if (targets > (size_t)threshold && !ctx->yes) {
		rc = confirm_count(targets);
		if (rc == KILN_ENOTFOUND) {
			rc = cli_usage_error(ctx, "%zu nodes: more than %d needs --yes when there is no "
					     "terminal to confirm on", targets, threshold);
			goto cleanup;
		}
		if (rc != 1) {
			rc = kiln_fail(KILN_ERROR, "not confirmed; nothing was done");
			goto cleanup;
		}
	}
	json_object_set_new(body, "dry_run", json_false());
	json_decref(res);
	res = NULL;
	if ((rc = cli_api(&res, NULL, ctx, "POST", "/reinstall", body)) < 0)
		goto cleanup;
	ids = json_array();
	json_array_foreach(res, i, e) {
		const char *err = json_string_value(json_object_get(e, "error"));

		if (!err)
			json_array_append(ids, json_object_get(e, "job"));
		if (ctx->output == CLI_OUT_JSON && a.wait)
			continue;
		if (ctx->output != CLI_OUT_JSON) {
			if (err)
				fprintf(stderr, "%s: %s\n", json_string_value(json_object_get(e, "node")),
					err);
			else if (!a.wait)
				printf("%s: job %" JSON_INTEGER_FORMAT " queued\n",
				       json_string_value(json_object_get(e, "node")),
				       json_integer_value(json_object_get(e, "job")));
		}
	}
	if (!a.wait || json_array_size(ids) == 0) {
		if (ctx->output == CLI_OUT_JSON)
			out_json_print(res, stdout);
		rc = out_results_status(res);
		goto cleanup;
	}
	if ((rc = follow(&jobs, ctx, pos.v[0], ids)) < 0)
		goto cleanup;
	json_array_foreach(jobs, i, e) {
		if (json_is_string(json_object_get(e, "state")) &&
		    strcmp(json_string_value(json_object_get(e, "state")), "done") == 0)
			ok++;
		else
			failed++;
	}
	/* Nodes refused at the start count as failed too. */
	failed += json_array_size(res) - json_array_size(ids);
	if (ctx->output == CLI_OUT_JSON)
		out_json_print(jobs, stdout);
	else
		printf("%zu done, %zu failed\n", ok, failed);
	if (failed == 0)
		rc = 0;
	else if (ok == 0)
		rc = kiln_fail(KILN_ERROR, "every reinstall failed");
	else
		rc = CLI_EPARTIAL;
cleanup:
	json_decref(body);
	json_decref(res);
	json_decref(jobs);
	json_decref(ids);
	free(pos.v);
	return rc;
}

const struct cli_cmd cmd_reinstall = { "reinstall", "reinstall nodes from an ISO or PXE image",
				       reinstall_run };
