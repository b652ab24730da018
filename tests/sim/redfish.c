/* SPDX-License-Identifier: Apache-2.0 */
/* kiln-bmcsim: Redfish semantics of one request: auth, actions, PATCH, sessions, tasks, and the
 * dispatch of a request to them (the GET answers, $select and $expand are in redfish_get.c). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "kiln/error.h"
#include "kiln/parse.h"
#include "redfish.h"

#define TASKS_PREFIX "/redfish/v1/taskservice/tasks/sim"
#define MONITORS_PREFIX "/redfish/v1/taskservice/taskmonitors/sim"

void redfish_reply_json(struct sim_reply *out, int status, json_t *doc)
{
	out->status = status;
	out->ctype = "application/json;charset=utf-8";
	if (doc) {
		out->body = json_dumps(doc, JSON_COMPACT);
		out->len = out->body ? strlen(out->body) : 0;
		json_decref(doc);
	}
}

static void reply_empty(struct sim_reply *out, int status)
{
	out->status = status;
}

void redfish_error(struct sim_reply *out, int status, const char *message_id, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_t *doc = json_pack("{s:{s:s, s:s, s:[{s:s, s:s, s:s, s:s}]}}", "error", "code",
		"Base.1.8.GeneralError", "message", msg, "@Message.ExtendedInfo", "MessageId", message_id,
		"Message", msg, "Severity", status >= 500 ? "Critical" : "Warning", "Resolution",
		"Correct the request and resubmit it.");
	sim_reply_free(out);
	redfish_reply_json(out, status, doc);
}

/* Success of an action or a PATCH, in the profile's style. */
static void reply_success(struct sim_reply *out, const struct bmc *b, bool patch)
{
	const struct sim_profile *p = b->cfg->profile;
	if (p->action_200) {
		redfish_reply_json(out, 200, json_pack("{s:{s:s, s:s, s:[{s:s}]}}", "error", "code",
			"iLO.0.10.ExtendedInfo", "message", "See @Message.ExtendedInfo for more information.",
			"@Message.ExtendedInfo", "MessageId", "Base.1.4.Success"));
	} else if (patch && strcmp(p->name, "idrac9") == 0) {
		redfish_reply_json(out, 200, json_pack("{s:[{s:s, s:s, s:s}]}", "@Message.ExtendedInfo",
			"MessageId", "Base.1.12.Success", "Message",
			"The request completed successfully.", "Severity", "OK"));
	} else {
		reply_empty(out, 204);
	}
}

static int b64_value(int c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

/* Decodes base64 into out (size n, terminated). Returns -1 on bad input or overflow. */
static int b64_decode(char *out, size_t n, const char *in)
{
	size_t o = 0;
	unsigned acc = 0;
	int bits = 0;
	for (; *in && *in != '='; in++) {
		int v = b64_value((unsigned char)*in);
		if (v < 0)
			return -1;
		acc = (acc << 6) | (unsigned)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (o + 1 >= n)
				return -1;
			out[o++] = (char)((acc >> bits) & 0xff);
		}
	}
	out[o] = '\0';
	return 0;
}

/* 0 when the request carries valid credentials; otherwise fills a 401 reply. */
static int authenticate(struct sim_reply *out, struct bmc *b, const struct sim_request *req)
{
	if (req->token) {
		if (bmc_session_by_token(b, req->token, req->now))
			return 0;
		redfish_error(out, 401, "Base.1.8.NoValidSession",
			      "There is no valid session established with the implementation.");
		return -1;
	}
	if (req->authorization && strncasecmp(req->authorization, "Basic ", 6) == 0) {
		char dec[512];
		const char *p = req->authorization + 6;
		while (*p == ' ')
			p++;
		if (b64_decode(dec, sizeof(dec), p) != 0)
			dec[0] = '\0';
		char *colon = strchr(dec, ':');
		if (colon) {
			*colon = '\0';
			if (bmc_credentials_ok(b, dec, colon + 1))
				return 0;
		}
		bmc_login_failed(b, "basic", dec, req->now);
		redfish_error(out, 401, "Base.1.8.ResourceAtUriUnauthorized",
			      "While accessing the resource at %s, the service received an authorization error.",
			      req->path);
		out->www_auth = true;
		return -1;
	}
	redfish_error(out, 401, "Base.1.8.NoValidSession",
		      "There is no valid session established with the implementation.");
	out->www_auth = true;
	return -1;
}

static bool str_in(json_t *allowed, const char *v)
{
	size_t i;
	json_t *a;
	json_array_foreach(allowed, i, a) {
		const char *s = json_string_value(a);
		if (s && strcmp(s, v) == 0)
			return true;
	}
	return false;
}

/* Parses the body as a JSON object; fills a 400 reply and returns NULL otherwise. */
static json_t *body_object(struct sim_reply *out, const struct sim_request *req)
{
	json_error_t err;
	json_t *doc = req->body_len ? json_loadb(req->body, req->body_len, 0, &err) : NULL;
	if (!json_is_object(doc)) {
		json_decref(doc);
		redfish_error(out, 400, "Base.1.8.MalformedJSON",
			      "The request body submitted was malformed JSON and could not be parsed by the receiving service.");
		return NULL;
	}
	return doc;
}

static json_t *session_json(const struct bmc *b, const struct bmc_session *s)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s",
		 b->tree->sessions ? b->tree->sessions->path : "/redfish/v1/SessionService/Sessions", s->id);
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "@odata.id", path, "@odata.type",
			 "#Session.v1_3_0.Session", "Id", s->id, "Name", "User Session", "Description",
			 "User Session", "UserName", s->user);
}

static void session_create(struct sim_reply *out, struct bmc *b, const struct sim_request *req)
{
	json_t *doc = body_object(out, req);
	struct bmc_session *s = NULL;
	if (!doc)
		return;
	const char *user = json_string_value(json_object_get(doc, "UserName"));
	const char *pass = json_string_value(json_object_get(doc, "Password"));
	if (!user || !pass) {
		redfish_error(out, 400, "Base.1.8.PropertyMissing",
			      "The property %s is a required property and must be included in the request.",
			      user ? "Password" : "UserName");
		goto cleanup;
	}
	/* A BMC that takes these credentials with Basic only (an account without the session
	 * privilege): the POST is a failed login like a wrong password. */
	int rc = b->cfg->login == LOGIN_REFUSED ? BMC_E_AUTH
						: bmc_session_create(b, &s, user, pass, req->now);
	if (b->cfg->login == LOGIN_REFUSED)
		bmc_login_failed(b, "session", user, req->now);
	if (rc == BMC_E_AUTH) {
		redfish_error(out, 401, "Base.1.8.NoValidSession",
			      "There is no valid session established with the implementation.");
	} else if (rc == BMC_E_CAP) {
		redfish_error(out, 503, "IDRAC.2.8.RAC0218", "The maximum number of user sessions is reached.");
	} else if (rc < 0) {
		redfish_error(out, 500, "Base.1.8.InternalError", "The request failed due to an internal service error.");
	} else {
		json_t *sj = session_json(b, s);
		/* no-location: an iLO emulator's answer; bare: not even the body says where */
		if (b->cfg->login == LOGIN_STANDARD)
			out->location = strdup(json_string_value(json_object_get(sj, "@odata.id")));
		if (b->cfg->login == LOGIN_BARE)
			json_object_del(sj, "@odata.id");
		out->token = strdup(s->token);
		redfish_reply_json(out, 201, sj);
	}
cleanup:
	json_decref(doc);
}

void redfish_sessions_list(struct sim_reply *out, struct bmc *b, const struct sim_request *req)
{
	bmc_sessions_expire(b, req->now);
	json_t *doc = b->tree->sessions ? json_deep_copy(b->tree->sessions->json)
		: json_pack("{s:s, s:s, s:s}", "@odata.id", "/redfish/v1/SessionService/Sessions",
			    "@odata.type", "#SessionCollection.SessionCollection", "Name", "Session Collection");
	json_t *members = json_array();
	for (size_t i = 0; i < b->nsessions; i++) {
		json_t *sj = session_json(b, &b->sessions[i]);
		json_array_append_new(members, json_pack("{s:O}", "@odata.id", json_object_get(sj, "@odata.id")));
		json_decref(sj);
	}
	json_object_del(doc, "Oem");
	json_object_set_new(doc, "Members", members);
	json_object_set_new(doc, "Members@odata.count", json_integer((json_int_t)b->nsessions));
	redfish_reply_json(out, 200, doc);
}

static void session_one(struct sim_reply *out, struct bmc *b, const struct sim_request *req, const char *id)
{
	struct bmc_session *s = bmc_session_by_id(b, id, req->now);
	if (!s) {
		redfish_error(out, 404, "Base.1.8.ResourceMissingAtURI",
			      "The resource at the URI '%s' was not found.", req->path);
	} else if (strcmp(req->method, "DELETE") == 0) {
		bmc_session_delete(b, s);
		reply_empty(out, strcmp(b->cfg->profile->name, "idrac9") == 0 ? 200 : 204);
	} else if (strcmp(req->method, "GET") == 0) {
		redfish_reply_json(out, 200, session_json(b, s));
	} else {
		redfish_error(out, 405, "Base.1.8.OperationNotAllowed", "The HTTP method is not allowed on this resource.");
	}
}

static json_t *task_json(const struct bmc_task *t, uint64_t now)
{
	char id[32], path[128], mon[128];
	bool done = now >= t->done_at;
	uint64_t span = t->done_at > t->start ? t->done_at - t->start : 1;
	int pct = done ? 100 : (int)((now - t->start) * 100 / span);
	snprintf(id, sizeof(id), "sim%u", t->id);
	snprintf(path, sizeof(path), "/redfish/v1/TaskService/Tasks/%s", id);
	snprintf(mon, sizeof(mon), "/redfish/v1/TaskService/TaskMonitors/%s", id);
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:i, s:s, s:[]}", "@odata.id", path, "@odata.type",
			 "#Task.v1_4_3.Task", "Id", id, "Name", t->action, "TaskState",
			 done ? "Completed" : "Running", "TaskStatus", "OK", "PercentComplete", pct,
			 "TaskMonitor", mon, "Messages");
}

static bool task_route(struct sim_reply *out, struct bmc *b, const struct sim_request *req, const char *key)
{
	bool monitor = strncmp(key, MONITORS_PREFIX, strlen(MONITORS_PREFIX)) == 0;
	if (!monitor && strncmp(key, TASKS_PREFIX, strlen(TASKS_PREFIX)) != 0)
		return false;
	const char *num = key + strlen(monitor ? MONITORS_PREFIX : TASKS_PREFIX);
	int id;
	struct bmc_task *t = kiln_parse_int(&id, num, 1, 1 << 30) == 0 ? bmc_task_find(b, (unsigned)id) : NULL;
	kiln_error_clear();
	if (!t)
		return false;
	if (strcmp(req->method, "GET") != 0) {
		redfish_error(out, 405, "Base.1.8.OperationNotAllowed", "The HTTP method is not allowed on this resource.");
		return true;
	}
	bool running = req->now < t->done_at;
	redfish_reply_json(out, monitor && running ? 202 : 200, task_json(t, req->now));
	if (monitor && running)
		out->retry_after = 1;
	return true;
}

/* Answers an accepted action: 202 + task monitor in async mode, else the profile's success. */
static void action_done(struct sim_reply *out, struct bmc *b, const struct sim_request *req,
			const char *action, int64_t ms)
{
	if (!b->cfg->async) {
		reply_success(out, b, false);
		return;
	}
	struct bmc_task *t = bmc_task_create(b, action, req->now, ms);
	if (!t) {
		redfish_error(out, 500, "Base.1.8.InternalError", "The request failed due to an internal service error.");
		return;
	}
	json_t *tj = task_json(t, req->now);
	out->location = strdup(json_string_value(json_object_get(tj, "TaskMonitor")));
	out->retry_after = 1;
	redfish_reply_json(out, 202, tj);
}

static void action_reset(struct sim_reply *out, struct bmc *b, const struct sim_request *req, int sys)
{
	json_t *doc = body_object(out, req);
	if (!doc)
		return;
	const struct tree_system *ts = &b->tree->systems[sys];
	const char *type = json_string_value(json_object_get(doc, "ResetType"));
	int64_t ms = 0;
	if (!type) {
		redfish_error(out, 400, "Base.1.8.ActionParameterMissing",
			      "The action ComputerSystem.Reset requires the parameter ResetType to be present in the request body.");
	} else if (!str_in(ts->reset_types, type)) {
		redfish_error(out, 400, "Base.1.8.ActionParameterNotSupported",
			      "The parameter ResetType for the action ComputerSystem.Reset is not supported on the target resource ('%.64s').",
			      type);
	} else {
		int rc = bmc_power_reset(b, sys, type, req->now, &ms);
		if (rc == BMC_E_REDUNDANT || (rc == BMC_E_BUSY && b->cfg->profile->redundant_off_400))
			redfish_error(out, 400, "iLO.2.14.InvalidOperationForSystemState",
				      "The operation was not successful due to the current power state (for example, attempting to turn the power off when it is already off).");
		else if (rc == BMC_E_SETTLING || (rc == BMC_E_BUSY && b->cfg->profile->on_after_off_409))
			redfish_error(out, 409, "IDRAC.2.8.SYS518",
				      "Unable to complete the request because the server is changing its power state. Retry the operation after some time.");
		else if (rc == BMC_E_BUSY)
			redfish_error(out, 409, "Base.1.8.ResourceInUse",
				      "The change to the requested resource failed because the resource is in use or in transition.");
		else
			action_done(out, b, req, "ComputerSystem.Reset", ms);
	}
	json_decref(doc);
}

static const char *const protocols[] = { "CIFS", "FTP", "SFTP", "HTTP", "HTTPS", "NFS", "SCP", "TFTP", "OEM", NULL };

static bool image_ok(const char *image)
{
	static const char *const schemes[] = { "http://", "https://", "nfs://", "cifs://", "smb://",
		"ftp://", "sftp://", "tftp://", "scp://", NULL };
	for (size_t i = 0; schemes[i]; i++)
		if (strncasecmp(image, schemes[i], strlen(schemes[i])) == 0 && image[strlen(schemes[i])])
			return true;
	return false;
}

static void action_insert(struct sim_reply *out, struct bmc *b, const struct sim_request *req, int idx)
{
	json_t *doc = body_object(out, req);
	if (!doc)
		return;
	const char *image = json_string_value(json_object_get(doc, "Image"));
	const char *proto = json_string_value(json_object_get(doc, "TransferProtocolType"));
	json_t *ins = json_object_get(doc, "Inserted"), *wp = json_object_get(doc, "WriteProtected");
	const struct bmc_medium *m = &b->media[idx];
	bool inserted = m->changed ? m->inserted : b->tree->media[idx].inserted;
	bool proto_ok = !proto;
	for (size_t i = 0; proto && protocols[i]; i++)
		proto_ok = proto_ok || strcmp(proto, protocols[i]) == 0;
	if (!image) {
		redfish_error(out, 400, "Base.1.8.ActionParameterMissing",
			      "The action VirtualMedia.InsertMedia requires the parameter Image to be present in the request body.");
	} else if (!image_ok(image)) {
		redfish_error(out, 400, "Base.1.8.ActionParameterValueFormatError",
			      "The value '%.128s' for the parameter Image in the action VirtualMedia.InsertMedia is of a different format than the parameter can accept.",
			      image);
	} else if (!proto && b->cfg->profile->insert_needs_proto) {
		redfish_error(out, 400, "Base.1.8.ActionParameterMissing",
			      "The action VirtualMedia.InsertMedia requires the parameter TransferProtocolType to be present in the request body.");
	} else if (!proto_ok) {
		redfish_error(out, 400, "Base.1.8.ActionParameterValueNotInList",
			      "The value '%.32s' for the parameter TransferProtocolType in the action VirtualMedia.InsertMedia is not in the list of acceptable values.",
			      proto);
	} else if ((ins && !json_is_boolean(ins)) || (wp && !json_is_boolean(wp))) {
		redfish_error(out, 400, "Base.1.8.ActionParameterValueTypeError",
			      "The value for the parameter Inserted or WriteProtected in the action VirtualMedia.InsertMedia is of a different type than the parameter can accept.");
	} else if (inserted) {
		redfish_error(out, 409, "Base.1.8.ResourceInUse",
			      "The change to the requested resource failed because the resource is in use or in transition (media already inserted).");
	} else if (bmc_medium_set(b, idx, !ins || json_is_true(ins), image, proto, !wp || json_is_true(wp)) < 0) {
		redfish_error(out, 500, "Base.1.8.InternalError", "The request failed due to an internal service error.");
	} else {
		action_done(out, b, req, "VirtualMedia.InsertMedia", 0);
	}
	json_decref(doc);
}

static void action_eject(struct sim_reply *out, struct bmc *b, const struct sim_request *req, int idx)
{
	if (req->body_len == 0 && b->cfg->profile->eject_needs_body) {
		redfish_error(out, 400, "Base.1.8.MalformedJSON",
			      "The request body submitted was malformed JSON and could not be parsed by the receiving service (EjectMedia needs a {} body).");
		return;
	}
	if (req->body_len) {
		json_t *doc = body_object(out, req);
		if (!doc)
			return;
		json_decref(doc);
	}
	if (bmc_medium_set(b, idx, false, "", NULL, false) < 0) {
		redfish_error(out, 500, "Base.1.8.InternalError", "The request failed due to an internal service error.");
		return;
	}
	action_done(out, b, req, "VirtualMedia.EjectMedia", 0);
}

static void post(struct sim_reply *out, struct bmc *b, const struct sim_request *req)
{
	const struct tree_action *a = tree_action_find(b->tree, req->path);
	if (!a) {
		if (tree_find(b->tree, req->path))
			redfish_error(out, 405, "Base.1.8.OperationNotAllowed", "The HTTP method is not allowed on this resource.");
		else
			redfish_error(out, 404, "Base.1.8.ResourceMissingAtURI",
				      "The resource at the URI '%s' was not found.", req->path);
		return;
	}
	switch (a->kind) {
	case ACT_RESET:
		action_reset(out, b, req, a->index);
		break;
	case ACT_INSERT:
		action_insert(out, b, req, a->index);
		break;
	case ACT_EJECT:
		action_eject(out, b, req, a->index);
		break;
	case ACT_CLEARLOG:
		bmc_log_clear(b, a->index);
		reply_success(out, b, false);
		break;
	case ACT_OTHER:
		reply_success(out, b, false);
		break;
	}
}

/* ETag / If-Match checks for a PATCH of a system; 0 when it may proceed. */
static int precondition(struct sim_reply *out, struct bmc *b, const struct sim_request *req, int sys)
{
	char etag[32];
	if (!b->cfg->profile->etag)
		return 0;
	if (req->if_match && bmc_fault_take(b, true).kind == FAULT_STALE_ETAG)
		b->systems[sys].etag_gen++; /* someone else changed it in between */
	bmc_system_etag(b, sys, etag, sizeof(etag));
	if (!req->if_match && b->cfg->require_etag) {
		redfish_error(out, 428, "Base.1.8.PreconditionRequired",
			      "A precondition header or annotation is required to change a resource.");
		return -1;
	}
	if (req->if_match && strcmp(req->if_match, "*") != 0 && strcmp(req->if_match, etag) != 0) {
		redfish_error(out, 412, "Base.1.8.PreconditionFailed",
			      "The ETag supplied did not match the ETag required to change this resource.");
		return -1;
	}
	return 0;
}

static const char *const targets_default[] = { "None", "Pxe", "Floppy", "Cd", "Usb", "Hdd", "BiosSetup",
	"Utilities", "Diags", "UefiShell", "UefiTarget", "SDCard", "UefiHttp", "RemoteDrive", NULL };
static const char *const enabled_default[] = { "Disabled", "Once", "Continuous", NULL };
static const char *const modes_default[] = { "UEFI", "Legacy", NULL };

static bool value_allowed(json_t *allowed, const char *const *def, const char *v)
{
	if (allowed)
		return str_in(allowed, v);
	for (size_t i = 0; def[i]; i++)
		if (strcmp(def[i], v) == 0)
			return true;
	return false;
}

static void patch_system(struct sim_reply *out, struct bmc *b, const struct sim_request *req, int sys)
{
	json_t *doc = body_object(out, req);
	if (!doc)
		return;
	const struct tree_system *ts = &b->tree->systems[sys];
	struct bmc_system *s = &b->systems[sys];
	const char *k;
	json_t *v, *boot = json_object_get(doc, "Boot");
	json_object_foreach(doc, k, v) {
		if (k[0] != '@' && strcmp(k, "Boot") != 0 && strcmp(k, "AssetTag") != 0) {
			redfish_error(out, 400, "Base.1.8.PropertyUnknown",
				      "The property %.64s is not in the list of valid properties for the resource.", k);
			goto cleanup;
		}
	}
	const char *target = json_string_value(json_object_get(boot, "BootSourceOverrideTarget"));
	const char *enabled = json_string_value(json_object_get(boot, "BootSourceOverrideEnabled"));
	const char *mode = json_string_value(json_object_get(boot, "BootSourceOverrideMode"));
	json_object_foreach(boot, k, v) {
		bool known = strcmp(k, "BootSourceOverrideTarget") == 0 ||
			     strcmp(k, "BootSourceOverrideEnabled") == 0 || strcmp(k, "BootSourceOverrideMode") == 0;
		if (known && !json_is_string(v)) {
			redfish_error(out, 400, "Base.1.8.PropertyValueTypeError",
				      "The value for the property %.64s is of a different type than the property can accept.", k);
			goto cleanup;
		}
		if (!known && strcmp(k, "UefiTargetBootSourceOverride") != 0 && strcmp(k, "BootOrder") != 0 &&
		    strcmp(k, "BootNext") != 0) {
			redfish_error(out, 400, "Base.1.8.PropertyUnknown",
				      "The property %.64s is not in the list of valid properties for the resource.", k);
			goto cleanup;
		}
	}
	if (target && !value_allowed(ts->boot_targets, targets_default, target)) {
		redfish_error(out, 400, "Base.1.8.PropertyValueNotInList",
			      "The value '%.64s' for the property BootSourceOverrideTarget is not in the list of acceptable values.",
			      target);
		goto cleanup;
	}
	if (enabled && !value_allowed(ts->boot_enabled, enabled_default, enabled)) {
		redfish_error(out, 400, "Base.1.8.PropertyValueNotInList",
			      "The value '%.64s' for the property BootSourceOverrideEnabled is not in the list of acceptable values.",
			      enabled);
		goto cleanup;
	}
	if (mode && !value_allowed(NULL, modes_default, mode)) {
		redfish_error(out, 400, "Base.1.8.PropertyValueNotInList",
			      "The value '%.64s' for the property BootSourceOverrideMode is not in the list of acceptable values.",
			      mode);
		goto cleanup;
	}
	if (precondition(out, b, req, sys) < 0)
		goto cleanup;
	if (target)
		kiln_strlcpy(s->boot_target, target, sizeof(s->boot_target));
	if (enabled)
		kiln_strlcpy(s->boot_enabled, b->cfg->boot_continuous && strcmp(enabled, "Disabled") != 0
			     ? "Continuous" : enabled, sizeof(s->boot_enabled));
	if (mode)
		kiln_strlcpy(s->boot_mode, mode, sizeof(s->boot_mode));
	s->etag_gen++;
	reply_success(out, b, true);
cleanup:
	json_decref(doc);
}

static void patch_medium(struct sim_reply *out, struct bmc *b, const struct sim_request *req, int idx)
{
	json_t *doc = body_object(out, req);
	if (!doc)
		return;
	json_t *image = json_object_get(doc, "Image"), *ins = json_object_get(doc, "Inserted");
	json_t *wp = json_object_get(doc, "WriteProtected");
	if (image && !json_is_null(image) && (!json_is_string(image) ||
	    (json_string_length(image) && !image_ok(json_string_value(image))))) {
		redfish_error(out, 400, "Base.1.8.PropertyValueFormatError",
			      "The value for the property Image is of a different format than the property can accept.");
	} else {
		const char *img = json_string_value(image);
		bool inserted = img && *img ? (!ins || json_is_true(ins)) : false;
		if (bmc_medium_set(b, idx, inserted, img, NULL, !wp || json_is_true(wp)) < 0)
			redfish_error(out, 500, "Base.1.8.InternalError", "The request failed due to an internal service error.");
		else
			reply_success(out, b, true);
	}
	json_decref(doc);
}

static bool is_public(const char *method, const char *key)
{
	if (strcmp(method, "GET") != 0)
		return false;
	return strcmp(key, "/redfish") == 0 || strcmp(key, "/redfish/v1") == 0 ||
	       strcmp(key, "/redfish/v1/odata") == 0 || strcmp(key, "/redfish/v1/$metadata") == 0;
}

void redfish_handle(struct sim_reply *out, struct bmc *b, const struct sim_request *req_in)
{
	struct sim_request req = *req_in;
	if (strcmp(req.method, "HEAD") == 0)
		req.method = "GET";
	char *key = tree_key(req.path);
	if (!key) {
		redfish_error(out, 500, "Base.1.8.InternalError", "The request failed due to an internal service error.");
		return;
	}
	const char *skey = b->tree->sessions_key;
	size_t sklen = strlen(skey);
	bool in_sessions = strncmp(key, skey, sklen) == 0 && key[sklen] == '/' && key[sklen + 1];
	const struct tree_res *r = NULL;
	/* $select only where the root advertises it; the quirks: a service that advertises it
	 * but ignores it, or refuses it */
	const char *select = b->tree->select_query && b->cfg->select_quirk == QUERY_HONOURED &&
			     strcmp(req.method, "GET") == 0 ? req.select : NULL;
	/* $expand likewise, "." at one level only (what the root advertises) */
	const char *expand = b->tree->expand_query && b->cfg->expand_quirk == QUERY_HONOURED &&
			     strcmp(req.method, "GET") == 0 ? req.expand : NULL;
	bool selected = false;

	if ((req.select && b->tree->select_query && b->cfg->select_quirk == QUERY_REFUSED) ||
	    (req.expand && b->tree->expand_query && b->cfg->expand_quirk == QUERY_REFUSED)) {
		redfish_error(out, 400, "Base.1.8.QueryNotSupportedOnResource",
			      "Querying is not supported on the requested resource.");
	} else if (strcmp(key, "/redfish") == 0 && strcmp(req.method, "GET") == 0) {
		redfish_reply_json(out, 200, json_pack("{s:s}", "v1", "/redfish/v1/"));
	} else if (strcmp(key, skey) == 0 && strcmp(req.method, "POST") == 0) {
		session_create(out, b, &req);
	} else if (!is_public(req.method, key) && authenticate(out, b, &req) < 0) {
		/* 401 filled */
	} else if (req.unsupported) {
		redfish_error(out, 501, "Base.1.8.QueryNotSupported",
			      "The query parameter %.64s is not supported by the implementation.", req.unsupported);
	} else if (expand && strcmp(expand, ".") != 0 && strcmp(expand, ".($levels=1)") != 0) {
		redfish_error(out, 400, "Base.1.8.QueryParameterValueFormatError",
			      "The value '%.200s' for the parameter $expand is of a different format than the parameter can accept.",
			      expand);
		expand = NULL;
	} else if (in_sessions) {
		session_one(out, b, &req, key + sklen + 1);
	} else if (task_route(out, b, &req, key)) {
		/* task or monitor */
	} else if (strcmp(req.method, "GET") == 0) {
		selected = redfish_get(out, b, &req, key, select);
	} else if (strcmp(req.method, "POST") == 0) {
		post(out, b, &req);
	} else if (strcmp(req.method, "PATCH") == 0) {
		r = tree_find(b->tree, req.path);
		if (r && r->kind == RES_SYSTEM)
			patch_system(out, b, &req, r->index);
		else if (r && r->kind == RES_VMEDIA)
			patch_medium(out, b, &req, r->index);
		else if (r)
			redfish_error(out, 405, "Base.1.8.OperationNotAllowed", "The HTTP method is not allowed on this resource.");
		else
			redfish_error(out, 404, "Base.1.8.ResourceMissingAtURI",
				      "The resource at the URI '%s' was not found.", req.path);
	} else if (tree_find(b->tree, req.path)) {
		redfish_error(out, 405, "Base.1.8.OperationNotAllowed", "The HTTP method is not allowed on this resource.");
	} else {
		redfish_error(out, 404, "Base.1.8.ResourceMissingAtURI",
			      "The resource at the URI '%s' was not found.", req.path);
	}
	if (expand && out->status == 200 && out->len)
		redfish_expand_after(out, b, &req);
	if (select && !selected && out->status == 200 && out->len)
		redfish_select_after(out, select);
	free(key);
}
