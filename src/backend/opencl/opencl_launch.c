/* Launching a kernel on a device's default queue: the buffers (ct_kernel_buffer_count) and the parameter block by
 * value, one work item per index (1-D), or for a cooperative kernel params->n work-groups of
 * group_size items, on a stream's queue. The launch is queued, not waited for; a read back on
 * the same in-order queue waits for it. */
#include <stdio.h>

#include "backend/opencl/opencl_internal.h"
#include "core/core_internal.h"
#include "kernels/kernel_params.h"

/* The global size is rounded up to a multiple of this (every kernel returns for i >= p.n), so
 * that the driver can pick a good work-group size even when n is prime. */
#define CT_OPENCL_GLOBAL_MULTIPLE 64
/* Work-groups of cooperative kernels: at most the device build's CT_GROUP_CAPACITY (256). */
#define CT_OPENCL_GROUP_SIZE 256

/* As a CUDA GPU (see cuda_launch.c): groups of up to 256, a few elements per item, enough items
 * for every compute unit; a GPU keeps 2048 threads per unit in flight, a CPU device (PoCL) runs
 * a work-group per core at a time, so a few groups per unit fill it. Groups are at least 32
 * items, or what the device takes. */
void ct_opencl_work_shape(int index, ct_work_shape *shape)
{
    const ct_opencl_device *device = &ct_opencl_devices[index];
    int group = CT_OPENCL_GROUP_SIZE;
    while (group > 1 && (size_t)group > device->max_group_size) group /= 2;
    bool gpu = (device->type & CL_DEVICE_TYPE_GPU) != 0;
    long units = device->compute_units > 0 ? device->compute_units : 1;
    *shape = (ct_work_shape){.group_size = group, .min_group_size = group < 32 ? group : 32,
                             .lanes_per_item = 4,
                             .target_items = units * (gpu ? 2048 : 4 * group),
                             .min_per_item = 4, .max_per_item = 256,
                             .elementwise_width = CT_DEVICE_VECTOR_WIDTH};
}

ct_status ct_opencl_launch(int index, void *stream, int kernel, void *const buffers[],
                           const ct_kparams *params, long work_per_item, int group_size)
{
    (void)work_per_item; /* the driver spreads work items over the device's units itself */
    if (params->n <= 0) return CT_OK;
    ct_opencl_device *device = &ct_opencl_devices[index];
    if (group_size > CT_OPENCL_GROUP_SIZE || (group_size > 0 && (size_t)group_size > device->max_group_size))
        return ct_error(CT_ERR_INTERNAL, "opencl:%d: kernel '%s' launched in work-groups of %d; the "
                        "device takes at most %zu (and the kernels %d)", index,
                        ct_kernel_name((ct_kernel_id)kernel), group_size, device->max_group_size,
                        CT_OPENCL_GROUP_SIZE);
    size_t local = (size_t)group_size;
    size_t global = group_size > 0 ? (size_t)params->n * local
                                   : ((size_t)params->n + CT_OPENCL_GLOBAL_MULTIPLE - 1) /
                                         CT_OPENCL_GLOBAL_MULTIPLE * CT_OPENCL_GLOBAL_MULTIPLE;
    pthread_mutex_lock(&device->lock);
    cl_kernel k = NULL;
    ct_status result = ct_opencl_kernel_locked(index, kernel, &k);
    cl_int status = CL_SUCCESS;
    const char *what = "clSetKernelArg";
    cl_uint count = (cl_uint)ct_kernel_buffer_count((ct_kernel_id)kernel); /* 4, or 32 (multi-tensor) */
    for (cl_uint arg = 0; result == CT_OK && status == CL_SUCCESS && arg < count; arg++) {
        cl_mem buffer = (cl_mem)buffers[arg]; /* NULL for an operand the kernel does not use */
        status = clSetKernelArg(k, arg, sizeof buffer, &buffer);
    }
    if (result == CT_OK && status == CL_SUCCESS)
        status = clSetKernelArg(k, count, sizeof *params, params);
    if (result == CT_OK && status == CL_SUCCESS) {
        what = "clEnqueueNDRangeKernel";
        status = clEnqueueNDRangeKernel(ct_opencl_queue(index, stream), k, 1, NULL, &global,
                                        group_size > 0 ? &local : NULL, 0, NULL, NULL);
    }
    pthread_mutex_unlock(&device->lock);
    if (result != CT_OK) return result;
    /* each kernel's first launch on a device: its compile, waited for before exit can come */
    static atomic_bool first_launch_waited[CT_OPENCL_MAX_DEVICES][CT_KERNEL_COUNT];
    if (status == CL_SUCCESS) ct_opencl_guard_exit(ct_opencl_queue(index, stream), &first_launch_waited[index][kernel]);
    if (status != CL_SUCCESS) {
        char call[200];
        snprintf(call, sizeof call, "%s for kernel '%s'", what, ct_kernel_name((ct_kernel_id)kernel));
        return ct_opencl_fail(index, call, status);
    }
    return CT_OK;
}
