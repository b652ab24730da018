/* SPDX-License-Identifier: Apache-2.0 */
/* Several kilnd on one database: this instance's heartbeat, the live instances, node owners. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "cluster/cluster.h"
#include "kiln/error.h"
#include "kiln/log.h"

#define KEY_LABEL "kiln secret.key check v1"
/* A dead instance's row is kept this long for kiln cluster status, then deleted. */
#define PRUNE_AFTER_MS (3600 * 1000LL)

struct cluster {
	struct cluster_options opt;
	char id[CLUSTER_ID_LEN + 1];
	char host[256];
	char *group, *listen;
	int64_t lease_ms;
	struct store *st; /* the thread's handle (shared only) */
	pthread_t thread;
	int started;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int stopping;
	/* under lock: the other live instances, and the members the owners are chosen among */
	struct instance_row *live;
	size_t nlive;
	struct cluster_member *members;
	size_t nmembers;
	char *signature; /* "id/group;..." of the members: what the generation follows */
	unsigned generation;
	int64_t beat_ok_ms; /* CLOCK_MONOTONIC ms of the last heartbeat written */
	struct instance_row self; /* its strings are the ones above */
};

/* --- pure ------------------------------------------------------------------------------- */

static uint64_t mix64(uint64_t x)
{
	/* the splitmix64 finaliser: every input bit moves every output bit */
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

uint64_t cluster_score(const char *id, int64_t node_id)
{
	uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a over the id */

	for (const unsigned char *p = (const unsigned char *)id; p && *p; p++) {
		h ^= *p;
		h *= 0x100000001b3ULL;
	}
	return mix64(h ^ mix64((uint64_t)node_id));
}

static int serves_one_of(const char *group, char *const *groups, size_t ngroups)
{
	for (size_t i = 0; group && i < ngroups; i++)
		if (groups[i] && strcmp(groups[i], group) == 0)
			return 1;
	return 0;
}

/* tier 0: the node's own groups; 1: no group; 2: any */
static int eligible(const struct cluster_member *m, int tier, char *const *groups,
		    size_t ngroups)
{
	if (tier == 0)
		return serves_one_of(m->group, groups, ngroups);
	if (tier == 1)
		return m->group == NULL;
	return 1;
}

int cluster_owner(const struct cluster_member *members, size_t n, int64_t node_id,
		  char *const *groups, size_t ngroups)
{
	for (int tier = 0; tier < 3; tier++) {
		int best = -1;
		uint64_t best_score = 0;

		for (size_t i = 0; i < n; i++) {
			uint64_t s;

			if (!eligible(&members[i], tier, groups, ngroups))
				continue;
			s = cluster_score(members[i].id, node_id);
			/* ties (never in practice) go to the smaller id, the same everywhere */
			if (best < 0 || s > best_score ||
			    (s == best_score && strcmp(members[i].id, members[best].id) < 0)) {
				best = (int)i;
				best_score = s;
			}
		}
		if (best >= 0)
			return best;
	}
	return -1;
}

int cluster_row_live(const struct instance_row *r)
{
	return r->now_ms - r->heartbeat_ms <= r->lease_ms;
}

void cluster_key_value(char out[65], const struct secret_key *key)
{
	unsigned char h[32];

	crypto_generichash(h, sizeof(h), (const unsigned char *)KEY_LABEL, strlen(KEY_LABEL),
			   key->key, sizeof(key->key));
	sodium_bin2hex(out, 65, h, sizeof(h));
	sodium_memzero(h, sizeof(h));
}

int cluster_key_check(struct store *st, const struct secret_key *key, int *out_first)
{
	char value[65];
	int match = 0, first = 0, rc;

	cluster_key_value(value, key);
	rc = store_key_check(st, value, &match, &first);
	if (rc < 0)
		return rc;
	if (!match)
		return kiln_fail(KILN_ECONFIG,
				 "secret.key is not the key this database was first used with (its "
				 "check value differs): the BMC passwords in it would not open. Every "
				 "kilnd on one database needs the same secret.key; copy it from the "
				 "state dir of the first one, or restore the key that went with this "
				 "database");
	if (out_first)
		*out_first = first;
	return 0;
}

/* --- this instance ---------------------------------------------------------------------- */

void cluster_id_new(char out[CLUSTER_ID_LEN + 1])
{
	unsigned char rnd[CLUSTER_ID_LEN / 2];

	randombytes_buf(rnd, sizeof(rnd));
	sodium_bin2hex(out, CLUSTER_ID_LEN + 1, rnd, sizeof(rnd));
}

int cluster_id_valid(const char *s)
{
	size_t n = s ? strspn(s, "0123456789abcdef") : 0;

	return n == CLUSTER_ID_LEN && s[n] == '\0';
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int self_live(const struct cluster *c)
{
	return !c->opt.shared || mono_ms() - c->beat_ok_ms <= c->lease_ms;
}

static char *signature_of(const struct cluster_member *m, size_t n)
{
	size_t len = 1;
	char *s, *p;

	for (size_t i = 0; i < n; i++)
		len += strlen(m[i].id) + (m[i].group ? strlen(m[i].group) : 0) + 2;
	if (!(s = malloc(len)))
		return NULL;
	p = s;
	*p = '\0';
	for (size_t i = 0; i < n; i++) {
		int w = snprintf(p, len, "%s/%s;", m[i].id, m[i].group ? m[i].group : "");

		p += w;
		len -= (size_t)w;
	}
	return s;
}

/* Takes rows (every instance row) as the new view: the live ones other than this one, and
 * the members with this one added. Frees rows' dead entries. */
static void view_set(struct cluster *c, struct instance_row *rows, size_t n)
{
	struct instance_row *live = calloc(n ? n : 1, sizeof(*live));
	struct cluster_member *members = calloc(n + 1, sizeof(*members));
	size_t nlive = 0, nm = 0;
	char *sig;

	if (!live || !members) {
		free(live);
		free(members);
		instance_list_free(rows, n);
		log_warn("cluster: out of memory: the instance list is kept as it was");
		return;
	}
	for (size_t i = 0; i < n; i++) {
		if (strcmp(rows[i].id, c->id) != 0 && cluster_row_live(&rows[i]))
			live[nlive++] = rows[i];
		else
			instance_row_clear(&rows[i]);
	}
	free(rows);
	members[nm++] = (struct cluster_member){ c->id, c->group };
	for (size_t i = 0; i < nlive; i++)
		members[nm++] = (struct cluster_member){ live[i].id, live[i].group };
	sig = signature_of(members, nm);
	pthread_mutex_lock(&c->lock);
	instance_list_free(c->live, c->nlive);
	free(c->members);
	c->live = live;
	c->nlive = nlive;
	c->members = members;
	c->nmembers = nm;
	if (!sig || !c->signature || strcmp(sig, c->signature) != 0) {
		c->generation++;
		if (c->signature)
			log_info("cluster: %zu live instance(s) now", nm);
	}
	free(c->signature);
	c->signature = sig;
	pthread_mutex_unlock(&c->lock);
}

static int self_register(struct cluster *c)
{
	struct instance_row r = { .id = c->id, .host = c->host, .listen = c->listen,
				  .group = c->group, .lease_ms = c->lease_ms };

	return store_instance_register(c->st, &r);
}

/* One heartbeat and one read of the instance list. */
static void beat(struct cluster *c)
{
	struct instance_row *rows = NULL;
	size_t n = 0;
	int rc = store_instance_heartbeat(c->st, c->id);

	if (rc == KILN_ENOTFOUND) {
		log_warn("cluster: this instance's row was gone (pruned as dead?): registering "
			 "again");
		rc = self_register(c);
	}
	if (rc < 0) {
		log_warn("cluster: heartbeat: %s", kiln_error_last());
	} else {
		pthread_mutex_lock(&c->lock);
		c->beat_ok_ms = mono_ms();
		pthread_mutex_unlock(&c->lock);
	}
	if (store_instance_prune(c->st, PRUNE_AFTER_MS, NULL) < 0)
		log_warn("cluster: %s", kiln_error_last());
	if (store_instance_list(c->st, &rows, &n) < 0) {
		log_warn("cluster: %s", kiln_error_last());
		return;
	}
	view_set(c, rows, n);
}

static void *cluster_main(void *arg)
{
	struct cluster *c = arg;
	int64_t every = c->lease_ms / 3;

	pthread_mutex_lock(&c->lock);
	while (!c->stopping) {
		struct timespec until;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += every / 1000;
		until.tv_nsec += (every % 1000) * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		if (pthread_cond_timedwait(&c->cond, &c->lock, &until) != ETIMEDOUT)
			continue;
		if (c->stopping)
			break;
		pthread_mutex_unlock(&c->lock);
		beat(c);
		pthread_mutex_lock(&c->lock);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

int cluster_start(struct cluster **out, const struct cluster_options *opt)
{
	struct cluster *c = calloc(1, sizeof(*c));
	int rc;

	if (!c)
		return kiln_fail(KILN_ERROR, "out of memory");
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cond, NULL);
	c->opt = *opt;
	c->opt.db_path = NULL;
	c->lease_ms = (opt->lease_s > 0 ? opt->lease_s : 30) * 1000;
	if (sodium_init() < 0) {
		rc = kiln_fail(KILN_ERROR, "cluster: libsodium did not start");
		goto fail;
	}
	if (cluster_id_valid(opt->id))
		memcpy(c->id, opt->id, sizeof(c->id));
	else
		cluster_id_new(c->id);
	if (gethostname(c->host, sizeof(c->host) - 1) != 0)
		snprintf(c->host, sizeof(c->host), "?");
	c->group = opt->group && *opt->group ? strdup(opt->group) : NULL;
	c->listen = strdup(opt->listen ? opt->listen : "");
	if ((opt->group && *opt->group && !c->group) || !c->listen) {
		rc = kiln_fail(KILN_ERROR, "out of memory");
		goto fail;
	}
	c->opt.group = c->group;
	c->opt.listen = c->listen;
	c->self = (struct instance_row){ .id = c->id, .host = c->host, .listen = c->listen,
					 .group = c->group, .lease_ms = c->lease_ms,
					 .started_ms = (int64_t)time(NULL) * 1000 };
	if (!opt->shared) {
		view_set(c, NULL, 0);
		*out = c;
		return 0;
	}
	if ((rc = store_open(&c->st, opt->db_path)) < 0 || (rc = self_register(c)) < 0)
		goto fail;
	c->beat_ok_ms = mono_ms();
	beat(c);
	if (pthread_create(&c->thread, NULL, cluster_main, c) != 0) {
		rc = kiln_fail(KILN_ERROR, "cluster: cannot start its thread");
		goto fail;
	}
	c->started = 1;
	*out = c;
	return 0;
fail:
	cluster_stop(c);
	return rc;
}

void cluster_stop(struct cluster *c)
{
	if (!c)
		return;
	if (c->started) {
		pthread_mutex_lock(&c->lock);
		c->stopping = 1;
		pthread_cond_signal(&c->cond);
		pthread_mutex_unlock(&c->lock);
		pthread_join(c->thread, NULL);
	}
	/* a clean stop leaves no row: the others take its nodes at their next read */
	if (c->st && store_instance_remove(c->st, c->id) < 0)
		log_warn("cluster: %s", kiln_error_last());
	store_close(c->st);
	instance_list_free(c->live, c->nlive);
	free(c->members);
	free(c->signature);
	free(c->group);
	free(c->listen);
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->cond);
	free(c);
}

const char *cluster_self(const struct cluster *c)
{
	return c ? c->id : "";
}

const struct instance_row *cluster_self_row(const struct cluster *c)
{
	return &c->self;
}

int cluster_shared(const struct cluster *c)
{
	return c && c->opt.shared;
}

unsigned cluster_generation(struct cluster *c)
{
	unsigned g;

	if (!c)
		return 0;
	pthread_mutex_lock(&c->lock);
	/* losing (or regaining) this instance's own lease changes every owner too */
	g = c->generation * 2 + (unsigned)self_live(c);
	pthread_mutex_unlock(&c->lock);
	return g;
}

int cluster_owns(struct cluster *c, const struct node *n)
{
	int owner;

	if (!c || !c->opt.shared)
		return 1;
	pthread_mutex_lock(&c->lock);
	if (!self_live(c)) {
		pthread_mutex_unlock(&c->lock);
		return 0;
	}
	owner = cluster_owner(c->members, c->nmembers, n->id, n->groups, n->ngroups);
	pthread_mutex_unlock(&c->lock);
	return owner == 0; /* members[0] is this instance */
}

size_t cluster_others_live(struct cluster *c)
{
	size_t n;

	if (!c)
		return 0;
	pthread_mutex_lock(&c->lock);
	n = c->nlive;
	pthread_mutex_unlock(&c->lock);
	return n;
}

int cluster_owner_of(struct cluster *c, const struct node *n, char out[CLUSTER_ID_LEN + 1])
{
	return cluster_owner_url(c, n, out, NULL, 0);
}

int cluster_owner_url(struct cluster *c, const struct node *n, char out[CLUSTER_ID_LEN + 1],
		      char *url, size_t len)
{
	int owner;

	out[0] = '\0';
	if (url && len)
		url[0] = '\0';
	if (!c || !c->opt.shared) {
		if (c)
			memcpy(out, c->id, CLUSTER_ID_LEN + 1);
		return 1;
	}
	pthread_mutex_lock(&c->lock);
	owner = cluster_owner(c->members, c->nmembers, n->id, n->groups, n->ngroups);
	if (owner == 0 && !self_live(c))
		owner = -1; /* this one, but its lease ran out: none until the list says */
	if (owner >= 0)
		snprintf(out, CLUSTER_ID_LEN + 1, "%s", c->members[owner].id);
	for (size_t i = 0; owner > 0 && url && len && i < c->nlive; i++)
		if (strcmp(c->live[i].id, out) == 0)
			snprintf(url, len, "%s", c->live[i].listen ? c->live[i].listen : "");
	pthread_mutex_unlock(&c->lock);
	return owner < 0 ? -1 : owner == 0;
}

int cluster_is_live(struct cluster *c, const char *id)
{
	int live = 0;

	if (!c || !id)
		return 0;
	pthread_mutex_lock(&c->lock);
	if (strcmp(id, c->id) == 0) {
		live = self_live(c);
	} else {
		for (size_t i = 0; i < c->nlive && !live; i++)
			live = strcmp(c->live[i].id, id) == 0;
	}
	pthread_mutex_unlock(&c->lock);
	return live;
}

int64_t cluster_lease_ms(const struct cluster *c)
{
	return c ? c->lease_ms : 30000;
}
