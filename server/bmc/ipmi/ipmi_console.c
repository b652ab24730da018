/* SPDX-License-Identifier: Apache-2.0 */
/* The serial console inside the IPMI helper: one libipmiconsole session and thread per console. */
#include "bmc/ipmi/ipmi_console.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ipmiconsole.h>

#include "bmc/ipmi/ipmi_wire.h"
#include "kiln/buf.h"
#include "kiln/error.h"
#include "kiln/parse.h"

/* Input queued for one session beyond this is refused (a paste larger than this fails). */
#define INPUT_MAX (256u * 1024u)
/* Serial output is forwarded in chunks of at most this many bytes. */
#define CHUNK 4096
#define ENGINE_THREADS 2

struct session {
	int64_t cid;
	char node[128];
	char host[300];
	char user[64];
	char password[64];
	int cipher;
	int privilege;
	unsigned int workarounds;
	long timeout_ms;
	int steal;
	int keepalive;

	pthread_mutex_t lock; /* in, closing */
	struct kiln_buf in;
	int closing;
	int wake[2]; /* a byte on wake[1] says: input queued or close asked */
	struct session *next;
};

static struct {
	pthread_mutex_t lock; /* sessions, engine_up */
	struct session *sessions;
	int engine_up;
	ipmi_console_send_fn send;
} C = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
};

static void event_send(int64_t cid, const char *event, int rc, const char *error)
{
	json_t *msg = json_pack("{s:I, s:s}", "console", (json_int_t)cid, "event", event);

	if (!msg)
		return;
	if (strcmp(event, "closed") == 0) {
		json_object_set_new(msg, "rc", json_integer(rc));
		json_object_set_new(msg, "error", json_string(error ? error : ""));
	}
	if (C.send)
		(void)C.send(msg);
	json_decref(msg);
}

static int data_send(int64_t cid, const unsigned char *p, size_t n)
{
	char *text = NULL;
	json_t *msg;
	int rc;

	if ((rc = ipmi_wire_b64_encode(&text, p, n)) < 0)
		return rc;
	msg = json_pack("{s:I, s:s, s:s}", "console", (json_int_t)cid, "event", "data", "data", text);
	free(text);
	if (!msg)
		return kiln_fail(KILN_ERROR, "out of memory");
	rc = C.send ? C.send(msg) : 0;
	json_decref(msg);
	return rc;
}

static int code_of(int errnum)
{
	switch (errnum) {
	case IPMICONSOLE_ERR_USERNAME_INVALID:
	case IPMICONSOLE_ERR_PASSWORD_INVALID:
	case IPMICONSOLE_ERR_K_G_INVALID:
		return KILN_EAUTH;
	case IPMICONSOLE_ERR_PRIVILEGE_LEVEL_INSUFFICIENT:
	case IPMICONSOLE_ERR_PRIVILEGE_LEVEL_CANNOT_BE_OBTAINED:
		return KILN_EPERM;
	case IPMICONSOLE_ERR_SOL_INUSE:
	case IPMICONSOLE_ERR_SOL_STOLEN:
	case IPMICONSOLE_ERR_BMC_BUSY:
		return KILN_EBUSY;
	case IPMICONSOLE_ERR_CONNECTION_TIMEOUT:
	case IPMICONSOLE_ERR_SESSION_TIMEOUT:
	case IPMICONSOLE_ERR_EXCESS_RETRANSMISSIONS_SENT:
		return KILN_ETIMEOUT;
	case IPMICONSOLE_ERR_IPMI_2_0_UNAVAILABLE:
	case IPMICONSOLE_ERR_CIPHER_SUITE_ID_UNAVAILABLE:
	case IPMICONSOLE_ERR_SOL_UNAVAILABLE:
	case IPMICONSOLE_ERR_SOL_REQUIRES_ENCRYPTION:
	case IPMICONSOLE_ERR_SOL_REQUIRES_NO_ENCRYPTION:
	case IPMICONSOLE_ERR_BMC_IMPLEMENTATION:
		return KILN_EPROTO;
	default:
		return KILN_ERROR;
	}
}

static int engine_ensure(void)
{
	int rc = 0;

	pthread_mutex_lock(&C.lock);
	if (!C.engine_up) {
		if (ipmiconsole_engine_init(ENGINE_THREADS, 0) < 0)
			rc = kiln_fail(KILN_ERROR, "SOL: cannot start the libipmiconsole engine");
		else
			C.engine_up = 1;
	}
	pthread_mutex_unlock(&C.lock);
	return rc;
}

static void session_free(struct session *s)
{
	if (!s)
		return;
	explicit_bzero(s->password, sizeof(s->password));
	if (s->wake[0] >= 0)
		close(s->wake[0]);
	if (s->wake[1] >= 0)
		close(s->wake[1]);
	kiln_buf_free(&s->in);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

static void session_unlink(struct session *s)
{
	struct session **pp;

	pthread_mutex_lock(&C.lock);
	for (pp = &C.sessions; *pp; pp = &(*pp)->next) {
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	}
	pthread_mutex_unlock(&C.lock);
}

/* Writes what is queued without blocking; 0, or <0 when the engine's end is gone. */
static int input_flush(struct session *s, int fd)
{
	int rc = 0;

	pthread_mutex_lock(&s->lock);
	while (s->in.len > 0) {
		ssize_t w = write(fd, s->in.data, s->in.len);

		if (w < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				rc = kiln_fail(KILN_ERROR, "SOL: write: %s", strerror(errno));
			break;
		}
		memmove(s->in.data, s->in.data + w, s->in.len - (size_t)w);
		s->in.len -= (size_t)w;
	}
	pthread_mutex_unlock(&s->lock);
	return rc;
}

/* Opens the SOL session, then pumps bytes until it ends or kilnd closes it. */
static void *session_thread(void *arg)
{
	struct session *s = arg;
	struct ipmiconsole_ipmi_config ipmi;
	struct ipmiconsole_protocol_config proto;
	struct ipmiconsole_engine_config eng;
	ipmiconsole_ctx_t ctx = NULL;
	unsigned char buf[CHUNK];
	char err[512] = "";
	int rc = 0, fd = -1;

	memset(&ipmi, 0, sizeof(ipmi));
	ipmi.username = s->user;
	ipmi.password = s->password;
	ipmi.privilege_level = s->privilege;
	ipmi.cipher_suite_id = s->cipher;
	ipmi.workaround_flags = s->workarounds;
	proto.session_timeout_len = (int)s->timeout_ms;
	proto.retransmission_timeout_len = (int)(s->timeout_ms / 8 < 100 ? 100 : s->timeout_ms / 8 > 1000
						 ? 1000 : s->timeout_ms / 8);
	proto.retransmission_backoff_count = -1;
	/* A session is lost after timeout_ms without a packet from the BMC; keepalives every
	 * half of that keep an idle but healthy session alive (FreeIPMI's default is 20 s). */
	proto.keepalive_timeout_len = (int)(s->timeout_ms / 2);
	proto.retransmission_keepalive_timeout_len = proto.retransmission_timeout_len;
	proto.acceptable_packet_errors_count = -1;
	proto.maximum_retransmission_count = -1;
	eng.engine_flags = s->keepalive ? IPMICONSOLE_ENGINE_SERIAL_KEEPALIVE_EMPTY : 0;
	eng.behavior_flags = s->steal ? 0 : IPMICONSOLE_BEHAVIOR_ERROR_ON_SOL_INUSE;
	eng.debug_flags = 0;

	if ((rc = engine_ensure()) < 0) {
		snprintf(err, sizeof(err), "ipmi: %s: %s", s->node, kiln_error_last());
		goto done;
	}
	ctx = ipmiconsole_ctx_create(s->host, &ipmi, &proto, &eng);
	explicit_bzero(s->password, sizeof(s->password));
	if (!ctx) {
		rc = KILN_EINVAL;
		snprintf(err, sizeof(err), "ipmi: %s: SOL: cannot create a console context "
			 "(bad host, user, password or cipher suite)", s->node);
		goto done;
	}
	if (ipmiconsole_engine_submit_block(ctx) < 0) {
		int errnum = ipmiconsole_ctx_errnum(ctx);

		rc = code_of(errnum);
		snprintf(err, sizeof(err), "ipmi: %s: SOL: %s%s", s->node, ipmiconsole_ctx_errormsg(ctx),
			 errnum == IPMICONSOLE_ERR_SOL_INUSE ? " (another session holds it; steal to take it over)"
							     : "");
		goto done;
	}
	fd = ipmiconsole_ctx_fd(ctx);
	if (fd < 0 || fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0) {
		rc = KILN_ERROR;
		snprintf(err, sizeof(err), "ipmi: %s: SOL: no console descriptor", s->node);
		fd = -1;
		goto done;
	}
	event_send(s->cid, "open", 0, NULL);

	for (;;) {
		struct pollfd pfd[2];
		int closing, pending;

		pthread_mutex_lock(&s->lock);
		closing = s->closing;
		pending = s->in.len > 0;
		pthread_mutex_unlock(&s->lock);
		if (closing)
			break;
		pfd[0].fd = fd;
		pfd[0].events = POLLIN | (pending ? POLLOUT : 0);
		pfd[1].fd = s->wake[0];
		pfd[1].events = POLLIN;
		pfd[0].revents = pfd[1].revents = 0;
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			rc = KILN_ERROR;
			snprintf(err, sizeof(err), "ipmi: %s: SOL: poll: %s", s->node, strerror(errno));
			break;
		}
		if (pfd[1].revents) {
			char drain[64];

			while (read(s->wake[0], drain, sizeof(drain)) > 0)
				;
		}
		if (pfd[0].revents & (POLLIN | POLLHUP | POLLERR)) {
			ssize_t r = read(fd, buf, sizeof(buf));

			if (r > 0) {
				if (data_send(s->cid, buf, (size_t)r) < 0)
					break; /* kilnd is gone */
			} else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
				int errnum = ipmiconsole_ctx_errnum(ctx);

				rc = errnum == IPMICONSOLE_ERR_SUCCESS ? KILN_ERROR : code_of(errnum);
				snprintf(err, sizeof(err), "ipmi: %s: SOL session ended: %s", s->node,
					 errnum == IPMICONSOLE_ERR_SUCCESS ? "closed by the BMC"
									   : ipmiconsole_ctx_errormsg(ctx));
				break;
			}
		}
		if (input_flush(s, fd) < 0) {
			rc = KILN_ERROR;
			snprintf(err, sizeof(err), "ipmi: %s: %s", s->node, kiln_error_last());
			break;
		}
	}
done:
	if (fd >= 0)
		close(fd);
	if (ctx)
		ipmiconsole_ctx_destroy(ctx);
	session_unlink(s);
	event_send(s->cid, "closed", rc, err);
	session_free(s);
	return NULL;
}

static struct session *session_find(int64_t cid)
{
	for (struct session *s = C.sessions; s; s = s->next)
		if (s->cid == cid)
			return s;
	return NULL;
}

static json_int_t int_of(json_t *msg, const char *key, json_int_t dflt)
{
	json_t *v = json_object_get(msg, key);

	return json_is_integer(v) ? json_integer_value(v) : dflt;
}

static void copy_field(char *out, size_t outlen, json_t *msg, const char *key)
{
	const char *v = json_string_value(json_object_get(msg, key));

	kiln_strlcpy(out, v ? v : "", outlen);
}

static void console_open(json_t *msg, int64_t cid)
{
	struct session *s = calloc(1, sizeof(*s));
	pthread_attr_t attr;
	pthread_t t;
	char err[300];

	if (!s) {
		event_send(cid, "closed", KILN_ERROR, "ipmi: SOL: out of memory");
		return;
	}
	s->cid = cid;
	s->wake[0] = s->wake[1] = -1;
	pthread_mutex_init(&s->lock, NULL);
	kiln_buf_init(&s->in, INPUT_MAX);
	copy_field(s->node, sizeof(s->node), msg, "node");
	copy_field(s->host, sizeof(s->host), msg, "host");
	copy_field(s->user, sizeof(s->user), msg, "user");
	copy_field(s->password, sizeof(s->password), msg, "password");
	s->cipher = (int)int_of(msg, "cipher", 3);
	s->privilege = (int)int_of(msg, "privilege", 2);
	s->workarounds = (unsigned int)int_of(msg, "wa_console", 0);
	s->timeout_ms = (long)int_of(msg, "timeout_ms", 5000);
	if (s->timeout_ms < 500)
		s->timeout_ms = 500;
	s->steal = int_of(msg, "steal", 0) != 0;
	s->keepalive = int_of(msg, "keepalive", 0) != 0;
	if (pipe2(s->wake, O_CLOEXEC | O_NONBLOCK) < 0) {
		snprintf(err, sizeof(err), "ipmi: %s: SOL: pipe: %s", s->node, strerror(errno));
		goto fail;
	}
	pthread_mutex_lock(&C.lock);
	if (session_find(cid)) {
		pthread_mutex_unlock(&C.lock);
		snprintf(err, sizeof(err), "ipmi: %s: SOL: console id in use", s->node);
		goto fail;
	}
	s->next = C.sessions;
	C.sessions = s;
	pthread_mutex_unlock(&C.lock);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &attr, session_thread, s) != 0) {
		pthread_attr_destroy(&attr);
		session_unlink(s);
		snprintf(err, sizeof(err), "ipmi: %s: SOL: cannot start a thread", s->node);
		goto fail;
	}
	pthread_attr_destroy(&attr);
	return;
fail:
	event_send(cid, "closed", KILN_ERROR, err);
	session_free(s);
}

static void wake(struct session *s)
{
	ssize_t w = write(s->wake[1], "x", 1);

	(void)w; /* a full pipe already says it */
}

int ipmi_console_request(json_t *msg)
{
	const char *op = json_string_value(json_object_get(msg, "op"));
	int64_t cid = int_of(msg, "cid", 0);
	struct session *s;

	if (!op || strncmp(op, "console_", 8) != 0)
		return 0;
	if (strcmp(op, "console_open") == 0) {
		console_open(msg, cid);
		return 1;
	}
	pthread_mutex_lock(&C.lock);
	s = session_find(cid);
	if (s && strcmp(op, "console_close") == 0) {
		pthread_mutex_lock(&s->lock);
		s->closing = 1;
		pthread_mutex_unlock(&s->lock);
		wake(s);
	} else if (s && strcmp(op, "console_data") == 0) {
		const char *text = json_string_value(json_object_get(msg, "data"));
		unsigned char *bytes = NULL;
		size_t n = 0;

		if (text && ipmi_wire_b64_decode(&bytes, &n, text) == 0) {
			pthread_mutex_lock(&s->lock);
			(void)kiln_buf_append(&s->in, bytes, n); /* over the cap: dropped */
			pthread_mutex_unlock(&s->lock);
			wake(s);
		}
		free(bytes);
	}
	pthread_mutex_unlock(&C.lock);
	return 1;
}

void ipmi_console_setup(ipmi_console_send_fn send)
{
	C.send = send;
}

void ipmi_console_shutdown(void)
{
	pthread_mutex_lock(&C.lock);
	for (struct session *s = C.sessions; s; s = s->next) {
		pthread_mutex_lock(&s->lock);
		s->closing = 1;
		pthread_mutex_unlock(&s->lock);
		wake(s);
	}
	pthread_mutex_unlock(&C.lock);
}
