/* SPDX-License-Identifier: Apache-2.0 */
/* NVML through dlopen: the few types we use are declared here, so no nvml.h is needed to build. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kiln/error.h"
#include "nvml.h"
#include "xid.h"

/* ---- NVML's ABI, as far as the agent uses it ---- */

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct nvmlEventSet_st *nvmlEventSet_t;

enum {
	NVML_SUCCESS = 0,
	NVML_ERROR_NOT_SUPPORTED = 3,
	NVML_ERROR_INSUFFICIENT_SIZE = 7,
	NVML_ERROR_DRIVER_NOT_LOADED = 9,
	NVML_ERROR_FUNCTION_NOT_FOUND = 13,
	NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
	NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
};

#define NVML_TEMPERATURE_GPU 0
#define NVML_CLOCK_SM 1
#define NVML_CLOCK_MEM 2
#define NVML_MEMORY_ERROR_TYPE_CORRECTED 0
#define NVML_MEMORY_ERROR_TYPE_UNCORRECTED 1
#define NVML_VOLATILE_ECC 0
#define NVML_AGGREGATE_ECC 1
#define NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS 0
#define NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR 1
#define NVML_NVLINK_MAX_LINKS 18
#define NVML_NVLINK_ERROR_DL_REPLAY 0
#define NVML_NVLINK_ERROR_DL_RECOVERY 1
#define NVML_NVLINK_ERROR_DL_CRC_FLIT 2
#define NVML_NVLINK_ERROR_DL_CRC_DATA 3
#define NVML_EVENT_TYPE_XID_CRITICAL_ERROR 0x8ULL

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

typedef struct { /* nvmlProcessInfo_v1_t: the unversioned symbol */
	unsigned int pid;
	unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

typedef struct { /* _v2 and _v3 */
	unsigned int pid;
	unsigned long long usedGpuMemory;
	unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;

typedef struct {
	nvmlDevice_t device;
	unsigned long long eventType, eventData;
	unsigned int gpuInstanceId, computeInstanceId;
} nvmlEventData_t;

struct nvml_fns {
	nvmlReturn_t (*init)(void);
	nvmlReturn_t (*shutdown)(void);
	const char *(*error_string)(nvmlReturn_t);
	nvmlReturn_t (*driver_version)(char *, unsigned int);
	nvmlReturn_t (*nvml_version)(char *, unsigned int);
	nvmlReturn_t (*cuda_version)(int *);
	nvmlReturn_t (*count)(unsigned int *);
	nvmlReturn_t (*handle)(unsigned int, nvmlDevice_t *);
	nvmlReturn_t (*name)(nvmlDevice_t, char *, unsigned int);
	nvmlReturn_t (*uuid)(nvmlDevice_t, char *, unsigned int);
	nvmlReturn_t (*serial)(nvmlDevice_t, char *, unsigned int);
	nvmlReturn_t (*vbios)(nvmlDevice_t, char *, unsigned int);
	nvmlReturn_t (*pci_v3)(nvmlDevice_t, nvmlPciInfo_t *);
	nvmlReturn_t (*pci_old)(nvmlDevice_t, void *);
	nvmlReturn_t (*mem_v2)(nvmlDevice_t, nvmlMemory_v2_t *);
	nvmlReturn_t (*mem_v1)(nvmlDevice_t, nvmlMemory_t *);
	nvmlReturn_t (*util)(nvmlDevice_t, nvmlUtilization_t *);
	nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned int *);
	nvmlReturn_t (*power)(nvmlDevice_t, unsigned int *);
	nvmlReturn_t (*power_limit)(nvmlDevice_t, unsigned int *);
	nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned int *);
	nvmlReturn_t (*max_clock)(nvmlDevice_t, int, unsigned int *);
	nvmlReturn_t (*pstate)(nvmlDevice_t, int *);
	nvmlReturn_t (*clock_reasons)(nvmlDevice_t, unsigned long long *);
	nvmlReturn_t (*ecc_mode)(nvmlDevice_t, int *, int *);
	nvmlReturn_t (*ecc_total)(nvmlDevice_t, int, int, unsigned long long *);
	nvmlReturn_t (*retired)(nvmlDevice_t, int, unsigned int *, unsigned long long *);
	nvmlReturn_t (*retired_pending)(nvmlDevice_t, int *);
	nvmlReturn_t (*remapped)(nvmlDevice_t, unsigned int *, unsigned int *, unsigned int *,
				 unsigned int *);
	nvmlReturn_t (*persistence)(nvmlDevice_t, int *);
	nvmlReturn_t (*mig)(nvmlDevice_t, unsigned int *, unsigned int *);
	nvmlReturn_t (*nvlink_state)(nvmlDevice_t, unsigned int, int *);
	nvmlReturn_t (*nvlink_errors)(nvmlDevice_t, unsigned int, int, unsigned long long *);
	nvmlReturn_t (*pcie_replay)(nvmlDevice_t, unsigned int *);
	nvmlReturn_t (*fan)(nvmlDevice_t, unsigned int *);
	nvmlReturn_t (*procs_v3)(nvmlDevice_t, unsigned int *, nvmlProcessInfo_t *);
	nvmlReturn_t (*procs_v1)(nvmlDevice_t, unsigned int *, nvmlProcessInfo_v1_t *);
	nvmlReturn_t (*proc_name)(unsigned int, char *, unsigned int);
	nvmlReturn_t (*event_set_create)(nvmlEventSet_t *);
	nvmlReturn_t (*event_set_free)(nvmlEventSet_t);
	nvmlReturn_t (*register_events)(nvmlDevice_t, unsigned long long, nvmlEventSet_t);
	nvmlReturn_t (*event_wait)(nvmlEventSet_t, nvmlEventData_t *, unsigned int);
};

/* Each function and the symbols that provide it, newest first. */
static const struct {
	size_t offset;
	const char *names[3];
} symbols[] = {
#define S(field, ...) { offsetof(struct nvml_fns, field), { __VA_ARGS__ } }
	S(init, "nvmlInit_v2", "nvmlInit"),
	S(shutdown, "nvmlShutdown"),
	S(error_string, "nvmlErrorString"),
	S(driver_version, "nvmlSystemGetDriverVersion"),
	S(nvml_version, "nvmlSystemGetNVMLVersion"),
	S(cuda_version, "nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion"),
	S(count, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"),
	S(handle, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"),
	S(name, "nvmlDeviceGetName"),
	S(uuid, "nvmlDeviceGetUUID"),
	S(serial, "nvmlDeviceGetSerial"),
	S(vbios, "nvmlDeviceGetVbiosVersion"),
	S(pci_v3, "nvmlDeviceGetPciInfo_v3"),
	S(pci_old, "nvmlDeviceGetPciInfo_v2", "nvmlDeviceGetPciInfo"),
	S(mem_v2, "nvmlDeviceGetMemoryInfo_v2"),
	S(mem_v1, "nvmlDeviceGetMemoryInfo"),
	S(util, "nvmlDeviceGetUtilizationRates"),
	S(temperature, "nvmlDeviceGetTemperature"),
	S(power, "nvmlDeviceGetPowerUsage"),
	S(power_limit, "nvmlDeviceGetEnforcedPowerLimit"),
	S(clock, "nvmlDeviceGetClockInfo"),
	S(max_clock, "nvmlDeviceGetMaxClockInfo"),
	S(pstate, "nvmlDeviceGetPerformanceState"),
	S(clock_reasons, "nvmlDeviceGetCurrentClocksEventReasons",
	  "nvmlDeviceGetCurrentClocksThrottleReasons"),
	S(ecc_mode, "nvmlDeviceGetEccMode"),
	S(ecc_total, "nvmlDeviceGetTotalEccErrors"),
	S(retired, "nvmlDeviceGetRetiredPages"),
	S(retired_pending, "nvmlDeviceGetRetiredPagesPendingStatus"),
	S(remapped, "nvmlDeviceGetRemappedRows"),
	S(persistence, "nvmlDeviceGetPersistenceMode"),
	S(mig, "nvmlDeviceGetMigMode"),
	S(nvlink_state, "nvmlDeviceGetNvLinkState"),
	S(nvlink_errors, "nvmlDeviceGetNvLinkErrorCounter"),
	S(pcie_replay, "nvmlDeviceGetPcieReplayCounter"),
	S(fan, "nvmlDeviceGetFanSpeed"),
	S(procs_v3, "nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2"),
	S(procs_v1, "nvmlDeviceGetComputeRunningProcesses"),
	S(proc_name, "nvmlSystemGetProcessName"),
	S(event_set_create, "nvmlEventSetCreate"),
	S(event_set_free, "nvmlEventSetFree"),
	S(register_events, "nvmlDeviceRegisterEvents"),
	S(event_wait, "nvmlEventSetWait_v2", "nvmlEventSetWait"),
#undef S
};

/* The most GPUs and processes read per report. */
#define MAX_GPUS 64
#define MAX_PROCS 4096
#define MAX_EVENTS_PER_POLL 256

enum nvml_state { NVML_IDLE, NVML_PENDING, NVML_READY };

/* An nvmlInit running in its own thread; it may outlive the struct nvml that started it. */
struct init_job {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int done;
	nvmlReturn_t rc;
	nvmlReturn_t (*init)(void);
};

struct nvml {
	void *lib;
	char load_error[256];
	struct nvml_fns f;
	int timeout_s;
	enum nvml_state state;
	struct init_job *job;
	nvmlEventSet_t events;
	unsigned int ngpus;
	nvmlDevice_t handles[MAX_GPUS];
	char pci[MAX_GPUS][32];
};

/* Jobs whose init never returned: kept reachable, never freed, as the thread may still use them. */
static struct init_job *abandoned_jobs[8];

static const char *errstr(const struct nvml *n, nvmlReturn_t r)
{
	const char *s = n->f.error_string ? n->f.error_string(r) : NULL;

	return s ? s : "unknown NVML error";
}

int nvml_open(struct nvml **out, const char *lib_path, int init_timeout_s)
{
	struct nvml *n = calloc(1, sizeof *n);
	size_t i, k;

	if (!n)
		return kiln_fail(KILN_ERROR, "out of memory");
	n->timeout_s = init_timeout_s > 0 ? init_timeout_s : 10;
	n->lib = dlopen(lib_path ? lib_path : "libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!n->lib) {
		const char *e = dlerror();

		snprintf(n->load_error, sizeof n->load_error, "%s", e ? e : "dlopen failed");
	} else {
		for (i = 0; i < sizeof symbols / sizeof symbols[0]; i++) {
			for (k = 0; k < 3 && symbols[i].names[k]; k++) {
				void *sym = dlsym(n->lib, symbols[i].names[k]);

				if (sym) {
					/* POSIX: object and function pointers convert through memcpy */
					memcpy((char *)&n->f + symbols[i].offset, &sym, sizeof sym);
					break;
				}
			}
		}
		if (!n->f.init || !n->f.count || !n->f.handle) {
			snprintf(n->load_error, sizeof n->load_error,
				 "%s lacks nvmlInit/nvmlDeviceGetCount/nvmlDeviceGetHandleByIndex",
				 lib_path ? lib_path : "libnvidia-ml.so.1");
			dlclose(n->lib);
			n->lib = NULL;
		}
	}
	*out = n;
	return 0;
}

static void *init_thread(void *arg)
{
	struct init_job *job = arg;
	nvmlReturn_t rc = job->init();

	pthread_mutex_lock(&job->lock);
	job->rc = rc;
	job->done = 1;
	pthread_cond_signal(&job->cond);
	pthread_mutex_unlock(&job->lock);
	return NULL;
}

static void job_free(struct init_job *job)
{
	if (!job)
		return;
	pthread_mutex_destroy(&job->lock);
	pthread_cond_destroy(&job->cond);
	free(job);
}

/* Starts nvmlInit in a detached thread. */
static int init_start(struct nvml *n)
{
	pthread_condattr_t ca;
	pthread_attr_t ta;
	pthread_t t;
	struct init_job *job = calloc(1, sizeof *job);
	int rc;

	if (!job)
		return kiln_fail(KILN_ERROR, "out of memory");
	pthread_mutex_init(&job->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&job->cond, &ca);
	pthread_condattr_destroy(&ca);
	job->init = n->f.init;
	pthread_attr_init(&ta);
	pthread_attr_setdetachstate(&ta, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&t, &ta, init_thread, job);
	pthread_attr_destroy(&ta);
	if (rc != 0) {
		job_free(job);
		return kiln_fail(KILN_ERROR, "nvmlInit thread: %s", strerror(rc));
	}
	n->job = job;
	n->state = NVML_PENDING;
	return 0;
}

/* Waits for the init job up to timeout_s (0: just look). 1 when it finished, 0 when not. */
static int init_wait(struct nvml *n, int timeout_s)
{
	struct timespec until;
	int done;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += timeout_s;
	pthread_mutex_lock(&n->job->lock);
	while (!n->job->done) {
		if (pthread_cond_timedwait(&n->job->cond, &n->job->lock, &until) == ETIMEDOUT)
			break;
	}
	done = n->job->done;
	pthread_mutex_unlock(&n->job->lock);
	return done;
}

static void events_setup(struct nvml *n)
{
	unsigned int count = 0, i;

	if (!n->f.event_set_create || !n->f.register_events || !n->f.event_wait)
		return;
	if (n->f.count(&count) != NVML_SUCCESS || n->f.event_set_create(&n->events) != NVML_SUCCESS) {
		n->events = NULL;
		return;
	}
	for (i = 0; i < count && i < MAX_GPUS; i++) {
		nvmlDevice_t d;

		if (n->f.handle(i, &d) == NVML_SUCCESS)
			n->f.register_events(d, NVML_EVENT_TYPE_XID_CRITICAL_ERROR, n->events);
	}
}

static void set_status(json_t *nvidia, const char *status, const char *error)
{
	json_object_set_new(nvidia, "status", json_string(status));
	if (error)
		json_object_set_new(nvidia, "error", json_string(error));
}

/* Brings NVML to READY if it can; otherwise sets the status and returns 0 (not ready) or <0. */
static int ensure_ready(struct nvml *n, json_t *nvidia)
{
	char msg[300];
	nvmlReturn_t rc;
	int r;

	if (n->state == NVML_READY)
		return 1;
	if (n->state == NVML_IDLE) {
		r = init_start(n);
		if (r < 0)
			return r;
		if (!init_wait(n, n->timeout_s)) {
			snprintf(msg, sizeof msg, "nvmlInit did not return within %d s", n->timeout_s);
			set_status(nvidia, "error", msg);
			return 0;
		}
	} else if (!init_wait(n, 0)) {
		set_status(nvidia, "error", "nvmlInit has not returned yet (hung in the driver)");
		return 0;
	}
	rc = n->job->rc;
	job_free(n->job);
	n->job = NULL;
	n->state = NVML_IDLE;
	if (rc == NVML_SUCCESS) {
		n->state = NVML_READY;
		events_setup(n);
		return 1;
	}
	snprintf(msg, sizeof msg, "nvmlInit: %s (%d)", errstr(n, rc), rc);
	if (rc == NVML_ERROR_LIB_RM_VERSION_MISMATCH)
		set_status(nvidia, "mismatch", msg);
	else if (rc == NVML_ERROR_DRIVER_NOT_LOADED)
		set_status(nvidia, "no_driver", msg);
	else
		set_status(nvidia, "error", msg);
	return 0;
}

/* 1 when r is success; otherwise records r under field in errs unless it means "not there". */
static int ok(const struct nvml *n, json_t *errs, const char *field, nvmlReturn_t r)
{
	if (r == NVML_SUCCESS)
		return 1;
	if (r != NVML_ERROR_NOT_SUPPORTED && r != NVML_ERROR_FUNCTION_NOT_FOUND)
		json_object_set_new(errs, field, json_string(errstr(n, r)));
	return 0;
}

#define CALL(fn, ...) (n->f.fn ? n->f.fn(__VA_ARGS__) : NVML_ERROR_FUNCTION_NOT_FOUND)

static void set_int(json_t *o, const char *k, long long v)
{
	json_object_set_new(o, k, json_integer((json_int_t)v));
}

static void gpu_strings(struct nvml *n, nvmlDevice_t d, json_t *g, json_t *errs)
{
	char buf[128];

	if (ok(n, errs, "name", CALL(name, d, buf, sizeof buf)))
		json_object_set_new(g, "name", json_string(buf));
	if (ok(n, errs, "uuid", CALL(uuid, d, buf, sizeof buf)))
		json_object_set_new(g, "uuid", json_string(buf));
	if (ok(n, errs, "serial", CALL(serial, d, buf, sizeof buf)))
		json_object_set_new(g, "serial", json_string(buf));
	if (ok(n, errs, "vbios_version", CALL(vbios, d, buf, sizeof buf)))
		json_object_set_new(g, "vbios_version", json_string(buf));
}

static void gpu_pci(struct nvml *n, nvmlDevice_t d, unsigned int idx, json_t *g, json_t *errs)
{
	union {
		nvmlPciInfo_t v3;
		char pad[256]; /* older layouts, whatever their size */
	} info;
	char id[32];
	nvmlReturn_t r;

	memset(&info, 0, sizeof info);
	r = CALL(pci_v3, d, &info.v3);
	if (r == NVML_SUCCESS) {
		info.v3.busId[sizeof info.v3.busId - 1] = '\0';
		if (xid_pci_normalize(id, info.v3.busId) < 0)
			snprintf(id, sizeof id, "%08X:%02X:%02X.0", info.v3.domain, info.v3.bus,
				 info.v3.device);
	} else {
		if (r != NVML_ERROR_FUNCTION_NOT_FOUND && r != NVML_ERROR_NOT_SUPPORTED) {
			ok(n, errs, "pci_bus_id", r);
			return;
		}
		memset(&info, 0, sizeof info);
		if (!ok(n, errs, "pci_bus_id", CALL(pci_old, d, &info)))
			return;
		/* every layout starts with the bus id text */
		info.pad[sizeof info.pad - 1] = '\0';
		if (xid_pci_normalize(id, info.pad) < 0)
			return;
	}
	json_object_set_new(g, "pci_bus_id", json_string(id));
	if (idx < MAX_GPUS)
		memcpy(n->pci[idx], id, sizeof id);
}

static void gpu_memory(struct nvml *n, nvmlDevice_t d, json_t *g, json_t *errs)
{
	nvmlMemory_v2_t m2;
	nvmlMemory_t m1;
	nvmlReturn_t r;

	memset(&m2, 0, sizeof m2);
	m2.version = (unsigned int)sizeof m2 | (2u << 24);
	r = CALL(mem_v2, d, &m2);
	if (r == NVML_SUCCESS) {
		set_int(g, "memory_total_bytes", (long long)m2.total);
		set_int(g, "memory_used_bytes", (long long)m2.used);
		set_int(g, "memory_reserved_bytes", (long long)m2.reserved);
		return;
	}
	if (r != NVML_ERROR_FUNCTION_NOT_FOUND && r != NVML_ERROR_NOT_SUPPORTED &&
	    r != NVML_ERROR_ARGUMENT_VERSION_MISMATCH) {
		ok(n, errs, "memory", r);
		return;
	}
	if (ok(n, errs, "memory", CALL(mem_v1, d, &m1))) {
		set_int(g, "memory_total_bytes", (long long)m1.total);
		set_int(g, "memory_used_bytes", (long long)m1.used);
	}
}

static const struct {
	unsigned long long bit;
	const char *name;
} clock_reasons[] = {
	{ 0x1, "gpu_idle" },
	{ 0x2, "applications_clocks_setting" },
	{ 0x4, "sw_power_cap" },
	{ 0x8, "hw_slowdown" },
	{ 0x10, "sync_boost" },
	{ 0x20, "sw_thermal_slowdown" },
	{ 0x40, "hw_thermal_slowdown" },
	{ 0x80, "hw_power_brake_slowdown" },
	{ 0x100, "display_clock_setting" },
};

static void gpu_sensors(struct nvml *n, nvmlDevice_t d, json_t *g, json_t *errs)
{
	nvmlUtilization_t u;
	unsigned long long reasons;
	unsigned int v;
	int p;
	size_t i;

	if (ok(n, errs, "utilization", CALL(util, d, &u))) {
		set_int(g, "utilization_gpu_pct", u.gpu);
		set_int(g, "utilization_memory_pct", u.memory);
	}
	if (ok(n, errs, "temperature_c", CALL(temperature, d, NVML_TEMPERATURE_GPU, &v)))
		set_int(g, "temperature_c", v);
	if (ok(n, errs, "power_draw_w", CALL(power, d, &v)))
		json_object_set_new(g, "power_draw_w", json_real(v / 1000.0));
	if (ok(n, errs, "power_limit_w", CALL(power_limit, d, &v)))
		json_object_set_new(g, "power_limit_w", json_real(v / 1000.0));
	if (ok(n, errs, "clock_sm_mhz", CALL(clock, d, NVML_CLOCK_SM, &v)))
		set_int(g, "clock_sm_mhz", v);
	if (ok(n, errs, "clock_mem_mhz", CALL(clock, d, NVML_CLOCK_MEM, &v)))
		set_int(g, "clock_mem_mhz", v);
	if (ok(n, errs, "clock_sm_max_mhz", CALL(max_clock, d, NVML_CLOCK_SM, &v)))
		set_int(g, "clock_sm_max_mhz", v);
	if (ok(n, errs, "clock_mem_max_mhz", CALL(max_clock, d, NVML_CLOCK_MEM, &v)))
		set_int(g, "clock_mem_max_mhz", v);
	if (ok(n, errs, "pstate", CALL(pstate, d, &p)) && p >= 0 && p <= 15)
		set_int(g, "pstate", p);
	if (ok(n, errs, "clock_event_reasons", CALL(clock_reasons, d, &reasons))) {
		json_t *names = json_array();

		set_int(g, "clock_event_reasons", (long long)reasons);
		for (i = 0; i < sizeof clock_reasons / sizeof clock_reasons[0]; i++)
			if (reasons & clock_reasons[i].bit)
				json_array_append_new(names, json_string(clock_reasons[i].name));
		json_object_set_new(g, "clock_event_reason_names", names);
	}
	if (ok(n, errs, "fan_speed_pct", CALL(fan, d, &v)))
		set_int(g, "fan_speed_pct", v);
}

static void gpu_memory_health(struct nvml *n, nvmlDevice_t d, json_t *g, json_t *errs)
{
	static const struct {
		const char *field;
		int type, counter;
	} ecc[] = {
		{ "ecc_volatile_corrected", NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC },
		{ "ecc_volatile_uncorrected", NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC },
		{ "ecc_aggregate_corrected", NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_AGGREGATE_ECC },
		{ "ecc_aggregate_uncorrected", NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC },
	};
	unsigned long long count;
	unsigned int corr, unc, pend, fail, pages;
	int cur, pending;
	size_t i;

	if (ok(n, errs, "ecc_enabled", CALL(ecc_mode, d, &cur, &pending))) {
		json_object_set_new(g, "ecc_enabled", json_boolean(cur));
		json_object_set_new(g, "ecc_pending_enabled", json_boolean(pending));
	}
	for (i = 0; i < sizeof ecc / sizeof ecc[0]; i++)
		if (ok(n, errs, ecc[i].field, CALL(ecc_total, d, ecc[i].type, ecc[i].counter, &count)))
			set_int(g, ecc[i].field, (long long)count);
	for (i = 0; i < 2; i++) {
		const char *field = i == 0 ? "retired_pages_sbe" : "retired_pages_dbe";
		nvmlReturn_t r;

		pages = 0;
		r = CALL(retired, d, (int)i, &pages, NULL);
		if (r == NVML_ERROR_INSUFFICIENT_SIZE)
			r = NVML_SUCCESS;
		if (ok(n, errs, field, r))
			set_int(g, field, pages);
	}
	if (ok(n, errs, "retired_pages_pending", CALL(retired_pending, d, &pending)))
		json_object_set_new(g, "retired_pages_pending", json_boolean(pending));
	if (ok(n, errs, "remapped_rows", CALL(remapped, d, &corr, &unc, &pend, &fail))) {
		set_int(g, "remapped_rows_corrected", corr);
		set_int(g, "remapped_rows_uncorrected", unc);
		json_object_set_new(g, "remapped_rows_pending", json_boolean(pend));
		json_object_set_new(g, "remapped_rows_failure", json_boolean(fail));
	}
}

/* An active link's NVLink error counters (volatile: since the driver loaded), or NULL when
 * none answers. A counter that fails otherwise than not supported is recorded in errs. */
static json_t *nvlink_counters(struct nvml *n, nvmlDevice_t d, unsigned int link, json_t *errs)
{
	static const struct {
		int counter;
		const char *key;
	} counters[] = {
		{ NVML_NVLINK_ERROR_DL_REPLAY, "replay" },
		{ NVML_NVLINK_ERROR_DL_RECOVERY, "recovery" },
		{ NVML_NVLINK_ERROR_DL_CRC_FLIT, "crc_flit" },
		{ NVML_NVLINK_ERROR_DL_CRC_DATA, "crc_data" },
	};
	json_t *o = NULL;
	unsigned long long v;
	size_t i;

	for (i = 0; i < sizeof counters / sizeof counters[0]; i++) {
		if (!ok(n, errs, "nvlink_errors", CALL(nvlink_errors, d, link, counters[i].counter, &v)))
			continue;
		if (!o && !(o = json_pack("{s:i}", "link", (json_int_t)link)))
			return NULL;
		set_int(o, counters[i].key, (long long)v);
	}
	return o;
}

/* The link error counters: PCIe replays, and each active NVLink's error counters. */
static void gpu_link_errors(struct nvml *n, nvmlDevice_t d, json_t *g, json_t *errs)
{
	unsigned int v, link;
	json_t *arr = NULL, *o;
	int mode;

	if (ok(n, errs, "pcie_replay_count", CALL(pcie_replay, d, &v)))
		set_int(g, "pcie_replay_count", v);
	for (link = 0; n->f.nvlink_state && n->f.nvlink_errors && link < NVML_NVLINK_MAX_LINKS;
	     link++) {
		if (n->f.nvlink_state(d, link, &mode) != NVML_SUCCESS || !mode)
			continue;
		if (!(o = nvlink_counters(n, d, link, errs)))
			continue;
		if (!arr)
			arr = json_array();
		json_array_append_new(arr, o);
	}
	if (arr)
		json_object_set_new(g, "nvlink_errors", arr);
}

static void gpu_modes(struct nvml *n, nvmlDevice_t d, json_t *g, json_t *errs)
{
	unsigned int cur, pend, link, links = 0, active = 0;
	int mode;

	if (ok(n, errs, "persistence_mode", CALL(persistence, d, &mode)))
		json_object_set_new(g, "persistence_mode", json_boolean(mode));
	if (ok(n, errs, "mig_mode", CALL(mig, d, &cur, &pend))) {
		json_object_set_new(g, "mig_mode", json_boolean(cur));
		json_object_set_new(g, "mig_mode_pending", json_boolean(pend));
	}
	for (link = 0; n->f.nvlink_state && link < NVML_NVLINK_MAX_LINKS; link++) {
		if (n->f.nvlink_state(d, link, &mode) != NVML_SUCCESS)
			continue;
		links++;
		if (mode)
			active++;
	}
	if (links) {
		set_int(g, "nvlink_links", links);
		set_int(g, "nvlink_active", active);
	}
}

static void gpu_processes(struct nvml *n, nvmlDevice_t d, json_t *g, json_t *errs)
{
	unsigned int count = 0, i;
	nvmlProcessInfo_t *v3 = NULL;
	nvmlProcessInfo_v1_t *v1 = NULL;
	json_t *arr;
	nvmlReturn_t r;
	int use_v1 = 0;

	r = CALL(procs_v3, d, &count, NULL);
	if (r == NVML_ERROR_FUNCTION_NOT_FOUND) {
		use_v1 = 1;
		count = 0;
		r = CALL(procs_v1, d, &count, NULL);
	}
	if (r == NVML_ERROR_INSUFFICIENT_SIZE && count <= MAX_PROCS) {
		count += 8; /* processes may start between the two calls */
		if (use_v1) {
			v1 = calloc(count, sizeof *v1);
			r = v1 ? n->f.procs_v1(d, &count, v1) : NVML_ERROR_INSUFFICIENT_SIZE;
		} else {
			v3 = calloc(count, sizeof *v3);
			r = v3 ? n->f.procs_v3(d, &count, v3) : NVML_ERROR_INSUFFICIENT_SIZE;
		}
	} else if (r == NVML_SUCCESS) {
		count = 0;
	}
	if (ok(n, errs, "processes", r)) {
		arr = json_array();
		for (i = 0; i < count; i++) {
			unsigned int pid = use_v1 ? v1[i].pid : v3[i].pid;
			unsigned long long mem = use_v1 ? v1[i].usedGpuMemory : v3[i].usedGpuMemory;
			json_t *p = json_pack("{s:i}", "pid", (json_int_t)pid);
			char name[256];

			/* NVML_VALUE_NOT_AVAILABLE (all ones) when the driver cannot tell */
			if (mem != ~0ULL)
				set_int(p, "used_memory_bytes", (long long)mem);
			/* the name the driver knows (a path); else procs.c reads /proc */
			if (CALL(proc_name, pid, name, sizeof(name)) == NVML_SUCCESS && name[0]) {
				const char *base = strrchr(name, '/');

				json_object_set_new(p, "name", json_string(base ? base + 1 : name));
			}
			json_array_append_new(arr, p);
		}
		json_object_set_new(g, "processes", arr);
	}
	free(v1);
	free(v3);
}

static void collect_gpu(struct nvml *n, unsigned int idx, json_t *gpus)
{
	json_t *g = json_pack("{s:i}", "index", (json_int_t)idx);
	json_t *errs = json_object();
	nvmlDevice_t d;
	nvmlReturn_t r;

	r = n->f.handle(idx, &d);
	if (r != NVML_SUCCESS) {
		json_object_set_new(g, "error", json_string(errstr(n, r)));
		json_decref(errs);
		json_array_append_new(gpus, g);
		return;
	}
	if (idx < MAX_GPUS)
		n->handles[idx] = d;
	gpu_strings(n, d, g, errs);
	gpu_pci(n, d, idx, g, errs);
	gpu_memory(n, d, g, errs);
	gpu_sensors(n, d, g, errs);
	gpu_memory_health(n, d, g, errs);
	gpu_modes(n, d, g, errs);
	gpu_link_errors(n, d, g, errs);
	gpu_processes(n, d, g, errs);
	if (json_object_size(errs))
		json_object_set_new(g, "errors", errs);
	else
		json_decref(errs);
	json_array_append_new(gpus, g);
}

static void poll_events(struct nvml *n, json_t *xids)
{
	nvmlEventData_t ev;
	int i;
	unsigned int k;

	if (!n->events)
		return;
	for (i = 0; i < MAX_EVENTS_PER_POLL; i++) {
		json_t *o;

		memset(&ev, 0, sizeof ev);
		if (n->f.event_wait(n->events, &ev, 0) != NVML_SUCCESS)
			break;
		if (!(ev.eventType & NVML_EVENT_TYPE_XID_CRITICAL_ERROR))
			continue;
		o = json_pack("{s:i,s:s,s:s}", "xid", (json_int_t)ev.eventData, "message", "",
			      "source", "nvml");
		for (k = 0; k < n->ngpus && k < MAX_GPUS; k++)
			if (n->handles[k] == ev.device && n->pci[k][0])
				json_object_set_new(o, "pci_bus_id", json_string(n->pci[k]));
		json_array_append_new(xids, o);
	}
}

int nvml_collect(struct nvml *n, json_t *nvidia, json_t *gpus, json_t *xids)
{
	char buf[96];
	unsigned int count = 0, i;
	nvmlReturn_t r;
	int cuda, rc;

	if (!n->lib) {
		set_status(nvidia, "no_driver", n->load_error);
		return 0;
	}
	rc = ensure_ready(n, nvidia);
	if (rc <= 0)
		return rc;
	if (CALL(driver_version, buf, sizeof buf) == NVML_SUCCESS)
		json_object_set_new(nvidia, "driver_version", json_string(buf));
	if (CALL(nvml_version, buf, sizeof buf) == NVML_SUCCESS)
		json_object_set_new(nvidia, "nvml_version", json_string(buf));
	if (CALL(cuda_version, &cuda) == NVML_SUCCESS && cuda > 0) {
		snprintf(buf, sizeof buf, "%d.%d", cuda / 1000, (cuda % 1000) / 10);
		json_object_set_new(nvidia, "cuda_driver_version", json_string(buf));
	}
	r = n->f.count(&count);
	if (r != NVML_SUCCESS) {
		snprintf(buf, sizeof buf, "nvmlDeviceGetCount: %.60s (%d)", errstr(n, r), r);
		set_status(nvidia, "error", buf);
		return 0;
	}
	if (count > MAX_GPUS)
		count = MAX_GPUS;
	n->ngpus = count;
	memset(n->handles, 0, sizeof n->handles);
	memset(n->pci, 0, sizeof n->pci);
	set_status(nvidia, "ok", NULL);
	json_object_set_new(nvidia, "gpu_count", json_integer(count));
	for (i = 0; i < count; i++)
		collect_gpu(n, i, gpus);
	poll_events(n, xids);
	return 0;
}

void nvml_close(struct nvml *n)
{
	size_t i;

	if (!n)
		return;
	if (n->state == NVML_PENDING && n->job && !init_wait(n, 0)) {
		/* the init thread is stuck inside the library: leave both alone */
		for (i = 0; i < sizeof abandoned_jobs / sizeof abandoned_jobs[0]; i++) {
			if (!abandoned_jobs[i]) {
				abandoned_jobs[i] = n->job;
				break;
			}
		}
		free(n);
		return;
	}
	if (n->state == NVML_READY) {
		if (n->events && n->f.event_set_free)
			n->f.event_set_free(n->events);
		if (n->f.shutdown)
			n->f.shutdown();
	} else if (n->job && n->job->rc == NVML_SUCCESS && n->f.shutdown) {
		n->f.shutdown(); /* a late init that succeeded after we gave up on it */
	}
	job_free(n->job);
	if (n->lib)
		dlclose(n->lib);
	free(n);
}
