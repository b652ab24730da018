/* SPDX-License-Identifier: Apache-2.0 */
/* kiln-udpcount: a UDP relay in front of one simulated BMC that counts the RMCP+ sessions opened. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kiln/parse.h"

/*
 * Each client address (one libfreeipmi context = one UDP socket) gets its own socket towards
 * the BMC, so that answers go back to the right client. A session is counted once per
 * remote console session id in an RMCP+ Open Session Request (payload type 0x10), so that a
 * retransmitted request is not counted twice.
 */
#define MAX_CLIENTS 256
#define MAX_OPENS 4096
#define DGRAM_MAX 2048

struct client {
	struct sockaddr_in addr;
	int fd; /* towards the BMC */
};

static struct client clients[MAX_CLIENTS];
static int nclients;
static uint32_t opens[MAX_OPENS];
static int nopens;
static long packets;
static const char *drop_file;
static long drop_passed = -1; /* answers let through since drop_file appeared; -1: absent */

/* Should this answer from the BMC be dropped? */
static int answer_dropped(void)
{
	char line[32] = "";
	FILE *f = drop_file ? fopen(drop_file, "re") : NULL;
	int k = 0;

	if (!f) {
		drop_passed = -1;
		return 0;
	}
	if (!fgets(line, sizeof(line), f))
		line[0] = '\0';
	fclose(f);
	line[strcspn(line, "\r\n")] = '\0';
	if (kiln_parse_int(&k, line, 0, 1000000) < 0)
		k = 0;
	if (drop_passed < 0)
		drop_passed = 0;
	if (drop_passed >= k)
		return 1;
	drop_passed++;
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: kiln-udpcount --listen PORT --to PORT --out FILE [--drop-file F]\n"
			"Relays UDP on 127.0.0.1:PORT to 127.0.0.1:TO and keeps FILE at\n"
			"\"opens N\\npackets M\\nclients C\\n\" (RMCP+ sessions opened, datagrams to the BMC,\n"
			"client sockets seen). While F exists and holds a number K, the BMC's answers\n"
			"after the first K since F appeared are dropped (what reaches the BMC still does).\n");
	exit(2);
}

static int udp_socket(int port)
{
	struct sockaddr_in a;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons((uint16_t)port);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Writes the counters to path through a temporary file, so a reader sees whole files. */
static void counts_write(const char *path)
{
	char tmp[4096];
	FILE *f;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return;
	f = fopen(tmp, "we");
	if (!f)
		return;
	fprintf(f, "opens %d\npackets %ld\nclients %d\n", nopens, packets, nclients);
	if (fclose(f) == 0)
		(void)rename(tmp, path);
}

/* Counts an RMCP+ Open Session Request by its remote console session id. */
static void count_open(const unsigned char *p, ssize_t len)
{
	uint32_t sid;

	/* RMCP header (4), auth type 0x06 (RMCP+), payload type, session id (4), sequence (4),
	 * length (2), then the payload: tag, privilege, reserved (2), console session id (4) */
	if (len < 24 || p[0] != 0x06 || p[3] != 0x07 || p[4] != 0x06 || (p[5] & 0x3f) != 0x10)
		return;
	memcpy(&sid, p + 20, sizeof(sid));
	for (int i = 0; i < nopens; i++)
		if (opens[i] == sid)
			return;
	if (nopens < MAX_OPENS)
		opens[nopens++] = sid;
}

static struct client *client_for(const struct sockaddr_in *from)
{
	for (int i = 0; i < nclients; i++)
		if (clients[i].addr.sin_port == from->sin_port &&
		    clients[i].addr.sin_addr.s_addr == from->sin_addr.s_addr)
			return &clients[i];
	if (nclients == MAX_CLIENTS)
		return NULL;
	clients[nclients].fd = udp_socket(0);
	if (clients[nclients].fd < 0)
		return NULL;
	clients[nclients].addr = *from;
	return &clients[nclients++];
}

int main(int argc, char **argv)
{
	int listen_port = -1, to_port = -1, lfd;
	const char *out = NULL;
	struct sockaddr_in bmc;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--listen") == 0 && kiln_parse_int(&listen_port, argv[i + 1], 1, 65535) == 0)
			continue;
		if (strcmp(argv[i], "--to") == 0 && kiln_parse_int(&to_port, argv[i + 1], 1, 65535) == 0)
			continue;
		if (strcmp(argv[i], "--out") == 0) {
			out = argv[i + 1];
			continue;
		}
		if (strcmp(argv[i], "--drop-file") == 0) {
			drop_file = argv[i + 1];
			continue;
		}
		usage();
	}
	if (listen_port < 0 || to_port < 0 || !out || argc != (drop_file ? 9 : 7))
		usage();
	signal(SIGPIPE, SIG_IGN);
	lfd = udp_socket(listen_port);
	if (lfd < 0) {
		fprintf(stderr, "kiln-udpcount: cannot bind 127.0.0.1:%d: %s\n", listen_port,
			strerror(errno));
		return 1;
	}
	memset(&bmc, 0, sizeof(bmc));
	bmc.sin_family = AF_INET;
	bmc.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	bmc.sin_port = htons((uint16_t)to_port);
	counts_write(out);
	for (;;) {
		struct pollfd pfd[MAX_CLIENTS + 1];
		unsigned char buf[DGRAM_MAX];
		int polled = nclients; /* a client added below has no entry in pfd yet */

		pfd[0].fd = lfd;
		pfd[0].events = POLLIN;
		for (int i = 0; i < nclients; i++) {
			pfd[i + 1].fd = clients[i].fd;
			pfd[i + 1].events = POLLIN;
		}
		if (poll(pfd, (nfds_t)polled + 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			return 1;
		}
		if (pfd[0].revents & POLLIN) {
			struct sockaddr_in from;
			socklen_t flen = sizeof(from);
			ssize_t n = recvfrom(lfd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &flen);
			struct client *c = n > 0 ? client_for(&from) : NULL;

			if (c) {
				packets++;
				count_open(buf, n);
				(void)sendto(c->fd, buf, (size_t)n, 0, (struct sockaddr *)&bmc, sizeof(bmc));
				counts_write(out);
			}
		}
		for (int i = 0; i < polled; i++) {
			ssize_t n;

			if (!(pfd[i + 1].revents & POLLIN))
				continue;
			n = recv(clients[i].fd, buf, sizeof(buf), 0);
			if (n > 0 && !answer_dropped())
				(void)sendto(lfd, buf, (size_t)n, 0, (struct sockaddr *)&clients[i].addr,
					     sizeof(clients[i].addr));
		}
	}
}
