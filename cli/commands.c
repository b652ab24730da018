/* SPDX-License-Identifier: Apache-2.0 */
/* The table of kiln's commands: a new command is one cmd_<name>.c and one line here. */
#include <stddef.h>

#include "cli.h"

const struct cli_cmd *const cli_commands[] = {
	&cmd_status,
	&cmd_node,
	&cmd_token,
	&cmd_audit,
	&cmd_report,
	&cmd_agent,
	&cmd_gpus,
	&cmd_power,
	&cmd_boot,
	&cmd_media,
	&cmd_sensors,
	&cmd_sel,
	&cmd_inventory,
	&cmd_events,
	&cmd_image,
	&cmd_reinstall,
	&cmd_jobs,
	&cmd_cluster,
	&cmd_console,
	&cmd_completion,
	NULL,
};
