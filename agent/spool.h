/* SPDX-License-Identifier: Apache-2.0 */
/* A bounded on-disk queue of unsent reports: one file each, fsync'd, oldest first, oldest dropped when full. */
#ifndef KILN_AGENT_SPOOL_H
#define KILN_AGENT_SPOOL_H

#include <stddef.h>
#include <stdint.h>

struct spool;

/*
 * Opens (creating, mode 0700) the spool folder dir, holding at most max_bytes of reports and
 * at most max_files of them. Leftover temporary files of an interrupted write are removed.
 */
int spool_open(struct spool **out, const char *dir, size_t max_bytes, size_t max_files);

/*
 * Adds one report (written to a temporary file, fsync'd, renamed, folder fsync'd). When the
 * spool would exceed its caps, the oldest reports are deleted first and counted as dropped.
 * A report larger than max_bytes on its own is refused with KILN_ETOOBIG.
 */
int spool_put(struct spool *s, const char *data, size_t len);

/*
 * Reads the oldest report: *out (caller frees, NUL-terminated), its length, and its name for
 * spool_remove. KILN_ENOTFOUND when the spool is empty.
 */
int spool_oldest(struct spool *s, char **out, size_t *out_len, char name[64]);

/* Deletes every report but the newest (kilnd refuses this host's reports: only the latest
 * state is worth sending once an admin accepts it); returns how many it deleted. These are
 * not counted as dropped. */
size_t spool_keep_newest(struct spool *s);

/* Deletes a report once it has been acknowledged. */
int spool_remove(struct spool *s, const char *name);

size_t spool_count(const struct spool *s);
size_t spool_bytes(const struct spool *s);

/* Reports dropped because the spool was full, since spool_open (kept across restarts). */
uint64_t spool_dropped(const struct spool *s);

void spool_close(struct spool *s);

#endif
