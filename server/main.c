/* SPDX-License-Identifier: Apache-2.0 */
/* kilnd: the kiln server's arguments, configuration and lifecycle. */
#include <getopt.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "api/api.h"
#include "api/node_json.h"
#include "bmc/bmc.h"
#include "bmc/ipmi/ipmi.h"
#include "cluster/cluster.h"
#include "cluster/handoff.h"
#include "daemon/config.h"
#include "fleet/guard.h"
#include "agents/ingest.h"
#include "fleet/jobs.h"
#include "fleet/console.h"
#include "health/event_limit.h"
#include "kiln/error.h"
#include "kiln/json_arena.h"
#include "kiln/log.h"
#include "kiln/version.h"
#include "fleet/live.h"
#include "cluster/migrate_sqlite.h"
#include "fleet/poller.h"
#include "agents/receive_gap.h"
#include "fleet/session_keep.h"
#include "daemon/secret.h"
#include "daemon/statedir.h"
#include "store/store.h"
#include "reports/report.h"
#include "daemon/tlscert.h"
#include "reports/webhook.h"

#define THREADS_AUTO_MAX 16

enum {
	OPT_STATE_DIR = 256, OPT_LISTEN, OPT_CONFIG, OPT_TLS_CERT, OPT_TLS_KEY, OPT_LOG_LEVEL,
	OPT_STORE_CONNECTION, OPT_LIST_ROUTES, OPT_PRINT_CONFIG_EXAMPLE, OPT_VERSION, OPT_HELP,
	OPT_BACKUP, OPT_MIGRATE_FROM_SQLITE,
};

static const struct option long_options[] = {
	{ "state-dir", required_argument, NULL, OPT_STATE_DIR },
	{ "listen", required_argument, NULL, OPT_LISTEN },
	{ "config", required_argument, NULL, OPT_CONFIG },
	{ "tls-cert", required_argument, NULL, OPT_TLS_CERT },
	{ "tls-key", required_argument, NULL, OPT_TLS_KEY },
	{ "log-level", required_argument, NULL, OPT_LOG_LEVEL },
	{ "store-connection", required_argument, NULL, OPT_STORE_CONNECTION },
	{ "backup", required_argument, NULL, OPT_BACKUP },
	{ "migrate-from-sqlite", required_argument, NULL, OPT_MIGRATE_FROM_SQLITE },
	{ "list-routes", no_argument, NULL, OPT_LIST_ROUTES },
	{ "print-config-example", no_argument, NULL, OPT_PRINT_CONFIG_EXAMPLE },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ "help", no_argument, NULL, OPT_HELP },
	{ NULL, 0, NULL, 0 },
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: kilnd --state-dir DIR [--listen ADDR:PORT] [--config FILE]\n"
		"             [--tls-cert FILE --tls-key FILE] [--log-level error|warn|info|debug]\n"
		"             [--store-connection CONNINFO]\n"
		"       kilnd --state-dir DIR [--config FILE] --backup FILE\n"
		"       kilnd --state-dir DIR --config FILE --migrate-from-sqlite OLD/kiln.db\n"
		"       kilnd --list-routes | --print-config-example | --version | --help\n"
		"\n"
		"  --state-dir DIR     kiln.db, secret.key, admin.token, TLS material (created 0700)\n"
		"  --listen ADDR:PORT  REST API address (default 127.0.0.1:8470; port 0: any free port)\n"
		"  --config FILE       kilnd.conf(5); every key with its default: --print-config-example,\n"
		"                      installed as /usr/share/doc/kiln-server/examples/\n"
		"                      kilnd.conf.example (deploy/kilnd.conf.example in the source)\n"
		"  --tls-cert/--tls-key  PEM certificate and key for HTTPS; without them a non-loopback\n"
		"                      listen uses a generated self-signed certificate\n"
		"  --store-connection CONNINFO  keep the data in PostgreSQL (libpq connection string\n"
		"                      or URI): [store] backend = postgresql with this connection\n"
		"  --backup FILE       copy kiln.db into FILE (while kilnd runs) and exit; FILE does\n"
		"                      not hold secret.key: keep a copy of it with FILE\n"
		"  --migrate-from-sqlite OLD/kiln.db  copy a SQLite state (its BMC passwords opened\n"
		"                      with OLD/secret.key, sealed with DIR's) into the empty\n"
		"                      PostgreSQL database of [store], and exit\n"
		"  --list-routes       print the REST endpoints and the role each needs\n");
}

/* Startup failures: one line, "kilnd: what went wrong". */
/*
 * The store target every thread opens (store_open()): the state dir's kiln.db, or with
 * [store] backend = postgresql "postgresql:[password_file=FILE;]CONNECTION". *out is new.
 */
static int store_target(char **out, const struct kilnd_config *cfg, const struct statedir *sd)
{
	const char *file = cfg->store_password_file;
	size_t len;

	if (strcmp(cfg->store_backend, "postgresql") != 0) {
		if (!(*out = statedir_file(sd, "kiln.db")))
			return kiln_fail(KILN_ERROR, "out of memory");
		return 0;
	}
	if (!cfg->store_connection || !*cfg->store_connection)
		return kiln_fail(KILN_ECONFIG, "backend = postgresql needs connection");
	if (file && (!*file || strchr(file, ';')))
		return kiln_fail(KILN_ECONFIG, "password_file must be a path without ';'");
	len = strlen(STORE_PG_PREFIX) + strlen(cfg->store_connection) +
	      (file ? strlen(file) + 16 : 0) + 1;
	if (!(*out = malloc(len)))
		return kiln_fail(KILN_ERROR, "out of memory");
	snprintf(*out, len, "%s%s%s%s%s", STORE_PG_PREFIX, file ? "password_file=" : "",
		 file ? file : "", file ? ";" : "", cfg->store_connection);
	return 0;
}

/*
 * This instance's id: DIR/instance.id, made at the first start. Kept across restarts, so that
 * a kilnd restarted after a crash is the same instance (its old row is its own, not another
 * one alive) and owns the same nodes.
 */
static int instance_id_load(char out[CLUSTER_ID_LEN + 1], const struct statedir *sd)
{
	char *path = statedir_file(sd, "instance.id"), line[64] = "";
	FILE *f;

	if (!path)
		return kiln_fail(KILN_ERROR, "out of memory");
	f = fopen(path, "re");
	free(path);
	if (f) {
		if (fgets(line, sizeof(line), f))
			line[strcspn(line, "\n")] = '\0';
		fclose(f);
		if (cluster_id_valid(line)) {
			memcpy(out, line, CLUSTER_ID_LEN + 1);
			return 0;
		}
	}
	cluster_id_new(out);
	snprintf(line, sizeof(line), "%s\n", out);
	return statedir_write_file(sd, "instance.id", line, strlen(line), 0644);
}

/* Whether another kilnd on this database is alive now (its heartbeat within its lease). */
static int others_alive(struct store *st, const char *self)
{
	struct instance_row *rows = NULL;
	size_t n = 0;
	int alive = 0;

	if (store_instance_list(st, &rows, &n) < 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		alive += cluster_row_live(&rows[i]) && strcmp(rows[i].id, self) != 0;
	instance_list_free(rows, n);
	return alive;
}

/* A call handed to this instance read its BMC: the poller keeps it as its own reading. */
static void observe_reading(void *poller, int64_t node_id, enum bmc_op_kind kind,
			    const json_t *data)
{
	poller_observe(poller, node_id, kind, data);
}

static int die(const char *what)
{
	const char *msg = kiln_error_last();

	if (what)
		fprintf(stderr, "kilnd: %s: %s\n", what, msg[0] ? msg : "failed");
	else
		fprintf(stderr, "kilnd: %s\n", msg[0] ? msg : "failed");
	return 1;
}

/*
 * kilnd --backup: an online copy of the state folder's database into file, beside a running
 * kilnd or not. Creates nothing in the state folder (a missing kiln.db is an error).
 */
static int backup_run(const char *state_dir, const char *file)
{
	char db[4096];
	struct store *st = NULL;
	int ret;

	if ((size_t)snprintf(db, sizeof(db), "%s/kiln.db", state_dir) >= sizeof(db)) {
		fprintf(stderr, "kilnd: --state-dir: path too long\n");
		return 1;
	}
	if (access(db, F_OK) != 0) {
		fprintf(stderr, "kilnd: --backup: %s: %s\n", db, strerror(errno));
		return 1;
	}
	if (store_open(&st, db) < 0)
		return die(db);
	ret = store_backup(st, file);
	store_close(st);
	if (ret < 0)
		return die("--backup");
	fprintf(stderr,
		"kilnd: backed up %s to %s; it does not hold secret.key: keep a copy of %s/secret.key "
		"with it (the BMC passwords are sealed with that key)\n",
		db, file, state_dir);
	return 0;
}

/*
 * kilnd --migrate-from-sqlite: the SQLite database at from (with the secret.key beside it)
 * into the configured PostgreSQL store, whose state dir's secret.key (made when absent)
 * seals the BMC passwords from now on. Progress and errors on stderr; 0 or 1.
 */
static int migrate_run(const char *state_dir, const struct kilnd_config *cfg, const char *from)
{
	struct statedir *sd = NULL;
	struct store *st = NULL;
	char *target = NULL;
	int ret = 1;

	if (statedir_open(&sd, state_dir) < 0) {
		die(NULL);
		goto done;
	}
	if (sd->key_created)
		fprintf(stderr, "kilnd: created %s/secret.key: copy it into the state dir of every "
				"kilnd on this database\n", sd->path);
	if (store_target(&target, cfg, sd) < 0) {
		die("[store]");
		goto done;
	}
	if (store_open(&st, target) < 0) {
		die("[store] postgresql"); /* the connection string may hold a password */
		goto done;
	}
	if (migrate_sqlite_run(st, from, sd->key, stderr) < 0) {
		die(NULL);
		goto done;
	}
	fprintf(stderr, "kilnd: the old API tokens work on it; start kilnd with --state-dir %s "
			"(and copy its secret.key to every other instance)\n", sd->path);
	ret = 0;
done:
	store_close(st);
	statedir_close(sd);
	free(target);
	return ret;
}

/*
 * With no certificate configured, the one systemd hands over as credentials tls.crt and
 * tls.key (LoadCredential=, see kilnd(8)): the unit runs as an unprivileged user that cannot
 * read a root-only key, systemd can. Both or neither; *out_used says which.
 */
static int tls_from_credentials(struct kilnd_config *cfg, int *out_used)
{
	const char *dir = getenv("CREDENTIALS_DIRECTORY");
	char cert[4096], key[4096];

	*out_used = 0;
	if (cfg->tls_cert || cfg->tls_key || !dir || !*dir)
		return 0;
	if ((size_t)snprintf(cert, sizeof(cert), "%s/tls.crt", dir) >= sizeof(cert) ||
	    (size_t)snprintf(key, sizeof(key), "%s/tls.key", dir) >= sizeof(key))
		return kiln_fail(KILN_EINVAL, "CREDENTIALS_DIRECTORY: path too long");
	if (access(cert, F_OK) != 0 && access(key, F_OK) != 0)
		return 0;
	if (access(cert, R_OK) != 0 || access(key, R_OK) != 0)
		return kiln_fail(KILN_EINVAL, "systemd credentials: tls.crt and tls.key go together "
				 "(%s holds one of them, or one is unreadable)", dir);
	if (kilnd_config_set(cfg, "tls_cert", cert) < 0 || kilnd_config_set(cfg, "tls_key", key) < 0)
		return -1;
	*out_used = 1;
	return 0;
}

/* Lets the process hold max_connections sockets plus the store and the BMC work. */
static void fd_limit_raise(unsigned max_connections)
{
	struct rlimit rl;
	rlim_t want = (rlim_t)max_connections + 1024;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= want)
		return;
	rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ? want : rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	if (rl.rlim_cur < want)
		log_warn("open-file limit %llu is below http.max_connections %u + 1024; raise "
			 "LimitNOFILE",
			 (unsigned long long)rl.rlim_cur, max_connections);
}

static unsigned threads_pick(int configured)
{
	long cpus;

	if (configured > 0)
		return (unsigned)configured;
	cpus = sysconf(_SC_NPROCESSORS_ONLN);
	if (cpus < 1)
		return 1;
	return cpus > THREADS_AUTO_MAX ? THREADS_AUTO_MAX : (unsigned)cpus;
}

/* The API URL this instance registers for the others to give out (kiln console follows it to
 * a node's owner): [cluster] url, else the listen address, this host's name standing for a
 * wildcard address (127.0.0.1 would send a CLI on another host to itself). */
static int advertised_url(char *out, size_t len, const char *configured,
			  const struct api_listen *l, int tls)
{
	char host[256];

	if (configured && *configured) {
		if ((strncmp(configured, "https://", 8) != 0 &&
		     strncmp(configured, "http://", 7) != 0) ||
		    strlen(configured) >= len)
			return kiln_fail(KILN_ECONFIG, "[cluster] url: '%s' is not an http:// or "
						       "https:// URL of at most %zu characters",
					 configured, len - 1);
		snprintf(out, len, "%s", configured);
		return 0;
	}
	if ((strcmp(l->host, "0.0.0.0") == 0 || strcmp(l->host, "::") == 0) &&
	    gethostname(host, sizeof(host)) == 0) {
		host[sizeof(host) - 1] = '\0';
		/* a host name too long for out: the listen address after all */
		if (snprintf(out, len, "%s://%s:%d", tls ? "https" : "http", host, l->port) <
		    (int)len)
			return 0;
	}
	api_listen_url(out, len, l, tls);
	return 0;
}

int main(int argc, char **argv)
{
	struct kilnd_config cfg;
	const char *state_dir = NULL, *config_path = NULL;
	const char *over_listen = NULL, *over_cert = NULL, *over_key = NULL, *over_level = NULL;
	const char *over_store = NULL;
	const char *backup_file = NULL, *migrate_from = NULL;
	struct statedir *sd = NULL;
	struct store *st = NULL;
	struct tlscert tls = { 0 };
	struct api_server *srv = NULL;
	struct session_keep *keep = NULL;
	struct bmc_engine *engine = NULL;
	struct poller *poller = NULL;
	struct cluster *cluster = NULL;
	struct guard *guard = NULL;
	struct jobs *jobs = NULL;
	struct live *live = NULL;
	struct handoff *handoff = NULL;
	struct webhook *hooks = NULL;
	struct api_listen listen_at;
	struct api_options opt = { 0 };
	enum kiln_log_level level;
	char instance_id[CLUSTER_ID_LEN + 1];
	char url[128], line[160], *db_path = NULL, *cert_path = NULL, *key_path = NULL;
	sigset_t sigs;
	int c, sig = 0, ret = 1, fd = -1, created = 0, db_existed, from_credentials;

	kiln_log_set_ident("kilnd");
	kiln_json_arena_install(); /* before any jansson value: agent reports parse into arenas */
	if (kilnd_config_init(&cfg) < 0)
		return die("configuration defaults");
	while ((c = getopt_long(argc, argv, "", long_options, NULL)) != -1) {
		switch (c) {
		case OPT_STATE_DIR: state_dir = optarg; break;
		case OPT_LISTEN: over_listen = optarg; break;
		case OPT_CONFIG: config_path = optarg; break;
		case OPT_TLS_CERT: over_cert = optarg; break;
		case OPT_TLS_KEY: over_key = optarg; break;
		case OPT_LOG_LEVEL: over_level = optarg; break;
		case OPT_STORE_CONNECTION: over_store = optarg; break;
		case OPT_BACKUP: backup_file = optarg; break;
		case OPT_MIGRATE_FROM_SQLITE: migrate_from = optarg; break;
		case OPT_LIST_ROUTES:
			ret = api_routes_print(stdout) < 0;
			goto cleanup;
		case OPT_PRINT_CONFIG_EXAMPLE:
			ret = kilnd_config_example_write(stdout) < 0;
			goto cleanup;
		case OPT_VERSION:
			kiln_version_print(stdout, "kilnd");
			ret = 0;
			goto cleanup;
		case OPT_HELP:
			usage(stdout);
			ret = 0;
			goto cleanup;
		default:
			fprintf(stderr, "kilnd: try --help\n");
			ret = 2;
			goto cleanup;
		}
	}
	if (optind < argc || !state_dir) {
		fprintf(stderr, optind < argc ? "kilnd: unexpected argument '%s'\n"
					      : "kilnd: --state-dir DIR is required%s\n",
			optind < argc ? argv[optind] : "");
		ret = 2;
		goto cleanup;
	}
	/* The file first, then the command line over it. */
	if (config_path && kilnd_config_load(&cfg, config_path) < 0) {
		ret = die(NULL);
		goto cleanup;
	}
	if ((over_listen && kilnd_config_set(&cfg, "listen", over_listen) < 0) ||
	    (over_cert && kilnd_config_set(&cfg, "tls_cert", over_cert) < 0) ||
	    (over_key && kilnd_config_set(&cfg, "tls_key", over_key) < 0) ||
	    (over_level && kilnd_config_set(&cfg, "log_level", over_level) < 0) ||
	    (over_store && (kilnd_config_set(&cfg, "store.backend", "postgresql") < 0 ||
			    kilnd_config_set(&cfg, "store.connection", over_store) < 0))) {
		ret = die(NULL);
		goto cleanup;
	}
	if (kiln_log_level_parse(&level, cfg.log_level) < 0) {
		ret = die("log_level");
		goto cleanup;
	}
	kiln_log_set_level(level);
	if (backup_file && strcmp(cfg.store_backend, "sqlite") != 0) {
		/* PostgreSQL's own tools take the copy (kilnd(8), BACKUP AND RESTORE) */
		fprintf(stderr, "kilnd: --backup: [store] backend = %s: back the database up with "
				"pg_dump\n", cfg.store_backend);
		ret = 1;
		goto cleanup;
	}
	if (backup_file) {
		ret = backup_run(state_dir, backup_file);
		goto cleanup;
	}
	if (migrate_from && strcmp(cfg.store_backend, "postgresql") != 0) {
		fprintf(stderr, "kilnd: --migrate-from-sqlite: [store] backend = %s: the option "
				"copies into a PostgreSQL store (backend = postgresql)\n",
			cfg.store_backend);
		ret = 1;
		goto cleanup;
	}
	if (migrate_from) {
		ret = migrate_run(state_dir, &cfg, migrate_from);
		goto cleanup;
	}
	if (api_listen_parse(&listen_at, cfg.listen) < 0) {
		ret = die(NULL);
		goto cleanup;
	}
	if (cfg.tls_cert && !cfg.tls_cert[0]) {
		free(cfg.tls_cert);
		cfg.tls_cert = NULL;
	}
	if (cfg.tls_key && !cfg.tls_key[0]) {
		free(cfg.tls_key);
		cfg.tls_key = NULL;
	}
	if (tls_from_credentials(&cfg, &from_credentials) < 0) {
		ret = die(NULL);
		goto cleanup;
	}
	if (from_credentials)
		log_info("TLS certificate and key from the systemd credentials tls.crt, tls.key");
	if (!cfg.tls_cert != !cfg.tls_key) {
		fprintf(stderr, "kilnd: tls_cert and tls_key go together: give both or neither\n");
		goto cleanup;
	}

	/* A core file holds secret.key's copies in use and the BMC passwords being sent: none
	 * unless asked for (the IPMI helper forked below inherits this). */
	if (!cfg.allow_core_dumps && prctl(PR_SET_DUMPABLE, 0) != 0)
		log_warn("prctl(PR_SET_DUMPABLE, 0): %s: a crash may leave a core file",
			 strerror(errno));

	node_json_ca_dir_set(cfg.bmc_ca_dir);
	if (event_limit_configure(cfg.events_per_node) < 0 || secret_curl_init() < 0) {
		ret = die(NULL);
		goto cleanup;
	}

	/* Signals are taken by sigwait below: block them before any thread exists. */
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	/* libfreeipmi waits with select(): its helper forks now, while kilnd holds few files. */
	{
		struct ipmi_helper_config icfg = {
			.state_dir = state_dir,
			.session_idle_ms = cfg.bmc_ipmi_session_idle > 0
						   ? (long)cfg.bmc_ipmi_session_idle * 1000 : -1,
		};

		if (ipmi_helper_start(&icfg) < 0) {
			ret = die("IPMI helper");
			goto cleanup;
		}
	}

	if (statedir_open(&sd, state_dir) < 0) {
		ret = die(NULL);
		goto cleanup;
	}
	if (sd->key_created)
		log_info("created %s/secret.key (mode 0600): keep it with kiln.db, the BMC "
			 "passwords are encrypted with it",
			 sd->path);
	if (instance_id_load(instance_id, sd) < 0) {
		ret = die("instance.id");
		goto cleanup;
	}
	if (store_target(&db_path, &cfg, sd) < 0) {
		ret = die("[store]");
		goto cleanup;
	}
	db_existed = store_target_is_pg(db_path) || access(db_path, F_OK) == 0;
	if (store_open(&st, db_path) < 0) {
		/* a PostgreSQL target is not printed: its connection string may hold a password */
		ret = die(store_target_is_pg(db_path) ? "[store] postgresql" : db_path);
		goto cleanup;
	}
	if (!db_existed)
		log_info("created %s", db_path);
	/* The BMC passwords and kept sessions in it were sealed with one key: a kilnd holding
	 * another (a second instance set up apart, a state restored beside the wrong key) stops
	 * here rather than fail every BMC login. */
	{
		int first = 0;

		if (cluster_key_check(st, sd->key, &first) < 0) {
			ret = die(NULL);
			goto cleanup;
		}
		if (first && db_existed)
			log_info("recorded the check value of secret.key in the database: a kilnd "
				 "with another key will refuse to start on it");
	}
	/* Before anything acts again: what the last kilnd left in flight says it was cut short
	 * (the poller adds the power it reads back first). Not while another instance lives:
	 * what is pending may be its own, in flight. */
	{
		int interrupted = 0, alive = others_alive(st, instance_id);

		if (alive < 0)
			log_warn("cluster: %s", kiln_error_last());
		else if (alive > 0)
			log_info("cluster: %d other instance(s) alive on this database", alive);
		else if (store_audit_interrupt(st, &interrupted) < 0)
			log_warn("audit: %s", kiln_error_last());
		else if (interrupted > 0)
			log_warn("audit: %d action(s) left pending by the last kilnd are now "
				 "'interrupted: kilnd stopped'", interrupted);
	}
	if (statedir_admin_token_ensure(sd, st, &created) < 0) {
		ret = die("admin token");
		goto cleanup;
	}
	if (created)
		log_info("first start: wrote the admin token to %s/admin.token (mode 0600)",
			 sd->path);
	/* Every server thread opens its own handle. */
	store_close(st);
	st = NULL;

	if (cfg.tls_cert) {
		if (tlscert_load(&tls, cfg.tls_cert, cfg.tls_key) < 0) {
			ret = die(NULL);
			goto cleanup;
		}
	} else if (!listen_at.loopback) {
		/* Plain HTTP only on loopback: anywhere else, a generated certificate. */
		cert_path = statedir_file(sd, "tls.crt");
		key_path = statedir_file(sd, "tls.key");
		if (!cert_path || !key_path ||
		    tlscert_ensure(&tls, cert_path, key_path, listen_at.host) < 0) {
			ret = die("TLS certificate");
			goto cleanup;
		}
		log_info("%s self-signed certificate %s", tls.generated ? "generated" : "using",
			 cert_path);
	}
	if (tls.cert_pem)
		log_info("TLS certificate SHA-256 fingerprint %s", tls.fingerprint);

	fd_limit_raise((unsigned)cfg.http_max_connections);
	{
		struct console_config ccfg = { .state_dir = sd->path, .db_path = db_path,
					       .key = sd->key,
					       .timeout_ms = (long)cfg.bmc_connect_timeout * 1000,
					       .shared = store_target_is_pg(db_path) };

		if (console_start(&ccfg) < 0) {
			ret = die("console");
			goto cleanup;
		}
	}

	if (api_listen_open(&fd, &listen_at) < 0) {
		ret = die(NULL);
		goto cleanup;
	}
	opt.db_path = db_path;
	opt.key = sd->key;
	opt.listen_fd = fd;
	opt.ipv6 = listen_at.addr.ss_family == AF_INET6;
	opt.threads = threads_pick(cfg.http_threads);
	opt.max_connections = (unsigned)cfg.http_max_connections;
	opt.connection_timeout = (unsigned)cfg.http_connection_timeout;
	opt.request_timeout = (unsigned)cfg.http_request_timeout;
	opt.per_address_connections = (unsigned)cfg.http_per_address_connections;
	if (!cfg.http_per_address_connections && !listen_at.loopback)
		opt.per_address_connections = 1024;
	opt.enroll_rate = cfg.http_enroll_rate;
	opt.enroll_burst = (unsigned)cfg.http_enroll_burst;
	opt.tls_cert_pem = tls.cert_pem;
	opt.tls_key_pem = tls.key_pem;
	/* One BMC engine for the poller and the actions: one session per BMC. */
	{
		struct bmc_engine_config ecfg = {
			.fanout = cfg.bmc_fanout,
			.connect_timeout_ms = (long)cfg.bmc_connect_timeout * 1000,
			.request_timeout_ms = (long)cfg.bmc_request_timeout * 1000,
			.action_timeout_ms = (long)cfg.bmc_action_timeout * 1000,
			.status_timeout_ms = (long)cfg.bmc_status_timeout,
			.redfish_loops = cfg.bmc_redfish_threads,
			.state_dir = sd->path,
		};

		/* Redfish sessions outlive a crash in the store: the next start reuses them. */
		if (session_keep_open(&keep, db_path, sd->key) < 0) {
			ret = die("session store");
			goto cleanup;
		}
		ecfg.sessions = session_keep_keeper(keep);
		struct poller_options popt = { .db_path = db_path, .key = sd->key };

		if (bmc_engine_start(&engine, &ecfg) < 0) {
			ret = die("BMC engine");
			goto cleanup;
		}
		struct guard_options gopt = {
			.db_path = db_path,
			.sched = { .scontrol = cfg.scheduler_scontrol, .squeue = cfg.scheduler_squeue,
				   .timeout_ms = cfg.scheduler_timeout * 1000,
				   .node_name = cfg.scheduler_node_name },
			.ignore = cfg.work_ignore_processes,
			.fresh_s = cfg.work_report_fresh,
			.agent_interval_s = cfg.health_agent_interval,
			.poll_ms = cfg.scheduler_drain_poll,
			.drain_hung = cfg.scheduler_drain_hung,
			.view_s = cfg.scheduler_view_interval,
		};

		work_config_set(cfg.work_ignore_processes, cfg.work_report_fresh);
		if (sched_type_parse(&gopt.sched.type, cfg.scheduler_type) < 0 ||
		    guard_start(&guard, &gopt) < 0) {
			ret = die("guard");
			goto cleanup;
		}
		{
			struct cluster_options copt = {
				.id = instance_id, .db_path = db_path,
				.shared = store_target_is_pg(db_path),
				.group = cfg.cluster_group, .lease_s = cfg.cluster_lease,
				.listen = url,
			};

			if (advertised_url(url, sizeof(url), cfg.cluster_url, &listen_at,
					   tls.cert_pem != NULL) < 0 ||
			    cluster_start(&cluster, &copt) < 0) {
				ret = die("cluster");
				goto cleanup;
			}
			console_cluster_set(cluster);
			/* what this instance left claimed in an earlier life: read back, never
			 * sent again (before the poller and the jobs claim anything) */
			if (copt.shared) {
				struct handoff_options hopt = { .db_path = db_path,
								.engine = engine,
								.cluster = cluster,
								.key = sd->key };

				if (handoff_start(&handoff, &hopt) < 0) {
					ret = die("handoff");
					goto cleanup;
				}
			}
			if (copt.shared)
				log_info("cluster: instance %s%s%s, lease %llds", cluster_self(cluster),
					 cfg.cluster_group && *cfg.cluster_group ? ", group " : "",
					 cfg.cluster_group && *cfg.cluster_group ? cfg.cluster_group : "",
					 (long long)cfg.cluster_lease);
		}
		poller_config_from(&popt.cfg, &cfg);
		popt.engine = engine;
		popt.cluster = cluster;
		popt.guard = guard;
		/* No agent could report while kilnd was down: their silence counts from now. */
		receive_gap_mark(time(NULL));
		if (poller_start(&poller, &popt) < 0) {
			ret = die("poller");
			goto cleanup;
		}
		{
			struct jobs_options jopt = { .db_path = db_path, .key = sd->key,
						     .engine = engine, .guard = guard,
						     .cluster = cluster };

			jobs_options_from(&jopt, &cfg);
			if (jobs_start(&jobs, &jopt) < 0) {
				ret = die("jobs");
				goto cleanup;
			}
		}
	}
	opt.engine = engine;
	/* Live BMC calls of the API run on their own thread: no HTTP thread waits for a BMC. */
	{
		struct live_options lopt = { .db_path = db_path, .engine = engine,
					     .poller = poller, .guard = guard, .cluster = cluster };

		if (live_start(&live, &lopt) < 0) {
			ret = die("live calls");
			goto cleanup;
		}
	}
	/* Several instances: calls on nodes owned elsewhere go to their owners, and theirs
	 * come here, through node_calls rows (before the API takes any call). */
	if (handoff && handoff_run(handoff, observe_reading, poller, live_handoff_result, live) < 0) {
		ret = die("handoff");
		goto cleanup;
	}
	opt.live = live;
	opt.cluster = cluster;
	api_power_pacing_set(cfg.power_batch, cfg.power_interval);
	api_metrics_configure(&(struct api_metrics_config){
		.allow_unauthenticated_loopback = cfg.metrics_allow_unauthenticated_loopback,
		.hung_intervals = cfg.health_hung_intervals,
		.agent_interval_s = cfg.health_agent_interval,
		.store_target = db_path });
	/* Agent reports are committed in groups by one writer; their requests wait suspended. */
	if (ingest_writer_start(db_path, INGEST_QUEUE_MAX) < 0) {
		ret = die("ingest writer");
		goto cleanup;
	}
	if (api_server_start(&srv, &opt) < 0) {
		ret = die("REST API");
		goto cleanup;
	}
	receive_gap_mark(time(NULL)); /* and reports are taken from this moment */
	fd = -1;
	api_listen_url(url, sizeof(url), &listen_at, tls.cert_pem != NULL);
	snprintf(line, sizeof(line), "%s\n", url);
	if (statedir_write_file(sd, "kilnd.url", line, strlen(line), 0644) < 0) {
		ret = die(NULL);
		goto cleanup;
	}
	log_info("listening on %s (%u threads, at most %d connections)", url, opt.threads,
		 cfg.http_max_connections);
	report_energy_price_set(cfg.report_energy_price, cfg.report_currency);
	if (cfg.webhook_urls && cfg.webhook_urls[0]) {
		struct webhook_options wopt = { .db_path = db_path, .urls = cfg.webhook_urls,
						.timeout_s = cfg.webhook_timeout,
						.retries = cfg.webhook_retries,
						.queue_max = cfg.webhook_queue };

		if (webhook_severity_parse(&wopt.min_severity, cfg.webhook_min_severity) < 0 ||
		    webhook_start(&hooks, &wopt) < 0) {
			ret = die("webhooks");
			goto cleanup;
		}
		log_info("webhooks: %s events and above", cfg.webhook_min_severity);
	}

	while (sigwait(&sigs, &sig) != 0)
		;
	log_info("%s: stopping", sig == SIGINT ? "SIGINT" : "SIGTERM");
	ret = 0;
cleanup:
	webhook_stop(hooks);
	console_stop(); /* attached consoles hold upgraded HTTP connections */
	console_cluster_set(NULL);
	/* Before the server: it answers every report it queued (libmicrohttpd must not stop
	 * with a suspended connection); reports after it are answered 503 (agents resend). */
	ingest_writer_stop();
	live_stop(live);          /* likewise: every live answer ends, none stays suspended */
	api_server_stop(srv);
	api_metrics_stop();
	handoff_stop(handoff);    /* no call of another instance is taken from now on */
	bmc_engine_drain(engine); /* queued reads end now; the poller waits only for what runs */
	poller_stop(poller);      /* before the engine its operations run on */
	jobs_stop(jobs);
	bmc_engine_stop(engine);
	session_keep_close(keep); /* after the engine: its logouts drop their kept sessions */
	handoff_free(handoff);    /* after the engine: the calls it ran store their results */
	live_free(live);          /* after the engine: the last results finish their audit rows */
	jobs_free(jobs);          /* after the engine: its callbacks write into the jobs */
	cluster_stop(cluster);    /* after the poller that asks it; removes this instance's row */
	guard_free(guard);        /* after everything that hands it work */
	if (srv && sd) {
		char *url_path = statedir_file(sd, "kilnd.url");

		if (url_path)
			unlink(url_path);
		free(url_path);
		log_info("stopped");
	}
	if (fd >= 0)
		close(fd);
	store_close(st);
	ipmi_helper_stop(); /* after the engine and the consoles that use it */
	tlscert_clear(&tls);
	statedir_close(sd);
	event_limit_free();
	kilnd_config_free(&cfg);
	free(db_path);
	free(cert_path);
	free(key_path);
	return ret;
}
