/* SPDX-License-Identifier: Apache-2.0 */
/* A node's fields as the CLI sends them to kilnd: node add/set options and import columns. */
#ifndef KILN_CLI_NODE_BODY_H
#define KILN_CLI_NODE_BODY_H

#include <stdbool.h>

#include <jansson.h>

#include "cli.h"

/* Option ids of node_add_opts / node_set_opts. */
enum {
	NODE_O_BMC = 1,
	NODE_O_BMC_USER,
	NODE_O_BMC_PASSWORD_FILE,
	NODE_O_ASK_BMC_PASSWORD,
	NODE_O_GROUP,
	NODE_O_RACK,
	NODE_O_TLS_VERIFY,
	NODE_O_TLS_INSECURE,
	NODE_O_TLS_CA,
	NODE_O_TLS_FINGERPRINT,
	NODE_O_IPMI_CIPHER,
	NODE_O_IPMI_PRIVILEGE,
	NODE_O_IPMI_WORKAROUNDS,
	NODE_O_SOL,
	NODE_O_BMC_SYSTEM,
	NODE_O_CLEAR,
};

/* node add's options (an import column is one of them without dashes), and node set's. */
extern const struct cli_opt node_add_opts[];
extern const struct cli_opt node_set_opts[];

/* The fields of a node being added or changed, as they go to kilnd. */
struct node_body {
	json_t *obj;
	json_t *groups;            /* --group values, NULL when none given */
	const char *tls_opt;       /* the --tls-* option that set the mode */
	const char *password_file;
	const char *base_dir;      /* relative paths are taken from here (import); NULL: cwd */
	bool ask_password;
};

void node_body_free(struct node_body *nb);

/*
 * Sets one field from an option or a CSV cell (nb->obj must exist). Returns 0, or
 * KILN_EINVAL with a message about the value only: the caller names the option or column.
 */
int node_body_set(struct node_body *nb, const struct cli_opt *opt, const char *value);

/* node set --clear FIELD: null for the field (tls goes back to verify); KILN_EINVAL. */
int node_body_clear(struct node_body *nb, const char *field);

/*
 * Completes the body: the groups, then the password from the file or the terminal.
 * prompt_when_user: ask on the terminal when a BMC user and address are given without a
 * password file (node add); no terminal then is CLI_EUSAGE.
 */
int node_body_finish(struct node_body *nb, const char *who, bool prompt_when_user);

/* A copy of a body fit to print: the password replaced by has_bmc_password. */
json_t *node_body_printable(const json_t *body);

#endif
