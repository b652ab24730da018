/* SPDX-License-Identifier: Apache-2.0 */
/* kiln-bmcsim: generates the ECDSA P-256 self-signed certificate with GnuTLS. */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include "kiln/error.h"
#include "tls.h"

static char *datum_str(const gnutls_datum_t *d)
{
	char *s = malloc(d->size + 1);
	if (s) {
		memcpy(s, d->data, d->size);
		s[d->size] = '\0';
	}
	return s;
}

int tls_cert_generate(char **out_cert, char **out_key, char *fingerprint, size_t fplen)
{
	gnutls_x509_privkey_t key = NULL;
	gnutls_x509_crt_t crt = NULL;
	gnutls_datum_t cd = { NULL, 0 }, kd = { NULL, 0 };
	char *cert = NULL, *pkey = NULL;
	unsigned char serial[16], fp[32], ip[4];
	size_t fpsize = sizeof(fp);
	int rc = KILN_ERROR, g;
	time_t now = time(NULL);

	if ((g = gnutls_x509_privkey_init(&key)) < 0 ||
	    (g = gnutls_x509_privkey_generate(key, GNUTLS_PK_ECDSA,
		GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0)) < 0 ||
	    (g = gnutls_x509_crt_init(&crt)) < 0 ||
	    (g = gnutls_rnd(GNUTLS_RND_NONCE, serial, sizeof(serial))) < 0)
		goto gnutls_error;
	serial[0] &= 0x7f;
	inet_pton(AF_INET, "127.0.0.1", ip);
	if ((g = gnutls_x509_crt_set_version(crt, 3)) < 0 ||
	    (g = gnutls_x509_crt_set_serial(crt, serial, sizeof(serial))) < 0 ||
	    (g = gnutls_x509_crt_set_activation_time(crt, now - 3600)) < 0 ||
	    (g = gnutls_x509_crt_set_expiration_time(crt, now + 3650L * 86400)) < 0 ||
	    (g = gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, "kiln-bmcsim", 11)) < 0 ||
	    (g = gnutls_x509_crt_set_issuer_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, "kiln-bmcsim", 11)) < 0 ||
	    (g = gnutls_x509_crt_set_key(crt, key)) < 0 ||
	    (g = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_DNSNAME, "localhost", 9,
						      GNUTLS_FSAN_APPEND)) < 0 ||
	    (g = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_IPADDRESS, ip, 4, GNUTLS_FSAN_APPEND)) < 0 ||
	    (g = gnutls_x509_crt_set_basic_constraints(crt, 0, -1)) < 0 ||
	    (g = gnutls_x509_crt_set_key_usage(crt, GNUTLS_KEY_DIGITAL_SIGNATURE)) < 0 ||
	    (g = gnutls_x509_crt_set_key_purpose_oid(crt, GNUTLS_KP_TLS_WWW_SERVER, 0)) < 0 ||
	    (g = gnutls_x509_crt_sign2(crt, crt, key, GNUTLS_DIG_SHA256, 0)) < 0 ||
	    (g = gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, &cd)) < 0 ||
	    (g = gnutls_x509_privkey_export2(key, GNUTLS_X509_FMT_PEM, &kd)) < 0 ||
	    (g = gnutls_x509_crt_get_fingerprint(crt, GNUTLS_DIG_SHA256, fp, &fpsize)) < 0)
		goto gnutls_error;
	cert = datum_str(&cd);
	pkey = datum_str(&kd);
	if (!cert || !pkey)
		goto cleanup;
	fingerprint[0] = '\0';
	for (size_t i = 0; i < fpsize && 3 * i + 3 <= fplen; i++)
		snprintf(fingerprint + 3 * i, 4, i + 1 < fpsize ? "%02X:" : "%02X", fp[i]);
	*out_cert = cert;
	*out_key = pkey;
	cert = pkey = NULL;
	rc = 0;
	goto cleanup;
gnutls_error:
	rc = kiln_fail(KILN_ERROR, "tls: generating the certificate: %s", gnutls_strerror(g));
cleanup:
	free(cert);
	free(pkey);
	gnutls_free(cd.data);
	gnutls_free(kd.data);
	if (crt)
		gnutls_x509_crt_deinit(crt);
	if (key)
		gnutls_x509_privkey_deinit(key);
	return rc;
}
