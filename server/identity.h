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
	char message[400];   /* every differing field, stored vs reported, and what to do */
};

/* Placeholder serials firmware leaves in DMI ("To be filled by O.E.M.", "0", ...) identify
 * no machine; NULL and "" neither. */
int identity_serial_useful(const char *s);

/*
 * Compares report r with the node's identity facts f. A field either side lacks is no
 * mismatch; serials and host names compare without case. The DMI serial is compared with
 * the stored one and with the BMC's (unless an admin accepted this BMC serial with another
 * DMI serial); a changed machine id passes once per running reinstall job, with a new boot
 * id; the host name is bound too (a rename is accepted by an admin like any change).
 */
void identity_decide(struct identity_decision *out, const struct agent_identity *f,
		     const struct identity_report *r);

/* What enrollment knows of the node an enrolling agent resembles (borrowed strings). */
struct enroll_facts {
	const char *node;          /* the node it resembles, NULL: none */
	int by_serial;             /* its DMI serial is that node's BMC serial (the only node's) */
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
 * an agent says of itself proves nothing but a DMI serial equal to the BMC's: only that
 * takes a node, and only a node without an agent token (or the one enrollment of its
 * running reinstall job). A match by host name, or a node that already has an agent,
 * waits for an admin; no enrollment ever replaces or revokes a token.
 */
void enroll_decide(struct enroll_decision *out, const struct enroll_facts *f);

#endif
