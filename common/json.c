/* SPDX-License-Identifier: Apache-2.0 */
/* jansson helpers: typed, bounded field access with errors that name the field. */
#include <math.h>
#include <string.h>

#include "kiln/error.h"
#include "kiln/json.h"

/* Looks up key; 1 when present, 0 when absent and optional, KILN_EINVAL otherwise. */
static int field_get(json_t **out, json_t *obj, const char *key, bool required)
{
	json_t *v;

	if (!json_is_object(obj))
		return kiln_fail(KILN_EINVAL, "expected a JSON object");
	v = json_object_get(obj, key);
	if (!v)
		return required ? kiln_fail(KILN_EINVAL, "field '%s' is required", key) : 0;
	*out = v;
	return 1;
}

int kiln_json_get_string(const char **out, json_t *obj, const char *key, bool required)
{
	json_t *v = NULL;
	int rc = field_get(&v, obj, key, required);

	if (rc <= 0)
		return rc;
	if (!json_is_string(v))
		return kiln_fail(KILN_EINVAL, "field '%s' must be a string", key);
	if (strlen(json_string_value(v)) != json_string_length(v))
		return kiln_fail(KILN_EINVAL, "field '%s' must not contain NUL characters", key);
	*out = json_string_value(v);
	return 0;
}

int kiln_json_get_int(int64_t *out, json_t *obj, const char *key, int64_t min, int64_t max,
		      bool required)
{
	json_t *v = NULL;
	json_int_t i;
	int rc = field_get(&v, obj, key, required);

	if (rc <= 0)
		return rc;
	if (!json_is_integer(v))
		return kiln_fail(KILN_EINVAL, "field '%s' must be an integer", key);
	i = json_integer_value(v);
	if (i < min || i > max)
		return kiln_fail(KILN_EINVAL, "field '%s': %lld is out of range [%lld, %lld]", key,
				 (long long)i, (long long)min, (long long)max);
	*out = (int64_t)i;
	return 0;
}

int kiln_json_get_bool(bool *out, json_t *obj, const char *key, bool required)
{
	json_t *v = NULL;
	int rc = field_get(&v, obj, key, required);

	if (rc <= 0)
		return rc;
	if (!json_is_boolean(v))
		return kiln_fail(KILN_EINVAL, "field '%s' must be true or false", key);
	*out = json_is_true(v);
	return 0;
}

int kiln_json_get_double(double *out, json_t *obj, const char *key, bool required)
{
	json_t *v = NULL;
	int rc = field_get(&v, obj, key, required);

	if (rc <= 0)
		return rc;
	if (!json_is_number(v) || !isfinite(json_number_value(v)))
		return kiln_fail(KILN_EINVAL, "field '%s' must be a number", key);
	*out = json_number_value(v);
	return 0;
}

int kiln_json_parse_object(json_t **out, const char *text, size_t len)
{
	json_error_t err;
	json_t *v;

	if (!text)
		return kiln_fail(KILN_EINVAL, "empty body, expected a JSON object");
	v = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
	if (!v)
		return kiln_fail(KILN_EINVAL, "invalid JSON at line %d, column %d: %s", err.line,
				 err.column, err.text);
	if (!json_is_object(v)) {
		json_decref(v);
		return kiln_fail(KILN_EINVAL, "expected a JSON object");
	}
	*out = v;
	return 0;
}

int kiln_json_check_keys(json_t *obj, const char *const *allowed, const char **bad_key)
{
	const char *key;
	json_t *v;

	if (!json_is_object(obj))
		return kiln_fail(KILN_EINVAL, "expected a JSON object");
	json_object_foreach(obj, key, v) {
		size_t i;

		(void)v;
		for (i = 0; allowed[i]; i++) {
			if (strcmp(allowed[i], key) == 0)
				break;
		}
		if (!allowed[i]) {
			if (bad_key)
				*bad_key = key;
			return kiln_fail(KILN_EINVAL, "unknown field '%s'", key);
		}
	}
	return 0;
}

void kiln_json_wipe_string(json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);

	if (json_is_string(v))
		explicit_bzero((char *)json_string_value(v), json_string_length(v));
}

char *kiln_json_dumps(const json_t *v)
{
	return json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
}
