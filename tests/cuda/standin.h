/* The stand-in CUDA driver (standin_*.c, see standin_internal.h) and cuBLAS (standin_cublas.c):
 * libraries built only for the tests, never installed nor linked into ctorch. They export the
 * functions of src/backend/cuda/cuda_libraries.h's lists under the real libraries' symbol names,
 * over host memory, and run the CPU build of the same kernels by name; ctorch opens them through
 * CTORCH_CUDA_DRIVER and CTORCH_CUDA_CUBLAS.
 *
 * Besides the driver's functions, the stand-in driver exports the few below (prefixed
 * ctorch_standin_, which no real library has): counters for the tests, and what the stand-in
 * cuBLAS needs from the driver (device memory as host addresses, and its streams).
 *
 * The stand-in's environment, read by cuInit:
 *   CTORCH_CUDA_STANDIN_DEVICES     physical devices (default 1)
 *   CTORCH_CUDA_STANDIN_MEMORY_MB   each one's memory in MiB (default 512); a comma list gives
 *                                   each physical device its own ("512,256")
 *   CTORCH_CUDA_STANDIN_DELAY_US    a pause before every queued operation runs (default 0), so
 *                                   that a missing wait shows as a wrong value
 *   CTORCH_CUDA_STANDIN_PEER        0: no device can access another (default 1: all can)
 *   CUDA_VISIBLE_DEVICES            as the real driver reads it
 * Errors a real GPU would only report later (a fault in a kernel) are reported at the call that
 * causes them, with a line on stderr that starts "ctorch CUDA stand-in:". */
#ifndef CTORCH_CUDA_STANDIN_H
#define CTORCH_CUDA_STANDIN_H

#include <stddef.h>

#include <cuda.h>

/* How many times each function was called since the library was loaded (successful or not). */
typedef struct ctorch_standin_counts {
    long mem_alloc, mem_free, mem_host_alloc, mem_free_host;
    long memcpy_sync, memcpy_async, memcpy_peer;
    long launches, module_loads, host_funcs;
    long stream_creates, event_records, stream_waits, synchronizes;
    long gemms; /* from the stand-in cuBLAS */
} ctorch_standin_counts;
void ctorch_standin_get_counts(ctorch_standin_counts *out);
typedef void (*ctorch_standin_get_counts_fn)(ctorch_standin_counts *out);

/* The next cuMemAlloc returns result instead of allocating (once), as a driver does when a device
 * is lost or the context is broken: an error that is not out of memory. */
void ctorch_standin_fail_next_mem_alloc(CUresult result);
typedef void (*ctorch_standin_fail_next_mem_alloc_fn)(CUresult result);

/* For the stand-in cuBLAS. The host address of [pointer, pointer + bytes) when it lies in one
 * live device allocation (or pinned host allocation), else NULL; *device receives the
 * allocation's device (-1 for pinned host memory). */
void *ctorch_standin_host_address(CUdeviceptr pointer, size_t bytes, int *device);
/* Queues run(arg) on stream (NULL: the NULL stream of the current context), in order with the
 * stream's other work; finish(arg) runs after it (or at once when queueing fails). The current
 * context must be the stream's. Counts as one cuBLAS product. */
CUresult ctorch_standin_enqueue(CUstream stream, void (*run)(void *arg), void (*finish)(void *arg),
                                void *arg);
/* The device of the current context, or -1 when none is current. */
int ctorch_standin_current_device(void);
/* The device of a stream (NULL: of the current context), or -1 when the handle is not a live
 * stream. */
int ctorch_standin_stream_device(CUstream stream);

#endif
