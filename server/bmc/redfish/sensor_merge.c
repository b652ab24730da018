/* SPDX-License-Identifier: Apache-2.0 */
/* One line per physical reading: the views a BMC gives of one sensor (a legacy Thermal or
 * Power member, a ThermalMetrics excerpt, the Sensor resource, the same again from a
 * contained chassis) merged into one. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bmc/redfish/internal.h"

/*
 * The identity of a reading (the "_uri" and "_names" that sensors.c sets):
 *
 * 1. A reading that is a Sensor resource or an excerpt of one (ThermalMetrics' and a Fan's
 *    DataSourceUri, EnvironmentMetrics', a legacy member's own DataSourceUri) is that
 *    resource: every reading with the same URI (rf_path_key) is one.
 * 2. A legacy Thermal or Power member that names no Sensor (the DGX's Chassis/DGX/Thermal
 *    beside CPUBaseboard's ThermalMetrics and PDB's Sensors) is the resource-backed reading
 *    of the same kind whose Name, Id, DeviceName or URI's last segment is its Name (case
 *    aside), where that is the only one: a name that several members of one view share
 *    (iLO's PSUs, all "HpeServerPowerSupply"), or that legacy members of two views give,
 *    tells no sensor and merges nothing.
 * 3. Readings of distinct sensors that share a name stay apart, renamed "NAME #2", "NAME #3"
 *    in the order read, so that stored readings keep apart.
 *
 * Of the readings merged the first read stays (its name and value: the system's own chassis
 * are read first); what it lacks (a value, a health, thresholds) comes from the others.
 */

struct merge_item {
	json_t *s;
	int dropped;
	int matched;                           /* a legacy reading took it (rule 2) */
};

static void key_lower(char *out, size_t n, const char *kind, const char *name)
{
	size_t len;

	snprintf(out, n, "%s\n%s", kind ? kind : "", name ? name : "");
	len = strlen(out);
	for (size_t i = 0; i < len; i++)
		out[i] = (char)tolower((unsigned char)out[i]);
}

/* Fills what into lacks (a missing or null member) from other's members. */
static void fill_from(json_t *into, const json_t *other)
{
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)other, k, v) {
		json_t *have = json_object_get(into, k);

		if (k[0] == '_' || json_is_null(v))
			continue;
		if (!have || json_is_null(have))
			json_object_set(into, k, v);
	}
}

/* Merges b into a (keeping the earlier of the two). */
static void merge_pair(struct merge_item *a, struct merge_item *b)
{
	struct merge_item *keep = a < b ? a : b, *drop = a < b ? b : a;

	fill_from(keep->s, drop->s);
	drop->dropped = 1;
}

static const char *str(const json_t *s, const char *key)
{
	return json_string_value(json_object_get(s, key));
}

/* The last segment of a URI, into out. */
static void last_segment(char *out, size_t n, const char *uri)
{
	size_t len = strcspn(uri, "#"), start;

	while (len > 1 && uri[len - 1] == '/')
		len--;
	start = len;
	while (start > 0 && uri[start - 1] != '/')
		start--;
	snprintf(out, n, "%.*s", (int)(len - start), uri + start);
}

/* Rule 2: a legacy reading whose (kind, name) is told by one legacy reading only, to the
 * resource-backed reading that goes by that name. */
static void merge_by_name(struct merge_item *it, size_t n)
{
	json_t *legacy = json_object(); /* key -> index, or -1 when ambiguous */
	char key[600], seg[300];

	for (size_t i = 0; i < n; i++) {
		const json_t *s = it[i].s;

		if (it[i].dropped || str(s, "_uri"))
			continue;
		key_lower(key, sizeof(key), str(s, "kind"), str(s, "name"));
		json_object_set_new(legacy, key,
				    json_integer(json_object_get(legacy, key) ? -1 : (json_int_t)i));
	}
	for (size_t j = 0; j < n; j++) {
		const json_t *s = it[j].s;
		const char *uri = str(s, "_uri"), *kind = str(s, "kind");
		const char *names[8];
		size_t nn = 0, k;
		json_t *alias;

		if (it[j].dropped || !uri)
			continue;
		last_segment(seg, sizeof(seg), uri);
		names[nn++] = str(s, "name");
		names[nn++] = seg;
		json_array_foreach(json_object_get(s, "_names"), k, alias)
			if (nn < sizeof(names) / sizeof(names[0]))
				names[nn++] = json_string_value(alias);
		for (k = 0; k < nn && !it[j].matched; k++) {
			json_int_t i;

			if (!names[k])
				continue;
			key_lower(key, sizeof(key), kind, names[k]);
			i = json_integer_value(json_object_get(legacy, key));
			if (!json_object_get(legacy, key) || i < 0 || it[i].dropped || it[i].matched)
				continue;
			it[i].matched = it[j].matched = 1;
			merge_pair(&it[i], &it[j]);
		}
	}
	json_decref(legacy);
}

json_t *rf_sensors_merge(const json_t *sensors)
{
	size_t n = json_array_size(sensors), i;
	struct merge_item *it = calloc(n ? n : 1, sizeof(*it));
	json_t *by_uri = json_object(), *out = json_array(), *count = json_object();
	char key[1024];

	if (!it || !by_uri || !out || !count) {
		free(it);
		json_decref(by_uri);
		json_decref(out);
		json_decref(count);
		return NULL;
	}
	for (i = 0; i < n; i++)
		it[i].s = json_deep_copy(json_array_get(sensors, i));
	/* rule 1: one resource, one reading */
	for (i = 0; i < n; i++) {
		const char *uri = str(it[i].s, "_uri");
		json_t *first;

		if (!uri)
			continue;
		rf_path_key(key, sizeof(key), uri);
		first = json_object_get(by_uri, key);
		if (first)
			merge_pair(&it[json_integer_value(first)], &it[i]);
		else
			json_object_set_new(by_uri, key, json_integer((json_int_t)i));
	}
	merge_by_name(it, n);
	/* rule 3, and the internal members dropped */
	for (i = 0; i < n; i++) {
		json_t *s = it[i].s;
		const char *name = str(s, "name");
		json_int_t seen;

		if (it[i].dropped || !json_is_object(s)) {
			json_decref(s);
			continue;
		}
		json_object_del(s, "_uri");
		json_object_del(s, "_names");
		if (!name) {
			json_decref(s);
			continue;
		}
		seen = json_integer_value(json_object_get(count, name)) + 1;
		json_object_set_new(count, name, json_integer(seen));
		if (seen > 1) {
			char renamed[300];

			snprintf(renamed, sizeof(renamed), "%s #%lld", name, (long long)seen);
			json_object_set_new(s, "name", json_string(renamed));
		}
		json_array_append_new(out, s);
	}
	free(it);
	json_decref(by_uri);
	json_decref(count);
	return out;
}
