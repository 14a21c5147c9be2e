/* The per-device module cache: a kernel family (prelude + family source, the same text OpenCL
 * builds and the CPU includes) is compiled by NVRTC to PTX for the device's compute capability
 * the first time one of its kernels runs there, loaded as a module, and its CUfunctions are kept
 * per kernel id. The PTX also goes to the disk cache (cuda_kernel_cache.c), so a later process
 * skips NVRTC. A compile error reports the family, the device and the first lines of NVRTC's log.
 *
 * Options: --gpu-architecture=compute_XY gives PTX, which the driver turns into the device's code
 * when the module loads (and keeps in its own cache). --fmad=false: no a * b + c fused into one
 * rounding, as on the CPU and on OpenCL devices (see kernels/dialect.h), so that + - * / give
 * the same bits on every device whatever compiler and instruction set built it. NVRTC has no
 * "warnings as errors" switch: here warnings are logged; the test suite fails on any
 * (tests/kernels). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/compile_log.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_internal.h"
#include "backend/compile_notice.h"
#include "backend/cuda/cuda_kernel_cache.h"
#include "backend/family_sources.h"
#include "core/core_internal.h"
#include "kernels/kernel_sources.h"


/* The families' sources on CUDA devices: the embedded ones, or the tests' replacements. */
static ct_family_sources family_sources = CT_FAMILY_SOURCES_INIT;

/* The compile log of program (malloc'ed; NULL when there is none). */
static char *compile_log(const ct_cuda_nvrtc *nvrtc, nvrtcProgram program)
{
    size_t size = 0;
    if (nvrtc->nvrtcGetProgramLogSize(program, &size) != NVRTC_SUCCESS || size <= 1) return NULL;
    char *log = malloc(size + 1);
    if (log && nvrtc->nvrtcGetProgramLog(program, log) != NVRTC_SUCCESS) {
        free(log);
        return NULL;
    }
    if (log) log[size] = '\0';
    return log;
}

/* Compiles text with NVRTC; the PTX (malloc'ed) into *ptx. */
static ct_status compile(int index, int family, const ct_cuda_nvrtc *nvrtc, const char *text,
                         const char *const options[], int option_count, char **ptx)
{
    const ct_cuda_device *device = &ct_cuda_devices[index];
    const char *name = ct_kernel_family_names[family];
    *ptx = NULL;
    nvrtcProgram program;
    nvrtcResult result = nvrtc->nvrtcCreateProgram(&program, text, name, 0, NULL, NULL);
    if (result != NVRTC_SUCCESS)
        return ct_error(CT_ERR_BACKEND, "cuda:%d: nvrtcCreateProgram for kernel family '%s' failed: "
                        "%s", index, name, nvrtc->nvrtcGetErrorString(result));
    result = nvrtc->nvrtcCompileProgram(program, option_count, options);
    char *log = compile_log(nvrtc, program);
    ct_status status = CT_OK;
    if (result != NVRTC_SUCCESS) {
        char lines[600];
        ct_compile_log_first_lines(log ? log : "", "compile", lines, sizeof lines);
        if (log) ct_log_message(CT_LOG_DEBUG, "cuda:%d: NVRTC's log of kernel family '%s':\n%s",
                                index, name, log);
        status = ct_error(CT_ERR_BACKEND, "cuda:%d (%s): the kernel family '%s' does not compile "
                          "for %s (%s): %s", index, device->name, name, options[0],
                          nvrtc->nvrtcGetErrorString(result), lines);
    } else if (log && strstr(log, "warning")) {
        ct_log_message(CT_LOG_WARN, "cuda:%d: NVRTC warns about kernel family '%s':\n%s", index,
                       name, log);
    }
    free(log);
    size_t size = 0;
    if (status == CT_OK && (result = nvrtc->nvrtcGetPTXSize(program, &size)) == NVRTC_SUCCESS) {
        *ptx = malloc(size + 1);
        if (!*ptx)
            status = ct_error(CT_ERR_OUT_OF_MEMORY, "cuda:%d: no host memory for PTX", index);
        else if ((result = nvrtc->nvrtcGetPTX(program, *ptx)) == NVRTC_SUCCESS)
            (*ptx)[size] = '\0';
    }
    if (status == CT_OK && result != NVRTC_SUCCESS) {
        free(*ptx);
        *ptx = NULL;
        status = ct_error(CT_ERR_BACKEND, "cuda:%d: reading the PTX of kernel family '%s' failed: "
                          "%s", index, name, nvrtc->nvrtcGetErrorString(result));
    }
    nvrtc->nvrtcDestroyProgram(&program);
    return status;
}

/* Builds a family's module for a device: PTX from the disk cache, else from NVRTC. The caller
 * holds the device's kernels lock; the device's context is current. */
static ct_status build_module(int index, int family, CUmodule *module)
{
    const ct_cuda_device *device = &ct_cuda_devices[index];
    char reason[512];
    ct_status failure = CT_ERR_BACKEND;
    const ct_cuda_nvrtc *nvrtc = ct_cuda_nvrtc_library(reason, sizeof reason, &failure);
    if (!nvrtc) return ct_error(failure, "cuda:%d: the kernels cannot be compiled: %s", index, reason);
    int major = 0, minor = 0;
    nvrtc->nvrtcVersion(&major, &minor);
    char architecture[48], version[32];
    snprintf(architecture, sizeof architecture, "--gpu-architecture=compute_%d%d",
             device->capability_major, device->capability_minor);
    snprintf(version, sizeof version, "nvrtc %d.%d", major, minor);
    const char *options[] = {architecture, "-default-device", "--fmad=false"};
    char *text = ct_family_program_text(&family_sources, family);
    if (!text) return ct_error(CT_ERR_OUT_OF_MEMORY, "cuda:%d: no host memory for kernel source", index);
    const char *key_parts[] = {text, options[0], options[1], options[2], version};
    char key[CT_CUDA_CACHE_KEY_SIZE];
    ct_cuda_cache_key(key_parts, (int)CT_ARRAY_LEN(key_parts), key);

    char *ptx = ct_cuda_cache_read(key);
    CUresult result = CUDA_ERROR_INVALID_PTX;
    if (ptx && (result = ct_cu->cuModuleLoadData(module, ptx)) != CUDA_SUCCESS) {
        ct_log_message(CT_LOG_INFO, "cuda:%d: the driver refused cached PTX of '%s': compiling again",
                       index, ct_kernel_family_names[family]);
        ct_cuda_cache_discard(key);
    }
    ct_status status = CT_OK;
    if (result != CUDA_SUCCESS) {
        char device_text[32], cache[1024], where[1100];
        snprintf(device_text, sizeof device_text, "cuda:%d", index);
        if (ct_cuda_kernel_cache_dir(cache, sizeof cache)[0])
            snprintf(where, sizeof where, "cached in %s", cache);
        else
            snprintf(where, sizeof where, "CTORCH_CUDA_CACHE_DIR is empty: not cached");
        ct_compile_notice("CUDA", device_text, device->name, where);
        free(ptx);
        status = compile(index, family, nvrtc, text, options, (int)CT_ARRAY_LEN(options), &ptx);
        if (status == CT_OK) result = ct_cu->cuModuleLoadData(module, ptx);
        if (status == CT_OK && result == CUDA_SUCCESS) ct_cuda_cache_write(key, ptx);
    }
    free(ptx);
    free(text);
    if (status != CT_OK || result == CUDA_SUCCESS) return status;
    char what[160];
    snprintf(what, sizeof what, "cuModuleLoadData (kernel family '%s', PTX of %s%s)",
             ct_kernel_family_names[family], version,
             result == CUDA_ERROR_UNSUPPORTED_PTX_VERSION ? ", newer than this driver: update the driver" : "");
    return ct_cuda_fail(index, what, result);
}

ct_status ct_cuda_function(int index, int kernel, CUfunction *out)
{
    if (kernel <= CT_K_NONE || kernel >= CT_KERNEL_COUNT)
        return ct_error(CT_ERR_INTERNAL, "cuda: no kernel with id %d", kernel);
    ct_cuda_device *device = &ct_cuda_devices[index];
    *out = atomic_load_explicit(&device->functions[kernel], memory_order_acquire);
    if (*out) return CT_OK;
    int family = ct_kernel_family_of((ct_kernel_id)kernel);
    if (family < 0)
        return ct_error(CT_ERR_INTERNAL, "cuda: kernel '%s' belongs to no kernel family",
                        ct_kernel_name((ct_kernel_id)kernel));
    pthread_mutex_lock(&device->kernels_lock);
    ct_status status = CT_OK;
    if (!device->modules[family]) status = build_module(index, family, &device->modules[family]);
    CUfunction function = NULL;
    if (status == CT_OK) {
        CUresult result = ct_cu->cuModuleGetFunction(&function, device->modules[family],
                                                     ct_kernel_name((ct_kernel_id)kernel));
        if (result == CUDA_SUCCESS) {
            atomic_store_explicit(&device->functions[kernel], function, memory_order_release);
        } else {
            char what[160];
            snprintf(what, sizeof what, "cuModuleGetFunction(%s)", ct_kernel_name((ct_kernel_id)kernel));
            status = ct_cuda_fail(index, what, result);
        }
    }
    pthread_mutex_unlock(&device->kernels_lock);
    *out = function;
    return status;
}

ct_status ct_cuda_prepare_kernel(int index, int kernel)
{
    if (index < 0 || index >= ct_cuda_device_count)
        return ct_error(CT_ERR_DEVICE, "cuda:%d does not exist (%d CUDA devices)", index,
                        ct_cuda_device_count);
    ct_status status = ct_cuda_enter(index);
    CUfunction unused;
    return status == CT_OK ? ct_cuda_function(index, kernel, &unused) : status;
}

/* Unloads the module of a family on every device, and forgets its functions. */
static void drop_family(int family)
{
    for (int i = 0; i < ct_cuda_device_count; i++) {
        ct_cuda_device *device = &ct_cuda_devices[i];
        pthread_mutex_lock(&device->kernels_lock);
        for (int id = 1; id < CT_KERNEL_COUNT; id++)
            if (ct_kernel_family_of((ct_kernel_id)id) == family)
                atomic_store(&device->functions[id], NULL);
        if (device->modules[family] && ct_cuda_enter(i) == CT_OK) {
            ct_cu->cuCtxSynchronize(); /* no launch of its kernels may still be queued */
            ct_cu->cuModuleUnload(device->modules[family]);
        }
        device->modules[family] = NULL;
        pthread_mutex_unlock(&device->kernels_lock);
    }
}

ct_status ct_cuda_replace_family_source_for_testing(const char *family, const char *source)
{
    int f;
    ct_status status = ct_family_sources_replace(&family_sources, __func__, family, source, &f);
    if (status == CT_OK) drop_family(f);
    return status;
}
