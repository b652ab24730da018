/* SPDX-License-Identifier: Apache-2.0 */
/* Faults back after a reboot: the kinds of a node's reboot-class reasons are kept per boot
 * (the agent's boot id), so that one seen in the boot before and again in this one is known;
 * health_evaluate then escalates it to "needs hardware inspection", as gpud and NVIDIA's
 * health validation do, and remediation stops cycling the node for it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "health/rules.h"

static void copy(char *out, size_t len, const char *s)
{
	snprintf(out, len, "%s", s ? s : "");
}

void health_boot_faults_load(struct health_boot_faults *b, const char *json)
{
	json_t *o = json ? json_loads(json, 0, NULL) : NULL;
	const json_t *end = json_object_get(o, "prev_end");

	memset(b, 0, sizeof(*b));
	copy(b->boot_id, sizeof(b->boot_id), json_string_value(json_object_get(o, "boot_id")));
	copy(b->kinds, sizeof(b->kinds), json_string_value(json_object_get(o, "kinds")));
	copy(b->prev_kinds, sizeof(b->prev_kinds),
	     json_string_value(json_object_get(o, "prev_kinds")));
	b->prev_end = json_is_integer(end) ? json_integer_value(end) : 0;
	json_decref(o);
}

char *health_boot_faults_dump(const struct health_boot_faults *b)
{
	json_t *o = json_pack("{s:s, s:s, s:s, s:I}", "boot_id", b->boot_id, "kinds", b->kinds,
			      "prev_kinds", b->prev_kinds, "prev_end", (json_int_t)b->prev_end);
	char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;

	json_decref(o);
	return text;
}

int health_boot_faults_rotate(struct health_boot_faults *b, const char *boot_id, int64_t now)
{
	if (!boot_id || !boot_id[0] || strlen(boot_id) >= sizeof(b->boot_id) ||
	    strcmp(boot_id, b->boot_id) == 0)
		return 0;
	if (b->boot_id[0]) { /* a boot after one kiln knew: what it showed is "before" */
		memcpy(b->prev_kinds, b->kinds, sizeof(b->prev_kinds));
		b->prev_end = now;
	}
	b->kinds[0] = '\0';
	copy(b->boot_id, sizeof(b->boot_id), boot_id);
	return 1;
}

/* Whether kind is in the comma-separated list. */
static int listed(const char *list, const char *kind)
{
	size_t n = strlen(kind);

	for (const char *p = list; p && *p;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);

		if (len == n && strncmp(p, kind, n) == 0)
			return 1;
		p = end ? end + 1 : NULL;
	}
	return 0;
}

int health_boot_faults_note(struct health_boot_faults *b, const struct health_result *r)
{
	int changed = 0;

	for (size_t i = 0; i < r->nreasons; i++) {
		const char *kind = health_reason_kind(r->reasons[i]);
		size_t len = strlen(b->kinds);

		/* a reboot-class fault, or one escalated for coming back; not a reboot that a
		 * driver update asks for, which every update asks again; not a kernel alarm,
		 * whose rule knows each alarm's kind and boot and says itself when the same one
		 * is back (host_rules.c): "kernel" here would lump a hung task with a lockup */
		if (r->repairs[i] == HEALTH_REPAIR_NONE || listed(b->kinds, kind) ||
		    strcmp(kind, "driver_mismatch") == 0 || strcmp(kind, "reboot_pending") == 0 ||
		    strcmp(kind, "kernel") == 0 ||
		    (r->repairs[i] == HEALTH_REPAIR_INSPECTION && !strstr(r->reasons[i],
									  HEALTH_RETURNED_TEXT)))
			continue;
		if (len + strlen(kind) + 2 > sizeof(b->kinds))
			break;
		snprintf(b->kinds + len, sizeof(b->kinds) - len, "%s%s", len ? "," : "", kind);
		changed = 1;
	}
	return changed;
}

void health_escalate_returned(struct health_result *r, const struct health_facts *f)
{
	const char *mark = health_repair_mark(HEALTH_REPAIR_REBOOT);

	if (!f->returned_kinds || !f->returned_kinds[0])
		return;
	for (size_t i = 0; i < r->nreasons; i++) {
		char *t = r->reasons[i];
		size_t len = strlen(t), keep;

		if (r->repairs[i] != HEALTH_REPAIR_REBOOT ||
		    !listed(f->returned_kinds, health_reason_kind(t)))
			continue;
		/* "... [reboot may clear it]" -> "... (back after a reboot) [needs ...]" */
		keep = len - strlen(mark);
		if (keep + strlen(HEALTH_RETURNED_TEXT) +
			    strlen(health_repair_mark(HEALTH_REPAIR_INSPECTION)) >= HEALTH_REASON_LEN)
			keep = HEALTH_REASON_LEN - 1 - strlen(HEALTH_RETURNED_TEXT) -
			       strlen(health_repair_mark(HEALTH_REPAIR_INSPECTION));
		snprintf(t + keep, HEALTH_REASON_LEN - keep, "%s%s", HEALTH_RETURNED_TEXT,
			 health_repair_mark(HEALTH_REPAIR_INSPECTION));
		r->repairs[i] = HEALTH_REPAIR_INSPECTION;
		r->repair = HEALTH_REPAIR_INSPECTION;
	}
}
