/* The stand-in CUDA driver (standin_*.c, see standin_internal.h) and cuBLAS (standin_cublas.c):
 * libraries built only for the tests, never installed nor linked into ctorch. They export the
 * functions of src/backend/cuda/cuda_libraries.h's lists under the real libraries' symbol names,
 * over host memory, and run the CPU build of the same kernels by name; ctorch opens them through
 * CTORCH_CUDA_DRIVER and CTORCH_CUDA_CUBLAS.
 *
 * Besides the driver's functions, the stand-in driver exports the few below (prefixed
 * ctorch_standin_, which no real library has): counters and a launch log for the tests, what the
 * stand-in cuBLAS needs from the driver (device memory as host addresses, and its streams), what
 * the kernels' C build calls for its block and thread ids and barriers, and the block scheduler
 * on its own for its tests.
 *
 * The stand-in's environment, read by cuInit:
 *   CTORCH_CUDA_STANDIN_DEVICES     physical devices (default 1)
 *   CTORCH_CUDA_STANDIN_MEMORY_MB   each one's memory in MiB (default 512); a comma list gives
 *                                   each physical device its own ("512,256")
 *   CTORCH_CUDA_STANDIN_DELAY_US    a pause before every queued operation runs (default 0), so
 *                                   that a missing wait shows as a wrong value
 *   CTORCH_CUDA_STANDIN_PEER        0: no device can access another (default 1: all can)
 *   CTORCH_CUDA_STANDIN_PROFILE     what every device presents: "default" (the stand-in's own,
 *                                   compute capability 8.0, 4 multiprocessors) or "h100" (an H100
 *                                   SXM5 80GB HBM3's figures: name "NVIDIA H100 80GB HBM3
 *                                   (stand-in)", compute capability 9.0, 132 multiprocessors of
 *                                   2048 threads and 32 blocks, 228 KiB of shared memory per
 *                                   multiprocessor, 48 KiB per block, 227 KiB per block opted in;
 *                                   1024 threads per block and warps of 32 in both); the memory
 *                                   size stays CTORCH_CUDA_STANDIN_MEMORY_MB's
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
    long captures, graph_launches;
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

/* The launch log: every kernel launch cuLaunchKernel accepted (queued), in order, the last
 * CTORCH_STANDIN_LAUNCH_LOG_CAPACITY of them since the log was last cleared (older ones are
 * overwritten). ctorch_standin_launch_log copies the first min(held, capacity) of those it holds
 * into out, oldest first, and returns how many it holds. */
#define CTORCH_STANDIN_LAUNCH_LOG_CAPACITY 4096
typedef struct ctorch_standin_launch {
    const char *kernel;  /* its name in src/kernels ("add_f32"); lives as long as the library */
    int device;          /* of the context it was launched in */
    unsigned grid_x, block_x, shared_bytes;
    unsigned long number; /* among the launches since the last clear, from 0 (a gap: overwritten) */
} ctorch_standin_launch;
size_t ctorch_standin_launch_log(ctorch_standin_launch *out, size_t capacity);
void ctorch_standin_launch_log_clear(void);
typedef size_t (*ctorch_standin_launch_log_fn)(ctorch_standin_launch *out, size_t capacity);
typedef void (*ctorch_standin_launch_log_clear_fn)(void);

/* The stand-in cuBLAS's gemm log (exported by the cuBLAS stand-in, not the driver): every product
 * a cublas*gemm* call queued, in order, the last CTORCH_STANDIN_GEMM_LOG_CAPACITY since the last
 * clear, with the handle's math mode at the call (cublasSetMathMode; CUBLAS_DEFAULT_MATH for a
 * handle never set), so that a test sees whether a float32 product was allowed TF32
 * (CUBLAS_TF32_TENSOR_OP_MATH). ctorch_standin_cublas_gemm_log copies the first min(held,
 * capacity) into out, oldest first, and returns how many it holds. */
#define CTORCH_STANDIN_GEMM_LOG_CAPACITY 1024
typedef struct ctorch_standin_gemm {
    const char *call; /* "cublasSgemm", "cublasGemmStridedBatchedEx"; a static string */
    int device;       /* the handle's */
    int f64;          /* 1 for cublasDgemm*, 0 for the others */
    int math_mode;    /* a cublasMath_t */
    int data_type;    /* a cudaDataType of A, B and C: CUDA_R_32F for cublasSgemm* */
    int compute_type; /* a cublasComputeType_t for cublasGemm*Ex, -1 for the others */
} ctorch_standin_gemm;
size_t ctorch_standin_cublas_gemm_log(ctorch_standin_gemm *out, size_t capacity);
void ctorch_standin_cublas_gemm_log_clear(void);
typedef size_t (*ctorch_standin_cublas_gemm_log_fn)(ctorch_standin_gemm *out, size_t capacity);
typedef void (*ctorch_standin_cublas_gemm_log_clear_fn)(void);

/* The block scheduler, for its tests. Runs body(arg) as every thread of `grid` 1-D blocks of
 * `block` threads, on the calling thread, as the stand-in runs a kernel's C build: block after
 * block, a block's threads as fibers when its thread 0 reaches a barrier. body reads its thread's
 * place with the kernels' CT_GROUP_ID, CT_LOCAL_ID and CT_GROUP_SIZE (the functions below) and
 * waits with CT_BARRIER() (ctorch_standin_barrier); its `static _Thread_local` arrays are shared
 * by the threads of a block, as a kernel's CT_LOCAL arrays are. Returns CUDA_SUCCESS;
 * CUDA_ERROR_INVALID_VALUE for a configuration a GPU refuses; CUDA_ERROR_LAUNCH_FAILED, with a
 * complaint on stderr, when the threads of a block did not all reach the same barriers (the run
 * stops at that block). Needs no context. */
CUresult ctorch_standin_run_blocks_for_testing(void (*body)(void *arg), void *arg, long grid, long block);
typedef CUresult (*ctorch_standin_run_blocks_for_testing_fn)(void (*body)(void *arg), void *arg,
                                                             long grid, long block);
/* The same, queued on `stream` (NULL: the current context's NULL stream) as cuLaunchKernel queues
 * a kernel, in the current context: a block whose threads disagree about barriers fails the
 * context as a kernel's fault does on a GPU (the next synchronisation, and every call in the
 * context after it, returns CUDA_ERROR_LAUNCH_FAILED until the context is destroyed). Not
 * recorded in the launch log. */
CUresult ctorch_standin_launch_blocks_for_testing(CUstream stream, void (*body)(void *arg), void *arg,
                                                  long grid, long block);
typedef CUresult (*ctorch_standin_launch_blocks_for_testing_fn)(CUstream stream, void (*body)(void *arg),
                                                                void *arg, long grid, long block);
/* What the kernels' C build calls for CT_GROUP_ID, CT_LOCAL_ID, CT_GROUP_SIZE and CT_BARRIER()
 * (src/kernels/dialect.h, CT_DIALECT_STANDIN): the running thread's block, its place in the
 * block, the block's size, and a barrier of the block. */
long ctorch_standin_group_id(void);
long ctorch_standin_local_id(void);
long ctorch_standin_group_size(void);
void ctorch_standin_barrier(void);
typedef long (*ctorch_standin_id_fn)(void);
typedef void (*ctorch_standin_barrier_fn)(void);

#endif
