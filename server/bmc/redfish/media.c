/* SPDX-License-Identifier: Apache-2.0 */
/* Redfish virtual media: the CD/DVD device under Systems or Managers; insert, eject, status. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bmc/redfish/internal.h"
#include "kiln/error.h"

static json_t *media_object(const json_t *dev)
{
	json_t *m = json_object();
	json_t *inserted = json_object_get(dev, "Inserted");
	const char *image = json_string_value(json_object_get(dev, "Image"));
	json_object_set_new(m, "inserted", json_boolean(json_is_true(inserted)));
	json_object_set_new(m, "image", image && image[0] ? json_string(image) : json_null());
	json_object_set_new(m, "device", json_string(rf_link(dev, "@odata.id")));
	const char *via = json_string_value(json_object_get(dev, "ConnectedVia"));
	if (via)
		json_object_set_new(m, "connected_via", json_string(via));
	json_t *types = json_object_get(dev, "MediaTypes");
	if (json_is_array(types))
		json_object_set(m, "media_types", types);
	return m;
}

static int is_optical(const json_t *dev)
{
	size_t i;
	json_t *t;
	json_array_foreach(json_object_get(dev, "MediaTypes"), i, t) {
		const char *s = json_string_value(t);
		if (s && (strcmp(s, "CD") == 0 || strcmp(s, "DVD") == 0))
			return 1;
	}
	return 0;
}

static int has_insert(const json_t *dev)
{
	return json_object_get(json_object_get(dev, "Actions"), "#VirtualMedia.InsertMedia") != NULL;
}

/* A device that lists no MediaTypes (AMI: "CD1", "virtual CD1"): its Id or Name says CD. */
static int named_optical(const json_t *dev)
{
	if (json_is_array(json_object_get(dev, "MediaTypes")))
		return 0;
	const char *keys[] = {"Id", "Name"};
	for (size_t i = 0; i < 2; i++) {
		const char *v = json_string_value(json_object_get(dev, keys[i]));
		if (v && (strcasestr(v, "CD") || strcasestr(v, "DVD")))
			return 1;
	}
	return 0;
}

static const char *action_target(const json_t *dev, const char *action)
{
	return json_string_value(json_object_get(
		json_object_get(json_object_get(dev, "Actions"), action), "target"));
}

static int on_verify(struct rf_op *op, const struct rf_reply *r)
{
	int inserted = json_is_true(json_object_get(r->json, "Inserted"));
	const char *image = json_string_value(json_object_get(r->json, "Image"));
	if (op->op.kind == BMC_OP_MEDIA_INSERT &&
	    (!inserted || !image || strcmp(image, op->media_url) != 0))
		return kiln_fail(KILN_ERROR, "InsertMedia accepted but the device reads back "
				 "Inserted=%s Image='%s'", inserted ? "true" : "false",
				 image ? image : "");
	if (op->op.kind == BMC_OP_MEDIA_EJECT && inserted)
		return kiln_fail(KILN_ERROR, "EjectMedia accepted but the device is still inserted");
	op->data = json_pack("{s:o, s:s}", "media", media_object(r->json), "result", "ok");
	return 0;
}

static int verify_begin(struct rf_op *op)
{
	rf_push(op, "GET", op->device, NULL, 0, on_verify);
	return 0;
}

static int on_action(struct rf_op *op, const struct rf_reply *r)
{
	if (r->status == 202 && r->location)
		return rf_task_follow(op, r->location, r->retry_after_s,
				      op->phase == 1 ? NULL : verify_begin);
	/* a chained eject before an insert is verified by the insert */
	if (op->phase == 1)
		return 0;
	return verify_begin(op);
}

static const char *transfer_protocol(const char *url)
{
	if (strncasecmp(url, "https://", 8) == 0)
		return "HTTPS";
	if (strncasecmp(url, "http://", 7) == 0)
		return "HTTP";
	if (strncasecmp(url, "nfs://", 6) == 0)
		return "NFS";
	if (strncasecmp(url, "cifs://", 7) == 0 || strncasecmp(url, "smb://", 6) == 0)
		return "CIFS";
	return NULL;
}

static void push_eject(struct rf_op *op)
{
	const char *target = action_target(op->scratch, "#VirtualMedia.EjectMedia");
	if (target) /* iDRAC refuses an EjectMedia without a body */
		rf_push(op, "POST", target, "{}", 0, on_action);
	else
		rf_push(op, "PATCH", op->device, "{\"Image\":null,\"Inserted\":false}", 0, on_action);
}

static int push_insert(struct rf_op *op)
{
	const char *target = action_target(op->scratch, "#VirtualMedia.InsertMedia");
	json_t *body = json_pack("{s:s, s:b}", "Image", op->media_url, "Inserted", 1);
	if (target)
		json_object_set_new(body, "WriteProtected", json_true());
	if (op->bmc->profile == RF_DELL) {
		const char *proto = transfer_protocol(op->media_url);
		if (!proto) {
			json_decref(body);
			return kiln_fail(KILN_EINVAL, "iDRAC needs an http, https, nfs or cifs URL, "
					 "not '%s'", op->media_url);
		}
		json_object_set_new(body, "TransferProtocolType", json_string(proto));
	}
	char *text = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	if (!text)
		return kiln_fail(KILN_ERROR, "out of memory");
	op->phase = 2;
	rf_push(op, target ? "POST" : "PATCH", target ? target : op->device, text, 0, on_action);
	free(text);
	return 0;
}

static int device_chosen(struct rf_op *op)
{
	if (!op->device)
		return kiln_fail(KILN_ENOTFOUND, "no CD/DVD virtual media device on this BMC");
	int inserted = json_is_true(json_object_get(op->scratch, "Inserted"));
	switch (op->op.kind) {
	case BMC_OP_MEDIA_INSERT:
		if (!op->media_url || !op->media_url[0])
			return kiln_fail(KILN_EINVAL, "no image URL to insert");
		if (inserted) {
			const char *image = json_string_value(json_object_get(op->scratch, "Image"));
			if (image && strcmp(image, op->media_url) == 0 && !op->op.force) {
				op->data = json_pack("{s:o, s:s}", "media", media_object(op->scratch),
						     "result", "noop");
				return 0;
			}
			/* an installer may be running from it: the operator says so */
			if (!op->op.force)
				return kiln_fail(KILN_EEXISTS, "%s already holds '%s'; eject it first, "
						 "or insert with --force to replace it", op->device,
						 image && image[0] ? image : "an image");
			op->phase = 1; /* eject what is there first */
			push_eject(op);
		}
		rf_push_call(op, push_insert);
		return 0;
	case BMC_OP_MEDIA_EJECT:
		if (!inserted) {
			op->data = json_pack("{s:o, s:s}", "media", media_object(op->scratch), "result",
					     "noop");
			return 0;
		}
		push_eject(op);
		return 0;
	default:
		op->data = json_pack("{s:o}", "media", media_object(op->scratch));
		return 0;
	}
}

/* The first device listing CD or DVD; failing that, the first named so, else the only one
 * offering InsertMedia (scratch "fallback": {"named","only","inserters"}). */
static int on_member(struct rf_op *op, const struct rf_reply *r)
{
	json_t *fb = json_object_get(op->scratch, "fallback");
	if (op->device || r->status >= 400 || rf_body_is_error(r->json))
		return 0;
	if (is_optical(r->json)) {
		op->device = strdup(rf_link(r->json, "@odata.id") ? rf_link(r->json, "@odata.id") : "");
		json_decref(op->scratch);
		op->scratch = json_incref(r->json);
		return 0;
	}
	if (named_optical(r->json) && !json_object_get(fb, "named"))
		json_object_set(fb, "named", r->json);
	if (has_insert(r->json)) {
		json_object_set(fb, "only", r->json);
		json_object_set_new(fb, "inserters", json_integer(json_integer_value(
				json_object_get(fb, "inserters")) + 1));
	}
	return 0;
}

static int fallback_chosen(struct rf_op *op)
{
	json_t *fb = json_object_get(op->scratch, "fallback");
	json_t *dev = json_object_get(fb, "named");
	if (!op->device && !dev && json_integer_value(json_object_get(fb, "inserters")) == 1)
		dev = json_object_get(fb, "only");
	if (op->device || !dev)
		return 0;
	const char *id = rf_link(dev, "@odata.id");
	op->device = strdup(id ? id : "");
	json_incref(dev);
	json_decref(op->scratch);
	op->scratch = dev;
	return 0;
}

static int on_collection(struct rf_op *op, const struct rf_reply *r)
{
	size_t i;
	json_t *m;
	json_array_foreach(json_object_get(r->json, "Members"), i, m) {
		const char *p = rf_link(m, "@odata.id");
		if (p)
			rf_push(op, "GET", p, NULL, RF_ALLOW_ERROR, on_member);
	}
	return 0;
}

int rf_media_start(struct rf_op *op)
{
	const char *coll = op->bmc->vmedia_system ? op->bmc->vmedia_system : op->bmc->vmedia_manager;
	if (!coll)
		return kiln_fail(KILN_ENOTFOUND, "no VirtualMedia on this BMC (neither under the "
				 "system nor the manager)");
	op->scratch = json_pack("{s:{}}", "fallback");
	rf_push(op, "GET", coll, NULL, 0, on_collection);
	rf_push_call(op, fallback_chosen);
	rf_push_call(op, device_chosen);
	return 0;
}
