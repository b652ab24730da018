/* SPDX-License-Identifier: Apache-2.0 */
/* Per-node IPMI options: FreeIPMI workaround names and privilege levels, parsed into flags. */
#include "bmc/ipmi/ipmi_options.h"

#include <string.h>

#include <freeipmi/freeipmi.h>
#include <ipmi_monitoring.h>
#include <ipmiconsole.h>

#include "kiln/error.h"

static const struct {
	const char *name;
	unsigned int session;
	unsigned int monitoring;
	unsigned int console;
} workaround_table[] = {
	{"authcap", IPMI_WORKAROUND_FLAGS_OUTOFBAND_2_0_AUTHENTICATION_CAPABILITIES,
	 IPMI_MONITORING_WORKAROUND_FLAGS_PROTOCOL_VERSION_2_0_AUTHENTICATION_CAPABILITIES,
	 IPMICONSOLE_WORKAROUND_AUTHENTICATION_CAPABILITIES},
	{"intel20", IPMI_WORKAROUND_FLAGS_OUTOFBAND_2_0_INTEL_2_0_SESSION,
	 IPMI_MONITORING_WORKAROUND_FLAGS_PROTOCOL_VERSION_2_0_INTEL_2_0_SESSION,
	 IPMICONSOLE_WORKAROUND_INTEL_2_0_SESSION},
	{"supermicro20", IPMI_WORKAROUND_FLAGS_OUTOFBAND_2_0_SUPERMICRO_2_0_SESSION,
	 IPMI_MONITORING_WORKAROUND_FLAGS_PROTOCOL_VERSION_2_0_SUPERMICRO_2_0_SESSION,
	 IPMICONSOLE_WORKAROUND_SUPERMICRO_2_0_SESSION},
	{"sun20", IPMI_WORKAROUND_FLAGS_OUTOFBAND_2_0_SUN_2_0_SESSION,
	 IPMI_MONITORING_WORKAROUND_FLAGS_PROTOCOL_VERSION_2_0_SUN_2_0_SESSION,
	 IPMICONSOLE_WORKAROUND_SUN_2_0_SESSION},
	{"opensesspriv", IPMI_WORKAROUND_FLAGS_OUTOFBAND_2_0_OPEN_SESSION_PRIVILEGE,
	 IPMI_MONITORING_WORKAROUND_FLAGS_PROTOCOL_VERSION_2_0_OPEN_SESSION_PRIVILEGE,
	 IPMICONSOLE_WORKAROUND_OPEN_SESSION_PRIVILEGE},
	{"integritycheckvalue", IPMI_WORKAROUND_FLAGS_OUTOFBAND_2_0_NON_EMPTY_INTEGRITY_CHECK_VALUE,
	 IPMI_MONITORING_WORKAROUND_FLAGS_PROTOCOL_VERSION_2_0_NON_EMPTY_INTEGRITY_CHECK_VALUE,
	 IPMICONSOLE_WORKAROUND_NON_EMPTY_INTEGRITY_CHECK_VALUE},
	{"nochecksumcheck", IPMI_WORKAROUND_FLAGS_OUTOFBAND_2_0_NO_CHECKSUM_CHECK,
	 IPMI_MONITORING_WORKAROUND_FLAGS_PROTOCOL_VERSION_2_0_NO_CHECKSUM_CHECK,
	 IPMICONSOLE_WORKAROUND_NO_CHECKSUM_CHECK},
	{"solpayloadsize", 0, 0, IPMICONSOLE_WORKAROUND_IGNORE_SOL_PAYLOAD_SIZE},
	{"solport", 0, 0, IPMICONSOLE_WORKAROUND_IGNORE_SOL_PORT},
	{"solstatus", 0, 0, IPMICONSOLE_WORKAROUND_SKIP_SOL_ACTIVATION_STATUS},
	{"solchannelsupport", 0, 0, IPMICONSOLE_WORKAROUND_SKIP_CHANNEL_PAYLOAD_SUPPORT},
	{"serialalertsdeferred", 0, 0, IPMICONSOLE_WORKAROUND_SERIAL_ALERTS_DEFERRED},
	{"solpacketseq", 0, 0, IPMICONSOLE_WORKAROUND_INCREMENT_SOL_PACKET_SEQUENCE},
	/* IPMI 1.5 only: valid FreeIPMI names, nothing to do over IPMI 2.0 */
	{"idzero", 0, 0, 0},
	{"unexpectedauth", 0, 0, 0},
	{"forcepermsg", 0, 0, 0},
	{"endianseq", 0, 0, 0},
	{"noauthcodecheck", 0, 0, 0},
};

int ipmi_workarounds_parse(struct ipmi_workarounds *out, const char *list)
{
	struct ipmi_workarounds w = {0, 0, 0};
	const char *p = list ? list : "";

	while (*p) {
		size_t len = strcspn(p, ",");
		size_t i;
		int found = 0;

		if (len == 0) {
			p++;
			continue;
		}
		for (i = 0; i < sizeof(workaround_table) / sizeof(workaround_table[0]); i++) {
			if (strlen(workaround_table[i].name) == len &&
			    strncmp(workaround_table[i].name, p, len) == 0) {
				w.session |= workaround_table[i].session;
				w.monitoring |= workaround_table[i].monitoring;
				w.console |= workaround_table[i].console;
				found = 1;
				break;
			}
		}
		if (!found)
			return kiln_fail(KILN_EINVAL, "ipmi_workarounds: unknown FreeIPMI workaround '%.*s'",
					 (int)(len > 64 ? 64 : len), p);
		p += len;
	}
	*out = w;
	return 0;
}

int ipmi_privilege_parse(int *out, const char *name)
{
	if (!name || !*name || strcmp(name, "admin") == 0)
		*out = 2;
	else if (strcmp(name, "operator") == 0)
		*out = 1;
	else if (strcmp(name, "user") == 0)
		*out = 0;
	else
		return kiln_fail(KILN_EINVAL,
				 "ipmi_privilege: '%.32s' is not one of user, operator, admin", name);
	return 0;
}
