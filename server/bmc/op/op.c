/* SPDX-License-Identifier: Apache-2.0 */
/* The pure pieces of a BMC operation's answer that more than one reader needs. */
#include <math.h>
#include <string.h>

#include "bmc/op/op.h"

const char *bmc_power_name(enum bmc_power p)
{
	switch (p) {
	case BMC_POWER_ON: return "on";
	case BMC_POWER_OFF: return "off";
	default: return "unknown";
	}
}

static int name_has(const char *name, const char *word)
{
	return name && strcasestr(name, word) != NULL;
}

void bmc_sensors_summary(const json_t *sensors, double *out_power_w, double *out_inlet_c)
{
	json_t *arr = json_object_get(sensors, "sensors"), *o;
	double first_power = NAN, consumed = NAN, inlet = NAN;
	size_t i;

	json_array_foreach(arr, i, o) {
		const char *kind = json_string_value(json_object_get(o, "kind"));
		const char *name = json_string_value(json_object_get(o, "name"));
		json_t *v = json_object_get(o, "value");
		double x;

		if (!kind || !json_is_number(v))
			continue;
		x = json_number_value(v);
		if (strcmp(kind, "power") == 0) {
			/* PowerControl's PowerConsumedWatts is the system's draw; a chassis'
			 * EnvironmentMetrics PowerWatts the next best. */
			if (isnan(consumed) && (name_has(name, "consum") || name_has(name, "system")))
				consumed = x;
			if (isnan(first_power))
				first_power = x;
		} else if (strcmp(kind, "temperature") == 0 &&
			   (name_has(name, "inlet") || name_has(name, "ambient")) &&
			   (isnan(inlet) || x > inlet)) {
			inlet = x;
		}
	}
	*out_power_w = isnan(consumed) ? first_power : consumed;
	*out_inlet_c = inlet;
}
