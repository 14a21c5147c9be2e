/* The stand-in CUDA driver's copies (standin_internal.h), queued on a stream and synchronised
 * with the host as the driver documents: synchronous copies wait, except device to device;
 * async copies from pageable memory stage their source (to the device) or wait (to the host). */
#include "standin_internal.h"

#include <stdlib.h>
#include <string.h>

/* Queues a copy on s; with `wait`, returns once it has run, with the failure of s's context if a
 * kernel before it failed (as a GPU reports a kernel's fault at the next synchronisation). */
static CUresult queue_copy(CUstream s, void *dst, const void *src, size_t bytes, void *staging, bool wait)
{
    op *o = standin_op_new(OP_COPY);
    o->u.copy.dst = dst;
    o->u.copy.src = src;
    o->u.copy.bytes = bytes;
    o->u.copy.staging = staging;
    CUcontext ctx = s->ctx; /* s may be destroyed and freed while this waits */
    timeline *line = standin_timeline_ref(s->line);
    uint64_t seq = standin_enqueue(s, o);
    if (wait) standin_wait_for(line, seq);
    standin_timeline_unref(line);
    return wait ? ctx->failure : CUDA_SUCCESS;
}

/* A copy of [src, src + bytes) made now: the staging buffer of a copy from pageable memory. */
static void *stage(const void *src, size_t bytes)
{
    void *staging = malloc(bytes ? bytes : 1);
    if (!staging) {
        standin_complain("host out of memory");
        abort();
    }
    if (bytes) memcpy(staging, src, bytes);
    return staging;
}

CUresult cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t bytes)
{
    ENTER_CONTEXT(ctx);
    standin_call_counts.memcpy_sync++;
    if (bytes == 0) return standin_leave(CUDA_SUCCESS);
    void *to = standin_device_range(dst, bytes, "cuMemcpyHtoD destination", NULL);
    if (!to || !standin_host_pointer(src, "cuMemcpyHtoD source"))
        return standin_leave(CUDA_ERROR_INVALID_VALUE);
    return standin_leave(queue_copy(ctx->null_stream, to, src, bytes, NULL, true));
}

CUresult cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t bytes)
{
    ENTER_CONTEXT(ctx);
    standin_call_counts.memcpy_sync++;
    if (bytes == 0) return standin_leave(CUDA_SUCCESS);
    void *from = standin_device_range(src, bytes, "cuMemcpyDtoH source", NULL);
    if (!from || !standin_host_pointer(dst, "cuMemcpyDtoH destination")) return standin_leave(CUDA_ERROR_INVALID_VALUE);
    return standin_leave(queue_copy(ctx->null_stream, dst, from, bytes, NULL, true));
}

/* Device to device: no host synchronisation (the copy is queued on the NULL stream). */
CUresult cuMemcpyDtoD(CUdeviceptr dst, CUdeviceptr src, size_t bytes)
{
    ENTER_CONTEXT(ctx);
    standin_call_counts.memcpy_sync++;
    if (bytes == 0) return standin_leave(CUDA_SUCCESS);
    void *to = standin_device_range(dst, bytes, "cuMemcpyDtoD destination", NULL);
    void *from = standin_device_range(src, bytes, "cuMemcpyDtoD source", NULL);
    if (!to || !from) return standin_leave(CUDA_ERROR_INVALID_VALUE);
    queue_copy(ctx->null_stream, to, from, bytes, NULL, false);
    return standin_leave(CUDA_SUCCESS);
}

CUresult cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src, size_t bytes, CUstream handle)
{
    ENTER_CONTEXT(ctx);
    standin_call_counts.memcpy_async++;
    CUstream s;
    CUresult r = standin_resolve_stream(handle, ctx, &s);
    if (r != CUDA_SUCCESS) return standin_leave(r);
    if (bytes == 0) return standin_leave(CUDA_SUCCESS);
    void *to = standin_device_range(dst, bytes, "cuMemcpyHtoDAsync destination", NULL);
    if (!to || !standin_host_pointer(src, "cuMemcpyHtoDAsync source")) return standin_leave(CUDA_ERROR_INVALID_VALUE);
    /* From pageable memory the source is staged at once and the caller may reuse it. */
    if (standin_pinned_range(src, bytes))
        queue_copy(s, to, src, bytes, NULL, false);
    else {
        void *staging = stage(src, bytes);
        queue_copy(s, to, staging, bytes, staging, false);
    }
    return standin_leave(CUDA_SUCCESS);
}

CUresult cuMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t bytes, CUstream handle)
{
    ENTER_CONTEXT(ctx);
    standin_call_counts.memcpy_async++;
    CUstream s;
    CUresult r = standin_resolve_stream(handle, ctx, &s);
    if (r != CUDA_SUCCESS) return standin_leave(r);
    if (bytes == 0) return standin_leave(CUDA_SUCCESS);
    void *from = standin_device_range(src, bytes, "cuMemcpyDtoHAsync source", NULL);
    if (!from || !standin_host_pointer(dst, "cuMemcpyDtoHAsync destination")) return standin_leave(CUDA_ERROR_INVALID_VALUE);
    /* To pageable memory the call returns once the copy is done. */
    return standin_leave(queue_copy(s, dst, from, bytes, NULL, !standin_pinned_range(dst, bytes)));
}

CUresult cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream handle)
{
    ENTER_CONTEXT(ctx);
    standin_call_counts.memcpy_async++;
    CUstream s;
    CUresult r = standin_resolve_stream(handle, ctx, &s);
    if (r != CUDA_SUCCESS) return standin_leave(r);
    if (bytes == 0) return standin_leave(CUDA_SUCCESS);
    void *to = standin_device_range(dst, bytes, "cuMemcpyDtoDAsync destination", NULL);
    void *from = standin_device_range(src, bytes, "cuMemcpyDtoDAsync source", NULL);
    if (!to || !from) return standin_leave(CUDA_ERROR_INVALID_VALUE);
    queue_copy(s, to, from, bytes, NULL, false);
    return standin_leave(CUDA_SUCCESS);
}

/* Between contexts: serialised with all earlier and later work of the current, source and
 * destination contexts (here: after all of it has finished, and done before returning). */
CUresult cuMemcpyPeer(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx,
                      size_t bytes)
{
    ENTER();
    standin_call_counts.memcpy_peer++;
    if (!dst_ctx || !src_ctx || !dst_ctx->active || !src_ctx->active)
        return standin_leave(CUDA_ERROR_INVALID_CONTEXT);
    if (bytes == 0) return standin_leave(CUDA_SUCCESS);
    int dst_device = -1, src_device = -1;
    void *to = standin_device_range(dst, bytes, "cuMemcpyPeer destination", &dst_device);
    void *from = standin_device_range(src, bytes, "cuMemcpyPeer source", &src_device);
    if (!to || !from) return standin_leave(CUDA_ERROR_INVALID_VALUE);
    if ((dst_device >= 0 && dst_device != dst_ctx->device) ||
        (src_device >= 0 && src_device != src_ctx->device)) {
        standin_complain("cuMemcpyPeer: memory of device %d/%d given with contexts of devices "
                         "%d/%d", dst_device, src_device, dst_ctx->device, src_ctx->device);
        return standin_leave(CUDA_ERROR_INVALID_VALUE);
    }
    CUcontext ctx = standin_live_current();
    if (ctx) standin_drain_context(ctx);
    standin_drain_context(dst_ctx);
    standin_drain_context(src_ctx);
    memmove(to, from, bytes);
    return standin_leave(CUDA_SUCCESS);
}
