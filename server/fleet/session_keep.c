/* SPDX-License-Identifier: Apache-2.0 */
/* The session keeper: each Redfish BMC's session token (sealed with secret.key) and URI in
 * the store, so that a kilnd killed with -9 checks and reuses its session at the next start
 * instead of leaving one more open on the BMC at every crash. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/error.h"
#include "kiln/log.h"
#include "fleet/session_keep.h"
#include "store/store.h"

/* A write the loop threads handed over: a session kept (token sealed) or dropped. */
struct keep_write {
	struct keep_write *next;
	int drop;
	struct bmc_session_row row;  /* owned copies */
};

struct session_keep {
	struct bmc_session_keeper iface;
	const struct secret_key *key;
	pthread_mutex_t db_lock;     /* the store handle: the writer and load() */
	struct store *st;
	pthread_mutex_t lock;        /* the queue */
	pthread_cond_t cond;
	struct keep_write *head, **tail;
	int stopping;
	pthread_t writer;
	int writer_started;
};

/* The associated data of a node's sealed token: a sealed password cannot pass for it. */
static void seal_ad(char *out, size_t n, const char *node_name)
{
	snprintf(out, n, "%s/redfish-session", node_name ? node_name : "");
}

static void write_free(struct keep_write *w)
{
	if (!w)
		return;
	bmc_session_row_clear(&w->row);
	free(w);
}

static void enqueue(struct session_keep *k, struct keep_write *w)
{
	pthread_mutex_lock(&k->lock);
	*k->tail = w;
	k->tail = &w->next;
	pthread_cond_signal(&k->cond);
	pthread_mutex_unlock(&k->lock);
}

/* The writer: each batch of saves and drops in one transaction, in the order they came. A
 * save is an fsync with SQLite's default synchronous=FULL (3.3 ms measured): done by the
 * loop threads themselves, 10,000 first logins held their loops for half a minute. */
static void *writer_main(void *arg)
{
	struct session_keep *k = arg;

	for (;;) {
		struct keep_write *batch;
		int stop;

		pthread_mutex_lock(&k->lock);
		while (!k->head && !k->stopping)
			pthread_cond_wait(&k->cond, &k->lock);
		batch = k->head;
		stop = k->stopping;
		k->head = NULL;
		k->tail = &k->head;
		pthread_mutex_unlock(&k->lock);
		if (batch) {
			pthread_mutex_lock(&k->db_lock);
			int began = store_begin(k->st) == 0;
			for (struct keep_write *w = batch; w; w = w->next) {
				int rc = w->drop ? store_bmc_session_drop(k->st, w->row.node_id,
									   w->row.uri)
						 : store_bmc_session_put(k->st, &w->row);
				/* a node deleted meanwhile keeps nothing: not worth a word */
				if (rc < 0 && rc != KILN_ENOTFOUND)
					log_warn("node %lld: keeping its Redfish session: %s",
						 (long long)w->row.node_id, kiln_error_last());
			}
			if (began && store_commit(k->st) < 0) {
				log_warn("keeping Redfish sessions: %s", kiln_error_last());
				store_rollback(k->st);
			}
			pthread_mutex_unlock(&k->db_lock);
		}
		while (batch) {
			struct keep_write *w = batch;
			batch = w->next;
			write_free(w);
		}
		if (stop)
			return NULL;
	}
}

static int keep_load(void *ud, int64_t node_id, const char *node_name, int64_t cred_version,
		     char **out_token, char **out_uri)
{
	struct session_keep *k = ud;
	struct bmc_session_row row = { 0 };
	char ad[300];
	char *token = NULL;
	int rc;

	seal_ad(ad, sizeof(ad), node_name);
	pthread_mutex_lock(&k->db_lock);
	rc = store_bmc_session_get(k->st, &row, node_id);
	pthread_mutex_unlock(&k->db_lock);
	if (rc < 0)
		return rc;
	if (row.credentials_version != cred_version || !row.token_enc) {
		rc = kiln_fail(KILN_ENOTFOUND, "no usable session kept");
		goto cleanup;
	}
	if ((rc = secret_decrypt(&token, k->key, row.token_enc, row.token_enc_len, ad)) < 0) {
		log_warn("%s: the kept Redfish session does not decrypt: %s", node_name,
			 kiln_error_last());
		goto cleanup;
	}
	*out_token = token;
	*out_uri = row.uri;
	row.uri = NULL;
cleanup:
	bmc_session_row_clear(&row);
	return rc;
}

static void keep_save(void *ud, int64_t node_id, const char *node_name, int64_t cred_version,
		      const char *token, const char *uri, const char *auth)
{
	struct session_keep *k = ud;
	struct keep_write *w = calloc(1, sizeof(*w));
	char ad[300];

	/* a session not kept only costs one more login after a crash */
	if (!w)
		return;
	seal_ad(ad, sizeof(ad), node_name);
	w->row.node_id = node_id;
	w->row.credentials_version = cred_version;
	w->row.uri = uri ? strdup(uri) : NULL;
	w->row.auth = strdup(auth ? auth : "session");
	if ((uri && !w->row.uri) || !w->row.auth ||
	    (token && secret_encrypt(&w->row.token_enc, &w->row.token_enc_len, k->key, token,
				     ad) < 0)) {
		log_warn("%s: keeping the Redfish session: %s", node_name,
			 kiln_error_last()[0] ? kiln_error_last() : "out of memory");
		write_free(w);
		return;
	}
	enqueue(k, w);
}

static void keep_drop(void *ud, int64_t node_id, const char *uri)
{
	struct session_keep *k = ud;
	struct keep_write *w = calloc(1, sizeof(*w));

	if (!w)
		return;
	w->drop = 1;
	w->row.node_id = node_id;
	w->row.uri = uri ? strdup(uri) : NULL;
	if (uri && !w->row.uri) {
		write_free(w);
		return;
	}
	enqueue(k, w);
}

int session_keep_open(struct session_keep **out, const char *db_path,
		      const struct secret_key *key)
{
	struct session_keep *k = calloc(1, sizeof(*k));
	int rc;

	if (!k)
		return kiln_fail(KILN_ERROR, "out of memory");
	if ((rc = store_open(&k->st, db_path)) < 0) {
		free(k);
		return rc;
	}
	pthread_mutex_init(&k->db_lock, NULL);
	pthread_mutex_init(&k->lock, NULL);
	pthread_cond_init(&k->cond, NULL);
	k->tail = &k->head;
	k->key = key;
	k->iface.load = keep_load;
	k->iface.save = keep_save;
	k->iface.drop = keep_drop;
	k->iface.ud = k;
	if (pthread_create(&k->writer, NULL, writer_main, k) != 0) {
		session_keep_close(k);
		return kiln_fail(KILN_ERROR, "cannot start the session keeper's thread");
	}
	k->writer_started = 1;
	*out = k;
	return 0;
}

const struct bmc_session_keeper *session_keep_keeper(struct session_keep *k)
{
	return k ? &k->iface : NULL;
}

void session_keep_close(struct session_keep *k)
{
	if (!k)
		return;
	if (k->writer_started) {
		pthread_mutex_lock(&k->lock);
		k->stopping = 1; /* the writer stores what is queued, then ends */
		pthread_cond_signal(&k->cond);
		pthread_mutex_unlock(&k->lock);
		pthread_join(k->writer, NULL);
	}
	while (k->head) {
		struct keep_write *w = k->head;
		k->head = w->next;
		write_free(w);
	}
	store_close(k->st);
	pthread_cond_destroy(&k->cond);
	pthread_mutex_destroy(&k->lock);
	pthread_mutex_destroy(&k->db_lock);
	free(k);
}
