/* SPDX-License-Identifier: Apache-2.0 */
/* kiln audit [NODERANGE] [--policy FILE]: the fleet version audit (cmd_versions.c). */
#ifndef KILN_CLI_CMD_VERSIONS_H
#define KILN_CLI_CMD_VERSIONS_H

#include "cli.h"

/* argv[0] is the command word ("audit" or "versions"). CLI_EPARTIAL when anything deviates. */
int cmd_versions_audit_run(struct cli_ctx *ctx, int argc, char **argv);

/* Reads a policy file ([group NAME] sections of driver=, module=, cuda=, toolkit=,
 * gpu_model=, vbios=, gpus= lines) into {"NAME":{"key":"value"}}; the caller owns *out.
 * KILN_EINVAL names the file, the line and the problem. */
int cmd_versions_policy_read(json_t **out, const char *path);

#endif
