/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer harness: kilnd.conf through the table-driven loader (common/config.c, inih) with
 * kilnd's own key table, read from a memfd as kilnd reads its file. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "daemon/config.h"
#include "kiln/error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kilnd_config cfg;
	char path[64];
	int fd = memfd_create("kilnd.conf", MFD_CLOEXEC);

	if (fd < 0)
		abort();
	if (size && write(fd, data, size) != (ssize_t)size)
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (kilnd_config_init(&cfg) < 0)
		abort(); /* the defaults are ours: they must load */
	kilnd_config_load(&cfg, path);
	kilnd_config_free(&cfg);
	close(fd);
	kiln_error_clear();
	return 0;
}
