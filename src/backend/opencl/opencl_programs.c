/* The per-device program cache: a kernel family is built for a device (prelude + family source,
 * as OpenCL C 1.2) the first time one of its kernels runs there, and its cl_kernel objects are
 * kept per kernel id. A build failure reports the family, the device and its build log. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/compile_log.h"
#include "backend/compile_notice.h"
#include "backend/family_sources.h"
#include "backend/opencl/opencl_internal.h"
#include "core/core_internal.h"
#include "kernels/kernel_sources.h"

#define CT_OPENCL_BUILD_OPTIONS "-cl-std=CL1.2"

/* The families' sources on OpenCL devices: the embedded ones, or the tests' replacements. */
static ct_family_sources family_sources = CT_FAMILY_SOURCES_INIT;

static ct_status build_failure(int index, int family, cl_program program, cl_int status)
{
    ct_opencl_device *device = &ct_opencl_devices[index];
    size_t log_size = 0;
    clGetProgramBuildInfo(program, device->id, CL_PROGRAM_BUILD_LOG, 0, NULL, &log_size);
    char *log = malloc(log_size + 1);
    char lines[600] = "(no build log)";
    if (log && clGetProgramBuildInfo(program, device->id, CL_PROGRAM_BUILD_LOG, log_size, log,
                                     NULL) == CL_SUCCESS) {
        log[log_size] = '\0';
        ct_compile_log_first_lines(log, "build", lines, sizeof lines);
        ct_log_message(CT_LOG_DEBUG, "opencl:%d: build log of kernel family '%s':\n%s", index,
                       ct_kernel_family_names[family], log);
    }
    free(log);
    return ct_error(CT_ERR_BACKEND, "opencl:%d (%s): the kernel family '%s' does not build (%s): "
                    "%s", index, device->name, ct_kernel_family_names[family],
                    ct_opencl_status_name(status), lines);
}

static ct_status build_program(int index, int family, cl_program *out)
{
    ct_opencl_device *device = &ct_opencl_devices[index];
    char *text = ct_family_program_text(&family_sources, family);
    if (!text)
        return ct_error(CT_ERR_OUT_OF_MEMORY, "opencl:%d: no host memory for kernel source", index);
    const char *parts[] = {text};
    /* The driver caches the build (PoCL in POCL_CACHE_DIR) but cannot be asked whether it has it: a
     * stamp per family, device and driver built says whether this is a first run. */
    const char *key_parts[] = {text, CT_OPENCL_BUILD_OPTIONS, device->name, device->vendor, device->driver_version};
    char key[CT_COMPILE_KEY_SIZE], records[1024], device_text[32];
    ct_compile_key(key_parts, (int)CT_ARRAY_LEN(key_parts), key);
    ct_compile_cache_dir("CTORCH_OPENCL_CACHE_DIR", "opencl", records, sizeof records);
    if (!ct_compile_stamp_exists(records, key)) {
        snprintf(device_text, sizeof device_text, "opencl:%d", index);
        ct_compile_notice("OpenCL", device_text, device->name, "the OpenCL driver caches them");
    }
    cl_int status;
    cl_program program = clCreateProgramWithSource(device->context, 1, parts, NULL, &status);
    free(text);
    if (status != CL_SUCCESS) return ct_opencl_fail(index, "clCreateProgramWithSource", status);
    status = clBuildProgram(program, 1, &device->id, CT_OPENCL_BUILD_OPTIONS, NULL, NULL);
    if (status != CL_SUCCESS) {
        ct_status result = build_failure(index, family, program, status);
        clReleaseProgram(program);
        return result;
    }
    ct_compile_stamp_write(records, key);
    *out = program;
    return CT_OK;
}

ct_status ct_opencl_kernel_locked(int index, int kernel, cl_kernel *out)
{
    ct_opencl_device *device = &ct_opencl_devices[index];
    if (kernel <= CT_K_NONE || kernel >= CT_KERNEL_COUNT)
        return ct_error(CT_ERR_INTERNAL, "opencl: no kernel with id %d", kernel);
    if (device->kernels[kernel]) {
        *out = device->kernels[kernel];
        return CT_OK;
    }
    int family = ct_kernel_family_of((ct_kernel_id)kernel);
    if (family < 0)
        return ct_error(CT_ERR_INTERNAL, "opencl: kernel '%s' belongs to no kernel family "
                        "(src/kernels/kernel_ids.c)",
                        ct_kernel_name((ct_kernel_id)kernel));
    if (!device->programs[family]) {
        ct_status status = build_program(index, family, &device->programs[family]);
        if (status != CT_OK) return status;
    }
    cl_int status;
    cl_kernel created = clCreateKernel(device->programs[family], ct_kernel_name((ct_kernel_id)kernel),
                                      &status);
    if (status != CL_SUCCESS) {
        char what[160];
        snprintf(what, sizeof what, "clCreateKernel(%s)", ct_kernel_name((ct_kernel_id)kernel));
        return ct_opencl_fail(index, what, status);
    }
    device->kernels[kernel] = *out = created;
    return CT_OK;
}

ct_status ct_opencl_prepare_kernel(int index, int kernel)
{
    if (index < 0 || index >= ct_opencl_device_count)
        return ct_error(CT_ERR_DEVICE, "opencl:%d does not exist (%d OpenCL devices)", index,
                        ct_opencl_device_count);
    ct_opencl_device *device = &ct_opencl_devices[index];
    cl_kernel unused;
    pthread_mutex_lock(&device->lock);
    ct_status status = ct_opencl_kernel_locked(index, kernel, &unused);
    pthread_mutex_unlock(&device->lock);
    return status;
}

/* Releases the program of a family on every device, and its kernels. */
static void drop_family(int family)
{
    for (int i = 0; i < ct_opencl_device_count; i++) {
        ct_opencl_device *device = &ct_opencl_devices[i];
        pthread_mutex_lock(&device->lock);
        for (int id = 1; id < CT_KERNEL_COUNT; id++) {
            if (device->kernels[id] && ct_kernel_family_of((ct_kernel_id)id) == family) {
                clReleaseKernel(device->kernels[id]);
                device->kernels[id] = NULL;
            }
        }
        if (device->programs[family]) clReleaseProgram(device->programs[family]);
        device->programs[family] = NULL;
        pthread_mutex_unlock(&device->lock);
    }
}

ct_status ct_opencl_replace_family_source_for_testing(const char *family, const char *source)
{
    int f;
    ct_status status = ct_family_sources_replace(&family_sources, __func__, family, source, &f);
    if (status == CT_OK) drop_family(f);
    return status;
}
