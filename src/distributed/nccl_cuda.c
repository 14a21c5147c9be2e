/* The NCCL backend's one contact with the CUDA backend (see nccl_cuda.h), over the conventions it
 * keeps: a CUDA storage's handle is the CUdeviceptr of its bytes, a stream's backend handle is its
 * CUstream (NULL for the default stream), and every device works in its primary context, which
 * the driver library (opened by the CUDA backend; the same file here, as cuda_libraries.h names
 * it) retains. If the backend changes one of these, this file is what follows it. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>

#include "backend/cuda/cuda_libraries.h"
#include "device/device_internal.h"
#include "distributed/nccl_cuda.h"

/* The three driver calls used here, from the library the CUDA backend opened. */
static struct {
    pthread_once_t once;
    __typeof__(&cuDeviceGet) device_get;
    __typeof__(&cuDevicePrimaryCtxRetain) primary_retain;
    __typeof__(&cuCtxSetCurrent) set_current;
    __typeof__(&cuGetErrorString) error_string;
    CUcontext contexts[CT_MAX_DEVICES_PER_TYPE];
    pthread_mutex_t lock;
} driver = {.once = PTHREAD_ONCE_INIT, .lock = PTHREAD_MUTEX_INITIALIZER};

static void driver_open(void)
{
    const char *name = getenv("CTORCH_CUDA_DRIVER");
    if (!name || !*name) name = "libcuda.so.1";
    /* Already loaded by the CUDA backend, which is available when NCCL is used: no new load. */
    void *library = dlopen(name, RTLD_NOW | RTLD_NOLOAD);
    if (!library) library = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!library) return;
    driver.device_get = (__typeof__(driver.device_get))dlsym(library, CT_CUDA_SYMBOL(cuDeviceGet));
    driver.primary_retain =
        (__typeof__(driver.primary_retain))dlsym(library, CT_CUDA_SYMBOL(cuDevicePrimaryCtxRetain));
    driver.set_current = (__typeof__(driver.set_current))dlsym(library, CT_CUDA_SYMBOL(cuCtxSetCurrent));
    driver.error_string = (__typeof__(driver.error_string))dlsym(library, CT_CUDA_SYMBOL(cuGetErrorString));
}

static ct_status driver_fail(const char *function, const char *call, CUresult code)
{
    const char *text = NULL;
    if (driver.error_string) driver.error_string(code, &text);
    return ct_error(CT_ERR_BACKEND, "%s: %s failed on the CUDA device: %s (%d)", function, call,
                    text ? text : "unknown error", (int)code);
}

ct_status ct_nccl_cuda_make_current(int index, const char *function)
{
    pthread_once(&driver.once, driver_open);
    if (!driver.device_get || !driver.primary_retain || !driver.set_current)
        return ct_error(CT_ERR_BACKEND, "%s: the CUDA driver library has no cuDeviceGet, "
                        "cuDevicePrimaryCtxRetain or cuCtxSetCurrent", function);
    if (index < 0 || index >= CT_MAX_DEVICES_PER_TYPE)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: cuda:%d is out of range", function, index);
    pthread_mutex_lock(&driver.lock);
    CUresult code = CUDA_SUCCESS;
    if (!driver.contexts[index]) {
        CUdevice device;
        code = driver.device_get(&device, index);
        if (code == CUDA_SUCCESS) code = driver.primary_retain(&driver.contexts[index], device);
        if (code != CUDA_SUCCESS) driver.contexts[index] = NULL;
    }
    CUcontext context = driver.contexts[index];
    pthread_mutex_unlock(&driver.lock);
    if (code != CUDA_SUCCESS) return driver_fail(function, "cuDevicePrimaryCtxRetain", code);
    code = driver.set_current(context);
    return code == CUDA_SUCCESS ? CT_OK : driver_fail(function, "cuCtxSetCurrent", code);
}

CUstream ct_nccl_cuda_stream(int index)
{
    return (CUstream)ct_current_stream_handle((ct_device){CT_CUDA, index});
}

CUdeviceptr ct_nccl_cuda_data(const ct_tensor *t)
{
    return (CUdeviceptr)(uintptr_t)ct_tensor_handle(t) + (CUdeviceptr)t->offset * ct_dtype_size(t->dtype);
}
