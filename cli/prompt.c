/* SPDX-License-Identifier: Apache-2.0 */
/* Terminal prompts and secret files for the CLI; secrets never travel through argv. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include <kiln/error.h>

#include "prompt.h"

static int tty_fd = -1;
static struct termios tty_saved;

static void restore_and_reraise(int sig)
{
	if (tty_fd >= 0)
		tcsetattr(tty_fd, TCSAFLUSH, &tty_saved);
	signal(sig, SIG_DFL);
	raise(sig);
}

static int tty_open(void)
{
	int fd = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);

	if (fd < 0)
		return kiln_fail(KILN_ENOTFOUND, "no terminal to ask on");
	if (!isatty(fd)) {
		close(fd);
		return kiln_fail(KILN_ENOTFOUND, "no terminal to ask on");
	}
	return fd;
}

static void write_all(int fd, const char *s)
{
	size_t len = strlen(s);

	while (len > 0) {
		ssize_t n = write(fd, s, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		s += n;
		len -= (size_t)n;
	}
}

/* Reads one line from fd into buf (size len, terminated), without the line end. */
static int line_read(char *buf, size_t len, int fd)
{
	size_t used = 0;
	char c;

	for (;;) {
		ssize_t n = read(fd, &c, 1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return kiln_fail(KILN_ERROR, "read: %s", strerror(errno));
		if (n == 0 || c == '\n')
			break;
		if (used + 1 >= len)
			return kiln_fail(KILN_EINVAL, "answer longer than %zu bytes", len - 1);
		buf[used++] = c;
	}
	if (used > 0 && buf[used - 1] == '\r')
		used--;
	buf[used] = '\0';
	return 0;
}

int prompt_secret(char **out, const char *prompt)
{
	struct sigaction sa = { 0 }, old_int, old_term;
	struct termios noecho;
	char buf[PROMPT_SECRET_MAX + 1];
	int fd, rc;

	fd = tty_open();
	if (fd < 0)
		return fd;
	if (tcgetattr(fd, &tty_saved) < 0) {
		close(fd);
		return kiln_fail(KILN_ENOTFOUND, "no terminal to ask on");
	}
	tty_fd = fd;
	sa.sa_handler = restore_and_reraise;
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	noecho = tty_saved;
	noecho.c_lflag &= ~(tcflag_t)(ECHO | ECHONL);
	noecho.c_lflag |= ICANON;
	/* Echo goes off before the prompt is shown: flushing after it would drop a reply
	 * typed quickly (and a script answering at once would then wait forever). */
	if (tcsetattr(fd, TCSAFLUSH, &noecho) < 0) {
		rc = kiln_fail(KILN_ERROR, "cannot turn off echo: %s", strerror(errno));
		goto cleanup;
	}
	write_all(fd, prompt);
	rc = line_read(buf, sizeof(buf), fd);
	tcsetattr(fd, TCSANOW, &tty_saved);
	write_all(fd, "\n");
	if (rc < 0)
		goto cleanup;
	if (!buf[0]) {
		rc = kiln_fail(KILN_EINVAL, "empty password");
		goto cleanup;
	}
	*out = strdup(buf);
	if (!*out)
		rc = kiln_fail(KILN_ERROR, "out of memory");
cleanup:
	explicit_bzero(buf, sizeof(buf));
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	tty_fd = -1;
	close(fd);
	return rc;
}

int prompt_confirm(const char *question)
{
	char buf[64];
	int fd, rc;

	fd = tty_open();
	if (fd < 0)
		return fd;
	write_all(fd, question);
	write_all(fd, " [y/N] ");
	rc = line_read(buf, sizeof(buf), fd);
	close(fd);
	if (rc < 0)
		return 0;
	return strcmp(buf, "y") == 0 || strcmp(buf, "Y") == 0 || strcmp(buf, "yes") == 0;
}

int secret_read_file(char **out, const char *path)
{
	char buf[PROMPT_SECRET_MAX + 2];
	size_t used = 0, len;
	int fd, rc = 0;

	if (strcmp(path, "-") == 0)
		fd = STDIN_FILENO;
	else
		fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return kiln_fail(KILN_ERROR, "%s: %s", path, strerror(errno));
	while (used < sizeof(buf) - 1) {
		ssize_t n = read(fd, buf + used, sizeof(buf) - 1 - used);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = kiln_fail(KILN_ERROR, "%s: %s", path, strerror(errno));
			goto cleanup;
		}
		if (n == 0)
			break;
		used += (size_t)n;
		if (memchr(buf, '\n', used))
			break;
	}
	buf[used] = '\0';
	len = strcspn(buf, "\n");
	if (len > 0 && buf[len - 1] == '\r')
		len--;
	buf[len] = '\0';
	if (len > PROMPT_SECRET_MAX) {
		rc = kiln_fail(KILN_EINVAL, "%s: longer than %d bytes", path, PROMPT_SECRET_MAX);
		goto cleanup;
	}
	if (len == 0) {
		rc = kiln_fail(KILN_EINVAL, "%s: empty", path);
		goto cleanup;
	}
	*out = strdup(buf);
	if (!*out)
		rc = kiln_fail(KILN_ERROR, "out of memory");
cleanup:
	explicit_bzero(buf, sizeof(buf));
	if (fd != STDIN_FILENO)
		close(fd);
	return rc;
}

void secret_free(char *s)
{
	if (!s)
		return;
	explicit_bzero(s, strlen(s));
	free(s);
}
