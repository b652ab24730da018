/* SPDX-License-Identifier: Apache-2.0 */
/* Nodes as the REST API shows and takes them: struct node <-> JSON, with every field validated. */
#ifndef KILND_NODE_JSON_H
#define KILND_NODE_JSON_H

#include <jansson.h>

#include "daemon/secret.h"
#include "store/store.h"

/*
 * The node's JSON object (docs/API.md): the password never appears, only
 * "has_bmc_password". NULL on ENOMEM.
 */
json_t *node_json_from(const struct node *n);

/*
 * Builds a new node from a create body (name required; defaults for the rest). The BMC
 * password is encrypted with key, its associated data being the node name. On failure
 * returns KILN_EINVAL (or KILN_ERROR) with a message, and *out_field names the field at
 * fault (or NULL). The caller frees *out with node_free.
 */
/* The folder a node's tls_ca_file must be in ([bmc] ca_dir; NULL or "": any absolute path).
 * Call once before any request. */
void node_json_ca_dir_set(const char *dir);

int node_json_create(struct node **out, json_t *obj, const struct secret_key *key,
		     const char **out_field);

/*
 * Applies a PATCH body to n: only the fields present change, null clears an optional
 * field. A rename re-encrypts the password for the new name (the store bumps
 * credentials_version when user or password change). On failure n may be half-changed:
 * the caller discards it.
 */
int node_json_patch(struct node *n, json_t *obj, const struct secret_key *key,
		    const char **out_field);

/* Names of the fields obj sets, as a JSON array for audit details (never values). */
json_t *node_json_field_names(json_t *obj);

#endif
