/* SPDX-License-Identifier: Apache-2.0 */
/* Serial consoles in kilnd: SOL sessions per node shared by capture (a rotated log) and clients. */
#include "fleet/console.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "bmc/bmc.h"
#include "bmc/ipmi/ipmi.h"
#include "cluster/cluster.h"
#include "kiln/buf.h"
#include "kiln/error.h"
#include "kiln/log.h"
#include "kiln/parse.h"

#define LOG_MAX_DEFAULT (1L << 20)
#define CLIENT_OUT_MAX (1u << 20) /* output a slow client has not taken; more is dropped */
#define CLIENT_IN_MAX (64u << 10) /* input typed before the session is up */
#define BACKOFF_MIN_MS 1000
#define BACKOFF_MAX_MS 60000
#define STOP_WAIT_MS 5000

struct console_target {
	struct bmc_target t;
	char *node, *host, *user, *password, *privilege, *workarounds;
};

enum cstate { S_DOWN, S_OPENING, S_UP, S_CLOSING };

struct cnode;

/* One SOL session; the callback's ud, freed when it reports CLOSED. */
struct sess {
	struct cnode *n;
	int64_t credentials_version;
};

struct client {
	struct kiln_buf out; /* serial output for this client */
	int wake[2];
	int done;
	char why[400];
	struct client *next;
};

struct cnode {
	char name[64];
	int capture;        /* stored as on */
	int elsewhere;      /* another instance owns the node: its capture runs there */
	enum cstate state;
	int64_t cid;
	struct sess *sess;
	struct client *clients;
	int log_fd;
	off_t log_size;
	int64_t retry_at_ms;
	long backoff_ms;
	int has_rejected;
	int64_t rejected_version;
	char last_error[400];
	struct cnode *next;
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int started;
	int stopping;
	pthread_t thread;
	char *db_path;
	char *dir; /* STATE/console */
	const struct secret_key *key; /* the state dir's, which outlives the consoles */
	long log_max;
	long timeout_ms;
	struct cnode *nodes;
	int nclients;
	int nsessions;
	int wake[2];
	int shared;              /* several instances may share the store */
	struct cluster *cluster; /* then a node's capture runs on its owner */
	int64_t reconciled_ms;
} M = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.cond = PTHREAD_COND_INITIALIZER,
	.wake = { -1, -1 },
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void pipe_poke(int fd)
{
	ssize_t w = fd >= 0 ? write(fd, "x", 1) : 0;

	(void)w; /* a full pipe already says it */
}

static void pipe_drain(int fd)
{
	char b[64];

	while (read(fd, b, sizeof(b)) > 0)
		;
}

/* ---- targets ---- */

void console_target_free(struct console_target *t)
{
	if (!t)
		return;
	free(t->node);
	free(t->host);
	free(t->user);
	secret_free_string(t->password);
	free(t->privilege);
	free(t->workarounds);
	free(t);
}

/* Wipes t's password once no session open needs it: an attached client may stay for hours,
 * and the helper, not kilnd, holds what the open SOL session needs. */
static void target_forget_password(struct console_target *t)
{
	secret_free_string(t->password);
	t->password = NULL;
	t->t.password = NULL;
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

int console_target_load(struct console_target **out, struct store *st,
			const struct secret_key *key, const char *node)
{
	struct console_target *t = NULL;
	struct node *n = NULL;
	const char *host;
	int port, rc;

	if ((rc = store_node_get(st, &n, node)) < 0)
		return rc;
	if (n->bmc_protocol == BMC_IPMI && n->bmc_host) {
		host = n->bmc_host;
		port = n->bmc_port;
	} else if (n->sol_host) {
		host = n->sol_host;
		port = n->sol_port;
	} else {
		rc = kiln_fail(KILN_EINVAL, "console: %s has no IPMI address (an ipmi:// BMC, or "
			       "--sol ipmi://HOST for a Redfish BMC)", node);
		goto cleanup;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		rc = kiln_fail(KILN_ERROR, "out of memory");
		goto cleanup;
	}
	if (n->bmc_password_enc &&
	    (rc = secret_decrypt(&t->password, key, n->bmc_password_enc, n->bmc_password_enc_len,
				 n->name)) < 0) {
		rc = kiln_fail_prefix(rc, "console: %s: BMC password", node);
		goto cleanup;
	}
	t->node = strdup(n->name);
	t->host = strdup(host);
	t->user = dup_or_null(n->bmc_user);
	t->privilege = dup_or_null(n->ipmi_privilege);
	t->workarounds = dup_or_null(n->ipmi_workarounds);
	if (!t->node || !t->host || (n->bmc_user && !t->user) ||
	    (n->ipmi_privilege && !t->privilege) || (n->ipmi_workarounds && !t->workarounds)) {
		rc = kiln_fail(KILN_ERROR, "out of memory");
		goto cleanup;
	}
	t->t.node_id = n->id;
	t->t.node_name = t->node;
	t->t.protocol = BMC_IPMI;
	t->t.host = t->host;
	t->t.port = port;
	t->t.user = t->user;
	t->t.password = t->password;
	t->t.ipmi_cipher = n->ipmi_cipher;
	t->t.ipmi_privilege = t->privilege;
	t->t.ipmi_workarounds = t->workarounds;
	t->t.credentials_version = n->credentials_version;
	*out = t;
	t = NULL;
cleanup:
	console_target_free(t);
	node_free(n);
	return rc;
}

/* ---- nodes, sessions, the capture log (all called with M.lock) ---- */

static struct cnode *cnode_get(const char *name)
{
	struct cnode *n;

	for (n = M.nodes; n; n = n->next)
		if (strcmp(n->name, name) == 0)
			return n;
	n = calloc(1, sizeof(*n));
	if (!n)
		return NULL;
	kiln_strlcpy(n->name, name, sizeof(n->name));
	n->log_fd = -1;
	n->backoff_ms = BACKOFF_MIN_MS;
	n->next = M.nodes;
	M.nodes = n;
	return n;
}

static void log_close(struct cnode *n)
{
	if (n->log_fd >= 0)
		close(n->log_fd);
	n->log_fd = -1;
}

int console_log_path(char *out, size_t outlen, const char *node, const char *suffix)
{
	if (!M.dir)
		return kiln_fail(KILN_ERROR, "console: not started");
	if (snprintf(out, outlen, "%s/%s.log%s", M.dir, node, suffix) >= (int)outlen)
		return kiln_fail(KILN_EINVAL, "console: the log path of %.64s is too long", node);
	return 0;
}

static void log_open(struct cnode *n)
{
	char path[4096];
	struct stat st;

	if (console_log_path(path, sizeof(path), n->name, "") < 0)
		return;
	(void)mkdir(M.dir, 0700);
	n->log_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	n->log_size = n->log_fd >= 0 && fstat(n->log_fd, &st) == 0 ? st.st_size : 0;
}

static void log_write(struct cnode *n, const unsigned char *p, size_t len)
{
	if (n->log_fd < 0)
		log_open(n);
	if (n->log_fd >= 0 && n->log_size > 0 && n->log_size + (off_t)len > M.log_max) {
		char cur[4096], old[4096];

		log_close(n);
		if (console_log_path(cur, sizeof(cur), n->name, "") == 0 &&
		    console_log_path(old, sizeof(old), n->name, ".1") == 0)
			(void)rename(cur, old);
		log_open(n);
	}
	while (n->log_fd >= 0 && len > 0) {
		ssize_t w = write(n->log_fd, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			log_close(n); /* a full disk: try again with the next output */
			return;
		}
		n->log_size += w;
		p += w;
		len -= (size_t)w;
	}
}

static void client_finish(struct client *c, const char *why)
{
	if (!c->done) {
		c->done = 1;
		kiln_strlcpy(c->why, why, sizeof(c->why));
	}
	pipe_poke(c->wake[1]);
}

/* Whether this instance captures n's console. */
static int capturing(const struct cnode *n)
{
	return n->capture && !n->elsewhere;
}

/* Closes the session when nobody uses it any more. */
static void cnode_release_if_idle(struct cnode *n)
{
	if (n->clients || (capturing(n) && !M.stopping) || !n->sess || n->state == S_CLOSING)
		return;
	n->state = S_CLOSING;
	ipmi_console_close(n->cid);
}

static void on_console(void *ud, enum ipmi_console_event ev, const unsigned char *data,
		       size_t len, int rc, const char *error)
{
	struct sess *s = ud;
	struct cnode *n = s->n;
	struct client *c;

	pthread_mutex_lock(&M.lock);
	if (ev == IPMI_CONSOLE_OPEN) {
		if (n->sess == s && n->state == S_OPENING) {
			log_info("console %s: session open", n->name);
			n->state = S_UP;
			n->backoff_ms = BACKOFF_MIN_MS;
			n->last_error[0] = '\0';
			for (c = n->clients; c; c = c->next)
				pipe_poke(c->wake[1]); /* input typed early goes out now */
			cnode_release_if_idle(n);
		}
	} else if (ev == IPMI_CONSOLE_DATA) {
		if (n->sess == s) {
			if (capturing(n))
				log_write(n, data, len);
			for (c = n->clients; c; c = c->next) {
				(void)kiln_buf_append(&c->out, data, len); /* over the cap: dropped */
				pipe_poke(c->wake[1]);
			}
		}
	} else {
		if (n->sess == s) {
			char why[450];

			if (rc < 0)
				log_warn("console %s: session closed: %s", n->name, error);
			else
				log_info("console %s: session closed", n->name);
			n->sess = NULL;
			n->cid = 0;
			n->state = S_DOWN;
			if (rc < 0) {
				kiln_strlcpy(n->last_error, error, sizeof(n->last_error));
				snprintf(why, sizeof(why), "console closed: %s", error);
			} else {
				snprintf(why, sizeof(why), "console closed");
			}
			for (c = n->clients; c; c = c->next)
				client_finish(c, why);
			if (rc == KILN_EAUTH) {
				n->has_rejected = 1;
				n->rejected_version = s->credentials_version;
			}
			if (capturing(n) && !M.stopping) {
				n->retry_at_ms = now_ms() + (rc < 0 ? n->backoff_ms : 0);
				if (rc < 0)
					n->backoff_ms = n->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS
											   : n->backoff_ms * 2;
				pipe_poke(M.wake[1]);
			}
		}
		M.nsessions--;
		pthread_cond_broadcast(&M.cond);
		free(s);
	}
	pthread_mutex_unlock(&M.lock);
}

/* Opens n's session on t. Called with M.lock; n->state must be S_DOWN. */
static int session_open(struct cnode *n, const struct console_target *t, int steal)
{
	struct ipmi_console_options opt = { 0 };
	struct sess *s = calloc(1, sizeof(*s));
	int64_t cid = 0;
	int rc;

	if (!s)
		return kiln_fail(KILN_ERROR, "out of memory");
	s->n = n;
	s->credentials_version = t->t.credentials_version;
	opt.steal = steal;
	opt.keepalive = capturing(n);
	opt.timeout_ms = M.timeout_ms;
	M.nsessions++;
	rc = ipmi_console_open(&cid, &t->t, &opt, on_console, s);
	if (rc < 0) {
		M.nsessions--;
		free(s);
		return rc;
	}
	n->sess = s;
	n->cid = cid;
	n->state = S_OPENING;
	return 0;
}

/* ---- attached clients ---- */

static int write_some(int sock, struct kiln_buf *b)
{
	while (b->len > 0) {
		ssize_t w = send(sock, b->data, b->len, MSG_NOSIGNAL);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
		}
		memmove(b->data, b->data + w, b->len - (size_t)w);
		b->len -= (size_t)w;
	}
	return 0;
}

static void say(int sock, const char *why)
{
	char line[512];
	struct kiln_buf b;

	snprintf(line, sizeof(line), "\r\n[kiln: %s]\r\n", why);
	kiln_buf_init(&b, 0);
	if (kiln_buf_puts(&b, line) == 0) {
		struct pollfd p = { sock, POLLOUT, 0 };

		while (b.len > 0 && write_some(sock, &b) == 0 && b.len > 0 && poll(&p, 1, 1000) > 0)
			;
	}
	kiln_buf_free(&b);
}

void console_client_run(struct console_target *t, int sock, const char *initial,
			size_t initial_len, int steal, void (*release)(void *arg), void *arg)
{
	struct client c;
	struct kiln_buf in, out;
	struct cnode *n = NULL;
	char why[450] = "";
	int rc = 0, registered = 0, counted = 0, peer_gone = 0;

	memset(&c, 0, sizeof(c));
	kiln_buf_init(&c.out, CLIENT_OUT_MAX);
	kiln_buf_init(&in, CLIENT_IN_MAX);
	kiln_buf_init(&out, 0);
	c.wake[0] = c.wake[1] = -1;
	if (pipe2(c.wake, O_CLOEXEC | O_NONBLOCK) < 0) {
		snprintf(why, sizeof(why), "console: pipe: %s", strerror(errno));
		goto cleanup;
	}
	if (initial_len > 0)
		(void)kiln_buf_append(&in, initial, initial_len);

	pthread_mutex_lock(&M.lock);
	if (!M.started || M.stopping) {
		pthread_mutex_unlock(&M.lock);
		snprintf(why, sizeof(why), "kilnd is stopping");
		goto cleanup;
	}
	M.nclients++; /* console_stop waits for release below */
	counted = 1;
	n = cnode_get(t->node);
	if (!n) {
		pthread_mutex_unlock(&M.lock);
		snprintf(why, sizeof(why), "out of memory");
		goto cleanup;
	}
	if (n->state == S_DOWN && (rc = session_open(n, t, steal)) < 0) {
		snprintf(why, sizeof(why), "%s", kiln_error_last());
		pthread_mutex_unlock(&M.lock);
		goto cleanup;
	}
	c.next = n->clients;
	n->clients = &c;
	registered = 1;
	pthread_mutex_unlock(&M.lock);
	target_forget_password(t);

	for (;;) {
		struct pollfd p[2];
		int done, up;

		pthread_mutex_lock(&M.lock);
		done = c.done;
		up = n->state == S_UP;
		if (c.out.len > 0 && kiln_buf_append(&out, c.out.data, c.out.len) == 0)
			kiln_buf_reset(&c.out);
		if (up && in.len > 0 && ipmi_console_write(n->cid, in.data, in.len) == 0)
			kiln_buf_reset(&in);
		if (done)
			kiln_strlcpy(why, c.why, sizeof(why));
		pthread_mutex_unlock(&M.lock);
		if (write_some(sock, &out) < 0) {
			peer_gone = 1;
			break;
		}
		if (done && out.len == 0)
			break;
		p[0].fd = sock;
		p[0].events = (in.len < CLIENT_IN_MAX ? POLLIN : 0) | (out.len > 0 ? POLLOUT : 0);
		p[1].fd = c.wake[0];
		p[1].events = POLLIN;
		p[0].revents = p[1].revents = 0;
		if (poll(p, 2, done ? 1000 : -1) < 0 && errno != EINTR)
			break;
		if (p[1].revents)
			pipe_drain(c.wake[0]);
		if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
			char buf[4096];
			size_t room = CLIENT_IN_MAX - in.len;
			ssize_t r = recv(sock, buf, room < sizeof(buf) ? room : sizeof(buf), 0);

			if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
				peer_gone = 1; /* the client left */
				break;
			}
			if (r > 0)
				(void)kiln_buf_append(&in, buf, (size_t)r);
		}
	}
cleanup:
	if (registered) {
		struct client **pp;

		pthread_mutex_lock(&M.lock);
		for (pp = &n->clients; *pp; pp = &(*pp)->next) {
			if (*pp == &c) {
				*pp = c.next;
				break;
			}
		}
		cnode_release_if_idle(n);
		pthread_mutex_unlock(&M.lock);
	}
	if (!peer_gone && why[0])
		say(sock, why);
	if (release)
		release(arg);
	if (counted) {
		pthread_mutex_lock(&M.lock);
		M.nclients--;
		pthread_cond_broadcast(&M.cond);
		pthread_mutex_unlock(&M.lock);
	}
	if (c.wake[0] >= 0)
		close(c.wake[0]);
	if (c.wake[1] >= 0)
		close(c.wake[1]);
	kiln_buf_free(&c.out);
	if (in.data)
		sodium_memzero(in.data, in.len); /* typed input may hold a password */
	kiln_buf_free(&in);
	kiln_buf_free(&out);
	console_target_free(t);
}

/* ---- capture ---- */

/* Several kilnd: whether another instance owns node (its capture runs there). 0 when the
 * store is not shared or the node is not there. Reads the store: not under M.lock. */
static int owned_elsewhere(struct store *st, const char *name)
{
	struct node *n = NULL;
	int elsewhere;

	if (!cluster_shared(M.cluster))
		return 0;
	elsewhere = store_node_get(st, &n, name) == 0 && !cluster_owns(M.cluster, n);
	node_free(n);
	return elsewhere;
}

int console_capture_set(struct store *st, const char *node, int enabled)
{
	struct cnode *n;
	int rc, elsewhere;

	if ((rc = store_console_capture_set(st, node, enabled)) < 0)
		return rc;
	elsewhere = enabled && owned_elsewhere(st, node);
	pthread_mutex_lock(&M.lock);
	if (M.started) {
		n = cnode_get(node);
		if (!n) {
			pthread_mutex_unlock(&M.lock);
			return kiln_fail(KILN_ERROR, "out of memory");
		}
		n->capture = enabled;
		if (enabled)
			n->elsewhere = elsewhere;
		if (enabled) {
			n->retry_at_ms = 0;
			n->backoff_ms = BACKOFF_MIN_MS;
			n->has_rejected = 0;
			pipe_poke(M.wake[1]);
		} else {
			log_close(n);
			cnode_release_if_idle(n);
		}
	}
	pthread_mutex_unlock(&M.lock);
	return 0;
}

/* Opens the captures that are due. Runs on the manager thread with its own store. */
static void capture_tick(struct store *st)
{
	char due[64][64];
	size_t ndue = 0, i;
	int64_t now = now_ms();
	struct cnode *n;

	pthread_mutex_lock(&M.lock);
	if (M.shared && !M.cluster) {
		pthread_mutex_unlock(&M.lock);
		return; /* the owners are not known yet */
	}
	for (n = M.nodes; n && ndue < 64; n = n->next)
		if (capturing(n) && n->state == S_DOWN && n->retry_at_ms <= now)
			kiln_strlcpy(due[ndue++], n->name, sizeof(due[0]));
	pthread_mutex_unlock(&M.lock);

	for (i = 0; i < ndue; i++) {
		struct console_target *t = NULL;
		int rc = console_target_load(&t, st, M.key, due[i]);

		pthread_mutex_lock(&M.lock);
		n = cnode_get(due[i]);
		if (!n || M.stopping || !capturing(n) || n->state != S_DOWN) {
			pthread_mutex_unlock(&M.lock);
			console_target_free(t);
			continue;
		}
		if (rc == KILN_ENOTFOUND) {
			n->capture = 0; /* the node is gone */
		} else if (rc == 0 && n->has_rejected &&
			   n->rejected_version == t->t.credentials_version) {
			n->retry_at_ms = now + BACKOFF_MAX_MS; /* wait for new credentials */
		} else {
			if (rc == 0)
				rc = session_open(n, t, 0);
			if (rc < 0) {
				kiln_strlcpy(n->last_error, kiln_error_last(), sizeof(n->last_error));
				n->retry_at_ms = now + n->backoff_ms;
				n->backoff_ms = n->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS
										   : n->backoff_ms * 2;
			}
		}
		pthread_mutex_unlock(&M.lock);
		console_target_free(t);
	}
}

/*
 * Several instances: the capture flags another instance stored, and the owners, read again
 * every RECONCILE_MS: this instance captures the nodes it owns, and closes a capture (its
 * session, unless a client is attached) when the node goes to another.
 */
#define RECONCILE_MS 5000
static void capture_reconcile(struct store *st)
{
	char **names = NULL;
	size_t count = 0;
	struct cnode *n;

	if (!cluster_shared(M.cluster) || now_ms() - M.reconciled_ms < RECONCILE_MS)
		return;
	M.reconciled_ms = now_ms();
	if (store_console_capture_list(st, &names, &count) < 0) {
		log_warn("console: %s", kiln_error_last());
		return;
	}
	for (size_t i = 0; i < count; i++) {
		int elsewhere = owned_elsewhere(st, names[i]);

		pthread_mutex_lock(&M.lock);
		if ((n = cnode_get(names[i])) && (!n->capture || n->elsewhere != elsewhere)) {
			if (!n->capture || n->elsewhere) {
				n->retry_at_ms = 0;
				n->backoff_ms = BACKOFF_MIN_MS;
			}
			n->capture = 1;
			n->elsewhere = elsewhere;
			if (elsewhere) {
				log_close(n);
				cnode_release_if_idle(n);
			}
		}
		pthread_mutex_unlock(&M.lock);
	}
	/* the captures switched off through another instance */
	pthread_mutex_lock(&M.lock);
	for (n = M.nodes; n; n = n->next) {
		size_t i = 0;

		while (i < count && strcmp(names[i], n->name) != 0)
			i++;
		if (i == count && n->capture) {
			n->capture = 0;
			log_close(n);
			cnode_release_if_idle(n);
		}
	}
	pthread_mutex_unlock(&M.lock);
	for (size_t i = 0; i < count; i++)
		free(names[i]);
	free(names);
}

void console_cluster_set(struct cluster *c)
{
	pthread_mutex_lock(&M.lock);
	M.cluster = c;
	M.reconciled_ms = 0;
	pthread_mutex_unlock(&M.lock);
	if (M.wake[1] >= 0)
		pipe_poke(M.wake[1]);
}

static void *manager_thread(void *arg)
{
	struct store *st = NULL;

	(void)arg;
	while (!st) {
		if (store_open(&st, M.db_path) == 0)
			break;
		st = NULL;
		pthread_mutex_lock(&M.lock);
		if (M.stopping) {
			pthread_mutex_unlock(&M.lock);
			return NULL;
		}
		pthread_mutex_unlock(&M.lock);
		sleep(1);
	}
	{
		char **names = NULL;
		size_t count = 0;

		if (store_console_capture_list(st, &names, &count) == 0) {
			pthread_mutex_lock(&M.lock);
			for (size_t i = 0; i < count; i++) {
				struct cnode *n = cnode_get(names[i]);

				if (n)
					n->capture = 1;
			}
			pthread_mutex_unlock(&M.lock);
		}
		for (size_t i = 0; i < count; i++)
			free(names[i]);
		free(names);
	}
	for (;;) {
		struct pollfd p = { M.wake[0], POLLIN, 0 };
		int stop;

		pthread_mutex_lock(&M.lock);
		stop = M.stopping;
		pthread_mutex_unlock(&M.lock);
		if (stop)
			break;
		capture_reconcile(st);
		capture_tick(st);
		if (poll(&p, 1, 500) > 0)
			pipe_drain(M.wake[0]);
	}
	store_close(st);
	return NULL;
}

int console_start(const struct console_config *cfg)
{
	int rc = 0;

	if (M.started)
		return kiln_fail(KILN_EINVAL, "console: already started");
	M.db_path = strdup(cfg->db_path);
	M.dir = malloc(strlen(cfg->state_dir) + sizeof("/console"));
	if (!M.db_path || !M.dir) {
		rc = kiln_fail(KILN_ERROR, "out of memory");
		goto fail;
	}
	memcpy(M.dir, cfg->state_dir, strlen(cfg->state_dir));
	memcpy(M.dir + strlen(cfg->state_dir), "/console", sizeof("/console"));
	M.key = cfg->key;
	M.log_max = cfg->log_max_bytes > 0 ? cfg->log_max_bytes : LOG_MAX_DEFAULT;
	M.timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : 5000;
	M.shared = cfg->shared;
	if (mkdir(M.dir, 0700) < 0 && errno != EEXIST) {
		rc = kiln_fail(KILN_ERROR, "console: %s: %s", M.dir, strerror(errno));
		goto fail;
	}
	if (pipe2(M.wake, O_CLOEXEC | O_NONBLOCK) < 0) {
		rc = kiln_fail(KILN_ERROR, "console: pipe: %s", strerror(errno));
		goto fail;
	}
	M.stopping = 0;
	M.started = 1;
	if (pthread_create(&M.thread, NULL, manager_thread, NULL) != 0) {
		M.started = 0;
		rc = kiln_fail(KILN_ERROR, "console: cannot start the manager thread");
		goto fail;
	}
	return 0;
fail:
	if (M.wake[0] >= 0)
		close(M.wake[0]);
	if (M.wake[1] >= 0)
		close(M.wake[1]);
	M.wake[0] = M.wake[1] = -1;
	free(M.db_path);
	free(M.dir);
	M.db_path = M.dir = NULL;
	return rc;
}

void console_stop(void)
{
	struct cnode *n;
	int64_t deadline;

	if (!M.started)
		return;
	pthread_mutex_lock(&M.lock);
	M.stopping = 1;
	pthread_mutex_unlock(&M.lock);
	pipe_poke(M.wake[1]);
	pthread_join(M.thread, NULL);

	pthread_mutex_lock(&M.lock);
	for (n = M.nodes; n; n = n->next) {
		for (struct client *c = n->clients; c; c = c->next)
			client_finish(c, "kilnd is stopping");
		if (n->sess && n->state != S_CLOSING) {
			n->state = S_CLOSING;
			ipmi_console_close(n->cid);
		}
	}
	deadline = now_ms() + STOP_WAIT_MS;
	while ((M.nclients > 0 || M.nsessions > 0) && now_ms() < deadline) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 100 * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&M.cond, &M.lock, &ts);
	}
	if (M.nclients == 0 && M.nsessions == 0) {
		/* nothing refers to the nodes any more */
		while (M.nodes) {
			n = M.nodes;
			M.nodes = n->next;
			log_close(n);
			free(n);
		}
	}
	M.started = 0;
	pthread_mutex_unlock(&M.lock);
	close(M.wake[0]);
	close(M.wake[1]);
	M.wake[0] = M.wake[1] = -1;
	free(M.db_path);
	free(M.dir);
	M.db_path = M.dir = NULL;
}

void console_status(json_t *obj, const char *node)
{
	static const char *const names[] = { "closed", "opening", "open", "closing" };
	struct cnode *n;
	int clients = 0;

	pthread_mutex_lock(&M.lock);
	for (n = M.nodes; n; n = n->next)
		if (strcmp(n->name, node) == 0)
			break;
	for (struct client *c = n ? n->clients : NULL; c; c = c->next)
		clients++;
	json_object_set_new(obj, "session", json_string(names[n ? n->state : S_DOWN]));
	json_object_set_new(obj, "clients", json_integer(clients));
	json_object_set_new(obj, "error", n && n->last_error[0] ? json_string(n->last_error)
								: json_null());
	pthread_mutex_unlock(&M.lock);
}
