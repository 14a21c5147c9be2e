/* Pinned host memory and queued copies on OpenCL. Pinned memory is a CL_MEM_ALLOC_HOST_PTR
 * buffer mapped once for its whole life (drivers back it with page-locked memory; PoCL hands out
 * page-aligned host memory, which copies at memcpy speed). A queued copy is a non-blocking
 * read or write on a stream's queue; its `done` runs on the backends' completion thread
 * (completion_thread.h), not in the driver's event callback, where OpenCL forbids blocking calls
 * (and `done` may release storage, which can wait for events and free pinned buffers). */
#include <stdlib.h>

#include "backend/completion_thread.h"
#include "backend/opencl/opencl_internal.h"
#include "core/core_internal.h"

/* The driver's callback: hands the completion to the completion thread. */
static void CL_CALLBACK copy_finished(cl_event event, cl_int status, void *data)
{
    (void)event;
    (void)status; /* a failed copy completes too: its storage must still be released */
    ct_completion_post(data);
}

/* After a queued copy: its event for the caller, its `done` once it has finished. Where no
 * callback can be set up, waits for the copy and runs `done` here. On an error `done` is not
 * run (the caller undoes what it prepared for it). */
static ct_status after_enqueue(int index, cl_command_queue queue, cl_event finished,
                               ct_backend_done done, void *done_arg, void **event_out)
{
    clFlush(queue); /* start it now, not at the next wait */
    if (event_out) {
        ct_status status = ct_opencl_event_wrap(index, finished, event_out);
        if (status != CT_OK) {
            clWaitForEvents(1, &finished); /* nothing may still write where the caller frees */
            clReleaseEvent(finished);
            return status;
        }
    }
    if (done) {
        ct_completion *c = ct_completion_new(done, done_arg);
        if (!c || clSetEventCallback(finished, CL_COMPLETE, copy_finished, c) != CL_SUCCESS) {
            ct_completion_discard(c);
            clWaitForEvents(1, &finished);
            done(done_arg);
        }
    }
    clReleaseEvent(finished);
    return CT_OK;
}

ct_status ct_opencl_copy_host_to_device_async(int index, void *stream, void *dst, size_t dst_offset,
                                              const void *src, size_t bytes, ct_backend_done done,
                                              void *done_arg, void **event_out)
{
    cl_command_queue queue = ct_opencl_queue(index, stream);
    cl_event finished;
    cl_int status = clEnqueueWriteBuffer(queue, (cl_mem)dst, CL_FALSE, dst_offset, bytes, src, 0,
                                         NULL, &finished);
    if (status != CL_SUCCESS) return ct_opencl_fail(index, "clEnqueueWriteBuffer (queued)", status);
    return after_enqueue(index, queue, finished, done, done_arg, event_out);
}

ct_status ct_opencl_copy_device_to_host_async(int index, void *stream, void *dst, const void *src,
                                              size_t src_offset, size_t bytes, ct_backend_done done,
                                              void *done_arg, void **event_out)
{
    cl_command_queue queue = ct_opencl_queue(index, stream);
    cl_event finished;
    cl_int status = clEnqueueReadBuffer(queue, (cl_mem)src, CL_FALSE, src_offset, bytes, dst, 0,
                                        NULL, &finished);
    if (status != CL_SUCCESS) return ct_opencl_fail(index, "clEnqueueReadBuffer (queued)", status);
    return after_enqueue(index, queue, finished, done, done_arg, event_out);
}

void *ct_opencl_pinned_alloc(int index, size_t bytes, void **handle)
{
    ct_opencl_device *device = &ct_opencl_devices[index];
    if (bytes == 0 || bytes > device->max_allocation) return NULL;
    cl_int status;
    cl_mem buffer = clCreateBuffer(device->context, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bytes,
                                   NULL, &status);
    if (status != CL_SUCCESS) {
        ct_log_message(CT_LOG_DEBUG, "opencl:%d: no pinned buffer of %zu bytes: %s", index, bytes,
                       ct_opencl_status_name(status));
        return NULL;
    }
    void *host = clEnqueueMapBuffer(device->queue, buffer, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0,
                                    bytes, 0, NULL, NULL, &status);
    if (status != CL_SUCCESS) {
        ct_log_message(CT_LOG_DEBUG, "opencl:%d: mapping a pinned buffer of %zu bytes: %s", index,
                       bytes, ct_opencl_status_name(status));
        clReleaseMemObject(buffer);
        return NULL;
    }
    *handle = buffer;
    return host;
}

void ct_opencl_pinned_free(int index, void *host, void *handle)
{
    clEnqueueUnmapMemObject(ct_opencl_devices[index].queue, (cl_mem)handle, host, 0, NULL, NULL);
    clReleaseMemObject((cl_mem)handle); /* freed once the unmap is done */
}
