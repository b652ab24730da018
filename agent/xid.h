/* SPDX-License-Identifier: Apache-2.0 */
/* Xid errors from the kernel log (/dev/kmsg), read from the agent's start and then incrementally. */
#ifndef KILN_AGENT_XID_H
#define KILN_AGENT_XID_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

struct xid_event {
	char pci_bus_id[32]; /* normalised "00000000:3B:00.0", or "" when the line has none */
	int xid;
	char message[512];
	long long seq;      /* kmsg sequence number, -1 when unknown */
	long long time_us;  /* kmsg timestamp (microseconds since boot), -1 when unknown */
};

/*
 * Parses one kernel log line, with or without the kmsg "prio,seq,usec,flags;" prefix:
 * "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=x, GPU has fallen off the bus." and the
 * forms without "PCI:" or without a bus id. Returns 0 for an Xid line, KILN_ENOTFOUND for
 * any other line, KILN_EINVAL for a malformed Xid line.
 */
int xid_line_parse(struct xid_event *out, const char *line);

/* Normalises a PCI address ("0000:3b:00", "00000000:3B:00.0") to "%08X:%02X:%02X.%X". */
int xid_pci_normalize(char out[32], const char *text);

struct xid_reader;

/*
 * Opens root/dev/kmsg. A character device is read one record per read(); a plain file (a test
 * fixture) line by line, continuing where the last poll stopped.
 */
int xid_reader_open(struct xid_reader **out, const char *root);

/*
 * Appends every Xid seen since the last poll to events as {"pci_bus_id","xid","message",
 * "source":"kmsg","seq","time_us"}, at most max (the rest are counted as dropped).
 */
int xid_reader_poll(struct xid_reader *r, json_t *events, size_t max);

/*
 * As xid_reader_poll, and also appends the kernel's own alarms (kernel_alarms.h) of the same
 * records to alarms as {"kind","message","seq","time_us"}, at most alarms_max (the rest are
 * counted in xid_reader_alarms_dropped). alarms may be NULL.
 */
int xid_reader_poll_alarms(struct xid_reader *r, json_t *events, size_t max, json_t *alarms,
			   size_t alarms_max);

/* Records lost to kmsg overruns (EPIPE) and events over the per-poll cap, since the start. */
uint64_t xid_reader_overruns(const struct xid_reader *r);
uint64_t xid_reader_dropped(const struct xid_reader *r);
uint64_t xid_reader_alarms_dropped(const struct xid_reader *r);

void xid_reader_close(struct xid_reader *r);

#endif
