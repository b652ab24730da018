/* SPDX-License-Identifier: Apache-2.0 */
/* kiln-serialsim: the serial side of a simulated BMC, for SOL tests. ipmi_sim's
 * `sol "tcp:127.0.0.1:PORT"` connects here as a TCP client. Bytes appended to the --tx
 * file are sent to the BMC (the node "prints" them); bytes the BMC sends (typed into the
 * console) are appended to the --rx file. Output printed while no BMC is connected is
 * lost, as on a real serial line. With --prompt TEXT it also answers like a getty: what
 * is typed is echoed, and each line typed gets a new line and TEXT (the demo lab's
 * "gpu10 login: "). Stops on SIGTERM. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "kiln/parse.h"

/* ipmi_sim may hold more than one connection; each gets the output and is read. */
#define MAX_CONN 8

static int listen_on(int port)
{
	struct sockaddr_in a;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons((unsigned short)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 4) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static off_t tx_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? st.st_size : 0;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Answers n typed bytes on fd as a getty would: the bytes echoed, each CR (or a LF not
 * after a CR) a new line and the prompt. *cr carries "the last byte was a CR" from one read
 * to the next. A BMC gone meanwhile is noticed by the next read. */
static void getty_answer(int fd, const char *in, size_t n, const char *prompt, int *cr)
{
	size_t from = 0;

	for (size_t i = 0; i < n; i++) {
		int eol = in[i] == '\r' || (in[i] == '\n' && !*cr);

		*cr = in[i] == '\r';
		if (!eol && in[i] != '\n')
			continue;
		(void)write_all(fd, in + from, i - from); /* the echo up to here */
		from = i + 1;
		if (eol && (write_all(fd, "\r\n", 2) < 0 || write_all(fd, prompt, strlen(prompt)) < 0))
			return;
	}
	(void)write_all(fd, in + from, n - from);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "rx", required_argument, NULL, 'r' },
		{ "tx", required_argument, NULL, 't' },
		{ "prompt", required_argument, NULL, 'P' },
		{ NULL, 0, NULL, 0 },
	};
	const char *rx_path = NULL, *tx_path = NULL, *prompt = NULL;
	int cr = 0;
	int64_t port = 0;
	struct {
		int fd;
		off_t sent;
	} conns[MAX_CONN];
	int c, lfd, rx;

	for (c = 0; c < MAX_CONN; c++)
		conns[c].fd = -1;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 'p' && kiln_parse_int64(&port, optarg, 1, 65535) == 0)
			continue;
		if (c == 'r') {
			rx_path = optarg;
			continue;
		}
		if (c == 't') {
			tx_path = optarg;
			continue;
		}
		if (c == 'P') {
			prompt = optarg;
			continue;
		}
		fprintf(stderr, "usage: kiln-serialsim --port PORT --rx FILE --tx FILE [--prompt TEXT]\n");
		return 2;
	}
	if (!port || !rx_path || !tx_path) {
		fprintf(stderr, "usage: kiln-serialsim --port PORT --rx FILE --tx FILE [--prompt TEXT]\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	rx = open(rx_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	lfd = listen_on((int)port);
	if (rx < 0 || lfd < 0) {
		fprintf(stderr, "kiln-serialsim: %s: %s\n", rx < 0 ? rx_path : "listen", strerror(errno));
		return 1;
	}
	for (;;) {
		struct pollfd p[1 + MAX_CONN];
		struct stat st;
		char buf[4096];
		int i;

		p[0].fd = lfd;
		p[0].events = POLLIN;
		for (i = 0; i < MAX_CONN; i++) {
			p[1 + i].fd = conns[i].fd;
			p[1 + i].events = POLLIN;
			p[1 + i].revents = 0;
		}
		if (poll(p, 1 + MAX_CONN, 50) < 0 && errno != EINTR)
			return 1;
		if (p[0].revents & POLLIN) {
			int nfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

			for (i = 0; nfd >= 0 && i < MAX_CONN; i++) {
				if (conns[i].fd < 0) {
					conns[i].fd = nfd;
					conns[i].sent = tx_size(tx_path); /* only what is printed from now on */
					nfd = -1;
					fprintf(stderr, "kiln-serialsim: BMC connected\n");
				}
			}
			if (nfd >= 0)
				close(nfd);
		}
		for (i = 0; i < MAX_CONN; i++) {
			if (conns[i].fd < 0 || !(p[1 + i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			ssize_t r = read(conns[i].fd, buf, sizeof(buf));

			if (r > 0) {
				if (write_all(rx, buf, (size_t)r) < 0)
					return 1;
				if (prompt)
					getty_answer(conns[i].fd, buf, (size_t)r, prompt, &cr);
			} else if (r == 0 || errno != EINTR) {
				close(conns[i].fd);
				conns[i].fd = -1;
				fprintf(stderr, "kiln-serialsim: BMC disconnected\n");
			}
		}
		/* new bytes in the tx file go to every connection ipmi_sim holds */
		if (stat(tx_path, &st) < 0)
			continue;
		for (i = 0; i < MAX_CONN; i++) {
			int tfd;
			ssize_t r;

			if (conns[i].fd < 0 || st.st_size <= conns[i].sent)
				continue;
			tfd = open(tx_path, O_RDONLY | O_CLOEXEC);
			if (tfd < 0)
				continue;
			r = pread(tfd, buf, sizeof(buf), conns[i].sent);
			if (r > 0 && write_all(conns[i].fd, buf, (size_t)r) == 0)
				conns[i].sent += r;
			close(tfd);
		}
	}
}
