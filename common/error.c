/* SPDX-License-Identifier: Apache-2.0 */
/* Per-thread error messages for the kiln libraries. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "kiln/error.h"

static _Thread_local char last_msg[512];

int kiln_fail(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_msg, sizeof(last_msg), fmt, ap);
	va_end(ap);
	return code;
}

int kiln_fail_prefix(int code, const char *fmt, ...)
{
	char prefix[256], prev[sizeof(last_msg)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	memcpy(prev, last_msg, sizeof(prev));
	/* Truncation keeps the start of the message, which is the part that matters. */
	if (snprintf(last_msg, sizeof(last_msg), "%s%s%s", prefix, prev[0] ? ": " : "", prev) < 0)
		last_msg[0] = '\0';
	return code;
}

const char *kiln_error_last(void)
{
	return last_msg;
}

void kiln_error_clear(void)
{
	last_msg[0] = '\0';
}

const char *kiln_error_name(int code)
{
	switch (code) {
	case KILN_OK: return "ok";
	case KILN_ENOTFOUND: return "not found";
	case KILN_ETIMEOUT: return "timeout";
	case KILN_EAUTH: return "authentication failed";
	case KILN_EBUSY: return "busy";
	case KILN_EINVAL: return "invalid";
	case KILN_EEXISTS: return "already exists";
	case KILN_ETOOBIG: return "too big";
	case KILN_EPERM: return "permission denied";
	case KILN_EPROTO: return "protocol error";
	case KILN_ENEWER: return "written by a newer kiln";
	case KILN_ETLS: return "certificate differs from the pin";
	case KILN_EIDENTITY: return "agent identity mismatch";
	case KILN_ECONFIG: return "configuration does not fit";
	default: return "error";
	}
}
