/* SPDX-License-Identifier: Apache-2.0 */
/* kiln-bmcsim: a self-signed ECDSA P-256 certificate generated at start, shared by every BMC. */
#ifndef SIM_TLS_H
#define SIM_TLS_H

#include <stddef.h>

/* Generates a key and a certificate for localhost/127.0.0.1 (PEM, caller frees both) and its
 * SHA-256 fingerprint as colon-separated hex. */
int tls_cert_generate(char **out_cert, char **out_key, char *fingerprint, size_t fplen);

#endif
