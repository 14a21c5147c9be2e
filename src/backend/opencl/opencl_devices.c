/* Finding the OpenCL devices, once: every platform and device through the ICD loader, numbered
 * GPUs and accelerators first, filtered and ordered by CTORCH_OPENCL_VISIBLE_DEVICES; one
 * context per platform, one in-order queue per device; their properties and free memory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "backend/opencl/opencl_internal.h" /* first: it sets the OpenCL target */
#include <CL/cl_ext.h>
#include "core/core_internal.h"

#ifndef CL_DEVICE_GLOBAL_FREE_MEMORY_AMD
#define CL_DEVICE_GLOBAL_FREE_MEMORY_AMD 0x4039
#endif

int ct_opencl_device_count;
ct_opencl_device ct_opencl_devices[CT_OPENCL_MAX_DEVICES];

/* A device as discovered, before ordering. */
typedef struct found_device {
    int platform;
    cl_device_id id;
} found_device;

/* A string property into buf (truncated to fit); "" when the query fails. */
static void device_string(cl_device_id id, cl_device_info what, char *buf, size_t size)
{
    buf[0] = '\0';
    size_t needed = 0;
    if (clGetDeviceInfo(id, what, 0, NULL, &needed) != CL_SUCCESS || needed == 0) return;
    char *full = malloc(needed);
    if (!full) return;
    if (clGetDeviceInfo(id, what, needed, full, NULL) == CL_SUCCESS) {
        full[needed - 1] = '\0';
        snprintf(buf, size, "%s", full);
    }
    free(full);
}

static bool device_has_extension(cl_device_id id, const char *extension)
{
    size_t needed = 0;
    if (clGetDeviceInfo(id, CL_DEVICE_EXTENSIONS, 0, NULL, &needed) != CL_SUCCESS || needed == 0)
        return false;
    char *list = malloc(needed + 2);
    if (!list) return false;
    bool found = false;
    if (clGetDeviceInfo(id, CL_DEVICE_EXTENSIONS, needed, list + 1, NULL) == CL_SUCCESS) {
        list[0] = ' '; /* " ext1 ext2 ": match whole words */
        list[needed] = ' ';
        list[needed + 1] = '\0';
        char word[256];
        snprintf(word, sizeof word, " %s ", extension);
        found = strstr(list, word) != NULL;
    }
    free(list);
    return found;
}

/* The kernels instantiate every family for float64: a device without doubles cannot build
 * them, so it is not offered. */
static bool device_usable(cl_device_id id)
{
    cl_bool available = CL_FALSE;
    cl_device_fp_config doubles = 0;
    clGetDeviceInfo(id, CL_DEVICE_AVAILABLE, sizeof available, &available, NULL);
    clGetDeviceInfo(id, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof doubles, &doubles, NULL);
    if (available && doubles) return true;
    char name[256];
    device_string(id, CL_DEVICE_NAME, name, sizeof name);
    ct_log_message(CT_LOG_INFO, "opencl: device '%s' is left out: %s", name,
                   available ? "it has no double precision (cl_khr_fp64)" : "it is not available");
    return false;
}

/* The index of an earlier listing of platform p, or -1: ocl-icd loads a driver that two vendors
 * files name twice and lists its one platform twice, whose devices would be numbered twice. */
static int listed_before(const cl_platform_id *platforms, cl_uint p)
{
    for (cl_uint q = 0; q < p; q++)
        if (platforms[q] == platforms[p]) return (int)q;
    return -1;
}

/* Every usable device of every platform, in platform then device order. */
static int discover(cl_platform_id *platforms, cl_uint platform_count, found_device *found,
                    char *reason, size_t reason_size)
{
    int count = 0;
    for (cl_uint p = 0; p < platform_count; p++) {
        int earlier = listed_before(platforms, p);
        if (earlier >= 0) {
            ct_log_message(CT_LOG_INFO, "opencl: platform %u is platform %d listed again: left out",
                           p, earlier);
            continue;
        }
        cl_uint n = 0;
        cl_int status = clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 0, NULL, &n);
        if (status == CL_DEVICE_NOT_FOUND || n == 0) continue;
        if (status != CL_SUCCESS) {
            ct_log_message(CT_LOG_WARN, "opencl: platform %u: clGetDeviceIDs: %s", p,
                           ct_opencl_status_name(status));
            continue;
        }
        cl_device_id ids[CT_OPENCL_MAX_DEVICES];
        if (n > CT_OPENCL_MAX_DEVICES) n = CT_OPENCL_MAX_DEVICES;
        if (clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, n, ids, NULL) != CL_SUCCESS) continue;
        for (cl_uint d = 0; d < n && count < CT_OPENCL_MAX_DEVICES; d++)
            if (device_usable(ids[d])) found[count++] = (found_device){(int)p, ids[d]};
    }
    if (count == 0)
        snprintf(reason, reason_size, "no usable OpenCL device on %u platform%s", platform_count,
                 platform_count == 1 ? "" : "s");
    return count;
}

/* The logical order: CTORCH_OPENCL_VISIBLE_DEVICES over the physical order. */
static int visible_devices(int physical_count, int *logical_to_physical, char *reason,
                           size_t reason_size)
{
    const char *text = getenv(CT_OPENCL_VISIBLE_DEVICES_VARIABLE);
    if (!text) {
        for (int i = 0; i < physical_count; i++) logical_to_physical[i] = i;
        return physical_count;
    }
    int count = ct_opencl_parse_visible_devices(text, physical_count, logical_to_physical,
                                                CT_OPENCL_MAX_DEVICES);
    if (count == 0 && text[0] == '\0')
        snprintf(reason, reason_size, "%s is empty, which hides all %d OpenCL device%s",
                 CT_OPENCL_VISIBLE_DEVICES_VARIABLE, physical_count, physical_count == 1 ? "" : "s");
    else if (count == 0)
        snprintf(reason, reason_size, "%s='%s' names no device: its first entry must be an index "
                 "from 0 to %d", CT_OPENCL_VISIBLE_DEVICES_VARIABLE, text, physical_count - 1);
    return count;
}

static void read_properties(ct_opencl_device *device)
{
    device_string(device->id, CL_DEVICE_NAME, device->name, sizeof device->name);
    device_string(device->id, CL_DEVICE_VENDOR, device->vendor, sizeof device->vendor);
    device_string(device->id, CL_DRIVER_VERSION, device->driver_version, sizeof device->driver_version);
    cl_ulong global = 0, max_alloc = 0;
    cl_uint units = 0;
    clGetDeviceInfo(device->id, CL_DEVICE_TYPE, sizeof device->type, &device->type, NULL);
    clGetDeviceInfo(device->id, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof global, &global, NULL);
    clGetDeviceInfo(device->id, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max_alloc, &max_alloc, NULL);
    clGetDeviceInfo(device->id, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, NULL);
    size_t group = 0;
    clGetDeviceInfo(device->id, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof group, &group, NULL);
    device->max_group_size = group;
    device->global_memory = (size_t)global;
    device->max_allocation = (size_t)(max_alloc < global ? max_alloc : global);
    device->compute_units = (int)units;
    size_t free_kib[2] = {0, 0};
    device->has_fp16 = device_has_extension(device->id, "cl_khr_fp16");
    device->has_amd_free_memory =
        device_has_extension(device->id, "cl_amd_device_attribute_query") &&
        clGetDeviceInfo(device->id, CL_DEVICE_GLOBAL_FREE_MEMORY_AMD, sizeof free_kib, free_kib,
                        NULL) == CL_SUCCESS;
}

/* One context per platform holding its visible devices, then a queue per device. */
static bool create_contexts(char *reason, size_t reason_size)
{
    for (int i = 0; i < ct_opencl_device_count; i++) {
        ct_opencl_device *device = &ct_opencl_devices[i];
        if (device->context) continue;
        cl_platform_id platform = NULL;
        clGetDeviceInfo(device->id, CL_DEVICE_PLATFORM, sizeof platform, &platform, NULL);
        cl_device_id members[CT_OPENCL_MAX_DEVICES];
        int member_count = 0;
        for (int j = i; j < ct_opencl_device_count; j++) {
            cl_platform_id other = NULL;
            clGetDeviceInfo(ct_opencl_devices[j].id, CL_DEVICE_PLATFORM, sizeof other, &other, NULL);
            if (other == platform) members[member_count++] = ct_opencl_devices[j].id;
        }
        cl_context_properties properties[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)platform, 0};
        cl_int status;
        cl_context context = clCreateContext(properties, (cl_uint)member_count, members, NULL,
                                             NULL, &status);
        if (status != CL_SUCCESS) {
            snprintf(reason, reason_size, "clCreateContext for '%s': %s", device->name,
                     ct_opencl_status_name(status));
            return false;
        }
        for (int j = i; j < ct_opencl_device_count; j++) {
            for (int m = 0; m < member_count; m++)
                if (ct_opencl_devices[j].id == members[m]) ct_opencl_devices[j].context = context;
        }
    }
    for (int i = 0; i < ct_opencl_device_count; i++) {
        ct_opencl_device *device = &ct_opencl_devices[i];
        cl_int status;
        device->queue = clCreateCommandQueue(device->context, device->id, 0, &status);
        if (status != CL_SUCCESS) {
            snprintf(reason, reason_size, "clCreateCommandQueue for '%s': %s", device->name,
                     ct_opencl_status_name(status));
            return false;
        }
    }
    return true;
}

/* At exit, lets every queue finish. PoCL compiles a kernel's work-group function in a driver
 * thread while the launch is queued; a process that exits meanwhile has LLVM's statics
 * destroyed under that thread, which crashes (status 139, or glibc's abort on a corrupted heap).
 * Exit handlers run in reverse order of registration and LLVM creates those statics lazily,
 * during a compile: not only the first, since another kernel may take LLVM down paths the first
 * did not. So the first launch of each kernel (and CLBlast's first product) on each device is
 * waited for, and the handler registered again after it (ct_opencl_guard_exit): the last
 * registration runs first, before the statics of every compile so far are destroyed; the runs
 * of earlier registrations then find the work done and return. */
static atomic_bool queues_finished_at_exit;

static void finish_queues_at_exit(void)
{
    if (atomic_exchange(&queues_finished_at_exit, true)) return;
    for (int i = 0; i < ct_opencl_device_count; i++) ct_opencl_synchronize(i);
}

void ct_opencl_guard_exit(cl_command_queue queue, atomic_bool *done)
{
    if (atomic_load(done)) return;
    clFinish(queue);
    if (!atomic_exchange(done, true)) atexit(finish_queues_at_exit);
}

/* The Khronos ICD loader (the libOpenCL.so.1 that CUDA ships, among others) splits the lists in
 * OCL_ICD_FILENAMES and OPENCL_LAYERS by writing '\0' over each ':' of the environment's own
 * string when it first loads its drivers. The process's environment then names only the first
 * library, and every program it starts finds only that driver's platform: `ctorch info`, run
 * from a program that uses OpenCL on a machine with OCL_ICD_FILENAMES=libpocl.so.2:
 * libnvidia-opencl.so.1, listed PoCL's devices without the NVIDIA GPU. ctorch keeps a copy of
 * each value before its first OpenCL call and writes it back into the same string after it. */
typedef struct loader_variable {
    const char *name;
    char *value; /* the environment's string, as getenv gave it; NULL when unset */
    char *copy;  /* what it held then */
} loader_variable;

static void keep_loader_variables(loader_variable *variables, int count)
{
    for (int i = 0; i < count; i++) {
        variables[i].value = getenv(variables[i].name);
        variables[i].copy = variables[i].value ? strdup(variables[i].value) : NULL;
    }
}

static void restore_loader_variables(loader_variable *variables, int count)
{
    for (int i = 0; i < count; i++) {
        loader_variable *v = &variables[i];
        /* the same string, changed in place: the loader only wrote '\0's inside it */
        if (v->copy && getenv(v->name) == v->value && strcmp(v->value, v->copy) != 0) {
            memcpy(v->value, v->copy, strlen(v->copy) + 1);
            ct_log_message(CT_LOG_DEBUG, "opencl: the ICD loader cut %s short; restored to '%s'",
                           v->name, v->copy);
        }
        free(v->copy);
    }
}

/* PoCL, the CPU's OpenCL (and the one ctorch is tested on), aborts the process while it starts
 * its devices when the data segment's limit (ulimit -d, RLIMIT_DATA, which it takes as the
 * device's memory) is below its minimum buffer size, 128 MiB: `ctorch info` and `train` died of
 * SIGABRT under ulimit -d 100000. So under such a limit OpenCL is not started, with the reason. */
#define POCL_MINIMUM_MEMORY ((rlim_t)128 << 20)

static bool data_limit_too_small(char *reason, size_t reason_size)
{
    struct rlimit limit;
    if (getrlimit(RLIMIT_DATA, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY ||
        limit.rlim_cur >= POCL_MINIMUM_MEMORY)
        return false;
    snprintf(reason, reason_size, "OpenCL not started: the process's data limit (ulimit -d) is %llu KiB, and "
             "PoCL aborts the process below 131072 KiB (128 MiB); raise the limit to use OpenCL",
             (unsigned long long)(limit.rlim_cur >> 10));
    return true;
}

bool ct_opencl_init(char *reason, size_t reason_size)
{
    if (data_limit_too_small(reason, reason_size)) return false;
    loader_variable variables[] = {{"OCL_ICD_FILENAMES", NULL, NULL}, {"OPENCL_LAYERS", NULL, NULL}};
    int variable_count = (int)(sizeof variables / sizeof variables[0]);
    keep_loader_variables(variables, variable_count);
    cl_uint platform_count = 0;
    cl_int status = clGetPlatformIDs(0, NULL, &platform_count);
    restore_loader_variables(variables, variable_count);
    if (status != CL_SUCCESS || platform_count == 0) {
        snprintf(reason, reason_size, "no OpenCL platform (clGetPlatformIDs: %s)",
                 status != CL_SUCCESS ? ct_opencl_status_name(status) : "0 platforms");
        return false;
    }
    cl_platform_id platforms[CT_OPENCL_MAX_PLATFORMS];
    if (platform_count > CT_OPENCL_MAX_PLATFORMS) platform_count = CT_OPENCL_MAX_PLATFORMS;
    status = clGetPlatformIDs(platform_count, platforms, NULL);
    if (status != CL_SUCCESS) {
        snprintf(reason, reason_size, "no OpenCL platform (clGetPlatformIDs: %s)",
                 ct_opencl_status_name(status));
        return false;
    }

    found_device found[CT_OPENCL_MAX_DEVICES];
    int found_count = discover(platforms, platform_count, found, reason, reason_size);
    if (found_count == 0) return false;
    bool is_accelerator[CT_OPENCL_MAX_DEVICES];
    for (int i = 0; i < found_count; i++) {
        cl_device_type type = 0;
        clGetDeviceInfo(found[i].id, CL_DEVICE_TYPE, sizeof type, &type, NULL);
        is_accelerator[i] = (type & (CL_DEVICE_TYPE_GPU | CL_DEVICE_TYPE_ACCELERATOR)) != 0;
    }
    int physical[CT_OPENCL_MAX_DEVICES], logical[CT_OPENCL_MAX_DEVICES];
    ct_opencl_order_devices(is_accelerator, found_count, physical);
    int count = visible_devices(found_count, logical, reason, reason_size);
    if (count == 0) return false;

    for (int i = 0; i < count; i++) {
        ct_opencl_device *device = &ct_opencl_devices[i];
        memset(device, 0, sizeof *device);
        device->id = found[physical[logical[i]]].id;
        device->physical_index = logical[i];
        pthread_mutex_init(&device->lock, NULL);
        pthread_mutex_init(&device->streams_lock, NULL);
        read_properties(device);
    }
    ct_opencl_device_count = count;
    if (!create_contexts(reason, reason_size)) {
        ct_opencl_device_count = 0;
        return false;
    }
    for (int i = 0; i < count; i++)
        ct_log_message(CT_LOG_INFO, "opencl:%d is physical device %d: %s (%s, %s)", i,
                       ct_opencl_devices[i].physical_index, ct_opencl_devices[i].name,
                       ct_opencl_devices[i].vendor, ct_opencl_devices[i].driver_version);
    return true;
}

int ct_opencl_get_device_count(void) { return ct_opencl_device_count; }

int ct_opencl_physical_index(int index)
{
    return index >= 0 && index < ct_opencl_device_count ? ct_opencl_devices[index].physical_index : -1;
}

bool ct_opencl_share_context(int a, int b)
{
    return a >= 0 && a < ct_opencl_device_count && b >= 0 && b < ct_opencl_device_count &&
           ct_opencl_devices[a].context == ct_opencl_devices[b].context;
}

ct_status ct_opencl_get_properties(int index, ct_device_props *props)
{
    const ct_opencl_device *device = &ct_opencl_devices[index];
    snprintf(props->name, sizeof props->name, "%s", device->name);
    snprintf(props->vendor, sizeof props->vendor, "%s", device->vendor);
    snprintf(props->driver_version, sizeof props->driver_version, "%s", device->driver_version);
    props->total_memory = device->global_memory;
    props->max_allocation = device->max_allocation;
    props->compute_units = device->compute_units;
    props->is_gpu = (device->type & (CL_DEVICE_TYPE_GPU | CL_DEVICE_TYPE_ACCELERATOR)) != 0;
    props->free_memory_is_estimate = !device->has_amd_free_memory;
    return CT_OK;
}

ct_status ct_opencl_mem_get_info(int index, size_t *free_bytes, size_t *total_bytes)
{
    ct_opencl_device *device = &ct_opencl_devices[index];
    *total_bytes = device->global_memory;
    size_t free_kib[2] = {0, 0};
    if (device->has_amd_free_memory &&
        clGetDeviceInfo(device->id, CL_DEVICE_GLOBAL_FREE_MEMORY_AMD, sizeof free_kib, free_kib,
                        NULL) == CL_SUCCESS) {
        *free_bytes = free_kib[0] * 1024;
        return CT_OK;
    }
    /* No vendor query: what ctorch has not taken (others' use of the device is not seen). */
    size_t held = atomic_load(&device->held);
    *free_bytes = held < device->global_memory ? device->global_memory - held : 0;
    return CT_OK;
}
