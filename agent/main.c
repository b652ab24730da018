/* kiln-agent: arguments, the report loop and delivery; the work lives in the modules. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
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

#include "enroll.h"
#include "kiln/error.h"
#include "kiln/http.h"
#include "kiln/log.h"
#include "kiln/parse.h"
#include "nvml.h"
#include "report.h"
#include "send.h"
#include "spool.h"
#include "xid.h"

struct options {
	const char *server;
	const char *token_file;
	const char *enroll_token_file;
	const char *ca;
	const char *nvml_lib;
	const char *root;
	const char *state_dir;
	int interval_s;
	int nvml_timeout_s;
	int spool_max_mb;
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
	fputs("usage: kiln-agent --server URL (--token-file F | --enroll-token-file F) [--ca FILE]\n"
	      "                  [--interval S] [--once] [--print] [--nvml-lib PATH] [--root DIR]\n"
	      "                  [--state-dir DIR] [--nvml-timeout S] [--spool-max-mb N]\n"
	      "                  [--log-level error|warn|info|debug]\n"
	      "  --print writes the report to stdout and sends nothing (no server or token needed).\n",
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
	enum { OPT_NVML_TIMEOUT = 256, OPT_SPOOL_MAX, OPT_LOG_LEVEL };
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
		case 'i':
			if (kiln_parse_int(&o->interval_s, optarg, 1, 86400) < 0)
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
		case OPT_LOG_LEVEL:
			if (kiln_log_level_parse(&level, optarg) < 0)
				return usage_error("--log-level: '%s' is not error|warn|info|debug", optarg);
			kiln_log_set_level(level);
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			return usage_error("unknown or incomplete option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	if (o->print)
		return 0;
	if (!o->server)
		return usage_error("%s", "--server URL is required (or --print)");
	if (!!o->token_file == !!o->enroll_token_file)
		return usage_error("%s", "give exactly one of --token-file and --enroll-token-file");
	if (strncmp(o->server, "https://", 8) != 0 && strncmp(o->server, "http://", 7) != 0)
		return usage_error("--server: '%s' is not an http:// or https:// URL", o->server);
	return 0;
}

/* The agent's delivery state: which token, the spool, the counters main logs. */
struct delivery {
	const struct options *o;
	struct kiln_tls_trust trust;
	struct spool *spool;
	char *token; /* NULL until read or enrolled */
};

/* Makes sure d->token is set: the token file, the stored enrolled token, or a new enrollment. */
static int token_ensure(struct delivery *d, json_t *report)
{
	json_t *host = json_object_get(report, "host");
	char *enroll = NULL, *node = NULL, *token = NULL;
	int rc;

	if (d->token)
		return 0;
	if (d->o->token_file)
		return kiln_token_read_file(&d->token, d->o->token_file);
	if (enroll_token_load(&d->token, d->o->state_dir) == 0)
		return 0;
	rc = kiln_token_read_file(&enroll, d->o->enroll_token_file);
	if (rc < 0)
		return rc;
	rc = enroll_request(&node, &token, d->o->server, enroll, &d->trust,
			    json_string_value(json_object_get(host, "dmi_serial")),
			    json_string_value(json_object_get(host, "hostname")),
			    json_string_value(json_object_get(host, "machine_id")));
	explicit_bzero(enroll, strlen(enroll));
	free(enroll);
	if (rc < 0)
		return rc;
	rc = enroll_token_store(d->o->state_dir, token);
	if (rc == 0) {
		log_info("enrolled as node '%s'", node);
		d->token = token;
		token = NULL;
	}
	free(node);
	free(token);
	return rc;
}

static void token_drop(struct delivery *d)
{
	if (d->token)
		explicit_bzero(d->token, strlen(d->token));
	free(d->token);
	d->token = NULL;
	if (d->o->enroll_token_file)
		enroll_token_forget(d->o->state_dir); /* enroll again next time */
}

/* Sends spooled reports oldest first until the spool is empty or kilnd fails. */
static int spool_drain(struct delivery *d)
{
	char name[64];
	char *data;
	size_t len;
	int rc;

	for (;;) {
		rc = spool_oldest(d->spool, &data, &len, name);
		if (rc == KILN_ENOTFOUND)
			return 0;
		if (rc < 0)
			return rc;
		rc = send_report(NULL, d->o->server, d->token, &d->trust, data, len);
		free(data);
		if (rc == KILN_EINVAL)
			log_error("dropping a spooled report kilnd refused: %s", kiln_error_last());
		else if (rc == KILN_EAUTH)
			token_drop(d);
		if (rc < 0 && rc != KILN_EINVAL)
			return rc;
		rc = spool_remove(d->spool, name);
		if (rc < 0)
			return rc;
	}
}

/* Delivers one report: directly when nothing waits, else behind the spooled ones. 0 when sent. */
static int deliver(struct delivery *d, json_t *report, const char *text, size_t len)
{
	int rc = token_ensure(d, report);

	if (rc == 0 && spool_count(d->spool) == 0) {
		rc = send_report(NULL, d->o->server, d->token, &d->trust, text, len);
		if (rc == 0)
			return 0;
		if (rc == KILN_EINVAL) {
			log_error("kilnd refused the report: %s", kiln_error_last());
			return rc;
		}
		if (rc == KILN_EAUTH)
			token_drop(d);
	}
	if (rc < 0)
		log_warn("report not delivered, spooling it: %s", kiln_error_last());
	rc = spool_put(d->spool, text, len);
	if (rc < 0) {
		log_error("cannot spool the report: %s", kiln_error_last());
		return rc;
	}
	if (!d->token)
		return KILN_ERROR;
	rc = spool_drain(d);
	if (rc < 0) {
		log_warn("kilnd unavailable, %zu report(s) spooled: %s", spool_count(d->spool),
			 kiln_error_last());
		return rc;
	}
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

	d.o = &o;
	d.trust.ca_file = o.ca;
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
	ctx.interval_s = o.interval_s;
	ctx.started_at = (long long)time(NULL);
	if (nvml_open(&ctx.nvml, o.nvml_lib, o.nvml_timeout_s) < 0) {
		log_error("%s", kiln_error_last());
		goto cleanup;
	}
	if (xid_reader_open(&ctx.xid, o.root) < 0) {
		ctx.xid_error = strdup(kiln_error_last());
		log_warn("no Xid events from the kernel log: %s", kiln_error_last());
	}
	while (!stop_requested) {
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
			rc = deliver(&d, report, text, strlen(text));
		}
		free(text);
		json_decref(report);
next:
		status = rc < 0 ? 1 : 0;
		if (o.once)
			break;
		sleep_interval(o.interval_s);
	}
cleanup:
	nvml_close(ctx.nvml);
	xid_reader_close(ctx.xid);
	free((char *)ctx.xid_error);
	spool_close(d.spool);
	if (d.token)
		explicit_bzero(d.token, strlen(d.token));
	free(d.token);
	curl_global_cleanup();
	return status;
}
