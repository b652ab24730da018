/* SPDX-License-Identifier: Apache-2.0 */
/* Secrets at rest: the state dir's key file, AEAD for BMC passwords, bearer tokens. */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <curl/curl.h>
#include <sodium.h>

#include "kiln/error.h"
#include "daemon/secret.h"

#define NONCE_BYTES crypto_aead_xchacha20poly1305_ietf_NPUBBYTES
#define TAG_BYTES crypto_aead_xchacha20poly1305_ietf_ABYTES
#define TOKEN_RANDOM_BYTES 32
#define TOKEN_PREFIX "kiln_"
/* Far above any BMC password; keeps length arithmetic away from overflow. */
#define PLAINTEXT_MAX (64 * 1024)

static pthread_once_t sodium_once = PTHREAD_ONCE_INIT;
static int sodium_ok;

static void sodium_start(void)
{
	sodium_ok = sodium_init() >= 0;
}

static int sodium_ready(void)
{
	pthread_once(&sodium_once, sodium_start);
	if (!sodium_ok)
		return kiln_fail(KILN_ERROR, "secret: libsodium failed to initialise");
	return 0;
}

struct secret_key *secret_key_new(void)
{
	struct secret_key *k;

	if (sodium_ready() < 0)
		return NULL;
	k = sodium_malloc(sizeof(*k));
	if (k)
		sodium_memzero(k, sizeof(*k));
	return k;
}

void secret_key_free(struct secret_key *k)
{
	if (k)
		sodium_free(k); /* zeroes it */
}

/* The process's own key for secret_seal and secret_fingerprint, read-only once made. */
static pthread_once_t proc_key_once = PTHREAD_ONCE_INIT;
static struct secret_key *proc_key;

static void proc_key_make(void)
{
	if (sodium_ready() < 0 || !(proc_key = sodium_malloc(sizeof(*proc_key))))
		return;
	randombytes_buf(proc_key->key, sizeof(proc_key->key));
	sodium_mprotect_readonly(proc_key);
}

static const struct secret_key *process_key(void)
{
	pthread_once(&proc_key_once, proc_key_make);
	return proc_key;
}

static void wipe_free(void *p)
{
	if (!p)
		return;
	explicit_bzero(p, malloc_usable_size(p));
	free(p);
}

static void *wipe_realloc(void *p, size_t n)
{
	size_t old;
	void *q;

	if (!p)
		return malloc(n);
	if (n == 0) {
		wipe_free(p);
		return NULL;
	}
	old = malloc_usable_size(p);
	if (!(q = malloc(n)))
		return NULL;
	memcpy(q, p, old < n ? old : n);
	wipe_free(p);
	return q;
}

static char *wipe_strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = malloc(n);

	return d ? memcpy(d, s, n) : NULL;
}

int secret_curl_init(void)
{
	if (curl_global_init_mem(CURL_GLOBAL_DEFAULT, malloc, wipe_free, wipe_realloc, wipe_strdup,
				 calloc) != CURLE_OK)
		return kiln_fail(KILN_ERROR, "secret: curl_global_init_mem failed");
	return 0;
}

int secret_seal(struct secret_sealed *out, const char *plain)
{
	const struct secret_key *k = process_key();

	out->ct = NULL;
	out->len = 0;
	if (!plain)
		return 0;
	if (!k)
		return kiln_fail(KILN_ERROR, "secret: no process key (out of memory)");
	return secret_encrypt(&out->ct, &out->len, k, plain, NULL);
}

int secret_unseal(char **out, const struct secret_sealed *s)
{
	const struct secret_key *k = process_key();

	*out = NULL;
	if (!s->ct)
		return 0;
	if (!k)
		return kiln_fail(KILN_ERROR, "secret: no process key (out of memory)");
	return secret_decrypt(out, k, s->ct, s->len, NULL);
}

void secret_sealed_clear(struct secret_sealed *s)
{
	free(s->ct);
	s->ct = NULL;
	s->len = 0;
}

void secret_fingerprint(char out[65], const char *s)
{
	const struct secret_key *k = process_key();
	unsigned char h[32];

	crypto_generichash(h, sizeof(h), (const unsigned char *)(s ? s : ""), s ? strlen(s) : 0,
			   k ? k->key : NULL, k ? sizeof(k->key) : 0);
	sodium_bin2hex(out, 65, h, sizeof(h));
}

static int read_key(struct secret_key *out, const char *path)
{
	unsigned char buf[SECRET_KEY_BYTES];
	struct stat sb;
	size_t got = 0;
	int fd, ret = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		if (errno == ENOENT)
			return KILN_ENOTFOUND;
		return kiln_fail(KILN_ERROR, "secret: %s: %s", path, strerror(errno));
	}
	if (fstat(fd, &sb) < 0) {
		ret = kiln_fail(KILN_ERROR, "secret: %s: %s", path, strerror(errno));
		goto cleanup;
	}
	if (!S_ISREG(sb.st_mode)) {
		ret = kiln_fail(KILN_ERROR, "secret: %s is not a regular file", path);
		goto cleanup;
	}
	if (sb.st_mode & (S_IRWXG | S_IRWXO)) {
		ret = kiln_fail(KILN_ERROR,
				"secret: %s has mode %04o, open to group or others; "
				"it must be 0600 (chmod 600 %s)",
				path, (unsigned)(sb.st_mode & 07777), path);
		goto cleanup;
	}
	if (sb.st_size != SECRET_KEY_BYTES) {
		ret = kiln_fail(KILN_ERROR, "secret: %s holds %lld bytes, not %d: not a kiln key",
				path, (long long)sb.st_size, SECRET_KEY_BYTES);
		goto cleanup;
	}
	while (got < sizeof(buf)) {
		ssize_t n = read(fd, buf + got, sizeof(buf) - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ret = kiln_fail(KILN_ERROR, "secret: reading %s: %s", path,
					n < 0 ? strerror(errno) : "file shrank");
			goto cleanup;
		}
		got += (size_t)n;
	}
	memcpy(out->key, buf, sizeof(buf));
cleanup:
	sodium_memzero(buf, sizeof(buf));
	close(fd);
	return ret;
}

static int write_all(int fd, const unsigned char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/*
 * Writes a new random key to a temporary file and links it into place, so that the key
 * file either does not exist or is whole. KILN_EEXISTS when another process won the race.
 */
static int create_key(const char *path)
{
	unsigned char key[SECRET_KEY_BYTES];
	char tmp[4096];
	int fd = -1, ret = 0, linked;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp.XXXXXX", path) >= (int)sizeof(tmp))
		return kiln_fail(KILN_EINVAL, "secret: path too long");
	fd = mkostemp(tmp, O_CLOEXEC); /* O_EXCL, mode 0600 */
	if (fd < 0)
		return kiln_fail(KILN_ERROR, "secret: creating %s: %s", tmp, strerror(errno));
	randombytes_buf(key, sizeof(key));
	if (fchmod(fd, 0600) < 0 || write_all(fd, key, sizeof(key)) < 0 || fsync(fd) < 0) {
		ret = kiln_fail(KILN_ERROR, "secret: writing %s: %s", tmp, strerror(errno));
		goto cleanup;
	}
	linked = link(tmp, path);
	if (linked < 0 && errno == EEXIST)
		ret = KILN_EEXISTS;
	else if (linked < 0)
		ret = kiln_fail(KILN_ERROR, "secret: creating %s: %s", path, strerror(errno));
cleanup:
	sodium_memzero(key, sizeof(key));
	close(fd);
	unlink(tmp);
	return ret;
}

int secret_key_load(struct secret_key *out, const char *path)
{
	int ret = sodium_ready();

	if (ret == 0 && (ret = read_key(out, path)) == KILN_ENOTFOUND)
		ret = kiln_fail(KILN_ENOTFOUND, "secret: %s: no such file", path);
	return ret;
}

int secret_key_load_or_create(struct secret_key *out, const char *path, int *out_created)
{
	char file[4096];
	struct stat sb;
	int ret, created = 0;

	if ((ret = sodium_ready()) < 0)
		return ret;
	/* Accept the state dir as well as the key file itself. */
	if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
		if (snprintf(file, sizeof(file), "%s/secret.key", path) >= (int)sizeof(file))
			return kiln_fail(KILN_EINVAL, "secret: path too long");
	} else if (snprintf(file, sizeof(file), "%s", path) >= (int)sizeof(file)) {
		return kiln_fail(KILN_EINVAL, "secret: path too long");
	}
	ret = read_key(out, file);
	if (ret == KILN_ENOTFOUND) {
		ret = create_key(file);
		created = ret == 0;
		if (ret == 0 || ret == KILN_EEXISTS)
			ret = read_key(out, file);
		if (ret == KILN_ENOTFOUND)
			ret = kiln_fail(KILN_ERROR, "secret: %s vanished while it was created", file);
	}
	if (ret < 0)
		return ret;
	if (out_created)
		*out_created = created;
	return 0;
}

int secret_encrypt(unsigned char **out, size_t *out_len, const struct secret_key *key,
		   const char *plaintext, const char *ad)
{
	size_t len = strlen(plaintext);
	size_t total = NONCE_BYTES + len + TAG_BYTES;
	unsigned long long clen = 0;
	unsigned char *buf;
	int ret;

	if ((ret = sodium_ready()) < 0)
		return ret;
	if (len > PLAINTEXT_MAX)
		return kiln_fail(KILN_ETOOBIG, "secret: plaintext over %d bytes", PLAINTEXT_MAX);
	buf = malloc(total);
	if (!buf)
		return kiln_fail(KILN_ERROR, "secret: out of memory");
	randombytes_buf(buf, NONCE_BYTES);
	crypto_aead_xchacha20poly1305_ietf_encrypt(buf + NONCE_BYTES, &clen,
						   (const unsigned char *)plaintext, len,
						   (const unsigned char *)ad, ad ? strlen(ad) : 0,
						   NULL, buf, key->key);
	*out = buf;
	*out_len = NONCE_BYTES + (size_t)clen;
	return 0;
}

int secret_decrypt(char **out, const struct secret_key *key, const unsigned char *ct, size_t ct_len,
		   const char *ad)
{
	unsigned long long plen = 0;
	size_t max;
	char *buf;
	int ret;

	if ((ret = sodium_ready()) < 0)
		return ret;
	if (!ct || ct_len < NONCE_BYTES + TAG_BYTES)
		return kiln_fail(KILN_EINVAL, "secret: ciphertext too short (%zu bytes)", ct_len);
	if (ct_len > NONCE_BYTES + TAG_BYTES + PLAINTEXT_MAX)
		return kiln_fail(KILN_ETOOBIG, "secret: ciphertext over its size cap");
	max = ct_len - NONCE_BYTES - TAG_BYTES;
	buf = malloc(max + 1);
	if (!buf)
		return kiln_fail(KILN_ERROR, "secret: out of memory");
	if (crypto_aead_xchacha20poly1305_ietf_decrypt((unsigned char *)buf, &plen, NULL,
						       ct + NONCE_BYTES, ct_len - NONCE_BYTES,
						       (const unsigned char *)ad, ad ? strlen(ad) : 0,
						       ct, key->key) != 0) {
		sodium_memzero(buf, max + 1);
		free(buf);
		return kiln_fail(KILN_ERROR,
				 "secret: cannot decrypt (another key, another row, or altered)");
	}
	buf[plen] = '\0';
	if (memchr(buf, '\0', (size_t)plen)) {
		sodium_memzero(buf, max + 1);
		free(buf);
		return kiln_fail(KILN_EINVAL, "secret: decrypted text holds a NUL byte");
	}
	*out = buf;
	return 0;
}

void secret_free_string(char *s)
{
	if (!s)
		return;
	sodium_memzero(s, strlen(s));
	free(s);
}

int secret_token_generate(char out[64])
{
	unsigned char raw[TOKEN_RANDOM_BYTES];
	size_t prefix = sizeof(TOKEN_PREFIX) - 1;
	int ret;

	if ((ret = sodium_ready()) < 0)
		return ret;
	/* 32 bytes -> 43 characters of URL-safe base64 without padding (+1 for the NUL). */
	_Static_assert(sizeof(TOKEN_PREFIX) - 1 + 43 + 1 <= 64, "token fits in 64 bytes");
	randombytes_buf(raw, sizeof(raw));
	memcpy(out, TOKEN_PREFIX, prefix);
	sodium_bin2base64(out + prefix, 64 - prefix, raw, sizeof(raw),
			  sodium_base64_VARIANT_URLSAFE_NO_PADDING);
	sodium_memzero(raw, sizeof(raw));
	return 0;
}

void secret_token_hash(unsigned char out[32], const char *token)
{
	/* SHA-256 needs no sodium_init(). */
	crypto_hash_sha256(out, (const unsigned char *)token, strlen(token));
}
