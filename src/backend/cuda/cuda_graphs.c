/* Graph capture on CUDA: the driver's stream capture. Between cuStreamBeginCapture and
 * cuStreamEndCapture, what ctorch queues on the stream (kernels, cuBLAS products, copies between
 * device buffers) is recorded into a CUgraph instead of running; it is instantiated once, and a
 * replay is one cuGraphLaunch.
 *
 * The capture is begun in CU_STREAM_CAPTURE_MODE_RELAXED: the graph's private pool (the caching
 * allocator) and cuBLAS's workspace call cuMemAlloc during the capture, which the stricter modes
 * forbid; what would break a capture (a synchronisation, a copy to or from the host) the layers
 * above refuse before it reaches the driver (device/capture.h), with a message naming the op.
 *
 * cuBLAS: a product is capturable once its handle has a workspace of ours, set after
 * cublasSetStream (which resets it), so that cuBLAS allocates nothing during the capture
 * (PyTorch does the same, CublasHandlePool.cpp). */
#include "backend/cuda/cuda_internal.h"
#include "core/core_internal.h"

/* PyTorch's default for cuBLAS workspaces before Hopper (CUBLAS_WORKSPACE_CONFIG :4096:2:16:8),
 * rounded up. */
#define CT_CUDA_BLAS_WORKSPACE_BYTES ((size_t)9 << 20)

static ct_status blas_workspace(int index)
{
    ct_cuda_device *device = &ct_cuda_devices[index];
    if (device->blas_workspace) return CT_OK;
    CUresult result = ct_cu->cuMemAlloc(&device->blas_workspace, CT_CUDA_BLAS_WORKSPACE_BYTES);
    if (result == CUDA_SUCCESS) return CT_OK;
    device->blas_workspace = 0;
    return ct_cuda_fail(index, "cuMemAlloc (cuBLAS's workspace for a graph capture)", result);
}

ct_status ct_cuda_capture_begin(int index, void *stream)
{
    ct_status status = ct_cuda_enter(index);
    if (status != CT_OK) return status;
    /* before the capture, which cannot make room for it (graph.c empties the cache first) */
    if ((status = blas_workspace(index)) != CT_OK) return status;
    CUresult result = ct_cu->cuStreamBeginCapture(ct_cuda_stream(stream), CU_STREAM_CAPTURE_MODE_RELAXED);
    return result == CUDA_SUCCESS ? CT_OK : ct_cuda_fail(index, "cuStreamBeginCapture", result);
}

ct_status ct_cuda_capture_end(int index, void *stream, void **graph)
{
    *graph = NULL;
    ct_status status = ct_cuda_enter(index);
    if (status != CT_OK) return status;
    CUgraph captured = NULL;
    CUresult result = ct_cu->cuStreamEndCapture(ct_cuda_stream(stream), &captured);
    if (result != CUDA_SUCCESS) {
        if (captured) ct_cu->cuGraphDestroy(captured);
        return ct_cuda_fail(index, "cuStreamEndCapture", result);
    }
    CUgraphExec exec = NULL;
    result = ct_cu->cuGraphInstantiateWithFlags(&exec, captured, 0);
    ct_cu->cuGraphDestroy(captured); /* the executable graph is a copy */
    if (result != CUDA_SUCCESS) return ct_cuda_fail(index, "cuGraphInstantiateWithFlags", result);
    *graph = exec;
    return CT_OK;
}

void ct_cuda_capture_abandon(int index, void *stream)
{
    if (ct_cuda_enter(index) != CT_OK) return;
    CUgraph captured = NULL;
    /* Ends the capture, valid or invalidated, so that the stream runs work again. */
    ct_cu->cuStreamEndCapture(ct_cuda_stream(stream), &captured);
    if (captured) ct_cu->cuGraphDestroy(captured);
}

ct_status ct_cuda_graph_launch(int index, void *graph, void *stream)
{
    ct_status status = ct_cuda_enter(index);
    if (status != CT_OK) return status;
    CUresult result = ct_cu->cuGraphLaunch((CUgraphExec)graph, ct_cuda_stream(stream));
    return result == CUDA_SUCCESS ? CT_OK : ct_cuda_fail(index, "cuGraphLaunch", result);
}

void ct_cuda_graph_destroy(int index, void *graph)
{
    if (ct_cuda_enter(index) == CT_OK) ct_cu->cuGraphExecDestroy((CUgraphExec)graph);
}

ct_status ct_cuda_blas_workspace_for_capture(int index, CUstream stream)
{
    CUstreamCaptureStatus capturing = CU_STREAM_CAPTURE_STATUS_NONE;
    if (!stream) return CT_OK; /* the NULL stream is never captured */
    CUresult result = ct_cu->cuStreamIsCapturing(stream, &capturing);
    if (result != CUDA_SUCCESS) return ct_cuda_fail(index, "cuStreamIsCapturing", result);
    if (capturing == CU_STREAM_CAPTURE_STATUS_NONE) return CT_OK;
    ct_cuda_device *device = &ct_cuda_devices[index];
    ct_status status = blas_workspace(index); /* made at the capture's begin already */
    if (status != CT_OK) return status;
    char reason[256];
    const ct_cuda_cublas *cublas = ct_cuda_cublas_library(reason, sizeof reason, NULL);
    cublasStatus_t set = cublas->cublasSetWorkspace(device->blas, (void *)(uintptr_t)device->blas_workspace,
                                                    CT_CUDA_BLAS_WORKSPACE_BYTES);
    if (set != CUBLAS_STATUS_SUCCESS)
        return ct_error(CT_ERR_BACKEND, "cuda:%d: cublasSetWorkspace failed: status %d", index, (int)set);
    return CT_OK;
}
