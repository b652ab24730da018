/* SPDX-License-Identifier: Apache-2.0 */
/* Redfish sessions kept in the store across restarts: the BMC engine's session keeper. */
#ifndef KILND_SESSION_KEEP_H
#define KILND_SESSION_KEEP_H

#include "bmc/bmc.h"
#include "daemon/secret.h"

struct session_keep;

/*
 * Opens a store handle of its own on db_path and starts the thread that writes what the
 * driver's loop threads hand over (in batches: a loop never waits for a disk write; a load
 * reads the store directly), and fills *out. key (borrowed: it must outlive the keeper)
 * seals each token with the node's name as associated data, as BMC passwords are.
 */
int session_keep_open(struct session_keep **out, const char *db_path,
		      const struct secret_key *key);
/* The interface to hand to bmc_engine_config.sessions; valid until session_keep_close. */
const struct bmc_session_keeper *session_keep_keeper(struct session_keep *k);
/* After bmc_engine_stop (whose logouts drop their rows): stores what is queued, then stops
 * the thread and frees. Accepts NULL. */
void session_keep_close(struct session_keep *k);

#endif
