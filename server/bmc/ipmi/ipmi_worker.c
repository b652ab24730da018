/* SPDX-License-Identifier: Apache-2.0 */
/* The IPMI helper process: reads requests, runs them on a bounded worker pool, answers. */
#include "bmc/ipmi/ipmi_worker.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "bmc/ipmi/ipmi_console.h"
#include "bmc/ipmi/ipmi_ops.h"
#include "bmc/ipmi/ipmi_sessions.h"
#include "bmc/ipmi/ipmi_wire.h"
#include "kiln/error.h"
#include "kiln/parse.h"

struct job_item {
	json_t *msg;
	const char *key; /* the BMC ("host:port"), borrowed from msg */
	struct job_item *next;
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_mutex_t write_lock;
	struct job_item *head, **tail;
	const char **busy; /* keys of the BMCs a worker is on */
	int nworkers;
	int stop;
	int fd;
	char ipmi_root[PATH_MAX];
	char sdr_root[PATH_MAX];
} W = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.cond = PTHREAD_COND_INITIALIZER,
	.write_lock = PTHREAD_MUTEX_INITIALIZER,
};

static int key_busy(const char *key)
{
	for (int i = 0; i < W.nworkers; i++)
		if (W.busy[i] && strcmp(W.busy[i], key) == 0)
			return 1;
	return 0;
}

/* Takes the first queued job whose BMC is free; NULL when none. Called locked. */
static struct job_item *queue_take(void)
{
	struct job_item **pp;

	for (pp = &W.head; *pp; pp = &(*pp)->next) {
		struct job_item *it = *pp;

		if (key_busy(it->key))
			continue;
		*pp = it->next;
		if (W.tail == &it->next)
			W.tail = pp;
		it->next = NULL;
		return it;
	}
	return NULL;
}

static const char *str_or(json_t *msg, const char *key, const char *dflt)
{
	const char *s = json_string_value(json_object_get(msg, key));

	return s ? s : dflt;
}

static json_int_t int_or(json_t *msg, const char *key, json_int_t dflt)
{
	json_t *v = json_object_get(msg, key);

	return json_is_integer(v) ? json_integer_value(v) : dflt;
}

/* A folder name from the node's name: [A-Za-z0-9._-] kept, anything else '_'. */
static void sdr_dir_for(char *out, size_t outlen, const char *node)
{
	char name[128];
	size_t i;

	for (i = 0; node[i] && i < sizeof(name) - 1; i++) {
		char c = node[i];
		int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			 c == '.' || c == '-' || c == '_';

		name[i] = ok ? c : '_';
	}
	name[i] = '\0';
	if (i == 0 || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		kiln_strlcpy(name, "_", sizeof(name));
	if (snprintf(out, outlen, "%s/%s", W.sdr_root, name) >= (int)outlen)
		kiln_strlcpy(out, W.sdr_root, outlen); /* a state dir that long shares one cache */
}

static void job_execute(json_t *msg)
{
	struct ipmi_job job;
	char sdr_dir[PATH_MAX];
	json_t *data = NULL, *reply;
	char err[512];
	int rc;

	memset(&job, 0, sizeof(job));
	job.op = str_or(msg, "op", "");
	job.node = str_or(msg, "node", "?");
	job.host = str_or(msg, "host", "");
	job.user = str_or(msg, "user", "");
	job.password = str_or(msg, "password", "");
	job.cipher = (int)int_or(msg, "cipher", 3);
	job.privilege = (int)int_or(msg, "privilege", 2);
	job.wa_session = (unsigned int)int_or(msg, "wa_session", 0);
	job.wa_monitoring = (unsigned int)int_or(msg, "wa_monitoring", 0);
	job.timeout_ms = (long)int_or(msg, "timeout_ms", 5000);
	job.action_timeout_ms = (long)int_or(msg, "action_timeout_ms", 60000);
	job.action = str_or(msg, "action", "");
	job.on_if_off = (int)int_or(msg, "on_if_off", 0);
	job.boot = str_or(msg, "boot", "");
	job.persistent = (int)int_or(msg, "persistent", 0);
	job.sel_since = int_or(msg, "sel_since", 0);
	job.sel_after_id = int_or(msg, "sel_after_id", 0);
	sdr_dir_for(sdr_dir, sizeof(sdr_dir), job.node);
	job.sdr_dir = sdr_dir;
	/* kilnd may start the helper before its state dir exists: make the cache path now */
	(void)mkdir(W.ipmi_root, 0700);
	(void)mkdir(W.sdr_root, 0700);

	kiln_error_clear();
	rc = ipmi_job_run(&data, &job);
	if (rc == KILN_EAUTH) {
		/* BMCs lock an address out after repeated failures: one more try only */
		struct timespec pause = {0, 200 * 1000000L};

		nanosleep(&pause, NULL);
		kiln_error_clear();
		rc = ipmi_job_run(&data, &job);
	}
	if (rc < 0)
		snprintf(err, sizeof(err), "ipmi: %s: %s", job.node, kiln_error_last());
	else
		err[0] = '\0';
	reply = json_pack("{s:O, s:i, s:s, s:o}", "id", json_object_get(msg, "id"), "rc", rc,
			  "error", err, "data", data ? data : json_null());
	pthread_mutex_lock(&W.write_lock);
	if (reply)
		(void)ipmi_wire_send(W.fd, reply);
	pthread_mutex_unlock(&W.write_lock);
	json_decref(reply);
}

/* Console sessions answer through this (their own threads, the same socket). */
static int frame_send(json_t *msg)
{
	int rc;

	pthread_mutex_lock(&W.write_lock);
	rc = ipmi_wire_send(W.fd, msg);
	pthread_mutex_unlock(&W.write_lock);
	return rc;
}

static void *worker_thread(void *arg)
{
	int slot = (int)(intptr_t)arg;

	pthread_mutex_lock(&W.lock);
	for (;;) {
		struct job_item *it;

		while (!W.stop && !(it = queue_take()))
			pthread_cond_wait(&W.cond, &W.lock);
		if (W.stop)
			break;
		W.busy[slot] = it->key;
		pthread_mutex_unlock(&W.lock);

		job_execute(it->msg);

		pthread_mutex_lock(&W.lock);
		W.busy[slot] = NULL;
		ipmi_wire_msg_free(it->msg);
		free(it);
		pthread_cond_broadcast(&W.cond);
	}
	pthread_mutex_unlock(&W.lock);
	return NULL;
}

int ipmi_worker_main(int fd, const char *state_dir, int workers, long session_idle_ms)
{
	W.fd = fd;
	W.nworkers = workers > 0 ? workers : 64;
	W.tail = &W.head;
	W.busy = calloc((size_t)W.nworkers, sizeof(*W.busy));
	if (!W.busy)
		return 1;
	if (snprintf(W.ipmi_root, sizeof(W.ipmi_root), "%s/ipmi", state_dir) >= (int)sizeof(W.ipmi_root) ||
	    snprintf(W.sdr_root, sizeof(W.sdr_root), "%s/ipmi/sdr", state_dir) >= (int)sizeof(W.sdr_root)) {
		fprintf(stderr, "kilnd ipmi helper: state dir path too long\n");
		return 1;
	}
	ipmi_console_setup(frame_send);
	if (ipmi_monitor_init() < 0) {
		fprintf(stderr, "kilnd ipmi helper: %s\n", kiln_error_last());
		return 1;
	}
	if (ipmi_sessions_start(session_idle_ms == 0 ? IPMI_SESSIONS_IDLE_MS : session_idle_ms) < 0)
		fprintf(stderr, "kilnd ipmi helper: no session expiry thread; sessions are not kept\n");
	for (int i = 0; i < W.nworkers; i++) {
		pthread_t t;
		pthread_attr_t attr;

		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		if (pthread_create(&t, &attr, worker_thread, (void *)(intptr_t)i) != 0) {
			pthread_attr_destroy(&attr);
			if (i == 0)
				return 1;
			W.nworkers = i; /* fewer workers; never more than asked */
			break;
		}
		pthread_attr_destroy(&attr);
	}
	for (;;) {
		json_t *msg = NULL;
		struct job_item *it;
		int rc = ipmi_wire_recv(fd, &msg);

		if (rc != 0)
			break; /* kilnd closed its end (or is gone): stop */
		if (ipmi_console_request(msg)) {
			ipmi_wire_msg_free(msg);
			continue;
		}
		it = calloc(1, sizeof(*it));
		if (!it) {
			json_decref(msg);
			break;
		}
		it->msg = msg;
		it->key = str_or(msg, "host", "");
		pthread_mutex_lock(&W.lock);
		*W.tail = it;
		W.tail = &it->next;
		pthread_cond_broadcast(&W.cond);
		pthread_mutex_unlock(&W.lock);
	}
	/* jobs in flight are abandoned: kilnd has already failed them; their sessions are not
	 * kept (a put after the stop closes), the BMC times out those still in use */
	ipmi_console_shutdown();
	ipmi_sessions_stop();
	return 0;
}
