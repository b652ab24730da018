/* SPDX-License-Identifier: Apache-2.0 */
/* kilnd's HTTPS material: a given certificate, or a self-signed ECDSA P-256 one kept in the state dir. */
#ifndef KILND_TLSCERT_H
#define KILND_TLSCERT_H

struct tlscert {
	char *cert_pem;        /* NUL-terminated PEM, for libmicrohttpd */
	char *key_pem;
	char fingerprint[96];  /* SHA-256 of the DER certificate, "AB:CD:..." */
	int generated;         /* created by this call (not loaded) */
};

/* Loads a certificate and key (PEM files) and checks that they parse and belong together. */
int tlscert_load(struct tlscert *out, const char *cert_path, const char *key_path);

/*
 * Loads cert_path/key_path when both exist, else generates a self-signed ECDSA P-256
 * certificate valid for ten years, naming this host, localhost, the loopback addresses,
 * the addresses of the local interfaces and listen_host, and writes it there (the key
 * mode 0600). out->generated says which.
 */
int tlscert_ensure(struct tlscert *out, const char *cert_path, const char *key_path,
		   const char *listen_host);

/* Frees and wipes the PEM text; accepts a zeroed struct. */
void tlscert_clear(struct tlscert *c);

#endif
