/* Finding the CUDA devices, once: the driver opened at run time, cuInit, every device the driver
 * shows (CUDA_VISIBLE_DEVICES is applied by the driver itself, so ctorch's numbering is the
 * logical one, as PyTorch's), their properties, and each device's primary context, retained the
 * first time the device is used and made current by every entry point that calls the driver. */
#include <stdio.h>
#include <stdlib.h>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_internal.h"
#include "core/core_internal.h"

const ct_cuda_driver *ct_cu;
int ct_cuda_device_count;
ct_cuda_device ct_cuda_devices[CT_CUDA_MAX_DEVICES];
static char driver_version[32];

/* Why there is no device, after cuInit or cuDeviceGetCount answered `result` (or 0 devices). */
static void no_device_reason(const char *call, CUresult result, char *reason, size_t reason_size)
{
    char text[256] = "0 devices";
    if (result != CUDA_SUCCESS) ct_cuda_result_text(result, text, sizeof text);
    const char *visible = getenv("CUDA_VISIBLE_DEVICES");
    if (visible)
        snprintf(reason, reason_size, "no CUDA device (%s: %s; CUDA_VISIBLE_DEVICES='%s' may hide "
                 "them all)", call, text, visible);
    else
        snprintf(reason, reason_size, "no CUDA device (%s: %s)", call, text);
}

/* Reads one device's properties; false with a reason when the driver does not answer. */
static bool read_device(int index, char *reason, size_t reason_size)
{
    ct_cuda_device *device = &ct_cuda_devices[index];
    const char *call = "cuDeviceGet";
    CUresult result = ct_cu->cuDeviceGet(&device->id, index);
    if (result == CUDA_SUCCESS) {
        call = "cuDeviceGetName";
        result = ct_cu->cuDeviceGetName(device->name, (int)sizeof device->name, device->id);
    }
    struct { CUdevice_attribute attribute; int *value; } attributes[] = {
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &device->capability_major},
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &device->capability_minor},
        {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &device->multiprocessors},
        {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, &device->threads_per_multiprocessor},
    };
    for (size_t i = 0; i < CT_ARRAY_LEN(attributes) && result == CUDA_SUCCESS; i++) {
        call = "cuDeviceGetAttribute";
        result = ct_cu->cuDeviceGetAttribute(attributes[i].value, attributes[i].attribute, device->id);
    }
    if (result == CUDA_SUCCESS) {
        call = "cuDeviceTotalMem";
        result = ct_cu->cuDeviceTotalMem(&device->total_memory, device->id);
    }
    if (result != CUDA_SUCCESS) {
        char text[256];
        snprintf(reason, reason_size, "cuda:%d: %s failed: %s", index, call,
                 ct_cuda_result_text(result, text, sizeof text));
        return false;
    }
    device->name[sizeof device->name - 1] = '\0';
    return true;
}

bool ct_cuda_init(char *reason, size_t reason_size)
{
    const ct_cuda_driver *driver = ct_cuda_driver_library(reason, reason_size, NULL);
    if (!driver) return false;
    ct_cu = driver;
    CUresult result = ct_cu->cuInit(0);
    if (result == CUDA_ERROR_NO_DEVICE) {
        no_device_reason("cuInit", result, reason, reason_size);
        return false;
    }
    if (result != CUDA_SUCCESS) {
        char text[256];
        ct_cuda_result_text(result, text, sizeof text);
        if (result == CUDA_ERROR_STUB_LIBRARY)
            snprintf(reason, reason_size, "the CUDA driver library found is the toolkit's link stub, "
                     "not a driver (cuInit: %s)", text);
        else
            snprintf(reason, reason_size, "the CUDA driver does not start (cuInit: %s)", text);
        return false;
    }
    int count = 0;
    result = ct_cu->cuDeviceGetCount(&count);
    if (result != CUDA_SUCCESS || count <= 0) {
        no_device_reason("cuDeviceGetCount", result, reason, reason_size);
        return false;
    }
    if (count > CT_CUDA_MAX_DEVICES) {
        ct_log_message(CT_LOG_WARN, "cuda: %d devices; ctorch uses the first %d", count, CT_CUDA_MAX_DEVICES);
        count = CT_CUDA_MAX_DEVICES;
    }
    int version = 0;
    if (ct_cu->cuDriverGetVersion(&version) == CUDA_SUCCESS)
        snprintf(driver_version, sizeof driver_version, "%d.%d", version / 1000, version % 1000 / 10);
    for (int i = 0; i < count; i++) {
        ct_cuda_device *device = &ct_cuda_devices[i];
        pthread_mutex_init(&device->context_lock, NULL);
        pthread_mutex_init(&device->kernels_lock, NULL);
        pthread_mutex_init(&device->blas_lock, NULL);
        if (!read_device(i, reason, reason_size)) return false;
        ct_log_message(CT_LOG_INFO, "cuda:%d: %s, compute capability %d.%d, %d multiprocessors, "
                       "%zu MiB (driver %s)", i, device->name, device->capability_major,
                       device->capability_minor, device->multiprocessors,
                       device->total_memory >> 20, driver_version);
    }
    ct_cuda_device_count = count;
    return true;
}

int ct_cuda_get_device_count(void) { return ct_cuda_device_count; }

/* The device's primary context (shared with the CUDA runtime, cuBLAS and NCCL in this process)
 * is retained on first use and kept, with the device's cuBLAS handle and streams, until the
 * process exits, when the driver reclaims them, as PyTorch does: released in an exit handler,
 * they could go while another library's handler (NCCL's, the user's) still uses them. */
ct_status ct_cuda_enter(int index)
{
    ct_cuda_device *device = &ct_cuda_devices[index];
    if (!atomic_load_explicit(&device->context_ready, memory_order_acquire)) {
        pthread_mutex_lock(&device->context_lock);
        CUresult result = CUDA_SUCCESS;
        if (!atomic_load_explicit(&device->context_ready, memory_order_relaxed)) {
            result = ct_cu->cuDevicePrimaryCtxRetain(&device->context, device->id);
            if (result == CUDA_SUCCESS)
                atomic_store_explicit(&device->context_ready, true, memory_order_release);
        }
        pthread_mutex_unlock(&device->context_lock);
        if (result != CUDA_SUCCESS) return ct_cuda_fail(index, "cuDevicePrimaryCtxRetain", result);
    }
    CUresult result = ct_cu->cuCtxSetCurrent(device->context);
    return result == CUDA_SUCCESS ? CT_OK : ct_cuda_fail(index, "cuCtxSetCurrent", result);
}

ct_status ct_cuda_get_properties(int index, ct_device_props *props)
{
    const ct_cuda_device *device = &ct_cuda_devices[index];
    snprintf(props->name, sizeof props->name, "%s", device->name);
    snprintf(props->vendor, sizeof props->vendor, "NVIDIA");
    snprintf(props->driver_version, sizeof props->driver_version, "%s", driver_version);
    props->total_memory = device->total_memory;
    props->max_allocation = device->total_memory;
    props->compute_units = device->multiprocessors;
    props->compute_capability_major = device->capability_major;
    props->compute_capability_minor = device->capability_minor;
    props->is_gpu = true;
    props->free_memory_is_estimate = false;
    return CT_OK;
}

ct_status ct_cuda_mem_get_info(int index, size_t *free_bytes, size_t *total_bytes)
{
    ct_status status = ct_cuda_enter(index);
    if (status != CT_OK) return status;
    CUresult result = ct_cu->cuMemGetInfo(free_bytes, total_bytes);
    return result == CUDA_SUCCESS ? CT_OK : ct_cuda_fail(index, "cuMemGetInfo", result);
}

ct_status ct_cuda_compute_capability(int index, int *major, int *minor)
{
    if (index < 0 || index >= ct_cuda_device_count)
        return ct_error(CT_ERR_DEVICE, "cuda:%d does not exist (%d CUDA devices)", index,
                        ct_cuda_device_count);
    *major = ct_cuda_devices[index].capability_major;
    *minor = ct_cuda_devices[index].capability_minor;
    return CT_OK;
}
