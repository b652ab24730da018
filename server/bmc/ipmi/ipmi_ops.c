/* SPDX-License-Identifier: Apache-2.0 */
/* IPMI 2.0 operations with libfreeipmi: power with read-back, boot device, inventory (with FRU). */
#include "bmc/ipmi/ipmi_ops.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <freeipmi/freeipmi.h>

#include "bmc/ipmi/ipmi_sessions.h"
#include "kiln/error.h"

/* Poll interval while a power action's outcome is read back. */
#define POLL_MS 100
/* How long a cycle's off phase is watched for before the BMC's acknowledgement is taken. */
#define CYCLE_OFF_WATCH_MS 5000

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) != 0)
		;
}

/*
 * One job's session: the context, and what the job did on it. A job on a kept session
 * whose session turns out to be gone is run again once on a fresh one, but only while
 * nothing was sent that must not be sent twice (sent: a chassis control, which may have
 * reached the BMC even when no answer came back).
 */
struct sess {
	ipmi_ctx_t ctx;
	int sent; /* a power action was sent */
	int cc;   /* completion code of the failed command; -1 when none came */
};

/* Maps a libfreeipmi error number onto a kiln code. */
static int code_of(int errnum)
{
	switch (errnum) {
	case IPMI_ERR_USERNAME_INVALID:
	case IPMI_ERR_PASSWORD_INVALID:
	case IPMI_ERR_K_G_INVALID:
		return KILN_EAUTH;
	case IPMI_ERR_PRIVILEGE_LEVEL_INSUFFICIENT:
	case IPMI_ERR_PRIVILEGE_LEVEL_CANNOT_BE_OBTAINED:
		return KILN_EPERM;
	case IPMI_ERR_CONNECTION_TIMEOUT:
	case IPMI_ERR_SESSION_TIMEOUT:
	case IPMI_ERR_MESSAGE_TIMEOUT:
	case IPMI_ERR_PASSWORD_VERIFICATION_TIMEOUT:
		return KILN_ETIMEOUT;
	case IPMI_ERR_BMC_BUSY:
		return KILN_EBUSY;
	case IPMI_ERR_BAD_COMPLETION_CODE:
	case IPMI_ERR_BAD_RMCPPLUS_STATUS_CODE:
	case IPMI_ERR_IPMI_2_0_UNAVAILABLE:
	case IPMI_ERR_CIPHER_SUITE_ID_UNAVAILABLE:
	case IPMI_ERR_AUTHENTICATION_TYPE_UNAVAILABLE:
		return KILN_EPROTO;
	default:
		return KILN_ERROR;
	}
}

/* The completion code in an answer, or -1 when no answer came. */
static int completion_code(fiid_obj_t rs)
{
	uint64_t cc = 0;

	if (!rs || fiid_obj_get(rs, "comp_code", &cc) <= 0)
		return -1;
	return (int)cc;
}

/* Fails with the context's error, and the completion code's text when that is the cause. */
static int cmd_fail(struct sess *s, fiid_obj_t rs, uint8_t netfn, const char *what)
{
	int errnum = ipmi_ctx_errnum(s->ctx);
	char ccmsg[128];

	s->cc = errnum == IPMI_ERR_BAD_COMPLETION_CODE ? completion_code(rs) : -1;
	/* 0xC0 "node busy" is the BMC's 503: an answer, the poller shows it busy (not down). */
	int code = s->cc == IPMI_COMP_CODE_NODE_BUSY ? KILN_EBUSY : code_of(errnum);
	if (errnum == IPMI_ERR_BAD_COMPLETION_CODE && rs &&
	    ipmi_completion_code_strerror_cmd_r(rs, netfn, ccmsg, sizeof(ccmsg)) == 0)
		return kiln_fail(code, "%s: %s", what, ccmsg);
	return kiln_fail(code, "%s: %s", what, ipmi_ctx_errormsg(s->ctx));
}

static int session_open(ipmi_ctx_t *out, const struct ipmi_job *job)
{
	static const uint8_t levels[] = {IPMI_PRIVILEGE_LEVEL_USER, IPMI_PRIVILEGE_LEVEL_OPERATOR,
					 IPMI_PRIVILEGE_LEVEL_ADMIN};
	unsigned int session_ms = (unsigned int)job->timeout_ms;
	unsigned int retransmit_ms = session_ms / 8;
	ipmi_ctx_t ctx = ipmi_ctx_create();

	if (!ctx)
		return kiln_fail(KILN_ERROR, "out of memory");
	if (retransmit_ms < 100)
		retransmit_ms = 100;
	if (retransmit_ms > 1000)
		retransmit_ms = 1000;
	if (retransmit_ms >= session_ms)
		retransmit_ms = session_ms / 2;
	if (ipmi_ctx_open_outofband_2_0(ctx, job->host, job->user, job->password, NULL, 0,
					levels[job->privilege], (uint8_t)job->cipher, session_ms,
					retransmit_ms, job->wa_session, IPMI_FLAGS_DEFAULT) < 0) {
		int rc = kiln_fail(code_of(ipmi_ctx_errnum(ctx)), "open session: %s",
				   ipmi_ctx_errormsg(ctx));

		ipmi_ctx_destroy(ctx);
		return rc;
	}
	*out = ctx;
	return 0;
}

/* Reads the power state: 1 on, 0 off, or a negative code. */
static int power_read(struct sess *s)
{
	fiid_obj_t rs = fiid_obj_create(tmpl_cmd_get_chassis_status_rs);
	uint64_t on = 0;
	int rc;

	if (!rs)
		return kiln_fail(KILN_ERROR, "out of memory");
	if (ipmi_cmd_get_chassis_status(s->ctx, rs) < 0)
		rc = cmd_fail(s, rs, IPMI_NET_FN_CHASSIS_RQ, "get chassis status");
	else if (fiid_obj_get(rs, "current_power_state.power_is_on", &on) < 0)
		rc = kiln_fail(KILN_EPROTO, "get chassis status: no power state in the answer");
	else
		rc = on ? 1 : 0;
	fiid_obj_destroy(rs);
	return rc;
}

static int chassis_control(struct sess *s, uint8_t control, const char *what)
{
	fiid_obj_t rs = fiid_obj_create(tmpl_cmd_chassis_control_rs);
	int rc = 0;

	if (!rs)
		return kiln_fail(KILN_ERROR, "out of memory");
	s->sent = 1; /* from here the BMC may act on it, answer or not */
	if (ipmi_cmd_chassis_control(s->ctx, control, rs) < 0)
		rc = cmd_fail(s, rs, IPMI_NET_FN_CHASSIS_RQ, what);
	fiid_obj_destroy(rs);
	return rc;
}

/* Polls until the power state is want (1/0) or deadline passes: 1 reached, 0 not, <0 error. */
static int power_wait(struct sess *s, int want, long deadline)
{
	for (;;) {
		int p = power_read(s);

		if (p < 0)
			return p;
		if (p == want)
			return 1;
		if (now_ms() >= deadline)
			return 0;
		sleep_ms(POLL_MS);
	}
}

static json_t *power_data(int on, const char *action, const char *result)
{
	json_t *data = json_object();

	json_object_set_new(data, "power", json_string(on ? "on" : "off"));
	if (action) {
		json_object_set_new(data, "action", json_string(action));
		json_object_set_new(data, "result", json_string(result));
	}
	return data;
}

static int do_power_get(json_t **out, struct sess *s)
{
	int p = power_read(s);

	if (p < 0)
		return p;
	*out = power_data(p, NULL, NULL);
	return 0;
}

static int do_power_action(json_t **out, struct sess *s, const struct ipmi_job *job)
{
	const char *action = job->action;
	long deadline;
	int before, p, rc;

	before = power_read(s);
	if (before < 0)
		return before;
	if (!before && (strcmp(action, "cycle") == 0 || strcmp(action, "reset") == 0)) {
		if (!job->on_if_off)
			return kiln_fail(KILN_EINVAL, "power %s: the node is off, nothing sent "
				"(on-if-off powers it on)", action);
		action = "on";
	}
	deadline = now_ms() + job->action_timeout_ms;

	if (strcmp(action, "on") == 0 || strcmp(action, "off") == 0 || strcmp(action, "soft") == 0) {
		int want = strcmp(action, "on") == 0;
		uint8_t control = want ? IPMI_CHASSIS_CONTROL_POWER_UP
			: strcmp(action, "off") == 0 ? IPMI_CHASSIS_CONTROL_POWER_DOWN
						     : IPMI_CHASSIS_CONTROL_INITIATE_SOFT_SHUTDOWN;

		/* Already there: nothing sent, the word Redfish uses (docs/API.md's results). */
		if (before == want) {
			*out = power_data(want, job->action, "noop");
			return 0;
		}
		rc = chassis_control(s, control, "chassis control");
		if (rc < 0)
			return rc;
		p = power_wait(s, want, deadline);
		if (p < 0)
			return p;
		if (!p)
			return kiln_fail(KILN_ETIMEOUT, "power %s: still %s after %ld ms", job->action,
					 want ? "off" : "on", job->action_timeout_ms);
		*out = power_data(want, job->action, "ok");
		return 0;
	}
	if (strcmp(action, "reset") == 0) {
		/* A hard reset leaves the power on: the BMC's completion code is the evidence. */
		rc = chassis_control(s, IPMI_CHASSIS_CONTROL_HARD_RESET, "chassis control (reset)");
		if (rc < 0)
			return rc;
		p = power_read(s);
		if (p < 0)
			return p;
		*out = power_data(p, job->action, "acknowledged");
		json_object_set_new(*out, "completion_code", json_integer(0));
		return 0;
	}
	/* cycle: off must be seen, then on again; a BMC too fast to watch is taken at its word */
	rc = chassis_control(s, IPMI_CHASSIS_CONTROL_POWER_CYCLE, "chassis control (cycle)");
	if (rc < 0)
		return rc;
	{
		long off_deadline = now_ms() + CYCLE_OFF_WATCH_MS;

		if (off_deadline > deadline)
			off_deadline = deadline;
		p = power_wait(s, 0, off_deadline);
		if (p < 0)
			return p;
		if (!p) {
			*out = power_data(1, job->action, "acknowledged");
			return 0;
		}
		p = power_wait(s, 1, deadline);
		if (p < 0)
			return p;
		if (!p)
			return kiln_fail(KILN_ETIMEOUT, "power cycle: went off but not back on within %ld ms",
					 job->action_timeout_ms);
		*out = power_data(1, job->action, "ok");
	}
	return 0;
}

static int do_boot_set(json_t **out, struct sess *s, const struct ipmi_job *job)
{
	fiid_obj_t rs = fiid_obj_create(tmpl_cmd_set_system_boot_options_rs);
	uint8_t device;
	int rc = 0;

	if (!rs)
		return kiln_fail(KILN_ERROR, "out of memory");
	if (strcmp(job->boot, "pxe") == 0)
		device = IPMI_SYSTEM_BOOT_OPTION_BOOT_FLAG_BOOT_DEVICE_FORCE_PXE;
	else if (strcmp(job->boot, "cd") == 0)
		device = IPMI_SYSTEM_BOOT_OPTION_BOOT_FLAG_BOOT_DEVICE_FORCE_CD_DVD;
	else if (strcmp(job->boot, "disk") == 0)
		device = IPMI_SYSTEM_BOOT_OPTION_BOOT_FLAG_BOOT_DEVICE_FORCE_HARD_DRIVE;
	else
		device = IPMI_SYSTEM_BOOT_OPTION_BOOT_FLAG_BOOT_DEVICE_FORCE_BIOS_SETUP;

	/*
	 * Set-in-progress is optional in the spec and many BMCs refuse it (0xCC, 0xC1): any
	 * answer from the BMC lets us go on; only a lost session is fatal.
	 */
	fiid_obj_clear(rs);
	if (ipmi_cmd_set_system_boot_options_set_in_progress(
		    s->ctx, IPMI_SYSTEM_BOOT_OPTIONS_PARAMETER_VALID_UNLOCKED,
		    IPMI_SYSTEM_BOOT_OPTION_SET_IN_PROGRESS, rs) < 0 &&
	    completion_code(rs) <= 0) {
		rc = cmd_fail(s, rs, IPMI_NET_FN_CHASSIS_RQ, "set boot options (set in progress)");
		goto cleanup;
	}
	fiid_obj_clear(rs);
	if (ipmi_cmd_set_system_boot_options_boot_flags(
		    s->ctx, IPMI_SYSTEM_BOOT_OPTIONS_PARAMETER_VALID_UNLOCKED,
		    IPMI_SYSTEM_BOOT_OPTION_BOOT_FLAG_BOOT_TYPE_PC_COMPATIBLE,
		    job->persistent ? IPMI_SYSTEM_BOOT_OPTION_BOOT_FLAG_VALID_PERSISTENTLY
				    : IPMI_SYSTEM_BOOT_OPTION_BOOT_FLAG_VALID_FOR_NEXT_BOOT,
		    IPMI_SYSTEM_BOOT_OPTION_BOOT_FLAG_VALID, 0, 0, device, 0, 0,
		    IPMI_SYSTEM_BOOT_OPTION_BOOT_FLAG_CONSOLE_REDIRECTION_DEFAULT, 0, 0, 0,
		    IPMI_SYSTEM_BOOT_OPTION_BOOT_FLAG_FIRMWARE_BIOS_VERBOSITY_DEFAULT, 0,
		    IPMI_SYSTEM_BOOT_OPTION_BOOT_FLAGS_SET_MUX_TO_RECOMENDED_AT_END_OF_POST, 0, 0,
		    rs) < 0) {
		rc = cmd_fail(s, rs, IPMI_NET_FN_CHASSIS_RQ, "set boot flags");
		goto cleanup;
	}
	(void)ipmi_cmd_set_system_boot_options_set_in_progress(
		s->ctx, IPMI_SYSTEM_BOOT_OPTIONS_PARAMETER_VALID_UNLOCKED,
		IPMI_SYSTEM_BOOT_OPTION_SET_COMPLETE, rs);
	*out = json_pack("{s:s, s:b}", "boot", job->boot, "persistent", job->persistent);
cleanup:
	fiid_obj_destroy(rs);
	return rc;
}

/* FRU areas larger than this are not read (a FRU device holds at most 64 KiB; the info areas
 * are a few hundred bytes). */
#define FRU_AREA_MAX 4096
/* The text of one FRU field. */
#define FRU_TEXT_MAX 128

/* What the board and product areas of FRU device 0 say; empty strings where nothing. */
struct fru_info {
	char chassis_serial[FRU_TEXT_MAX];
	char board_manufacturer[FRU_TEXT_MAX];
	char board_product[FRU_TEXT_MAX];
	char board_serial[FRU_TEXT_MAX];
	char board_part_number[FRU_TEXT_MAX];
	char product_manufacturer[FRU_TEXT_MAX];
	char product_name[FRU_TEXT_MAX];
	char product_model[FRU_TEXT_MAX];
	char product_version[FRU_TEXT_MAX];
	char product_serial[FRU_TEXT_MAX];
	int found; /* a board or product area was read */
};

/* Decodes one type/length field into out (left empty when it cannot be decoded). */
static void fru_text(ipmi_fru_ctx_t fctx, const ipmi_fru_field_t *f, uint8_t lang, char *out)
{
	unsigned int len = FRU_TEXT_MAX - 1;

	out[0] = '\0';
	if (f->type_length_field_length == 0)
		return;
	if (ipmi_fru_type_length_field_to_string(fctx, f->type_length_field,
						 f->type_length_field_length, lang, out, &len) < 0) {
		out[0] = '\0';
		return;
	}
	out[len < FRU_TEXT_MAX ? len : FRU_TEXT_MAX - 1] = '\0';
	/* FRU text is often padded with blanks */
	while (len > 0 && (out[len - 1] == ' ' || out[len - 1] == '\0'))
		out[--len] = '\0';
}

static void fru_chassis(ipmi_fru_ctx_t fctx, const uint8_t *buf, unsigned int len,
			struct fru_info *fi)
{
	ipmi_fru_field_t part, serial;
	uint8_t type = 0;

	memset(&part, 0, sizeof(part));
	memset(&serial, 0, sizeof(serial));
	if (ipmi_fru_chassis_info_area(fctx, buf, len, &type, &part, &serial, NULL, 0) < 0)
		return;
	fru_text(fctx, &serial, 0, fi->chassis_serial); /* chassis text has no language code */
	fi->found = 1;
}

static void fru_board(ipmi_fru_ctx_t fctx, const uint8_t *buf, unsigned int len,
		      struct fru_info *fi)
{
	ipmi_fru_field_t mfr, product, serial, part, file_id;
	uint32_t date = 0;
	uint8_t lang = 0;

	memset(&mfr, 0, sizeof(mfr));
	memset(&product, 0, sizeof(product));
	memset(&serial, 0, sizeof(serial));
	memset(&part, 0, sizeof(part));
	memset(&file_id, 0, sizeof(file_id));
	if (ipmi_fru_board_info_area(fctx, buf, len, &lang, &date, &mfr, &product, &serial, &part,
				     &file_id, NULL, 0) < 0)
		return;
	fru_text(fctx, &mfr, lang, fi->board_manufacturer);
	fru_text(fctx, &product, lang, fi->board_product);
	fru_text(fctx, &serial, lang, fi->board_serial);
	fru_text(fctx, &part, lang, fi->board_part_number);
	fi->found = 1;
}

static void fru_product(ipmi_fru_ctx_t fctx, const uint8_t *buf, unsigned int len,
			struct fru_info *fi)
{
	ipmi_fru_field_t mfr, name, model, version, serial, asset, file_id;
	uint8_t lang = 0;

	memset(&mfr, 0, sizeof(mfr));
	memset(&name, 0, sizeof(name));
	memset(&model, 0, sizeof(model));
	memset(&version, 0, sizeof(version));
	memset(&serial, 0, sizeof(serial));
	memset(&asset, 0, sizeof(asset));
	memset(&file_id, 0, sizeof(file_id));
	if (ipmi_fru_product_info_area(fctx, buf, len, &lang, &mfr, &name, &model, &version,
				       &serial, &asset, &file_id, NULL, 0) < 0)
		return;
	fru_text(fctx, &mfr, lang, fi->product_manufacturer);
	fru_text(fctx, &name, lang, fi->product_name);
	fru_text(fctx, &model, lang, fi->product_model);
	fru_text(fctx, &version, lang, fi->product_version);
	fru_text(fctx, &serial, lang, fi->product_serial);
	fi->found = 1;
}

/*
 * Reads the board and product areas of FRU device 0. FRU is optional: a BMC without it (or
 * with areas that do not parse) leaves fi->found 0, which is not an error. The session must
 * still be usable, so only a lost session would show up, in the next command.
 */
static void fru_read(ipmi_ctx_t ctx, struct fru_info *fi)
{
	ipmi_fru_ctx_t fctx = ipmi_fru_ctx_create(ctx);
	uint8_t *buf = NULL;

	memset(fi, 0, sizeof(*fi));
	if (!fctx)
		return;
	buf = malloc(FRU_AREA_MAX);
	if (!buf || ipmi_fru_open_device_id(fctx, 0) < 0)
		goto cleanup;
	do {
		unsigned int type = 0, len = 0;

		if (ipmi_fru_read_data_area(fctx, &type, &len, buf, FRU_AREA_MAX) < 0)
			break;
		if (len == 0)
			continue;
		if (type == IPMI_FRU_AREA_TYPE_CHASSIS_INFO_AREA)
			fru_chassis(fctx, buf, len, fi);
		else if (type == IPMI_FRU_AREA_TYPE_BOARD_INFO_AREA)
			fru_board(fctx, buf, len, fi);
		else if (type == IPMI_FRU_AREA_TYPE_PRODUCT_INFO_AREA)
			fru_product(fctx, buf, len, fi);
	} while (ipmi_fru_next(fctx) == 1);
	ipmi_fru_close_device_id(fctx);
cleanup:
	free(buf);
	ipmi_fru_ctx_destroy(fctx);
}

/* A string for JSON: the first non-empty of a and b, else null. */
static json_t *fru_pick(const char *a, const char *b)
{
	if (a && a[0])
		return json_string(a);
	if (b && b[0])
		return json_string(b);
	return json_null();
}

static json_t *fru_json(const struct fru_info *fi)
{
	json_t *o = json_object();

	json_object_set_new(o, "chassis_serial", fru_pick(fi->chassis_serial, NULL));
	json_object_set_new(o, "board_manufacturer", fru_pick(fi->board_manufacturer, NULL));
	json_object_set_new(o, "board_product", fru_pick(fi->board_product, NULL));
	json_object_set_new(o, "board_serial", fru_pick(fi->board_serial, NULL));
	json_object_set_new(o, "board_part_number", fru_pick(fi->board_part_number, NULL));
	json_object_set_new(o, "product_manufacturer", fru_pick(fi->product_manufacturer, NULL));
	json_object_set_new(o, "product_name", fru_pick(fi->product_name, NULL));
	json_object_set_new(o, "product_part_number", fru_pick(fi->product_model, NULL));
	json_object_set_new(o, "product_version", fru_pick(fi->product_version, NULL));
	json_object_set_new(o, "product_serial", fru_pick(fi->product_serial, NULL));
	return o;
}

/*
 * The system GUID (Get System GUID) as a UUID string, or null: optional, a BMC that does not
 * implement it answers with an error code and the session goes on. The bytes come least
 * significant first (IPMI); written reversed they are the RFC 4122 text. Some BMCs send
 * SMBIOS' order instead: identity.c matches either.
 */
static json_t *system_guid(struct sess *s)
{
	fiid_obj_t rs = fiid_obj_create(tmpl_cmd_get_system_guid_rs);
	uint8_t g[16];
	char text[37];
	json_t *v = json_null();

	if (!rs)
		return v;
	if (ipmi_cmd_get_system_guid(s->ctx, rs) == 0 &&
	    fiid_obj_get_data(rs, "guid", g, sizeof(g)) == (int)sizeof(g)) {
		snprintf(text, sizeof(text),
			 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
			 g[15], g[14], g[13], g[12], g[11], g[10], g[9], g[8], g[7], g[6], g[5],
			 g[4], g[3], g[2], g[1], g[0]);
		json_decref(v);
		v = json_string(text);
	}
	fiid_obj_destroy(rs);
	return v;
}

static int do_inventory(json_t **out, struct sess *s)
{
	fiid_obj_t rs = fiid_obj_create(tmpl_cmd_get_device_id_rs);
	uint64_t mfr = 0, product = 0, major = 0, minor = 0, vmaj = 0, vmin = 0;
	char fw[32], ver[16], mfrname[128];
	struct fru_info fi;
	json_t *data;
	int rc = 0;

	if (!rs)
		return kiln_fail(KILN_ERROR, "out of memory");
	if (ipmi_cmd_get_device_id(s->ctx, rs) < 0) {
		rc = cmd_fail(s, rs, IPMI_NET_FN_APP_RQ, "get device id");
		goto cleanup;
	}
	if (fiid_obj_get(rs, "manufacturer_id.id", &mfr) < 0 ||
	    fiid_obj_get(rs, "product_id", &product) < 0 ||
	    fiid_obj_get(rs, "firmware_revision1.major_revision", &major) < 0 ||
	    fiid_obj_get(rs, "firmware_revision2.minor_revision", &minor) < 0 ||
	    fiid_obj_get(rs, "ipmi_version_major", &vmaj) < 0 ||
	    fiid_obj_get(rs, "ipmi_version_minor", &vmin) < 0) {
		rc = kiln_fail(KILN_EPROTO, "get device id: short answer");
		goto cleanup;
	}
	/* the minor firmware revision is BCD */
	snprintf(fw, sizeof(fw), "%u.%02x", (unsigned)major, (unsigned)minor);
	snprintf(ver, sizeof(ver), "%u.%u", (unsigned)vmaj, (unsigned)vmin);
	if (ipmi_iana_enterprise_numbers_string((uint32_t)mfr, mfrname, sizeof(mfrname)) <= 0)
		snprintf(mfrname, sizeof(mfrname), "IANA %u", (unsigned)mfr);
	/* FRU names the machine; the product area speaks for it before the board's. BIOS
	 * version is not in FRU. */
	fru_read(s->ctx, &fi);
	data = json_object();
	json_object_set_new(data, "manufacturer",
			    fru_pick(fi.product_manufacturer, fi.board_manufacturer[0]
							      ? fi.board_manufacturer : mfrname));
	json_object_set_new(data, "model", fru_pick(fi.product_name, fi.board_product));
	json_object_set_new(data, "serial", fru_pick(fi.product_serial, fi.board_serial));
	json_object_set_new(data, "chassis_serial", fru_pick(fi.chassis_serial, NULL));
	json_object_set_new(data, "uuid", system_guid(s));
	json_object_set_new(data, "part_number",
			    fru_pick(fi.product_model, fi.board_part_number));
	json_object_set_new(data, "bios_version", json_null());
	json_object_set_new(data, "bmc_manufacturer", json_string(mfrname));
	json_object_set_new(data, "fru", fi.found ? fru_json(&fi) : json_null());
	json_object_set_new(data, "bmc_firmware", json_string(fw));
	json_object_set_new(data, "ipmi_version", json_string(ver));
	json_object_set_new(data, "manufacturer_id", json_integer((json_int_t)mfr));
	json_object_set_new(data, "product_id", json_integer((json_int_t)product));
	*out = data;
cleanup:
	fiid_obj_destroy(rs);
	return rc;
}

static int job_dispatch(json_t **out, struct sess *s, const struct ipmi_job *job)
{
	if (strcmp(job->op, "power_get") == 0)
		return do_power_get(out, s);
	if (strcmp(job->op, "power_action") == 0)
		return do_power_action(out, s, job);
	if (strcmp(job->op, "boot_set") == 0)
		return do_boot_set(out, s, job); /* absolute values: sending them twice is harmless */
	if (strcmp(job->op, "inventory") == 0)
		return do_inventory(out, s);
	return kiln_fail(KILN_EINVAL, "unknown operation '%.32s'", job->op);
}

/*
 * Does the failure say that the session is gone (the BMC restarted, timed it out or
 * forgot it)? BMCs mostly drop messages for an unknown session, so the command times
 * out; some answer at the RMCP+ level, or with 0x87/0x88 (invalid session id/handle: no
 * command kiln sends defines these codes for anything else) or 0xD4 (a forgotten session's
 * privilege).
 */
static int session_lost(const struct sess *s)
{
	switch (ipmi_ctx_errnum(s->ctx)) {
	case IPMI_ERR_SESSION_TIMEOUT:
	case IPMI_ERR_MESSAGE_TIMEOUT:
	case IPMI_ERR_CONNECTION_TIMEOUT:
	case IPMI_ERR_BAD_RMCPPLUS_STATUS_CODE:
	case IPMI_ERR_SYSTEM_ERROR:
	case IPMI_ERR_DRIVER_TIMEOUT:
		return 1;
	case IPMI_ERR_BAD_COMPLETION_CODE:
		return s->cc == 0x87 || s->cc == 0x88 || s->cc == 0xD4;
	default:
		return 0;
	}
}

/* May the session serve another job? Only when its last command was answered. */
static int session_reusable(const struct sess *s)
{
	int errnum = ipmi_ctx_errnum(s->ctx);

	return errnum == IPMI_ERR_SUCCESS ||
	       (errnum == IPMI_ERR_BAD_COMPLETION_CODE && !session_lost(s));
}

int ipmi_job_run(json_t **out, const struct ipmi_job *job)
{
	struct sess s = {NULL, 0, -1};
	int reused, rc;

	if (strcmp(job->op, "sensors") == 0)
		return ipmi_monitor_sensors(out, job);
	if (strcmp(job->op, "sel") == 0)
		return ipmi_monitor_sel(out, job);

	s.ctx = ipmi_sessions_take(job);
	reused = s.ctx != NULL;
	if (!reused && (rc = session_open(&s.ctx, job)) < 0)
		return rc;
	rc = job_dispatch(out, &s, job);
	if (rc < 0 && reused && !s.sent && session_lost(&s)) {
		/* the kept session went away while idle: once more on a fresh one */
		ipmi_session_close(s.ctx);
		s.ctx = NULL;
		s.cc = -1;
		kiln_error_clear();
		if ((rc = session_open(&s.ctx, job)) < 0)
			return rc;
		rc = job_dispatch(out, &s, job);
	}
	if (session_reusable(&s))
		ipmi_sessions_put(job, s.ctx);
	else
		ipmi_session_close(s.ctx);
	return rc;
}
