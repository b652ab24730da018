/* SPDX-License-Identifier: Apache-2.0 */
/* What says a node's boot began, as BMCs say it (the poller notes the moment; the hung rule
 * waits for the boot to end): the BMC's BootProgress state, and its log's lines. */
#include <string.h>
#include <strings.h>

#include "health/health.h"

int health_boot_state_booting(const char *state)
{
	static const char *const booting[] = {
		"PrimaryProcessorInitializationStarted", "BusInitializationStarted",
		"MemoryInitializationStarted", "SecondaryProcessorInitializationStarted",
		"PCIResourceConfigStarted", "SystemHardwareInitializationComplete", "SetupEntered",
		"OSBootStarted",
	};

	for (size_t i = 0; state && i < sizeof(booting) / sizeof(booting[0]); i++)
		if (strcmp(state, booting[i]) == 0)
			return 1;
	return 0;
}

int health_boot_log_line(const char *message)
{
	/* IPMI's System Boot Initiated sensor as FreeIPMI words it; iDRAC's SYS1000/SYS1003 and
	 * its BIOS's boot; iLO's IML/IEL. Not iLO's "Server power removed." nor a boot that
	 * ended ("OS Boot ... completed"). */
	static const char *const begun[] = {
		"System Boot Initiated", "Initiated by power up", "Initiated by hard reset",
		"Initiated by warm reset", "System Restart", "System CPU Resetting",
		"System is turning on", "BIOS System Boot", "initiated a warm reset",
		"The system warm reset", "Server reset.", "Host server reset by",
		"Server power restored",
	};

	for (size_t i = 0; message && i < sizeof(begun) / sizeof(begun[0]); i++)
		if (strcasestr(message, begun[i]))
			return 1;
	return 0;
}
