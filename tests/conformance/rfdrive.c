/* SPDX-License-Identifier: Apache-2.0 */
/* kiln-rfdrive: runs one BMC operation through kilnd's BMC engine against one or more BMCs
 * and prints a JSON array of results (test driver for the conformance and Redfish tests). */
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bmc/bmc.h"
#include "kiln/error.h"
#include "kiln/parse.h"
#include "store/store.h"

#define MAX_TARGETS 256

struct slot {
	pthread_mutex_t *lock;
	pthread_cond_t *cond;
	int *remaining;
	struct bmc_result res;
	int64_t elapsed_ms;
	int64_t started_ms;
	int seq;                    /* the order the operations of a round ended in, from 1 */
};

static int done_seq;

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void on_done(void *ud, const struct bmc_result *res)
{
	struct slot *s = ud;
	pthread_mutex_lock(s->lock);
	s->res.rc = res->rc;
	memcpy(s->res.error, res->error, sizeof(s->res.error));
	s->res.data = res->data ? json_incref(res->data) : NULL;
	s->elapsed_ms = now_ms() - s->started_ms;
	s->seq = ++done_seq;
	(*s->remaining)--;
	pthread_cond_broadcast(s->cond);
	pthread_mutex_unlock(s->lock);
}

/* Submits op on t into slot s, counted in *remaining (a refusal is its result at once). */
static void submit(struct bmc_engine *e, const struct bmc_target *t, const struct bmc_op *op,
		   struct slot *s, pthread_mutex_t *lock, pthread_cond_t *cond, int *remaining)
{
	json_decref(s->res.data);
	memset(s, 0, sizeof(*s));
	s->lock = lock;
	s->cond = cond;
	s->remaining = remaining;
	s->started_ms = now_ms();
	pthread_mutex_lock(lock);
	(*remaining)++;
	pthread_mutex_unlock(lock);
	if (bmc_submit(e, t, op, on_done, s) < 0) {
		s->res.rc = KILN_EINVAL;
		snprintf(s->res.error, sizeof(s->res.error), "%s", kiln_error_last());
		pthread_mutex_lock(lock);
		(*remaining)--;
		pthread_mutex_unlock(lock);
	}
}

/* A slot's result as {"elapsed_ms", "seq", "error" or the result's members}; releases it. */
static json_t *slot_json(struct slot *s)
{
	json_t *o = json_object();
	json_object_set_new(o, "elapsed_ms", json_integer(s->elapsed_ms));
	json_object_set_new(o, "seq", json_integer(s->seq));
	if (s->res.rc < 0)
		json_object_set_new(o, "error", json_string(s->res.error));
	else if (s->res.data)
		json_object_update(o, s->res.data);
	json_decref(s->res.data);
	s->res.data = NULL;
	return o;
}

static int parse_url(struct bmc_target *t, const char *url, char *host, size_t hostlen)
{
	const char *rest;
	if (strncmp(url, "redfish+http://", 15) == 0) {
		t->protocol = BMC_REDFISH_HTTP;
		rest = url + 15;
	} else if (strncmp(url, "redfish://", 10) == 0) {
		t->protocol = BMC_REDFISH;
		rest = url + 10;
	} else {
		return kiln_fail(KILN_EINVAL, "--url: want redfish://HOST[:PORT] or "
				 "redfish+http://HOST:PORT, not '%s'", url);
	}
	const char *colon = strrchr(rest, ':');
	size_t n = colon ? (size_t)(colon - rest) : strlen(rest);
	if (n == 0 || n >= hostlen)
		return kiln_fail(KILN_EINVAL, "--url: bad host in '%s'", url);
	memcpy(host, rest, n);
	host[n] = '\0';
	t->host = host;
	t->port = 0;
	if (colon && kiln_parse_int(&t->port, colon + 1, 1, 65535) < 0)
		return kiln_fail_prefix(KILN_EINVAL, "--url port");
	return 0;
}

static int parse_op(struct bmc_op *op, int argc, char **argv)
{
	if (argc < 1)
		return kiln_fail(KILN_EINVAL, "missing operation");
	const char *k = argv[0];
	const char *arg = argc > 1 ? argv[1] : NULL;
	if (strcmp(k, "power-get") == 0) {
		op->kind = BMC_OP_POWER_GET;
	} else if (strcmp(k, "power") == 0 && arg) {
		static const char *const names[] = {"on", "off", "soft", "reset", "cycle"};
		op->kind = BMC_OP_POWER_ACTION;
		size_t i;
		for (i = 0; i < 5 && strcmp(arg, names[i]) != 0; i++)
			;
		if (i == 5)
			return kiln_fail(KILN_EINVAL, "power: unknown action '%s'", arg);
		op->action = (enum bmc_power_action)i;
	} else if (strcmp(k, "boot") == 0 && arg) {
		static const char *const names[] = {"pxe", "cd", "disk", "bios"};
		op->kind = BMC_OP_BOOT_SET;
		size_t i;
		for (i = 0; i < 4 && strcmp(arg, names[i]) != 0; i++)
			;
		if (i == 4)
			return kiln_fail(KILN_EINVAL, "boot: unknown device '%s'", arg);
		op->boot = (enum bmc_boot_device)i;
	} else if (strcmp(k, "media-insert") == 0 && arg) {
		op->kind = BMC_OP_MEDIA_INSERT;
		op->media_url = arg;
	} else if (strcmp(k, "media-eject") == 0) {
		op->kind = BMC_OP_MEDIA_EJECT;
	} else if (strcmp(k, "media-status") == 0) {
		op->kind = BMC_OP_MEDIA_STATUS;
	} else if (strcmp(k, "sensors") == 0) {
		op->kind = BMC_OP_SENSORS;
	} else if (strcmp(k, "sel") == 0) {
		op->kind = BMC_OP_SEL;
	} else if (strcmp(k, "inventory") == 0) {
		op->kind = BMC_OP_INVENTORY;
	} else {
		return kiln_fail(KILN_EINVAL, "unknown operation '%s'", k);
	}
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: kiln-rfdrive --url URL [--url URL ...] [--user U] [--password P]\n"
		"         [--system ID] [--insecure] [--ca FILE] [--url-ca FILE] [--fingerprint SHA256]\n"
		"         [--url-fingerprint SHA256]\n"
		"         [--timeout-ms N] [--status-timeout-ms N] [--action-timeout-ms N]\n"
		"         [--fanout N] [--repeat N]\n"
		"         [--on-if-off] [--persistent] [--force] [--since UNIX] [--pause-ms N]\n"
		"         [--beside power-get|sensors|sel|inventory]\n"
		"         power-get | power on|off|soft|reset|cycle | boot pxe|cd|disk|bios |\n"
		"         media-insert URL | media-eject | media-status | sensors | sel | inventory\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"url", required_argument, NULL, 'u'},
		{"user", required_argument, NULL, 'U'},
		{"password", required_argument, NULL, 'P'},
		{"system", required_argument, NULL, 's'},
		{"insecure", no_argument, NULL, 'k'},
		{"ca", required_argument, NULL, 'c'},
		{"url-ca", required_argument, NULL, 'C'}, /* the CA of the --url before it */
		{"url-fingerprint", required_argument, NULL, 'G'}, /* its pin */
		{"fingerprint", required_argument, NULL, 'f'},
		{"timeout-ms", required_argument, NULL, 't'},
		{"status-timeout-ms", required_argument, NULL, 'T'},
		{"action-timeout-ms", required_argument, NULL, 'a'},
		{"fanout", required_argument, NULL, 'F'},
		{"repeat", required_argument, NULL, 'r'},
		{"on-if-off", no_argument, NULL, 'o'},
		{"persistent", no_argument, NULL, 'p'},
		{"force", no_argument, NULL, 'x'}, /* media-insert over an inserted image */
		{"since", required_argument, NULL, 'S'},
		{"pause-ms", required_argument, NULL, 'z'},
		{"beside", required_argument, NULL, 'b'}, /* a background read first, each round */
		{NULL, 0, NULL, 0},
	};
	const char *urls[MAX_TARGETS];
	const char *url_cas[MAX_TARGETS] = {0}, *url_fps[MAX_TARGETS] = {0};
	size_t nurls = 0;
	const char *user = "admin", *password = "password", *system = NULL;
	const char *ca = NULL, *fp = NULL;
	int insecure = 0, repeat = 1, fanout = 64, pause_ms = 0;
	int64_t since = 0;
	long timeout_ms = 5000, status_ms = 0, action_ms = 60000;
	struct bmc_op op = {0}, bg = {0};
	int beside = 0;
	int c;

	while ((c = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
		int rc = 0;
		switch (c) {
		case 'u':
			if (nurls == MAX_TARGETS) {
				fprintf(stderr, "kiln-rfdrive: too many --url\n");
				return 2;
			}
			urls[nurls++] = optarg;
			break;
		case 'U': user = optarg; break;
		case 'P': password = optarg; break;
		case 's': system = optarg; break;
		case 'k': insecure = 1; break;
		case 'c': ca = optarg; break;
		case 'C':
			if (nurls == 0) {
				fprintf(stderr, "kiln-rfdrive: --url-ca before any --url\n");
				return 2;
			}
			url_cas[nurls - 1] = optarg;
			break;
		case 'G':
			if (nurls == 0) {
				fprintf(stderr, "kiln-rfdrive: --url-fingerprint before any --url\n");
				return 2;
			}
			url_fps[nurls - 1] = optarg;
			break;
		case 'f': fp = optarg; break;
		case 't': {
			int64_t v;
			rc = kiln_parse_int64(&v, optarg, 1, 600000);
			timeout_ms = (long)v;
			break;
		}
		case 'T': {
			int64_t v;
			rc = kiln_parse_int64(&v, optarg, 1, 600000);
			status_ms = (long)v;
			break;
		}
		case 'a': {
			int64_t v;
			rc = kiln_parse_int64(&v, optarg, 1, 3600000);
			action_ms = (long)v;
			break;
		}
		case 'F': rc = kiln_parse_int(&fanout, optarg, 1, 10000); break;
		case 'r': rc = kiln_parse_int(&repeat, optarg, 1, 100000); break;
		case 'o': op.on_if_off = 1; break;
		case 'p': op.persistent = 1; break;
		case 'x': op.force = 1; break;
		case 'S': rc = kiln_parse_int64(&since, optarg, 0, INT64_MAX); break;
		case 'z': rc = kiln_parse_int(&pause_ms, optarg, 0, 600000); break;
		case 'b':
			rc = parse_op(&bg, 1, &optarg);
			bg.background = 1;
			beside = 1;
			break;
		default: usage(); return 2;
		}
		if (rc < 0) {
			fprintf(stderr, "kiln-rfdrive: %s\n", kiln_error_last());
			return 2;
		}
	}
	if (nurls == 0 || parse_op(&op, argc - optind, argv + optind) < 0) {
		if (kiln_error_last()[0])
			fprintf(stderr, "kiln-rfdrive: %s\n", kiln_error_last());
		usage();
		return 2;
	}
	op.sel_since = since;

	static char hosts[MAX_TARGETS][256];
	static char names[MAX_TARGETS][32];
	struct bmc_target targets[MAX_TARGETS];
	memset(targets, 0, sizeof(targets));
	for (size_t i = 0; i < nurls; i++) {
		struct bmc_target *t = &targets[i];
		if (parse_url(t, urls[i], hosts[i], sizeof(hosts[i])) < 0) {
			fprintf(stderr, "kiln-rfdrive: %s\n", kiln_error_last());
			return 2;
		}
		snprintf(names[i], sizeof(names[i]), "n%zu", i + 1);
		t->node_id = (int64_t)i + 1;
		t->node_name = names[i];
		t->user = user;
		t->password = password;
		const char *t_ca = url_cas[i] ? url_cas[i] : url_fps[i] ? NULL : ca;
		const char *t_fp = url_fps[i] ? url_fps[i] : fp;
		t->tls_mode = insecure ? TLS_INSECURE : t_ca ? TLS_CA : t_fp ? TLS_FINGERPRINT : TLS_VERIFY;
		t->tls_ca_file = t_ca;
		t->tls_fingerprint = t_fp;
		t->bmc_system = system;
		t->credentials_version = 1;
	}

	struct bmc_engine *e = NULL;
	struct bmc_engine_config cfg = {
		.fanout = fanout,
		.connect_timeout_ms = timeout_ms,
		.request_timeout_ms = timeout_ms,
		.status_timeout_ms = status_ms,
		.action_timeout_ms = action_ms,
	};
	if (bmc_engine_start(&e, &cfg) < 0) {
		fprintf(stderr, "kiln-rfdrive: %s\n", kiln_error_last());
		return 1;
	}

	pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
	static struct slot slots[MAX_TARGETS], bslots[MAX_TARGETS];
	int failed = 0;
	for (int round = 0; round < repeat; round++) {
		int remaining = 0;
		if (round > 0 && pause_ms > 0) {
			struct timespec ts = {pause_ms / 1000, (long)(pause_ms % 1000) * 1000000L};
			nanosleep(&ts, NULL);
		}
		done_seq = 0;
		for (size_t i = 0; i < nurls; i++) {
			if (beside)
				submit(e, &targets[i], &bg, &bslots[i], &lock, &cond, &remaining);
			submit(e, &targets[i], &op, &slots[i], &lock, &cond, &remaining);
		}
		pthread_mutex_lock(&lock);
		while (remaining > 0)
			pthread_cond_wait(&cond, &lock);
		pthread_mutex_unlock(&lock);
		for (size_t i = 0; i < nurls; i++)
			if (slots[i].res.rc < 0 || (beside && bslots[i].res.rc < 0))
				failed++;
	}

	json_t *out = json_array();
	for (size_t i = 0; i < nurls; i++) {
		json_t *o = slot_json(&slots[i]);
		json_object_set_new(o, "node", json_string(names[i]));
		if (beside)
			json_object_set_new(o, "background", slot_json(&bslots[i]));
		json_array_append_new(out, o);
	}
	char *text = json_dumps(out, JSON_INDENT(1));
	json_decref(out);
	bmc_engine_stop(e); /* deletes the sessions */
	if (text) {
		puts(text);
		free(text);
	}
	return failed ? 3 : 0;
}
