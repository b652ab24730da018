/* Redfish inventory: the system's identity, BIOS and BMC firmware, CPUs, memory, and the GPUs
 * the BMC sees (Processors of type GPU, PCIe devices, iLO's OEM device list). */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bmc/redfish/internal.h"
#include "kiln/error.h"

static void set_string(json_t *obj, const char *key, const json_t *src, const char *src_key)
{
	const char *v = json_string_value(json_object_get(src, src_key));
	if (v) {
		/* BMCs pad some strings ("AMD EPYC 7702 64-Core Processor      ") */
		size_t n = strlen(v);
		while (n > 0 && v[n - 1] == ' ')
			n--;
		json_object_set_new(obj, key, json_stringn(v, n));
	} else {
		json_object_set_new(obj, key, json_null());
	}
}

void rf_inventory_from_system(json_t *inv, const json_t *sys)
{
	set_string(inv, "manufacturer", sys, "Manufacturer");
	set_string(inv, "model", sys, "Model");
	set_string(inv, "serial", sys, "SerialNumber");
	set_string(inv, "sku", sys, "SKU");
	set_string(inv, "part_number", sys, "PartNumber");
	set_string(inv, "bios_version", sys, "BiosVersion");
	set_string(inv, "uuid", sys, "UUID");
	set_string(inv, "hostname", sys, "HostName");
	json_t *mem = json_object_get(json_object_get(sys, "MemorySummary"), "TotalSystemMemoryGiB");
	json_object_set_new(inv, "memory_gib", json_is_number(mem) ? json_real(json_number_value(mem))
								 : json_null());
	json_t *ps = json_object_get(sys, "ProcessorSummary");
	json_t *count = json_object_get(ps, "Count");
	json_object_set_new(inv, "cpu_count", json_is_integer(count) ? json_incref(count) : json_null());
	set_string(inv, "cpu_model", ps, "Model");
}

static int has_ci(const json_t *obj, const char *key, const char *needle)
{
	const char *v = json_string_value(json_object_get(obj, key));
	return v && strcasestr(v, needle) != NULL;
}

int rf_device_is_gpu(const json_t *dev)
{
	const char *type = json_string_value(json_object_get(dev, "DeviceType"));
	if (type && strcasecmp(type, "GPU") == 0)
		return 1;
	if (has_ci(dev, "Manufacturer", "NVIDIA"))
		return 1;
	return has_ci(dev, "Name", "GPU") || has_ci(dev, "Model", "GPU");
}

static json_t *gpu_object(const json_t *dev, const char *source)
{
	json_t *g = json_object();
	set_string(g, "name", dev, "Name");
	set_string(g, "manufacturer", dev, "Manufacturer");
	set_string(g, "model", dev, "Model");
	set_string(g, "serial", dev, "SerialNumber");
	set_string(g, "part_number", dev, "PartNumber");
	json_object_set_new(g, "source", json_string(source));
	return g;
}

static int on_processor(struct rf_op *op, const struct rf_reply *r)
{
	const char *type = json_string_value(json_object_get(r->json, "ProcessorType"));
	if (type && strcmp(type, "GPU") == 0) {
		json_array_append_new(json_object_get(op->scratch, "gpus_proc"),
				      gpu_object(r->json, "processors"));
		return 0;
	}
	json_t *c = json_object();
	set_string(c, "model", r->json, "Model");
	set_string(c, "manufacturer", r->json, "Manufacturer");
	json_t *cores = json_object_get(r->json, "TotalCores");
	json_object_set_new(c, "cores", json_is_integer(cores) ? json_incref(cores) : json_null());
	json_array_append_new(json_object_get(op->data, "cpus"), c);
	return 0;
}

static int on_device(struct rf_op *op, const struct rf_reply *r)
{
	if (r->status < 400 && rf_device_is_gpu(r->json))
		json_array_append_new(json_object_get(op->scratch, "gpus_pcie"),
				      gpu_object(r->json, "pcie"));
	return 0;
}

static int push_members_as(struct rf_op *op, const json_t *members, rf_handler h, int flags)
{
	size_t i;
	json_t *m;
	json_array_foreach(members, i, m) {
		const char *p = rf_link(m, "@odata.id");
		if (p)
			rf_push(op, "GET", p, NULL, flags, h);
	}
	return 0;
}

static int on_processors(struct rf_op *op, const struct rf_reply *r)
{
	return push_members_as(op, json_object_get(r->json, "Members"), on_processor, 0);
}

static int on_devices(struct rf_op *op, const struct rf_reply *r)
{
	if (r->status >= 400)
		return 0; /* an optional list */
	return push_members_as(op, json_object_get(r->json, "Members"), on_device, RF_ALLOW_ERROR);
}

static int inventory_finish(struct rf_op *op)
{
	json_t *gpus = json_object_get(op->scratch, "gpus_proc");
	if (json_array_size(gpus) == 0)
		gpus = json_object_get(op->scratch, "gpus_pcie");
	json_object_set(op->data, "gpus", gpus);
	return 0;
}

static int on_system(struct rf_op *op, const struct rf_reply *r)
{
	struct redfish_bmc *b = op->bmc;
	rf_inventory_from_system(op->data, r->json);
	json_object_set_new(op->data, "bmc_firmware",
			    b->bmc_firmware ? json_string(b->bmc_firmware) : json_null());
	json_object_set_new(op->data, "bmc_model", b->bmc_model ? json_string(b->bmc_model) : json_null());
	json_object_set_new(op->data, "vendor_profile", json_string(rf_profile_name(b->profile)));
	if (b->processors)
		rf_push(op, "GET", b->processors, NULL, 0, on_processors);
	if (json_array_size(b->pcie_links) > 0) {
		push_members_as(op, b->pcie_links, on_device, RF_ALLOW_ERROR);
	} else {
		for (size_t i = 0; i < b->nchassis; i++)
			if (b->chassis[i].pcie_devices)
				rf_push(op, "GET", b->chassis[i].pcie_devices, NULL, RF_ALLOW_ERROR,
					on_devices);
	}
	for (size_t i = 0; i < b->nchassis; i++)
		if (b->chassis[i].hpe_devices)
			rf_push(op, "GET", b->chassis[i].hpe_devices, NULL, RF_ALLOW_ERROR, on_devices);
	op->finish = inventory_finish;
	return 0;
}

int rf_inventory_start(struct rf_op *op)
{
	op->data = json_pack("{s:[]}", "cpus");
	op->scratch = json_pack("{s:[], s:[]}", "gpus_proc", "gpus_pcie");
	rf_push(op, "GET", op->bmc->system, NULL, 0, on_system);
	return 0;
}
