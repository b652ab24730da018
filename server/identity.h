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

#endif
