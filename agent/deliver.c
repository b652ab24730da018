/* SPDX-License-Identifier: Apache-2.0 */
/* Delivery of reports to kilnd: token, direct send, spool drained oldest first. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "deliver.h"
#include "enroll.h"
#include "kiln/error.h"
#include "kiln/log.h"
#include "send.h"
#include "spool.h"

/* How long one delivery waits in all for kilnd's Retry-After before it spools the report
 * (the next interval asks again). */
#define ENROLL_WAIT_MAX_S 900

/* Sleeps s seconds plus up to a second of jitter (agents told the same Retry-After do not
 * come back in step: a spread by pid); 0 when a signal cut it short (the agent is stopping). */
static int enroll_wait(long s)
{
	struct timespec ts = { .tv_sec = s, .tv_nsec = (long)(getpid() % 1000) * 1000000L };

	return nanosleep(&ts, NULL) == 0;
}

/* Makes sure d->token is set: the token file, the stored enrolled token, or a new enrollment. */
static int token_ensure(struct delivery *d, json_t *report)
{
	json_t *host = json_object_get(report, "host");
	char *enroll = NULL, *node = NULL, *token = NULL;
	int rc;

	if (d->token)
		return 0;
	if (d->token_file)
		return kiln_token_read_file(&d->token, d->token_file);
	if (enroll_token_load(&d->token, d->state_dir) == 0)
		return 0;
	rc = kiln_token_read_file(&enroll, d->enroll_token_file);
	if (rc < 0)
		return rc;
	for (long waited = 0;;) {
		long retry = 0;

		rc = enroll_request(&node, &token, &retry, d->servers, enroll, &d->trust,
				    json_string_value(json_object_get(host, "dmi_serial")),
				    json_string_value(json_object_get(host, "dmi_uuid")),
				    json_string_value(json_object_get(host, "hostname")),
				    json_string_value(json_object_get(host, "machine_id")));
		if (rc != KILN_EBUSY || retry <= 0 || waited + retry > ENROLL_WAIT_MAX_S)
			break;
		log_info("%s", kiln_error_last());
		waited += retry;
		if (!enroll_wait(retry))
			break;
	}
	explicit_bzero(enroll, strlen(enroll));
	free(enroll);
	if (rc < 0)
		return rc;
	rc = enroll_token_store(d->state_dir, token);
	if (rc == 0) {
		log_info("enrolled as node '%s'", node);
		d->token = token;
		token = NULL;
	}
	free(node);
	free(token);
	return rc;
}

static void token_drop(struct delivery *d)
{
	if (d->token)
		explicit_bzero(d->token, strlen(d->token));
	free(d->token);
	d->token = NULL;
	if (d->enroll_token_file)
		enroll_token_forget(d->state_dir); /* enroll again next time */
}

/* Sends spooled reports oldest first until the spool is empty or kilnd fails. */
static int spool_drain(struct delivery *d)
{
	char name[64];
	char *data;
	size_t len;
	int rc;

	for (;;) {
		rc = spool_oldest(d->spool, &data, &len, name);
		if (rc == KILN_ENOTFOUND)
			return 0;
		if (rc < 0)
			return rc;
		rc = send_report(NULL, d->servers, d->token, &d->trust, data, len);
		free(data);
		if (rc == KILN_EIDENTITY) {
			/* refused until an admin decides: only the newest report is kept */
			spool_keep_newest(d->spool);
			return rc;
		}
		if (rc == KILN_EINVAL)
			log_error("dropping a spooled report kilnd refused: %s", kiln_error_last());
		else if (rc == KILN_EAUTH)
			token_drop(d);
		if (rc < 0 && rc != KILN_EINVAL)
			return rc;
		rc = spool_remove(d->spool, name);
		if (rc < 0)
			return rc;
	}
}

/* kilnd refused report text because its host is not the node's (an admin decides): the
 * report is kept, alone, to be sent again next interval. Returns KILN_EIDENTITY. */
static int identity_refused(struct delivery *d, const char *text, size_t len)
{
	char why[512];

	snprintf(why, sizeof why, "%s", kiln_error_last());
	if (spool_put(d->spool, text, len) == 0)
		spool_keep_newest(d->spool);
	log_error("%s; keeping only the newest report, sent again every interval", why);
	return kiln_fail(KILN_EIDENTITY, "%s", why);
}

/* Delivers one report: directly when nothing waits, else behind the spooled ones. 0 when sent. */
int delivery_send(struct delivery *d, json_t *report, const char *text, size_t len)
{
	int rc = token_ensure(d, report);

	if (rc == 0 && spool_count(d->spool) == 0) {
		rc = send_report(NULL, d->servers, d->token, &d->trust, text, len);
		if (rc == 0)
			return 0;
		if (rc == KILN_EINVAL) {
			log_error("kilnd refused the report: %s", kiln_error_last());
			return rc;
		}
		if (rc == KILN_EAUTH)
			token_drop(d);
		if (rc == KILN_EIDENTITY)
			return identity_refused(d, text, len);
	}
	if (rc < 0)
		log_warn("report not delivered, spooling it: %s", kiln_error_last());
	rc = spool_put(d->spool, text, len);
	if (rc < 0) {
		log_error("cannot spool the report: %s", kiln_error_last());
		return rc;
	}
	if (!d->token)
		return KILN_ERROR;
	rc = spool_drain(d);
	if (rc == KILN_EIDENTITY) {
		log_error("%s; keeping only the newest report, sent again every interval",
			  kiln_error_last());
		return rc;
	}
	if (rc < 0) {
		log_warn("kilnd unavailable, %zu report(s) spooled: %s", spool_count(d->spool),
			 kiln_error_last());
		return rc;
	}
	return 0;
}

void delivery_free(struct delivery *d)
{
	if (d->token)
		explicit_bzero(d->token, strlen(d->token));
	free(d->token);
	d->token = NULL;
}
