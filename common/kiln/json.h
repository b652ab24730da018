/* SPDX-License-Identifier: Apache-2.0 */
/* jansson helpers: typed field access that names the field on error. */
#ifndef KILN_JSON_H
#define KILN_JSON_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

/*
 * Each getter reads obj[key]. When the key is missing: required -> KILN_EINVAL
 * ("field 'key' is required"), otherwise 0 with *out untouched. A wrong type or a value
 * out of bounds -> KILN_EINVAL naming the field. Strings are borrowed from obj.
 */
int kiln_json_get_string(const char **out, json_t *obj, const char *key, bool required);
int kiln_json_get_int(int64_t *out, json_t *obj, const char *key, int64_t min, int64_t max,
		      bool required);
int kiln_json_get_bool(bool *out, json_t *obj, const char *key, bool required);
int kiln_json_get_double(double *out, json_t *obj, const char *key, bool required);

/* Parses text (len bytes, not necessarily terminated) as a JSON object; KILN_EINVAL with
 * jansson's message, line and column otherwise. */
int kiln_json_parse_object(json_t **out, const char *text, size_t len);

/* Rejects keys of obj not in the NULL-terminated allowed list: "unknown field 'x'". */
int kiln_json_check_keys(json_t *obj, const char *const *allowed, const char **bad_key);

/* Overwrites the bytes of obj's string member key with zeros (a password before the value
 * is released); nothing when there is no such string. */
void kiln_json_wipe_string(json_t *obj, const char *key);

/* Dumps compactly; caller frees. */
char *kiln_json_dumps(const json_t *v);

#endif
