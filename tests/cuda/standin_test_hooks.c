/* What the stand-in CUDA driver exports besides the driver's functions (standin.h): the call
 * counts for the tests, and device memory and streams for the stand-in cuBLAS. */
#include "standin_internal.h"

void ctorch_standin_get_counts(ctorch_standin_counts *out)
{
    pthread_mutex_lock(&standin_lock);
    *out = standin_call_counts;
    pthread_mutex_unlock(&standin_lock);
}

CUresult standin_next_mem_alloc_failure = CUDA_SUCCESS;

void ctorch_standin_fail_next_mem_alloc(CUresult result)
{
    pthread_mutex_lock(&standin_lock);
    standin_next_mem_alloc_failure = result;
    pthread_mutex_unlock(&standin_lock);
}

void *ctorch_standin_host_address(CUdeviceptr pointer, size_t bytes, int *device_out)
{
    pthread_mutex_lock(&standin_lock);
    allocation *a = standin_find_allocation((uintptr_t)pointer, bytes);
    void *host = a ? standin_host_of(a, (uintptr_t)pointer) : NULL;
    if (a && device_out) *device_out = a->device;
    pthread_mutex_unlock(&standin_lock);
    return host;
}

CUresult ctorch_standin_enqueue(CUstream handle, void (*run)(void *), void (*finish)(void *), void *arg)
{
    pthread_mutex_lock(&standin_lock);
    standin_call_counts.gemms++;
    CUcontext ctx = standin_live_current();
    CUstream s;
    CUresult r = ctx ? standin_resolve_stream(handle, ctx, &s) : CUDA_ERROR_INVALID_CONTEXT;
    if (r == CUDA_SUCCESS && s->ctx != ctx) r = CUDA_ERROR_INVALID_HANDLE;
    if (r != CUDA_SUCCESS) {
        pthread_mutex_unlock(&standin_lock);
        if (finish) finish(arg);
        return r;
    }
    op *o = standin_op_new(OP_CALL);
    o->u.call.run = run;
    o->u.call.finish = finish;
    o->u.call.arg = arg;
    standin_enqueue(s, o);
    return standin_leave(CUDA_SUCCESS);
}

int ctorch_standin_current_device(void)
{
    pthread_mutex_lock(&standin_lock);
    CUcontext ctx = standin_live_current();
    int device = ctx ? ctx->device : -1;
    pthread_mutex_unlock(&standin_lock);
    return device;
}

int ctorch_standin_stream_device(CUstream handle)
{
    pthread_mutex_lock(&standin_lock);
    CUstream s;
    CUresult r = standin_resolve_stream(handle, standin_live_current(), &s);
    int device = r == CUDA_SUCCESS ? s->ctx->device : -1;
    pthread_mutex_unlock(&standin_lock);
    return device;
}
