/* Events on OpenCL: a record enqueues a marker on the stream's queue and keeps its cl_event;
 * another stream waits for it with a barrier, the host with clWaitForEvents, and a query reads the
 * marker's execution status. An event that was never recorded has happened. */
#include <stdlib.h>

#include "backend/opencl/opencl_internal.h"
#include "core/core_internal.h"

ct_status ct_opencl_event_create(int index, void **event)
{
    ct_opencl_event *e = calloc(1, sizeof *e);
    if (!e) return ct_error(CT_ERR_OUT_OF_MEMORY, "opencl:%d: no host memory for an event", index);
    pthread_mutex_init(&e->lock, NULL);
    *event = e;
    return CT_OK;
}

ct_status ct_opencl_event_wrap(int index, cl_event marker, void **event)
{
    ct_status status = ct_opencl_event_create(index, event);
    if (status != CT_OK) return status;
    clRetainEvent(marker);
    ((ct_opencl_event *)*event)->marker = marker;
    return CT_OK;
}

void ct_opencl_event_destroy(int index, void *event)
{
    (void)index;
    ct_opencl_event *e = event;
    if (!e) return;
    if (e->marker) clReleaseEvent(e->marker);
    pthread_mutex_destroy(&e->lock);
    free(e);
}

ct_status ct_opencl_event_record(int index, void *event, void *stream)
{
    ct_opencl_event *e = event;
    cl_command_queue queue = ct_opencl_queue(index, stream);
    cl_event marker;
    cl_int status = clEnqueueMarkerWithWaitList(queue, 0, NULL, &marker);
    if (status != CL_SUCCESS) return ct_opencl_fail(index, "clEnqueueMarkerWithWaitList", status);
    clFlush(queue); /* another queue may wait for it: it must be submitted */
    pthread_mutex_lock(&e->lock);
    cl_event previous = e->marker;
    e->marker = marker;
    pthread_mutex_unlock(&e->lock);
    if (previous) clReleaseEvent(previous);
    return CT_OK;
}

/* The event's current marker, retained (NULL when never recorded). */
static cl_event current_marker(ct_opencl_event *e)
{
    pthread_mutex_lock(&e->lock);
    cl_event marker = e->marker;
    if (marker) clRetainEvent(marker);
    pthread_mutex_unlock(&e->lock);
    return marker;
}

ct_status ct_opencl_stream_wait_event(int index, void *stream, void *event)
{
    cl_event marker = current_marker(event);
    if (!marker) return CT_OK;
    cl_int status = clEnqueueBarrierWithWaitList(ct_opencl_queue(index, stream), 1, &marker, NULL);
    clReleaseEvent(marker);
    return status == CL_SUCCESS ? CT_OK : ct_opencl_fail(index, "clEnqueueBarrierWithWaitList", status);
}

ct_status ct_opencl_event_synchronize(int index, void *event)
{
    cl_event marker = current_marker(event);
    if (!marker) return CT_OK;
    cl_int status = clWaitForEvents(1, &marker);
    clReleaseEvent(marker);
    return status == CL_SUCCESS ? CT_OK : ct_opencl_fail(index, "clWaitForEvents", status);
}

ct_status ct_opencl_event_query(int index, void *event, bool *complete)
{
    cl_event marker = current_marker(event);
    *complete = true;
    if (!marker) return CT_OK;
    cl_int execution = CL_COMPLETE;
    cl_int status = clGetEventInfo(marker, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof execution,
                                   &execution, NULL);
    clReleaseEvent(marker);
    if (status != CL_SUCCESS) return ct_opencl_fail(index, "clGetEventInfo (an event's status)", status);
    /* A negative status is the error that ended the command, or a command before it. */
    if (execution < 0) return ct_opencl_fail(index, "the work before an event", execution);
    *complete = execution == CL_COMPLETE;
    return CT_OK;
}
