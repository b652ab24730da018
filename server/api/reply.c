/* SPDX-License-Identifier: Apache-2.0 */
/* The helpers a handler answers with: the reply, the error answers (their messages made valid
 * UTF-8), the body's and the query's arguments, answering later (api_suspend). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/reply.h"
#include "kiln/error.h"
#include "kiln/escape.h"

/* A JSON string of text that may not be UTF-8 (a path or a value echoed in a message):
 * each byte of an invalid sequence becomes '?', so that the error is never lost ("{}"). */
static json_t *json_string_lossy(const char *text)
{
	char buf[1024];
	size_t len = strlen(text), o = 0;
	const unsigned char *s = (const unsigned char *)text;

	for (size_t i = 0; i < len && o + 4 < sizeof(buf);) {
		uint32_t cp;
		size_t n = kiln_utf8_seq(s + i, &cp); /* text ends in a NUL: never read past it */

		if (n == 0) {
			buf[o++] = '?';
			i++;
			continue;
		}
		memcpy(buf + o, s + i, n);
		o += n;
		i += n;
	}
	buf[o] = '\0';
	return json_string(buf);
}

json_t *api_error_json(const char *msg, const char *field, long index)
{
	json_t *o = json_object();

	if (!o)
		return NULL;
	json_object_set_new(o, "error", json_string_lossy(msg));
	if (field)
		json_object_set_new(o, "field", json_string_lossy(field));
	if (index >= 0)
		json_object_set_new(o, "index", json_integer(index));
	return o;
}

void api_reply(struct api_ctx *c, unsigned status, json_t *body)
{
	json_decref(c->reply);
	c->status = status;
	c->reply = body;
}

static void fail_v(struct api_ctx *c, unsigned status, long index, const char *field,
		   const char *fmt, va_list ap)
{
	char msg[512];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	api_reply(c, status, api_error_json(msg, field, index));
}

void api_fail(struct api_ctx *c, unsigned status, const char *field, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fail_v(c, status, -1, field, fmt, ap);
	va_end(ap);
}

void api_fail_index(struct api_ctx *c, unsigned status, long index, const char *field,
		    const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fail_v(c, status, index, field, fmt, ap);
	va_end(ap);
}

unsigned api_status_of(int rc)
{
	switch (rc) {
	case KILN_ENOTFOUND: return MHD_HTTP_NOT_FOUND;
	case KILN_EEXISTS: return MHD_HTTP_CONFLICT;
	case KILN_EIDENTITY: return MHD_HTTP_CONFLICT;
	case KILN_ECONFIG: return MHD_HTTP_BAD_REQUEST;
	case KILN_EINVAL: return MHD_HTTP_BAD_REQUEST;
	case KILN_ETOOBIG: return MHD_HTTP_CONTENT_TOO_LARGE;
	case KILN_EAUTH: return MHD_HTTP_UNAUTHORIZED;
	case KILN_EPERM: return MHD_HTTP_FORBIDDEN;
	case KILN_EBUSY: return MHD_HTTP_SERVICE_UNAVAILABLE;
	default: return MHD_HTTP_INTERNAL_SERVER_ERROR;
	}
}

void api_fail_code(struct api_ctx *c, int rc, const char *field)
{
	const char *msg = kiln_error_last();

	api_fail(c, api_status_of(rc), field, "%s", msg[0] ? msg : kiln_error_name(rc));
}

const char *api_query(struct api_ctx *c, const char *name)
{
	return MHD_lookup_connection_value(c->conn, MHD_GET_ARGUMENT_KIND, name);
}

int api_body_require(struct api_ctx *c)
{
	if (c->body)
		return 1;
	api_fail(c, MHD_HTTP_BAD_REQUEST, NULL, "request body is empty; expected a JSON object");
	return 0;
}

void api_suspend(struct api_ctx *c)
{
	c->suspended = 1;
	MHD_suspend_connection(c->conn);
}

void api_resume(struct api_ctx *c)
{
	MHD_resume_connection(c->conn);
}

int api_body_string(struct api_ctx *c, const char **out, const char *name)
{
	json_t *v = json_object_get(c->body, name);

	*out = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v)) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, name, "%s must be a string", name);
		return KILN_EINVAL;
	}
	*out = json_string_value(v);
	return 0;
}

int api_body_bool(struct api_ctx *c, int *out, const char *name)
{
	json_t *v = json_object_get(c->body, name);

	*out = 0;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_boolean(v)) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, name, "%s must be true or false", name);
		return KILN_EINVAL;
	}
	*out = json_is_true(v);
	return 0;
}
