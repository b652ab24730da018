/* SPDX-License-Identifier: Apache-2.0 */
/* Builds a struct bmc_target from a stored node, shared by the API and the poller. */
#include <string.h>

#include "bmc/target.h"
#include "kiln/error.h"

int bmc_target_from_node(struct bmc_target *out, char **out_password, const struct node *n,
			 const struct secret_key *key)
{
	struct bmc_target t;
	char *password = NULL;
	int rc;

	if (n->bmc_protocol == BMC_NONE || !n->bmc_host)
		return kiln_fail(KILN_ENOTFOUND, "no BMC");
	if (n->bmc_password_enc) {
		rc = secret_decrypt(&password, key, n->bmc_password_enc, n->bmc_password_enc_len,
				    n->name);
		if (rc < 0)
			return rc;
	}
	memset(&t, 0, sizeof(t));
	t.node_id = n->id;
	t.node_name = n->name;
	t.protocol = n->bmc_protocol;
	t.host = n->bmc_host;
	t.port = n->bmc_port;
	t.user = n->bmc_user;
	t.password = password;
	t.tls_mode = n->tls_mode;
	t.tls_ca_file = n->tls_ca_file;
	t.tls_fingerprint = n->tls_fingerprint;
	t.ipmi_cipher = n->ipmi_cipher;
	t.ipmi_privilege = n->ipmi_privilege;
	t.ipmi_workarounds = n->ipmi_workarounds;
	t.bmc_system = n->bmc_system;
	t.credentials_version = n->credentials_version;
	*out = t;
	*out_password = password;
	return 0;
}
