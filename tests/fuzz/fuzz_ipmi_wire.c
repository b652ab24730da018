/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer harness: the IPMI helper's wire format (length-prefixed JSON frames over its
 * socketpair, base64 console bytes, the option strings a job carries), read from a
 * socketpair as the helper reads its own; each message read must survive a send and a read
 * again. */
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bmc/ipmi/ipmi_options.h"
#include "bmc/ipmi/ipmi_wire.h"
#include "kiln/error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define PIPE_SAFE 30000 /* under a socket's buffer: written whole before anything is read */

/* The strings a message carries, as the worker would take them. */
static void strings_try(const json_t *msg)
{
	const char *key;
	json_t *v;

	json_object_foreach((json_t *)msg, key, v) {
		unsigned char *bytes = NULL;
		struct ipmi_workarounds w;
		size_t n = 0;
		int priv;

		if (!json_is_string(v))
			continue;
		if (ipmi_wire_b64_decode(&bytes, &n, json_string_value(v)) == 0)
			free(bytes);
		ipmi_workarounds_parse(&w, json_string_value(v));
		ipmi_privilege_parse(&priv, json_string_value(v));
	}
}

static void roundtrip(const json_t *msg)
{
	int p[2];
	json_t *back = NULL;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p) < 0)
		abort();
	/* a message the helper read, sent again, reads back the same (it fits: it came in
	 * smaller than PIPE_SAFE, and a compact dump is no longer than what was read) */
	if (ipmi_wire_send(p[1], msg) < 0 || (close(p[1]), ipmi_wire_recv(p[0], &back)) < 0 ||
	    !json_equal((json_t *)msg, back))
		abort();
	ipmi_wire_msg_free(back);
	close(p[0]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int p[2];
	json_t *msg = NULL;

	if (size > PIPE_SAFE || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p) < 0)
		return 0;
	if (size && write(p[1], data, size) != (ssize_t)size)
		abort();
	close(p[1]);
	while (ipmi_wire_recv(p[0], &msg) == 0) {
		strings_try(msg);
		roundtrip(msg);
		ipmi_wire_msg_free(msg);
		msg = NULL;
	}
	close(p[0]);
	kiln_error_clear();
	return 0;
}
