/* An agent is its node: the decision whether a report's host identity is the node's. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "identity.h"

int identity_serial_useful(const char *s)
{
	static const char *const junk[] = { "to be filled by o.e.m.", "default string",
					     "system serial number", "not specified", "not applicable",
					     "none", "0", "0123456789", "00000000", "n/a", NULL };

	if (!s || !*s)
		return 0;
	for (size_t i = 0; junk[i]; i++)
		if (strcasecmp(s, junk[i]) == 0)
			return 0;
	return 1;
}

/* Both known and different (a side that lacks the field says nothing). */
static int differs(const char *stored, const char *reported)
{
	return stored && *stored && reported && *reported && strcasecmp(stored, reported) != 0;
}

static void note(struct identity_decision *d, size_t *used, const char *field, const char *fmt,
		 ...) __attribute__((format(printf, 4, 5)));

/* Appends one differing field to the message; the first names the decision's field. */
static void note(struct identity_decision *d, size_t *used, const char *field, const char *fmt,
		 ...)
{
	va_list ap;
	int n;

	if (!d->field)
		d->field = field;
	if (*used >= sizeof(d->message))
		return;
	if (*used) {
		n = snprintf(d->message + *used, sizeof(d->message) - *used, "; ");
		*used += n > 0 ? (size_t)n : 0;
	}
	if (*used >= sizeof(d->message))
		return;
	va_start(ap, fmt);
	n = vsnprintf(d->message + *used, sizeof(d->message) - *used, fmt, ap);
	va_end(ap);
	*used += n > 0 ? (size_t)n : 0;
}

void identity_decide(struct identity_decision *out, const struct agent_identity *f,
		     const struct identity_report *r)
{
	size_t used = 0;
	int machine_changed, reinstall_takes;

	memset(out, 0, sizeof(*out));
	if (f->accept_next) {
		out->verdict = IDENTITY_ACCEPTED;
		return;
	}
	/* The BMC sits on the motherboard: an agent whose DMI serial is not the BMC's runs on
	 * another machine (unless an admin accepted exactly this pair). */
	if (identity_serial_useful(f->bmc_serial) && identity_serial_useful(r->dmi_serial) &&
	    differs(f->bmc_serial, r->dmi_serial) &&
	    !(f->bmc_serial_accepted && strcasecmp(f->bmc_serial_accepted, f->bmc_serial) == 0))
		note(out, &used, "host.dmi_serial", "host.dmi_serial '%.64s' (reported) is not the BMC's "
		     "serial '%.64s'", r->dmi_serial, f->bmc_serial);
	if (identity_serial_useful(f->dmi_serial) && identity_serial_useful(r->dmi_serial) &&
	    differs(f->dmi_serial, r->dmi_serial))
		note(out, &used, "host.dmi_serial", "host.dmi_serial '%.64s' (stored) vs '%.64s' "
		     "(reported)", f->dmi_serial, r->dmi_serial);
	/* A reinstall gives the node a new machine id once, and comes with a new boot. */
	machine_changed = differs(f->machine_id, r->machine_id);
	reinstall_takes = machine_changed && f->reinstall_running > 0 &&
			  f->reinstall_running != f->reinstall_job && r->boot_id &&
			  (!f->boot_id || strcmp(f->boot_id, r->boot_id) != 0);
	if (machine_changed && !reinstall_takes)
		note(out, &used, "host.machine_id", "host.machine_id '%.64s' (stored) vs '%.64s' "
		     "(reported)", f->machine_id, r->machine_id);
	/* A rename is refused like any change: the name is what people and enrollment know the
	 * machine by, and a token copied to a host of another name is the case to catch. */
	if (differs(f->hostname, r->hostname))
		note(out, &used, "host.hostname", "host.hostname '%.64s' (stored) vs '%.64s' "
		     "(reported)", f->hostname, r->hostname);
	if (!out->field) {
		out->verdict = reinstall_takes ? IDENTITY_REINSTALL : IDENTITY_SAME;
		return;
	}
	out->verdict = IDENTITY_MISMATCH;
	if (used < sizeof(out->message))
		snprintf(out->message + used, sizeof(out->message) - used,
			 "; refused: if the change is genuine (motherboard, reinstall, rename), "
			 "kiln agent accept-identity %s", f->node ? f->node : "NODE");
}

void enroll_decide(struct enroll_decision *out, const struct enroll_facts *f)
{
	memset(out, 0, sizeof(*out));
	out->verdict = ENROLL_PENDING;
	if (!f->node) {
		snprintf(out->reason, sizeof(out->reason), "no node matches");
	} else if (!f->by_serial) {
		snprintf(out->reason, sizeof(out->reason), "host name matches node %.64s, whose BMC "
			 "does not vouch for this DMI serial: only an admin binds by name", f->node);
	} else if (!f->has_token) {
		out->verdict = ENROLL_ISSUE;
	} else if (f->reinstall_running > 0 && !f->reinstall_enrolled) {
		out->verdict = ENROLL_REINSTALL;
	} else {
		snprintf(out->reason, sizeof(out->reason), "node %.64s already has an agent token "
			 "(enrollment never replaces one)%s", f->node,
			 f->reinstall_running > 0 ? "; its reinstall job already took its enrollment"
						  : "");
	}
}
