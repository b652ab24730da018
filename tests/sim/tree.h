/* SPDX-License-Identifier: Apache-2.0 */
/* kiln-bmcsim: the mockup tree, loaded once, parsed and read-only, shared by every simulated BMC. */
#ifndef SIM_TREE_H
#define SIM_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

enum tree_kind {
	RES_PLAIN = 0, /* served as stored */
	RES_SYSTEM,    /* ComputerSystem: power, boot and etag come from the BMC overlay */
	RES_VMEDIA,    /* VirtualMedia: image and inserted state from the overlay */
	RES_ENTRIES,   /* LogEntryCollection: injected entries added */
	RES_SESSIONS,  /* SessionCollection: members are the live sessions */
	RES_SENSORS,   /* Thermal, Power, Sensor, ...: readings may be overridden */
	RES_ERROR,     /* a captured Redfish error body: served with its status */
	RES_CLOCK,     /* a Manager with a DateTime: served with the BMC's clock (--clock-skew) */
};

struct tree_res {
	char *path;              /* canonical path, from the folder: /redfish/v1/Systems/1 */
	char *key;               /* lower case, no trailing slash: the lookup key */
	char *text;              /* compact JSON (or XML) as served */
	size_t len;
	json_t *json;            /* parsed document, kept for the dynamic kinds only */
	const char *ctype;       /* content type */
	enum tree_kind kind;
	int index;               /* into tree systems / media / logs, per kind */
	int status;              /* RES_ERROR: the HTTP status its MessageId stands for */
};

enum tree_action_kind { ACT_RESET, ACT_INSERT, ACT_EJECT, ACT_CLEARLOG, ACT_OTHER };

struct tree_action {
	char *key;               /* normalised target path */
	char *name;              /* "ComputerSystem.Reset" */
	enum tree_action_kind kind;
	int index;               /* system, medium or log index */
};

struct tree_system {
	struct tree_res *res;
	char *id;
	char *power;             /* initial PowerState */
	json_t *reset_types;     /* array of allowable ResetType strings (owned reference) */
	json_t *boot_targets;    /* BootSourceOverrideTarget allowable values, or NULL */
	json_t *boot_enabled;    /* BootSourceOverrideEnabled allowable values, or NULL */
	char *boot_target, *boot_enabled_init, *boot_mode;
};

struct tree_medium {
	struct tree_res *res;
	char *id;                /* unique name used in /_sim/state */
	bool inserted;
	char *image;
	bool under_systems;
};

struct tree_log {
	struct tree_res *res;    /* the Entries collection */
	char *service;           /* LogService Id: Sel, Lclog, IML, IEL, EventLog, ... */
	int64_t max_id;          /* highest numeric entry Id in the tree */
	size_t tree_count;       /* members stored in the tree */
};

struct tree {
	char *dir;
	struct tree_res **res;
	size_t nres, capres;
	size_t *slots;           /* open addressing over res, 0 = empty, else index+1 */
	size_t nslots;
	struct tree_action *actions;
	size_t nactions, capactions;
	struct tree_system *systems;
	size_t nsystems;
	struct tree_medium *media;
	size_t nmedia;
	struct tree_log *logs;
	size_t nlogs;
	struct tree_res *sessions;   /* the SessionCollection, or NULL */
	char *sessions_key;          /* normalised path of the collection */
	char *vendor;                /* service root Vendor or Oem key, may be NULL */
	char *manager_firmware;      /* first manager's FirmwareVersion, may be NULL */
	char *manager_model;
	bool manager_openbmc;        /* the manager has an Oem.OpenBmc section */
	bool select_query;           /* the root says ProtocolFeaturesSupported.SelectQuery: true */
	bool expand_query;           /* ... and ExpandQuery.NoLinks: true ($expand=.) */
	bool expand_advertised;      /* the root has an ExpandQuery at all (as loaded) */
	size_t bytes;                /* text bytes held */
};

/* Loads every index.json (and index.xml) under dir. On failure returns a negative code with
 * kiln_fail() set; *out untouched. */
int tree_load(struct tree **out, const char *dir);
void tree_free(struct tree *t);

/* Normalised lookup key for a request path: lower case, trailing slashes dropped. Caller frees. */
char *tree_key(const char *path);

/* Finds a resource by request path (any case, trailing slash optional). NULL when absent. */
struct tree_res *tree_find(const struct tree *t, const char *path);
const struct tree_action *tree_action_find(const struct tree *t, const char *path);

/* Rewrites the service root's ProtocolFeaturesSupported (the object is added when absent):
 * SelectQuery when select >= 0 (1: true), ExpandQuery when expand >= 0 (1: $expand=. at one
 * level, 0: the member removed); t->select_query and t->expand_query follow. KILN_ERROR when
 * out of memory. */
int tree_query_features_set(struct tree *t, int select, int expand);

/* The HTTP status a captured error body stands for, from its MessageId (the first
 * @Message.ExtendedInfo's, else error.code): 404 ResourceMissingAtURI, 503 for a service
 * unavailable, 500 for an internal error, 200 for iLO's Success, else 400. 0 when doc is
 * not an error body (an object whose only member is "error"). */
int tree_error_status(json_t *doc);

/* Guessed profile name: idrac9, ilo5, ilo6, ilo7, openbmc or generic. */
const char *tree_profile_guess(const struct tree *t);

#endif
