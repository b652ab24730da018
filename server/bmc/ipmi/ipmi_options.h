/* SPDX-License-Identifier: Apache-2.0 */
/* Per-node IPMI options: FreeIPMI workaround names and privilege levels, parsed into flags. */
#ifndef KILN_BMC_IPMI_OPTIONS_H
#define KILN_BMC_IPMI_OPTIONS_H

/* The flags one workaround list turns on, for each FreeIPMI library. */
struct ipmi_workarounds {
	unsigned int session;    /* IPMI_WORKAROUND_FLAGS_OUTOFBAND_2_0_* (libfreeipmi) */
	unsigned int monitoring; /* IPMI_MONITORING_WORKAROUND_FLAGS_PROTOCOL_VERSION_2_0_* */
	unsigned int console;    /* IPMICONSOLE_WORKAROUND_* (libipmiconsole, SOL) */
};

/*
 * Parses a comma-separated list of FreeIPMI workaround names as the FreeIPMI tools spell
 * them (-W): authcap, intel20, supermicro20, sun20, opensesspriv, integritycheckvalue,
 * nochecksumcheck, solpayloadsize, solport, solstatus, solchannelsupport,
 * serialalertsdeferred, solpacketseq; the IPMI 1.5 names idzero, unexpectedauth,
 * forcepermsg, endianseq, noauthcodecheck are accepted and have no effect on IPMI 2.0.
 * NULL or "" is no workaround. KILN_EINVAL naming the first unknown name.
 */
int ipmi_workarounds_parse(struct ipmi_workarounds *out, const char *list);

/* "user", "operator" or "admin" (NULL or "": admin) -> 0, 1, 2; KILN_EINVAL otherwise. */
int ipmi_privilege_parse(int *out, const char *name);

#endif
