/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer harness: the Redfish driver's parsers of BMC answers (power, sensors in the
 * legacy and newer schemas, log entries, inventory, reset types, profiles, error text),
 * reached through the parse budget as the driver reaches them. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bmc/redfish/budget.h"
#include "bmc/redfish/internal.h"
#include "kiln/error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *j, *out, *meta, *seen, *inv, *allowed;
	const char *const resets[] = { "ForceRestart", "PowerCycle", "GracefulRestart", NULL };
	json_error_t err;
	char text[400];
	size_t cost = 0, i;

	j = rf_json_load((const char *)data, size, &cost, &err);
	if (!j)
		return 0;
	out = json_array();
	seen = json_object();
	meta = json_object();
	inv = json_object();
	rf_sensors_from_thermal(out, j);
	rf_sensors_from_power(out, j);
	rf_sensors_from_thermal_metrics(out, j);
	rf_sensors_from_fan(out, j);
	rf_sensors_from_power_supply(out, j);
	rf_sensors_from_power_subsystem(out, j);
	rf_sensors_from_environment(out, j, "chassis");
	rf_sensors_from_sensor(out, j);
	{
		struct rf_log_ids ids = { json_object(), json_object(), seen,
					  { "/redfish/v1/Systems/1", NULL }, NULL, 0, 0, NULL };
		size_t dups = 0;
		long xid;
		int sxid;

		rf_log_entries_append(out, meta, &ids, j, "/redfish/v1/Systems/1/LogServices/SEL", 0,
				      &dups);
		rf_log_entries_append(out, NULL, &ids, j, NULL, 1700000000, NULL);
		(void)rf_log_xid_parse(json_string_value(json_object_get(j, "Message")), &xid, &sxid);
		json_decref(ids.labels);
		json_decref(ids.taken);
	}
	/* the sensors so far, merged: still objects with a name */
	{
		json_t *merged = rf_sensors_merge(out);

		json_decref(merged);
	}
	rf_inventory_from_system(inv, j);
	allowed = rf_reset_allowed_parse(j);
	(void)rf_reset_pick(allowed, resets);
	json_decref(allowed);
	(void)rf_profile_detect(j, j);
	(void)rf_device_is_gpu(j);
	(void)rf_power_parse(json_string_value(json_object_get(j, "PowerState")));
	(void)rf_time_parse(json_string_value(json_object_get(j, "Created")));
	(void)rf_link(j, "Systems");
	rf_error_text(text, sizeof(text), j);
	/* every sensor the parsers made is an object with a name */
	for (i = 0; i < json_array_size(out); i++)
		if (!json_is_object(json_array_get(out, i)))
			abort();
	json_decref(out);
	json_decref(seen);
	json_decref(meta);
	json_decref(inv);
	json_decref(j);
	rf_json_release(cost);
	kiln_error_clear();
	return 0;
}
