/* kiln-bmcsim: Redfish semantics of one request: auth, dynamic GETs, actions, PATCH, sessions, tasks. */
#include <ctype.h>
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

static void reply_json(struct sim_reply *out, int status, json_t *doc)
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
	reply_json(out, status, doc);
}

/* Success of an action or a PATCH, in the profile's style. */
static void reply_success(struct sim_reply *out, const struct bmc *b, bool patch)
{
	const struct sim_profile *p = b->cfg->profile;
	if (p->action_200) {
		reply_json(out, 200, json_pack("{s:{s:s, s:s, s:[{s:s}]}}", "error", "code",
			"iLO.0.10.ExtendedInfo", "message", "See @Message.ExtendedInfo for more information.",
			"@Message.ExtendedInfo", "MessageId", "Base.1.4.Success"));
	} else if (patch && strcmp(p->name, "idrac9") == 0) {
		reply_json(out, 200, json_pack("{s:[{s:s, s:s, s:s}]}", "@Message.ExtendedInfo",
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
		reply_json(out, 201, sj);
	}
cleanup:
	json_decref(doc);
}

static void sessions_list(struct sim_reply *out, struct bmc *b, const struct sim_request *req)
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
	reply_json(out, 200, doc);
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
		reply_json(out, 200, session_json(b, s));
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
	reply_json(out, monitor && running ? 202 : 200, task_json(t, req->now));
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
	reply_json(out, 202, tj);
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

/* The system's Boot object as the BMC shows it now: the tree's, with the overlay's settings. */
static json_t *system_boot(const struct bmc *b, const struct tree_res *r)
{
	const struct bmc_system *s = &b->systems[r->index];
	json_t *tb = json_object_get(r->json, "Boot");
	json_t *boot = tb ? json_deep_copy(tb) : json_object();
	json_object_set_new(boot, "BootSourceOverrideTarget", json_string(s->boot_target));
	json_object_set_new(boot, "BootSourceOverrideEnabled", json_string(s->boot_enabled));
	if (s->boot_mode[0])
		json_object_set_new(boot, "BootSourceOverrideMode", json_string(s->boot_mode));
	return boot;
}

/* The system's SerialNumber: the tree's, or with --unique-serials the tree's and "-<n>" for
 * the n-th BMC (real machines do not share serials; kilnd binds agents by them). */
static json_t *system_serial(const struct bmc *b, const struct tree_res *r)
{
	const char *sn = json_string_value(json_object_get(r->json, "SerialNumber"));
	char buf[160];

	if (!sn || !b->cfg->unique_serials)
		return json_incref(json_object_get(r->json, "SerialNumber"));
	snprintf(buf, sizeof(buf), "%s-%d", sn, b->index + 1);
	return json_string(buf);
}

static json_t *render_system(struct bmc *b, const struct tree_res *r)
{
	const struct bmc_system *s = &b->systems[r->index];
	json_t *doc = json_deep_copy(r->json);
	char etag[32];
	bmc_system_etag(b, r->index, etag, sizeof(etag));
	json_object_set_new(doc, "PowerState", json_string(bmc_power_name(s->power)));
	json_object_set_new(doc, "@odata.etag", json_string(etag));
	json_object_set_new(doc, "Boot", system_boot(b, r));
	if (json_object_get(doc, "SerialNumber"))
		json_object_set_new(doc, "SerialNumber", system_serial(b, r));
	return doc;
}

/* The system's answer as text. It is rendered again only when something it shows changed
 * (every GET used to copy, edit and serialise the whole document). */
static void reply_system(struct sim_reply *out, struct bmc *b, const struct tree_res *r)
{
	struct bmc_system *s = &b->systems[r->index];
	char etag[32];
	if (!s->rendered || s->rendered_power != s->power || s->rendered_etag_gen != s->etag_gen) {
		json_t *doc = render_system(b, r);
		char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
		json_decref(doc);
		if (!text) {
			redfish_error(out, 500, "Base.1.8.InternalError", "The request failed due to an internal service error.");
			return;
		}
		free(s->rendered);
		s->rendered = text;
		s->rendered_len = strlen(text);
		s->rendered_power = s->power;
		s->rendered_etag_gen = s->etag_gen;
	}
	/* a copy: the reply goes out after the latency, when the kept text may have changed */
	out->body = malloc(s->rendered_len + 1);
	if (!out->body) {
		redfish_error(out, 500, "Base.1.8.InternalError", "The request failed due to an internal service error.");
		return;
	}
	memcpy(out->body, s->rendered, s->rendered_len + 1);
	out->len = s->rendered_len;
	out->status = 200;
	out->ctype = "application/json;charset=utf-8";
	bmc_system_etag(b, r->index, etag, sizeof(etag));
	out->etag = strdup(etag);
}

/* ---- $select (DSP0266): a comma-separated list of properties of the resource, "/" between
 * the names of nested ones; the answer holds the selected properties plus the resource's
 * @odata.context, @odata.id, @odata.type and @odata.etag. Names the resource lacks are left
 * out; "*" is the whole resource. ---- */

#define SELECT_ITEMS_MAX 64

/* A member of the resource by name: a new reference, or NULL when it has none. */
typedef json_t *(*select_member_fn)(void *ctx, const char *name);

static json_t *doc_member(void *ctx, const char *name)
{
	return json_incref(json_object_get(ctx, name));
}

struct system_ctx {
	struct bmc *b;
	const struct tree_res *r;
};

/* The system's members without rendering the whole of it: the overlay's where it has them. */
static json_t *system_member(void *ctx, const char *name)
{
	struct system_ctx *sc = ctx;
	if (strcmp(name, "PowerState") == 0)
		return json_string(bmc_power_name(sc->b->systems[sc->r->index].power));
	if (strcmp(name, "@odata.etag") == 0) {
		char etag[32];
		bmc_system_etag(sc->b, sc->r->index, etag, sizeof(etag));
		return json_string(etag);
	}
	if (strcmp(name, "Boot") == 0)
		return system_boot(sc->b, sc->r);
	if (strcmp(name, "SerialNumber") == 0)
		return system_serial(sc->b, sc->r);
	return json_incref(json_object_get(sc->r->json, name));
}

static bool select_name_ok(const char *p, size_t n)
{
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)p[i]) && p[i] != '_' && p[i] != '@' && p[i] != '.' && p[i] != '#')
			return false;
	return true;
}

/* Copies item (a path "A/B/C") from the resource into out, creating the objects on the way;
 * a path the resource lacks, or that runs through something not an object, adds nothing.
 * Values are shared with the resource, never changed: an item under another selected one
 * is skipped by the caller. */
static int select_copy(json_t *out, const char *item, select_member_fn member, void *ctx)
{
	char name[256];
	const char *slash = strchr(item, '/');
	size_t n = slash ? (size_t)(slash - item) : strlen(item);
	if (n >= sizeof(name))
		return 0;
	memcpy(name, item, n);
	name[n] = '\0';
	json_t *v = member(ctx, name);
	json_t *dst = out;
	while (v && slash) {
		json_t *child = json_object_get(dst, name);
		if (!child) {
			child = json_object();
			if (json_object_set_new(dst, name, child) < 0) {
				json_decref(v);
				return -1;
			}
		}
		dst = child;
		item = slash + 1;
		slash = strchr(item, '/');
		n = slash ? (size_t)(slash - item) : strlen(item);
		json_t *next = NULL;
		if (n < sizeof(name)) {
			memcpy(name, item, n);
			name[n] = '\0';
			next = json_incref(json_object_get(v, name));
		}
		json_decref(v);
		v = next;
	}
	if (!v)
		return 0;
	return json_object_set_new(dst, name, v) < 0 ? -1 : 0;
}

/* Fills out with the selection from the resource, or with a 400 when the list is malformed;
 * status -1 when the list asks for everything ("*"). */
static void reply_select(struct sim_reply *out, const char *select, select_member_fn member, void *ctx)
{
	static const char *const always[] = { "@odata.context", "@odata.id", "@odata.type", "@odata.etag" };
	char buf[2048];
	const char *items[SELECT_ITEMS_MAX];
	size_t nitems = 0;
	if (kiln_strlcpy(buf, select, sizeof(buf)) >= sizeof(buf))
		goto bad;
	for (char *p = buf; p;) {
		char *comma = strchr(p, ',');
		if (comma)
			*comma = '\0';
		while (*p == ' ')
			p++;
		size_t len = strlen(p);
		while (len && p[len - 1] == ' ')
			p[--len] = '\0';
		if (strcmp(p, "*") == 0) {
			out->status = -1;
			return;
		}
		for (const char *q = p;;) { /* every name on the path: a property or an annotation */
			const char *sl = strchr(q, '/');
			if (!select_name_ok(q, sl ? (size_t)(sl - q) : strlen(q)))
				goto bad;
			if (!sl)
				break;
			q = sl + 1;
		}
		if (nitems == SELECT_ITEMS_MAX)
			goto bad;
		items[nitems++] = p;
		p = comma ? comma + 1 : NULL;
	}
	json_t *doc = json_object();
	if (!doc)
		goto nomem;
	for (size_t i = 0; i < sizeof(always) / sizeof(always[0]); i++) {
		json_t *v = member(ctx, always[i]);
		if (v && json_object_set_new(doc, always[i], v) < 0)
			goto nomem_doc;
	}
	for (size_t i = 0; i < nitems; i++) {
		/* a path under another selected item is in it already */
		bool covered = false;
		for (size_t j = 0; j < nitems && !covered; j++) {
			size_t lj = strlen(items[j]);
			covered = j != i && strncmp(items[i], items[j], lj) == 0 && items[i][lj] == '/';
		}
		if (!covered && select_copy(doc, items[i], member, ctx) < 0)
			goto nomem_doc;
	}
	reply_json(out, 200, doc);
	return;
bad:
	redfish_error(out, 400, "Base.1.8.QueryParameterValueFormatError",
		      "The value '%.200s' for the parameter $select is of a different format than the parameter can accept.",
		      select);
	return;
nomem_doc:
	json_decref(doc);
nomem:
	redfish_error(out, 500, "Base.1.8.InternalError", "The request failed due to an internal service error.");
}

/* $select over an answer already made (any JSON resource but the system): the body parsed,
 * the selection made from it. */
static void select_after(struct sim_reply *out, const char *select)
{
	json_t *doc = json_loadb(out->body ? out->body : out->text, out->len, 0, NULL);
	struct sim_reply sel = { 0 };
	if (!json_is_object(doc)) {
		json_decref(doc);
		return; /* not a JSON object: served as it is */
	}
	reply_select(&sel, select, doc_member, doc);
	json_decref(doc);
	if (sel.status == -1)
		return; /* "*" */
	free(out->body);
	out->body = sel.body;
	out->len = sel.len;
	out->text = NULL;
	out->status = sel.status;
	out->ctype = sel.ctype;
}

static json_t *render_medium(struct bmc *b, const struct tree_res *r)
{
	const struct bmc_medium *m = &b->media[r->index];
	json_t *doc = json_deep_copy(r->json);
	const char *slash = strrchr(m->image, '/');
	bool ilo = b->cfg->profile->redundant_off_400;
	json_object_set_new(doc, "Inserted", json_boolean(m->inserted));
	json_object_set_new(doc, "Image", m->image[0] || ilo ? json_string(m->image) : json_null());
	json_object_set_new(doc, "ImageName", m->image[0] ? json_string(slash ? slash + 1 : m->image)
							 : (ilo ? json_string("") : json_null()));
	json_object_set_new(doc, "ConnectedVia", json_string(m->inserted ? "URI" : "NotConnected"));
	json_object_set_new(doc, "WriteProtected", json_boolean(m->write_protected));
	if (m->proto[0])
		json_object_set_new(doc, "TransferProtocolType", json_string(m->proto));
	return doc;
}

static json_t *render_entries(struct bmc *b, const struct tree_res *r, const char *skip)
{
	json_t *doc = json_deep_copy(r->json);
	json_t *tree_members = json_object_get(doc, "Members"), *all = json_array();
	bool cleared = b->log_cleared && b->log_cleared[r->index];
	bool newest_first = b->cfg->profile->newest_first;
	size_t injected = 0;
	if (newest_first) {
		for (size_t i = b->nentries; i-- > 0;)
			if (b->entries[i].log == r->index && ++injected)
				json_array_append(all, b->entries[i].entry);
	}
	if (!cleared)
		json_array_extend(all, tree_members);
	if (!newest_first) {
		for (size_t i = 0; i < b->nentries; i++)
			if (b->entries[i].log == r->index && ++injected)
				json_array_append(all, b->entries[i].entry);
	}
	json_int_t count = json_integer_value(json_object_get(doc, "Members@odata.count"));
	if (cleared || count < (json_int_t)json_array_size(tree_members))
		count = cleared ? 0 : (json_int_t)json_array_size(tree_members);
	count += (json_int_t)injected;
	int off = 0;
	if (skip && kiln_parse_int(&off, skip, 0, 1 << 30) < 0)
		off = 0;
	kiln_error_clear();
	json_t *page = json_array();
	for (size_t i = (size_t)off; i < json_array_size(all); i++)
		json_array_append(page, json_array_get(all, i));
	json_object_set_new(doc, "Members", page);
	json_object_set_new(doc, "Members@odata.count", json_integer(count));
	if (json_object_get(doc, "Members@odata.nextLink")) {
		if (off == 0 && !cleared) {
			char next[1024];
			snprintf(next, sizeof(next), "%s?$skip=%zu", r->path, json_array_size(all));
			json_object_set_new(doc, "Members@odata.nextLink", json_string(next));
		} else {
			json_object_del(doc, "Members@odata.nextLink");
		}
	}
	json_decref(all);
	return doc;
}

/* An injected log entry by path: <entries>/<id>. */
static json_t *find_entry(struct bmc *b, const char *key)
{
	for (size_t i = 0; i < b->nentries; i++) {
		char *k = tree_key(json_string_value(json_object_get(b->entries[i].entry, "@odata.id")));
		bool same = k && strcmp(k, key) == 0;
		free(k);
		if (same)
			return json_incref(b->entries[i].entry);
	}
	return NULL;
}

/* Answers a GET; true when select (when not NULL) was applied already. */
static bool get(struct sim_reply *out, struct bmc *b, const struct sim_request *req, const char *key,
		const char *select)
{
	const struct tree_res *r = tree_find(b->tree, req->path);
	json_t *doc = NULL;
	if (!r) {
		doc = find_entry(b, key);
		if (doc)
			reply_json(out, 200, doc);
		else
			redfish_error(out, 404, "Base.1.8.ResourceMissingAtURI",
				      "The resource at the URI '%s' was not found.", req->path);
		return false;
	}
	switch (r->kind) {
	case RES_SYSTEM:
		if (select) {
			struct system_ctx sc = { b, r };
			char etag[32];
			reply_select(out, select, system_member, &sc);
			if (out->status == -1) { /* "*" */
				out->status = 0;
				reply_system(out, b, r);
			} else if (out->status == 200) {
				bmc_system_etag(b, r->index, etag, sizeof(etag));
				out->etag = strdup(etag);
			}
		} else {
			reply_system(out, b, r);
		}
		return true;
	case RES_VMEDIA:
		if (b->media[r->index].changed)
			doc = render_medium(b, r);
		break;
	case RES_ENTRIES: {
		bool any = req->skip || (b->log_cleared && b->log_cleared[r->index]);
		for (size_t i = 0; i < b->nentries && !any; i++)
			any = b->entries[i].log == r->index;
		if (any)
			doc = render_entries(b, r, req->skip);
		break;
	}
	case RES_SESSIONS:
		sessions_list(out, b, req);
		return false;
	case RES_SENSORS:
		if (b->nsensors || b->cfg->drift_pct) {
			doc = json_deep_copy(r->json);
			bmc_sensors_drift(b, doc, req->now);
			bmc_sensors_apply(b, doc); /* an injected reading stays as injected */
		}
		break;
	case RES_ERROR:
		out->status = r->status;
		out->text = r->text;
		out->len = r->len;
		out->ctype = r->ctype;
		return false;
	case RES_PLAIN:
		break;
	}
	if (doc) {
		reply_json(out, 200, doc);
	} else {
		out->status = 200;
		out->text = r->text;
		out->len = r->len;
		out->ctype = r->ctype;
	}
	return false;
}

/* $expand=. over a collection already answered (DSP0266: "." expands the Members, not the
 * Links, one level; this service advertises no more): each member link becomes the member's
 * own answer, as a GET of it would give it now. */
static void expand_after(struct sim_reply *out, struct bmc *b, const struct sim_request *req)
{
	json_t *doc = json_loadb(out->body ? out->body : out->text, out->len, 0, NULL);
	json_t *members = json_object_get(doc, "Members"), *m;
	size_t i;
	char *text;

	if (!json_is_array(members)) {
		json_decref(doc);
		return; /* not a collection: served as it is */
	}
	json_array_foreach(members, i, m) {
		const char *id = json_string_value(json_object_get(m, "@odata.id"));
		struct sim_request one = *req;
		struct sim_reply sub = { 0 };
		char *key = id ? tree_key(id) : NULL;
		json_t *got;

		if (!key)
			continue;
		one.path = id;
		one.skip = one.select = one.expand = NULL;
		get(&sub, b, &one, key, NULL);
		got = sub.status == 200 ? json_loadb(sub.body ? sub.body : sub.text, sub.len, 0, NULL) : NULL;
		if (json_is_object(got))
			json_array_set(members, i, got);
		json_decref(got);
		sim_reply_free(&sub);
		free(key);
	}
	text = json_dumps(doc, JSON_COMPACT);
	json_decref(doc);
	if (!text)
		return;
	free(out->body);
	out->body = text;
	out->text = NULL;
	out->len = strlen(text);
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
		reply_json(out, 200, json_pack("{s:s}", "v1", "/redfish/v1/"));
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
		selected = get(out, b, &req, key, select);
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
		expand_after(out, b, &req);
	if (select && !selected && out->status == 200 && out->len)
		select_after(out, select);
	free(key);
}
