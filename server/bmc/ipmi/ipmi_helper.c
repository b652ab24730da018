/* SPDX-License-Identifier: Apache-2.0 */
/* kilnd's side of the IPMI helper: a launcher forked early, the reply reader, restarts. */
#include "bmc/ipmi/ipmi.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <time.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bmc/ipmi/ipmi_options.h"
#include "bmc/ipmi/ipmi_sol.h"
#include "bmc/ipmi/ipmi_wire.h"
#include "bmc/ipmi/ipmi_worker.h"
#include "kiln/error.h"
#include "kiln/parse.h"

/*
 * Process layout: ipmi_helper_start() forks a launcher while kilnd is small (few
 * descriptors, one thread). The launcher stays single-threaded and forks a helper on
 * request, handing kilnd its end of a fresh socketpair (SCM_RIGHTS). So a helper started
 * again after a crash still starts from a process with low descriptor numbers, never from
 * kilnd with its thousands of sockets and threads.
 */

struct pending {
	int64_t id;
	int64_t node_id;
	int64_t credentials_version;
	enum bmc_op_kind kind;
	char node[128];
	bmc_done_fn done;
	void *ud;
	struct pending *next;
};

struct node_mark {
	int64_t node_id;
	int64_t rejected_version; /* -1: not rejected */
	int has_rejected;
	int64_t sel_last_id;      /* 0: not read yet */
};

static struct {
	pthread_mutex_t lock;       /* everything below but the socket writes */
	pthread_mutex_t write_lock; /* frames on fd */
	pthread_cond_t respawned;   /* signalled when a new helper is up (fd >= 0) */
	int started;
	int stopping;
	int launcher_fd;
	pid_t launcher_pid;
	int fd;            /* current helper, -1 while none */
	pid_t helper_pid;
	int64_t next_id;
	struct pending *pending;
	struct node_mark *marks;
	size_t nmarks, capmarks;
	pthread_t reader;
} H = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.write_lock = PTHREAD_MUTEX_INITIALIZER,
	.respawned = PTHREAD_COND_INITIALIZER,
	.launcher_fd = -1,
	.fd = -1,
	.next_id = 1,
};

/* ---- the launcher (runs in the forked child) ---- */

static void close_all_but(int keep)
{
	if (keep > 3)
		(void)close_range(3, (unsigned int)keep - 1, 0);
	(void)close_range((unsigned int)keep + 1, ~0u, 0);
}

static void child_signals(void)
{
	sigset_t none;

	sigemptyset(&none); /* kilnd blocks the signals it sigwait()s for */
	pthread_sigmask(SIG_SETMASK, &none, NULL);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	signal(SIGPIPE, SIG_IGN);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
}

static int send_fd(int sock, int fd, pid_t pid)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	int32_t payload = (int32_t)pid;
	struct iovec iov = {&payload, sizeof(payload)};
	struct msghdr mh;
	struct cmsghdr *cm;

	memset(&mh, 0, sizeof(mh));
	memset(cbuf, 0, sizeof(cbuf));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cbuf;
	mh.msg_controllen = sizeof(cbuf);
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return sendmsg(sock, &mh, MSG_NOSIGNAL) == (ssize_t)sizeof(payload) ? 0 : -1;
}

static void launcher_main(int ctl, const char *state_dir, int workers, long session_idle_ms)
{
	signal(SIGCHLD, SIG_IGN); /* helpers are reaped by the kernel */
	for (;;) {
		char cmd;
		ssize_t r = read(ctl, &cmd, 1);
		int sv[2];
		pid_t pid;

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			_exit(0);
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
			(void)send_fd(ctl, -1, -1);
			continue;
		}
		pid = fork();
		if (pid == 0) {
			close(ctl);
			close(sv[0]);
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			_exit(ipmi_worker_main(sv[1], state_dir, workers, session_idle_ms));
		}
		if (pid < 0 || send_fd(ctl, sv[0], pid) < 0) {
			if (pid > 0)
				kill(pid, SIGKILL);
		}
		close(sv[0]);
		close(sv[1]);
	}
}

/* ---- kilnd's side ---- */

/* Asks the launcher for a fresh helper; sets H.fd and H.helper_pid. Called with H.lock. */
static int helper_spawn(void)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	int32_t pid = -1;
	struct iovec iov = {&pid, sizeof(pid)};
	struct msghdr mh;
	struct cmsghdr *cm;
	ssize_t r;
	int fd = -1;

	if (H.launcher_fd < 0)
		return kiln_fail(KILN_ERROR, "ipmi: helper launcher is gone");
	if (send(H.launcher_fd, "S", 1, MSG_NOSIGNAL) != 1)
		return kiln_fail(KILN_ERROR, "ipmi: helper launcher: %s", strerror(errno));
	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cbuf;
	mh.msg_controllen = sizeof(cbuf);
	do
		r = recvmsg(H.launcher_fd, &mh, MSG_CMSG_CLOEXEC);
	while (r < 0 && errno == EINTR);
	if (r != (ssize_t)sizeof(pid))
		return kiln_fail(KILN_ERROR, "ipmi: helper launcher did not answer");
	cm = CMSG_FIRSTHDR(&mh);
	if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
		memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	if (fd < 0 || pid <= 0) {
		if (fd >= 0)
			close(fd);
		return kiln_fail(KILN_ERROR, "ipmi: helper launcher could not start a helper");
	}
	H.fd = fd;
	H.helper_pid = pid;
	pthread_cond_broadcast(&H.respawned);
	return 0;
}

static struct node_mark *mark_find(int64_t node_id, int create)
{
	for (size_t i = 0; i < H.nmarks; i++)
		if (H.marks[i].node_id == node_id)
			return &H.marks[i];
	if (!create)
		return NULL;
	if (H.nmarks == H.capmarks) {
		size_t cap = H.capmarks ? H.capmarks * 2 : 64;
		struct node_mark *m = realloc(H.marks, cap * sizeof(*m));

		if (!m)
			return NULL;
		H.marks = m;
		H.capmarks = cap;
	}
	memset(&H.marks[H.nmarks], 0, sizeof(H.marks[0]));
	H.marks[H.nmarks].node_id = node_id;
	return &H.marks[H.nmarks++];
}

static void result_fail(struct bmc_result *res, int rc, const char *node, const char *why)
{
	memset(res, 0, sizeof(*res));
	res->rc = rc;
	snprintf(res->error, sizeof(res->error), "ipmi: %s: %s", node, why);
}

/* Fails every pending request with why. Called with H.lock; calls done without it. */
static void pending_fail_all(const char *why)
{
	struct pending *list = H.pending;

	H.pending = NULL;
	pthread_mutex_unlock(&H.lock);
	while (list) {
		struct pending *p = list;
		struct bmc_result res;

		list = p->next;
		result_fail(&res, KILN_ERROR, p->node, why);
		p->done(p->ud, &res);
		free(p);
	}
	pthread_mutex_lock(&H.lock);
}

static void reply_dispatch(json_t *msg)
{
	json_int_t id = json_integer_value(json_object_get(msg, "id"));
	struct pending **pp, *p = NULL;
	struct bmc_result res;
	json_t *data;

	if (json_object_get(msg, "console")) {
		ipmi_sol_dispatch(msg);
		return;
	}
	pthread_mutex_lock(&H.lock);
	for (pp = &H.pending; *pp; pp = &(*pp)->next) {
		if ((*pp)->id == id) {
			p = *pp;
			*pp = p->next;
			break;
		}
	}
	if (!p) {
		pthread_mutex_unlock(&H.lock);
		return;
	}
	memset(&res, 0, sizeof(res));
	res.rc = (int)json_integer_value(json_object_get(msg, "rc"));
	if (res.rc > 0 || res.rc < KILN_ENEWER)
		res.rc = KILN_ERROR;
	kiln_strlcpy(res.error, json_string_value(json_object_get(msg, "error")) ?
			 json_string_value(json_object_get(msg, "error")) : "", sizeof(res.error));
	data = json_object_get(msg, "data");
	if (res.rc == KILN_EAUTH) {
		struct node_mark *m = mark_find(p->node_id, 1);

		if (m) {
			m->has_rejected = 1;
			m->rejected_version = p->credentials_version;
		}
	}
	if (res.rc == 0 && p->kind == BMC_OP_SEL && json_is_object(data)) {
		struct node_mark *m = mark_find(p->node_id, 1);
		json_int_t last = json_integer_value(json_object_get(data, "last_record_id"));

		if (m && last > 0)
			m->sel_last_id = last;
	}
	pthread_mutex_unlock(&H.lock);
	if (res.rc == 0 && !json_is_null(data))
		res.data = json_incref(data);
	p->done(p->ud, &res);
	json_decref(res.data);
	free(p);
}

static void *reader_thread(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&H.lock);
	while (!H.stopping) {
		struct pollfd pfd;
		json_t *msg = NULL;
		int fd = H.fd, rc;

		if (fd < 0) {
			if (helper_spawn() < 0) {
				pending_fail_all("ipmi helper is not running; request failed");
				pthread_mutex_unlock(&H.lock);
				sleep(1);
				pthread_mutex_lock(&H.lock);
			}
			continue;
		}
		pthread_mutex_unlock(&H.lock);
		pfd.fd = fd;
		pfd.events = POLLIN;
		pfd.revents = 0;
		rc = poll(&pfd, 1, 500);
		if (rc > 0)
			rc = ipmi_wire_recv(fd, &msg);
		else
			rc = rc < 0 && errno != EINTR ? KILN_ERROR : 0;
		if (msg) {
			reply_dispatch(msg);
			json_decref(msg);
		}
		pthread_mutex_lock(&H.lock);
		if (rc == 0)
			continue;
		/* the helper is gone (or spoke garbage): fail what it held, start another */
		pthread_mutex_lock(&H.write_lock);
		close(H.fd);
		H.fd = -1;
		pthread_mutex_unlock(&H.write_lock);
		if (H.helper_pid > 0)
			kill(H.helper_pid, SIGKILL);
		H.helper_pid = 0;
		pending_fail_all(H.stopping ? "ipmi helper stopped; request failed"
					    : "ipmi helper died; request failed (helper restarted)");
		{
			const char *why = H.stopping ? "ipmi helper stopped" : "ipmi helper died";

			pthread_mutex_unlock(&H.lock);
			ipmi_sol_fail_all(why);
			pthread_mutex_lock(&H.lock);
		}
	}
	pending_fail_all("ipmi helper stopped; request failed");
	pthread_mutex_unlock(&H.lock);
	ipmi_sol_fail_all("ipmi helper stopped");
	return NULL;
}

int ipmi_helper_start(const struct ipmi_helper_config *cfg)
{
	int sv[2];
	pid_t pid;
	int rc;

	if (H.started)
		return kiln_fail(KILN_EINVAL, "ipmi: helper already started");
	if (!cfg || !cfg->state_dir)
		return kiln_fail(KILN_EINVAL, "ipmi: helper needs a state dir");
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return kiln_fail(KILN_ERROR, "ipmi: socketpair: %s", strerror(errno));
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		close(sv[0]);
		close(sv[1]);
		return kiln_fail(KILN_ERROR, "ipmi: fork: %s", strerror(errno));
	}
	if (pid == 0) {
		int ctl = sv[1];

		close(sv[0]);
		child_signals();
		close_all_but(ctl);
		launcher_main(ctl, cfg->state_dir, cfg->workers, cfg->session_idle_ms);
		_exit(0);
	}
	close(sv[1]);
	H.launcher_fd = sv[0];
	H.launcher_pid = pid;
	H.stopping = 0;
	pthread_mutex_lock(&H.lock);
	rc = helper_spawn();
	pthread_mutex_unlock(&H.lock);
	if (rc < 0)
		goto fail;
	if (pthread_create(&H.reader, NULL, reader_thread, NULL) != 0) {
		rc = kiln_fail(KILN_ERROR, "ipmi: cannot start the reply thread");
		goto fail;
	}
	H.started = 1;
	return 0;
fail:
	if (H.fd >= 0)
		close(H.fd);
	H.fd = -1;
	close(H.launcher_fd);
	H.launcher_fd = -1;
	waitpid(H.launcher_pid, NULL, 0);
	return rc;
}

/* How long kilnd's stop waits for the helper to close its kept sessions. */
#define HELPER_STOP_WAIT_MS 3000

/* Waits until process pid is gone (the launcher's child: reaped by the kernel) or ms pass. */
static void helper_wait_exit(pid_t pid, long ms)
{
	struct timespec step = {0, 10 * 1000000L};

	for (long waited = 0; waited < ms && kill(pid, 0) == 0; waited += 10)
		nanosleep(&step, NULL);
}

void ipmi_fail_pending(const char *why)
{
	pthread_mutex_lock(&H.lock);
	pending_fail_all(why);
	pthread_mutex_unlock(&H.lock);
}

void ipmi_helper_stop(void)
{
	if (!H.started)
		return;
	pthread_mutex_lock(&H.lock);
	H.stopping = 1;
	pthread_cond_broadcast(&H.respawned);
	pthread_mutex_unlock(&H.lock);
	pthread_join(H.reader, NULL);
	pthread_mutex_lock(&H.lock);
	if (H.fd >= 0) {
		shutdown(H.fd, SHUT_RDWR);
		close(H.fd);
	}
	H.fd = -1;
	/* the helper closes its kept sessions once it sees the socket closed: give it that
	 * time (bounded), then end it; the launcher goes last, as its exit kills the helper */
	if (H.helper_pid > 0) {
		helper_wait_exit(H.helper_pid, HELPER_STOP_WAIT_MS);
		kill(H.helper_pid, SIGTERM);
	}
	H.helper_pid = 0;
	close(H.launcher_fd);
	H.launcher_fd = -1;
	waitpid(H.launcher_pid, NULL, 0);
	free(H.marks);
	H.marks = NULL;
	H.nmarks = H.capmarks = 0;
	H.started = 0;
	pthread_mutex_unlock(&H.lock);
}

int ipmi_helper_send(const json_t *msg)
{
	int fd, rc;

	pthread_mutex_lock(&H.lock);
	fd = H.started ? H.fd : -1;
	pthread_mutex_unlock(&H.lock);
	if (fd < 0)
		return kiln_fail(KILN_ERROR, "ipmi helper is not running");
	pthread_mutex_lock(&H.write_lock);
	rc = H.fd == fd ? ipmi_wire_send(fd, msg) : kiln_fail(KILN_ERROR, "ipmi helper died");
	pthread_mutex_unlock(&H.write_lock);
	return rc;
}

int ipmi_helper_running(void)
{
	int up;

	pthread_mutex_lock(&H.lock);
	up = H.started && H.fd >= 0;
	pthread_mutex_unlock(&H.lock);
	return up;
}

int ipmi_helper_pid(void)
{
	int pid;

	pthread_mutex_lock(&H.lock);
	pid = (int)H.helper_pid;
	pthread_mutex_unlock(&H.lock);
	return pid;
}

static const char *action_name(enum bmc_power_action a)
{
	switch (a) {
	case BMC_ACT_ON:
		return "on";
	case BMC_ACT_OFF:
		return "off";
	case BMC_ACT_SOFT:
		return "soft";
	case BMC_ACT_RESET:
		return "reset";
	case BMC_ACT_CYCLE:
		return "cycle";
	}
	return NULL;
}

static const char *boot_name(enum bmc_boot_device b)
{
	switch (b) {
	case BMC_BOOT_PXE:
		return "pxe";
	case BMC_BOOT_CD:
		return "cd";
	case BMC_BOOT_DISK:
		return "disk";
	case BMC_BOOT_BIOS:
		return "bios";
	}
	return NULL;
}

static const char *op_name(enum bmc_op_kind k)
{
	switch (k) {
	case BMC_OP_POWER_GET:
		return "power_get";
	case BMC_OP_POWER_ACTION:
		return "power_action";
	case BMC_OP_BOOT_SET:
		return "boot_set";
	case BMC_OP_SENSORS:
		return "sensors";
	case BMC_OP_SEL:
		return "sel";
	case BMC_OP_INVENTORY:
		return "inventory";
	default:
		return NULL;
	}
}

/* Builds the request message (with id); NULL and a kiln_fail message on bad input. */
static json_t *request_build(const struct bmc_target *t, const struct bmc_op *op,
			     const struct ipmi_limits *limits, int64_t id, int64_t sel_after)
{
	struct ipmi_workarounds wa;
	const char *opname = op_name(op->kind);
	char host[300];
	long timeout = limits && limits->request_timeout_ms > 0 ? limits->request_timeout_ms : 5000;
	long action_timeout = limits && limits->action_timeout_ms > 0 ? limits->action_timeout_ms
								      : 60000;
	int priv, port = t->port > 0 ? t->port : 623;
	json_t *msg;

	if (!opname) {
		kiln_fail(KILN_EINVAL, "ipmi: %s: virtual media is not available over IPMI",
			  t->node_name);
		return NULL;
	}
	if (!t->host || !*t->host || strlen(t->host) > 255) {
		kiln_fail(KILN_EINVAL, "ipmi: %s: no BMC host", t->node_name);
		return NULL;
	}
	if (ipmi_workarounds_parse(&wa, t->ipmi_workarounds) < 0 ||
	    ipmi_privilege_parse(&priv, t->ipmi_privilege) < 0) {
		kiln_fail_prefix(KILN_EINVAL, "ipmi: %s", t->node_name);
		return NULL;
	}
	if (t->port < 0 || t->port > 65535 || t->ipmi_cipher < 0 || t->ipmi_cipher > 17) {
		kiln_fail(KILN_EINVAL, "ipmi: %s: bad port or cipher suite", t->node_name);
		return NULL;
	}
	if (strchr(t->host, ':'))
		snprintf(host, sizeof(host), "[%s]:%d", t->host, port);
	else
		snprintf(host, sizeof(host), "%s:%d", t->host, port);
	msg = json_pack("{s:I, s:s, s:s, s:s, s:s, s:s, s:i, s:i, s:I, s:I, s:I, s:I}",
			"id", (json_int_t)id, "op", opname, "node", t->node_name, "host", host,
			"user", t->user ? t->user : "", "password", t->password ? t->password : "",
			"cipher", t->ipmi_cipher, "privilege", priv,
			"wa_session", (json_int_t)wa.session, "wa_monitoring", (json_int_t)wa.monitoring,
			"timeout_ms", (json_int_t)timeout, "action_timeout_ms", (json_int_t)action_timeout);
	if (!msg) {
		kiln_fail(KILN_ERROR, "ipmi: %s: cannot encode the request", t->node_name);
		return NULL;
	}
	if (op->kind == BMC_OP_POWER_ACTION) {
		const char *a = action_name(op->action);

		if (!a) {
			ipmi_wire_msg_free(msg);
			kiln_fail(KILN_EINVAL, "ipmi: %s: unknown power action", t->node_name);
			return NULL;
		}
		json_object_set_new(msg, "action", json_string(a));
		json_object_set_new(msg, "on_if_off", json_integer(op->on_if_off ? 1 : 0));
	} else if (op->kind == BMC_OP_BOOT_SET) {
		const char *b = boot_name(op->boot);

		if (!b) {
			ipmi_wire_msg_free(msg);
			kiln_fail(KILN_EINVAL, "ipmi: %s: unknown boot device", t->node_name);
			return NULL;
		}
		json_object_set_new(msg, "boot", json_string(b));
		json_object_set_new(msg, "persistent", json_integer(op->persistent ? 1 : 0));
	} else if (op->kind == BMC_OP_SEL) {
		json_object_set_new(msg, "sel_since", json_integer(op->sel_since));
		json_object_set_new(msg, "sel_after_id", json_integer(op->sel_since > 0 ? sel_after : 0));
	}
	return msg;
}

int ipmi_submit(const struct bmc_target *target, const struct bmc_op *op,
		const struct ipmi_limits *limits, bmc_done_fn done, void *ud)
{
	const char *node = target && target->node_name ? target->node_name : "?";
	struct pending *p = NULL;
	struct node_mark *m;
	struct bmc_result res;
	json_t *msg = NULL;
	int64_t sel_after = 0;
	int rejected = 0, fd, rc = 0;

	if (!target || !op || !done)
		return kiln_fail(KILN_EINVAL, "ipmi: submit without target, op or callback");
	p = calloc(1, sizeof(*p));
	if (!p)
		return kiln_fail(KILN_ERROR, "ipmi: out of memory");
	p->node_id = target->node_id;
	p->credentials_version = target->credentials_version;
	p->kind = op->kind;
	p->done = done;
	p->ud = ud;
	kiln_strlcpy(p->node, node, sizeof(p->node));

	pthread_mutex_lock(&H.lock);
	m = mark_find(target->node_id, 0);
	if (m && m->has_rejected && m->rejected_version == target->credentials_version)
		rejected = 1;
	if (m)
		sel_after = m->sel_last_id;
	p->id = H.next_id++;
	pthread_mutex_unlock(&H.lock);

	msg = request_build(target, op, limits, p->id, sel_after);
	if (!msg) {
		free(p);
		return KILN_EINVAL;
	}
	if (rejected) {
		result_fail(&res, KILN_EAUTH, node,
			    "credentials were rejected by the BMC; not tried again until they change");
		goto fail_now;
	}

	pthread_mutex_lock(&H.lock);
	/* A helper that just died is being replaced by the reader: a request arriving in
	 * that moment waits for the new one (bounded) rather than failing. */
	if (H.started && !H.stopping && H.fd < 0) {
		struct timespec until;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += 5;
		while (H.started && !H.stopping && H.fd < 0 &&
		       pthread_cond_timedwait(&H.respawned, &H.lock, &until) == 0)
			;
	}
	fd = H.started ? H.fd : -1;
	if (fd >= 0) {
		p->next = H.pending;
		H.pending = p;
	}
	pthread_mutex_unlock(&H.lock);
	if (fd < 0) {
		result_fail(&res, KILN_ERROR, node, "ipmi helper is not running; request failed");
		goto fail_now;
	}
	pthread_mutex_lock(&H.write_lock);
	rc = H.fd == fd ? ipmi_wire_send(fd, msg) : KILN_ERROR;
	pthread_mutex_unlock(&H.write_lock);
	ipmi_wire_msg_free(msg);
	if (rc < 0) {
		/* the reader notices the dead helper and fails p with the others, unless it did */
		struct pending **pp;
		int mine = 0;

		pthread_mutex_lock(&H.lock);
		for (pp = &H.pending; *pp; pp = &(*pp)->next) {
			if (*pp == p) {
				*pp = p->next;
				mine = 1;
				break;
			}
		}
		pthread_mutex_unlock(&H.lock);
		if (mine) {
			result_fail(&res, KILN_ERROR, node, "ipmi helper died; request failed");
			p->done(p->ud, &res);
			free(p);
		}
	}
	return 0;

fail_now:
	ipmi_wire_msg_free(msg);
	p->done(p->ud, &res);
	free(p);
	return 0;
}
