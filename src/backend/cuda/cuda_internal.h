/* The CUDA backend's shared state: the driver's table, the devices found at init (each with its
 * primary context, retained on first use), and the entry points of backend_interface.h, one file
 * per idea.
 *
 * Threads: the driver keeps a current context per thread, so every entry point that calls the
 * driver for a device first makes that device's primary context current (ct_cuda_enter). The
 * default stream of a device is the context's NULL stream (as PyTorch's); device memory handles
 * are CUdeviceptr values carried in the interface's void pointers. */
#ifndef CT_CUDA_INTERNAL_H
#define CT_CUDA_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "backend/cuda/cuda_libraries.h"
#include "device/backend_interface.h"
#include "kernels/kernel_ids.h"

#define CT_CUDA_MAX_DEVICES CT_MAX_DEVICES_PER_TYPE

typedef struct ct_cuda_device {
    CUdevice id;
    char name[256];
    int capability_major, capability_minor;
    int multiprocessors;
    int threads_per_multiprocessor; /* resident threads: 2048 on an H100 */
    size_t total_memory;

    /* The primary context, retained the first time the device is used (creating it takes time
     * and device memory, so devices never used are never touched). */
    pthread_mutex_t context_lock;
    atomic_bool context_ready;
    CUcontext context;

    /* Kernels: a module per family (built on first use), a function per kernel id. */
    pthread_mutex_t kernels_lock;
    CUmodule modules[CT_KERNEL_FAMILY_COUNT];
    _Atomic(CUfunction) functions[CT_KERNEL_COUNT];

    /* cuBLAS: one handle, created on the first product, used under the lock (its stream is
     * handle state). */
    pthread_mutex_t blas_lock;
    cublasHandle_t blas;
    /* Its workspace for products captured into a graph (cuda_graphs.c): made at the first one,
     * kept for the device's life, as graphs hold its address. */
    CUdeviceptr blas_workspace;
} ct_cuda_device;

/* Filled by init, read-only afterwards (apart from the lazily made parts above, under locks). */
extern const ct_cuda_driver *ct_cu;
extern int ct_cuda_device_count;
extern ct_cuda_device ct_cuda_devices[CT_CUDA_MAX_DEVICES];

/* "CUDA_ERROR_OUT_OF_MEMORY (out of memory)" for a driver result, into buf. */
const char *ct_cuda_result_text(CUresult result, char *buf, size_t size);
/* Records CT_ERR_BACKEND: "cuda:<index>: <what> failed: CUDA_ERROR_... (<text>)"; returns it
 * (CT_ERR_OUT_OF_MEMORY for CUDA_ERROR_OUT_OF_MEMORY). */
ct_status ct_cuda_fail(int index, const char *what, CUresult result);

/* Makes device index's primary context current on this thread (retaining it on first use). */
ct_status ct_cuda_enter(int index);

/* A device pointer from the interface's handle, and back. */
static inline CUdeviceptr ct_cuda_pointer(const void *handle) { return (CUdeviceptr)(uintptr_t)handle; }
static inline void *ct_cuda_handle(CUdeviceptr pointer) { return (void *)(uintptr_t)pointer; }
/* The stream of a stream handle (NULL: the context's NULL stream, the default one). */
static inline CUstream ct_cuda_stream(void *stream) { return (CUstream)stream; }
/* The stream of this thread's current stream on the device: blocking copies run there, after
 * the work the thread queued (as PyTorch copies on the current stream). */
CUstream ct_cuda_current_stream(int index);

/* Backend entry points. */
bool ct_cuda_init(char *reason, size_t reason_size);
int ct_cuda_get_device_count(void);
ct_status ct_cuda_get_properties(int index, ct_device_props *props);
ct_status ct_cuda_mem_get_info(int index, size_t *free_bytes, size_t *total_bytes);
ct_status ct_cuda_raw_alloc(int index, size_t bytes, void **handle);
void ct_cuda_raw_free(int index, void *handle);
ct_status ct_cuda_copy_host_to_device(int index, void *dst, size_t dst_offset, const void *src,
                                      size_t bytes);
ct_status ct_cuda_copy_device_to_host(int index, void *dst, const void *src, size_t src_offset,
                                      size_t bytes);
ct_status ct_cuda_copy_device_to_device(int index, void *dst, size_t dst_offset, const void *src,
                                        size_t src_offset, size_t bytes);
ct_status ct_cuda_copy_peer(int dst_index, void *dst, size_t dst_offset, int src_index,
                            const void *src, size_t src_offset, size_t bytes);
ct_status ct_cuda_copy_host_to_device_async(int index, void *stream, void *dst, size_t dst_offset,
                                            const void *src, size_t bytes, ct_backend_done done,
                                            void *done_arg, void **event_out);
ct_status ct_cuda_copy_device_to_host_async(int index, void *stream, void *dst, const void *src,
                                            size_t src_offset, size_t bytes, ct_backend_done done,
                                            void *done_arg, void **event_out);
void *ct_cuda_pinned_alloc(int index, size_t bytes, void **handle);
void ct_cuda_pinned_free(int index, void *host, void *handle);
ct_status ct_cuda_launch(int index, void *stream, int kernel, void *const buffers[],
                         const struct ct_kparams *params, long work_per_item, int group_size);
void ct_cuda_work_shape(int index, ct_work_shape *shape);
ct_status ct_cuda_gemm(int index, void *stream, const ct_gemm_args *args);
bool ct_cuda_gemm_takes(int index, ct_dtype dtype);
ct_status ct_cuda_synchronize(int index);
ct_status ct_cuda_stream_create(int index, void **stream);
void ct_cuda_stream_destroy(int index, void *stream);
ct_status ct_cuda_stream_synchronize(int index, void *stream);
ct_status ct_cuda_event_create(int index, void **event);
void ct_cuda_event_destroy(int index, void *event);
ct_status ct_cuda_event_record(int index, void *event, void *stream);
ct_status ct_cuda_stream_wait_event(int index, void *stream, void *event);
ct_status ct_cuda_event_synchronize(int index, void *event);
ct_status ct_cuda_event_query(int index, void *event, bool *complete);

/* Graph capture (cuda_graphs.c). */
ct_status ct_cuda_capture_begin(int index, void *stream);
ct_status ct_cuda_capture_end(int index, void *stream, void **graph);
void ct_cuda_capture_abandon(int index, void *stream);
ct_status ct_cuda_graph_launch(int index, void *graph, void *stream);
void ct_cuda_graph_destroy(int index, void *graph);
/* Sets the cuBLAS handle's workspace when stream is capturing (cuBLAS allocates none during a
 * capture); the device's context is current and its blas_lock held. */
ct_status ct_cuda_blas_workspace_for_capture(int index, CUstream stream);

/* The CUfunction of a kernel id on a device, compiling its family on first use (see
 * cuda_programs.c). The device's context is current. */
ct_status ct_cuda_function(int index, int kernel, CUfunction *out);

#endif
