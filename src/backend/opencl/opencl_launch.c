/* Launching a kernel on a device's default queue: four buffers and the parameter block by
 * value, one work item per index (1-D), on a stream's queue. The launch is queued, not waited
 * for; a read back on the same in-order queue waits for it. */
#include <stdio.h>

#include "backend/opencl/opencl_internal.h"
#include "core/core_internal.h"
#include "kernels/kernel_params.h"

/* The global size is rounded up to a multiple of this (every kernel returns for i >= p.n), so
 * that the driver can pick a good work-group size even when n is prime. */
#define CT_OPENCL_GLOBAL_MULTIPLE 64

ct_status ct_opencl_launch(int index, void *stream, int kernel, void *const buffers[],
                           const ct_kparams *params, long work_per_item)
{
    (void)work_per_item; /* the driver spreads work items over the device's units itself */
    if (params->n <= 0) return CT_OK;
    ct_opencl_device *device = &ct_opencl_devices[index];
    size_t global = ((size_t)params->n + CT_OPENCL_GLOBAL_MULTIPLE - 1) / CT_OPENCL_GLOBAL_MULTIPLE *
                    CT_OPENCL_GLOBAL_MULTIPLE;
    pthread_mutex_lock(&device->lock);
    cl_kernel k = NULL;
    ct_status result = ct_opencl_kernel_locked(index, kernel, &k);
    cl_int status = CL_SUCCESS;
    const char *what = "clSetKernelArg";
    for (cl_uint arg = 0; result == CT_OK && status == CL_SUCCESS && arg < CT_KERNEL_MAX_BUFFERS; arg++) {
        cl_mem buffer = (cl_mem)buffers[arg]; /* NULL for an operand the kernel does not use */
        status = clSetKernelArg(k, arg, sizeof buffer, &buffer);
    }
    if (result == CT_OK && status == CL_SUCCESS)
        status = clSetKernelArg(k, CT_KERNEL_MAX_BUFFERS, sizeof *params, params);
    if (result == CT_OK && status == CL_SUCCESS) {
        what = "clEnqueueNDRangeKernel";
        status = clEnqueueNDRangeKernel(ct_opencl_queue(index, stream), k, 1, NULL, &global, NULL, 0, NULL, NULL);
    }
    pthread_mutex_unlock(&device->lock);
    if (result != CT_OK) return result;
    static atomic_bool first_launch_waited;
    if (status == CL_SUCCESS) ct_opencl_guard_exit(ct_opencl_queue(index, stream), &first_launch_waited);
    if (status != CL_SUCCESS) {
        char call[200];
        snprintf(call, sizeof call, "%s for kernel '%s'", what, ct_kernel_name((ct_kernel_id)kernel));
        return ct_opencl_fail(index, call, status);
    }
    return CT_OK;
}
