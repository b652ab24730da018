/* SPDX-License-Identifier: Apache-2.0 */
/* Redfish boot override: PATCH Boot with If-Match on the system's ETag, one retry on 412,
 * then read back. */
#include <stdlib.h>
#include <string.h>

#include "bmc/redfish/internal.h"
#include "kiln/error.h"

static const char *boot_target(enum bmc_boot_device d)
{
	switch (d) {
	case BMC_BOOT_PXE: return "Pxe";
	case BMC_BOOT_CD: return "Cd";
	case BMC_BOOT_DISK: return "Hdd";
	default: return "BiosSetup";
	}
}

static const char *boot_name(enum bmc_boot_device d)
{
	switch (d) {
	case BMC_BOOT_PXE: return "pxe";
	case BMC_BOOT_CD: return "cd";
	case BMC_BOOT_DISK: return "disk";
	default: return "bios";
	}
}

static int on_system(struct rf_op *op, const struct rf_reply *r);

static int on_verify(struct rf_op *op, const struct rf_reply *r)
{
	json_t *boot = json_object_get(r->json, "Boot");
	const char *t = json_string_value(json_object_get(boot, "BootSourceOverrideTarget"));
	const char *en = json_string_value(json_object_get(boot, "BootSourceOverrideEnabled"));
	const char *want = boot_target(op->op.boot);
	const char *want_en = op->op.persistent ? "Continuous" : "Once";
	if (!t || strcmp(t, want) != 0)
		return kiln_fail(KILN_ERROR, "PATCH accepted but BootSourceOverrideTarget reads "
				 "back '%s', not '%s'", t ? t : "null", want);
	/* a one-time override the BMC keeps as Continuous boots the node that way forever
	 * (sushy-tools' libvirt driver does); one that names no Enabled cannot be checked */
	if (en && strcmp(en, want_en) != 0)
		return kiln_fail(KILN_ERROR, "PATCH accepted but BootSourceOverrideEnabled reads "
				 "back '%s', not '%s': the override on %s is not what was asked",
				 en, want_en, t);
	op->data = json_pack("{s:s, s:b, s:s, s:s?}", "boot", boot_name(op->op.boot), "persistent",
			     op->op.persistent, "target", t, "enabled", en);
	return 0;
}

static int verify_begin(struct rf_op *op)
{
	rf_push(op, "GET", op->bmc->system, NULL, 0, on_verify);
	return 0;
}

static int on_patch(struct rf_op *op, const struct rf_reply *r)
{
	if (r->status == 412 && !op->retried) {
		op->retried = 1; /* someone changed the system since we read it: read again */
		rf_push(op, "GET", op->bmc->system, NULL, 0, on_system);
		return 0;
	}
	if (r->status >= 400)
		return rf_fail_reply("PATCH", op->bmc->system, r);
	if (r->status == 202 && r->location)
		return rf_task_follow(op, r->location, r->retry_after_s, verify_begin);
	return verify_begin(op);
}

static int on_system(struct rf_op *op, const struct rf_reply *r)
{
	json_t *boot = json_object_get(r->json, "Boot");
	json_t *allowed = json_object_get(boot, "BootSourceOverrideTarget@Redfish.AllowableValues");
	const char *want = boot_target(op->op.boot);
	const char *targets[] = {want, NULL};

	if (!json_is_object(boot))
		return kiln_fail(KILN_EPROTO, "the system has no Boot property");
	if (json_is_array(allowed) && !rf_reset_pick(allowed, targets)) {
		char *list = json_dumps(allowed, JSON_COMPACT);
		int rc = kiln_fail(KILN_EINVAL, "boot target '%s' not allowed (the BMC allows %s)",
				   want, list ? list : "?");
		free(list);
		return rc;
	}
	const char *etag = r->etag;
	if (!etag)
		etag = json_string_value(json_object_get(r->json, "@odata.etag"));
	free(op->etag);
	op->etag = etag ? strdup(etag) : NULL;

	json_t *body = json_pack("{s:{s:s, s:s}}", "Boot", "BootSourceOverrideTarget", want,
				 "BootSourceOverrideEnabled",
				 op->op.persistent ? "Continuous" : "Once");
	char *text = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	if (!text)
		return kiln_fail(KILN_ERROR, "out of memory");
	rf_push(op, "PATCH", op->bmc->system, text, RF_ALLOW_ERROR, on_patch);
	rf_push_if_match(op, op->etag);
	free(text);
	return 0;
}

int rf_boot_start(struct rf_op *op)
{
	rf_push(op, "GET", op->bmc->system, NULL, 0, on_system);
	return 0;
}
