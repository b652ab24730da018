/* SPDX-License-Identifier: Apache-2.0 */
/* A node's BMC target: the struct bmc_target the engine needs, built from a stored node. */
#ifndef KILN_BMC_TARGET_H
#define KILN_BMC_TARGET_H

#include "bmc/bmc.h"
#include "daemon/secret.h"
#include "store/store.h"

/*
 * Fills *out from n (its strings are borrowed: n must outlive *out) and decrypts the node's
 * password (the node name is the associated data) into *out_password, which the caller
 * frees with secret_free_string after the engine has copied the target (bmc_submit,
 * bmc_run_batch). *out_password is NULL when the node has no password. A node without a
 * BMC (agent only) gives KILN_ENOTFOUND ("no BMC"); a password that does not decrypt gives
 * secret_decrypt's error. Nothing is set on failure.
 */
int bmc_target_from_node(struct bmc_target *out, char **out_password, const struct node *n,
			 const struct secret_key *key);

#endif
