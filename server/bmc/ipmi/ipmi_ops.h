/* SPDX-License-Identifier: Apache-2.0 */
/* The IPMI operations the helper process runs, one job at a time per BMC. */
#ifndef KILN_BMC_IPMI_OPS_H
#define KILN_BMC_IPMI_OPS_H

#include <stdint.h>

#include <jansson.h>

/* One request as the helper sees it; strings are borrowed from the request message. */
struct ipmi_job {
	const char *op; /* power_get, power_action, boot_set, sensors, sel, inventory */
	const char *node;
	const char *host; /* "HOST:PORT" as FreeIPMI takes it */
	const char *user;
	const char *password;
	int cipher;
	int privilege; /* 0 user, 1 operator, 2 admin */
	unsigned int wa_session;
	unsigned int wa_monitoring;
	long timeout_ms;
	long action_timeout_ms;
	const char *action; /* on, off, soft, reset, cycle */
	int on_if_off;
	const char *boot; /* pxe, cd, disk, bios */
	int persistent;
	int64_t sel_since;
	int64_t sel_after_id; /* 0: no mark */
	const char *sdr_dir;
};

/*
 * Runs one job. On success *out holds the result data (the caller decrefs). On failure
 * returns a negative kiln code with the reason in kiln_error_last() (FreeIPMI's message,
 * without the node name; the caller prefixes it).
 */
int ipmi_job_run(json_t **out, const struct ipmi_job *job);

/* Sensors and SEL through libipmimonitoring (ipmi_monitor.c). */
int ipmi_monitor_init(void);
int ipmi_monitor_sensors(json_t **out, const struct ipmi_job *job);
int ipmi_monitor_sel(json_t **out, const struct ipmi_job *job);

#endif
