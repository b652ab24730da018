/* SPDX-License-Identifier: Apache-2.0 */
/* A node's JSON body from options or CSV cells; the password from a file or a prompt. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kiln/buf.h>
#include <kiln/error.h>
#include <kiln/http.h>
#include <kiln/parse.h>

#include "node_body.h"
#include "prompt.h"

#define NODE_OPTS \
	{ "bmc", 0, "URL", NODE_O_BMC, \
	  "redfish://HOST[:PORT], redfish+http://HOST:PORT or ipmi://HOST[:PORT]" }, \
	{ "bmc-user", 0, "USER", NODE_O_BMC_USER, "BMC user name" }, \
	{ "bmc-password-file", 0, "FILE", NODE_O_BMC_PASSWORD_FILE, \
	  "read the BMC password from FILE's first line ('-': standard input)" }, \
	{ "ask-bmc-password", 0, NULL, NODE_O_ASK_BMC_PASSWORD, \
	  "ask for the BMC password on the terminal (no echo)" }, \
	{ "group", 0, "GROUP", NODE_O_GROUP, "member of GROUP (repeat for several)" }, \
	{ "rack", 0, "RACK", NODE_O_RACK, "rack or location" }, \
	{ "tls-verify", 0, NULL, NODE_O_TLS_VERIFY, "verify the BMC's certificate (the default)" }, \
	{ "tls-insecure", 0, NULL, NODE_O_TLS_INSECURE, "do not verify the BMC's certificate" }, \
	{ "tls-ca", 0, "FILE", NODE_O_TLS_CA, "verify the BMC's certificate with this CA file" }, \
	{ "tls-fingerprint", 0, "SHA256", NODE_O_TLS_FINGERPRINT, "pin the BMC certificate's SHA-256" }, \
	{ "ipmi-cipher", 0, "N", NODE_O_IPMI_CIPHER, "IPMI 2.0 cipher suite (default 3)" }, \
	{ "ipmi-privilege", 0, "user|operator|admin", NODE_O_IPMI_PRIVILEGE, "IPMI privilege level" }, \
	{ "ipmi-workarounds", 0, "LIST", NODE_O_IPMI_WORKAROUNDS, \
	  "FreeIPMI workarounds (opensesspriv,solpayloadsize,...)" }, \
	{ "sol", 0, "ipmi://HOST[:PORT]", NODE_O_SOL, "IPMI address for the serial console" }, \
	{ "bmc-system", 0, "ID", NODE_O_BMC_SYSTEM, "the system's ID on a BMC with several (blades)" }

const struct cli_opt node_add_opts[] = { NODE_OPTS, { 0 } };

const struct cli_opt node_set_opts[] = {
	NODE_OPTS,
	{ "clear", 0, "FIELD", NODE_O_CLEAR,
	  "unset a field: bmc, bmc_user, bmc_password, group, rack, tls, ipmi_cipher, "
	  "ipmi_privilege, ipmi_workarounds, sol, bmc_system" },
	{ 0 },
};

void node_body_free(struct node_body *nb)
{
	json_decref(nb->obj);
	json_decref(nb->groups);
	nb->obj = nb->groups = NULL;
}

static int oom(void)
{
	return kiln_fail(KILN_ERROR, "out of memory");
}

static int set_str(json_t *obj, const char *key, const char *value)
{
	return json_object_set_new(obj, key, value ? json_string(value) : json_null()) < 0 ? oom() : 0;
}

/* A path as kilnd should see it: absolute, taken relative to base_dir (or the cwd). */
static int path_absolute(char **out, const char *base_dir, const char *path)
{
	struct kiln_buf b;
	char *real;

	kiln_buf_init(&b, PATH_MAX);
	if (path[0] != '/' && base_dir && kiln_buf_printf(&b, "%s/", base_dir) < 0)
		goto fail;
	if (kiln_buf_puts(&b, path) < 0)
		goto fail;
	real = realpath(b.data, NULL);
	if (!real) {
		int rc = kiln_fail(KILN_EINVAL, "%s: %s", b.data, strerror(errno));

		kiln_buf_free(&b);
		return rc;
	}
	kiln_buf_free(&b);
	*out = real;
	return 0;
fail:
	kiln_buf_free(&b);
	return oom();
}

static int tls_mode(struct node_body *nb, const char *opt_name, const char *mode)
{
	if (nb->tls_opt && strcmp(nb->tls_opt, opt_name) != 0)
		return kiln_fail(KILN_EINVAL, "excludes %s", nb->tls_opt);
	nb->tls_opt = opt_name;
	return set_str(nb->obj, "tls", mode);
}

static bool has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/*
 * Sets one field from an option or a CSV column. Returns 0 or KILN_EINVAL with a message
 * about the value only (the caller names the option or the column).
 */
int node_body_set(struct node_body *nb, const struct cli_opt *opt, const char *value)
{
	char fp[65], *path = NULL;
	int64_t n;
	int rc = 0;

	switch (opt->id) {
	case NODE_O_BMC:
		if (!has_prefix(value, "redfish://") && !has_prefix(value, "redfish+http://") &&
		    !has_prefix(value, "ipmi://"))
			return kiln_fail(KILN_EINVAL, "'%s' is not redfish://HOST[:PORT], "
					 "redfish+http://HOST:PORT or ipmi://HOST[:PORT]", value);
		return set_str(nb->obj, "bmc", value);
	case NODE_O_BMC_USER: return set_str(nb->obj, "bmc_user", value);
	case NODE_O_BMC_PASSWORD_FILE: nb->password_file = value; return 0;
	case NODE_O_ASK_BMC_PASSWORD: nb->ask_password = true; return 0;
	case NODE_O_GROUP:
		if (!*value)
			return kiln_fail(KILN_EINVAL, "empty group name");
		if (!nb->groups && !(nb->groups = json_array()))
			return oom();
		return json_array_append_new(nb->groups, json_string(value)) < 0 ? oom() : 0;
	case NODE_O_RACK: return set_str(nb->obj, "rack", value);
	case NODE_O_TLS_VERIFY: return tls_mode(nb, "--tls-verify", "verify");
	case NODE_O_TLS_INSECURE: return tls_mode(nb, "--tls-insecure", "insecure");
	case NODE_O_TLS_CA:
		rc = tls_mode(nb, "--tls-ca", "ca");
		if (rc == 0)
			rc = path_absolute(&path, nb->base_dir, value);
		if (rc == 0)
			rc = set_str(nb->obj, "tls_ca_file", path);
		free(path);
		return rc;
	case NODE_O_TLS_FINGERPRINT:
		rc = tls_mode(nb, "--tls-fingerprint", "fingerprint");
		if (rc == 0 && kiln_http_fingerprint_normalize(fp, value) < 0)
			return kiln_fail(KILN_EINVAL, "'%s' is not a SHA-256 fingerprint", value);
		return rc ? rc : set_str(nb->obj, "tls_fingerprint", fp);
	case NODE_O_IPMI_CIPHER:
		rc = kiln_parse_int64(&n, value, 0, 17);
		if (rc < 0)
			return rc;
		return json_object_set_new(nb->obj, "ipmi_cipher", json_integer(n)) < 0 ? oom() : 0;
	case NODE_O_IPMI_PRIVILEGE:
		if (strcmp(value, "user") != 0 && strcmp(value, "operator") != 0 &&
		    strcmp(value, "admin") != 0)
			return kiln_fail(KILN_EINVAL, "'%s' is not user, operator or admin", value);
		return set_str(nb->obj, "ipmi_privilege", value);
	case NODE_O_IPMI_WORKAROUNDS: return set_str(nb->obj, "ipmi_workarounds", value);
	case NODE_O_SOL:
		if (!has_prefix(value, "ipmi://"))
			return kiln_fail(KILN_EINVAL, "'%s' is not ipmi://HOST[:PORT]", value);
		return set_str(nb->obj, "sol", value);
	case NODE_O_BMC_SYSTEM: return set_str(nb->obj, "bmc_system", value);
	default: return 0;
	}
}

/* --clear FIELD for node set: null for the field (tls goes back to verify). */
int node_body_clear(struct node_body *nb, const char *field)
{
	static const char *const fields[] = { "bmc", "bmc_user", "bmc_password", "rack",
					      "ipmi_cipher", "ipmi_privilege", "ipmi_workarounds",
					      "sol", "bmc_system", NULL };
	char name[32];
	size_t i;

	kiln_strlcpy(name, field, sizeof(name));
	for (i = 0; name[i]; i++)
		if (name[i] == '-')
			name[i] = '_';
	if (strcmp(name, "group") == 0 || strcmp(name, "groups") == 0) {
		json_decref(nb->groups);
		nb->groups = json_array();
		return nb->groups ? 0 : oom();
	}
	if (strcmp(name, "tls") == 0) {
		if (tls_mode(nb, "--clear tls", "verify") < 0 || set_str(nb->obj, "tls_ca_file", NULL) < 0 ||
		    set_str(nb->obj, "tls_fingerprint", NULL) < 0)
			return kiln_fail(KILN_EINVAL, "%s", kiln_error_last());
		return 0;
	}
	for (i = 0; fields[i]; i++)
		if (strcmp(fields[i], name) == 0)
			return set_str(nb->obj, name, NULL);
	return kiln_fail(KILN_EINVAL, "'%s' is not a field that can be cleared", field);
}

/*
 * Completes the body: the groups, and the password from the file or the terminal.
 * prompt_when_user: ask on the terminal when a BMC user is given without a password file
 * (node add).
 */
int node_body_finish(struct node_body *nb, const char *who, bool prompt_when_user)
{
	char *password = NULL, *path = NULL, prompt[128];
	int rc = 0;

	if (nb->groups && json_object_set(nb->obj, "groups", nb->groups) < 0)
		return oom();
	if (nb->password_file) {
		if (strcmp(nb->password_file, "-") != 0 && nb->password_file[0] != '/' && nb->base_dir) {
			rc = path_absolute(&path, nb->base_dir, nb->password_file);
			if (rc < 0)
				return rc;
		}
		rc = secret_read_file(&password, path ? path : nb->password_file);
		free(path);
	} else if (nb->ask_password ||
		   (prompt_when_user && json_object_get(nb->obj, "bmc_user") &&
		    json_object_get(nb->obj, "bmc"))) {
		snprintf(prompt, sizeof(prompt), "BMC password for %s: ", who);
		rc = prompt_secret(&password, prompt);
		if (rc == KILN_ENOTFOUND)
			rc = kiln_fail(CLI_EUSAGE, "--bmc-user needs --bmc-password-file FILE when there "
				       "is no terminal to ask on");
	}
	if (rc == 0 && password && set_str(nb->obj, "bmc_password", password) < 0)
		rc = oom();
	secret_free(password);
	return rc;
}

/* A copy of a body fit to print: the password replaced by has_bmc_password. */
json_t *node_body_printable(const json_t *body)
{
	json_t *c = json_deep_copy(body);

	if (c && json_object_get(c, "bmc_password")) {
		json_object_del(c, "bmc_password");
		json_object_set_new(c, "has_bmc_password", json_true());
	}
	return c;
}
