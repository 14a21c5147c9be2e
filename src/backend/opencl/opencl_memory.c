/* Device memory as cl_mem buffers, and the blocking copies between the host and the devices,
 * each on the calling thread's current stream of the device (after the work it queued there). */
#include <stdio.h>

#include "backend/opencl/opencl_internal.h"
#include "core/core_internal.h"

ct_status ct_opencl_raw_alloc(int index, size_t bytes, void **handle)
{
    *handle = NULL;
    ct_opencl_device *device = &ct_opencl_devices[index];
    size_t held = atomic_load(&device->held);
    /* Some drivers (PoCL among them) hand out buffers lazily and never fail here: refuse what
     * cannot fit, so that the allocator releases its cache and reports the sizes. */
    if (bytes == 0 || bytes > device->max_allocation || bytes > device->global_memory ||
        held > device->global_memory - bytes) {
        ct_log_message(CT_LOG_DEBUG, "opencl:%d: refusing a buffer of %zu bytes (largest %zu, "
                       "total %zu, held %zu)", index, bytes, device->max_allocation,
                       device->global_memory, held);
        return CT_ERR_OUT_OF_MEMORY;
    }
    cl_int status;
    cl_mem buffer = clCreateBuffer(device->context, CL_MEM_READ_WRITE, bytes, NULL, &status);
    if (status == CL_MEM_OBJECT_ALLOCATION_FAILURE || status == CL_OUT_OF_RESOURCES ||
        status == CL_OUT_OF_HOST_MEMORY) {
        ct_log_message(CT_LOG_DEBUG, "opencl:%d: clCreateBuffer(%zu bytes): %s", index, bytes,
                       ct_opencl_status_name(status));
        return CT_ERR_OUT_OF_MEMORY;
    }
    if (status != CL_SUCCESS) return ct_opencl_fail(index, "clCreateBuffer", status);
    atomic_fetch_add(&device->held, bytes);
    *handle = buffer;
    return CT_OK;
}

void ct_opencl_raw_free(int index, void *handle)
{
    if (!handle) return;
    size_t bytes = 0;
    if (clGetMemObjectInfo((cl_mem)handle, CL_MEM_SIZE, sizeof bytes, &bytes, NULL) == CL_SUCCESS)
        atomic_fetch_sub(&ct_opencl_devices[index].held, bytes);
    clReleaseMemObject((cl_mem)handle); /* the driver keeps it until queued work is done */
}

ct_status ct_opencl_copy_host_to_device(int index, void *dst, size_t dst_offset, const void *src,
                                        size_t bytes)
{
    if (bytes == 0) return CT_OK;
    cl_int status = clEnqueueWriteBuffer(ct_opencl_current_queue(index), (cl_mem)dst, CL_TRUE,
                                         dst_offset, bytes, src, 0, NULL, NULL);
    return status == CL_SUCCESS ? CT_OK : ct_opencl_fail(index, "clEnqueueWriteBuffer", status);
}

ct_status ct_opencl_copy_device_to_host(int index, void *dst, const void *src, size_t src_offset,
                                        size_t bytes)
{
    if (bytes == 0) return CT_OK;
    cl_int status = clEnqueueReadBuffer(ct_opencl_current_queue(index), (cl_mem)src, CL_TRUE,
                                        src_offset, bytes, dst, 0, NULL, NULL);
    return status == CL_SUCCESS ? CT_OK : ct_opencl_fail(index, "clEnqueueReadBuffer", status);
}

/* Enqueues a copy on queue after the events of wait_list, then waits for it. */
static ct_status copy_and_wait(int index, cl_command_queue queue, cl_mem dst, size_t dst_offset,
                               cl_mem src, size_t src_offset, size_t bytes, cl_uint wait_count,
                               const cl_event *wait_list)
{
    cl_event done;
    cl_int status = clEnqueueCopyBuffer(queue, src, dst, src_offset, dst_offset, bytes, wait_count,
                                        wait_list, &done);
    if (status != CL_SUCCESS) return ct_opencl_fail(index, "clEnqueueCopyBuffer", status);
    status = clWaitForEvents(1, &done);
    clReleaseEvent(done);
    return status == CL_SUCCESS ? CT_OK : ct_opencl_fail(index, "clWaitForEvents (copy)", status);
}

ct_status ct_opencl_copy_device_to_device(int index, void *dst, size_t dst_offset, const void *src,
                                          size_t src_offset, size_t bytes)
{
    if (bytes == 0) return CT_OK;
    ct_opencl_device *device = &ct_opencl_devices[index];
    cl_command_queue queue = ct_opencl_current_queue(index);
    bool overlap = dst == src && dst_offset < src_offset + bytes && src_offset < dst_offset + bytes;
    if (!overlap)
        return copy_and_wait(index, queue, (cl_mem)dst, dst_offset, (cl_mem)src, src_offset, bytes,
                             0, NULL);
    /* OpenCL refuses overlapping copies (CL_MEM_COPY_OVERLAP): go through a scratch buffer. */
    cl_int status;
    cl_mem scratch = clCreateBuffer(device->context, CL_MEM_READ_WRITE, bytes, NULL, &status);
    if (status != CL_SUCCESS) return ct_opencl_fail(index, "clCreateBuffer (overlapping copy)", status);
    ct_status result = copy_and_wait(index, queue, scratch, 0, (cl_mem)src, src_offset, bytes, 0,
                                     NULL);
    if (result == CT_OK)
        result = copy_and_wait(index, queue, (cl_mem)dst, dst_offset, scratch, 0, bytes, 0, NULL);
    clReleaseMemObject(scratch);
    return result;
}

ct_status ct_opencl_copy_peer(int dst_index, void *dst, size_t dst_offset, int src_index,
                              const void *src, size_t src_offset, size_t bytes)
{
    if (dst_index == src_index)
        return ct_opencl_copy_device_to_device(dst_index, dst, dst_offset, src, src_offset, bytes);
    ct_opencl_device *to = &ct_opencl_devices[dst_index], *from = &ct_opencl_devices[src_index];
    if (to->context != from->context) return CT_ERR_UNAVAILABLE; /* the caller stages on the host */
    if (bytes == 0) return CT_OK;
    /* The copy runs on the destination's current queue, after the work queued on the source's. */
    cl_command_queue source_queue = ct_opencl_current_queue(src_index);
    cl_event source_ready;
    cl_int status = clEnqueueMarkerWithWaitList(source_queue, 0, NULL, &source_ready);
    if (status != CL_SUCCESS) return ct_opencl_fail(src_index, "clEnqueueMarkerWithWaitList", status);
    clFlush(source_queue); /* waiting on the destination's queue does not submit the source's */
    ct_status result = copy_and_wait(dst_index, ct_opencl_current_queue(dst_index), (cl_mem)dst,
                                     dst_offset, (cl_mem)src, src_offset, bytes, 1, &source_ready);
    clReleaseEvent(source_ready);
    return result;
}
