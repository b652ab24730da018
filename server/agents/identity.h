/* SPDX-License-Identifier: Apache-2.0 */
/* An agent is its node: whether a report's host identity may be stored for the node whose
 * token sent it. A pure decision over the stored facts, so each case is a unit test row. */
#ifndef KILND_IDENTITY_H
#define KILND_IDENTITY_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

/* What a report says of its host (borrowed strings, NULL when the report lacks one). */
struct identity_report {
	const char *hostname, *machine_id, *dmi_serial, *boot_id;
	const char *dmi_uuid;   /* SMBIOS product_uuid */
};

enum identity_verdict {
	IDENTITY_SAME = 0,   /* nothing differs (or the node never reported): store it */
	IDENTITY_ACCEPTED,   /* an admin accepted the next identity: store it, it binds */
	IDENTITY_REINSTALL,  /* the node's running reinstall job takes this new machine id */
	IDENTITY_MISMATCH,   /* refuse: nothing of the report is stored */
};

struct identity_decision {
	enum identity_verdict verdict;
	const char *field;   /* the first differing field ("host.machine_id"), or NULL */
	const char *bound_by; /* what of the BMC's vouched for the host (identity_bmc_vouch's
			       * how), NULL: the BMC said nothing that could be compared */
	char message[600];   /* every differing field, stored vs reported, and what to do */
};

/* Placeholder serials firmware leaves in DMI ("To be filled by O.E.M.", "0", ...) identify
 * no machine; NULL and "" neither. */
int identity_serial_useful(const char *s);

/* A UUID that names a machine: one that parses (8-4-4-4-12 hex digits, braces and case as
 * they come) and is none of the placeholders firmware leaves (all zeros, all ones, AMI's
 * 03000200-0400-0500-0006-000700080009 in either byte order). */
int identity_uuid_useful(const char *s);

enum identity_uuid_match {
	UUID_DIFFERENT = 0,
	UUID_SAME,      /* the same text, whatever the case */
	UUID_SWAPPED,   /* the first three fields byte-swapped: SMBIOS before 2.6 stored them
			 * little-endian, and some BMCs give that raw order */
	UUID_REVERSED,  /* all 16 bytes reversed: IPMI's Get System GUID order */
};

/* How UUIDs a and b relate; UUID_DIFFERENT when either is not useful. */
enum identity_uuid_match identity_uuid_compare(const char *a, const char *b);

/* The lower-case canonical forms of uuid, in the order of enum identity_uuid_match from
 * UUID_SAME: the text itself, byte-swapped, reversed. 0, or -1 when it is not useful. */
int identity_uuid_forms(char out[3][37], const char *uuid);

/* What the BMC says of the system (borrowed; NULL where it says nothing, or where several
 * nodes share the value: a value on many machines names none of them). */
struct identity_bmc {
	const char *uuid;           /* the System's UUID (IPMI: Get System GUID) */
	const char *serial;         /* the System's SerialNumber (IPMI: FRU product serial) */
	const char *sku;            /* the System's SKU: Dell's service tag */
	const char *chassis_serial; /* the serial of the system's chassis */
};

enum identity_bmc_verdict {
	BMC_SILENT = 0,  /* nothing the BMC and the host both state usefully */
	BMC_VOUCHES,     /* a value matches: the agent runs on this BMC's machine */
	BMC_DIFFERS,     /* values were compared and none matches */
	BMC_UUID_DIFFERS, /* only the UUIDs could be compared, and they differ: on a host
			   * kiln knows already, a BMC that states a UUID of its own (OpenBMC
			   * builds, IPMI's BMC GUID) rather than another machine */
};

/*
 * Whether the BMC vouches for a host that reports dmi_uuid and dmi_serial: first the system
 * UUID (its byte-swapped and reversed forms too), then the DMI serial against the System's
 * SerialNumber, its SKU and the chassis serial. A UUID that differs while a serial matches
 * still vouches (some BMCs give a UUID of their own). *out_how is a static phrase naming
 * what matched ("system UUID", "SKU (service tag)", ...); on BMC_DIFFERS or BMC_UUID_DIFFERS,
 * message (may be
 * NULL) receives "host.dmi_uuid '...' (reported) is not the BMC's system UUID '...'; ...".
 */
enum identity_bmc_verdict identity_bmc_vouch(const char **out_how, char *message, size_t len,
					     const struct identity_bmc *b, const char *dmi_uuid,
					     const char *dmi_serial);

/* The BMC value an admin's acceptance of a host the BMC does not vouch for is kept by
 * (agent_identity.bmc_serial_accepted): its UUID, else its serial, SKU or chassis serial;
 * NULL when it states none. The acceptance holds while the BMC still states that value. */
const char *identity_bmc_key(const struct identity_bmc *b);

/* The BMC facts of a node's identity row (borrowed from f). */
struct identity_bmc identity_bmc_of(const struct agent_identity *f);

/*
 * Compares report r with the node's identity facts f. A field either side lacks is no
 * mismatch; serials and host names compare without case. The host is compared with what
 * its BMC says (identity_bmc_vouch; unless an admin accepted this BMC's word with another
 * host), and its DMI serial with the stored one; a changed machine id passes once per
 * running reinstall job, with a new boot id; the host name is bound too (a rename is
 * accepted by an admin like any change).
 */
void identity_decide(struct identity_decision *out, const struct agent_identity *f,
		     const struct identity_report *r);

/* What enrollment knows of the node an enrolling agent resembles (borrowed strings). */
struct enroll_facts {
	const char *node;          /* the node it resembles, NULL: none */
	int by_serial;             /* that node's BMC vouches for it (identity_bmc_vouch), and
				    * for no other node */
	int has_token;             /* the node has a live agent token */
	int64_t reinstall_running; /* the node's running reinstall job, 0: none */
	int reinstall_enrolled;    /* that job already let its one enrollment in */
};

enum enroll_verdict {
	ENROLL_ISSUE = 0,  /* a first agent on the machine the BMC vouches for: a token */
	ENROLL_REINSTALL,  /* the running reinstall job's one enrollment: a token (the old stays) */
	ENROLL_PENDING,    /* an admin decides (kiln agent pending / accept) */
};

struct enroll_decision {
	enum enroll_verdict verdict;
	char reason[240];  /* why it waits (ENROLL_PENDING), for the pending list */
};

/*
 * Whether an enrollment gets a token by itself. The fleet token is on every node, so what
 * an agent says of itself proves nothing but a UUID or DMI serial the BMC states: only that
 * takes a node, and only a node without an agent token (or the one enrollment of its
 * running reinstall job). A match by host name, or a node that already has an agent,
 * waits for an admin; no enrollment ever replaces or revokes a token.
 */
void enroll_decide(struct enroll_decision *out, const struct enroll_facts *f);

#endif
