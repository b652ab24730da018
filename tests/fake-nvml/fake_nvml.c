/* SPDX-License-Identifier: Apache-2.0 */
/* A fake NVML (libnvidia-ml.so.1) whose GPUs and failures come from the file named by FAKE_NVML_CONFIG. */
/*
 * Config: one "key = value" a line, '#' comments. Global keys: init (ok|hang|mismatch|
 * driver_not_loaded|unknown), init_delay_ms, driver_version, nvml_version, cuda_driver_version
 * (e.g. 12040), gpu_count, not_supported and missing (comma lists of function names: the first
 * return NOT_SUPPORTED, the second FUNCTION_NOT_FOUND). Per GPU: gpu.N.FIELD, with gpu.*.FIELD
 * as the default for every GPU; "{i}" in a value becomes the GPU's index. A field left out
 * makes its call return NOT_SUPPORTED. Built with FAKE_NVML_OLD, the library exports only the
 * unversioned symbols of an old driver. NVLink error counters: gpu.N.nvlink_errors.L =
 * "replay,recovery,crc_flit,crc_data" for link L (no key: NOT_SUPPORTED).
 */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef int nvmlReturn_t;
typedef struct fake_dev *nvmlDevice_t;
typedef struct fake_evset *nvmlEventSet_t;

enum {
	NVML_SUCCESS = 0,
	NVML_ERROR_UNINITIALIZED = 1,
	NVML_ERROR_INVALID_ARGUMENT = 2,
	NVML_ERROR_NOT_SUPPORTED = 3,
	NVML_ERROR_NOT_FOUND = 6,
	NVML_ERROR_INSUFFICIENT_SIZE = 7,
	NVML_ERROR_DRIVER_NOT_LOADED = 9,
	NVML_ERROR_TIMEOUT = 10,
	NVML_ERROR_FUNCTION_NOT_FOUND = 13,
	NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
	NVML_ERROR_UNKNOWN = 999,
};

typedef struct {
	char busIdLegacy[16];
	unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
	char busId[32];
} nvmlPciInfo_t;

typedef struct {
	unsigned long long total, free, used;
} nvmlMemory_t;

typedef struct {
	unsigned int version;
	unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;

typedef struct {
	unsigned int gpu, memory;
} nvmlUtilization_t;

typedef struct {
	unsigned int pid;
	unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

typedef struct {
	unsigned int pid;
	unsigned long long usedGpuMemory;
	unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;

typedef struct {
	nvmlDevice_t device;
	unsigned long long eventType, eventData;
	unsigned int gpuInstanceId, computeInstanceId;
} nvmlEventData_t;

#define MAX_GPUS 64
#define MAX_LINES 512
#define EVENT_XID 0x8ULL

struct fake_dev {
	unsigned int index;
	int xid_delivered;
};

struct fake_evset {
	int gpus[MAX_GPUS];
};

static struct {
	char *keys[MAX_LINES];
	char *vals[MAX_LINES];
	int n;
	int loaded;
	int init_count;
	unsigned int gpu_count;
	struct fake_dev devs[MAX_GPUS];
} g;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

static void config_load(void)
{
	const char *path = getenv("FAKE_NVML_CONFIG");
	char line[1024];
	FILE *f;

	if (g.loaded)
		return;
	g.loaded = 1;
	if (!path)
		return;
	f = fopen(path, "re");
	if (!f) {
		fprintf(stderr, "fake-nvml: cannot open %s: %s\n", path, strerror(errno));
		return;
	}
	while (fgets(line, sizeof line, f) && g.n < MAX_LINES) {
		char *eq, *k, *v;

		k = trim(line);
		if (*k == '#' || *k == '\0')
			continue;
		eq = strchr(k, '=');
		if (!eq)
			continue;
		*eq = '\0';
		v = trim(eq + 1);
		k = trim(k);
		g.keys[g.n] = strdup(k);
		g.vals[g.n] = strdup(v);
		g.n++;
	}
	fclose(f);
}

/* Frees the config when the library is unloaded (dlclose), so leak checkers stay quiet. */
__attribute__((destructor)) static void config_free(void)
{
	int i;

	for (i = 0; i < g.n; i++) {
		free(g.keys[i]);
		free(g.vals[i]);
	}
	g.n = 0;
}

static const char *cfg(const char *key)
{
	int i;

	for (i = g.n - 1; i >= 0; i--)
		if (strcmp(g.keys[i], key) == 0)
			return g.vals[i];
	return NULL;
}

static const char *gpu_cfg(unsigned int idx, const char *field)
{
	char key[128];
	const char *v;

	snprintf(key, sizeof key, "gpu.%u.%s", idx, field);
	v = cfg(key);
	if (v)
		return v;
	snprintf(key, sizeof key, "gpu.*.%s", field);
	return cfg(key);
}

static int list_has(const char *list, const char *name)
{
	size_t n = strlen(name);
	const char *p = list;

	while (p && *p) {
		while (*p == ' ' || *p == ',')
			p++;
		if (strncmp(p, name, n) == 0 && (p[n] == '\0' || p[n] == ',' || p[n] == ' '))
			return 1;
		p = strchr(p, ',');
	}
	return 0;
}

/* The return code a call is forced to, or 0. */
static nvmlReturn_t forced(const char *fn, const struct fake_dev *d)
{
	if (list_has(cfg("missing"), fn))
		return NVML_ERROR_FUNCTION_NOT_FOUND;
	if (list_has(cfg("not_supported"), fn))
		return NVML_ERROR_NOT_SUPPORTED;
	if (d && list_has(gpu_cfg(d->index, "not_supported"), fn))
		return NVML_ERROR_NOT_SUPPORTED;
	return NVML_SUCCESS;
}

#define ENTER(dev)                                                         \
	do {                                                               \
		nvmlReturn_t _r;                                           \
		if (g.init_count <= 0)                                     \
			return NVML_ERROR_UNINITIALIZED;                   \
		if ((dev) && ((struct fake_dev *)(dev) < g.devs ||         \
			      (struct fake_dev *)(dev) >= g.devs + g.gpu_count)) \
			return NVML_ERROR_INVALID_ARGUMENT;                \
		_r = forced(__func__, (dev));                              \
		if (_r)                                                    \
			return _r;                                         \
	} while (0)

static nvmlReturn_t copy_str(char *out, unsigned int len, const char *v, unsigned int idx)
{
	char tmp[256];
	size_t o = 0;

	if (!v)
		return NVML_ERROR_NOT_SUPPORTED;
	if (!out)
		return NVML_ERROR_INVALID_ARGUMENT;
	while (*v && o + 1 < sizeof tmp) {
		if (strncmp(v, "{i}", 3) == 0) {
			o += (size_t)snprintf(tmp + o, sizeof tmp - o, "%u", idx);
			if (o >= sizeof tmp)
				o = sizeof tmp - 1;
			v += 3;
		} else {
			tmp[o++] = *v++;
		}
	}
	tmp[o] = '\0';
	if (strlen(tmp) + 1 > len)
		return NVML_ERROR_INSUFFICIENT_SIZE;
	memcpy(out, tmp, strlen(tmp) + 1);
	return NVML_SUCCESS;
}

static nvmlReturn_t get_ull(unsigned long long *out, unsigned int idx, const char *field)
{
	const char *v = gpu_cfg(idx, field);
	char *end;

	if (!v)
		return NVML_ERROR_NOT_SUPPORTED;
	if (!out)
		return NVML_ERROR_INVALID_ARGUMENT;
	*out = strtoull(v, &end, 0);
	return NVML_SUCCESS;
}

static nvmlReturn_t get_uint(unsigned int *out, unsigned int idx, const char *field)
{
	unsigned long long v = 0;
	nvmlReturn_t r = get_ull(&v, idx, field);

	if (r == NVML_SUCCESS)
		*out = (unsigned int)v;
	return r;
}

/* ---- init and system ---- */

static nvmlReturn_t do_init(void)
{
	const char *mode, *delay;
	unsigned int i;

	pthread_mutex_lock(&g_lock);
	config_load();
	pthread_mutex_unlock(&g_lock);
	delay = cfg("init_delay_ms");
	if (delay)
		usleep((useconds_t)strtoul(delay, NULL, 10) * 1000);
	mode = cfg("init");
	if (mode && strcmp(mode, "hang") == 0) {
		for (;;)
			sleep(1000);
	}
	if (mode && strcmp(mode, "mismatch") == 0)
		return NVML_ERROR_LIB_RM_VERSION_MISMATCH;
	if (mode && strcmp(mode, "driver_not_loaded") == 0)
		return NVML_ERROR_DRIVER_NOT_LOADED;
	if (mode && strcmp(mode, "unknown") == 0)
		return NVML_ERROR_UNKNOWN;
	g.gpu_count = cfg("gpu_count") ? (unsigned int)strtoul(cfg("gpu_count"), NULL, 10) : 0;
	if (g.gpu_count > MAX_GPUS)
		g.gpu_count = MAX_GPUS;
	for (i = 0; i < g.gpu_count; i++)
		g.devs[i].index = i;
	g.init_count++;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlInit(void);
nvmlReturn_t nvmlInit(void)
{
	return do_init();
}

nvmlReturn_t nvmlShutdown(void);
nvmlReturn_t nvmlShutdown(void)
{
	if (g.init_count <= 0)
		return NVML_ERROR_UNINITIALIZED;
	g.init_count--;
	return NVML_SUCCESS;
}

const char *nvmlErrorString(nvmlReturn_t r);
const char *nvmlErrorString(nvmlReturn_t r)
{
	switch (r) {
	case NVML_SUCCESS: return "Success";
	case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
	case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
	case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
	case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
	case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
	case NVML_ERROR_FUNCTION_NOT_FOUND: return "Function Not Found";
	case NVML_ERROR_LIB_RM_VERSION_MISMATCH: return "RM has detected an NVML/RM version mismatch.";
	default: return "Unknown Error";
	}
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *out, unsigned int len);
nvmlReturn_t nvmlSystemGetDriverVersion(char *out, unsigned int len)
{
	ENTER(NULL);
	return copy_str(out, len, cfg("driver_version"), 0);
}

nvmlReturn_t nvmlSystemGetNVMLVersion(char *out, unsigned int len);
nvmlReturn_t nvmlSystemGetNVMLVersion(char *out, unsigned int len)
{
	ENTER(NULL);
	return copy_str(out, len, cfg("nvml_version"), 0);
}

static nvmlReturn_t cuda_version(int *out)
{
	const char *v = cfg("cuda_driver_version");

	if (!v)
		return NVML_ERROR_NOT_SUPPORTED;
	if (!out)
		return NVML_ERROR_INVALID_ARGUMENT;
	*out = (int)strtol(v, NULL, 10);
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *out);
nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *out)
{
	ENTER(NULL);
	return cuda_version(out);
}

nvmlReturn_t nvmlDeviceGetCount(unsigned int *out);
nvmlReturn_t nvmlDeviceGetCount(unsigned int *out)
{
	ENTER(NULL);
	if (!out)
		return NVML_ERROR_INVALID_ARGUMENT;
	*out = g.gpu_count;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int i, nvmlDevice_t *out);
nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int i, nvmlDevice_t *out)
{
	ENTER(NULL);
	if (!out || i >= g.gpu_count)
		return NVML_ERROR_INVALID_ARGUMENT;
	*out = &g.devs[i];
	return NVML_SUCCESS;
}

/* ---- per device ---- */

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *out, unsigned int len);
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *out, unsigned int len)
{
	ENTER(d);
	return copy_str(out, len, gpu_cfg(d->index, "name"), d->index);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *out, unsigned int len);
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *out, unsigned int len)
{
	ENTER(d);
	return copy_str(out, len, gpu_cfg(d->index, "uuid"), d->index);
}

nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t d, char *out, unsigned int len);
nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t d, char *out, unsigned int len)
{
	ENTER(d);
	return copy_str(out, len, gpu_cfg(d->index, "serial"), d->index);
}

nvmlReturn_t nvmlDeviceGetVbiosVersion(nvmlDevice_t d, char *out, unsigned int len);
nvmlReturn_t nvmlDeviceGetVbiosVersion(nvmlDevice_t d, char *out, unsigned int len)
{
	ENTER(d);
	return copy_str(out, len, gpu_cfg(d->index, "vbios"), d->index);
}

/* Fills the PCI info; legacy is the layout before v3 (busId[16] at the start). */
static nvmlReturn_t pci_info(nvmlDevice_t d, nvmlPciInfo_t *out, int v3)
{
	const char *v = gpu_cfg(d->index, "pci");
	unsigned int dom = 0, bus = 0, dev = 0, fn = 0;

	if (!v)
		return NVML_ERROR_NOT_SUPPORTED;
	if (!out || sscanf(v, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) != 4)
		return NVML_ERROR_INVALID_ARGUMENT;
	memset(out, 0, v3 ? sizeof *out : 52);
	out->domain = dom;
	out->bus = bus;
	out->device = dev;
	out->pciDeviceId = 0x233010de;
	snprintf(out->busIdLegacy, sizeof out->busIdLegacy, "%04X:%02X:%02X.%X", dom, bus, dev, fn);
	if (v3)
		snprintf(out->busId, sizeof out->busId, "%08X:%02X:%02X.%X", dom, bus, dev, fn);
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t d, nvmlPciInfo_t *out);
nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t d, nvmlPciInfo_t *out)
{
	ENTER(d);
	return pci_info(d, out, 0);
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *out);
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *out)
{
	unsigned long long total, used = 0;
	nvmlReturn_t r;

	ENTER(d);
	r = get_ull(&total, d->index, "memory_total");
	if (r)
		return r;
	get_ull(&used, d->index, "memory_used");
	out->total = total;
	out->used = used;
	out->free = total - used;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *out);
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *out)
{
	nvmlReturn_t r;

	ENTER(d);
	r = get_uint(&out->gpu, d->index, "util_gpu");
	if (r)
		return r;
	out->memory = 0;
	get_uint(&out->memory, d->index, "util_memory");
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned int *out);
nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned int *out)
{
	ENTER(d);
	if (sensor != 0)
		return NVML_ERROR_INVALID_ARGUMENT;
	return get_uint(out, d->index, "temperature_c");
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int *out);
nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int *out)
{
	ENTER(d);
	return get_uint(out, d->index, "power_mw");
}

nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t d, unsigned int *out);
nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t d, unsigned int *out)
{
	ENTER(d);
	return get_uint(out, d->index, "power_limit_mw");
}

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, int type, unsigned int *out);
nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, int type, unsigned int *out)
{
	ENTER(d);
	if (type == 1)
		return get_uint(out, d->index, "clock_sm_mhz");
	if (type == 2)
		return get_uint(out, d->index, "clock_mem_mhz");
	return NVML_ERROR_NOT_SUPPORTED;
}

nvmlReturn_t nvmlDeviceGetPerformanceState(nvmlDevice_t d, int *out);
nvmlReturn_t nvmlDeviceGetPerformanceState(nvmlDevice_t d, int *out)
{
	unsigned int v;
	nvmlReturn_t r;

	ENTER(d);
	r = get_uint(&v, d->index, "pstate");
	if (r == NVML_SUCCESS)
		*out = (int)v;
	return r;
}

nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t d, unsigned long long *out);
nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t d, unsigned long long *out)
{
	ENTER(d);
	return get_ull(out, d->index, "clock_event_reasons");
}

nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t d, int *current, int *pending);
nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t d, int *current, int *pending)
{
	unsigned int c, p;
	nvmlReturn_t r;

	ENTER(d);
	r = get_uint(&c, d->index, "ecc_mode");
	if (r)
		return r;
	p = c;
	get_uint(&p, d->index, "ecc_pending");
	*current = (int)c;
	*pending = (int)p;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t d, int type, int counter, unsigned long long *out);
nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t d, int type, int counter, unsigned long long *out)
{
	static const char *const names[2][2] = {
		{ "ecc_volatile_corrected", "ecc_aggregate_corrected" },
		{ "ecc_volatile_uncorrected", "ecc_aggregate_uncorrected" },
	};

	ENTER(d);
	if (type < 0 || type > 1 || counter < 0 || counter > 1)
		return NVML_ERROR_INVALID_ARGUMENT;
	return get_ull(out, d->index, names[type][counter]);
}

nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t d, int cause, unsigned int *count,
				       unsigned long long *addrs);
nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t d, int cause, unsigned int *count,
				       unsigned long long *addrs)
{
	unsigned int n, i;
	nvmlReturn_t r;

	ENTER(d);
	r = get_uint(&n, d->index, cause == 0 ? "retired_sbe" : "retired_dbe");
	if (r)
		return r;
	if (!count)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (*count < n) {
		*count = n;
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	for (i = 0; i < n && addrs; i++)
		addrs[i] = 0x1000ULL * (i + 1);
	*count = n;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t d, int *out);
nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t d, int *out)
{
	unsigned int v;
	nvmlReturn_t r;

	ENTER(d);
	r = get_uint(&v, d->index, "retired_pending");
	if (r == NVML_SUCCESS)
		*out = (int)v;
	return r;
}

nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t d, int *out);
nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t d, int *out)
{
	unsigned int v;
	nvmlReturn_t r;

	ENTER(d);
	r = get_uint(&v, d->index, "persistence");
	if (r == NVML_SUCCESS)
		*out = (int)v;
	return r;
}

nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t d, unsigned int link, int *out);
nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t d, unsigned int link, int *out)
{
	const char *v;
	unsigned int i = 0;

	ENTER(d);
	/* nvlinks = "1,1,0,...": one state per link */
	v = gpu_cfg(d->index, "nvlinks");
	if (!v)
		return NVML_ERROR_NOT_SUPPORTED;
	while (*v) {
		if (i == link) {
			*out = (*v == '1');
			return NVML_SUCCESS;
		}
		v = strchr(v, ',');
		if (!v)
			break;
		v++;
		i++;
	}
	return NVML_ERROR_INVALID_ARGUMENT;
}

nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t d, int type, unsigned int *out);
nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t d, int type, unsigned int *out)
{
	ENTER(d);
	if (type == 1)
		return get_uint(out, d->index, "clock_sm_max_mhz");
	if (type == 2)
		return get_uint(out, d->index, "clock_mem_max_mhz");
	return NVML_ERROR_NOT_SUPPORTED;
}

nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t d, unsigned int *out);
nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t d, unsigned int *out)
{
	ENTER(d);
	return get_uint(out, d->index, "pcie_replay_count");
}

nvmlReturn_t nvmlDeviceGetNvLinkErrorCounter(nvmlDevice_t d, unsigned int link, int counter,
					     unsigned long long *out);
nvmlReturn_t nvmlDeviceGetNvLinkErrorCounter(nvmlDevice_t d, unsigned int link, int counter,
					     unsigned long long *out)
{
	char field[48];
	const char *v;
	int i;

	ENTER(d);
	if (counter < 0 || counter > 3 || !out)
		return NVML_ERROR_INVALID_ARGUMENT;
	/* nvlink_errors.L = "replay,recovery,crc_flit,crc_data" */
	snprintf(field, sizeof field, "nvlink_errors.%u", link);
	v = gpu_cfg(d->index, field);
	if (!v)
		return NVML_ERROR_NOT_SUPPORTED;
	for (i = 0; i < counter && v; i++)
		if ((v = strchr(v, ',')))
			v++;
	if (!v)
		return NVML_ERROR_NOT_SUPPORTED;
	*out = strtoull(v, NULL, 0);
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetFanSpeed(nvmlDevice_t d, unsigned int *out);
nvmlReturn_t nvmlDeviceGetFanSpeed(nvmlDevice_t d, unsigned int *out)
{
	ENTER(d);
	return get_uint(out, d->index, "fan_percent");
}

/* processes = "pid:bytes,pid:bytes" */
static nvmlReturn_t processes(nvmlDevice_t d, unsigned int *count, void *infos, int v1)
{
	const char *v = gpu_cfg(d->index, "processes");
	unsigned int n = 0, i = 0;
	const char *p;

	if (!v)
		return NVML_ERROR_NOT_SUPPORTED;
	if (!count)
		return NVML_ERROR_INVALID_ARGUMENT;
	for (p = v; *p; p++)
		if (*p == ':')
			n++;
	if (*count < n || (n && !infos)) {
		*count = n;
		return n ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS;
	}
	p = v;
	while (i < n && p) {
		unsigned int pid = (unsigned int)strtoul(p, (char **)&p, 10);
		unsigned long long mem = (*p == ':') ? strtoull(p + 1, (char **)&p, 10) : 0;

		if (v1) {
			nvmlProcessInfo_v1_t *o = (nvmlProcessInfo_v1_t *)infos + i;
			o->pid = pid;
			o->usedGpuMemory = mem;
		} else {
			nvmlProcessInfo_t *o = (nvmlProcessInfo_t *)infos + i;
			o->pid = pid;
			o->usedGpuMemory = mem;
			o->gpuInstanceId = 0xffffffff;
			o->computeInstanceId = 0xffffffff;
		}
		i++;
		p = strchr(p, ',');
		if (p)
			p++;
	}
	*count = i;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t d, unsigned int *count,
						  nvmlProcessInfo_v1_t *infos);
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t d, unsigned int *count,
						  nvmlProcessInfo_v1_t *infos)
{
	ENTER(d);
	return processes(d, count, infos, 1);
}

/* process_names = "pid:name,pid:name" (a name may be a path, as the driver gives it) */
nvmlReturn_t nvmlSystemGetProcessName(unsigned int pid, char *name, unsigned int length);
nvmlReturn_t nvmlSystemGetProcessName(unsigned int pid, char *name, unsigned int length)
{
	const char *v, *p;

	ENTER(NULL);
	v = cfg("process_names");
	if (!v)
		return NVML_ERROR_NOT_FOUND;
	for (p = v; p && *p;) {
		char *end;
		unsigned long got = strtoul(p, &end, 10);

		if (*end == ':' && got == pid) {
			size_t n = strcspn(end + 1, ",");
			char one[256];

			snprintf(one, sizeof one, "%.*s", (int)n, end + 1);
			return copy_str(name, length, one, 0);
		}
		p = strchr(p, ',');
		if (p)
			p++;
	}
	return NVML_ERROR_NOT_FOUND;
}

/* ---- events (Xid) ---- */

nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *out);
nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *out)
{
	ENTER(NULL);
	*out = calloc(1, sizeof **out);
	return *out ? NVML_SUCCESS : NVML_ERROR_UNKNOWN;
}

nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set);
nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set)
{
	free(set);
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t d, unsigned long long types, nvmlEventSet_t set);
nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t d, unsigned long long types, nvmlEventSet_t set)
{
	ENTER(d);
	if (!set || !(types & EVENT_XID))
		return NVML_ERROR_INVALID_ARGUMENT;
	set->gpus[d->index] = 1;
	return NVML_SUCCESS;
}

/* xid_events = "79,48": delivered once each, then the wait times out. */
static nvmlReturn_t event_wait(nvmlEventSet_t set, nvmlEventData_t *out)
{
	unsigned int i;

	for (i = 0; i < g.gpu_count; i++) {
		const char *v = gpu_cfg(i, "xid_events");
		const char *p = v;
		int k = 0;

		if (!set->gpus[i] || !v)
			continue;
		while (p && *p) {
			unsigned long long xid = strtoull(p, NULL, 10);

			if (k == g.devs[i].xid_delivered) {
				g.devs[i].xid_delivered++;
				memset(out, 0, sizeof *out);
				out->device = &g.devs[i];
				out->eventType = EVENT_XID;
				out->eventData = xid;
				return NVML_SUCCESS;
			}
			k++;
			p = strchr(p, ',');
			if (p)
				p++;
		}
	}
	return NVML_ERROR_TIMEOUT;
}

nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t *out, unsigned int ms);
nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t *out, unsigned int ms)
{
	(void)ms;
	ENTER(NULL);
	return event_wait(set, out);
}

#ifndef FAKE_NVML_OLD
/* ---- the versioned symbols of current drivers ---- */

nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlInit_v2(void)
{
	return do_init();
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *out);
nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *out)
{
	ENTER(NULL);
	return cuda_version(out);
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *out);
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *out)
{
	ENTER(NULL);
	*out = g.gpu_count;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *out);
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *out)
{
	ENTER(NULL);
	if (!out || i >= g.gpu_count)
		return NVML_ERROR_INVALID_ARGUMENT;
	*out = &g.devs[i];
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *out);
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *out)
{
	ENTER(d);
	return pci_info(d, out, 1);
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t d, nvmlMemory_v2_t *out);
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t d, nvmlMemory_v2_t *out)
{
	unsigned long long total, used = 0, reserved = 0;
	nvmlReturn_t r;

	ENTER(d);
	if (!out || out->version != ((unsigned int)sizeof *out | (2u << 24)))
		return 25; /* NVML_ERROR_ARGUMENT_VERSION_MISMATCH */
	r = get_ull(&total, d->index, "memory_total");
	if (r)
		return r;
	get_ull(&used, d->index, "memory_used");
	get_ull(&reserved, d->index, "memory_reserved");
	out->total = total;
	out->used = used;
	out->reserved = reserved;
	out->free = total - used - reserved;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t d, unsigned long long *out);
nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t d, unsigned long long *out)
{
	ENTER(d);
	return get_ull(out, d->index, "clock_event_reasons");
}

nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t d, unsigned int *corr, unsigned int *unc,
				       unsigned int *pending, unsigned int *failure);
nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t d, unsigned int *corr, unsigned int *unc,
				       unsigned int *pending, unsigned int *failure)
{
	nvmlReturn_t r;

	ENTER(d);
	r = get_uint(corr, d->index, "remap_corrected");
	if (r)
		return r;
	*unc = *pending = *failure = 0;
	get_uint(unc, d->index, "remap_uncorrected");
	get_uint(pending, d->index, "remap_pending");
	get_uint(failure, d->index, "remap_failure");
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned int *current, unsigned int *pending);
nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned int *current, unsigned int *pending)
{
	nvmlReturn_t r;

	ENTER(d);
	r = get_uint(current, d->index, "mig_mode");
	if (r)
		return r;
	*pending = *current;
	get_uint(pending, d->index, "mig_pending");
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned int *count,
						     nvmlProcessInfo_t *infos);
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned int *count,
						     nvmlProcessInfo_t *infos)
{
	ENTER(d);
	return processes(d, count, infos, 0);
}

nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *out, unsigned int ms);
nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *out, unsigned int ms)
{
	(void)ms;
	ENTER(NULL);
	return event_wait(set, out);
}
#endif
