/* SPDX-License-Identifier: Apache-2.0 */
/* kiln-bmcsim: one simulated BMC's overlay of mutable state over the shared tree. */
#ifndef SIM_BMC_H
#define SIM_BMC_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "sim.h"
#include "tree.h"

enum bmc_power { PWR_ON, PWR_OFF, PWR_POWERING_ON, PWR_POWERING_OFF };

/* Outcomes of state changes; the Redfish layer turns them into HTTP errors. */
enum {
	BMC_OK = 0,
	BMC_E_REDUNDANT = -100, /* iLO: already in that state */
	BMC_E_BUSY = -101,      /* a transition is in progress */
	BMC_E_SETTLING = -102,  /* iDRAC: too soon after power off */
	BMC_E_AUTH = -103,
	BMC_E_CAP = -104,       /* session cap reached */
	BMC_E_NOMEM = -105,
};

enum fault_kind { FAULT_NONE, FAULT_HANG, FAULT_RESET, FAULT_STATUS, FAULT_SLOW, FAULT_MALFORMED,
		  FAULT_TRUNCATED, FAULT_STALE_ETAG, FAULT_BUSY };

struct sim_fault {
	enum fault_kind kind;
	int status;      /* FAULT_STATUS: 500, 503, ... */
	int64_t count;   /* requests left; -1: unlimited */
	int prob;        /* percent of requests hit, 100 by default */
	int ms;          /* FAULT_SLOW: pause between chunks (0: the configured default) */
	int retry_s;     /* FAULT_BUSY: the Retry-After it answers (0: 30) */
};

struct bmc_system {
	enum bmc_power power;
	bool pending_on;
	uint64_t off_at;
	uint32_t gen;
	uint32_t etag_gen;
	char boot_target[32], boot_enabled[16], boot_mode[16];
	char boot_progress[64];     /* BootProgress.LastState injected ("": the tree's) */
	/* the system's last answer, kept while nothing it shows changed: its power, or its
	 * etag generation (which every boot setting's change moves) */
	char *rendered;
	size_t rendered_len;
	enum bmc_power rendered_power;
	uint32_t rendered_etag_gen;
};

struct bmc_session {
	char id[24];
	char token[40];
	char user[64];
	uint64_t last_used;
};

/* A login the BMC refused: through the Sessions POST or HTTP Basic. */
struct bmc_login_failure {
	uint64_t ms;
	char via[8];      /* "session" or "basic" */
	char user[64];
};

#define BMC_LOGIN_FAILURES_MAX 64

struct bmc_medium {
	bool changed, inserted, write_protected;
	char *image;
	char proto[16];
};

struct bmc_entry {
	int log;
	int64_t id;
	json_t *entry;
};

struct bmc_sensor {
	char *name;
	bool has_reading;
	double reading;
	char health[16];  /* Status.Health to show ("": as in the tree) */
};

struct bmc_task {
	unsigned id;
	uint64_t start, done_at;
	char action[48];
};

struct bmc_record {
	uint64_t ms;
	char method[8];
	char *path;
	char auth[8];     /* "Basic", "Bearer", "Other" or "" */
	bool token;       /* X-Auth-Token sent (its value is never kept) */
	char *if_match;
	char *body;
	int status;
};

struct bmc {
	int index, port;
	const struct tree *tree;
	const struct sim_config *cfg;
	struct bmc_system *systems;
	struct bmc_medium *media;
	struct bmc_session *sessions;
	size_t nsessions;
	size_t sessions_peak;           /* the most sessions open at once */
	struct bmc_login_failure login_failures[BMC_LOGIN_FAILURES_MAX]; /* the first ones */
	size_t nlogin_failures;
	uint64_t n_get, n_post, n_patch, n_delete, n_other;
	uint64_t n_selected;            /* GETs with a $select where the root advertises it */
	uint64_t n_expanded;            /* GETs with an $expand where the root advertises it */
	uint64_t sessions_created, sessions_deleted, sessions_expired, auth_failures, hook_runs;
	uint64_t connections;           /* TCP connections accepted (each a TLS handshake with --tls) */
	char **resets;
	size_t nresets;
	struct bmc_entry *entries;
	size_t nentries;
	bool *log_cleared;
	struct bmc_sensor *sensors;
	size_t nsensors;
	struct bmc_task *tasks;
	size_t ntasks;
	struct sim_fault faults[8];
	size_t nfaults;
	struct bmc_record *records;
	size_t nrecords, rec_next;
	unsigned next_session, next_task;
	uint64_t faults_hit;
};

int bmc_init(struct bmc *b, int index, int port, const struct tree *t, const struct sim_config *cfg);
void bmc_fini(struct bmc *b);

const char *bmc_power_name(enum bmc_power p);

/* Applies a ResetType already checked against the allowable values. On success *out_ms is
 * how long the transition takes (for async tasks). Returns BMC_OK or BMC_E_*. */
int bmc_power_reset(struct bmc *b, int sys, const char *type, uint64_t now, int64_t *out_ms);
/* Sets the power state at once (from /_sim/inject), running the hook on a change. */
void bmc_power_force(struct bmc *b, int sys, bool on, uint64_t now);

/* Creates a session; on success *out points at it (valid until the next session call). */
int bmc_session_create(struct bmc *b, struct bmc_session **out, const char *user, const char *pass,
		       uint64_t now);
struct bmc_session *bmc_session_by_token(struct bmc *b, const char *token, uint64_t now);
struct bmc_session *bmc_session_by_id(struct bmc *b, const char *id, uint64_t now);
void bmc_session_delete(struct bmc *b, struct bmc_session *s);
void bmc_sessions_expire(struct bmc *b, uint64_t now);
void bmc_sessions_clear(struct bmc *b);
/* Counts and logs a refused login (via "session" or "basic"). */
void bmc_login_failed(struct bmc *b, const char *via, const char *user, uint64_t now);
bool bmc_credentials_ok(const struct bmc *b, const char *user, const char *pass);

/* The system's current ETag, W/"..." (buffer of at least 24 bytes). */
void bmc_system_etag(const struct bmc *b, int sys, char *out, size_t outlen);

int bmc_medium_set(struct bmc *b, int idx, bool inserted, const char *image, const char *proto, bool wp);

/* Adds a log entry from an inject spec {"service","message","severity","message_id"}. */
int bmc_log_inject(struct bmc *b, json_t *spec, const char **err);
void bmc_log_clear(struct bmc *b, int log);

/* Overrides a sensor's reading (reading NULL: kept) and its Status.Health (health NULL:
 * kept) by name; KILN_ENOTFOUND when no sensor (or, for health alone, no object with a
 * Status, such as a PSU redundancy set) has that name. */
int bmc_sensor_set(struct bmc *b, const char *name, const double *reading, const char *health);
/* Makes every reading of a copy of a sensor document drift with time: a slow swing of up to
 * cfg->drift_pct percent, its phase different per BMC and per sensor. */
void bmc_sensors_drift(const struct bmc *b, json_t *doc, uint64_t now_ms);
/* Applies the overrides to a copy of a sensor document. */
void bmc_sensors_apply(const struct bmc *b, json_t *doc);
/* The worst Status.Health injected: 0 none or OK, 1 Warning, 2 Critical (a system's
 * Status.HealthRollup shows it, as a BMC rolls its parts up). */
int bmc_injected_health(const struct bmc *b);
/* The BMC's clock now (the host's plus --clock-skew) as ISO 8601 in offset ("-05:00";
 * NULL: UTC, "+00:00"). */
void bmc_clock_iso(const struct bmc *b, char *out, size_t outlen, const char *offset);

struct bmc_task *bmc_task_create(struct bmc *b, const char *action, uint64_t now, int64_t min_ms);
struct bmc_task *bmc_task_find(struct bmc *b, unsigned id);

int bmc_fault_add(struct bmc *b, const struct sim_fault *f);
/* The transport fault this request meets, consuming one use; FAULT_NONE when none. */
struct sim_fault bmc_fault_take(struct bmc *b, bool stale_etag_only);

/* Records a request; returns the record (to set its status) or NULL when recording is off. */
struct bmc_record *bmc_record_add(struct bmc *b, const char *method, const char *path, const char *auth,
				  bool token, const char *if_match, const char *body, size_t body_len);

json_t *bmc_state_json(struct bmc *b, uint64_t now);
json_t *bmc_requests_json(const struct bmc *b);
void bmc_requests_clear(struct bmc *b);

#endif
