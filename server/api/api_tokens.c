/* SPDX-License-Identifier: Apache-2.0 */
/* /api/v1/tokens: create (the bare token shown once, its hash stored), list, revoke. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "api/handlers.h"
#include "kiln/error.h"
#include "kiln/json.h"
#include "kiln/parse.h"

#define TOKEN_NAME_MAX 64

static int token_name_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > TOKEN_NAME_MAX)
		return 0;
	for (const char *p = s; *p; p++) {
		char ch = *p;

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-' || ch == '@'))
			return 0;
	}
	return 1;
}

static void tokens_free(struct api_token *t, size_t n)
{
	for (size_t i = 0; i < n; i++)
		api_token_clear(&t[i]);
	free(t);
}

void api_tokens_create(struct api_ctx *c)
{
	static const char *const keys[] = { "role", "name", NULL };
	const char *role_text = NULL, *name = NULL, *field = NULL;
	char token[64];
	unsigned char hash[32];
	int64_t id = 0, audit_id;
	int role, rc;
	json_t *o;

	if (!api_body_require(c))
		return;
	if (kiln_json_check_keys(c->body, keys, &field) < 0) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, field, "unknown field '%s'", field);
		return;
	}
	if (kiln_json_get_string(&role_text, c->body, "role", true) < 0 ||
	    !(role = api_role_parse(role_text))) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, "role",
			 "field 'role' must be \"viewer\", \"operator\", \"admin\" or \"metrics\"");
		return;
	}
	if (kiln_json_get_string(&name, c->body, "name", false) < 0 ||
	    (name && !token_name_valid(name))) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, "name",
			 "field 'name' must be 1 to %d characters of [A-Za-z0-9._@-]",
			 TOKEN_NAME_MAX);
		return;
	}
	if (!name)
		name = role_text;
	rc = secret_token_generate(token);
	if (rc < 0) {
		api_fail_code(c, rc, NULL);
		return;
	}
	secret_token_hash(hash, token);
	if (api_audit_begin(c, &audit_id, "token.create", name,
			    json_pack("{s:s}", "role", role_text)) < 0)
		goto cleanup;
	rc = store_token_insert(c->st, &id, name, (enum token_role)role, hash);
	api_audit_finish(c, audit_id, rc);
	if (rc < 0) {
		api_fail_code(c, rc, rc == KILN_EEXISTS ? "name" : NULL);
		goto cleanup;
	}
	o = json_pack("{s:I, s:s, s:s, s:s, s:I}", "id", (json_int_t)id, "token", token, "name",
		      name, "role", role_text, "created_at", (json_int_t)time(NULL));
	api_reply(c, MHD_HTTP_CREATED, o);
cleanup:
	sodium_memzero(token, sizeof(token));
}

void api_tokens_list(struct api_ctx *c)
{
	struct api_token *t = NULL;
	size_t n = 0;
	json_t *arr;
	int rc;

	rc = store_token_list(c->st, &t, &n);
	if (rc < 0) {
		api_fail_code(c, rc, NULL);
		return;
	}
	arr = json_array();
	for (size_t i = 0; arr && i < n; i++)
		json_array_append_new(
			arr, json_pack("{s:I, s:s?, s:s, s:I, s:I, s:b}", "id", (json_int_t)t[i].id,
				       "name", t[i].name, "role", api_role_name((int)t[i].role),
				       "created_at", (json_int_t)t[i].created_at, "last_used_at",
				       (json_int_t)t[i].last_used_at, "revoked", t[i].revoked));
	tokens_free(t, n);
	api_reply(c, MHD_HTTP_OK, arr);
}

void api_token_revoke(struct api_ctx *c)
{
	struct api_token *t = NULL;
	const struct api_token *victim = NULL;
	size_t n = 0, live_admins = 0;
	int64_t id, audit_id;
	int rc;

	if (kiln_parse_int64(&id, c->param, 1, INT64_MAX) < 0) {
		api_fail(c, MHD_HTTP_BAD_REQUEST, "id", "token id must be a positive integer");
		return;
	}
	rc = store_token_list(c->st, &t, &n);
	if (rc < 0) {
		api_fail_code(c, rc, NULL);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		if (t[i].id == id)
			victim = &t[i];
		if (!t[i].revoked && t[i].role == ROLE_ADMIN)
			live_admins++;
	}
	if (!victim || victim->revoked) {
		api_fail(c, MHD_HTTP_NOT_FOUND, "id", "no live token %lld", (long long)id);
		goto cleanup;
	}
	/* Revoking the last admin token would leave nobody able to make tokens. */
	if (victim->role == ROLE_ADMIN && live_admins <= 1) {
		api_fail(c, MHD_HTTP_CONFLICT, "id",
			 "token %lld is the last admin token; create another admin token first",
			 (long long)id);
		goto cleanup;
	}
	{
		char target[32];

		snprintf(target, sizeof(target), "%lld", (long long)id);
		if (api_audit_begin(c, &audit_id, "token.revoke", target,
				    json_pack("{s:s?}", "name", victim->name)) < 0)
			goto cleanup;
	}
	rc = store_token_revoke(c->st, id);
	api_audit_finish(c, audit_id, rc);
	if (rc < 0) {
		api_fail_code(c, rc, "id");
		goto cleanup;
	}
	api_reply(c, MHD_HTTP_OK, json_pack("{s:I, s:b}", "id", (json_int_t)id, "revoked", 1));
cleanup:
	tokens_free(t, n);
}
