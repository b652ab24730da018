/* SPDX-License-Identifier: Apache-2.0 */
/* node add asks the Redfish BMC for its system before the node is stored, off the request
 * thread: a BMC with several systems and no --bmc-system is refused with their ids, one that
 * does not answer is added with a warning (uncabled nodes are normal). node import does not
 * ask: its BMCs are the poller's first reads (issue 35). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "api/handlers.h"
#include "bmc/target.h"
#include "kiln/error.h"

/* Probes take node ids of their own, below every stored node's: a few of them, so that the
 * engine keeps no more than that many idle entries (a probe's BMC state is dropped). */
#define PROBE_IDS 64

struct check_result {
	int rc;
	char error[512];
};

struct node_checks {
	struct node_checks *next;      /* checks waiting for their BMCs (the list below) */
	struct api_ctx *c;             /* NULL once resumed: the request no longer waits */
	int refs;                      /* the request's, and one per BMC call out */
	size_t left;                   /* BMC calls not back yet */
	int stopping;                  /* kilnd stops: answered before the BMCs did */
	struct node **nodes;
	size_t count;
	struct check_result *res;
	void (*then)(struct api_ctx *c);
};

static pthread_mutex_t checks_lock = PTHREAD_MUTEX_INITIALIZER;
static struct node_checks *checks_waiting;
static atomic_uint probe_next;

static void checks_unlink(struct node_checks *k)
{
	for (struct node_checks **pp = &checks_waiting; *pp; pp = &(*pp)->next) {
		if (*pp == k) {
			*pp = k->next;
			return;
		}
	}
}

/* Under checks_lock: drops one reference; the last one frees it. */
static void checks_unref(struct node_checks *k)
{
	if (--k->refs > 0)
		return;
	for (size_t i = 0; i < k->count; i++)
		node_free(k->nodes[i]);
	free(k->nodes);
	free(k->res);
	free(k);
}

/* The request ended (answered, or the client went away). */
static void checks_release(void *arg)
{
	struct node_checks *k = arg;

	pthread_mutex_lock(&checks_lock);
	checks_unlink(k);
	k->c = NULL;
	checks_unref(k);
	pthread_mutex_unlock(&checks_lock);
}

/* Under checks_lock: the last answer is in, the request goes on (on its own thread). */
static void checks_resume(struct node_checks *k)
{
	struct api_ctx *c = k->c;

	checks_unlink(k);
	k->c = NULL;
	if (c)
		api_resume(c);
}

/* One BMC call out: it holds a reference on its checks. */
struct probe {
	struct node_checks *k;
	size_t index;
};

/* One BMC answered (or refused the call): the last one resumes the request. */
static void check_record(struct node_checks *k, size_t i, const struct bmc_result *res)
{
	struct check_result *r = &k->res[i];

	pthread_mutex_lock(&checks_lock);
	r->rc = res->rc;
	snprintf(r->error, sizeof(r->error), "%s", res->rc < 0 ? res->error : "");
	if (--k->left == 0 && k->c)
		checks_resume(k);
	checks_unref(k);
	pthread_mutex_unlock(&checks_lock);
}

/* An engine thread. */
static void check_done(void *ud, const struct bmc_result *res)
{
	struct probe *pr = ud;

	check_record(pr->k, pr->index, res);
	free(pr);
}

static void checks_resumed(struct api_ctx *c)
{
	struct node_checks *k = c->pending;

	if (k->stopping) {
		api_fail(c, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, "kilnd is stopping; nothing was added");
		return;
	}
	k->then(c);
}

/* Starts node i's probe; its refusal is its result at once. */
static void probe_start(struct api_ctx *c, struct node_checks *k, size_t i)
{
	struct bmc_op op = { .kind = BMC_OP_POWER_GET, .probe = 1 };
	struct probe *pr = malloc(sizeof(*pr));
	struct bmc_target t;
	char *password = NULL;
	int rc = pr ? 0 : kiln_fail(KILN_ERROR, "out of memory");

	if (rc == 0)
		rc = bmc_target_from_node(&t, &password, k->nodes[i], c->key);
	if (rc == 0) {
		*pr = (struct probe){ k, i };
		t.node_id = -1 - (int64_t)(atomic_fetch_add(&probe_next, 1) % PROBE_IDS);
		rc = bmc_submit(c->engine, &t, &op, check_done, pr);
	}
	secret_free_string(password);
	if (rc < 0) {
		struct bmc_result res = { .rc = rc };

		snprintf(res.error, sizeof(res.error), "%s", kiln_error_last());
		free(pr);
		check_record(k, i, &res);
	}
}

static int wants_probe(const struct node *n)
{
	return n->bmc_protocol == BMC_REDFISH || n->bmc_protocol == BMC_REDFISH_HTTP;
}

int api_node_check(struct api_ctx *c, struct node **nodes, size_t count,
		   void (*then)(struct api_ctx *c))
{
	struct node_checks *k = calloc(1, sizeof(*k));
	size_t probes = 0;

	if (!k || !(k->res = calloc(count ? count : 1, sizeof(*k->res)))) {
		free(k);
		for (size_t i = 0; i < count; i++)
			node_free(nodes[i]);
		free(nodes);
		api_fail(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
		return KILN_ERROR;
	}
	k->nodes = nodes;
	k->count = count;
	k->then = then;
	k->refs = 1;
	c->pending = k;
	c->pending_free = checks_release;
	for (size_t i = 0; c->engine && i < count; i++)
		probes += wants_probe(nodes[i]);
	if (probes == 0)
		return 1;
	c->resumed = checks_resumed;
	pthread_mutex_lock(&checks_lock);
	k->c = c;
	k->left = probes;
	k->refs += (int)probes;
	k->next = checks_waiting;
	checks_waiting = k;
	api_suspend(c);
	pthread_mutex_unlock(&checks_lock);
	for (size_t i = 0; i < count; i++)
		if (wants_probe(nodes[i]))
			probe_start(c, k, i);
	return 0;
}

struct node **api_node_check_nodes(struct api_ctx *c, size_t *count)
{
	struct node_checks *k = c->pending;

	*count = k->count;
	return k->nodes;
}

int api_node_check_result(struct api_ctx *c, size_t i, const char **msg)
{
	struct node_checks *k = c->pending;

	*msg = k->res[i].error;
	return k->res[i].rc;
}

void api_node_checks_stop(void)
{
	pthread_mutex_lock(&checks_lock);
	while (checks_waiting) {
		checks_waiting->stopping = 1;
		checks_resume(checks_waiting);
	}
	pthread_mutex_unlock(&checks_lock);
}
