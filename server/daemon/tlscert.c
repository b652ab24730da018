/* SPDX-License-Identifier: Apache-2.0 */
/* Self-signed ECDSA P-256 certificates for kilnd (GnuTLS), and loading given ones. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/abstract.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <sodium.h>

#include "kiln/error.h"
#include "daemon/tlscert.h"

#define PEM_MAX (256 * 1024)
#define TEN_YEARS (10L * 365 * 24 * 3600)

static int file_read(char **out, const char *path)
{
	char *data = NULL;
	size_t len = 0;
	struct stat stbuf;
	int fd, rc = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return kiln_fail(KILN_ERROR, "cannot open %s: %s", path, strerror(errno));
	if (fstat(fd, &stbuf) < 0 || !S_ISREG(stbuf.st_mode) || stbuf.st_size > PEM_MAX) {
		rc = kiln_fail(KILN_EINVAL, "%s: not a regular file of at most %d bytes", path,
			       PEM_MAX);
		goto cleanup;
	}
	data = malloc((size_t)stbuf.st_size + 1);
	if (!data) {
		rc = kiln_fail(KILN_ERROR, "out of memory");
		goto cleanup;
	}
	while (len < (size_t)stbuf.st_size) {
		ssize_t r = read(fd, data + len, (size_t)stbuf.st_size - len);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			rc = kiln_fail(KILN_ERROR, "cannot read %s: %s", path,
				       r < 0 ? strerror(errno) : "file shrank");
			goto cleanup;
		}
		len += (size_t)r;
	}
	data[len] = '\0';
	*out = data;
	data = NULL;
cleanup:
	free(data);
	close(fd);
	return rc;
}

static int file_write_new(const char *path, const void *data, size_t len, mode_t mode)
{
	const char *p = data;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);

	if (fd < 0)
		return kiln_fail(KILN_ERROR, "cannot create %s: %s", path, strerror(errno));
	while (len > 0) {
		ssize_t w = write(fd, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			int err = errno;

			close(fd);
			return kiln_fail(KILN_ERROR, "cannot write %s: %s", path, strerror(err));
		}
		p += w;
		len -= (size_t)w;
	}
	if (fsync(fd) < 0 || close(fd) < 0)
		return kiln_fail(KILN_ERROR, "cannot write %s: %s", path, strerror(errno));
	return 0;
}

static int fingerprint_of(char out[96], gnutls_x509_crt_t crt)
{
	unsigned char md[32];
	size_t mdlen = sizeof(md);

	if (gnutls_x509_crt_get_fingerprint(crt, GNUTLS_DIG_SHA256, md, &mdlen) < 0 || mdlen != 32)
		return kiln_fail(KILN_ERROR, "cannot compute the certificate fingerprint");
	for (size_t i = 0; i < 32; i++)
		snprintf(out + i * 3, 4, "%02X%s", md[i], i + 1 < 32 ? ":" : "");
	return 0;
}

/* Parses the PEM pair, checks that the key matches the certificate, fills the fingerprint. */
static int pair_check(struct tlscert *c, const char *cert_what, const char *key_what)
{
	gnutls_x509_crt_t crt = NULL;
	gnutls_x509_privkey_t key = NULL;
	gnutls_datum_t d;
	unsigned char kid[64], cid[64];
	size_t klen = sizeof(kid), clen = sizeof(cid);
	int rc = 0, e;

	if (gnutls_x509_crt_init(&crt) < 0 || gnutls_x509_privkey_init(&key) < 0) {
		rc = kiln_fail(KILN_ERROR, "gnutls: out of memory");
		goto cleanup;
	}
	d.data = (unsigned char *)c->cert_pem;
	d.size = (unsigned)strlen(c->cert_pem);
	e = gnutls_x509_crt_import(crt, &d, GNUTLS_X509_FMT_PEM);
	if (e < 0) {
		rc = kiln_fail(KILN_EINVAL, "%s: not a PEM certificate: %s", cert_what,
			       gnutls_strerror(e));
		goto cleanup;
	}
	d.data = (unsigned char *)c->key_pem;
	d.size = (unsigned)strlen(c->key_pem);
	e = gnutls_x509_privkey_import(key, &d, GNUTLS_X509_FMT_PEM);
	if (e < 0) {
		rc = kiln_fail(KILN_EINVAL, "%s: not a PEM private key: %s", key_what,
			       gnutls_strerror(e));
		goto cleanup;
	}
	if (gnutls_x509_privkey_get_key_id(key, GNUTLS_KEYID_USE_SHA256, kid, &klen) < 0 ||
	    gnutls_x509_crt_get_key_id(crt, GNUTLS_KEYID_USE_SHA256, cid, &clen) < 0 ||
	    klen != clen || memcmp(kid, cid, klen) != 0) {
		rc = kiln_fail(KILN_EINVAL, "%s does not match the certificate %s", key_what,
			       cert_what);
		goto cleanup;
	}
	rc = fingerprint_of(c->fingerprint, crt);
cleanup:
	gnutls_x509_crt_deinit(crt);
	gnutls_x509_privkey_deinit(key);
	return rc;
}

int tlscert_load(struct tlscert *out, const char *cert_path, const char *key_path)
{
	struct tlscert c = { 0 };
	int rc;

	rc = file_read(&c.cert_pem, cert_path);
	if (rc == 0)
		rc = file_read(&c.key_pem, key_path);
	if (rc == 0)
		rc = pair_check(&c, cert_path, key_path);
	if (rc < 0) {
		tlscert_clear(&c);
		return rc;
	}
	*out = c;
	return 0;
}

static int san_add_ip(gnutls_x509_crt_t crt, const struct sockaddr *sa)
{
	const void *addr;
	unsigned len;

	if (sa->sa_family == AF_INET) {
		addr = &((const struct sockaddr_in *)(const void *)sa)->sin_addr;
		len = 4;
	} else if (sa->sa_family == AF_INET6) {
		addr = &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
		len = 16;
	} else {
		return 0;
	}
	return gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_IPADDRESS, addr, len,
						    GNUTLS_FSAN_APPEND);
}

/* Names the certificate is for: this host, localhost, loopback, the local interfaces. */
static int san_fill(gnutls_x509_crt_t crt, const char *hostname, const char *listen_host)
{
	struct ifaddrs *ifs = NULL;
	struct sockaddr_in lo4 = { .sin_family = AF_INET };
	struct sockaddr_in6 lo6 = { .sin6_family = AF_INET6 };
	struct in_addr a4;
	struct in6_addr a6;
	int e;

	e = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_DNSNAME, "localhost",
						 (unsigned)strlen("localhost"), GNUTLS_FSAN_APPEND);
	if (e == 0 && hostname[0] && strcmp(hostname, "localhost") != 0)
		e = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_DNSNAME, hostname,
							 (unsigned)strlen(hostname),
							 GNUTLS_FSAN_APPEND);
	lo4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	lo6.sin6_addr = in6addr_loopback;
	if (e == 0)
		e = san_add_ip(crt, (struct sockaddr *)&lo4);
	if (e == 0)
		e = san_add_ip(crt, (struct sockaddr *)&lo6);
	if (e == 0 && getifaddrs(&ifs) == 0) {
		for (struct ifaddrs *i = ifs; i && e == 0; i = i->ifa_next) {
			if (!i->ifa_addr)
				continue;
			if (i->ifa_addr->sa_family == AF_INET &&
			    ((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr.s_addr ==
				    htonl(INADDR_LOOPBACK))
				continue;
			if (i->ifa_addr->sa_family == AF_INET6 &&
			    IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *)(void *)i->ifa_addr)->sin6_addr))
				continue;
			e = san_add_ip(crt, i->ifa_addr);
		}
		freeifaddrs(ifs);
	}
	/* A listen address that is not a local interface's (a NAT address): name it too. */
	if (e == 0 && listen_host && inet_pton(AF_INET, listen_host, &a4) == 1 &&
	    a4.s_addr != htonl(INADDR_ANY) && a4.s_addr != htonl(INADDR_LOOPBACK))
		e = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_IPADDRESS, &a4, 4,
							 GNUTLS_FSAN_APPEND);
	else if (e == 0 && listen_host && inet_pton(AF_INET6, listen_host, &a6) == 1 &&
		 !IN6_IS_ADDR_UNSPECIFIED(&a6) && !IN6_IS_ADDR_LOOPBACK(&a6))
		e = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_IPADDRESS, &a6, 16,
							 GNUTLS_FSAN_APPEND);
	if (e < 0)
		return kiln_fail(KILN_ERROR, "gnutls: subject names: %s", gnutls_strerror(e));
	return 0;
}

static int generate(struct tlscert *c, const char *listen_host)
{
	gnutls_x509_privkey_t key = NULL;
	gnutls_x509_crt_t crt = NULL;
	gnutls_datum_t cert_pem = { NULL, 0 }, key_pem = { NULL, 0 };
	unsigned char serial[16], key_id[64];
	size_t key_id_len = sizeof(key_id);
	char hostname[256] = "";
	time_t now = time(NULL);
	int rc = 0, e;

	if (gethostname(hostname, sizeof(hostname) - 1) < 0)
		hostname[0] = '\0';
	hostname[sizeof(hostname) - 1] = '\0';
	randombytes_buf(serial, sizeof(serial));
	serial[0] &= 0x7f; /* a positive serial number */
	e = gnutls_x509_privkey_init(&key);
	if (e == 0)
		e = gnutls_x509_privkey_generate(key, GNUTLS_PK_ECDSA,
						 GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0);
	if (e == 0)
		e = gnutls_x509_crt_init(&crt);
	if (e == 0)
		e = gnutls_x509_crt_set_version(crt, 3);
	if (e == 0)
		e = gnutls_x509_crt_set_serial(crt, serial, sizeof(serial));
	if (e == 0)
		e = gnutls_x509_crt_set_activation_time(crt, now - 3600);
	if (e == 0)
		e = gnutls_x509_crt_set_expiration_time(crt, now + TEN_YEARS);
	if (e == 0)
		e = gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0,
						  hostname[0] ? hostname : "kilnd",
						  (unsigned)strlen(hostname[0] ? hostname : "kilnd"));
	if (e == 0)
		e = gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_ORGANIZATION_NAME, 0,
						  "kiln (self-signed)", 18);
	if (e == 0)
		e = gnutls_x509_crt_set_key(crt, key);
	/* Its own trust anchor: clients load it with --ca, so it is a CA for itself. */
	if (e == 0)
		e = gnutls_x509_crt_set_basic_constraints(crt, 1, 0);
	if (e == 0)
		e = gnutls_x509_crt_set_key_usage(crt, GNUTLS_KEY_DIGITAL_SIGNATURE |
							       GNUTLS_KEY_KEY_CERT_SIGN);
	if (e == 0)
		e = gnutls_x509_crt_set_key_purpose_oid(crt, GNUTLS_KP_TLS_WWW_SERVER, 0);
	if (e == 0)
		e = gnutls_x509_privkey_get_key_id(key, 0, key_id, &key_id_len);
	if (e == 0)
		e = gnutls_x509_crt_set_subject_key_id(crt, key_id, key_id_len);
	if (e < 0) {
		rc = kiln_fail(KILN_ERROR, "gnutls: certificate: %s", gnutls_strerror(e));
		goto cleanup;
	}
	rc = san_fill(crt, hostname, listen_host);
	if (rc < 0)
		goto cleanup;
	e = gnutls_x509_crt_sign2(crt, crt, key, GNUTLS_DIG_SHA256, 0);
	if (e == 0)
		e = gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, &cert_pem);
	if (e == 0)
		e = gnutls_x509_privkey_export2(key, GNUTLS_X509_FMT_PEM, &key_pem);
	if (e < 0) {
		rc = kiln_fail(KILN_ERROR, "gnutls: signing: %s", gnutls_strerror(e));
		goto cleanup;
	}
	c->cert_pem = strndup((const char *)cert_pem.data, cert_pem.size);
	c->key_pem = strndup((const char *)key_pem.data, key_pem.size);
	if (!c->cert_pem || !c->key_pem) {
		rc = kiln_fail(KILN_ERROR, "out of memory");
		goto cleanup;
	}
	rc = fingerprint_of(c->fingerprint, crt);
cleanup:
	if (key_pem.data) {
		sodium_memzero(key_pem.data, key_pem.size);
		gnutls_free(key_pem.data);
	}
	gnutls_free(cert_pem.data);
	gnutls_x509_crt_deinit(crt);
	gnutls_x509_privkey_deinit(key);
	return rc;
}

int tlscert_ensure(struct tlscert *out, const char *cert_path, const char *key_path,
		   const char *listen_host)
{
	struct tlscert c = { 0 };
	int have_cert = access(cert_path, F_OK) == 0, have_key = access(key_path, F_OK) == 0;
	int rc;

	if (have_cert && have_key)
		return tlscert_load(out, cert_path, key_path);
	if (have_cert != have_key)
		return kiln_fail(KILN_ERROR, "%s exists without %s; remove it to generate a new pair",
				 have_cert ? cert_path : key_path, have_cert ? key_path : cert_path);
	rc = generate(&c, listen_host);
	/* The key first: a certificate without its key would block the next start. */
	if (rc == 0)
		rc = file_write_new(key_path, c.key_pem, strlen(c.key_pem), 0600);
	if (rc == 0) {
		rc = file_write_new(cert_path, c.cert_pem, strlen(c.cert_pem), 0644);
		if (rc < 0)
			unlink(key_path);
	}
	if (rc < 0) {
		tlscert_clear(&c);
		return rc;
	}
	c.generated = 1;
	*out = c;
	return 0;
}

void tlscert_clear(struct tlscert *c)
{
	if (!c)
		return;
	if (c->key_pem) {
		sodium_memzero(c->key_pem, strlen(c->key_pem));
		free(c->key_pem);
	}
	free(c->cert_pem);
	memset(c, 0, sizeof(*c));
}
