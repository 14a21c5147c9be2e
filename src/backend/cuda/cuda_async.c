/* Pinned host memory and queued copies on CUDA. Pinned memory comes from cuMemHostAlloc,
 * portable (page-locked for every context, so any device copies from it at full speed). A queued
 * copy is a cuMemcpy*Async on a stream; its event, when asked for, is recorded right after it;
 * its `done` is announced by a host function queued after it (cuLaunchHostFunc) and run on the
 * backends' completion thread (completion_thread.h), because a host function must not call CUDA
 * (and `done` may release storage, which waits for events and frees pinned memory). */
#include <stdlib.h>

#include "backend/completion_thread.h"
#include "backend/cuda/cuda_internal.h"
#include "core/core_internal.h"

/* The host function the driver runs once the copy before it has finished: hands the completion
 * to the completion thread (no CUDA call here, as the driver requires). */
static void CUDA_CB copy_finished(void *data) { ct_completion_post(data); }

/* After a queued copy on stream: its event for the caller, its `done` once it has finished.
 * Where no host function can be queued, waits for the copy and runs `done` here. On an error
 * `done` is not run (the caller undoes what it prepared for it). */
static ct_status after_enqueue(int index, CUstream stream, ct_backend_done done, void *done_arg,
                               void **event_out)
{
    if (event_out) {
        void *event = NULL;
        ct_status status = ct_cuda_event_create(index, &event);
        if (status == CT_OK) status = ct_cuda_event_record(index, event, stream);
        if (status != CT_OK) {
            ct_cu->cuStreamSynchronize(stream); /* nothing may still write where the caller frees */
            ct_cuda_event_destroy(index, event);
            return status;
        }
        *event_out = event;
    }
    if (done) {
        ct_completion *c = ct_completion_new(done, done_arg);
        if (!c || ct_cu->cuLaunchHostFunc(stream, copy_finished, c) != CUDA_SUCCESS) {
            ct_completion_discard(c);
            ct_cu->cuStreamSynchronize(stream);
            done(done_arg);
        }
    }
    return CT_OK;
}

ct_status ct_cuda_copy_host_to_device_async(int index, void *stream, void *dst, size_t dst_offset,
                                            const void *src, size_t bytes, ct_backend_done done,
                                            void *done_arg, void **event_out)
{
    ct_status status = ct_cuda_enter(index);
    if (status != CT_OK) return status;
    CUstream queue = ct_cuda_stream(stream);
    CUresult result = ct_cu->cuMemcpyHtoDAsync(ct_cuda_pointer(dst) + dst_offset, src, bytes, queue);
    if (result != CUDA_SUCCESS) return ct_cuda_fail(index, "cuMemcpyHtoDAsync (queued)", result);
    return after_enqueue(index, queue, done, done_arg, event_out);
}

ct_status ct_cuda_copy_device_to_host_async(int index, void *stream, void *dst, const void *src,
                                            size_t src_offset, size_t bytes, ct_backend_done done,
                                            void *done_arg, void **event_out)
{
    ct_status status = ct_cuda_enter(index);
    if (status != CT_OK) return status;
    CUstream queue = ct_cuda_stream(stream);
    CUresult result = ct_cu->cuMemcpyDtoHAsync(dst, ct_cuda_pointer(src) + src_offset, bytes, queue);
    if (result != CUDA_SUCCESS) return ct_cuda_fail(index, "cuMemcpyDtoHAsync (queued)", result);
    return after_enqueue(index, queue, done, done_arg, event_out);
}

void *ct_cuda_pinned_alloc(int index, size_t bytes, void **handle)
{
    if (bytes == 0 || ct_cuda_enter(index) != CT_OK) return NULL;
    void *host = NULL;
    CUresult result = ct_cu->cuMemHostAlloc(&host, bytes, CU_MEMHOSTALLOC_PORTABLE);
    if (result != CUDA_SUCCESS) {
        char text[256];
        ct_log_message(CT_LOG_DEBUG, "cuda:%d: no pinned memory of %zu bytes: %s", index, bytes,
                       ct_cuda_result_text(result, text, sizeof text));
        return NULL;
    }
    *handle = host; /* nothing else to keep: the pointer is what cuMemFreeHost takes */
    return host;
}

void ct_cuda_pinned_free(int index, void *host, void *handle)
{
    (void)handle;
    if (ct_cuda_enter(index) != CT_OK) return;
    CUresult result = ct_cu->cuMemFreeHost(host);
    if (result != CUDA_SUCCESS) {
        char text[256];
        ct_log_message(CT_LOG_WARN, "cuda:%d: cuMemFreeHost failed: %s", index,
                       ct_cuda_result_text(result, text, sizeof text));
    }
}
