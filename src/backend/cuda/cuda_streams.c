/* Streams and events on CUDA. A ctorch stream is a CUstream created non-blocking (it does not
 * wait for the NULL stream, as PyTorch's side streams), so ordering between streams is what
 * events say. The default stream is the context's NULL stream. An event is a CUevent without
 * timing; one never recorded has happened (cuEventSynchronize and cuStreamWaitEvent return at
 * once), which is the interface's rule too. Synchronizing a device waits for all its streams. */
#include <stdlib.h>

#include "backend/cuda/cuda_internal.h"
#include "core/core_internal.h"
#include "device/device_internal.h"

CUstream ct_cuda_current_stream(int index)
{
    return ct_cuda_stream(ct_current_stream_handle((ct_device){CT_CUDA, index}));
}

ct_status ct_cuda_stream_create(int index, void **stream)
{
    ct_status status = ct_cuda_enter(index);
    if (status != CT_OK) return status;
    CUstream created = NULL;
    CUresult result = ct_cu->cuStreamCreate(&created, CU_STREAM_NON_BLOCKING);
    if (result != CUDA_SUCCESS) return ct_cuda_fail(index, "cuStreamCreate", result);
    *stream = created;
    return CT_OK;
}

void ct_cuda_stream_destroy(int index, void *stream)
{
    if (!stream || ct_cuda_enter(index) != CT_OK) return;
    /* Work still queued keeps running: the driver frees the stream once it is done. */
    ct_cu->cuStreamDestroy(ct_cuda_stream(stream));
}

ct_status ct_cuda_stream_synchronize(int index, void *stream)
{
    ct_status status = ct_cuda_enter(index);
    if (status != CT_OK) return status;
    CUresult result = ct_cu->cuStreamSynchronize(ct_cuda_stream(stream));
    return result == CUDA_SUCCESS ? CT_OK : ct_cuda_fail(index, "cuStreamSynchronize", result);
}

ct_status ct_cuda_synchronize(int index)
{
    ct_status status = ct_cuda_enter(index);
    if (status != CT_OK) return status;
    CUresult result = ct_cu->cuCtxSynchronize();
    return result == CUDA_SUCCESS ? CT_OK : ct_cuda_fail(index, "cuCtxSynchronize", result);
}

ct_status ct_cuda_event_create(int index, void **event)
{
    ct_status status = ct_cuda_enter(index);
    if (status != CT_OK) return status;
    CUevent created = NULL;
    CUresult result = ct_cu->cuEventCreate(&created, CU_EVENT_DISABLE_TIMING);
    if (result != CUDA_SUCCESS) return ct_cuda_fail(index, "cuEventCreate", result);
    *event = created;
    return CT_OK;
}

void ct_cuda_event_destroy(int index, void *event)
{
    if (!event || ct_cuda_enter(index) != CT_OK) return;
    ct_cu->cuEventDestroy((CUevent)event); /* a recorded event not yet reached is freed once it is */
}

ct_status ct_cuda_event_record(int index, void *event, void *stream)
{
    ct_status status = ct_cuda_enter(index);
    if (status != CT_OK) return status;
    CUresult result = ct_cu->cuEventRecord((CUevent)event, ct_cuda_stream(stream));
    return result == CUDA_SUCCESS ? CT_OK : ct_cuda_fail(index, "cuEventRecord", result);
}

ct_status ct_cuda_stream_wait_event(int index, void *stream, void *event)
{
    ct_status status = ct_cuda_enter(index);
    if (status != CT_OK) return status;
    CUresult result = ct_cu->cuStreamWaitEvent(ct_cuda_stream(stream), (CUevent)event, 0);
    return result == CUDA_SUCCESS ? CT_OK : ct_cuda_fail(index, "cuStreamWaitEvent", result);
}

ct_status ct_cuda_event_synchronize(int index, void *event)
{
    ct_status status = ct_cuda_enter(index);
    if (status != CT_OK) return status;
    CUresult result = ct_cu->cuEventSynchronize((CUevent)event);
    return result == CUDA_SUCCESS ? CT_OK : ct_cuda_fail(index, "cuEventSynchronize", result);
}

ct_status ct_cuda_event_query(int index, void *event, bool *complete)
{
    *complete = true;
    ct_status status = ct_cuda_enter(index);
    if (status != CT_OK) return status;
    CUresult result = ct_cu->cuEventQuery((CUevent)event);
    if (result == CUDA_ERROR_NOT_READY) {
        *complete = false;
        return CT_OK;
    }
    return result == CUDA_SUCCESS ? CT_OK : ct_cuda_fail(index, "cuEventQuery", result);
}
