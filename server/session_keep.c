/* The session keeper: each Redfish BMC's session token (sealed with secret.key) and URI in
 * the store, so that a kilnd killed with -9 checks and reuses its session at the next start
 * instead of leaving one more open on the BMC at every crash. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/error.h"
#include "kiln/log.h"
#include "session_keep.h"
#include "store/store.h"

struct session_keep {
	struct bmc_session_keeper iface;
	pthread_mutex_t lock;
	struct store *st;
	const struct secret_key *key;
};

/* The associated data of a node's sealed token: a sealed password cannot pass for it. */
static void seal_ad(char *out, size_t n, const char *node_name)
{
	snprintf(out, n, "%s/redfish-session", node_name ? node_name : "");
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
	pthread_mutex_lock(&k->lock);
	rc = store_bmc_session_get(k->st, &row, node_id);
	pthread_mutex_unlock(&k->lock);
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
	struct bmc_session_row row = {
		.node_id = node_id,
		.credentials_version = cred_version,
		.uri = (char *)uri,
		.auth = (char *)(auth ? auth : "session"),
	};
	unsigned char *sealed = NULL;
	char ad[300];
	int rc = 0;

	seal_ad(ad, sizeof(ad), node_name);
	if (token && (rc = secret_encrypt(&sealed, &row.token_enc_len, k->key, token, ad)) == 0)
		row.token_enc = sealed;
	if (rc == 0) {
		pthread_mutex_lock(&k->lock);
		rc = store_bmc_session_put(k->st, &row);
		pthread_mutex_unlock(&k->lock);
	}
	/* a session not kept only costs one more login after a crash */
	if (rc < 0 && rc != KILN_ENOTFOUND)
		log_warn("%s: keeping the Redfish session: %s", node_name, kiln_error_last());
	free(sealed);
}

static void keep_drop(void *ud, int64_t node_id, const char *uri)
{
	struct session_keep *k = ud;

	pthread_mutex_lock(&k->lock);
	if (store_bmc_session_drop(k->st, node_id, uri) < 0)
		log_warn("node %lld: dropping a kept Redfish session: %s", (long long)node_id,
			 kiln_error_last());
	pthread_mutex_unlock(&k->lock);
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
	pthread_mutex_init(&k->lock, NULL);
	k->key = key;
	k->iface.load = keep_load;
	k->iface.save = keep_save;
	k->iface.drop = keep_drop;
	k->iface.ud = k;
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
	store_close(k->st);
	pthread_mutex_destroy(&k->lock);
	free(k);
}
