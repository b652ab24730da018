/* SPDX-License-Identifier: Apache-2.0 */
/* Internals shared by the Redfish driver's files: the per-BMC state, operations as queues
 * of request steps, and the pure parsers that the unit tests exercise. */
#ifndef KILN_REDFISH_INTERNAL_H
#define KILN_REDFISH_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include <curl/curl.h>
#include <jansson.h>

#include "daemon/secret.h"
#include "bmc/op/op.h"
#include "bmc/redfish/redfish.h"
#include "kiln/buf.h"

struct rf_ca;

enum rf_profile { RF_GENERIC = 0, RF_DELL, RF_HPE, RF_OPENBMC };

struct rf_chassis {
	char *path;
	char *thermal, *power;                 /* legacy Thermal / Power */
	char *thermal_subsystem, *power_subsystem, *environment;
	char *sensors;                         /* Sensors collection (Redfish 2019+) */
	char *pcie_devices;                    /* PCIeDevice collection */
	char *hpe_devices;                     /* Oem.Hpe.Links.Devices (iLO's GPU list) */
	char *logs;                            /* LogServices (a DGX's SEL, an HGX GPU's XID) */
};

struct redfish_bmc {
	struct redfish_bmc *next;              /* the driver's list of every BMC state */
	int retired;
	int nops;                              /* operations in the driver's list that use it */
	int timed_out;                         /* its last request timed out */
	struct rf_op *background;              /* its background read (the poller's), and the */
	struct rf_op *foreground;              /* other operation beside it: see op_held() */
	int64_t answered_ms;                   /* when the last request got an answer: for a
						* while its connection is probably kept (rf_bmc_connected) */
	int64_t node_id;
	int64_t cred_version;                  /* the target's credentials_version */
	char *name;
	char *base_url;                        /* "https://host:port" */
	char *user;
	struct secret_sealed password; /* unsealed only to build a login or a Basic request */
	int tls_insecure, plain_http;
	int ip_literal;                        /* host is an address: its DNS entry is kept */
	int shard;                             /* the curl multi handle its requests go to */
	char *ca_file, *fingerprint;
	struct rf_ca *ca;                      /* the driver's store for ca_file, once looked up */
	char *want_system;                     /* --bmc-system, or NULL */

	/* authentication */
	char *token;                           /* X-Auth-Token of our session */
	char *session_uri;                     /* to DELETE at shutdown */
	int basic_only;                        /* no SessionService: Basic on every request */
	int auth_failures;                     /* consecutive rejections */
	int rejected;                          /* tried twice: left alone until credentials change */
	long sessions_created;
	int logout_sent;
	int recalled;                          /* the keeper was asked for a kept session */
	int basic_why;                         /* RF_BASIC_*: Basic although sessions exist */
	int64_t basic_until_ms;                /* RF_BASIC_CAP: sessions tried again after */
	char *session_candidate;               /* a Location-less login: the likeliest member
						* of the Sessions collection so far */

	/* discovery (paths as the BMC spells them) */
	int select_query;                      /* the root says ProtocolFeaturesSupported.SelectQuery */
	int select_refused;                    /* a $select read failed (400/501, no PowerState):
						* plain GETs from then on */
	int expand_query;                      /* the root says ExpandQuery.NoLinks: $expand=. */
	int expand_refused;                    /* the Systems collection's $expand answered 400/501:
						* plain GETs from then on */
	int discovered;                        /* root, systems, the system: enough for power */
	int discovered_full;                   /* and its manager, chassis, reset ActionInfo */
	char *managed_by;                      /* the system's first ManagedBy link, or NULL */
	int manager_score;                     /* how sure the choice of b->manager is (discover.c) */
	json_t *chassis_links;                 /* the system's Links.Chassis array, or NULL */
	char *managers_coll, *chassis_coll;    /* the root's collections (when the system links none) */
	enum rf_profile profile;
	char *vendor;
	char *sessions;
	char *system, *manager;
	char *reset_target;
	json_t *reset_allowed;                 /* array of strings, or NULL: not advertised */
	char *reset_info;                      /* ActionInfo resource, when that is how they are listed */
	char *vmedia_system, *vmedia_manager;
	char *logs_system, *logs_manager;
	char *processors, *memory;
	char *hgx_system;                      /* the host's NVIDIA HGX GPU baseboard system
						* ("/redfish/v1/Systems/HGX_Baseboard_0"), or NULL */
	char *logs_hgx;                        /* its LogServices, learned by the first log read */
	int logs_hgx_known;                    /* 1 once that read looked (logs_hgx may be NULL) */
	json_t *log_entries;                   /* the Entries collections a whole log read found,
						* in the order read: later reads GET only these
						* (logs.c); NULL: crawl the LogServices again */
	json_t *pcie_links;                    /* the system's PCIeDevices link array, or NULL */
	uint64_t *log_seen;                    /* the entries the poller's last log read listed
						* (rf_log_entry_hash), sorted: what is not among
						* them is new, whatever its time says (logs.c) */
	size_t nlog_seen;
	int log_seen_known;                    /* a poller's read made log_seen */
	int clock_known;                       /* the manager's DateTime was read (parts.c) */
	int64_t clock_skew_s;                  /* its clock less kilnd's */
	int64_t clock_read_ms;                 /* when (rf_now_ms) */
	json_t *system_doc;                    /* the last power read's system, digested
						* (rf_system_digest: parts.c reads the rollups
						* from it instead of a GET of its own) */
	int64_t system_doc_ms;                 /* when (rf_now_ms) */
	char *bmc_firmware, *bmc_model;
	struct rf_chassis *chassis;
	size_t nchassis;
	json_t *chassis_tried;                 /* {path key: true}: the chassis this discovery
						* asked for (each once, read or not) */
	size_t chassis_over;                   /* links past RF_CHASSIS_LIMIT, left unread */
	json_t *chassis_skipped;               /* ["PATH: 404 'MessageId: ...'"]: chassis that
						* failed to read, left out (power needs none) */
	json_t *chassis_identity;              /* {"SerialNumber","Manufacturer","Model","SKU",
						* "PartNumber"} of the first chassis the system
						* links that states any, or NULL */
};

struct rf_reply {
	const char *path;                      /* the request's (its step's) path */
	long status;                           /* 0: transport failure */
	int curl_code;
	const char *curl_error;
	int tls_pin_mismatch;                  /* the certificate differs from the node's pin */
	const char *body;
	size_t body_len;
	json_t *json;                          /* parsed body, or NULL (empty body or error status) */
	size_t parse_cost;                     /* of json, taken from the parse budget (budget.h) */
	const char *location;
	const char *etag;
	const char *token;
	long retry_after_s;                    /* -1 when absent */
};

struct rf_op;
/* A step's handler: 0 to go on, a negative kiln code (with kiln_fail) to fail the operation.
 * Steps it pushes run next, before the steps already queued (depth first). */
typedef int (*rf_handler)(struct rf_op *op, const struct rf_reply *r);
typedef int (*rf_call_fn)(struct rf_op *op);

enum {
	RF_NOAUTH = 1,       /* the service root: no credentials */
	RF_ALLOW_ERROR = 2,  /* pass 4xx/5xx to the handler instead of failing */
	RF_LOGIN = 4,        /* internal: POST Sessions */
	RF_NO_RETRY = 8,     /* never retry this one as transient */
	RF_SESSION_CHECK = 16, /* internal: GET (or DELETE) of a session kept across a restart */
	RF_LOG_PAGE = 32,    /* a page of log entries: RF_BODY_LOG_MAX, not a resource's cap */
};

/* Why a BMC with a SessionService is reached with HTTP Basic (which Redfish requires every
 * service to accept). */
enum {
	RF_BASIC_NONE = 0,
	RF_BASIC_CAP,        /* the login answered 503: the BMC's session limit */
	RF_BASIC_REFUSED,    /* the login answered 401: Basic is the one retry */
};

struct rf_step {
	struct rf_step *next;
	char *method;                          /* NULL: a call, no request */
	char *path;
	char *body;
	char *if_match;
	int flags;
	int retries;
	int64_t not_before_ms;
	rf_handler handler;
	rf_call_fn call;
};

struct rf_request;

enum { RF_WAIT_NONE = 0, RF_WAIT_SLOT, RF_WAIT_HANDSHAKE };

struct rf_op {
	struct rf_op *next, *prev;             /* the driver's list of active operations */
	struct rf_op *wait_next, *wait_prev;   /* a wait queue for a request slot */
	int waitq;                             /* RF_WAIT_*: which queue it is in */
	struct rf_op *fin_next;                /* finished, to be freed by the loop */
	struct redfish *rf;
	struct redfish_bmc *bmc;
	struct bmc_op op;
	char *media_url;
	bmc_done_fn done;
	void *ud;

	struct rf_step *queue;
	struct rf_step *pushed, **pushed_tail; /* steps pushed by the running handler */
	struct rf_step *last_pushed;
	char *task_uri;
	struct rf_request *inflight;
	int relogged;                          /* one re-login per operation after a 401 */
	int begin_later;                       /* begins once the BMC's other operation ends */
	struct rf_op *joined;                  /* the background power read that answers it */
	int finished;

	rf_call_fn start;                      /* runs once discovery is done */
	rf_call_fn finish;                     /* runs when the queue is empty; may push more */
	rf_call_fn task_then;                  /* after a task monitor completes */
	int logout;                            /* internal: deletes the session, frees the BMC */
	int discover_full;                     /* its discovery goes on to manager and chassis */
	json_t *data;                          /* the result being built */
	int64_t deadline_ms;

	/* scratch for the operation kinds */
	int phase;
	int seen_off;
	int task_done;
	int retried;
	int goal;                              /* enum bmc_power wanted at the end */
	const char *reset_type;
	const char *second_reset;              /* cycle as off-then-on: the "on" ResetType */
	char *etag;
	char *device;                          /* virtual media device chosen */
	json_t *scratch;
	size_t index;
};

/* One curl multi handle and its connection cache. libcurl 7.88 walks the whole cache in
 * every curl_multi_remove_handle (close_connect_only): with 10,000 kept connections in one
 * cache that walk took most of kilnd's CPU, so BMCs are spread over several. */
struct rf_shard {
	struct redfish *rf;
	CURLM *multi;
	int index;
	int dirty;                             /* socket_action ran: messages may wait */
	int64_t due_ms;                        /* its timer (INT64_MAX: none) */
};

/* A CA file loaded once into an X509_STORE that every connection trusting it shares
 * (http.c): curl 7.88 re-reads CAINFO into a new store per connection unless its one cached
 * store per multi handle matches, which BMCs of several CA files on one handle defeat. */
#define RF_CA_BUCKETS 256

/* The driver (http.c). */
struct redfish {
	struct redfish_config cfg;
	struct rf_shard *shards;
	int nshards;
	int next_shard;                        /* round-robin for new BMC states */
	pthread_t thread;
	int thread_started;
	pthread_mutex_t lock;                  /* guards inbox, retired, stopping */
	struct rf_op *inbox, **inbox_tail;
	int epfd;                              /* every curl socket and wakefd */
	int wakefd;                            /* eventfd: submissions, retirements, stop */
	int64_t walk_due_ms;                   /* next walk over every operation (delayed steps) */
	struct rf_op *wait_head[3], *wait_tail[3]; /* by RF_WAIT_*: ops waiting for a slot */
	struct rf_op *finished;                /* finished operations not freed yet */
	struct redfish_bmc *bmcs;              /* every BMC state, retired ones included */
	int retired_count;                     /* retired states not freed yet */
	int stopping;
	struct rf_op *ops;                     /* loop thread only */
	int inflight;
	int handshaking;                       /* requests in flight on a new TLS connection */
	struct rf_ca *cas[RF_CA_BUCKETS];      /* loaded CA files, by path (loop thread) */
};

int64_t rf_now_ms(void);
/* 1 when b's next request counts as a TLS handshake under the cap (max_handshakes). */
int rf_handshake_counted(const struct redfish_bmc *b);

/* Steps (redfish.c). path is copied; body is copied (may be NULL). */
void rf_push(struct rf_op *op, const char *method, const char *path, const char *body,
	     int flags, rf_handler handler);
void rf_push_delayed(struct rf_op *op, const char *method, const char *path, long delay_ms,
		     rf_handler handler);
void rf_push_call(struct rf_op *op, rf_call_fn call);
/* Sets If-Match on the step pushed last. */
void rf_push_if_match(struct rf_op *op, const char *etag);
/* Follows a task monitor at location until it completes, then calls then. */
int rf_task_follow(struct rf_op *op, const char *location, long retry_after_s, rf_call_fn then);

/* Request engine (http.c). */
int rf_request_start(struct rf_op *op, struct rf_step *step);
void rf_request_free(struct rf_request *req);
void rf_loop_complete(struct redfish *rf, CURLMsg *msg);
/* Frees the loaded CA stores (at stop; connections hold their own references). */
void rf_ca_free_all(struct redfish *rf);

/* Authentication and reply handling (session.c). */
int rf_step_needs_login(struct rf_op *op, const struct rf_step *step);
void rf_push_login(struct rf_op *op);
/* Once per BMC state, before its first login: takes the session the keeper kept (a kilnd
 * that was killed) and pushes its check, one GET. 1 when it did (no login now), else 0. */
int rf_session_recall(struct rf_op *op);
/* Decides what a reply means for its step: 1 done (handler ran), 0 the step stays queued
 * (retry or re-login), < 0 the operation fails. */
int rf_reply_process(struct rf_op *op, struct rf_step *step, struct rf_reply *r);
void rf_session_forget(struct redfish_bmc *b);

/* Operation plumbing (redfish.c). */
void rf_op_fail(struct rf_op *op, int code, const char *msg);
void rf_op_advance(struct rf_op *op);
void rf_step_free(struct rf_step *s);
/* "MessageId: Message" from a Redfish error body, "" when there is none. */
void rf_error_text(char *out, size_t n, const json_t *body);
int rf_fail_reply(const char *method, const char *path, const struct rf_reply *r);
/* Appends "PATH: STATUS 'MessageId: Message'" to skipped (an array; anything else: nothing):
 * what a read left out, and why. */
void rf_skip_note(json_t *skipped, const char *path, const struct rf_reply *r);
/* A GET answered with RF_ALLOW_ERROR: 1 a resource to read; 0 an error answer (a 404, a
 * captured error body served as 200), noted in skipped and left out; < 0 (kiln_fail) a busy
 * BMC (503, 429): the operation fails as busy, a later one reads it all. */
int rf_reply_usable(const struct rf_reply *r, json_t *skipped);
const char *rf_profile_name(enum rf_profile p);

/* Discovery (discover.c): from the root when nothing is known, or from the system's links
 * (manager, chassis) when a discovery for a power read stopped at the system. */
int rf_discover_begin(struct rf_op *op);
int rf_discover_extend(struct rf_op *op);
void rf_bmc_forget_discovery(struct redfish_bmc *b);
enum rf_profile rf_profile_detect(const json_t *root, const json_t *manager);
int rf_path_equal(const char *a, const char *b);
/* A path as a key that rf_path_equal would match: lower case, without a fragment or a
 * trailing slash ("/redfish/v1/chassis/1" of "/redfish/v1/Chassis/1/#/x"). */
void rf_path_key(char *out, size_t n, const char *path);
/* Whether a chassis the Chassis collection lists is the system's, and how far to follow it:
 * RF_CLAIM_NO (not the system's), RF_CLAIM_ALONE (its Links.ComputerSystems name the system or
 * the host's HGX baseboard (hgx, may be NULL) and another system too: read for itself only, as
 * a blade enclosure), RF_CLAIM_WITH_CONTAINED (they name only those: what it contains is the
 * system's too). */
enum { RF_CLAIM_NO = 0, RF_CLAIM_ALONE, RF_CLAIM_WITH_CONTAINED };
int rf_chassis_claim(const json_t *chassis, const char *system, const char *hgx);
/* How well a manager fits the system (the Managers collection, where the system names none):
 * 3 its Links.ManagerForServers names the system, 2 a ManagerType "BMC" that names no other
 * system, 1 another that names none, 0 one that manages other systems only. */
int rf_manager_score(const json_t *manager, const char *system);
/* 1 when a system id names an NVIDIA HGX GPU baseboard (never a host of its own). */
int rf_system_is_hgx(const char *id);
const char *rf_link(const json_t *obj, const char *key);

/* Operation kinds. */
int rf_power_start(struct rf_op *op);
/* A power read answered by a system resource (op->data: power, power_state). */
void rf_power_read_system(struct rf_op *op, const json_t *sys);
/* The system's BootProgress (sys: a ComputerSystem) into data: "boot_progress" (its
 * LastState, unless "None"), "last_boot_s" (LastBootTimeSeconds). */
void rf_boot_progress_read(json_t *data, const json_t *sys);
int rf_boot_start(struct rf_op *op);
int rf_media_start(struct rf_op *op);
int rf_sensors_start(struct rf_op *op);
int rf_logs_start(struct rf_op *op);
int rf_inventory_start(struct rf_op *op);

/* Pure parsers (unit-tested). */
enum bmc_power rf_power_parse(const char *power_state);
/* The first of candidates (NULL-terminated) that allowed (array or NULL: all) lists. */
const char *rf_reset_pick(const json_t *allowed, const char *const *candidates);
/* Allowed ResetType values from a Reset action object or an ActionInfo resource. */
json_t *rf_reset_allowed_parse(const json_t *action_or_info);
/* Appends normalised sensors from a legacy Thermal or Power resource. */
void rf_sensors_from_thermal(json_t *out, const json_t *thermal);
void rf_sensors_from_power(json_t *out, const json_t *power);
/* ThermalMetrics, a Fan, a PowerSupply, EnvironmentMetrics (newer schemas). */
void rf_sensors_from_thermal_metrics(json_t *out, const json_t *tm);
void rf_sensors_from_fan(json_t *out, const json_t *fan);
void rf_sensors_from_power_supply(json_t *out, const json_t *psu);
void rf_sensors_from_power_subsystem(json_t *out, const json_t *power_subsystem);
void rf_sensors_from_environment(json_t *out, const json_t *env, const char *chassis_name);
/* What names the entries of one log read. */
struct rf_log_ids {
	json_t *labels;                        /* {service path key: label} */
	json_t *taken;                         /* {label: true} */
	json_t *seen;                          /* {entry id, "@" entry path key: true}: listed */
	const char *host[2];                   /* the system and its manager (or NULL) */
	/* By arrival (the poller's reads, once one read made them): an entry is new when the
	 * last read did not list it, whatever its Created says (a BMC clock hours off neither
	 * hides new entries nor replays old ones); since is not compared then. */
	const uint64_t *before;                /* sorted rf_log_entry_hash of the last read */
	size_t nbefore;
	int by_arrival;                        /* 1: before decides, not since */
	json_t *kept;                          /* {hash as text: true}: the entries this read
						* returned or before held (may be NULL) */
};
/* An entry's identity across reads: its id ("LABEL/Id") and Created as the BMC wrote it
 * (an id reused after a clear is another entry). */
uint64_t rf_log_entry_hash(const char *id, const char *created);
/* The sorted hash list of kept's keys (NULL when empty or out of memory; *n its length). */
uint64_t *rf_log_kept_list(const json_t *kept, size_t *n);
/* The label of the log service at service_path ("/redfish/v1/Managers/1/LogServices/Log1"),
 * the first part of its entries' ids. A service of the system's or its manager's (ids->host:
 * where kiln has always read logs) is its last segment ("Log1", as kiln always named it)
 * unless a service labelled before in this read has that (Supermicro's Log1 under the system
 * and under the manager: the system's is read first, and keeps it, as it did); that one, and
 * one elsewhere (the HGX baseboard's, a chassis'), is its path from /redfish/v1/ less
 * "LogServices/" ("Managers/1/Log1", "Chassis/HGX_GPU_SXM_1/XID"), whatever else the BMC
 * has. Kept in ids for the read; the string is ids'. */
const char *rf_log_label(struct rf_log_ids *ids, const char *service_path);
/* Converts the LogEntry members of an Entries page of service_path to {"id" ("LABEL/Id"),
 * "time","timestamp","severity","message","message_id","service" (the label), and where the
 * entry names an NVIDIA Xid "xid" or "sxid" with the "gpu" or "nvswitch" it is about} and
 * appends those created at or after since (0: all; an entry without a time always). A member
 * that is another service's entry (its @odata.id) takes that service's label; one listed
 * already (by @odata.id or id) is skipped and counted in *out_dups (may be NULL). Raises
 * out_meta's "newest" (an integer) to the newest entry's time among all members. */
size_t rf_log_entries_append(json_t *out, json_t *out_meta, struct rf_log_ids *ids,
			     const json_t *collection, const char *service_path, int64_t since,
			     size_t *out_dups);
/* The Xid in a message ("XID 79 GPU has fallen off the bus"; *out_sxid 1 for an NVSwitch's
 * "SXID 20034"; the kernel's "Xid (PCI:0000:3b:00): 79, ..."): 1, else 0. */
int rf_log_xid_parse(const char *text, long *out_xid, int *out_sxid);
int rf_log_service_wanted(const char *id);
int64_t rf_time_parse(const char *iso8601);
/* Fills the inventory object from a ComputerSystem. */
void rf_inventory_from_system(json_t *inv, const json_t *sys);
/* Adds "chassis_serial" from the system's chassis (b->chassis_identity, may be NULL), and
 * the manufacturer, model, serial and SKU the System left empty ("from_chassis" names them). */
void rf_inventory_from_chassis(json_t *inv, const json_t *chassis);
/* A PCIeDevice or iLO OEM device: 1 a GPU (DeviceType GPU, or a display or processing
 * accelerator class), 0 not one (a NIC, a storage controller: whoever made it), -1 when the
 * device alone does not say (its PCIe functions' class will). */
int rf_device_is_gpu(const json_t *dev);
/* The same from a PCIeFunction's DeviceClass or ClassCode. */
int rf_function_is_gpu(const json_t *fn);
/* Parts (parts.c): the system's HealthRollup into rollups ([{"name","health"}]); returns
 * which members to read (RF_PARTS_* bits): those under a rollup that is not OK. */
enum { RF_PARTS_MEMORY = 1, RF_PARTS_PROCESSORS = 2, RF_PARTS_STORAGE = 4 };
int rf_parts_from_system(json_t *rollups, const json_t *sys);
/* What of a ComputerSystem the parts read needs, small whatever the BMC sent: Status and the
 * summaries' (Health, HealthRollup) and the Memory, Processors and Storage links. */
json_t *rf_system_digest(const json_t *sys);
/* A Memory, Processor or Drive resource (type "memory", "processor", "drive", "storage"):
 * appends a sensor row {"name","kind":"part","part","id","location","health"} when the BMC
 * rates it Warning or Critical (never an absent one); a Processor of ProcessorType GPU is
 * "gpu". Returns 1 when it added one. */
int rf_part_from_member(json_t *out, const char *type, const json_t *member);
/* The manager's DateTime (and DateTimeLocalOffset where DateTime has none) as unix seconds,
 * 0 when it states none. */
int64_t rf_manager_clock(const json_t *manager);
/* Pushes the parts' and the clock's reads of a sensors read (op->scratch "sensors",
 * "skipped", "rollups"). */
void rf_parts_start(struct rf_op *op);
/* Adds "rollups" and "bmc_clock" to a sensors read's data. */
void rf_parts_finish(struct rf_op *op, json_t *data);
/* Appends the normalised reading of one Sensor resource (Chassis/X/Sensors/Y). */
void rf_sensors_from_sensor(json_t *out, const json_t *sensor);
/* The readings the parsers above appended, each physical reading once (the rule is in
 * sensor_merge.c), distinct ones sharing a name renamed "NAME #2", without the parsers'
 * internal members. A new array (the caller's), or NULL when out of memory. */
json_t *rf_sensors_merge(const json_t *sensors);
/* 1 when a 2xx body is a captured Redfish error, not a resource: an object whose only
 * member is "error" (vendor trees store them where a resource failed). */
int rf_body_is_error(const json_t *body);

#endif
