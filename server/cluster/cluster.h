/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Several kilnd on one PostgreSQL database: this instance's row and heartbeat, the live
 * instances, which of them owns a node, and the check that every instance holds the same
 * secret.key. On SQLite (one kilnd) nothing is registered and this instance owns every node.
 */
#ifndef KILND_CLUSTER_H
#define KILND_CLUSTER_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/secret.h"
#include "store/store.h"

#define CLUSTER_ID_LEN 16 /* hex characters of an instance id */

/* --- the pure pieces (unit-tested) ------------------------------------------------------ */

/* A live instance as the owner choice sees it. group NULL: serves every group. */
struct cluster_member {
	const char *id;
	const char *group;
};

/* The rendezvous score of node_id on instance id: the highest score owns the node. */
uint64_t cluster_score(const char *id, int64_t node_id);

/*
 * The owner of a node in groups[0..ngroups), as an index into members[0..n), or -1 when n is
 * 0. Among the instances whose group is one of the node's groups; when none serves them,
 * among the instances of no group; when there are none either, among all, so that no node is
 * left unpolled. Every instance computes the same owner from the same member list.
 */
int cluster_owner(const struct cluster_member *members, size_t n, int64_t node_id,
		  char *const *groups, size_t ngroups);

/* Whether an instance row is alive: its heartbeat no older than its lease on the database's
 * clock. */
int cluster_row_live(const struct instance_row *r);

/* The hex keyed BLAKE2b of a fixed label under key: what the database records of secret.key
 * (store_key_check); never the key. */
void cluster_key_value(char out[65], const struct secret_key *key);

/*
 * Records the key's check value in a database that has none, or compares it with the one
 * recorded: KILN_ECONFIG with a message naming the problem when they differ. *out_first (may
 * be NULL) is set when this call recorded it.
 */
int cluster_key_check(struct store *st, const struct secret_key *key, int *out_first);

/* --- this instance ---------------------------------------------------------------------- */

/* A new random instance id (CLUSTER_ID_LEN hex characters). */
void cluster_id_new(char out[CLUSTER_ID_LEN + 1]);
/* Whether s is an instance id as cluster_id_new() makes them. */
int cluster_id_valid(const char *s);

struct cluster_options {
	const char *id;      /* this instance's (kept in the state dir); NULL: a random one */
	const char *db_path; /* its thread opens its own store handle on it */
	int shared;          /* the store is PostgreSQL: register and heartbeat */
	const char *group;   /* [cluster] group, or NULL */
	int64_t lease_s;     /* [cluster] lease */
	const char *listen;  /* the API's URL, shown by kiln cluster status */
};

struct cluster;

/* Registers this instance (shared) and starts its heartbeat thread, which writes the
 * heartbeat and reads the instance list every lease/3. */
int cluster_start(struct cluster **out, const struct cluster_options *opt);
/* Stops the thread and removes this instance's row; accepts NULL. */
void cluster_stop(struct cluster *c);

/* This instance's id. */
const char *cluster_self(const struct cluster *c);
/* This instance as a row (owned by c): id, host, listen, group, lease; started_ms on this
 * host's clock. */
const struct instance_row *cluster_self_row(const struct cluster *c);
/* Whether the instances share a store (PostgreSQL). */
int cluster_shared(const struct cluster *c);
/* Changes whenever the live instance list does: a caller that cached owners recomputes. */
unsigned cluster_generation(struct cluster *c);
/* Whether this instance owns node (c NULL, or not shared: always). An instance whose own
 * heartbeat has not been written within its lease owns nothing: the others own its nodes. */
int cluster_owns(struct cluster *c, const struct node *n);
/* The number of other live instances (0 on SQLite). */
size_t cluster_others_live(struct cluster *c);
/* The id of node's owner into out: 1 when it is this instance, 0 another, -1 none now (this
 * one, whose own lease ran out: out empty). Not shared: 1. */
int cluster_owner_of(struct cluster *c, const struct node *n, char out[CLUSTER_ID_LEN + 1]);
/* The same, with the owner's API URL (as it registered it) into url when it is another. */
int cluster_owner_url(struct cluster *c, const struct node *n, char out[CLUSTER_ID_LEN + 1],
		      char *url, size_t len);
/* Whether instance id is live in this instance's view (this one: its lease is current). */
int cluster_is_live(struct cluster *c, const char *id);
/* The lease in milliseconds. */
int64_t cluster_lease_ms(const struct cluster *c);

#endif
