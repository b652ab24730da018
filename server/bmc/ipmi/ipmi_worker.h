/* SPDX-License-Identifier: Apache-2.0 */
/* The IPMI helper process: reads requests, runs them on a bounded worker pool, answers. */
#ifndef KILN_BMC_IPMI_WORKER_H
#define KILN_BMC_IPMI_WORKER_H

/*
 * Serves requests on fd until the other end closes it, with `workers` threads, one job at a
 * time per BMC. SDR caches go under state_dir/ipmi/sdr/. Sessions are kept between jobs and
 * closed after session_idle_ms idle (0: the default, < 0: none kept) and when fd closes.
 * Returns the process exit status.
 */
int ipmi_worker_main(int fd, const char *state_dir, int workers, long session_idle_ms);

#endif
