/* SPDX-License-Identifier: Apache-2.0 */
/* kiln-bmcsim: arguments, tree loading and lifecycle of the Redfish BMC simulator. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fault.h"
#include "kiln/error.h"
#include "kiln/log.h"
#include "kiln/parse.h"
#include "kiln/version.h"
#include "server.h"
#include "sim.h"
#include "tree.h"

#define FAULTS_MAX 16

static const char usage[] =
	"usage: kiln-bmcsim --mockup DIR --listen 127.0.0.1:PORT [--count N] [--latency-ms L]\n"
	"         [--jitter-ms J] [--tls [--cert-out FILE]] [--user U --password P | --password-file F]\n"
	"         [--profile idrac9|ilo5|ilo6|ilo7|openbmc|generic] [--fault SPEC]... [--power-hook CMD]\n"
	"         [--power-delay-ms MS] [--settle-ms MS] [--session-cap N] [--session-timeout S]\n"
	"         [--session-login standard|no-location|bare|refused]\n"
	"         [--async] [--task-ms MS] [--require-etag] [--record-max N] [--hang-ms MS]\n"
	"         [--slow-ms MS] [--drift PCT] [--clock-skew S] [--ports-file FILE] [--log-level LEVEL]\n"
	"         [--select-query on|off] [--select-quirk ignore|400]\n"
	"         [--expand-query on|off] [--expand-quirk ignore|400] [--unique-serials]\n"
	"         [--boot-quirk continuous]\n"
	"       kiln-bmcsim --version\n"
	"Simulates N Redfish BMCs on ports PORT..PORT+N-1 (PORT 0: the kernel picks; see --ports-file).\n"
	"$select is honoured when the service root advertises ProtocolFeaturesSupported.SelectQuery\n"
	"  (--select-query sets that in the served root); otherwise a query parameter starting with\n"
	"  $ (other than $skip) is answered 501, as DSP0266 asks of unsupported ones. --select-quirk:\n"
	"  the root advertises it but the service ignores $select (whole resource) or answers 400.\n"
	"$expand=. (or .($levels=1)) is honoured on collections where the root advertises\n"
	"  ExpandQuery.NoLinks (--expand-query on sets it, one level; off removes ExpandQuery);\n"
	"  --expand-quirk: advertised, but the members stay links, or 400.\n"
	"--unique-serials: the n-th BMC's systems report the tree's SerialNumber and \"-n\".\n"
	"--boot-quirk continuous: a boot override is kept as Continuous whatever was asked (sushy-tools).\n"
	"A stored error body ({\"error\":...} alone) is answered with its MessageId's status (404, 503, ...).\n"
	"--session-cap N: logins beyond N open sessions answer 503 (iDRAC's RAC0218).\n"
	"--session-login: no-location answers a login without Location (the body has @odata.id),\n"
	"  bare without either, refused 401 to every session POST while Basic works.\n"
	"Fault SPEC: KIND[:all|N%|ports=P,..|index=I,..][:count=N][:prob=P][:ms=M],\n"
	"  KIND = hang | reset | slow | malformed | truncated | 412 | an HTTP status 400-599.\n"
	"Control: GET /_sim/state, GET|DELETE /_sim/requests, POST /_sim/inject on every port.\n";

enum {
	OPT_MOCKUP = 1000, OPT_LISTEN, OPT_COUNT, OPT_LATENCY, OPT_JITTER, OPT_TLS, OPT_CERT_OUT, OPT_USER,
	OPT_PASSWORD, OPT_PASSWORD_FILE, OPT_PROFILE, OPT_FAULT, OPT_HOOK, OPT_POWER_DELAY, OPT_SETTLE,
	OPT_SESSION_CAP, OPT_SESSION_TIMEOUT, OPT_ASYNC, OPT_TASK_MS, OPT_REQUIRE_ETAG, OPT_RECORD_MAX,
	OPT_HANG_MS, OPT_SLOW_MS, OPT_DRIFT, OPT_CLOCK_SKEW, OPT_PORTS_FILE, OPT_LOG_LEVEL, OPT_HELP, OPT_SELECT_QUERY,
	OPT_SELECT_QUIRK, OPT_EXPAND_QUERY, OPT_EXPAND_QUIRK, OPT_VERSION, OPT_UNIQUE_SERIALS,
	OPT_BOOT_QUIRK, OPT_SESSION_LOGIN,
};

static const struct option options[] = {
	{ "mockup", required_argument, NULL, OPT_MOCKUP },
	{ "listen", required_argument, NULL, OPT_LISTEN },
	{ "count", required_argument, NULL, OPT_COUNT },
	{ "latency-ms", required_argument, NULL, OPT_LATENCY },
	{ "jitter-ms", required_argument, NULL, OPT_JITTER },
	{ "tls", no_argument, NULL, OPT_TLS },
	{ "cert-out", required_argument, NULL, OPT_CERT_OUT },
	{ "user", required_argument, NULL, OPT_USER },
	{ "password", required_argument, NULL, OPT_PASSWORD },
	{ "password-file", required_argument, NULL, OPT_PASSWORD_FILE },
	{ "profile", required_argument, NULL, OPT_PROFILE },
	{ "fault", required_argument, NULL, OPT_FAULT },
	{ "power-hook", required_argument, NULL, OPT_HOOK },
	{ "power-delay-ms", required_argument, NULL, OPT_POWER_DELAY },
	{ "settle-ms", required_argument, NULL, OPT_SETTLE },
	{ "session-cap", required_argument, NULL, OPT_SESSION_CAP },
	{ "session-timeout", required_argument, NULL, OPT_SESSION_TIMEOUT },
	{ "async", no_argument, NULL, OPT_ASYNC },
	{ "task-ms", required_argument, NULL, OPT_TASK_MS },
	{ "require-etag", no_argument, NULL, OPT_REQUIRE_ETAG },
	{ "record-max", required_argument, NULL, OPT_RECORD_MAX },
	{ "hang-ms", required_argument, NULL, OPT_HANG_MS },
	{ "slow-ms", required_argument, NULL, OPT_SLOW_MS },
	{ "drift", required_argument, NULL, OPT_DRIFT },
	{ "clock-skew", required_argument, NULL, OPT_CLOCK_SKEW },
	{ "ports-file", required_argument, NULL, OPT_PORTS_FILE },
	{ "log-level", required_argument, NULL, OPT_LOG_LEVEL },
	{ "help", no_argument, NULL, OPT_HELP },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ "select-query", required_argument, NULL, OPT_SELECT_QUERY },
	{ "select-quirk", required_argument, NULL, OPT_SELECT_QUIRK },
	{ "expand-query", required_argument, NULL, OPT_EXPAND_QUERY },
	{ "expand-quirk", required_argument, NULL, OPT_EXPAND_QUIRK },
	{ "unique-serials", no_argument, NULL, OPT_UNIQUE_SERIALS },
	{ "boot-quirk", required_argument, NULL, OPT_BOOT_QUIRK },
	{ "session-login", required_argument, NULL, OPT_SESSION_LOGIN },
	{ NULL, 0, NULL, 0 },
};

/* The long name of option val, for an error message (options[] is not in the enum's order). */
static const char *option_name(int val)
{
	for (const struct option *o = options; o->name; o++)
		if (o->val == val)
			return o->name;
	return "?";
}

static int parse_on_off(int *out, const char *s)
{
	*out = strcmp(s, "on") == 0 ? 1 : strcmp(s, "off") == 0 ? 0 : -1;
	return *out < 0 ? kiln_fail(KILN_EINVAL, "expected on or off, got '%s'", s) : 0;
}

static int parse_quirk(enum sim_query_quirk *out, const char *s)
{
	if (strcmp(s, "ignore") == 0)
		*out = QUERY_IGNORED;
	else if (strcmp(s, "400") == 0)
		*out = QUERY_REFUSED;
	else
		return kiln_fail(KILN_EINVAL, "expected ignore or 400, got '%s'", s);
	return 0;
}

static int parse_login(enum sim_login *out, const char *s)
{
	static const char *const names[] = { "standard", "no-location", "bare", "refused" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcmp(s, names[i]) == 0) {
			*out = (enum sim_login)i;
			return 0;
		}
	}
	return kiln_fail(KILN_EINVAL, "expected standard, no-location, bare or refused, got '%s'", s);
}

static int read_password(char *out, size_t outlen, const char *path)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return kiln_fail(KILN_ERROR, "--password-file %s: cannot open", path);
	bool ok = fgets(out, (int)outlen, f) != NULL;
	fclose(f);
	if (!ok)
		return kiln_fail(KILN_EINVAL, "--password-file %s: empty", path);
	out[strcspn(out, "\r\n")] = '\0';
	return 0;
}

static int parse_listen(char *host, size_t hostlen, int *port, const char *arg)
{
	const char *colon = strrchr(arg, ':');
	if (!colon || colon == arg || (size_t)(colon - arg) >= hostlen)
		return kiln_fail(KILN_EINVAL, "--listen: expected HOST:PORT, got '%s'", arg);
	memcpy(host, arg, (size_t)(colon - arg));
	host[colon - arg] = '\0';
	if (kiln_parse_int(port, colon + 1, 0, 65535) < 0)
		return kiln_fail_prefix(KILN_EINVAL, "--listen port");
	return 0;
}

int main(int argc, char **argv)
{
	struct sim_config cfg = {
		.user = "admin", .password = "password", .power_delay_ms = 1000, .settle_ms = 2000,
		.session_cap = 8, .session_timeout_ms = 1800000, .task_ms = 1000, .record_max = 256,
		.hang_ms = 300000, .slow_ms = 200,
	};
	struct server_options so = { .count = 1 };
	static struct fault_spec faults[FAULTS_MAX];
	size_t nfaults = 0;
	const char *mockup = NULL, *listen_arg = NULL, *profile = NULL;
	char host[64], password[256];
	struct tree *tree = NULL;
	struct sim_server *srv = NULL;
	int rc = 0, opt, sessions_s = 1800, select_query = -1, expand_query = -1;
	enum kiln_log_level level;

	kiln_log_set_ident("kiln-bmcsim");
	while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		rc = 0;
		switch (opt) {
		case OPT_MOCKUP: mockup = optarg; break;
		case OPT_LISTEN: listen_arg = optarg; break;
		case OPT_COUNT: rc = kiln_parse_int(&so.count, optarg, 1, 100000); break;
		case OPT_LATENCY: rc = kiln_parse_int(&cfg.latency_ms, optarg, 0, 600000); break;
		case OPT_JITTER: rc = kiln_parse_int(&cfg.jitter_ms, optarg, 0, 600000); break;
		case OPT_TLS: so.tls = true; break;
		case OPT_CERT_OUT: so.cert_out = optarg; break;
		case OPT_USER: cfg.user = optarg; break;
		case OPT_PASSWORD: cfg.password = optarg; break;
		case OPT_PASSWORD_FILE:
			rc = read_password(password, sizeof(password), optarg);
			cfg.password = password;
			break;
		case OPT_PROFILE: profile = optarg; break;
		case OPT_FAULT:
			if (nfaults == FAULTS_MAX)
				rc = kiln_fail(KILN_EINVAL, "at most %d --fault options", FAULTS_MAX);
			else
				rc = fault_parse(&faults[nfaults++], optarg);
			break;
		case OPT_HOOK: cfg.power_hook = optarg; break;
		case OPT_POWER_DELAY: rc = kiln_parse_int(&cfg.power_delay_ms, optarg, 0, 600000); break;
		case OPT_SETTLE: rc = kiln_parse_int(&cfg.settle_ms, optarg, 0, 600000); break;
		case OPT_SESSION_CAP: rc = kiln_parse_int(&cfg.session_cap, optarg, 1, 10000); break;
		case OPT_SESSION_TIMEOUT: rc = kiln_parse_int(&sessions_s, optarg, 1, 86400 * 30); break;
		case OPT_ASYNC: cfg.async = true; break;
		case OPT_TASK_MS: rc = kiln_parse_int(&cfg.task_ms, optarg, 0, 600000); break;
		case OPT_REQUIRE_ETAG: cfg.require_etag = true; break;
		case OPT_RECORD_MAX: rc = kiln_parse_int(&cfg.record_max, optarg, 0, 1000000); break;
		case OPT_HANG_MS: rc = kiln_parse_int(&cfg.hang_ms, optarg, 1, 86400000); break;
		case OPT_SLOW_MS: rc = kiln_parse_int(&cfg.slow_ms, optarg, 1, 600000); break;
		case OPT_DRIFT: rc = kiln_parse_int(&cfg.drift_pct, optarg, 0, 50); break;
		case OPT_CLOCK_SKEW:
			rc = kiln_parse_int(&cfg.clock_skew_s, optarg, -3650 * 86400, 3650 * 86400);
			break;
		case OPT_PORTS_FILE: so.ports_file = optarg; break;
		case OPT_LOG_LEVEL:
			rc = kiln_log_level_parse(&level, optarg);
			if (rc == 0)
				kiln_log_set_level(level);
			break;
		case OPT_SELECT_QUERY:
			rc = parse_on_off(&select_query, optarg);
			break;
		case OPT_SELECT_QUIRK:
			rc = parse_quirk(&cfg.select_quirk, optarg);
			break;
		case OPT_EXPAND_QUERY:
			rc = parse_on_off(&expand_query, optarg);
			break;
		case OPT_EXPAND_QUIRK:
			rc = parse_quirk(&cfg.expand_quirk, optarg);
			break;
		case OPT_HELP:
		case 'h': fputs(usage, stdout); return 0;
		case OPT_VERSION: kiln_version_print(stdout, "kiln-bmcsim"); return 0;
		case OPT_UNIQUE_SERIALS: cfg.unique_serials = true; break;
		case OPT_BOOT_QUIRK:
			cfg.boot_continuous = strcmp(optarg, "continuous") == 0;
			if (!cfg.boot_continuous)
				rc = kiln_fail(KILN_EINVAL, "want 'continuous', not '%s'", optarg);
			break;
		case OPT_SESSION_LOGIN: rc = parse_login(&cfg.login, optarg); break;
		default: fputs(usage, stderr); return 2;
		}
		if (rc < 0) {
			fprintf(stderr, "kiln-bmcsim: --%s: %s\n", option_name(opt), kiln_error_last());
			return 2;
		}
	}
	if (optind < argc || !mockup || !listen_arg) {
		fprintf(stderr, "kiln-bmcsim: %s\n", optind < argc ? "unexpected argument" :
			"--mockup DIR and --listen HOST:PORT are required");
		return 2;
	}
	if (parse_listen(host, sizeof(host), &so.port, listen_arg) < 0) {
		fprintf(stderr, "kiln-bmcsim: %s\n", kiln_error_last());
		return 2;
	}
	if (so.port && so.port + so.count - 1 > 65535) {
		fprintf(stderr, "kiln-bmcsim: --listen/--count: ports past 65535\n");
		return 2;
	}
	so.host = host;
	cfg.session_timeout_ms = (int64_t)sessions_s * 1000;
	srand((unsigned)time(NULL) ^ (unsigned)getpid());

	uint64_t t0 = sim_now_ms();
	if (tree_load(&tree, mockup) < 0) {
		log_error("%s", kiln_error_last());
		return 1;
	}
	/* A tree's own ExpandQuery (iLO's: six levels, ExpandAll) would promise more than this
	 * simulator does: it becomes $expand=. at one level where the tree has NoLinks, and goes
	 * where it has not. */
	if (expand_query < 0 && tree->expand_advertised)
		expand_query = tree->expand_query;
	if ((select_query >= 0 || expand_query >= 0) &&
	    tree_query_features_set(tree, select_query, expand_query) < 0) {
		log_error("out of memory rewriting the service root");
		tree_free(tree);
		return 1;
	}
	if (!profile)
		profile = tree_profile_guess(tree);
	cfg.profile = sim_profile_find(profile);
	if (!cfg.profile) {
		fprintf(stderr, "kiln-bmcsim: --profile: unknown '%s' (idrac9, ilo5, ilo6, ilo7, openbmc, generic)\n", profile);
		tree_free(tree);
		return 2;
	}
	if (server_create(&srv, tree, &cfg, faults, nfaults, &so) < 0) {
		log_error("%s", kiln_error_last());
		tree_free(tree);
		return 1;
	}
	log_info("serving %s (%zu resources, %zu KiB, %zu systems, %zu media, %zu logs, profile %s, loaded in %llu ms) "
		 "on %s, %d BMC(s) from port %d%s%s", mockup, tree->nres, tree->bytes / 1024, tree->nsystems,
		 tree->nmedia, tree->nlogs, cfg.profile->name, (unsigned long long)(sim_now_ms() - t0), host, so.count,
		 server_port(srv, 0), so.tls ? ", TLS sha256 " : "", so.tls ? server_fingerprint(srv) : "");
	rc = server_run(srv) < 0 ? 1 : 0;
	if (rc)
		log_error("%s", kiln_error_last());
	server_free(srv);
	tree_free(tree);
	return rc;
}
