/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for server/tlscert.c: the self-signed ECDSA P-256 certificate, its reuse, its
 * fingerprint, and a real HTTPS handshake against the REST server trusting it. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <curl/curl.h>
#include <gnutls/x509.h>

#include "api/api.h"
#include "kiln/http.h"
#include "store/store.h"
#include "daemon/tlscert.h"

static char dir[64], crt[128], key[128], db[128];

static int dir_setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/kiln-tls-XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(crt, sizeof(crt), "%s/tls.crt", dir);
	snprintf(key, sizeof(key), "%s/tls.key", dir);
	snprintf(db, sizeof(db), "%s/kiln.db", dir);
	return 0;
}

static int dir_teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_generate_then_reuse(void **state)
{
	struct tlscert a = { 0 }, b = { 0 };
	gnutls_x509_crt_t x;
	gnutls_datum_t d;
	unsigned bits = 0;
	struct stat st;

	(void)state;
	assert_int_equal(tlscert_ensure(&a, crt, key, "127.0.0.1"), 0);
	assert_true(a.generated);
	assert_int_equal(stat(key, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	/* "AB:CD:..." : 32 bytes, 95 characters. */
	assert_int_equal(strlen(a.fingerprint), 95);
	assert_int_equal(a.fingerprint[2], ':');

	assert_int_equal(gnutls_x509_crt_init(&x), 0);
	d.data = (unsigned char *)a.cert_pem;
	d.size = (unsigned)strlen(a.cert_pem);
	assert_int_equal(gnutls_x509_crt_import(x, &d, GNUTLS_X509_FMT_PEM), 0);
	assert_int_equal(gnutls_x509_crt_get_pk_algorithm(x, &bits), GNUTLS_PK_ECDSA);
	assert_int_equal(bits, 256);
	assert_true(gnutls_x509_crt_check_hostname(x, "localhost"));
	assert_true(gnutls_x509_crt_check_hostname(x, "127.0.0.1"));
	gnutls_x509_crt_deinit(x);

	assert_int_equal(tlscert_ensure(&b, crt, key, "127.0.0.1"), 0);
	assert_false(b.generated);
	assert_string_equal(a.fingerprint, b.fingerprint);
	assert_string_equal(a.cert_pem, b.cert_pem);
	tlscert_clear(&a);
	tlscert_clear(&b);
}

static void test_mismatched_pair(void **state)
{
	char crt2[160], key2[160];
	struct tlscert a = { 0 }, b = { 0 }, c = { 0 };

	(void)state;
	snprintf(crt2, sizeof(crt2), "%s/other.crt", dir);
	snprintf(key2, sizeof(key2), "%s/other.key", dir);
	assert_int_equal(tlscert_ensure(&a, crt, key, NULL), 0);
	assert_int_equal(tlscert_ensure(&b, crt2, key2, NULL), 0);
	assert_string_not_equal(a.fingerprint, b.fingerprint);
	assert_true(tlscert_load(&c, crt, key2) < 0);
	/* A certificate whose key is gone is not silently replaced. */
	unlink(key2);
	assert_true(tlscert_ensure(&c, crt2, key2, NULL) < 0);
	assert_true(tlscert_load(&c, "/nonexistent/cert.pem", key) < 0);
	tlscert_clear(&a);
	tlscert_clear(&b);
}

static size_t discard(char *p, size_t s, size_t n, void *ud)
{
	(void)p;
	(void)ud;
	return s * n;
}

/* libmicrohttpd serves the generated pair; curl (OpenSSL) trusts it by file and by pin. */
static void test_https_handshake(void **state)
{
	struct tlscert t = { 0 };
	struct api_listen l;
	struct api_server *srv = NULL;
	struct api_options opt = { 0 };
	struct secret_key sk = { { 0 } };
	struct kiln_http_response resp = { 0 };
	struct kiln_tls_trust pin = { 0 }, wrong = { 0 };
	struct store *st = NULL;
	char url[128], fp[65];
	long code = 0;
	int fd;
	CURL *h;

	(void)state;
	assert_int_equal(store_open(&st, db), 0);
	store_close(st);
	assert_int_equal(tlscert_ensure(&t, crt, key, "127.0.0.1"), 0);
	assert_int_equal(api_listen_parse(&l, "127.0.0.1:0"), 0);
	assert_true(l.loopback);
	assert_int_equal(api_listen_open(&fd, &l), 0);
	opt.db_path = db;
	opt.key = &sk;
	opt.listen_fd = fd;
	opt.threads = 1;
	opt.max_connections = 64;
	opt.connection_timeout = 10;
	opt.tls_cert_pem = t.cert_pem;
	opt.tls_key_pem = t.key_pem;
	assert_int_equal(api_server_start(&srv, &opt), 0);
	api_listen_url(url, sizeof(url), &l, 1);
	assert_int_equal(strncmp(url, "https://127.0.0.1:", 18), 0);
	strncat(url, "/api/v1/health", sizeof(url) - strlen(url) - 1);

	h = curl_easy_init();
	assert_non_null(h);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_CAINFO, crt);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
	assert_int_equal(curl_easy_perform(h), CURLE_OK);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	assert_int_equal(code, 200);
	curl_easy_cleanup(h);

	assert_int_equal(kiln_http_fingerprint_normalize(fp, t.fingerprint), 0);
	pin.fingerprint = fp;
	assert_int_equal(kiln_http_request(&resp, "GET", url, NULL, NULL, 0, &pin, 5000, 0), 0);
	assert_int_equal(resp.status, 200);
	kiln_http_response_free(&resp);
	memset(&resp, 0, sizeof(resp));
	wrong.fingerprint = "0000000000000000000000000000000000000000000000000000000000000000";
	assert_true(kiln_http_request(&resp, "GET", url, NULL, NULL, 0, &wrong, 5000, 0) < 0);
	kiln_http_response_free(&resp);

	api_server_stop(srv);
	tlscert_clear(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_generate_then_reuse),
		cmocka_unit_test(test_mismatched_pair),
		cmocka_unit_test(test_https_handshake),
	};

	return cmocka_run_group_tests(tests, dir_setup, dir_teardown);
}
