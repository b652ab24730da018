/* SPDX-License-Identifier: Apache-2.0 */
/* Messages between kilnd and the IPMI helper: a 4-byte big-endian length, then JSON. */
#ifndef KILN_BMC_IPMI_WIRE_H
#define KILN_BMC_IPMI_WIRE_H

#include <jansson.h>

/* Hard cap on one message (a full SEL of thousands of entries fits). */
#define IPMI_WIRE_MAX (8u * 1024u * 1024u)

/*
 * Writes msg as one frame. Blocks until written; the caller serialises writers.
 * KILN_ERROR with errno's text when the peer is gone.
 */
int ipmi_wire_send(int fd, const json_t *msg);

/* Releases a request: its "password" member is zeroed first. Accepts NULL. */
void ipmi_wire_msg_free(json_t *msg);

/*
 * Reads one frame (blocking) into *out (a JSON object the caller decrefs).
 * Returns 0, 1 on a clean end of stream before a frame, KILN_ETOOBIG over the cap,
 * KILN_EPROTO for a short frame or bad JSON, KILN_ERROR for a read error.
 */
int ipmi_wire_recv(int fd, json_t **out);

/*
 * Console bytes travel in JSON as base64 (RFC 4648, padded). Encode: *out is a
 * NUL-terminated string the caller frees. Decode: *out (caller frees) gets the bytes and
 * *out_len their count; KILN_EPROTO for text that is not base64.
 */
int ipmi_wire_b64_encode(char **out, const unsigned char *data, size_t len);
int ipmi_wire_b64_decode(unsigned char **out, size_t *out_len, const char *text);

#endif
