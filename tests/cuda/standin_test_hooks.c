/* What the stand-in CUDA driver exports besides the driver's functions (standin.h): the call
 * counts and the launch log for the tests, and device memory and streams for the stand-in cuBLAS.
 * (The block scheduler's hooks are in standin_blocks.c.) */
#include "standin_internal.h"

void ctorch_standin_get_counts(ctorch_standin_counts *out)
{
    pthread_mutex_lock(&standin_lock);
    *out = standin_call_counts;
    pthread_mutex_unlock(&standin_lock);
}

/* The launch log: a ring of the last CTORCH_STANDIN_LAUNCH_LOG_CAPACITY launches; launches_logged
 * counts every launch since the last clear, so the ring holds numbers
 * [launches_logged - held, launches_logged). Under the lock. */
static ctorch_standin_launch launch_log[CTORCH_STANDIN_LAUNCH_LOG_CAPACITY];
static unsigned long launches_logged;

void standin_log_launch(const char *kernel, int device, unsigned grid_x, unsigned block_x,
                        unsigned shared_bytes)
{
    launch_log[launches_logged % CTORCH_STANDIN_LAUNCH_LOG_CAPACITY] =
        (ctorch_standin_launch){kernel, device, grid_x, block_x, shared_bytes, launches_logged};
    launches_logged++;
}

size_t ctorch_standin_launch_log(ctorch_standin_launch *out, size_t capacity)
{
    pthread_mutex_lock(&standin_lock);
    unsigned long held = launches_logged < CTORCH_STANDIN_LAUNCH_LOG_CAPACITY
                             ? launches_logged
                             : CTORCH_STANDIN_LAUNCH_LOG_CAPACITY;
    unsigned long oldest = launches_logged - held;
    for (size_t i = 0; i < capacity && i < held; i++)
        out[i] = launch_log[(oldest + i) % CTORCH_STANDIN_LAUNCH_LOG_CAPACITY];
    pthread_mutex_unlock(&standin_lock);
    return held;
}

void ctorch_standin_launch_log_clear(void)
{
    pthread_mutex_lock(&standin_lock);
    launches_logged = 0;
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
