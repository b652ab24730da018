/* SPDX-License-Identifier: Apache-2.0 */
/* Xid errors from /dev/kmsg (one record per read) or a plain-file fixture (one per line). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kiln/error.h"
#include "kiln/parse.h"
#include "kernel_alarms.h"
#include "rootfs.h"
#include "xid.h"

/* The kernel never hands out a record longer than this (CONSOLE_EXT_LOG_MAX). */
#define KMSG_RECORD_MAX 8192
/* Records read in one poll at most, so a flooding log cannot hold the agent. */
#define KMSG_POLL_MAX 100000

struct xid_reader {
	int fd;
	FILE *file;    /* fixture mode */
	int is_device;
	uint64_t overruns;
	uint64_t dropped;
	uint64_t alarms_dropped;
	char buf[KMSG_RECORD_MAX + 1];
};

int xid_pci_normalize(char out[32], const char *text)
{
	unsigned int dom = 0, bus = 0, dev = 0, fn = 0;
	char tail;
	int n;

	if (strspn(text, "0123456789abcdefABCDEF:.") != strlen(text))
		return kiln_fail(KILN_EINVAL, "not a PCI address: '%.40s'", text);
	n = sscanf(text, "%x:%x:%x.%x%c", &dom, &bus, &dev, &fn, &tail);
	if (n == 4 || n == 3) {
		snprintf(out, 32, "%08X:%02X:%02X.%X", dom, bus & 0xff, dev & 0x1f, fn & 0x7);
		return 0;
	}
	return kiln_fail(KILN_EINVAL, "not a PCI address: '%.40s'", text);
}

/* Skips the "prio,seq,usec,flags;" prefix of a kmsg record, filling seq, time and the
 * syslog priority (facility << 3 | level; -1 when there is no prefix). */
static const char *kmsg_prefix(const char *line, long long *seq, long long *usec, long long *prio)
{
	long long p = 0, s = 0, u = 0;
	const char *semi = strchr(line, ';');
	int consumed = 0;

	*seq = -1;
	*usec = -1;
	*prio = -1;
	if (!semi || !isdigit((unsigned char)line[0]))
		return line;
	if (sscanf(line, "%lld,%lld,%lld,%n", &p, &s, &u, &consumed) == 3 && consumed > 0 &&
	    line + consumed <= semi) {
		*seq = s;
		*usec = u;
		*prio = p;
		return semi + 1;
	}
	return line;
}

int xid_line_parse(struct xid_event *out, const char *line)
{
	struct xid_event ev;
	const char *p, *msg;
	long long prio;
	char *end;
	long xid;

	memset(&ev, 0, sizeof ev);
	p = kmsg_prefix(line, &ev.seq, &ev.time_us, &prio);
	p = strstr(p, "NVRM: Xid");
	if (!p)
		return KILN_ENOTFOUND;
	p += strlen("NVRM: Xid");
	while (*p == ' ')
		p++;
	if (*p == '(') {
		const char *close = strchr(p, ')');
		char addr[64];
		size_t len;

		if (!close)
			return kiln_fail(KILN_EINVAL, "Xid line: no ')' after the bus id");
		p++;
		if (strncmp(p, "PCI:", 4) == 0)
			p += 4;
		len = (size_t)(close - p);
		if (len >= sizeof addr)
			return kiln_fail(KILN_EINVAL, "Xid line: bus id too long");
		memcpy(addr, p, len);
		addr[len] = '\0';
		if (xid_pci_normalize(ev.pci_bus_id, addr) < 0)
			ev.pci_bus_id[0] = '\0';
		p = close + 1;
	}
	if (*p != ':')
		return kiln_fail(KILN_EINVAL, "Xid line: no ':' before the Xid number");
	p++;
	while (*p == ' ')
		p++;
	if (!isdigit((unsigned char)*p))
		return kiln_fail(KILN_EINVAL, "Xid line: no Xid number");
	xid = strtol(p, &end, 10);
	if (xid < 0 || xid > 100000)
		return kiln_fail(KILN_EINVAL, "Xid line: Xid %ld out of range", xid);
	msg = end;
	while (*msg == ',' || *msg == ' ')
		msg++;
	kiln_strlcpy(ev.message, msg, sizeof ev.message);
	rootfs_trim(ev.message);
	ev.xid = (int)xid;
	*out = ev;
	return 0;
}

int xid_reader_open(struct xid_reader **out, const char *root)
{
	char path[PATH_MAX];
	struct xid_reader *r;
	struct stat st;
	int rc;

	rc = rootfs_path(path, sizeof path, root, "/dev/kmsg");
	if (rc < 0)
		return rc;
	r = calloc(1, sizeof *r);
	if (!r)
		return kiln_fail(KILN_ERROR, "out of memory");
	r->fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (r->fd < 0) {
		rc = kiln_fail(errno == ENOENT ? KILN_ENOTFOUND : KILN_ERROR, "%s: %s", path,
			       strerror(errno));
		free(r);
		return rc;
	}
	if (fstat(r->fd, &st) == 0 && S_ISCHR(st.st_mode)) {
		r->is_device = 1;
	} else {
		r->file = fdopen(r->fd, "r");
		if (!r->file) {
			rc = kiln_fail(KILN_ERROR, "%s: %s", path, strerror(errno));
			close(r->fd);
			free(r);
			return rc;
		}
	}
	*out = r;
	return 0;
}

/* The kernel's own alarm in line, if it is one, appended to alarms (at most max). A record
 * that userspace wrote into /dev/kmsg (a facility other than the kernel's) is no alarm. */
static int add_alarm(struct xid_reader *r, json_t *alarms, size_t max, const char *line)
{
	long long seq, usec, prio;
	const char *msg = kmsg_prefix(line, &seq, &usec, &prio), *kind;
	char text[KERNEL_ALARM_MESSAGE_MAX + 1];
	json_t *o;

	if (prio >= 8 || !(kind = kernel_alarm_kind(msg)))
		return 0;
	if (json_array_size(alarms) >= max) {
		r->alarms_dropped++;
		return 0;
	}
	kiln_strlcpy(text, msg, sizeof text);
	rootfs_trim(text);
	o = json_pack("{s:s,s:s}", "kind", kind, "message", text);
	if (!o)
		return kiln_fail(KILN_ERROR, "out of memory");
	if (seq >= 0)
		json_object_set_new(o, "seq", json_integer(seq));
	if (usec >= 0)
		json_object_set_new(o, "time_us", json_integer(usec));
	if (json_array_append_new(alarms, o) < 0)
		return kiln_fail(KILN_ERROR, "out of memory");
	return 0;
}

static int add_event(struct xid_reader *r, json_t *events, size_t max, json_t *alarms,
		     size_t alarms_max, const char *line)
{
	struct xid_event ev;
	json_t *o;
	int rc;

	if (alarms && (rc = add_alarm(r, alarms, alarms_max, line)) < 0)
		return rc;
	if (xid_line_parse(&ev, line) < 0)
		return 0;
	if (json_array_size(events) >= max) {
		r->dropped++;
		return 0;
	}
	o = json_pack("{s:i,s:s,s:s}", "xid", ev.xid, "message", ev.message, "source", "kmsg");
	if (!o)
		return kiln_fail(KILN_ERROR, "out of memory");
	if (ev.pci_bus_id[0])
		json_object_set_new(o, "pci_bus_id", json_string(ev.pci_bus_id));
	if (ev.seq >= 0)
		json_object_set_new(o, "seq", json_integer(ev.seq));
	if (ev.time_us >= 0)
		json_object_set_new(o, "time_us", json_integer(ev.time_us));
	if (json_array_append_new(events, o) < 0)
		return kiln_fail(KILN_ERROR, "out of memory");
	return 0;
}

int xid_reader_poll(struct xid_reader *r, json_t *events, size_t max)
{
	return xid_reader_poll_alarms(r, events, max, NULL, 0);
}

int xid_reader_poll_alarms(struct xid_reader *r, json_t *events, size_t max, json_t *alarms,
			   size_t alarms_max)
{
	int i, rc;

	if (!r->is_device) {
		/* fixture: whole lines; a partial last line waits for the next poll */
		for (i = 0; i < KMSG_POLL_MAX; i++) {
			long pos = ftell(r->file);
			size_t len;

			if (!fgets(r->buf, sizeof r->buf, r->file)) {
				clearerr(r->file);
				break;
			}
			len = strlen(r->buf);
			if (len && r->buf[len - 1] != '\n' && len < sizeof r->buf - 1) {
				fseek(r->file, pos, SEEK_SET);
				break;
			}
			if (r->buf[0] == ' ')
				continue; /* kmsg continuation line (KEY=value) */
			rc = add_event(r, events, max, alarms, alarms_max, r->buf);
			if (rc < 0)
				return rc;
		}
		return 0;
	}
	for (i = 0; i < KMSG_POLL_MAX; i++) {
		ssize_t n = read(r->fd, r->buf, KMSG_RECORD_MAX);
		char *nl;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EPIPE) { /* overrun: records were lost, the next read goes on */
				r->overruns++;
				continue;
			}
			if (errno == EAGAIN)
				break;
			if (errno == EINVAL) /* record longer than our buffer: cannot happen, stop */
				return kiln_fail(KILN_ERROR, "/dev/kmsg: record over %d bytes", KMSG_RECORD_MAX);
			return kiln_fail(KILN_ERROR, "/dev/kmsg: %s", strerror(errno));
		}
		if (n == 0)
			break;
		r->buf[n] = '\0';
		nl = strchr(r->buf, '\n'); /* continuation lines follow the first */
		if (nl)
			*nl = '\0';
		rc = add_event(r, events, max, alarms, alarms_max, r->buf);
		if (rc < 0)
			return rc;
	}
	return 0;
}

uint64_t xid_reader_overruns(const struct xid_reader *r)
{
	return r ? r->overruns : 0;
}

uint64_t xid_reader_dropped(const struct xid_reader *r)
{
	return r ? r->dropped : 0;
}

uint64_t xid_reader_alarms_dropped(const struct xid_reader *r)
{
	return r ? r->alarms_dropped : 0;
}

void xid_reader_close(struct xid_reader *r)
{
	if (!r)
		return;
	if (r->file)
		fclose(r->file);
	else if (r->fd >= 0)
		close(r->fd);
	free(r);
}
