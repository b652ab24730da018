/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for server/secret.c: key file handling, AEAD round trips and failures, tokens. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kiln/error.h"
#include "daemon/secret.h"

struct tmp {
	char dir[64];
	char key[128];
};

static int tmp_setup(void **state)
{
	struct tmp *t = calloc(1, sizeof(*t));

	assert_non_null(t);
	snprintf(t->dir, sizeof(t->dir), "/tmp/kiln-secret-XXXXXX");
	assert_non_null(mkdtemp(t->dir));
	snprintf(t->key, sizeof(t->key), "%s/secret.key", t->dir);
	*state = t;
	return 0;
}

static int tmp_teardown(void **state)
{
	struct tmp *t = *state;

	unlink(t->key);
	rmdir(t->dir);
	free(t);
	return 0;
}

static void key_fill(struct secret_key *k, unsigned char v)
{
	memset(k->key, v, sizeof(k->key));
}

static void test_round_trip(void **state)
{
	struct secret_key k;
	unsigned char *ct = NULL, *ct2 = NULL;
	size_t len = 0, len2 = 0;
	char *pt = NULL;

	(void)state;
	key_fill(&k, 7);
	assert_int_equal(secret_encrypt(&ct, &len, &k, "hunter2-p@ss", "gpu01"), 0);
	assert_int_equal(len, 24 + strlen("hunter2-p@ss") + 16);
	assert_null(memmem(ct, len, "hunter2", 7));
	assert_int_equal(secret_decrypt(&pt, &k, ct, len, "gpu01"), 0);
	assert_string_equal(pt, "hunter2-p@ss");
	secret_free_string(pt);
	pt = NULL;

	/* A fresh nonce each time: the same input never gives the same bytes. */
	assert_int_equal(secret_encrypt(&ct2, &len2, &k, "hunter2-p@ss", "gpu01"), 0);
	assert_int_equal(len, len2);
	assert_memory_not_equal(ct, ct2, len);
	free(ct2);
	ct2 = NULL;

	/* No associated data, and an empty plaintext. */
	assert_int_equal(secret_encrypt(&ct2, &len2, &k, "", NULL), 0);
	assert_int_equal(secret_decrypt(&pt, &k, ct2, len2, NULL), 0);
	assert_string_equal(pt, "");
	secret_free_string(pt);
	secret_free_string(NULL);
	free(ct2);
	free(ct);
}

static void test_wrong_key_or_ad(void **state)
{
	struct secret_key k, other;
	unsigned char *ct = NULL;
	size_t len = 0;
	char *pt = NULL;

	(void)state;
	key_fill(&k, 1);
	key_fill(&other, 2);
	assert_int_equal(secret_encrypt(&ct, &len, &k, "password", "gpu01"), 0);
	assert_true(secret_decrypt(&pt, &other, ct, len, "gpu01") < 0);
	assert_null(pt);
	assert_non_null(strstr(kiln_error_last(), "cannot decrypt"));
	assert_true(secret_decrypt(&pt, &k, ct, len, "gpu02") < 0);
	assert_true(secret_decrypt(&pt, &k, ct, len, NULL) < 0);
	assert_null(pt);
	free(ct);
}

static void test_tampered(void **state)
{
	struct secret_key k;
	unsigned char *ct = NULL;
	size_t len = 0;
	char *pt = NULL;

	(void)state;
	key_fill(&k, 3);
	assert_int_equal(secret_encrypt(&ct, &len, &k, "password", "n"), 0);
	/* Every byte matters: nonce, ciphertext and tag. */
	for (size_t i = 0; i < len; i++) {
		ct[i] ^= 0x01;
		assert_true(secret_decrypt(&pt, &k, ct, len, "n") < 0);
		ct[i] ^= 0x01;
	}
	assert_int_equal(secret_decrypt(&pt, &k, ct, len - 1, "n"), KILN_ERROR);
	assert_int_equal(secret_decrypt(&pt, &k, ct, 39, "n"), KILN_EINVAL);
	assert_int_equal(secret_decrypt(&pt, &k, NULL, 0, "n"), KILN_EINVAL);
	assert_null(pt);
	assert_int_equal(secret_decrypt(&pt, &k, ct, len, "n"), 0);
	assert_string_equal(pt, "password");
	secret_free_string(pt);
	free(ct);
}

static void test_key_create_and_reload(void **state)
{
	struct tmp *t = *state;
	struct secret_key a, b, c;
	struct stat sb;
	int created = -1;

	assert_int_equal(secret_key_load_or_create(&a, t->key, &created), 0);
	assert_int_equal(created, 1);
	assert_int_equal(stat(t->key, &sb), 0);
	assert_int_equal(sb.st_mode & 07777, 0600);
	assert_int_equal(sb.st_size, SECRET_KEY_BYTES);

	assert_int_equal(secret_key_load_or_create(&b, t->key, &created), 0);
	assert_int_equal(created, 0);
	assert_memory_equal(a.key, b.key, SECRET_KEY_BYTES);

	/* The state dir names the same file. */
	assert_int_equal(secret_key_load_or_create(&c, t->dir, &created), 0);
	assert_int_equal(created, 0);
	assert_memory_equal(a.key, c.key, SECRET_KEY_BYTES);

	/* No temporary file is left behind. */
	assert_int_equal(rmdir(t->dir), -1);
	unlink(t->key);
	assert_int_equal(rmdir(t->dir), 0);
	assert_int_equal(mkdir(t->dir, 0700), 0);
}

static void write_file(const char *path, size_t n, mode_t mode)
{
	unsigned char buf[64];
	int fd;

	memset(buf, 0x5a, sizeof(buf));
	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	assert_true(fd >= 0);
	assert_int_equal(fchmod(fd, mode), 0);
	assert_int_equal(write(fd, buf, n), (ssize_t)n);
	close(fd);
}

static void test_key_refused(void **state)
{
	struct tmp *t = *state;
	struct secret_key k;
	int created = -1;

	write_file(t->key, 31, 0600);
	assert_true(secret_key_load_or_create(&k, t->key, &created) < 0);
	assert_non_null(strstr(kiln_error_last(), "31 bytes"));
	write_file(t->key, 33, 0600);
	assert_true(secret_key_load_or_create(&k, t->key, &created) < 0);
	write_file(t->key, 0, 0600);
	assert_true(secret_key_load_or_create(&k, t->key, &created) < 0);

	write_file(t->key, 32, 0640);
	assert_true(secret_key_load_or_create(&k, t->key, &created) < 0);
	assert_non_null(strstr(kiln_error_last(), "0640"));
	write_file(t->key, 32, 0604);
	assert_true(secret_key_load_or_create(&k, t->key, &created) < 0);
	assert_int_equal(created, -1);

	/* The refused file is left as it was, and a good one loads. */
	write_file(t->key, 32, 0600);
	assert_int_equal(secret_key_load_or_create(&k, t->key, &created), 0);
	assert_int_equal(created, 0);
	assert_int_equal(k.key[0], 0x5a);
}

static void test_token(void **state)
{
	char a[64], b[64];

	(void)state;
	assert_int_equal(secret_token_generate(a), 0);
	assert_int_equal(secret_token_generate(b), 0);
	assert_int_equal(strlen(a), 5 + 43);
	assert_int_equal(strncmp(a, "kiln_", 5), 0);
	for (const char *p = a + 5; *p; p++)
		assert_non_null(strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
				       *p));
	assert_string_not_equal(a, b);
}

static void test_token_hash(void **state)
{
	/* FIPS 180-2 test vector for "abc". */
	static const unsigned char abc[32] = {
		0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea, 0x41, 0x41, 0x40, 0xde, 0x5d, 0xae, 0x22, 0x23,
		0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17, 0x7a, 0x9c, 0xb4, 0x10, 0xff, 0x61, 0xf2, 0x00, 0x15, 0xad,
	};
	unsigned char h[32], h2[32];

	(void)state;
	secret_token_hash(h, "abc");
	assert_memory_equal(h, abc, 32);
	secret_token_hash(h, "kiln_x");
	secret_token_hash(h2, "kiln_y");
	assert_memory_not_equal(h, h2, 32);
}

/* A sealed secret opens again in this process; NULL stays none. */
static void test_seal(void **state)
{
	struct secret_sealed s = { 0 }, none = { 0 };
	char *back = NULL;

	(void)state;
	assert_int_equal(secret_seal(&s, "hunter2"), 0);
	assert_non_null(s.ct);
	assert_null(memmem(s.ct, s.len, "hunter2", 7));
	assert_int_equal(secret_unseal(&back, &s), 0);
	assert_string_equal(back, "hunter2");
	secret_free_string(back);
	secret_sealed_clear(&s);
	assert_null(s.ct);
	assert_int_equal(secret_seal(&none, NULL), 0);
	assert_null(none.ct);
	assert_int_equal(secret_unseal(&back, &none), 0);
	assert_null(back);
}

/* Equal secrets give one fingerprint, others another; the text is not in it. */
static void test_fingerprint(void **state)
{
	char a[65], b[65], c[65], n[65];

	(void)state;
	secret_fingerprint(a, "hunter2");
	secret_fingerprint(b, "hunter2");
	secret_fingerprint(c, "hunter3");
	secret_fingerprint(n, NULL);
	assert_string_equal(a, b);
	assert_string_not_equal(a, c);
	assert_string_not_equal(a, n);
	assert_int_equal(strlen(a), 64);
}

/* The state dir's key lives in sodium_malloc'd memory, zeroed at first. */
static void test_key_memory(void **state)
{
	struct secret_key *k = secret_key_new();

	(void)state;
	assert_non_null(k);
	for (size_t i = 0; i < sizeof(k->key); i++)
		assert_int_equal(k->key[i], 0);
	secret_key_free(k);
	secret_key_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_wrong_key_or_ad),
		cmocka_unit_test(test_tampered),
		cmocka_unit_test_setup_teardown(test_key_create_and_reload, tmp_setup, tmp_teardown),
		cmocka_unit_test_setup_teardown(test_key_refused, tmp_setup, tmp_teardown),
		cmocka_unit_test(test_token),
		cmocka_unit_test(test_token_hash),
		cmocka_unit_test(test_seal),
		cmocka_unit_test(test_fingerprint),
		cmocka_unit_test(test_key_memory),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
