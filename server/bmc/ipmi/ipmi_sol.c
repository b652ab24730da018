/* SPDX-License-Identifier: Apache-2.0 */
/* kilnd's side of the serial console: console sessions in the IPMI helper, by id. */
#include "bmc/ipmi/ipmi_sol.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bmc/ipmi/ipmi.h"
#include "bmc/ipmi/ipmi_options.h"
#include "bmc/ipmi/ipmi_wire.h"
#include "kiln/error.h"

/* One write message carries at most this many bytes (a paste is split). */
#define WRITE_CHUNK 16384

struct sol {
	int64_t cid;
	ipmi_console_fn fn;
	void *ud;
	struct sol *next;
};

static struct {
	pthread_mutex_t lock;
	struct sol *list;
	int64_t next_cid;
} S = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.next_cid = 1,
};

/* Removes and returns the session with cid; NULL when absent. Called locked. */
static struct sol *sol_take(int64_t cid)
{
	for (struct sol **pp = &S.list; *pp; pp = &(*pp)->next) {
		struct sol *s = *pp;

		if (s->cid == cid) {
			*pp = s->next;
			return s;
		}
	}
	return NULL;
}

static struct sol *sol_find(int64_t cid)
{
	for (struct sol *s = S.list; s; s = s->next)
		if (s->cid == cid)
			return s;
	return NULL;
}

static json_t *open_build(const struct bmc_target *t, const struct ipmi_console_options *opt,
			  int64_t cid)
{
	struct ipmi_workarounds wa;
	char host[300];
	int priv, port = t->port > 0 ? t->port : 623;
	long timeout = opt && opt->timeout_ms > 0 ? opt->timeout_ms : 5000;
	const char *node = t->node_name ? t->node_name : "?";
	json_t *msg;

	if (!t->host || !*t->host || strlen(t->host) > 255) {
		kiln_fail(KILN_EINVAL, "ipmi: %s: no IPMI address for the console", node);
		return NULL;
	}
	if (ipmi_workarounds_parse(&wa, t->ipmi_workarounds) < 0 ||
	    ipmi_privilege_parse(&priv, t->ipmi_privilege) < 0) {
		kiln_fail_prefix(KILN_EINVAL, "ipmi: %s", node);
		return NULL;
	}
	if (t->port < 0 || t->port > 65535 || t->ipmi_cipher < 0 || t->ipmi_cipher > 17) {
		kiln_fail(KILN_EINVAL, "ipmi: %s: bad port or cipher suite", node);
		return NULL;
	}
	if ((t->user && strlen(t->user) > 16) || (t->password && strlen(t->password) > 20)) {
		kiln_fail(KILN_EINVAL, "ipmi: %s: IPMI allows at most 16-byte user names and "
			  "20-byte passwords", node);
		return NULL;
	}
	if (strchr(t->host, ':'))
		snprintf(host, sizeof(host), "[%s]:%d", t->host, port);
	else
		snprintf(host, sizeof(host), "%s:%d", t->host, port);
	msg = json_pack("{s:s, s:I, s:s, s:s, s:s, s:s, s:i, s:i, s:I, s:I, s:i, s:i}",
			"op", "console_open", "cid", (json_int_t)cid, "node", node, "host", host,
			"user", t->user ? t->user : "", "password", t->password ? t->password : "",
			"cipher", t->ipmi_cipher, "privilege", priv,
			"wa_console", (json_int_t)wa.console, "timeout_ms", (json_int_t)timeout,
			"steal", opt && opt->steal ? 1 : 0, "keepalive", opt && opt->keepalive ? 1 : 0);
	if (!msg)
		kiln_fail(KILN_ERROR, "ipmi: %s: cannot encode the console request", node);
	return msg;
}

int ipmi_console_open(int64_t *out_cid, const struct bmc_target *target,
		      const struct ipmi_console_options *opt, ipmi_console_fn fn, void *ud)
{
	struct sol *s = NULL;
	json_t *msg = NULL;
	int64_t cid;
	int rc;

	if (!target || !fn)
		return kiln_fail(KILN_EINVAL, "ipmi: console open without target or callback");
	s = calloc(1, sizeof(*s));
	if (!s)
		return kiln_fail(KILN_ERROR, "ipmi: out of memory");
	s->fn = fn;
	s->ud = ud;
	pthread_mutex_lock(&S.lock);
	s->cid = S.next_cid++;
	pthread_mutex_unlock(&S.lock);
	msg = open_build(target, opt, s->cid);
	if (!msg) {
		free(s);
		return KILN_EINVAL;
	}
	/* Registered before it is sent: a helper that dies right after fails it. */
	cid = s->cid;
	pthread_mutex_lock(&S.lock);
	s->next = S.list;
	S.list = s;
	pthread_mutex_unlock(&S.lock);
	*out_cid = cid;
	rc = ipmi_helper_send(msg);
	ipmi_wire_msg_free(msg);
	if (rc < 0) {
		pthread_mutex_lock(&S.lock);
		s = sol_take(cid);
		pthread_mutex_unlock(&S.lock);
		if (!s)
			return 0; /* the reader failed it already: fn saw CLOSED */
		free(s);
		return kiln_fail(KILN_ERROR, "ipmi: %s: ipmi helper is not running",
				 target->node_name ? target->node_name : "?");
	}
	return 0;
}

int ipmi_console_write(int64_t cid, const void *data, size_t len)
{
	const unsigned char *p = data;
	int known, rc = 0;

	pthread_mutex_lock(&S.lock);
	known = sol_find(cid) != NULL;
	pthread_mutex_unlock(&S.lock);
	if (!known)
		return kiln_fail(KILN_ENOTFOUND, "ipmi: console %lld is closed", (long long)cid);
	while (len > 0 && rc == 0) {
		size_t n = len > WRITE_CHUNK ? WRITE_CHUNK : len;
		char *text = NULL;
		json_t *msg;

		if ((rc = ipmi_wire_b64_encode(&text, p, n)) < 0)
			break;
		msg = json_pack("{s:s, s:I, s:s}", "op", "console_data", "cid", (json_int_t)cid,
				"data", text);
		free(text);
		if (!msg)
			return kiln_fail(KILN_ERROR, "ipmi: out of memory");
		rc = ipmi_helper_send(msg);
		json_decref(msg);
		p += n;
		len -= n;
	}
	return rc;
}

void ipmi_console_close(int64_t cid)
{
	json_t *msg;
	int known;

	pthread_mutex_lock(&S.lock);
	known = sol_find(cid) != NULL;
	pthread_mutex_unlock(&S.lock);
	if (!known)
		return;
	msg = json_pack("{s:s, s:I}", "op", "console_close", "cid", (json_int_t)cid);
	if (msg)
		(void)ipmi_helper_send(msg); /* a dead helper fails the session by itself */
	json_decref(msg);
}

void ipmi_sol_dispatch(json_t *msg)
{
	int64_t cid = json_integer_value(json_object_get(msg, "console"));
	const char *event = json_string_value(json_object_get(msg, "event"));
	struct sol *s;
	ipmi_console_fn fn;
	void *ud;

	if (!event)
		return;
	pthread_mutex_lock(&S.lock);
	s = strcmp(event, "closed") == 0 ? sol_take(cid) : sol_find(cid);
	fn = s ? s->fn : NULL;
	ud = s ? s->ud : NULL;
	pthread_mutex_unlock(&S.lock);
	if (!fn)
		return;
	if (strcmp(event, "open") == 0) {
		fn(ud, IPMI_CONSOLE_OPEN, NULL, 0, 0, NULL);
	} else if (strcmp(event, "data") == 0) {
		const char *text = json_string_value(json_object_get(msg, "data"));
		unsigned char *bytes = NULL;
		size_t n = 0;

		if (text && ipmi_wire_b64_decode(&bytes, &n, text) == 0 && n > 0)
			fn(ud, IPMI_CONSOLE_DATA, bytes, n, 0, NULL);
		free(bytes);
	} else if (strcmp(event, "closed") == 0) {
		int rc = (int)json_integer_value(json_object_get(msg, "rc"));
		const char *err = json_string_value(json_object_get(msg, "error"));

		if (rc > 0 || rc < KILN_ENEWER)
			rc = KILN_ERROR;
		fn(ud, IPMI_CONSOLE_CLOSED, NULL, 0, rc, err ? err : "");
		free(s);
	}
}

void ipmi_sol_fail_all(const char *why)
{
	struct sol *list;

	pthread_mutex_lock(&S.lock);
	list = S.list;
	S.list = NULL;
	pthread_mutex_unlock(&S.lock);
	while (list) {
		struct sol *s = list;
		char err[256];

		list = s->next;
		snprintf(err, sizeof(err), "ipmi: console: %s", why);
		s->fn(s->ud, IPMI_CONSOLE_CLOSED, NULL, 0, KILN_ERROR, err);
		free(s);
	}
}
