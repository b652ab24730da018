/* SPDX-License-Identifier: Apache-2.0 */
/* A GPU's PCIe AER error counters from sysfs (the kernel's AER statistics, 4.19 and later). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_aer.h"
#include "rootfs.h"

int gpu_aer_sysfs_name(char *out, size_t n, const char *bus)
{
	unsigned int dom, b, dev, fn;
	char tail;

	if (!bus || sscanf(bus, "%x:%x:%x.%x%c", &dom, &b, &dev, &fn, &tail) != 4 ||
	    b > 0xff || dev > 0x1f || fn > 7)
		return -1;
	if ((size_t)snprintf(out, n, "%04x:%02x:%02x.%x", dom, b, dev, fn) >= n)
		return -1;
	return 0;
}

long long gpu_aer_total(const char *text)
{
	const char *p = text;

	while (p && *p) {
		const char *eol = strchr(p, '\n');

		if (strncmp(p, "TOTAL_ERR_", 10) == 0) {
			const char *v = p + 10;
			char *end;
			long long n;

			while (*v && !isspace((unsigned char)*v))
				v++;
			while (*v == ' ' || *v == '\t')
				v++;
			if (!isdigit((unsigned char)*v))
				return -1;
			n = strtoll(v, &end, 10);
			return n >= 0 ? n : -1;
		}
		p = eol ? eol + 1 : NULL;
	}
	return -1;
}

void gpu_aer_annotate(json_t *gpus, const char *root)
{
	static const struct {
		const char *file, *field;
	} files[] = {
		{ "aer_dev_correctable", "aer_correctable" },
		{ "aer_dev_nonfatal", "aer_nonfatal" },
		{ "aer_dev_fatal", "aer_fatal" },
	};
	char name[32], path[128];
	size_t i, k;
	json_t *g;

	json_array_foreach(gpus, i, g) {
		const char *bus = json_string_value(json_object_get(g, "pci_bus_id"));

		if (gpu_aer_sysfs_name(name, sizeof name, bus) < 0)
			continue;
		for (k = 0; k < sizeof files / sizeof files[0]; k++) {
			char *text = NULL;
			long long n;

			snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/%s", name, files[k].file);
			if (rootfs_read(&text, NULL, root, path, 4096) < 0)
				continue;
			n = gpu_aer_total(text);
			free(text);
			if (n >= 0)
				json_object_set_new(g, files[k].field, json_integer((json_int_t)n));
		}
	}
}
