/* SPDX-License-Identifier: Apache-2.0 */
/* A GPU's PCIe AER error counters, read from its PCI device's sysfs files. */
#ifndef KILN_AGENT_GPU_AER_H
#define KILN_AGENT_GPU_AER_H

#include <jansson.h>

/*
 * The sysfs name of a PCI bus id ("00000000:1B:00.0" -> "0000:1b:00.0") into out[n]; -1
 * when bus is not one.
 */
int gpu_aer_sysfs_name(char *out, size_t n, const char *bus);

/*
 * The TOTAL_ERR_* count of one of the kernel's AER statistics texts (aer_dev_correctable,
 * aer_dev_nonfatal, aer_dev_fatal: lines "NAME COUNT"); -1 when it has none.
 */
long long gpu_aer_total(const char *text);

/*
 * Adds to each GPU of gpus (nvml_collect's array) that has a "pci_bus_id" the totals of
 * its device's AER counters (since boot) as "aer_correctable", "aer_nonfatal" and
 * "aer_fatal", read under root (NULL: /) from /sys/bus/pci/devices/<id>/aer_dev_*. A file
 * that is missing (no AER on the device or the kernel) leaves its field out.
 */
void gpu_aer_annotate(json_t *gpus, const char *root);

#endif
