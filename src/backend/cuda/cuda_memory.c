/* Device memory through cuMemAlloc and cuMemFree, and the blocking copies between the host and
 * the devices: each is queued on the calling thread's current stream of the device (after the
 * work it queued there), then waited for. */
#include <stdio.h>

#include "backend/cuda/cuda_internal.h"
#include "core/core_internal.h"

ct_status ct_cuda_raw_alloc(int index, size_t bytes, void **handle)
{
    *handle = NULL;
    if (bytes == 0) return CT_ERR_OUT_OF_MEMORY;
    ct_status status = ct_cuda_enter(index);
    if (status != CT_OK) return status;
    CUdeviceptr pointer = 0;
    CUresult result = ct_cu->cuMemAlloc(&pointer, bytes);
    if (result == CUDA_ERROR_OUT_OF_MEMORY) {
        ct_log_message(CT_LOG_DEBUG, "cuda:%d: cuMemAlloc(%zu bytes): out of memory", index, bytes);
        return CT_ERR_OUT_OF_MEMORY; /* the allocator releases its cache, retries, reports sizes */
    }
    if (result != CUDA_SUCCESS) {
        char what[64];
        snprintf(what, sizeof what, "cuMemAlloc(%zu bytes)", bytes);
        return ct_cuda_fail(index, what, result);
    }
    *handle = ct_cuda_handle(pointer);
    return CT_OK;
}

void ct_cuda_raw_free(int index, void *handle)
{
    if (!handle || ct_cuda_enter(index) != CT_OK) return;
    /* Work queued on any stream may still use the memory: let it finish (cuMemFree would wait
     * too, implicitly; saying so keeps the order plain). Raw frees are rare: the allocator caches. */
    ct_cu->cuCtxSynchronize();
    CUresult result = ct_cu->cuMemFree(ct_cuda_pointer(handle));
    if (result != CUDA_SUCCESS) {
        char text[256];
        ct_log_message(CT_LOG_WARN, "cuda:%d: cuMemFree failed: %s", index,
                       ct_cuda_result_text(result, text, sizeof text));
    }
}

/* Waits for stream after a queued copy; the copy's own failure comes first. */
static ct_status wait_for_copy(int index, const char *what, CUresult queued, CUstream stream)
{
    if (queued != CUDA_SUCCESS) return ct_cuda_fail(index, what, queued);
    CUresult result = ct_cu->cuStreamSynchronize(stream);
    return result == CUDA_SUCCESS ? CT_OK : ct_cuda_fail(index, "cuStreamSynchronize (after a copy)", result);
}

ct_status ct_cuda_copy_host_to_device(int index, void *dst, size_t dst_offset, const void *src,
                                      size_t bytes)
{
    if (bytes == 0) return CT_OK;
    ct_status status = ct_cuda_enter(index);
    if (status != CT_OK) return status;
    CUstream stream = ct_cuda_current_stream(index);
    CUresult result = ct_cu->cuMemcpyHtoDAsync(ct_cuda_pointer(dst) + dst_offset, src, bytes, stream);
    return wait_for_copy(index, "cuMemcpyHtoDAsync", result, stream);
}

ct_status ct_cuda_copy_device_to_host(int index, void *dst, const void *src, size_t src_offset,
                                      size_t bytes)
{
    if (bytes == 0) return CT_OK;
    ct_status status = ct_cuda_enter(index);
    if (status != CT_OK) return status;
    CUstream stream = ct_cuda_current_stream(index);
    CUresult result = ct_cu->cuMemcpyDtoHAsync(dst, ct_cuda_pointer(src) + src_offset, bytes, stream);
    return wait_for_copy(index, "cuMemcpyDtoHAsync", result, stream);
}

ct_status ct_cuda_copy_device_to_device(int index, void *dst, size_t dst_offset, const void *src,
                                        size_t src_offset, size_t bytes)
{
    if (bytes == 0) return CT_OK;
    ct_status status = ct_cuda_enter(index);
    if (status != CT_OK) return status;
    CUstream stream = ct_cuda_current_stream(index);
    CUdeviceptr to = ct_cuda_pointer(dst) + dst_offset, from = ct_cuda_pointer(src) + src_offset;
    if (to == from) return CT_OK;
    bool overlap = to < from + bytes && from < to + bytes;
    if (!overlap)
        return wait_for_copy(index, "cuMemcpyDtoDAsync", ct_cu->cuMemcpyDtoDAsync(to, from, bytes, stream),
                             stream);
    /* The driver does not promise memmove's semantics: go through a scratch buffer. */
    CUdeviceptr scratch = 0;
    CUresult result = ct_cu->cuMemAlloc(&scratch, bytes);
    if (result != CUDA_SUCCESS) return ct_cuda_fail(index, "cuMemAlloc (an overlapping copy)", result);
    /* One stream keeps the two copies in order: one wait for both. */
    result = ct_cu->cuMemcpyDtoDAsync(scratch, from, bytes, stream);
    if (result == CUDA_SUCCESS) result = ct_cu->cuMemcpyDtoDAsync(to, scratch, bytes, stream);
    status = wait_for_copy(index, "cuMemcpyDtoDAsync (through a scratch buffer)", result, stream);
    ct_cu->cuMemFree(scratch);
    return status;
}

ct_status ct_cuda_copy_peer(int dst_index, void *dst, size_t dst_offset, int src_index,
                            const void *src, size_t src_offset, size_t bytes)
{
    if (dst_index == src_index)
        return ct_cuda_copy_device_to_device(dst_index, dst, dst_offset, src, src_offset, bytes);
    if (bytes == 0) return CT_OK;
    /* After the work queued on the source's current stream (cuMemcpyPeer orders itself after
     * the contexts' legacy streams only, not after non-blocking ones). */
    ct_status status = ct_cuda_enter(src_index);
    if (status != CT_OK) return status;
    CUresult result = ct_cu->cuStreamSynchronize(ct_cuda_current_stream(src_index));
    if (result != CUDA_SUCCESS) return ct_cuda_fail(src_index, "cuStreamSynchronize (before a peer copy)", result);
    status = ct_cuda_enter(dst_index);
    if (status != CT_OK) return status;
    result = ct_cu->cuStreamSynchronize(ct_cuda_current_stream(dst_index));
    if (result != CUDA_SUCCESS) return ct_cuda_fail(dst_index, "cuStreamSynchronize (before a peer copy)", result);
    /* Works with or without peer access between the two (the driver stages through the host when
     * there is none); asynchronous to the host, so it is waited for in the destination's context. */
    result = ct_cu->cuMemcpyPeer(ct_cuda_pointer(dst) + dst_offset, ct_cuda_devices[dst_index].context,
                                 ct_cuda_pointer(src) + src_offset, ct_cuda_devices[src_index].context,
                                 bytes);
    if (result != CUDA_SUCCESS) {
        char what[64];
        snprintf(what, sizeof what, "cuMemcpyPeer (from cuda:%d)", src_index);
        return ct_cuda_fail(dst_index, what, result);
    }
    result = ct_cu->cuCtxSynchronize();
    return result == CUDA_SUCCESS ? CT_OK : ct_cuda_fail(dst_index, "cuCtxSynchronize (after a peer copy)", result);
}
