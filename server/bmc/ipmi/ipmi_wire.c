/* SPDX-License-Identifier: Apache-2.0 */
/* Messages between kilnd and the IPMI helper: a 4-byte big-endian length, then JSON. */
#include "bmc/ipmi/ipmi_wire.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kiln/error.h"
#include "kiln/json.h"

static int write_all(int fd, const unsigned char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return kiln_fail(KILN_ERROR, "ipmi wire: send: %s", strerror(errno));
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Reads exactly n bytes: 0, 1 on end of stream before the first byte, <0 otherwise. */
static int read_all(int fd, unsigned char *p, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = read(fd, p + got, n - got);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return kiln_fail(KILN_ERROR, "ipmi wire: read: %s", strerror(errno));
		}
		if (r == 0)
			return got == 0 ? 1 : kiln_fail(KILN_EPROTO, "ipmi wire: stream ended mid-frame");
		got += (size_t)r;
	}
	return 0;
}

int ipmi_wire_send(int fd, const json_t *msg)
{
	char *text = json_dumps(msg, JSON_COMPACT);
	unsigned char head[4];
	size_t len;
	int rc;

	if (!text)
		return kiln_fail(KILN_ERROR, "ipmi wire: cannot encode message");
	len = strlen(text);
	if (len > IPMI_WIRE_MAX) {
		explicit_bzero(text, len);
		free(text);
		return kiln_fail(KILN_ETOOBIG, "ipmi wire: message of %zu bytes over the cap", len);
	}
	head[0] = (unsigned char)(len >> 24);
	head[1] = (unsigned char)(len >> 16);
	head[2] = (unsigned char)(len >> 8);
	head[3] = (unsigned char)len;
	rc = write_all(fd, head, sizeof(head));
	if (rc == 0)
		rc = write_all(fd, (const unsigned char *)text, len);
	explicit_bzero(text, len); /* requests carry the BMC's password */
	free(text);
	return rc;
}

void ipmi_wire_msg_free(json_t *msg)
{
	kiln_json_wipe_string(msg, "password");
	json_decref(msg);
}

int ipmi_wire_recv(int fd, json_t **out)
{
	unsigned char head[4];
	unsigned char *body = NULL;
	json_error_t jerr;
	json_t *msg;
	uint32_t len;
	int rc;

	rc = read_all(fd, head, sizeof(head));
	if (rc != 0)
		return rc;
	len = (uint32_t)head[0] << 24 | (uint32_t)head[1] << 16 | (uint32_t)head[2] << 8 | head[3];
	if (len > IPMI_WIRE_MAX)
		return kiln_fail(KILN_ETOOBIG, "ipmi wire: frame of %u bytes over the cap", len);
	body = malloc(len ? len : 1);
	if (!body)
		return kiln_fail(KILN_ERROR, "ipmi wire: out of memory");
	rc = read_all(fd, body, len);
	if (rc == 1)
		rc = kiln_fail(KILN_EPROTO, "ipmi wire: stream ended mid-frame");
	if (rc < 0)
		goto cleanup;
	msg = json_loadb((const char *)body, len, 0, &jerr);
	if (!msg || !json_is_object(msg)) {
		json_decref(msg);
		rc = kiln_fail(KILN_EPROTO, "ipmi wire: bad message: %s", jerr.text);
		goto cleanup;
	}
	*out = msg;
cleanup:
	if (body)
		explicit_bzero(body, len);
	free(body);
	return rc;
}

static const char b64_chars[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int ipmi_wire_b64_encode(char **out, const unsigned char *data, size_t len)
{
	char *text = malloc((len + 2) / 3 * 4 + 1);
	size_t i, o = 0;

	if (!text)
		return kiln_fail(KILN_ERROR, "ipmi wire: out of memory");
	for (i = 0; i + 2 < len; i += 3) {
		uint32_t v = (uint32_t)data[i] << 16 | (uint32_t)data[i + 1] << 8 | data[i + 2];

		text[o++] = b64_chars[v >> 18 & 63];
		text[o++] = b64_chars[v >> 12 & 63];
		text[o++] = b64_chars[v >> 6 & 63];
		text[o++] = b64_chars[v & 63];
	}
	if (i < len) {
		uint32_t v = (uint32_t)data[i] << 16 | (i + 1 < len ? (uint32_t)data[i + 1] << 8 : 0);

		text[o++] = b64_chars[v >> 18 & 63];
		text[o++] = b64_chars[v >> 12 & 63];
		text[o++] = i + 1 < len ? b64_chars[v >> 6 & 63] : '=';
		text[o++] = '=';
	}
	text[o] = '\0';
	*out = text;
	return 0;
}

static int b64_value(char c)
{
	const char *p = c ? strchr(b64_chars, c) : NULL;

	return p ? (int)(p - b64_chars) : -1;
}

int ipmi_wire_b64_decode(unsigned char **out, size_t *out_len, const char *text)
{
	size_t len = strlen(text), i, o = 0;
	unsigned char *bytes;

	if (len % 4 != 0)
		return kiln_fail(KILN_EPROTO, "ipmi wire: base64 text of %zu characters", len);
	bytes = malloc(len / 4 * 3 + 1);
	if (!bytes)
		return kiln_fail(KILN_ERROR, "ipmi wire: out of memory");
	for (i = 0; i < len; i += 4) {
		int a = b64_value(text[i]), b = b64_value(text[i + 1]);
		int c = text[i + 2] == '=' ? 0 : b64_value(text[i + 2]);
		int d = text[i + 3] == '=' ? 0 : b64_value(text[i + 3]);
		int pad = (text[i + 2] == '=') + (text[i + 3] == '=');
		uint32_t v;

		if (a < 0 || b < 0 || c < 0 || d < 0 || (pad && i + 4 != len) ||
		    (text[i + 2] == '=' && text[i + 3] != '=')) {
			free(bytes);
			return kiln_fail(KILN_EPROTO, "ipmi wire: bad base64 text");
		}
		v = (uint32_t)a << 18 | (uint32_t)b << 12 | (uint32_t)c << 6 | (uint32_t)d;
		bytes[o++] = (unsigned char)(v >> 16);
		if (pad < 2)
			bytes[o++] = (unsigned char)(v >> 8);
		if (pad < 1)
			bytes[o++] = (unsigned char)v;
	}
	*out = bytes;
	*out_len = o;
	return 0;
}
