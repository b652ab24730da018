/* SPDX-License-Identifier: Apache-2.0 */
/* kiln-bmcsim: configuration, vendor profiles, the reply shape and the timer queue shared by its modules. */
#ifndef SIM_SIM_H
#define SIM_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Vendor behaviour the simulator imitates. */
struct sim_profile {
	const char *name;
	bool redundant_off_400;   /* iLO: ForceOff while off -> 400 InvalidOperationForSystemState */
	bool on_after_off_409;    /* iDRAC: power on shortly after reaching off -> 409 */
	bool eject_needs_body;    /* iDRAC: EjectMedia without a {} body -> 400 */
	bool insert_needs_proto;  /* iDRAC: InsertMedia without TransferProtocolType -> 400 */
	bool etag;                /* If-Match honoured on PATCH (412 when stale) */
	bool newest_first;        /* log entries listed newest first */
	bool action_200;          /* actions answer 200 with a message body instead of 204 */
};

/* Finds a profile by name; NULL when unknown. */
const struct sim_profile *sim_profile_find(const char *name);

struct sim_config {
	const struct sim_profile *profile;
	const char *user, *password;
	int power_delay_ms;       /* each PoweringOn/PoweringOff phase */
	int settle_ms;            /* iDRAC: refuse power on this long after reaching off */
	int session_cap;
	/* the answer to a session POST: Location and @odata.id (standard), @odata.id only
	 * (no-location), neither (bare), or 401 to any credentials, Basic working (refused) */
	enum sim_login { LOGIN_STANDARD = 0, LOGIN_NO_LOCATION, LOGIN_BARE, LOGIN_REFUSED } login;
	int64_t session_timeout_ms;
	int task_ms;              /* async: a task completes no sooner than this */
	bool async;               /* actions answer 202 with a task monitor */
	bool require_etag;        /* PATCH without If-Match -> 428 */
	int record_max;           /* recorded requests kept per BMC */
	const char *power_hook;
	int latency_ms, jitter_ms;
	int hang_ms;              /* a hung request is dropped after this long */
	int slow_ms;              /* pause between chunks of a slow body */
	int drift_pct;            /* sensor readings swing by up to this share (0: as in the tree) */
	int clock_skew_s;         /* the BMC's clock less the host's: a manager's DateTime, the
				   * Created of an injected log entry */
	bool unique_serials;      /* each BMC's systems report the tree's serial + "-<n>" */
	bool boot_continuous;     /* a boot override PATCH is kept as Continuous whatever it
				   * asked (sushy-tools' libvirt driver) */
	/* a query the root advertises: honoured, ignored (the plain answer) or refused (400) */
	enum sim_query_quirk { QUERY_HONOURED = 0, QUERY_IGNORED, QUERY_REFUSED } select_quirk, expand_quirk;
};

/* A reply being built: the body is either owned (body) or borrowed from the tree (text). */
struct sim_reply {
	int status;
	char *body;
	const char *text;
	size_t len;
	const char *ctype;
	char *location;
	char *token;
	char *etag;
	int retry_after;          /* seconds, 0: none */
	bool www_auth;
};

void sim_reply_free(struct sim_reply *r);

/* Monotonic milliseconds. */
uint64_t sim_now_ms(void);

/* One process-wide timer queue, run by the server loop. fn(arg, data) is called once at or
 * after `at`. Returns KILN_ERROR when out of memory. */
typedef void (*sim_timer_fn)(void *arg, uint64_t data);
int sim_timer_add(uint64_t at, sim_timer_fn fn, void *arg, uint64_t data);
/* Milliseconds until the next timer (0 when due), -1 when none. */
int64_t sim_timer_next(uint64_t now);
void sim_timer_run(uint64_t now);
void sim_timer_clear(void);

#endif
