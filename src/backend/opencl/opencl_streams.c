/* Streams on OpenCL: each is one more in-order command queue on the device, next to the
 * default queue. The device keeps a list of its live streams so that synchronizing the device
 * waits for all of them. */
#include <stdlib.h>

#include "backend/opencl/opencl_internal.h"
#include "core/core_internal.h"
#include "device/device_internal.h"

cl_command_queue ct_opencl_current_queue(int index)
{
    return ct_opencl_queue(index, ct_current_stream_handle((ct_device){CT_OPENCL, index}));
}

ct_status ct_opencl_stream_create(int index, void **stream)
{
    ct_opencl_device *device = &ct_opencl_devices[index];
    cl_int status;
    cl_command_queue queue = clCreateCommandQueue(device->context, device->id, 0, &status);
    if (status != CL_SUCCESS) return ct_opencl_fail(index, "clCreateCommandQueue (a stream)", status);
    pthread_mutex_lock(&device->streams_lock);
    if (device->stream_count == device->stream_capacity) {
        int capacity = device->stream_capacity ? 2 * device->stream_capacity : 8;
        cl_command_queue *grown = realloc(device->streams, (size_t)capacity * sizeof *grown);
        if (!grown) {
            pthread_mutex_unlock(&device->streams_lock);
            clReleaseCommandQueue(queue);
            return ct_error(CT_ERR_OUT_OF_MEMORY, "opencl:%d: no host memory to list a stream", index);
        }
        device->streams = grown;
        device->stream_capacity = capacity;
    }
    device->streams[device->stream_count++] = queue;
    pthread_mutex_unlock(&device->streams_lock);
    *stream = queue;
    return CT_OK;
}

void ct_opencl_stream_destroy(int index, void *stream)
{
    ct_opencl_device *device = &ct_opencl_devices[index];
    pthread_mutex_lock(&device->streams_lock);
    for (int i = 0; i < device->stream_count; i++) {
        if (device->streams[i] != (cl_command_queue)stream) continue;
        device->streams[i] = device->streams[--device->stream_count];
        break;
    }
    if (device->stream_count == 0) { /* the last one: give the list back */
        free(device->streams);
        device->streams = NULL;
        device->stream_capacity = 0;
    }
    pthread_mutex_unlock(&device->streams_lock);
    /* Work still queued finishes first: unlisted, the queue is no longer one the exit handler
     * waits for (opencl_devices.c), and a compile still running in it at exit crashes. */
    clFinish((cl_command_queue)stream);
    clReleaseCommandQueue((cl_command_queue)stream);
}

ct_status ct_opencl_stream_synchronize(int index, void *stream)
{
    cl_int status = clFinish(ct_opencl_queue(index, stream));
    return status == CL_SUCCESS ? CT_OK : ct_opencl_fail(index, "clFinish", status);
}

ct_status ct_opencl_synchronize(int index)
{
    ct_opencl_device *device = &ct_opencl_devices[index];
    ct_status result = ct_opencl_stream_synchronize(index, NULL);
    pthread_mutex_lock(&device->streams_lock);
    for (int i = 0; i < device->stream_count && result == CT_OK; i++)
        result = ct_opencl_stream_synchronize(index, device->streams[i]);
    pthread_mutex_unlock(&device->streams_lock);
    return result;
}
