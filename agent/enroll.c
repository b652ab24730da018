/* SPDX-License-Identifier: Apache-2.0 */
/* Enrollment with a fleet token, and the per-node token kept in the state folder. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "enroll.h"
#include "kiln/error.h"
#include "kiln/json.h"
#include "send.h"

#define ENROLL_TIMEOUT_MS 30000

/* Whether a 400 answer names field as the one it refused. */
static int refused_field(const struct kiln_http_response *resp, const char *field)
{
	json_t *o = NULL;
	int yes;

	if (resp->status != 400 || !resp->body ||
	    kiln_json_parse_object(&o, resp->body, resp->body_len) < 0) {
		kiln_error_clear();
		return 0;
	}
	yes = json_string_value(json_object_get(o, "field")) &&
	      strcmp(json_string_value(json_object_get(o, "field")), field) == 0;
	json_decref(o);
	return yes;
}

int enroll_request(char **node, char **token, long *retry_after_s, struct kiln_servers *servers,
		   const char *enroll_token, const struct kiln_tls_trust *trust,
		   const char *dmi_serial, const char *dmi_uuid, const char *hostname,
		   const char *machine_id)
{
	struct kiln_http_response resp = { 0 };
	json_t *req = NULL, *ans = NULL;
	const char *n = NULL, *t = NULL;
	char *body = NULL;
	int rc;

	*retry_after_s = 0;
	req = json_pack("{s:s,s:s*,s:s*,s:s*,s:s*}", "schema", "kiln.agent.enroll/1", "dmi_serial",
			dmi_serial, "dmi_uuid", dmi_uuid, "hostname", hostname, "machine_id",
			machine_id);
	body = req ? json_dumps(req, JSON_COMPACT) : NULL;
	if (!body) {
		rc = kiln_fail(KILN_ERROR, "out of memory");
		goto cleanup;
	}
	rc = kiln_http_request_any(&resp, servers, "POST", "/api/v1/agent/enroll", enroll_token, body,
				   strlen(body), trust, ENROLL_TIMEOUT_MS, SEND_MAX_ANSWER, NULL);
	if (rc < 0)
		goto cleanup;
	/* a kilnd older than the UUID refuses the field: the same without it */
	if (dmi_uuid && refused_field(&resp, "dmi_uuid")) {
		json_decref(req);
		json_decref(ans);
		kiln_http_response_free(&resp);
		free(body);
		return enroll_request(node, token, retry_after_s, servers, enroll_token, trust,
				      dmi_serial, NULL, hostname, machine_id);
	}
	if (resp.status == 202) {
		rc = kiln_fail(KILN_EBUSY, "enrollment is waiting for an admin (kiln agent pending)");
		goto cleanup;
	}
	if (resp.status == 429 || resp.status == 503) {
		/* kilnd limits enrollments per address (a fleet booting behind one NAT) */
		*retry_after_s = resp.retry_after_s > 0 ? resp.retry_after_s : 5;
		rc = kiln_fail(KILN_EBUSY, "kilnd asks to enroll again in %ld s (HTTP %ld)",
			       *retry_after_s, resp.status);
		goto cleanup;
	}
	if (resp.status == 401 || resp.status == 403) {
		rc = kiln_fail(KILN_EAUTH, "kilnd refused the enrollment token (HTTP %ld)", resp.status);
		goto cleanup;
	}
	if (resp.status != 200 && resp.status != 201) {
		rc = kiln_fail(KILN_ERROR, "enroll: kilnd answered HTTP %ld", resp.status);
		goto cleanup;
	}
	if (kiln_json_parse_object(&ans, resp.body, resp.body_len) < 0 ||
	    kiln_json_get_string(&n, ans, "node", true) < 0 ||
	    kiln_json_get_string(&t, ans, "token", true) < 0) {
		rc = kiln_fail_prefix(KILN_EPROTO, "enroll answer");
		goto cleanup;
	}
	if (!*t) {
		rc = kiln_fail(KILN_EPROTO, "enroll answer: empty token");
		goto cleanup;
	}
	*node = strdup(n);
	*token = strdup(t);
	if (!*node || !*token) {
		free(*node);
		free(*token);
		*node = *token = NULL;
		rc = kiln_fail(KILN_ERROR, "out of memory");
		goto cleanup;
	}
	rc = 0;
cleanup:
	json_decref(req);
	json_decref(ans);
	kiln_http_response_free(&resp);
	free(body);
	return rc;
}

int enroll_token_store(const char *state_dir, const char *token)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	size_t len = strlen(token), off = 0;
	int fd = -1, dfd, rc;

	if (snprintf(path, sizeof path, "%s/" ENROLL_TOKEN_FILE, state_dir) >= (int)sizeof path ||
	    snprintf(tmp, sizeof tmp, "%s/" ENROLL_TOKEN_FILE ".tmp", state_dir) >= (int)sizeof tmp)
		return kiln_fail(KILN_ETOOBIG, "state dir path too long");
	unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return kiln_fail(KILN_ERROR, "%s: %s", tmp, strerror(errno));
	while (off <= len) { /* the token, then a newline */
		const char *p = off < len ? token + off : "\n";
		size_t n = off < len ? len - off : 1;
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			rc = kiln_fail(KILN_ERROR, "%s: %s", tmp, strerror(errno));
			goto fail;
		}
		off += (size_t)w;
	}
	if (fsync(fd) < 0 || close(fd) < 0) {
		fd = -1;
		rc = kiln_fail(KILN_ERROR, "%s: %s", tmp, strerror(errno));
		goto fail;
	}
	fd = -1;
	if (rename(tmp, path) < 0) {
		rc = kiln_fail(KILN_ERROR, "%s: %s", path, strerror(errno));
		goto fail;
	}
	dfd = open(state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	return rc;
}

int enroll_token_load(char **out, const char *state_dir)
{
	char path[PATH_MAX];

	if (snprintf(path, sizeof path, "%s/" ENROLL_TOKEN_FILE, state_dir) >= (int)sizeof path)
		return kiln_fail(KILN_ETOOBIG, "state dir path too long");
	return kiln_token_read_file(out, path);
}

int enroll_token_forget(const char *state_dir)
{
	char path[PATH_MAX];

	if (snprintf(path, sizeof path, "%s/" ENROLL_TOKEN_FILE, state_dir) >= (int)sizeof path)
		return kiln_fail(KILN_ETOOBIG, "state dir path too long");
	if (unlink(path) < 0 && errno != ENOENT)
		return kiln_fail(KILN_ERROR, "%s: %s", path, strerror(errno));
	return 0;
}
