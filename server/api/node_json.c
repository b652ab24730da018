/* SPDX-License-Identifier: Apache-2.0 */
/* Nodes <-> JSON for the REST API: parsing and validating every field, never showing the password. */
#include <arpa/inet.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/node_json.h"
#include "kiln/error.h"
#include "kiln/http.h"
#include "kiln/json.h"
#include "kiln/noderange.h"
#include "kiln/parse.h"

#define TEXT_MAX 64
#define PASSWORD_MAX 256
#define PATH_MAX_LEN 4096
#define GROUPS_MAX 64
#define HOST_MAX 253

static const char *const node_fields[] = {
	"name", "groups", "rack", "bmc", "bmc_user", "bmc_password", "tls", "tls_ca_file",
	"tls_fingerprint", "ipmi_cipher", "ipmi_privilege", "ipmi_workarounds", "sol",
	"bmc_system", NULL,
};

static const char *const tls_modes[] = { "verify", "insecure", "ca", "fingerprint" };

/* FreeIPMI's workaround names (its tools' --workaround-flags), the union over the tools. */
static const char *const ipmi_workaround_names[] = {
	"assumebmcowner", "assumeio", "assumemaxsdrrecordcount", "assumesystemevent", "authcap",
	"discretereading", "endianseq", "forcepermsg", "guidformat", "idzero", "ignoreauthcode",
	"ignorescanningdisabled", "integritycheckvalue", "intel20", "ipmiping", "noauthcodecheck",
	"nochecksumcheck", "opensesspriv", "serialalertsdeferred", "solchannelsupport",
	"solpacketseq", "solpayloadsize", "solport", "solstatus", "spinpoll", "sun20",
	"supermicro20", "unexpectedauth", NULL,
};

/* What one request changed, for the cross-field checks that follow the fields. */
struct apply {
	const struct secret_key *key;
	char *old_name;          /* name before this request (NULL when creating) */
	int tls_given, ca_given, fp_given, bmc_cleared;
	int creds_changed;
	const char *password;    /* borrowed from the body; encrypted at the end */
	int password_given;      /* 1: set/cleared by this request */
};

static int bad(const char **out_field, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int bad(const char **out_field, const char *field, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	*out_field = field;
	return kiln_fail(KILN_EINVAL, "%s", msg);
}

/* The folder nodes' CA files must be in ([bmc] ca_dir); "" allows any absolute path. Set
 * once at start, before the server threads. */
static char ca_dir[PATH_MAX_LEN];

void node_json_ca_dir_set(const char *dir)
{
	size_t n;

	snprintf(ca_dir, sizeof(ca_dir), "%s", dir ? dir : "");
	n = strlen(ca_dir);
	while (n > 1 && ca_dir[n - 1] == '/')
		ca_dir[--n] = '\0';
}

/* Whether path lies in ca_dir, judged from the text alone: kilnd does not look at the file
 * here, so the API tells nothing of files outside the folder. */
static int ca_path_allowed(const char *path)
{
	size_t n = strlen(ca_dir);
	const char *p;

	if (!ca_dir[0])
		return 1;
	if (strncmp(path, ca_dir, n) != 0 || path[n] != '/' || !path[n + 1])
		return 0;
	for (p = path + n; *p; p++) /* no "." or ".." segment leads out of it */
		if (p[0] == '/' && p[1] == '.' &&
		    (p[2] == '/' || !p[2] || (p[2] == '.' && (p[3] == '/' || !p[3]))))
			return 0;
	return 1;
}

/* Printable text of 1..max bytes (UTF-8 allowed, no control characters). */
static bool text_valid(const char *s, size_t len, size_t max)
{
	if (len == 0 || len > max || strlen(s) != len)
		return false;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			return false;
	return true;
}

static int set_str(char **dst, const char *s)
{
	char *copy = NULL;

	if (s) {
		copy = strdup(s);
		if (!copy)
			return kiln_fail(KILN_ERROR, "out of memory");
	}
	free(*dst);
	*dst = copy;
	return 0;
}

/* Reads a field that is a string or null; *out NULL for null. */
static int get_text(const char **out, json_t *v, const char *field, size_t max, bool nullable,
		    const char **out_field)
{
	if (json_is_null(v)) {
		if (!nullable)
			return bad(out_field, field, "field '%s' cannot be null", field);
		*out = NULL;
		return 0;
	}
	if (!json_is_string(v))
		return bad(out_field, field, "field '%s' must be a string", field);
	if (!text_valid(json_string_value(v), json_string_length(v), max))
		return bad(out_field, field,
			   "field '%s' must be 1 to %zu printable characters", field, max);
	*out = json_string_value(v);
	return 0;
}

static int default_port(enum node_bmc_protocol p)
{
	switch (p) {
	case BMC_REDFISH: return 443;
	case BMC_REDFISH_HTTP: return 80;
	case BMC_IPMI: return 623;
	case BMC_NONE: break;
	}
	return 0;
}

static const char *scheme_of(enum node_bmc_protocol p)
{
	switch (p) {
	case BMC_REDFISH: return "redfish";
	case BMC_REDFISH_HTTP: return "redfish+http";
	case BMC_IPMI: return "ipmi";
	case BMC_NONE: break;
	}
	return "none";
}

static bool hostname_valid(const char *h, size_t len)
{
	if (len == 0 || len > HOST_MAX || h[0] == '-' || h[0] == '.')
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = h[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '.'))
			return false;
	}
	return true;
}

/*
 * Parses SCHEME://HOST[:PORT] (HOST may be [IPv6]) into its parts; *out_host is malloc'd
 * without brackets, *out_port 0 when absent.
 */
static int url_parse(enum node_bmc_protocol *out_proto, char **out_host, int *out_port,
		     const char *url, const char *field, const char **out_field)
{
	static const struct { const char *prefix; enum node_bmc_protocol proto; } schemes[] = {
		{ "redfish://", BMC_REDFISH },
		{ "redfish+http://", BMC_REDFISH_HTTP },
		{ "ipmi://", BMC_IPMI },
	};
	enum node_bmc_protocol proto = BMC_NONE;
	const char *p = NULL, *host, *port_text = NULL;
	size_t host_len;
	char hostbuf[HOST_MAX + 1];
	int port = 0;

	for (size_t i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++) {
		size_t n = strlen(schemes[i].prefix);

		if (strncmp(url, schemes[i].prefix, n) == 0) {
			proto = schemes[i].proto;
			p = url + n;
			break;
		}
	}
	if (!p)
		return bad(out_field, field,
			   "field '%s' must be redfish://HOST[:PORT], redfish+http://HOST:PORT or "
			   "ipmi://HOST[:PORT]",
			   field);
	if (*p == '[') {
		const char *close = strchr(p, ']');
		struct in6_addr a6;

		if (!close || (size_t)(close - p - 1) > HOST_MAX)
			return bad(out_field, field, "field '%s': unterminated [IPv6] address", field);
		host = p + 1;
		host_len = (size_t)(close - host);
		memcpy(hostbuf, host, host_len);
		hostbuf[host_len] = '\0';
		if (inet_pton(AF_INET6, hostbuf, &a6) != 1)
			return bad(out_field, field, "field '%s': '%s' is not an IPv6 address", field,
				   hostbuf);
		p = close + 1;
	} else {
		host = p;
		host_len = strcspn(p, ":/?#");
		if (!hostname_valid(host, host_len))
			return bad(out_field, field, "field '%s': the host must be a name or an address",
				   field);
		memcpy(hostbuf, host, host_len);
		hostbuf[host_len] = '\0';
		p += host_len;
	}
	if (*p == ':') {
		port_text = p + 1;
		if (kiln_parse_int(&port, port_text, 1, 65535) < 0)
			return bad(out_field, field, "field '%s': the port must be 1 to 65535", field);
	} else if (*p != '\0') {
		return bad(out_field, field, "field '%s': nothing may follow HOST[:PORT]", field);
	}
	*out_host = strdup(hostbuf);
	if (!*out_host)
		return kiln_fail(KILN_ERROR, "out of memory");
	*out_proto = proto;
	*out_port = port;
	return 0;
}

/* SCHEME://HOST:PORT with the effective port, brackets around IPv6. */
static json_t *url_json(enum node_bmc_protocol proto, const char *host, int port)
{
	char buf[HOST_MAX + 64];
	int v6 = strchr(host, ':') != NULL;

	snprintf(buf, sizeof(buf), "%s://%s%s%s:%d", scheme_of(proto), v6 ? "[" : "", host,
		 v6 ? "]" : "", port ? port : default_port(proto));
	return json_string(buf);
}

static int workarounds_normalize(char **out, const char *text, const char *field,
				 const char **out_field)
{
	char word[64], norm[1024] = "";
	size_t used = 0;
	const char *p = text;

	while (*p) {
		size_t n = strcspn(p, ",");
		bool known = false;

		if (n == 0 || n >= sizeof(word))
			return bad(out_field, field, "field '%s': empty or overlong workaround name",
				   field);
		memcpy(word, p, n);
		word[n] = '\0';
		for (size_t i = 0; ipmi_workaround_names[i]; i++)
			if (strcmp(word, ipmi_workaround_names[i]) == 0)
				known = true;
		if (!known)
			return bad(out_field, field, "field '%s': unknown FreeIPMI workaround '%s'",
				   field, word);
		used += (size_t)snprintf(norm + used, sizeof(norm) - used, "%s%s",
					 used ? "," : "", word);
		if (used >= sizeof(norm))
			return bad(out_field, field, "field '%s' is too long", field);
		p += n;
		if (*p == ',') {
			p++;
			if (!*p)
				return bad(out_field, field, "field '%s': trailing comma", field);
		}
	}
	return set_str(out, norm);
}

static void groups_clear(struct node *n)
{
	for (size_t i = 0; i < n->ngroups; i++)
		free(n->groups[i]);
	free(n->groups);
	n->groups = NULL;
	n->ngroups = 0;
}

static int groups_apply(struct node *n, json_t *v, const char **out_field)
{
	char **groups = NULL;
	size_t count = 0, i;
	json_t *g;
	int rc = 0;

	if (json_is_null(v)) {
		groups_clear(n);
		return 0;
	}
	if (!json_is_array(v))
		return bad(out_field, "groups", "field 'groups' must be an array of group names");
	if (json_array_size(v) > GROUPS_MAX)
		return bad(out_field, "groups", "field 'groups': at most %d groups", GROUPS_MAX);
	groups = calloc(json_array_size(v) + 1, sizeof(*groups));
	if (!groups)
		return kiln_fail(KILN_ERROR, "out of memory");
	json_array_foreach(v, i, g) {
		const char *s = json_string_value(g);
		bool dup = false;

		if (!s || !kiln_node_name_valid(s)) {
			rc = bad(out_field, "groups",
				 "field 'groups': each group is 1-63 characters of [A-Za-z0-9._-] "
				 "starting with a letter or digit");
			goto cleanup;
		}
		for (size_t j = 0; j < count; j++)
			dup = dup || strcmp(groups[j], s) == 0;
		if (dup)
			continue;
		groups[count] = strdup(s);
		if (!groups[count]) {
			rc = kiln_fail(KILN_ERROR, "out of memory");
			goto cleanup;
		}
		count++;
	}
	groups_clear(n);
	n->groups = groups;
	n->ngroups = count;
	groups = NULL;
	count = 0;
cleanup:
	for (i = 0; groups && i < count; i++)
		free(groups[i]);
	free(groups);
	return rc;
}

static int bmc_apply(struct node *n, struct apply *a, json_t *v, const char **out_field)
{
	enum node_bmc_protocol proto;
	char *host = NULL;
	const char *url;
	int port, rc;

	rc = get_text(&url, v, "bmc", 512, true, out_field);
	if (rc < 0)
		return rc;
	if (!url) {
		free(n->bmc_host);
		n->bmc_host = NULL;
		n->bmc_port = 0;
		n->bmc_protocol = BMC_NONE;
		a->bmc_cleared = 1;
		return 0;
	}
	rc = url_parse(&proto, &host, &port, url, "bmc", out_field);
	if (rc < 0)
		return rc;
	free(n->bmc_host);
	n->bmc_host = host;
	n->bmc_port = port;
	n->bmc_protocol = proto;
	return 0;
}

static int sol_apply(struct node *n, json_t *v, const char **out_field)
{
	enum node_bmc_protocol proto;
	char *host = NULL;
	const char *url;
	int port, rc;

	rc = get_text(&url, v, "sol", 512, true, out_field);
	if (rc < 0)
		return rc;
	if (!url) {
		free(n->sol_host);
		n->sol_host = NULL;
		n->sol_port = 0;
		return 0;
	}
	rc = url_parse(&proto, &host, &port, url, "sol", out_field);
	if (rc < 0)
		return rc;
	if (proto != BMC_IPMI) {
		free(host);
		return bad(out_field, "sol", "field 'sol' must be ipmi://HOST[:PORT]");
	}
	free(n->sol_host);
	n->sol_host = host;
	n->sol_port = port;
	return 0;
}

static int field_apply(struct node *n, struct apply *a, const char *k, json_t *v,
		       const char **out_field)
{
	const char *s = NULL;
	int rc;

	if (strcmp(k, "name") == 0) {
		if (!json_is_string(v) || !kiln_node_name_valid(json_string_value(v)) ||
		    strlen(json_string_value(v)) != json_string_length(v))
			return bad(out_field, "name",
				   "field 'name' must be 1-63 characters of [A-Za-z0-9._-] starting "
				   "with a letter or digit");
		return set_str(&n->name, json_string_value(v));
	}
	if (strcmp(k, "groups") == 0)
		return groups_apply(n, v, out_field);
	if (strcmp(k, "rack") == 0) {
		rc = get_text(&s, v, k, TEXT_MAX, true, out_field);
		return rc < 0 ? rc : set_str(&n->rack, s);
	}
	if (strcmp(k, "bmc") == 0)
		return bmc_apply(n, a, v, out_field);
	if (strcmp(k, "bmc_user") == 0) {
		rc = get_text(&s, v, k, TEXT_MAX, true, out_field);
		if (rc < 0)
			return rc;
		if ((s == NULL) != (n->bmc_user == NULL) || (s && strcmp(s, n->bmc_user) != 0))
			a->creds_changed = 1;
		return set_str(&n->bmc_user, s);
	}
	if (strcmp(k, "bmc_password") == 0) {
		if (json_is_null(v)) {
			a->password = NULL;
		} else if (!json_is_string(v) || json_string_length(v) == 0 ||
			   json_string_length(v) > PASSWORD_MAX ||
			   strlen(json_string_value(v)) != json_string_length(v)) {
			return bad(out_field, "bmc_password",
				   "field 'bmc_password' must be a string of 1 to %d bytes",
				   PASSWORD_MAX);
		} else {
			a->password = json_string_value(v);
		}
		a->password_given = 1;
		a->creds_changed = 1;
		return 0;
	}
	if (strcmp(k, "tls") == 0) {
		if (json_is_null(v)) {
			n->tls_mode = TLS_VERIFY;
			a->tls_given = 1;
			return 0;
		}
		s = json_string_value(v);
		for (size_t i = 0; s && i < sizeof(tls_modes) / sizeof(tls_modes[0]); i++) {
			if (strcmp(s, tls_modes[i]) == 0) {
				n->tls_mode = (enum node_tls_mode)i;
				a->tls_given = 1;
				return 0;
			}
		}
		return bad(out_field, "tls",
			   "field 'tls' must be \"verify\", \"insecure\", \"ca\" or \"fingerprint\"");
	}
	if (strcmp(k, "tls_ca_file") == 0) {
		rc = get_text(&s, v, k, PATH_MAX_LEN, true, out_field);
		if (rc < 0)
			return rc;
		if (s && s[0] != '/')
			return bad(out_field, k, "field 'tls_ca_file' must be an absolute path");
		if (s && !ca_path_allowed(s))
			return bad(out_field, k, "field 'tls_ca_file' must name a file in %s ([bmc] ca_dir), "
				   "without . or .. segments", ca_dir);
		a->ca_given = 1;
		return set_str(&n->tls_ca_file, s);
	}
	if (strcmp(k, "tls_fingerprint") == 0) {
		char fp[65];

		rc = get_text(&s, v, k, 128, true, out_field);
		if (rc < 0)
			return rc;
		if (s && kiln_http_fingerprint_normalize(fp, s) < 0)
			return bad(out_field, k,
				   "field 'tls_fingerprint' must be a SHA-256 fingerprint (64 hex "
				   "digits, colons allowed)");
		a->fp_given = 1;
		return set_str(&n->tls_fingerprint, s ? fp : NULL);
	}
	if (strcmp(k, "ipmi_cipher") == 0) {
		if (json_is_null(v)) {
			n->ipmi_cipher = 3;
			return 0;
		}
		if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 17)
			return bad(out_field, k, "field 'ipmi_cipher' must be an integer from 0 to 17");
		n->ipmi_cipher = (int)json_integer_value(v);
		return 0;
	}
	if (strcmp(k, "ipmi_privilege") == 0) {
		s = json_is_null(v) ? "admin" : json_string_value(v);
		if (!s || (strcmp(s, "user") != 0 && strcmp(s, "operator") != 0 &&
			   strcmp(s, "admin") != 0))
			return bad(out_field, k,
				   "field 'ipmi_privilege' must be \"user\", \"operator\" or \"admin\"");
		return set_str(&n->ipmi_privilege, s);
	}
	if (strcmp(k, "ipmi_workarounds") == 0) {
		rc = get_text(&s, v, k, 1024, true, out_field);
		if (rc < 0)
			return rc;
		if (!s)
			return set_str(&n->ipmi_workarounds, NULL);
		return workarounds_normalize(&n->ipmi_workarounds, s, k, out_field);
	}
	if (strcmp(k, "sol") == 0)
		return sol_apply(n, v, out_field);
	if (strcmp(k, "bmc_system") == 0) {
		rc = get_text(&s, v, k, TEXT_MAX, true, out_field);
		if (rc < 0)
			return rc;
		for (const char *p = s; p && *p; p++)
			if (*p == '/' || *p == ' ' || *p == '?' || *p == '#' || *p == '%')
				return bad(out_field, k,
					   "field 'bmc_system' must be a Redfish system id without "
					   "'/', '?', '#', '%%' or spaces");
		return set_str(&n->bmc_system, s);
	}
	return bad(out_field, k, "unknown field '%s'", k);
}

/* The checks that involve several fields, once every field of the request is applied. */
static int cross_check(struct node *n, struct apply *a, const char **out_field)
{
	if (!a->tls_given) {
		if (a->ca_given && n->tls_ca_file && a->fp_given && n->tls_fingerprint)
			return bad(out_field, "tls",
				   "tls_ca_file and tls_fingerprint exclude each other; say which with "
				   "'tls'");
		if (a->ca_given && n->tls_ca_file)
			n->tls_mode = TLS_CA;
		else if (a->fp_given && n->tls_fingerprint)
			n->tls_mode = TLS_FINGERPRINT;
	}
	if (n->tls_mode != TLS_CA && n->tls_ca_file) {
		if (a->ca_given)
			return bad(out_field, "tls_ca_file", "field 'tls_ca_file' needs tls \"ca\"");
		free(n->tls_ca_file); /* left over from the previous mode */
		n->tls_ca_file = NULL;
	}
	if (n->tls_mode != TLS_FINGERPRINT && n->tls_fingerprint) {
		if (a->fp_given)
			return bad(out_field, "tls_fingerprint",
				   "field 'tls_fingerprint' needs tls \"fingerprint\"");
		free(n->tls_fingerprint);
		n->tls_fingerprint = NULL;
	}
	if (n->tls_mode == TLS_CA && !n->tls_ca_file)
		return bad(out_field, "tls_ca_file", "tls \"ca\" needs field 'tls_ca_file'");
	if (n->tls_mode == TLS_FINGERPRINT && !n->tls_fingerprint)
		return bad(out_field, "tls_fingerprint",
			   "tls \"fingerprint\" needs field 'tls_fingerprint'");
	if (n->bmc_protocol == BMC_NONE) {
		bool has_creds = n->bmc_user || (a->password_given ? a->password != NULL
								    : n->bmc_password_enc != NULL);

		if (has_creds && a->bmc_cleared && !a->password_given && !a->creds_changed) {
			/* The BMC went away: its credentials go with it. */
			free(n->bmc_user);
			n->bmc_user = NULL;
			a->password = NULL;
			a->password_given = 1;
			a->creds_changed = 1;
		} else if (has_creds) {
			return bad(out_field, n->bmc_user ? "bmc_user" : "bmc_password",
				   "BMC credentials need a 'bmc' address");
		}
	}
	return 0;
}

/* Encrypts a new password, or re-encrypts the stored one for a new name. */
static int password_settle(struct node *n, struct apply *a)
{
	unsigned char *enc = NULL;
	size_t enc_len = 0;
	char *plain = NULL;
	int rc = 0;

	if (a->password_given) {
		if (a->password) {
			rc = secret_encrypt(&enc, &enc_len, a->key, a->password, n->name);
			if (rc < 0)
				return rc;
		}
	} else if (n->bmc_password_enc && a->old_name && strcmp(a->old_name, n->name) != 0) {
		rc = secret_decrypt(&plain, a->key, n->bmc_password_enc, n->bmc_password_enc_len,
				    a->old_name);
		if (rc == 0)
			rc = secret_encrypt(&enc, &enc_len, a->key, plain, n->name);
		secret_free_string(plain);
		if (rc < 0)
			return kiln_fail_prefix(rc, "re-encrypting the BMC password for the new name");
	} else {
		return 0;
	}
	free(n->bmc_password_enc);
	n->bmc_password_enc = enc;
	n->bmc_password_enc_len = enc_len;
	return 0;
}

static int apply_all(struct node *n, struct apply *a, json_t *obj, const char **out_field)
{
	const char *k;
	json_t *v;
	int rc;

	*out_field = NULL;
	if (!json_is_object(obj))
		return kiln_fail(KILN_EINVAL, "the body must be a JSON object");
	rc = kiln_json_check_keys(obj, node_fields, out_field);
	if (rc < 0)
		return bad(out_field, *out_field, "unknown field '%s'", *out_field);
	/* The name first: the password is bound to it. */
	if (json_object_get(obj, "name")) {
		rc = field_apply(n, a, "name", json_object_get(obj, "name"), out_field);
		if (rc < 0)
			return rc;
	}
	json_object_foreach(obj, k, v) {
		if (strcmp(k, "name") == 0)
			continue;
		rc = field_apply(n, a, k, v, out_field);
		if (rc < 0)
			return rc;
	}
	rc = cross_check(n, a, out_field);
	if (rc < 0)
		return rc;
	rc = password_settle(n, a);
	if (rc < 0)
		return rc;
	n->updated_at = (int64_t)time(NULL);
	return 0;
}

int node_json_create(struct node **out, json_t *obj, const struct secret_key *key,
		     const char **out_field)
{
	struct apply a = { .key = key };
	struct node *n;
	int rc;

	*out_field = NULL;
	if (json_is_object(obj) && !json_object_get(obj, "name"))
		return bad(out_field, "name", "field 'name' is required");
	n = calloc(1, sizeof(*n));
	if (!n)
		return kiln_fail(KILN_ERROR, "out of memory");
	n->bmc_protocol = BMC_NONE;
	n->tls_mode = TLS_VERIFY;
	n->ipmi_cipher = 3;
	n->ipmi_privilege = strdup("admin");
	if (!n->ipmi_privilege) {
		rc = kiln_fail(KILN_ERROR, "out of memory");
		goto cleanup;
	}
	rc = apply_all(n, &a, obj, out_field);
	if (rc < 0)
		goto cleanup;
	n->created_at = n->updated_at;
	*out = n;
	n = NULL;
cleanup:
	node_free(n);
	return rc;
}

int node_json_patch(struct node *n, json_t *obj, const struct secret_key *key,
		    const char **out_field)
{
	struct apply a = { .key = key };
	int rc;

	a.old_name = strdup(n->name);
	if (!a.old_name)
		return kiln_fail(KILN_ERROR, "out of memory");
	rc = apply_all(n, &a, obj, out_field);
	free(a.old_name);
	return rc;
}

static int set_opt_string(json_t *o, const char *k, const char *s)
{
	return json_object_set_new(o, k, s ? json_string(s) : json_null());
}

json_t *node_json_from(const struct node *n)
{
	json_t *o = json_object(), *groups = json_array();
	int e = 0;

	if (!o || !groups) {
		json_decref(o);
		json_decref(groups);
		return NULL;
	}
	for (size_t i = 0; i < n->ngroups; i++)
		e |= json_array_append_new(groups, json_string(n->groups[i]));
	e |= json_object_set_new(o, "id", json_integer(n->id));
	e |= json_object_set_new(o, "name", json_string(n->name));
	e |= json_object_set_new(o, "groups", groups);
	e |= set_opt_string(o, "rack", n->rack);
	if (n->bmc_protocol == BMC_NONE || !n->bmc_host)
		e |= json_object_set_new(o, "bmc", json_null());
	else
		e |= json_object_set_new(o, "bmc", url_json(n->bmc_protocol, n->bmc_host,
							     n->bmc_port));
	e |= set_opt_string(o, "bmc_user", n->bmc_user);
	e |= json_object_set_new(o, "has_bmc_password", json_boolean(n->bmc_password_enc != NULL));
	e |= json_object_set_new(o, "tls", json_string(tls_modes[n->tls_mode]));
	e |= set_opt_string(o, "tls_ca_file", n->tls_ca_file);
	e |= set_opt_string(o, "tls_fingerprint", n->tls_fingerprint);
	e |= json_object_set_new(o, "ipmi_cipher", json_integer(n->ipmi_cipher));
	e |= set_opt_string(o, "ipmi_privilege", n->ipmi_privilege ? n->ipmi_privilege : "admin");
	e |= set_opt_string(o, "ipmi_workarounds", n->ipmi_workarounds);
	if (n->sol_host)
		e |= json_object_set_new(o, "sol", url_json(BMC_IPMI, n->sol_host, n->sol_port));
	else
		e |= json_object_set_new(o, "sol", json_null());
	e |= set_opt_string(o, "bmc_system", n->bmc_system);
	e |= json_object_set_new(o, "created_at", json_integer(n->created_at));
	e |= json_object_set_new(o, "updated_at", json_integer(n->updated_at));
	if (e) {
		json_decref(o);
		return NULL;
	}
	return o;
}

json_t *node_json_field_names(json_t *obj)
{
	json_t *names = json_array();
	const char *k;
	json_t *v;

	if (!names)
		return NULL;
	json_object_foreach(obj, k, v) {
		(void)v;
		json_array_append_new(names, json_string(k));
	}
	return names;
}
