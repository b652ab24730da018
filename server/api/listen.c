/* SPDX-License-Identifier: Apache-2.0 */
/* The REST API's listening socket: parsing ADDR:PORT, binding it, and the URL clients use. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "api/api.h"
#include "kiln/error.h"
#include "kiln/parse.h"

int api_listen_parse(struct api_listen *out, const char *text)
{
	struct api_listen l;
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV };
	struct addrinfo *res = NULL;
	char host[64];
	const char *port_text;
	size_t hlen;
	int e;

	memset(&l, 0, sizeof(l));
	if (text[0] == '[') {
		const char *close = strchr(text, ']');

		if (!close || close[1] != ':')
			return kiln_fail(KILN_EINVAL, "listen '%s': expected [ADDR6]:PORT", text);
		hlen = (size_t)(close - text - 1);
		if (hlen == 0 || hlen >= sizeof(host))
			return kiln_fail(KILN_EINVAL, "listen '%s': bad IPv6 address", text);
		memcpy(host, text + 1, hlen);
		port_text = close + 2;
	} else {
		const char *colon = strrchr(text, ':');

		if (!colon || strchr(text, ':') != colon)
			return kiln_fail(KILN_EINVAL, "listen '%s': expected ADDR:PORT or [ADDR6]:PORT",
					 text);
		hlen = (size_t)(colon - text);
		if (hlen == 0 || hlen >= sizeof(host))
			return kiln_fail(KILN_EINVAL, "listen '%s': missing address", text);
		memcpy(host, text, hlen);
		port_text = colon + 1;
	}
	host[hlen] = '\0';
	if (kiln_parse_int(&l.port, port_text, 0, 65535) < 0)
		return kiln_fail(KILN_EINVAL, "listen '%s': the port must be 0 to 65535", text);
	/* Names other than localhost would tie kilnd's address to a resolver: numbers only. */
	if (strcmp(host, "localhost") == 0)
		kiln_strlcpy(host, "127.0.0.1", sizeof(host));
	hints.ai_flags |= AI_NUMERICHOST;
	e = getaddrinfo(host, port_text, &hints, &res);
	if (e != 0 || !res)
		return kiln_fail(KILN_EINVAL, "listen '%s': '%s' is not an IP address", text, host);
	memcpy(&l.addr, res->ai_addr, res->ai_addrlen);
	l.addr_len = res->ai_addrlen;
	freeaddrinfo(res);
	kiln_strlcpy(l.host, host, sizeof(l.host));
	if (l.addr.ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)(const void *)&l.addr;

		l.loopback = (ntohl(a->sin_addr.s_addr) >> 24) == 127;
	} else if (l.addr.ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)(const void *)&l.addr;

		l.loopback = IN6_IS_ADDR_LOOPBACK(&a->sin6_addr);
	}
	*out = l;
	return 0;
}

int api_listen_open(int *out_fd, struct api_listen *l)
{
	struct sockaddr_storage bound;
	socklen_t blen = sizeof(bound);
	int fd, one = 1;

	fd = socket(l->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return kiln_fail(KILN_ERROR, "socket: %s", strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (l->addr.ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&l->addr, l->addr_len) < 0 || listen(fd, 4096) < 0 ||
	    getsockname(fd, (struct sockaddr *)&bound, &blen) < 0) {
		int err = errno;

		close(fd);
		return kiln_fail(KILN_ERROR, "cannot listen on %s port %d: %s", l->host, l->port,
				 strerror(err));
	}
	if (bound.ss_family == AF_INET)
		l->port = ntohs(((struct sockaddr_in *)(void *)&bound)->sin_port);
	else
		l->port = ntohs(((struct sockaddr_in6 *)(void *)&bound)->sin6_port);
	*out_fd = fd;
	return 0;
}

void api_listen_url(char *out, size_t outlen, const struct api_listen *l, int tls)
{
	const char *host = l->host;
	int v6 = l->addr.ss_family == AF_INET6;

	if (strcmp(host, "0.0.0.0") == 0)
		host = "127.0.0.1";
	else if (strcmp(host, "::") == 0)
		host = "::1";
	snprintf(out, outlen, "%s://%s%s%s:%d", tls ? "https" : "http", v6 ? "[" : "", host,
		 v6 ? "]" : "", l->port);
}
