/* SPDX-License-Identifier: Apache-2.0 */
/* Secrets at rest: the state dir's key, BMC passwords (libsodium AEAD), token hashing. */
#ifndef KILN_SECRET_H
#define KILN_SECRET_H

#include <stddef.h>

#define SECRET_KEY_BYTES 32

struct secret_key {
	unsigned char key[SECRET_KEY_BYTES];
};

/* A key in memory that libsodium keeps out of core files and swap (sodium_malloc: guard
 * pages, mlock, MADV_DONTDUMP); zeroed. NULL when out of memory. */
struct secret_key *secret_key_new(void);
void secret_key_free(struct secret_key *k); /* wipes; accepts NULL */

/* Loads DIR/secret.key, creating it (mode 0600, random) when absent; *out_created says so.
 * Refuses a key file of the wrong size or readable by others. */
int secret_key_load_or_create(struct secret_key *out, const char *path, int *out_created);

/* Loads an existing key file (never creates one): KILN_ENOTFOUND when it is absent. */
int secret_key_load(struct secret_key *out, const char *path);

/* Encrypts plaintext with XChaCha20-Poly1305 (random nonce prepended); caller frees *out.
 * ad (associated data, e.g. the node name) binds the ciphertext to its row. */
int secret_encrypt(unsigned char **out, size_t *out_len, const struct secret_key *key,
		   const char *plaintext, const char *ad);
/* Decrypts into a NUL-terminated string the caller frees with secret_free_string. */
int secret_decrypt(char **out, const struct secret_key *key, const unsigned char *ct, size_t ct_len,
		   const char *ad);
void secret_free_string(char *s); /* zeroes then frees */

/*
 * A secret a long-lived structure keeps (a BMC's password in the driver): sealed under a key
 * of this process's own, made at first use in sodium_malloc'd memory, so that neither the
 * secret nor a key that opens it lies in ordinary memory (a core file). Unsealed only to
 * build the request that needs it; the caller wipes and frees that with secret_free_string.
 */
struct secret_sealed {
	unsigned char *ct; /* NULL: no secret */
	size_t len;
};
int secret_seal(struct secret_sealed *out, const char *plain); /* plain NULL: none */
int secret_unseal(char **out, const struct secret_sealed *s);  /* *out NULL when none */
void secret_sealed_clear(struct secret_sealed *s);
/* A keyed hash (hex) of s under the process's key: tells whether two secrets are equal
 * without keeping either. s NULL hashes as "". */
void secret_fingerprint(char out[65], const char *s);

/* Makes libcurl wipe every block before it frees it (its request buffers hold a login's
 * body, its handles a Basic password): curl_global_init_mem, before any thread. */
int secret_curl_init(void);

/* New random bearer token: "kiln_" + 43 chars of URL-safe base64; out must hold 64 bytes. */
int secret_token_generate(char out[64]);
/* SHA-256 of the token text (tokens are random, so an unsalted hash is enough). */
void secret_token_hash(unsigned char out[32], const char *token);

#endif
