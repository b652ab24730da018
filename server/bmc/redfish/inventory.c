/* SPDX-License-Identifier: Apache-2.0 */
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

void rf_inventory_from_chassis(json_t *inv, const json_t *chassis)
{
	static const struct {
		const char *key, *from;
	} fill[] = {
		{ "manufacturer", "Manufacturer" },
		{ "model", "Model" },
		{ "serial", "SerialNumber" },
		{ "sku", "SKU" },
	};
	const char *serial = json_string_value(json_object_get(chassis, "SerialNumber"));
	json_t *from = json_array();

	json_object_set_new(inv, "chassis_serial", serial ? json_string(serial) : json_null());
	/* a System that names no maker, model or serial (GB200, GH200): its chassis' */
	for (size_t i = 0; i < sizeof(fill) / sizeof(fill[0]); i++) {
		const char *v = json_string_value(json_object_get(chassis, fill[i].from));
		const char *have = json_string_value(json_object_get(inv, fill[i].key));

		if (v && *v && !(have && *have)) {
			set_string(inv, fill[i].key, chassis, fill[i].from);
			json_array_append_new(from, json_string(fill[i].key));
		}
	}
	if (json_array_size(from) > 0)
		json_object_set_new(inv, "from_chassis", from);
	else
		json_decref(from);
}

static int has_ci(const json_t *obj, const char *key, const char *needle)
{
	const char *v = json_string_value(json_object_get(obj, key));
	return v && strcasestr(v, needle) != NULL;
}

static int absent(const json_t *obj)
{
	const char *state = json_string_value(json_object_get(json_object_get(obj, "Status"), "State"));
	return state && strcmp(state, "Absent") == 0;
}

/* PCI class: display controllers (0x03) and processing accelerators (0x12) are GPUs; any
 * other class a device states is not one. -1: it states none. */
static int class_is_gpu(const json_t *obj)
{
	const char *cls = json_string_value(json_object_get(obj, "DeviceClass"));
	const char *code = json_string_value(json_object_get(obj, "ClassCode"));
	if (cls && cls[0])
		return strcasecmp(cls, "DisplayController") == 0 ||
		       strcasecmp(cls, "ProcessingAccelerators") == 0;
	if (code && strlen(code) >= 4 && strncasecmp(code, "0x", 2) == 0)
		return strncmp(code + 2, "03", 2) == 0 || strncmp(code + 2, "12", 2) == 0;
	return -1;
}

/* The BMC's own video: ASPEED (0x1A03) and Matrox (0x102B) on BMC boards are the console's
 * VGA, never a compute GPU. */
static int bmc_video_vendor(const json_t *obj)
{
	const char *v = json_string_value(json_object_get(obj, "VendorId"));
	const char *m = json_string_value(json_object_get(obj, "Manufacturer"));

	if (v && (strcasecmp(v, "0x1a03") == 0 || strcasecmp(v, "0x102b") == 0))
		return 1;
	return m && (strcasestr(m, "ASPEED") || strcasestr(m, "Matrox"));
}

/* A device named as the board's video ("Embedded Video Controller" on iLO, "UEFI Video"),
 * or made by a BMC video maker. */
static int bmc_video(const json_t *dev)
{
	static const char *const names[] = { "Embedded Video", "UEFI Video", "Onboard Video",
					     "On-board Video", "ASPEED", "Matrox", "BMC VGA" };
	const char *name = json_string_value(json_object_get(dev, "Name"));

	for (size_t i = 0; name && i < sizeof(names) / sizeof(names[0]); i++)
		if (strcasestr(name, names[i]))
			return 1;
	return bmc_video_vendor(dev);
}

int rf_device_is_gpu(const json_t *dev)
{
	const char *type = json_string_value(json_object_get(dev, "DeviceType"));
	if (bmc_video(dev))
		return 0;
	if (type && strcasecmp(type, "GPU") == 0)
		return 1;
	/* iLO's OEM list: "LOM/NIC", "Smart Storage", ...; a ConnectX is NVIDIA's too */
	if (type && (strcasestr(type, "NIC") || strcasestr(type, "Storage") ||
		     strcasestr(type, "Network")))
		return 0;
	return class_is_gpu(dev);
}

int rf_function_is_gpu(const json_t *fn)
{
	if (bmc_video_vendor(fn))
		return 0;
	return class_is_gpu(fn);
}

static json_t *gpu_object(const json_t *dev, const char *source)
{
	json_t *g = json_object();
	const char *name = json_string_value(json_object_get(dev, "Name"));
	set_string(g, "name", dev, "Name");
	/* HGX baseboards name every GPU "Processor": its id says which (GPU_SXM_5) */
	if ((!name || !*name || strcasecmp(name, "Processor") == 0 || strcasecmp(name, "GPU") == 0) &&
	    json_is_string(json_object_get(dev, "Id")))
		set_string(g, "name", dev, "Id");
	set_string(g, "manufacturer", dev, "Manufacturer");
	if (!json_string_length(json_object_get(g, "manufacturer")))
		set_string(g, "manufacturer", dev, "GPUVendor"); /* Supermicro's PCIe devices */
	set_string(g, "model", dev, "Model");
	set_string(g, "serial", dev, "SerialNumber");
	set_string(g, "part_number", dev, "PartNumber");
	const char *health = json_string_value(json_object_get(json_object_get(dev, "Status"),
							       "Health"));
	json_object_set_new(g, "health", health ? json_string(health) : json_null());
	json_object_set_new(g, "source", json_string(source));
	return g;
}

/* A model that names nothing ("N/A", "", a lone space). */
static int model_empty(const char *m)
{
	while (m && *m == ' ')
		m++;
	return !m || !*m || strcasecmp(m, "N/A") == 0 || strcasecmp(m, "NA") == 0 ||
	       strcasecmp(m, "Not Available") == 0;
}

/* What tells one device from another across the lists that name it: its serial, its UUID,
 * else its PCIe function (iLO's DeviceInstances, the PCIeFunctions link). */
static void device_key(char *out, size_t n, const json_t *dev)
{
	const char *serial = json_string_value(json_object_get(dev, "SerialNumber"));
	const char *uuid = json_string_value(json_object_get(dev, "UUID"));
	const char *fn = rf_link(json_array_get(json_object_get(dev, "DeviceInstances"), 0),
				 "@odata.id");
	if (!fn)
		fn = rf_link(dev, "PCIeFunctions");
	if (!fn)
		fn = rf_link(dev, "@odata.id");
	if (serial && serial[0])
		snprintf(out, n, "serial:%s", serial);
	else if (uuid && uuid[0])
		snprintf(out, n, "uuid:%s", uuid);
	else
		snprintf(out, n, "fn:%s", fn ? fn : "?");
}

/* A GPU whose Processor names no model: its PCIe device's Model, else the device's Name
 * (Lenovo: Model "N/A", Name "NVIDIA L40"), else its chassis' Model. */
static int on_gpu_model_source(struct rf_op *op, const struct rf_reply *r)
{
	json_t *wait = json_object_get(op->scratch, "gpu_models"), *g = NULL, *w;
	const char *model, *name, *next;
	size_t i;

	json_array_foreach(wait, i, w) {
		const char *p = json_string_value(json_object_get(w, "path"));
		if (p && r->path && rf_path_equal(p, r->path)) {
			g = json_object_get(w, "gpu");
			break;
		}
	}
	if (!g)
		return 0;
	next = json_string_value(json_object_get(w, "then"));
	json_incref(w);
	json_array_remove(wait, i);
	model = r->status < 300 ? json_string_value(json_object_get(r->json, "Model")) : NULL;
	name = r->status < 300 ? json_string_value(json_object_get(r->json, "Name")) : NULL;
	if (!model_empty(model))
		json_object_set_new(g, "model", json_string(model));
	else if (name && (strcasestr(name, "NVIDIA") || strcasestr(name, "AMD") ||
			  strcasestr(name, "Intel")) && !bmc_video(r->json))
		json_object_set_new(g, "model", json_string(name));
	else if (next) {
		json_array_append_new(wait, json_pack("{s:s, s:O}", "path", next, "gpu", g));
		rf_push(op, "GET", next, NULL, RF_ALLOW_ERROR, on_gpu_model_source);
	}
	json_decref(w);
	return 0;
}

/* Appends a GPU processor; one without a model waits for its PCIe device's or chassis'. */
static void gpu_processor_add(struct rf_op *op, const json_t *proc, const char *source)
{
	json_t *g = gpu_object(proc, source);
	json_t *links = json_object_get(proc, "Links");
	const char *dev = rf_link(links, "PCIeDevice");
	const char *chassis = rf_link(links, "Chassis");

	if (!dev) /* older schemas: an array of devices */
		dev = rf_link(json_array_get(json_object_get(links, "PCIeDevice"), 0), "@odata.id");
	if (json_is_array(json_object_get(links, "Chassis")))
		chassis = rf_link(json_array_get(json_object_get(links, "Chassis"), 0), "@odata.id");
	json_array_append_new(json_object_get(op->scratch, "gpus_proc"), g);
	if (!model_empty(json_string_value(json_object_get(g, "model"))))
		return;
	json_object_set_new(g, "model", json_null());
	if (!dev && !chassis)
		return;
	json_array_append_new(json_object_get(op->scratch, "gpu_models"),
			      json_pack("{s:s, s:O, s:s?}", "path", dev ? dev : chassis, "gpu", g,
					"then", dev ? chassis : NULL));
	rf_push(op, "GET", dev ? dev : chassis, NULL, RF_ALLOW_ERROR, on_gpu_model_source);
}

static int on_processor(struct rf_op *op, const struct rf_reply *r)
{
	const char *type = json_string_value(json_object_get(r->json, "ProcessorType"));
	if (absent(r->json))
		return 0; /* an empty socket */
	if (type && strcmp(type, "GPU") == 0) {
		gpu_processor_add(op, r->json, "processors");
		return 0;
	}
	if (type && strcmp(type, "CPU") != 0)
		return 0; /* an FPGA, an accelerator, a DSP: not a CPU */
	json_t *c = json_object();
	set_string(c, "model", r->json, "Model");
	set_string(c, "manufacturer", r->json, "Manufacturer");
	json_t *cores = json_object_get(r->json, "TotalCores");
	json_object_set_new(c, "cores", json_is_integer(cores) ? json_incref(cores) : json_null());
	json_array_append_new(json_object_get(op->data, "cpus"), c);
	return 0;
}

/* A device that names no class waits for its functions: {"gpu","verdict","path"}. */
static json_t *device_find(struct rf_op *op, const char *path)
{
	size_t i;
	json_t *d;
	json_array_foreach(json_object_get(op->scratch, "devices"), i, d) {
		const char *p = json_string_value(json_object_get(d, "path"));
		if (p && rf_path_equal(p, path))
			return d;
	}
	return NULL;
}

static int on_function(struct rf_op *op, const struct rf_reply *r)
{
	char dev[1024];
	const char *p = r->path ? strcasestr(r->path, "/PCIeFunctions") : NULL;
	if (r->status >= 400 || !p)
		return 0;
	snprintf(dev, sizeof(dev), "%.*s", (int)(p - r->path), r->path);
	json_t *d = device_find(op, dev);
	int v = rf_function_is_gpu(r->json);
	json_int_t was = json_integer_value(json_object_get(d, "verdict"));
	if (d && v >= 0 && was != 1)
		json_object_set_new(d, "verdict", json_integer(v));
	return 0;
}

static int on_functions(struct rf_op *op, const struct rf_reply *r);

static int on_device(struct rf_op *op, const struct rf_reply *r)
{
	const char *source = op->phase ? "oem" : "pcie";
	if (r->status >= 400 || rf_body_is_error(r->json))
		return 0;
	int v = rf_device_is_gpu(r->json);
	const char *fns = rf_link(r->json, "PCIeFunctions");
	char key[600];
	device_key(key, sizeof(key), r->json);
	json_t *d = json_pack("{s:o, s:i, s:s, s:s}", "gpu", gpu_object(r->json, source),
			      "verdict", v, "path", r->path ? r->path : "", "key", key);
	/* the last resort of a device that states neither type nor class: its name */
	json_object_set_new(d, "named", json_boolean(has_ci(r->json, "Name", "GPU") ||
						      has_ci(r->json, "Model", "GPU")));
	json_array_append_new(json_object_get(op->scratch, "devices"), d);
	if (v < 0 && fns)
		rf_push(op, "GET", fns, NULL, RF_ALLOW_ERROR, on_functions);
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

static int on_functions(struct rf_op *op, const struct rf_reply *r)
{
	if (r->status >= 400)
		return 0;
	return push_members_as(op, json_object_get(r->json, "Members"), on_function, RF_ALLOW_ERROR);
}

static int on_processors(struct rf_op *op, const struct rf_reply *r)
{
	return push_members_as(op, json_object_get(r->json, "Members"), on_processor, 0);
}

/* --- an NVIDIA HGX baseboard: the host's GPUs are its processors --------------------- */

static int on_hgx_processor(struct rf_op *op, const struct rf_reply *r)
{
	const char *type = json_string_value(json_object_get(r->json, "ProcessorType"));

	if (r->status >= 300 || rf_body_is_error(r->json) || absent(r->json))
		return 0;
	if (type && strcmp(type, "GPU") == 0)
		gpu_processor_add(op, r->json, "hgx_baseboard");
	return 0; /* a CPU of the baseboard's is the host's, counted there */
}

static int on_hgx_processors(struct rf_op *op, const struct rf_reply *r)
{
	if (r->status >= 300)
		return 0;
	return push_members_as(op, json_object_get(r->json, "Members"), on_hgx_processor,
			       RF_ALLOW_ERROR);
}

static int on_hgx_system(struct rf_op *op, const struct rf_reply *r)
{
	const char *procs = r->status < 300 ? rf_link(r->json, "Processors") : NULL;

	if (procs)
		rf_push(op, "GET", procs, NULL, RF_ALLOW_ERROR, on_hgx_processors);
	return 0;
}

/* The fallback where the baseboard lists no GPU processor: its HGX_GPU_* chassis. */
static int on_hgx_gpu_chassis(struct rf_op *op, const struct rf_reply *r)
{
	if (r->status >= 300 || rf_body_is_error(r->json) || absent(r->json))
		return 0;
	json_array_append_new(json_object_get(op->scratch, "gpus_proc"),
			      gpu_object(r->json, "hgx_chassis"));
	return 0;
}

static int on_chassis_for_hgx(struct rf_op *op, const struct rf_reply *r)
{
	size_t i;
	json_t *m;

	if (r->status >= 300)
		return 0;
	json_array_foreach(json_object_get(r->json, "Members"), i, m) {
		const char *p = rf_link(m, "@odata.id");
		const char *id = p ? strrchr(p, '/') : NULL;

		if (id && id[1] == '\0') /* a trailing slash */
			continue;
		if (id && strncasecmp(id + 1, "HGX_GPU_", 8) == 0)
			rf_push(op, "GET", p, NULL, RF_ALLOW_ERROR, on_hgx_gpu_chassis);
	}
	return 0;
}

static int on_devices(struct rf_op *op, const struct rf_reply *r)
{
	if (r->status >= 400)
		return 0; /* an optional list */
	return push_members_as(op, json_object_get(r->json, "Members"), on_device, RF_ALLOW_ERROR);
}

static int on_oem_devices(struct rf_op *op, const struct rf_reply *r)
{
	op->phase = 1; /* the devices it lists are iLO's OEM ones */
	return on_devices(op, r);
}

/* The GPUs among the devices, each once however many lists named it. */
static json_t *device_gpus(const json_t *devices)
{
	json_t *gpus = json_array(), *seen = json_object(), *d;
	size_t i;
	json_array_foreach(devices, i, d) {
		json_int_t v = json_integer_value(json_object_get(d, "verdict"));
		const char *key = json_string_value(json_object_get(d, "key"));
		if (v == 0 || (v < 0 && !json_is_true(json_object_get(d, "named"))))
			continue;
		if (key && json_object_get(seen, key))
			continue;
		if (key)
			json_object_set_new(seen, key, json_true());
		json_array_append(gpus, json_object_get(d, "gpu"));
	}
	json_decref(seen);
	return gpus;
}

/* CPUs counted from the present CPU processors: ProcessorSummary counts the GPUs too on some
 * BMCs (a 1-socket Cray EX blade says 5), and names a GPU as the model. */
static void cpus_summarise(json_t *inv)
{
	json_t *cpus = json_object_get(inv, "cpus");
	const char *model = json_string_value(json_object_get(json_array_get(cpus, 0), "model"));

	if (json_array_size(cpus) == 0)
		return;
	json_object_set_new(inv, "cpu_count", json_integer((json_int_t)json_array_size(cpus)));
	json_object_set_new(inv, "cpu_model", model ? json_string(model) : json_null());
}

static int inventory_finish(struct rf_op *op)
{
	json_t *gpus = json_object_get(op->scratch, "gpus_proc");
	struct redfish_bmc *b = op->bmc;

	/* an HGX baseboard that lists no GPU processor: its GPU chassis, once */
	if (b->hgx_system && json_array_size(gpus) == 0 && b->chassis_coll &&
	    !json_is_true(json_object_get(op->scratch, "hgx_chassis_read"))) {
		json_object_set_new(op->scratch, "hgx_chassis_read", json_true());
		rf_push(op, "GET", b->chassis_coll, NULL, RF_ALLOW_ERROR, on_chassis_for_hgx);
		op->finish = inventory_finish;
		return 0;
	}
	cpus_summarise(op->data);
	if (json_array_size(gpus) == 0)
		json_object_set_new(op->data, "gpus",
				    device_gpus(json_object_get(op->scratch, "devices")));
	else
		json_object_set(op->data, "gpus", gpus);
	if (op->bmc->chassis_skipped)
		json_object_set_new(op->data, "chassis_skipped",
				    json_deep_copy(op->bmc->chassis_skipped));
	return 0;
}

static int on_system(struct rf_op *op, const struct rf_reply *r)
{
	struct redfish_bmc *b = op->bmc;
	rf_inventory_from_system(op->data, r->json);
	rf_inventory_from_chassis(op->data, b->chassis_identity);
	json_object_set_new(op->data, "bmc_firmware",
			    b->bmc_firmware ? json_string(b->bmc_firmware) : json_null());
	json_object_set_new(op->data, "bmc_model", b->bmc_model ? json_string(b->bmc_model) : json_null());
	json_object_set_new(op->data, "vendor_profile", json_string(rf_profile_name(b->profile)));
	if (b->processors)
		rf_push(op, "GET", b->processors, NULL, 0, on_processors);
	if (b->hgx_system)
		rf_push(op, "GET", b->hgx_system, NULL, RF_ALLOW_ERROR, on_hgx_system);
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
			rf_push(op, "GET", b->chassis[i].hpe_devices, NULL, RF_ALLOW_ERROR,
				on_oem_devices);
	op->finish = inventory_finish;
	return 0;
}

int rf_inventory_start(struct rf_op *op)
{
	op->data = json_pack("{s:[]}", "cpus");
	op->scratch = json_pack("{s:[], s:[], s:[]}", "gpus_proc", "devices", "gpu_models");
	rf_push(op, "GET", op->bmc->system, NULL, 0, on_system);
	return 0;
}
