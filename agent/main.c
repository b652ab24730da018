/* SPDX-License-Identifier: Apache-2.0 */
/* kiln-agent: arguments, the report loop and delivery; the work lives in the modules. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "deliver.h"
#include "kiln/error.h"
#include "kiln/http.h"
#include "kiln/log.h"
#include "kiln/parse.h"
#include "kiln/servers.h"
#include "kiln/version.h"
#include "nvml.h"
#include "report.h"
#include "spool.h"
#include "xid.h"

struct options {
	const char *server;        /* --server, else KILN_SERVER: one URL or several, comma-separated */
	struct kiln_servers servers;
	const char *token_file;
	const char *enroll_token_file;
	const char *ca;
	const char *nvml_lib;
	const char *root;
	const char *state_dir;
	const char *site_packages; /* more Python environments, ':'-separated */
	const char *fs_paths;      /* more filesystems to report, ','-separated */
	int interval_s;
	int nvml_timeout_s;
	int spool_max_mb;
	int cycles; /* hidden, for tests/bench: stop after this many cycles (0: never) */
	int once;
	int print;
};

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void usage(FILE *f)
{
	fputs("usage: kiln-agent --server URL[,URL...] (--token-file F | --enroll-token-file F) [--ca FILE]\n"
	      "                  [--interval S] [--once] [--print] [--nvml-lib PATH] [--root DIR]\n"
	      "                  [--state-dir DIR] [--nvml-timeout S] [--spool-max-mb N]\n"
	      "                  [--log-level error|warn|info|debug] [--cycles N]\n"
	      "                  [--site-packages DIR[:DIR...]] [--fs-paths DIR[,DIR...]]\n"
	      "       kiln-agent --version | --help\n"
	      "  --print writes the report to stdout and sends nothing (no server or token needed).\n"
	      "  --server (or KILN_SERVER): several URLs of one fleet's kilnd are tried in turn.\n",
	      f);
}

static int usage_error(const char *fmt, const char *arg)
{
	fputs("kiln-agent: ", stderr);
	fprintf(stderr, fmt, arg);
	fputs(" (see --help)\n", stderr);
	return 2;
}

static int parse_args(struct options *o, int argc, char **argv)
{
	enum { OPT_NVML_TIMEOUT = 256, OPT_SPOOL_MAX, OPT_LOG_LEVEL, OPT_CYCLES, OPT_SITE_PACKAGES,
	       OPT_FS_PATHS };
	static const struct option longopts[] = {
		{ "server", required_argument, NULL, 's' },
		{ "token-file", required_argument, NULL, 't' },
		{ "enroll-token-file", required_argument, NULL, 'e' },
		{ "ca", required_argument, NULL, 'c' },
		{ "interval", required_argument, NULL, 'i' },
		{ "once", no_argument, NULL, '1' },
		{ "print", no_argument, NULL, 'p' },
		{ "nvml-lib", required_argument, NULL, 'n' },
		{ "root", required_argument, NULL, 'r' },
		{ "state-dir", required_argument, NULL, 'd' },
		{ "nvml-timeout", required_argument, NULL, OPT_NVML_TIMEOUT },
		{ "spool-max-mb", required_argument, NULL, OPT_SPOOL_MAX },
		{ "log-level", required_argument, NULL, OPT_LOG_LEVEL },
		{ "cycles", required_argument, NULL, OPT_CYCLES },
		{ "site-packages", required_argument, NULL, OPT_SITE_PACKAGES },
		{ "fs-paths", required_argument, NULL, OPT_FS_PATHS },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	enum kiln_log_level level;
	int c;

	o->interval_s = 30;
	o->nvml_timeout_s = 10;
	o->spool_max_mb = 64;
	o->state_dir = "/var/lib/kiln-agent";
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 's': o->server = optarg; break;
		case 't': o->token_file = optarg; break;
		case 'e': o->enroll_token_file = optarg; break;
		case 'c': o->ca = optarg; break;
		case '1': o->once = 1; break;
		case 'p': o->print = 1; break;
		case 'n': o->nvml_lib = optarg; break;
		case 'r': o->root = optarg; break;
		case 'd': o->state_dir = optarg; break;
		case OPT_SITE_PACKAGES: o->site_packages = optarg; break;
		case OPT_FS_PATHS: o->fs_paths = optarg; break;
		case 'i':
			if (kiln_parse_int(&o->interval_s, optarg, 0, 86400) < 0)
				return usage_error("--interval: %s", kiln_error_last());
			break;
		case OPT_NVML_TIMEOUT:
			if (kiln_parse_int(&o->nvml_timeout_s, optarg, 1, 600) < 0)
				return usage_error("--nvml-timeout: %s", kiln_error_last());
			break;
		case OPT_SPOOL_MAX:
			if (kiln_parse_int(&o->spool_max_mb, optarg, 1, 65536) < 0)
				return usage_error("--spool-max-mb: %s", kiln_error_last());
			break;
		case OPT_CYCLES:
			if (kiln_parse_int(&o->cycles, optarg, 1, 100000000) < 0)
				return usage_error("--cycles: %s", kiln_error_last());
			break;
		case OPT_LOG_LEVEL:
			if (kiln_log_level_parse(&level, optarg) < 0)
				return usage_error("--log-level: '%s' is not error|warn|info|debug", optarg);
			kiln_log_set_level(level);
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			kiln_version_print(stdout, "kiln-agent");
			exit(0);
		default:
			return usage_error("unknown or incomplete option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	/* --interval 0 (no sleep) only for a bounded benchmark run */
	if (o->interval_s == 0 && o->cycles == 0)
		return usage_error("%s", "--interval: must be at least 1");
	if (o->print)
		return 0;
	if (!o->server || !*o->server)
		o->server = getenv("KILN_SERVER");
	if (!o->server || !*o->server)
		return usage_error("%s", "--server URL is required (or --print)");
	if (!!o->token_file == !!o->enroll_token_file)
		return usage_error("%s", "give exactly one of --token-file and --enroll-token-file");
	if (kiln_servers_parse(&o->servers, o->server, "--server") < 0)
		return usage_error("%s", kiln_error_last());
	return 0;
}

/* Sleeps about interval_s (+-10% jitter so that a fleet does not report in step), or until a signal. */
static void sleep_interval(int interval_s)
{
	unsigned int r = 0;
	long long ms = interval_s * 1000LL;
	struct timespec ts;

	if (getrandom(&r, sizeof r, 0) == sizeof r)
		ms += (long long)(r % (unsigned int)(ms / 5 + 1)) - ms / 10;
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (ms % 1000) * 1000000L;
	while (!stop_requested && nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

int main(int argc, char **argv)
{
	struct options o = { 0 };
	struct report_ctx ctx = { 0 };
	struct delivery d = { 0 };
	struct sigaction sa;
	char spool_dir[PATH_MAX];
	int rc, status = 1;

	kiln_log_set_ident("kiln-agent");
	rc = parse_args(&o, argc, argv);
	if (rc)
		return rc;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	curl_global_init(CURL_GLOBAL_DEFAULT);

	d.servers = &o.servers;
	d.token_file = o.token_file;
	d.enroll_token_file = o.enroll_token_file;
	d.state_dir = o.state_dir;
	d.trust.ca_file = o.ca;
	if (!o.print)
		d.trust.reuse = curl_easy_init(); /* one connection kept across cycles (NULL: one each) */
	if (!o.print) {
		if (mkdir(o.state_dir, 0700) < 0 && errno != EEXIST) {
			log_error("state dir %s: %s", o.state_dir, strerror(errno));
			goto cleanup;
		}
		snprintf(spool_dir, sizeof spool_dir, "%s/spool", o.state_dir);
		if (spool_open(&d.spool, spool_dir, (size_t)o.spool_max_mb << 20, 100000) < 0) {
			log_error("%s", kiln_error_last());
			goto cleanup;
		}
	}
	ctx.root = o.root;
	ctx.site_packages = o.site_packages;
	ctx.fs_paths = o.fs_paths;
	/* the spool's filesystem is reported as the agent would use it, --print or not */
	snprintf(spool_dir, sizeof spool_dir, "%s/spool", o.state_dir);
	ctx.spool_dir = spool_dir;
	ctx.interval_s = o.interval_s > 0 ? o.interval_s : 1; /* the report's field is >= 1 */
	ctx.started_at = (long long)time(NULL);
	if (nvml_open(&ctx.nvml, o.nvml_lib, o.nvml_timeout_s) < 0) {
		log_error("%s", kiln_error_last());
		goto cleanup;
	}
	if (xid_reader_open(&ctx.xid, o.root) < 0) {
		ctx.xid_error = strdup(kiln_error_last());
		log_warn("no Xid events from the kernel log: %s", kiln_error_last());
	}
	for (int cycle = 1; !stop_requested; cycle++) {
		json_t *report = NULL;
		char *text;

		ctx.spool_dropped = d.spool ? spool_dropped(d.spool) : 0;
		rc = report_build(&report, &ctx);
		if (rc < 0) {
			log_error("building the report: %s", kiln_error_last());
			goto next;
		}
		text = json_dumps(report, o.print ? JSON_INDENT(2) | JSON_REAL_PRECISION(10) : JSON_COMPACT | JSON_REAL_PRECISION(10));
		if (!text) {
			log_error("out of memory");
			json_decref(report);
			goto next;
		}
		if (o.print) {
			printf("%s\n", text);
			fflush(stdout);
			rc = 0;
		} else {
			rc = delivery_send(&d, report, text, strlen(text));
		}
		free(text);
		json_decref(report);
next:
		status = rc < 0 ? 1 : 0;
		if (o.once || cycle == o.cycles)
			break;
		malloc_trim(0); /* hand a cycle's transient heap (TLS, report) back while asleep */
		if (o.interval_s > 0)
			sleep_interval(o.interval_s);
	}
cleanup:
	nvml_close(ctx.nvml);
	xid_reader_close(ctx.xid);
	free((char *)ctx.xid_error);
	spool_close(d.spool);
	delivery_free(&d);
	curl_easy_cleanup(d.trust.reuse);
	curl_global_cleanup();
	kiln_servers_free(&o.servers);
	return status;
}
