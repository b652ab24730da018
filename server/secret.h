/* Secrets at rest: the state dir's key, BMC passwords (libsodium AEAD), token hashing. */
#ifndef KILN_SECRET_H
#define KILN_SECRET_H

#include <stddef.h>

#define SECRET_KEY_BYTES 32

struct secret_key {
	unsigned char key[SECRET_KEY_BYTES];
};

/* Loads DIR/secret.key, creating it (mode 0600, random) when absent; *out_created says so.
 * Refuses a key file of the wrong size or readable by others. */
int secret_key_load_or_create(struct secret_key *out, const char *path, int *out_created);

/* Encrypts plaintext with XChaCha20-Poly1305 (random nonce prepended); caller frees *out.
 * ad (associated data, e.g. the node name) binds the ciphertext to its row. */
int secret_encrypt(unsigned char **out, size_t *out_len, const struct secret_key *key,
		   const char *plaintext, const char *ad);
/* Decrypts into a NUL-terminated string the caller frees with secret_free_string. */
int secret_decrypt(char **out, const struct secret_key *key, const unsigned char *ct, size_t ct_len,
		   const char *ad);
void secret_free_string(char *s); /* zeroes then frees */

/* New random bearer token: "kiln_" + 43 chars of URL-safe base64; out must hold 64 bytes. */
int secret_token_generate(char out[64]);
/* SHA-256 of the token text (tokens are random, so an unsalted hash is enough). */
void secret_token_hash(unsigned char out[32], const char *token);

#endif
