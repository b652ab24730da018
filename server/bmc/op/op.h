/* SPDX-License-Identifier: Apache-2.0 */
/* An operation on a BMC, whatever its protocol: what is asked (bmc_op), of which BMC
 * (bmc_target), what came back (bmc_result), and the session keeper a driver may be handed.
 * The engine (bmc/bmc.h) and the drivers (bmc/redfish/, bmc/ipmi/) share these; nothing here
 * includes either. */
#ifndef KILN_BMC_OP_H
#define KILN_BMC_OP_H

#include <stdint.h>

#include <jansson.h>

enum bmc_power { BMC_POWER_UNKNOWN = 0, BMC_POWER_ON, BMC_POWER_OFF };
enum bmc_power_action { BMC_ACT_ON, BMC_ACT_OFF, BMC_ACT_SOFT, BMC_ACT_RESET, BMC_ACT_CYCLE };
enum bmc_boot_device { BMC_BOOT_PXE, BMC_BOOT_CD, BMC_BOOT_DISK, BMC_BOOT_BIOS };

enum bmc_op_kind {
	BMC_OP_POWER_GET,
	BMC_OP_POWER_ACTION, /* confirmed: state read back until it matches or times out */
	BMC_OP_BOOT_SET,
	BMC_OP_MEDIA_INSERT,
	BMC_OP_MEDIA_EJECT,
	BMC_OP_MEDIA_STATUS,
	BMC_OP_SENSORS,
	BMC_OP_SEL,
	BMC_OP_INVENTORY,
};

struct bmc_op {
	enum bmc_op_kind kind;
	enum bmc_power_action action; /* POWER_ACTION */
	int on_if_off;                /* POWER_ACTION cycle/reset of an off node powers it on */
	enum bmc_boot_device boot;    /* BOOT_SET */
	int persistent;               /* BOOT_SET */
	const char *media_url;        /* MEDIA_INSERT (copied by bmc_submit) */
	int force;                    /* MEDIA_INSERT: replace an image already inserted */
	int64_t sel_since;            /* SEL: unix seconds, 0 = all */
	int probe;                    /* a check of a BMC before its node exists (node add):
				       * its driver state is dropped, the session deleted, once
				       * it ends */
	int background;               /* a read of the poller's: another operation on the same
				       * Redfish BMC goes first (see bmc_submit) */
};

/*
 * What a driver needs to reach one BMC; built by the API/poller from a struct node with
 * the password decrypted. bmc_submit copies everything it keeps.
 */
struct bmc_target {
	int64_t node_id;
	const char *node_name;
	int protocol;               /* enum node_bmc_protocol from store.h */
	const char *host;
	int port;
	const char *user;
	const char *password;
	int tls_mode;               /* enum node_tls_mode */
	const char *tls_ca_file;
	const char *tls_fingerprint;
	int ipmi_cipher;
	const char *ipmi_privilege;
	const char *ipmi_workarounds;
	const char *bmc_system;
	int64_t credentials_version; /* a change drops cached sessions and the "rejected" mark */
};

/*
 * The outcome of one operation on one node. rc is 0 or a negative kiln code; error holds
 * the one-line reason ("redfish: gpu07: POST ComputerSystem.Reset: 409 '...'") when rc < 0.
 * data (owned by the result, may be NULL on failure) follows DESIGN.md's shapes without
 * "node": POWER_GET {"power"}, POWER_ACTION {"power","action","result"}, SENSORS
 * {"sensors":[...]}, SEL {"entries":[...]}, INVENTORY {"manufacturer","model",...},
 * BOOT_SET {"boot","persistent"}, MEDIA_* {"media":{"inserted","image",...}}.
 */
struct bmc_result {
	int rc;
	char error[512];
	json_t *data;
};

typedef void (*bmc_done_fn)(void *ud, const struct bmc_result *res);

/*
 * Where the Redfish driver keeps each BMC's session across restarts, so that a kilnd killed
 * with -9 finds its session again instead of opening one more (kilnd: the store, the token
 * sealed with secret.key; session_keep.c). Called from the driver's loop threads: every
 * function must be safe from several threads at once, and none may call the engine.
 */
struct bmc_session_keeper {
	/* node's kept session if it was opened with credentials_version: 0 with *out_token
	 * and *out_uri (NULL: not known) set, which the caller zeroes and frees;
	 * KILN_ENOTFOUND (or any error) when there is none to use. */
	int (*load)(void *ud, int64_t node_id, const char *node_name,
		    int64_t credentials_version, char **out_token, char **out_uri);
	/* Keeps how node is reached: a session (token, uri), or none (token NULL) with auth
	 * saying why ("basic (BMC session limit)"); auth NULL: "session". */
	void (*save)(void *ud, int64_t node_id, const char *node_name,
		     int64_t credentials_version, const char *token, const char *uri,
		     const char *auth);
	/* The session at uri (NULL: one without a URI) was deleted or found dead. */
	void (*drop)(void *ud, int64_t node_id, const char *uri);
	void *ud;
};

const char *bmc_power_name(enum bmc_power p); /* "on", "off", "unknown" */

/* From a sensors reading ({"sensors":[{"name","kind","value",...}]}): the system's power
 * draw (a "power" sensor named for consumed or system watts, else the first) and the hottest
 * inlet or ambient temperature; NAN each when absent. */
void bmc_sensors_summary(const json_t *sensors, double *out_power_w, double *out_inlet_c);

#endif
