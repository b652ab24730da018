/* SPDX-License-Identifier: Apache-2.0 */
/* An agent is its node: the decision whether a report's host identity is the node's. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "agents/identity.h"

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

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* The 16 bytes of a UUID written 8-4-4-4-12 (in braces or not); -1 when it is not one. */
static int uuid_parse(unsigned char out[16], const char *s)
{
	static const int dash[] = { 8, 13, 18, 23 };
	size_t len, k = 0, d = 0;

	if (!s)
		return -1;
	len = strlen(s);
	if (len == 38 && s[0] == '{' && s[37] == '}') {
		s++;
		len = 36;
	}
	if (len != 36)
		return -1;
	for (size_t i = 0; i < 36;) {
		int hi, lo;

		if (d < 4 && (int)i == dash[d]) {
			if (s[i] != '-')
				return -1;
			d++;
			i++;
			continue;
		}
		if ((hi = hexval((unsigned char)s[i])) < 0 || (lo = hexval((unsigned char)s[i + 1])) < 0)
			return -1;
		out[k++] = (unsigned char)(hi << 4 | lo);
		i += 2;
	}
	return k == 16 ? 0 : -1;
}

static void uuid_format(char out[37], const unsigned char u[16])
{
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12],
		 u[13], u[14], u[15]);
}

/* The first three fields in the other byte order (SMBIOS before 2.6 against after). */
static void uuid_swap(unsigned char out[16], const unsigned char u[16])
{
	static const int order[16] = { 3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11, 12, 13, 14, 15 };

	for (int i = 0; i < 16; i++)
		out[i] = u[order[i]];
}

static void uuid_reverse(unsigned char out[16], const unsigned char u[16])
{
	for (int i = 0; i < 16; i++)
		out[i] = u[15 - i];
}

int identity_uuid_useful(const char *s)
{
	/* AMI's default, as SMBIOS 2.6+ and as older SMBIOS print it */
	static const unsigned char ami[16] = { 0x03, 0x00, 0x02, 0x00, 0x04, 0x00, 0x05, 0x00,
					       0x00, 0x06, 0x00, 0x07, 0x00, 0x08, 0x00, 0x09 };
	unsigned char u[16], sw[16];
	int zeros = 1, ones = 1;

	if (uuid_parse(u, s) < 0)
		return 0;
	for (int i = 0; i < 16; i++) {
		zeros &= u[i] == 0x00;
		ones &= u[i] == 0xff;
	}
	uuid_swap(sw, u);
	return !zeros && !ones && memcmp(u, ami, 16) != 0 && memcmp(sw, ami, 16) != 0;
}

int identity_uuid_forms(char out[3][37], const char *uuid)
{
	unsigned char u[16], t[16];

	if (!identity_uuid_useful(uuid) || uuid_parse(u, uuid) < 0)
		return -1;
	uuid_format(out[0], u);
	uuid_swap(t, u);
	uuid_format(out[1], t);
	uuid_reverse(t, u);
	uuid_format(out[2], t);
	return 0;
}

enum identity_uuid_match identity_uuid_compare(const char *a, const char *b)
{
	unsigned char ua[16], ub[16], t[16];

	if (!identity_uuid_useful(a) || !identity_uuid_useful(b) || uuid_parse(ua, a) < 0 ||
	    uuid_parse(ub, b) < 0)
		return UUID_DIFFERENT;
	if (memcmp(ua, ub, 16) == 0)
		return UUID_SAME;
	uuid_swap(t, ub);
	if (memcmp(ua, t, 16) == 0)
		return UUID_SWAPPED;
	uuid_reverse(t, ub);
	if (memcmp(ua, t, 16) == 0)
		return UUID_REVERSED;
	return UUID_DIFFERENT;
}

enum identity_bmc_verdict identity_bmc_vouch(const char **out_how, char *message, size_t len,
					     const struct identity_bmc *b, const char *dmi_uuid,
					     const char *dmi_serial)
{
	static const char *const uuid_how[] = { NULL, "system UUID",
						"system UUID (byte-swapped: SMBIOS before 2.6, or the BMC's raw order)",
						"system UUID (IPMI byte order)" };
	const struct {
		const char *value, *how, *name;
	} serials[] = {
		{ b->serial, "system serial", "serial" },
		{ b->sku, "SKU (service tag)", "SKU" },
		{ b->chassis_serial, "chassis serial", "chassis serial" },
	};
	int uuid_compared = 0, serial_compared = 0;
	size_t used = 0;

	*out_how = NULL;
	if (identity_uuid_useful(b->uuid) && identity_uuid_useful(dmi_uuid)) {
		enum identity_uuid_match m = identity_uuid_compare(b->uuid, dmi_uuid);

		if (m != UUID_DIFFERENT) {
			*out_how = uuid_how[m];
			return BMC_VOUCHES;
		}
		uuid_compared = 1;
	}
	if (identity_serial_useful(dmi_serial)) {
		for (size_t i = 0; i < sizeof(serials) / sizeof(serials[0]); i++) {
			if (!identity_serial_useful(serials[i].value))
				continue;
			if (strcasecmp(serials[i].value, dmi_serial) == 0) {
				*out_how = serials[i].how;
				return BMC_VOUCHES;
			}
			serial_compared = 1;
		}
	}
	if (!uuid_compared && !serial_compared)
		return BMC_SILENT;
	if (!message || !len)
		return serial_compared ? BMC_DIFFERS : BMC_UUID_DIFFERS;
	message[0] = '\0';
	if (uuid_compared)
		used += (size_t)snprintf(message, len, "host.dmi_uuid '%.40s' (reported) is not the "
					 "BMC's system UUID '%.40s'", dmi_uuid, b->uuid);
	if (serial_compared && used < len) {
		int n = snprintf(message + used, len - used, "%shost.dmi_serial '%.64s' (reported) is "
				 "not the BMC's", used ? "; " : "", dmi_serial);
		const char *sep = " ";

		used += n > 0 ? (size_t)n : 0;
		for (size_t i = 0; i < sizeof(serials) / sizeof(serials[0]) && used < len; i++) {
			if (!identity_serial_useful(serials[i].value))
				continue;
			n = snprintf(message + used, len - used, "%s%s '%.64s'", sep, serials[i].name,
				     serials[i].value);
			used += n > 0 ? (size_t)n : 0;
			sep = " nor its ";
		}
	}
	return serial_compared ? BMC_DIFFERS : BMC_UUID_DIFFERS;
}

const char *identity_bmc_key(const struct identity_bmc *b)
{
	if (identity_uuid_useful(b->uuid))
		return b->uuid;
	if (identity_serial_useful(b->serial))
		return b->serial;
	if (identity_serial_useful(b->sku))
		return b->sku;
	if (identity_serial_useful(b->chassis_serial))
		return b->chassis_serial;
	return NULL;
}

struct identity_bmc identity_bmc_of(const struct agent_identity *f)
{
	struct identity_bmc b = { f->bmc_uuid, f->bmc_serial, f->bmc_sku, f->bmc_chassis_serial };

	return b;
}

/* An admin accepted a host the BMC did not vouch for, and the BMC still states the value
 * kept with that acceptance (a BMC serial, in rows older than the other values). */
static int bmc_accepted(const struct agent_identity *f)
{
	const char *a = f->bmc_serial_accepted;
	const char *v[] = { f->bmc_uuid, f->bmc_serial, f->bmc_sku, f->bmc_chassis_serial };

	if (!a || !*a)
		return 0;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		if (v[i] && strcasecmp(v[i], a) == 0)
			return 1;
	return 0;
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
	struct identity_bmc b = identity_bmc_of(f);
	enum identity_bmc_verdict v;
	char bmc_message[400];
	size_t used = 0;
	int machine_changed, reinstall_takes;

	memset(out, 0, sizeof(*out));
	if (f->accept_next) {
		out->verdict = IDENTITY_ACCEPTED;
		(void)identity_bmc_vouch(&out->bound_by, NULL, 0, &b, r->dmi_uuid, r->dmi_serial);
		return;
	}
	/* The BMC sits on the motherboard: a host it does not vouch for is another machine
	 * (unless an admin accepted exactly this pair). */
	v = identity_bmc_vouch(&out->bound_by, bmc_message, sizeof(bmc_message), &b, r->dmi_uuid,
			       r->dmi_serial);
	/* A UUID alone that differs, for a host whose reports were stored before (its machine
	 * id and host name are checked below): the BMC's UUID is not the host's. It binds a
	 * first report only. */
	if (v == BMC_UUID_DIFFERS && f->has_agent)
		v = BMC_SILENT;
	if (v == BMC_DIFFERS || v == BMC_UUID_DIFFERS) {
		if (bmc_accepted(f))
			out->bound_by = "an admin's acceptance (the BMC does not vouch)";
		else
			note(out, &used, strncmp(bmc_message, "host.dmi_uuid", 13) == 0
						 ? "host.dmi_uuid" : "host.dmi_serial",
			     "%s", bmc_message);
	}
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
	out->bound_by = NULL;
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
			 "does not vouch for this host's UUID or DMI serial: only an admin binds by "
			 "name", f->node);
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
