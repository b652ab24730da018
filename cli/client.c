/* SPDX-License-Identifier: Apache-2.0 */
/* kilnd API client for the CLI: resolves where and how to connect, then one JSON request (its
 * list answers object by object when kilnd streams them). */
#include <errno.h>
#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <kiln/buf.h>
#include <kiln/config.h>
#include <kiln/error.h>
#include <kiln/http.h>
#include <kiln/parse.h>

#include "client.h"

#define DEFAULT_URL "http://127.0.0.1:8470"

struct cli_conf {
	char *url;
	char *token_file;
	char *ca;
	char *fingerprint;
	int confirm_above;
};

static const struct kiln_cfg_key conf_keys[] = {
	{ .section = "", .name = "url", .type = KILN_CFG_STRING,
	  .offset = offsetof(struct cli_conf, url), .help = "kilnd's address" },
	{ .section = "", .name = "token_file", .type = KILN_CFG_STRING,
	  .offset = offsetof(struct cli_conf, token_file), .help = "file holding the API token" },
	{ .section = "", .name = "ca", .type = KILN_CFG_STRING,
	  .offset = offsetof(struct cli_conf, ca), .help = "CA file for kilnd's HTTPS certificate" },
	{ .section = "", .name = "fingerprint", .type = KILN_CFG_STRING,
	  .offset = offsetof(struct cli_conf, fingerprint),
	  .help = "SHA-256 fingerprint of kilnd's certificate (several kilnd: comma-separated, any one matches)" },
	{ .section = "", .name = "confirm_above", .type = KILN_CFG_INT,
	  .offset = offsetof(struct cli_conf, confirm_above), .min = -1, .max = 1000000,
	  .def = "-1",
	  .help = "actions on more nodes than this ask to type the count (-1: the CLI's default)" },
};
#define CONF_NKEYS (sizeof(conf_keys) / sizeof(conf_keys[0]))

void cli_conf_keys_list(FILE *f)
{
	for (size_t i = 0; i < CONF_NKEYS; i++) {
		fprintf(f, "conf\t%s\t", conf_keys[i].name);
		cli_list_field(f, conf_keys[i].help, '\n');
	}
}

void cli_ctx_free(struct cli_ctx *ctx)
{
	if (!ctx)
		return;
	free(ctx->base_url);
	kiln_servers_free(&ctx->servers);
	if (ctx->token) {
		explicit_bzero(ctx->token, strlen(ctx->token));
		free(ctx->token);
	}
	free(ctx->ca_file);
	free(ctx->tls_fingerprint);
	ctx->base_url = ctx->token = ctx->ca_file = ctx->tls_fingerprint = NULL;
	ctx->opened = false;
}

/* The config file's path, or NULL when there is no home to look in. Caller frees. */
static char *conf_path(void)
{
	const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
	struct kiln_buf b;

	kiln_buf_init(&b, 4096);
	if (xdg && *xdg) {
		if (kiln_buf_printf(&b, "%s/kiln/cli.conf", xdg) < 0)
			goto fail;
	} else if (home && *home) {
		if (kiln_buf_printf(&b, "%s/.config/kiln/cli.conf", home) < 0)
			goto fail;
	}
	return kiln_buf_steal(&b);
fail:
	kiln_buf_free(&b);
	return NULL;
}

/* "~/x" -> "$HOME/x"; anything else copied. Caller frees. */
static char *path_expand(const char *p)
{
	const char *home = getenv("HOME");
	struct kiln_buf b;

	kiln_buf_init(&b, 4096);
	if (p[0] == '~' && p[1] == '/' && home) {
		if (kiln_buf_printf(&b, "%s%s", home, p + 1) < 0)
			goto fail;
	} else if (kiln_buf_puts(&b, p) < 0) {
		goto fail;
	}
	return kiln_buf_steal(&b);
fail:
	kiln_buf_free(&b);
	return NULL;
}

static const char *first(const char *a, const char *b, const char *c)
{
	if (a && *a)
		return a;
	if (b && *b)
		return b;
	return c && *c ? c : NULL;
}

/* Points base_url at the current server: its URL with /api/v1. */
static int base_url_set(struct cli_ctx *ctx)
{
	const char *url = kiln_servers_current(&ctx->servers);
	size_t len = strlen(url);
	struct kiln_buf b;

	free(ctx->base_url);
	ctx->base_url = NULL;
	kiln_buf_init(&b, 4096);
	if (kiln_buf_append(&b, url, len) < 0 || kiln_buf_puts(&b, "/api/v1") < 0)
		goto fail;
	ctx->base_url = kiln_buf_steal(&b);
	if (ctx->base_url)
		return 0;
fail:
	kiln_buf_free(&b);
	return kiln_fail(KILN_ERROR, "out of memory");
}

static int url_set(struct cli_ctx *ctx, const char *list)
{
	int rc = kiln_servers_parse(&ctx->servers, list, "server URL");

	return rc < 0 ? rc : base_url_set(ctx);
}

static int conf_load(struct cli_conf *conf, char **path_out)
{
	struct stat st;
	char *path = conf_path();
	int rc;

	rc = kiln_config_defaults(conf, conf_keys, CONF_NKEYS);
	if (rc < 0 || !path)
		goto cleanup;
	if (stat(path, &st) < 0 && errno == ENOENT)
		goto cleanup;
	rc = kiln_config_load(conf, conf_keys, CONF_NKEYS, path);
cleanup:
	*path_out = path;
	return rc;
}

int cli_client_open(struct cli_ctx *ctx)
{
	struct cli_conf conf = { 0 };
	const char *url, *token_file, *ca, *fp, *env_token = getenv("KILN_TOKEN");
	char *path = NULL, *tf = NULL;
	int rc;

	if (ctx->opened)
		return 0;
	rc = conf_load(&conf, &path);
	if (rc < 0)
		goto cleanup;
	url = first(ctx->url, getenv("KILN_URL"), conf.url);
	rc = url_set(ctx, url ? url : DEFAULT_URL);
	if (rc < 0)
		goto cleanup;

	/* Which of two tokens in the environment was meant cannot be guessed: one silently
	 * losing ran a viewer's command as admin. */
	if (!ctx->token_file && env_token && *env_token && first(getenv("KILN_TOKEN_FILE"), NULL,
								  NULL)) {
		rc = kiln_fail(CLI_EUSAGE, "both KILN_TOKEN and KILN_TOKEN_FILE are set: unset one "
			       "(or name the file with --token-file)");
		goto cleanup;
	}
	token_file = first(ctx->token_file, getenv("KILN_TOKEN_FILE"), NULL);
	if (!token_file && env_token && *env_token) {
		ctx->token = strdup(env_token);
		if (!ctx->token) {
			rc = kiln_fail(KILN_ERROR, "out of memory");
			goto cleanup;
		}
	} else {
		if (!token_file && conf.token_file && *conf.token_file)
			token_file = tf = path_expand(conf.token_file);
		if (!token_file) {
			rc = kiln_fail(KILN_EAUTH, "no API token: use --token-file, KILN_TOKEN_FILE, "
					"KILN_TOKEN or token_file in %s", path ? path : "cli.conf");
			goto cleanup;
		}
		rc = kiln_token_read_file(&ctx->token, token_file);
		if (rc < 0)
			goto cleanup;
	}

	ca = first(ctx->ca, getenv("KILN_CA"), conf.ca);
	fp = first(ctx->fingerprint, getenv("KILN_FINGERPRINT"), conf.fingerprint);
	if ((ca && !(ctx->ca_file = path_expand(ca))) || (fp && !(ctx->tls_fingerprint = strdup(fp)))) {
		rc = kiln_fail(KILN_ERROR, "out of memory");
		goto cleanup;
	}
	ctx->trust.ca_file = ctx->ca_file;
	ctx->trust.fingerprint = ctx->tls_fingerprint;
	/* With nothing pinned, an https:// kilnd must have a certificate the system trusts. */
	ctx->trust.system_ca = !ca && !fp;
	ctx->confirm_above = conf.confirm_above;
	ctx->opened = true;
cleanup:
	if (rc < 0)
		cli_ctx_free(ctx);
	kiln_config_free(&conf, conf_keys, CONF_NKEYS);
	free(path);
	free(tf);
	return rc;
}

char *cli_url_escape(const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	struct kiln_buf b;

	kiln_buf_init(&b, 0);
	if (kiln_buf_puts(&b, "") < 0)
		return NULL;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		char enc[3] = { '%', hex[c >> 4], hex[c & 15] };
		int rc;

		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '.' || c == '_' || c == '~')
			rc = kiln_buf_append(&b, s, 1);
		else
			rc = kiln_buf_append(&b, enc, 3);
		if (rc < 0) {
			kiln_buf_free(&b);
			return NULL;
		}
	}
	return kiln_buf_steal(&b);
}

static int status_code(long status)
{
	switch (status) {
	case 400: return KILN_EINVAL;
	case 401: return KILN_EAUTH;
	case 403: return KILN_EPERM;
	case 404: return KILN_ENOTFOUND;
	case 409: return KILN_EEXISTS;
	case 413: return KILN_ETOOBIG;
	default: return KILN_ERROR;
	}
}

int cli_answer_code(long status, const json_t *err)
{
	const char *field = json_string_value(json_object_get(err, "field"));

	/* kilnd refused what the command line asked for (a malformed range, an unknown policy
	 * key, a bad field value), or the range names nodes that do not exist: the user's to
	 * fix, and nothing was done. */
	if (status == 400 || (status == 404 && (json_is_array(json_object_get(err, "unknown")) ||
						(field && strcmp(field, "range") == 0))))
		return CLI_EUSAGE;
	return status_code(status);
}

/* Turns an error answer into the code and the one-line message; hands the object over. */
static int api_fail(json_t **api_error, const struct kiln_http_response *resp)
{
	json_t *err = NULL, *msg, *field;
	int code;

	if (resp->body_len)
		err = json_loadb(resp->body, resp->body_len, 0, NULL);
	code = cli_answer_code(resp->status, err);
	msg = json_object_get(err, "error");
	field = json_object_get(err, "field");
	if (json_is_string(msg) && json_is_string(field))
		kiln_fail(code, "%s (field %s)", json_string_value(msg), json_string_value(field));
	else if (json_is_string(msg))
		kiln_fail(code, "%s", json_string_value(msg));
	else
		kiln_fail(code, "kilnd answered HTTP %ld", resp->status);
	if (api_error && json_is_object(err))
		*api_error = json_incref(err);
	json_decref(err);
	return code;
}

/*
 * A request that got no answer: the message says what to do about it, with curl's words
 * after. The URL is the server's as the user gave it (without /api/v1).
 */
static int no_answer(const struct cli_ctx *ctx, int rc, enum kiln_http_failure failure)
{
	char why[400];
	const char *url = ctx->base_url;
	int len = (int)strlen(url) - 7; /* "/api/v1" */
	int https = strncmp(url, "https://", 8) == 0;

	snprintf(why, sizeof(why), "%s", kiln_error_last());
	switch (failure) {
	case KILN_HTTP_CONNECT:
		if (ctx->servers.count > 1) {
			char all[600];

			kiln_servers_describe(&ctx->servers, all, sizeof(all));
			return kiln_fail(rc, "cannot reach kilnd at any of %s: are they running? "
					 "set KILN_URL or --url (%s)", all, why);
		}
		return kiln_fail(rc, "cannot reach kilnd at %.*s: is it running? set KILN_URL or "
				 "--url (%s)", len, url, why);
	case KILN_HTTP_UNTRUSTED:
		return kiln_fail(rc, "kilnd at %.*s has a certificate this machine does not trust: "
				 "pin it with --fingerprint SHA256 (kilnd logs 'TLS certificate "
				 "SHA-256 fingerprint ...' when it starts: journalctl -u kilnd) or "
				 "trust a CA with --ca FILE (a self-signed kilnd's is STATE_DIR/tls.crt); "
				 "both also in cli.conf (%s)", len, url, why);
	case KILN_HTTP_TLS_HANDSHAKE:
		if (https)
			return kiln_fail(rc, "kilnd at %.*s does not speak https there: a kilnd "
					 "listening on loopback without a certificate serves plain "
					 "http:// (%s)", len, url, why);
		break;
	case KILN_HTTP_NOT_HTTP:
		if (!https)
			return kiln_fail(rc, "kilnd at %.*s does not answer plain http: a kilnd "
					 "off loopback serves https only; use https://%.*s (%s)",
					 len, url, len - 7, url + 7, why);
		break;
	case KILN_HTTP_ANSWERED:
		break;
	}
	return rc;
}

/* The "owner_url" of a 421 answer's JSON body (several kilnd: what is asked is on the node's
 * owner), as a new string; NULL when none. */
static char *owner_url_of(const char *body, size_t len)
{
	json_t *o = json_loadb(body ? body : "", len, 0, NULL);
	const char *url = json_string_value(json_object_get(o, "owner_url"));
	char *copy = url && *url ? strdup(url) : NULL;

	json_decref(o);
	return copy;
}

/* A 421 answer (several kilnd: the node's console is on its owner): the same request once
 * more, to the owner_url it names. 0 when nothing was to be followed. */
static int follow_owner(struct kiln_http_response *resp, struct cli_ctx *ctx, const char *method,
			const char *path, const char *text)
{
	struct kiln_servers owner = { 0 };
	char *url = resp->status == 421 ? owner_url_of(resp->body, resp->body_len) : NULL;
	int rc;

	if (!url)
		return 0;
	rc = kiln_servers_parse(&owner, url, "the owner's URL");
	free(url);
	if (rc < 0)
		return rc;
	kiln_http_response_free(resp);
	memset(resp, 0, sizeof(*resp));
	rc = kiln_http_request_any(resp, &owner, method, path, ctx->token, text,
				   text ? strlen(text) : 0, &ctx->trust, CLI_REQUEST_TIMEOUT_MS,
				   CLI_MAX_RESPONSE, NULL);
	kiln_servers_free(&owner);
	return rc;
}

/* One request to <base>/api/v1<path>, buffered or line by line: what cli_api and
 * cli_api_stream share. The HTTP status is left to the caller. */
static int call(struct kiln_http_response *resp, struct cli_ctx *ctx, const char *method,
		const char *path, const json_t *body, const struct kiln_http_lines *lines)
{
	struct kiln_buf url;
	char *text = NULL;
	int rc;

	memset(resp, 0, sizeof(*resp));
	kiln_buf_init(&url, 0);
	rc = cli_client_open(ctx);
	if (rc < 0)
		goto cleanup;
	rc = kiln_buf_printf(&url, "/api/v1%s", path);
	if (rc < 0)
		goto cleanup;
	if (body && !(text = json_dumps(body, JSON_COMPACT))) {
		rc = kiln_fail(KILN_ERROR, "out of memory");
		goto cleanup;
	}
	rc = kiln_http_request_any(resp, &ctx->servers, method, url.data, ctx->token, text,
				   text ? strlen(text) : 0, &ctx->trust, CLI_REQUEST_TIMEOUT_MS,
				   CLI_MAX_RESPONSE, lines);
	if (base_url_set(ctx) < 0) /* the server that answered stays current */
		rc = KILN_ERROR;
	if (rc == 0 && !lines)
		rc = follow_owner(resp, ctx, method, url.data, text);
	if (rc < 0)
		rc = no_answer(ctx, rc, resp->failure);
cleanup:
	if (text) {
		/* The body may hold a BMC password. */
		explicit_bzero(text, strlen(text));
		free(text);
	}
	kiln_buf_free(&url);
	return rc;
}

static int is_2xx(long status)
{
	return status >= 200 && status <= 299;
}

int cli_api(json_t **out, json_t **api_error, struct cli_ctx *ctx, const char *method,
	    const char *path, const json_t *body)
{
	struct kiln_http_response resp = { 0 };
	json_t *v = NULL;
	json_error_t jerr;
	int rc;

	rc = call(&resp, ctx, method, path, body, NULL);
	if (rc < 0)
		goto cleanup;
	if (!is_2xx(resp.status)) {
		rc = api_fail(api_error, &resp);
		goto cleanup;
	}
	if (resp.body_len) {
		v = json_loadb(resp.body, resp.body_len, JSON_DECODE_ANY, &jerr);
		if (!v) {
			rc = kiln_fail(KILN_EPROTO, "kilnd sent invalid JSON: %s (line %d)", jerr.text,
				       jerr.line);
			goto cleanup;
		}
	}
	*out = v;
cleanup:
	kiln_http_response_free(&resp);
	return rc;
}

/* Longest NDJSON line the CLI takes: one node's object (a big event log fits). */
#define STREAM_MAX_LINE (8u << 20)

struct stream_state {
	const struct cli_stream *s;
	const char *path;
	size_t lines;
};

static int stream_start(void *ud, const struct kiln_http_head *head)
{
	struct stream_state *st = ud;
	int64_t n = 0;

	/* only the progress line uses it: a missing or odd count is "unknown", not an error */
	if (!head->header || kiln_parse_int64(&n, head->header, 0, INT64_MAX) < 0)
		n = 0;
	if (st->s->total)
		st->s->total(st->s->ud, (size_t)n);
	return 0;
}

static int stream_line(void *ud, const char *line, size_t len)
{
	struct stream_state *st = ud;
	json_error_t jerr;
	json_t *obj;
	int rc;

	st->lines++;
	obj = json_loadb(line, len, 0, &jerr);
	if (!json_is_object(obj)) {
		json_decref(obj);
		return kiln_fail(KILN_EPROTO, "kilnd's answer to %s: line %zu is not a JSON object%s%s",
				 st->path, st->lines, obj ? "" : ": ", obj ? "" : jerr.text);
	}
	rc = st->s->object(st->s->ud, obj);
	json_decref(obj);
	return rc;
}

/* A kilnd that answered one JSON array: its elements, one by one. */
static int stream_array(const struct cli_stream *s, const char *path,
			const struct kiln_http_response *resp)
{
	json_error_t jerr;
	json_t *arr, *e;
	size_t i;
	int rc = 0;

	arr = json_loadb(resp->body, resp->body_len, 0, &jerr);
	if (!json_is_array(arr)) {
		json_decref(arr);
		return kiln_fail(KILN_EPROTO, "kilnd's answer to %s is not an array%s%s", path,
				 arr ? "" : ": ", arr ? "" : jerr.text);
	}
	if (s->total)
		s->total(s->ud, json_array_size(arr));
	json_array_foreach(arr, i, e) {
		if (!json_is_object(e)) {
			rc = kiln_fail(KILN_EPROTO, "kilnd's answer to %s: element %zu is not an object",
				       path, i);
			break;
		}
		if ((rc = s->object(s->ud, e)) < 0)
			break;
	}
	json_decref(arr);
	return rc;
}

int cli_api_stream(json_t **api_error, struct cli_ctx *ctx, const char *method, const char *path,
		   const json_t *body, const struct cli_stream *s)
{
	struct stream_state st = { .s = s, .path = path };
	const struct kiln_http_lines lines = { .accept = "application/x-ndjson",
					       .header = "X-Kiln-Nodes", .max_line = STREAM_MAX_LINE,
					       .start = stream_start, .line = stream_line, .ud = &st };
	struct kiln_http_response resp = { 0 };
	int rc;

	rc = call(&resp, ctx, method, path, body, &lines);
	if (rc < 0)
		goto cleanup;
	if (!is_2xx(resp.status))
		rc = api_fail(api_error, &resp);
	else if (resp.body_len) /* not streamed: an older kilnd's JSON array */
		rc = stream_array(s, path, &resp);
cleanup:
	kiln_http_response_free(&resp);
	return rc;
}
