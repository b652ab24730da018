/* SPDX-License-Identifier: Apache-2.0 */
/* kilnd's state dir: created 0700, locked against a second kilnd, holding the key and first token. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "kiln/error.h"
#include "daemon/statedir.h"
#include "store/store.h"

char *statedir_file(const struct statedir *sd, const char *name)
{
	size_t n = strlen(sd->path) + 1 + strlen(name) + 1;
	char *p = malloc(n);

	if (p)
		snprintf(p, n, "%s/%s", sd->path, name);
	return p;
}

static int write_all(int fd, const char *data, size_t len)
{
	while (len > 0) {
		ssize_t w = write(fd, data, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		data += w;
		len -= (size_t)w;
	}
	return 0;
}

/* Creates the directory when absent and refuses anything that is not a private directory. */
static int dir_prepare(const char *path)
{
	struct stat stbuf;

	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return kiln_fail(KILN_ERROR, "cannot create state dir %s: %s", path, strerror(errno));
	if (stat(path, &stbuf) < 0)
		return kiln_fail(KILN_ERROR, "state dir %s: %s", path, strerror(errno));
	if (!S_ISDIR(stbuf.st_mode))
		return kiln_fail(KILN_ERROR, "state dir %s is not a directory", path);
	if (stbuf.st_uid == geteuid() && (stbuf.st_mode & 077) != 0 &&
	    chmod(path, stbuf.st_mode & 0700) < 0)
		return kiln_fail(KILN_ERROR, "cannot make state dir %s private: %s", path,
				 strerror(errno));
	return 0;
}

static int lock_take(int *out_fd, const char *dir, const char *lock_path)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	char pid[32];
	int fd, n;

	fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return kiln_fail(KILN_ERROR, "cannot open %s: %s", lock_path, strerror(errno));
	if (fcntl(fd, F_SETLK, &fl) < 0) {
		int err = errno;

		if (err == EACCES || err == EAGAIN) {
			struct flock who = { .l_type = F_WRLCK, .l_whence = SEEK_SET };

			if (fcntl(fd, F_GETLK, &who) == 0 && who.l_type != F_UNLCK) {
				close(fd);
				return kiln_fail(KILN_EBUSY, "state dir %s is in use by pid %ld", dir,
						 (long)who.l_pid);
			}
			close(fd);
			return kiln_fail(KILN_EBUSY, "state dir %s is in use by another kilnd", dir);
		}
		close(fd);
		return kiln_fail(KILN_ERROR, "cannot lock %s: %s", lock_path, strerror(err));
	}
	/* The pid in the file is for people; the lock itself is what counts. */
	n = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, pid, (size_t)n, 0) != n) {
		int err = errno;

		close(fd);
		return kiln_fail(KILN_ERROR, "cannot write %s: %s", lock_path, strerror(err));
	}
	*out_fd = fd;
	return 0;
}

int statedir_open(struct statedir **out, const char *path)
{
	struct statedir *sd = NULL;
	char *lock_path = NULL, *key_path = NULL;
	int rc;

	sd = calloc(1, sizeof(*sd));
	if (!sd)
		return kiln_fail(KILN_ERROR, "out of memory");
	sd->lock_fd = -1;
	sd->path = strdup(path);
	if (!sd->path) {
		rc = kiln_fail(KILN_ERROR, "out of memory");
		goto cleanup;
	}
	/* "dir/" and "dir" name the same place; keep messages and file names tidy. */
	for (size_t n = strlen(sd->path); n > 1 && sd->path[n - 1] == '/'; n--)
		sd->path[n - 1] = '\0';
	rc = dir_prepare(sd->path);
	if (rc < 0)
		goto cleanup;
	lock_path = statedir_file(sd, "kilnd.lock");
	key_path = statedir_file(sd, "secret.key");
	if (!lock_path || !key_path) {
		rc = kiln_fail(KILN_ERROR, "out of memory");
		goto cleanup;
	}
	rc = lock_take(&sd->lock_fd, sd->path, lock_path);
	if (rc < 0)
		goto cleanup;
	sd->key = secret_key_new();
	if (!sd->key) {
		rc = kiln_fail(KILN_ERROR, "out of memory for the key");
		goto cleanup;
	}
	rc = secret_key_load_or_create(sd->key, key_path, &sd->key_created);
	if (rc < 0)
		goto cleanup;
	*out = sd;
	sd = NULL;
cleanup:
	statedir_close(sd);
	free(lock_path);
	free(key_path);
	return rc;
}

void statedir_close(struct statedir *sd)
{
	if (!sd)
		return;
	secret_key_free(sd->key);
	if (sd->lock_fd >= 0)
		close(sd->lock_fd);
	free(sd->path);
	free(sd);
}

int statedir_write_file(const struct statedir *sd, const char *name, const char *data, size_t len,
			int mode)
{
	char *path = NULL, *tmp = NULL;
	int fd = -1, rc = 0;

	path = statedir_file(sd, name);
	tmp = path ? malloc(strlen(path) + 5) : NULL;
	if (!tmp) {
		rc = kiln_fail(KILN_ERROR, "out of memory");
		goto cleanup;
	}
	snprintf(tmp, strlen(path) + 5, "%s.tmp", path);
	unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, (mode_t)mode);
	if (fd < 0 || write_all(fd, data, len) < 0 || fsync(fd) < 0) {
		rc = kiln_fail(KILN_ERROR, "cannot write %s: %s", tmp, strerror(errno));
		goto cleanup;
	}
	if (close(fd) < 0) {
		fd = -1;
		rc = kiln_fail(KILN_ERROR, "cannot write %s: %s", tmp, strerror(errno));
		goto cleanup;
	}
	fd = -1;
	if (rename(tmp, path) < 0) {
		rc = kiln_fail(KILN_ERROR, "cannot rename %s: %s", tmp, strerror(errno));
		goto cleanup;
	}
cleanup:
	if (fd >= 0)
		close(fd);
	if (rc < 0 && tmp)
		unlink(tmp);
	free(path);
	free(tmp);
	return rc;
}

int statedir_admin_token_ensure(struct statedir *sd, struct store *st, int *out_created)
{
	struct api_token *tokens = NULL;
	size_t ntokens = 0;
	char token[64], *path = NULL;
	char line[sizeof(token) + 1];
	unsigned char hash[32];
	int64_t id;
	int rc, fd = -1, in_tx = 0, file_written = 0;

	*out_created = 0;
	rc = store_token_list(st, &tokens, &ntokens);
	if (rc < 0)
		goto cleanup;
	if (ntokens > 0)
		goto cleanup;
	path = statedir_file(sd, "admin.token");
	if (!path) {
		rc = kiln_fail(KILN_ERROR, "out of memory");
		goto cleanup;
	}
	if (access(path, F_OK) == 0) {
		rc = kiln_fail(KILN_ERROR,
			       "%s exists but the database holds no tokens; remove the file to "
			       "create a new admin token",
			       path);
		goto cleanup;
	}
	rc = secret_token_generate(token);
	if (rc < 0)
		goto cleanup;
	secret_token_hash(hash, token);
	/* The row and the file are written together: the token is only stored if the file is. */
	rc = store_begin(st);
	if (rc < 0)
		goto cleanup;
	in_tx = 1;
	rc = store_token_insert(st, &id, "admin", ROLE_ADMIN, hash);
	if (rc < 0)
		goto cleanup;
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		rc = kiln_fail(KILN_ERROR, "cannot create %s: %s", path, strerror(errno));
		goto cleanup;
	}
	file_written = 1;
	snprintf(line, sizeof(line), "%s\n", token);
	if (write_all(fd, line, strlen(line)) < 0 || fsync(fd) < 0) {
		rc = kiln_fail(KILN_ERROR, "cannot write %s: %s", path, strerror(errno));
		goto cleanup;
	}
	rc = store_commit(st);
	if (rc < 0)
		goto cleanup;
	in_tx = 0;
	*out_created = 1;
cleanup:
	if (fd >= 0)
		close(fd);
	if (in_tx) {
		store_rollback(st);
		if (file_written)
			unlink(path);
	}
	sodium_memzero(token, sizeof(token));
	sodium_memzero(line, sizeof(line));
	for (size_t i = 0; i < ntokens; i++)
		api_token_clear(&tokens[i]);
	free(tokens);
	free(path);
	return rc;
}
