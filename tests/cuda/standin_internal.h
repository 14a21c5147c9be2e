/* The stand-in CUDA driver: the driver calls ctorch makes (CT_CUDA_DRIVER_FUNCTIONS of
 * src/backend/cuda/cuda_libraries.h), under the real library's symbol names, over host memory.
 * Built only for the tests (see standin.h for its environment); never installed. This header is
 * what its files share; none of it is exported.
 *
 * What it simulates:
 * - devices: a count, CUDA_VISIBLE_DEVICES as the driver reads it, a profile (the stand-in's own,
 *   compute capability 8.0 with 4 multiprocessors, or an H100's: name, capability and attributes),
 *   and a memory size that cuMemAlloc enforces (cuMemGetInfo: free and total);
 * - the per-thread current context: primary contexts retained and released, and every call that
 *   works in the current context fails with CUDA_ERROR_INVALID_CONTEXT on a thread without one
 *   (on a GPU each thread must make the context current);
 * - device memory that the host cannot read: a device pointer is its host address with the top
 *   bit set (not a canonical address, so dereferencing one on the host faults), checked against
 *   the live allocations by every copy and launch; fresh memory is filled with 0xff bytes (NaN);
 * - streams run asynchronously: each stream (and each context's NULL stream) has a worker thread
 *   that runs its operations in order, so that a missing synchronize is a wrong value, not a
 *   lucky one. The NULL stream is the legacy default stream: its operations wait for the
 *   blocking streams' earlier work, and blocking streams' operations wait for its earlier work
 *   (streams created CU_STREAM_NON_BLOCKING do not). Copies follow the driver's documented
 *   host synchronisation: synchronous copies wait, except device to device, which only queues;
 *   async copies from pinned memory queue, from pageable memory stage the source (to the device)
 *   or wait (to the host); events are points in a stream, cuStreamWaitEvent works across
 *   devices; host functions run on the stream's worker and must not call the driver
 *   (CUDA_ERROR_NOT_PERMITTED);
 * - modules: cuModuleLoadData takes PTX text (".version", ".target sm_XY" up to the device's
 *   compute capability), its ".entry" names are the functions, each mapped by name to the C build
 *   of the same kernel of src/kernels/; cuLaunchKernel checks the launch configuration as a GPU
 *   does, copies the arguments (4 device pointers and the ct_kparams block), records the launch in
 *   the launch log (standin.h), and runs every thread of the grid: item
 *   blockIdx.x * blockDim.x + threadIdx.x, the kernel checking its own bound, block after block;
 *   the threads of a block that reach barriers run as fibers that wait for each other there and
 *   share the block's local arrays (standin_blocks.c);
 * - a kernel fault (a block whose threads disagree about barriers) fails its context as on a GPU:
 *   every later call in it returns CUDA_ERROR_LAUNCH_FAILED until the context is destroyed;
 * - cuGetErrorName and cuGetErrorString with the driver's names and texts.
 * What it does not: timing, concurrency inside a kernel (its blocks run one after another, and
 * a block's threads one after another between barriers),
 * peer access from kernels (a kernel given another device's memory fails at launch), faults
 * reported later (what a GPU would report as an illegal address at the next synchronisation is
 * an error of the launch here, with a line on stderr), contexts other than primary ones.
 *
 * The files:
 *   standin_state.c       the lock, what each thread has, complaints on stderr
 *   standin_workers.c     operations queued on streams, and the worker threads that run them
 *   standin_devices.c     cuInit, devices, primary contexts
 *   standin_memory.c      device and pinned host allocations
 *   standin_copies.c      copies between host and devices
 *   standin_streams.c     streams, host functions, events
 *   standin_graphs.c      stream capture into graphs, and graph launches
 *   standin_modules.c     PTX modules, kernels by name, launches
 *   standin_blocks.c      a launch's blocks, their threads as fibers, barriers
 *   standin_errors.c      the driver's error names and texts
 *   standin_test_hooks.c  what the tests and the stand-in cuBLAS call (standin.h) */
#ifndef CTORCH_STANDIN_INTERNAL_H
#define CTORCH_STANDIN_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The library is built with hidden visibility: what these two headers declare (the driver's
 * functions and standin.h's) is all it exports. So each file includes this header before cuda.h. */
#pragma GCC visibility push(default)
#include <cuda.h>

#include "standin.h"
#pragma GCC visibility pop

#include "standin_kernels.h"

#define MAX_THREADS_PER_BLOCK 1024

/* ---- state (standin_state.c): one lock for all of it; standin_changed is broadcast whenever
 * work completes or is queued, and every waiter rechecks its own condition ---- */

extern pthread_mutex_t standin_lock;
extern pthread_cond_t standin_changed;
extern ctorch_standin_counts standin_call_counts;
extern CUresult standin_next_mem_alloc_failure; /* CUDA_SUCCESS: none */

CUcontext standin_current_context(void);
void standin_set_current_context(CUcontext ctx);
bool standin_in_host_function(void);
void standin_set_in_host_function(bool yes);

/* A line on stderr that starts "ctorch CUDA stand-in:". */
void standin_complain(const char *format, ...) __attribute__((format(printf, 1, 2)));
/* calloc, aborting when the host is out of memory. */
void *standin_checked_calloc(size_t count, size_t size);
/* Releases the lock taken by ENTER: every call ends `return standin_leave(result);`. */
CUresult standin_leave(CUresult result);

/* Every call takes the lock; the checks most calls share. */
#define ENTER()                                                                                  \
    do {                                                                                         \
        pthread_mutex_lock(&standin_lock);                                                       \
        if (standin_in_host_function()) {                                                        \
            standin_complain("%s called from a host function (cuLaunchHostFunc): not permitted", \
                             __func__);                                                          \
            return standin_leave(CUDA_ERROR_NOT_PERMITTED);                                      \
        }                                                                                        \
        if (!standin_init_done || standin_init_result != CUDA_SUCCESS)                           \
            return standin_leave(CUDA_ERROR_NOT_INITIALIZED);                                    \
    } while (0)

/* Calls that work in the current context. */
#define ENTER_CONTEXT(ctx_var)                                                                   \
    ENTER();                                                                                     \
    CUcontext ctx_var = standin_live_current();                                                  \
    if (!ctx_var) {                                                                              \
        standin_complain("%s without a current context on this thread", __func__);             \
        return standin_leave(CUDA_ERROR_INVALID_CONTEXT);                                        \
    }                                                                                            \
    if (ctx_var->failure != CUDA_SUCCESS) return standin_leave(ctx_var->failure);

/* ---- devices and primary contexts (standin_devices.c) ---- */

struct CUctx_st {
    int device;
    int refs;            /* primary context retains */
    unsigned generation; /* one more at every activation: handles of an older one are dead */
    bool active;
    CUstream null_stream;
    /* CUDA_ERROR_LAUNCH_FAILED once one of its kernels failed: as on a GPU, every later call in
     * the context returns it, until the context is destroyed (CUDA_SUCCESS: none). */
    CUresult failure;
};

typedef struct device {
    int physical;
    size_t total, used;
    struct CUctx_st primary;
} device;

/* What a device presents (CTORCH_CUDA_STANDIN_PROFILE, standin.h): the same for every device. */
typedef struct standin_profile {
    const char *key; /* the variable's value that selects it */
    const char *name;
    int capability_major, capability_minor;
    int multiprocessors, threads_per_multiprocessor, blocks_per_multiprocessor;
    int shared_per_block, shared_per_block_optin, shared_per_multiprocessor, reserved_shared_per_block;
    int registers_per_block, registers_per_multiprocessor;
    int clock_khz, memory_clock_khz, memory_bus_bits, l2_bytes;
} standin_profile;

extern const standin_profile *standin_device_profile;
extern bool standin_init_done;
extern CUresult standin_init_result;
extern int standin_device_count;
extern device standin_devices[];
extern long standin_delay_us;

bool standin_context_live(CUcontext ctx, unsigned generation);
/* The current context when it is live; NULL otherwise. */
CUcontext standin_live_current(void);

/* ---- operations queued on streams, and their workers (standin_workers.c) ---- */

/* A stream's progress: operations queued and completed so far, numbered from 1. Shared by the
 * operations and events that wait on it, so it outlives its stream. */
typedef struct timeline {
    int refs;
    uint64_t queued, completed;
} timeline;

typedef struct wait_on {
    timeline *line;
    uint64_t seq;
} wait_on;

/* A C function run as a kernel: body(arg) as every thread (the tests' hooks, standin.h). */
typedef struct standin_body {
    void (*body)(void *arg);
    void *arg;
} standin_body;

typedef enum { OP_MARKER, OP_COPY, OP_KERNEL, OP_HOST_FUNCTION, OP_CALL } op_kind;

struct captured_ops;

typedef struct op {
    struct op *next;
    /* A graph's operations, while this copy of one of them runs (a graph launch): what it points
     * into (a copy's staging, a call's argument) lives as long as they do. */
    struct captured_ops *owner;
    uint64_t seq;
    op_kind kind;
    int wait_count, wait_capacity;
    wait_on *waits;
    union {
        struct {
            void *dst;
            const void *src;
            size_t bytes;
            void *staging; /* freed after the copy */
        } copy;
        struct {
            const char *name;
            ctorch_standin_runner run; /* NULL: body is the kernel (the tests' hook) */
            standin_body body;
            /* A multi-tensor kernel's (ct_kernel_buffer_count) are in wide, and buffers[0] is
             * then wide's address: the C build of such a kernel reads its table there. */
            void *buffers[CT_KERNEL_MAX_BUFFERS];
            void *wide[CT_KERNEL_WIDE_BUFFERS];
            ct_kparams params;
            long blocks, block_size, repeats;
        } kernel;
        struct {
            CUhostFn fn;
            void *data;
        } host;
        struct {
            void (*run)(void *);
            void (*finish)(void *);
            void *arg;
        } call;
    } u;
} op;

struct CUstream_st {
    CUcontext ctx;
    unsigned generation;
    bool is_null, blocking, destroyed;
    timeline *line;
    op *head, *tail;
    struct CUstream_st *next; /* every stream still running, destroyed ones until drained */
    /* Stream capture (standin_graphs.c): the operations queued while capturing join this graph
     * instead of running; invalidated by what a capture cannot hold (a synchronisation). */
    struct CUgraph_st *capture;
    CUstreamCaptureMode capture_mode;
    pthread_t capture_thread;
    bool capture_invalidated;
    struct CUstream_st *next_unserved;
};

extern CUstream standin_streams;

timeline *standin_timeline_ref(timeline *t);
void standin_timeline_unref(timeline *t);
op *standin_op_new(op_kind kind);
/* o runs once line has completed operation seq. */
void standin_op_wait(op *o, timeline *line, uint64_t seq);
void standin_op_free(op *o);
/* A stream of ctx with its worker; NULL when no thread can be started. */
CUstream standin_stream_new(CUcontext ctx, bool is_null, bool blocking);
/* Queues o on s after the legacy default stream's implicit order: an operation of the NULL stream
 * waits for the earlier work of the context's blocking streams, and one of a blocking stream for
 * the NULL stream's earlier work. Returns o's number in s. */
uint64_t standin_enqueue(CUstream s, op *o);
void standin_wait_for(timeline *line, uint64_t seq);
/* Stream capture (standin_graphs.c). Appends o to the graph s captures into (called by
 * standin_enqueue for a capturing stream). */
void standin_capture_append(CUstream s, op *o);
/* A capture cannot hold a synchronisation: invalidates the captures of s (or, s NULL, of every
 * stream of ctx) and returns CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, or CUDA_SUCCESS when none
 * captures. */
CUresult standin_capture_refuse_sync(CUcontext ctx, CUstream s, const char *call);
/* Drops a reference to a graph's operations (op->owner). */
void standin_captured_unref(struct captured_ops *ops);
/* Waits until every stream of ctx has finished what was queued so far. */
void standin_drain_context(CUcontext ctx);
void standin_drain_all(void);

/* ---- allocations (standin_memory.c) ---- */

typedef struct allocation {
    uintptr_t base; /* the pointer the caller sees: host address | DEVICE_BIT for device memory */
    size_t bytes;
    void *host;
    int device; /* -1: pinned host memory */
} allocation;

/* The allocation holding [address, address + bytes), or NULL. */
allocation *standin_find_allocation(uintptr_t address, size_t bytes);
void *standin_host_of(const allocation *a, uintptr_t address);
/* Device memory (or pinned host memory) holding [pointer, pointer + bytes) as a host address;
 * NULL with a complaint naming `what` otherwise. */
void *standin_device_range(CUdeviceptr pointer, size_t bytes, const char *what, int *device_out);
/* A host pointer that is not one of the stand-in's device pointers (the host cannot read those). */
bool standin_host_pointer(const void *p, const char *what);
bool standin_pinned_range(const void *host, size_t bytes);
/* Frees all of device dev's memory (its primary context is destroyed). */
void standin_free_device_memory(int dev);

/* ---- streams (standin_streams.c) and kernels (standin_modules.c) ---- */

/* The stream a handle names in ctx (NULL and the legacy handle: ctx's NULL stream). */
CUresult standin_resolve_stream(CUstream handle, CUcontext ctx, CUstream *out);

/* Fills the table of kernels by name (from cuInit). */
void standin_register_kernels(void);

/* Records a launch in the launch log (standin_test_hooks.c). Called with the lock held. */
void standin_log_launch(const char *kernel, int device, unsigned grid_x, unsigned block_x,
                        unsigned shared_bytes);

/* ---- blocks (standin_blocks.c) ---- */

/* A launch to run: `blocks` blocks of `block_size` threads, all of it `repeats` times (the y and
 * z dimensions of the grid and the block; ctorch's launches are 1-D). */
typedef struct standin_grid {
    const char *name; /* the kernel's, for complaints */
    /* Runs items [first, end) one by one as a kernel's runner does (standin_kernels.h): setting
     * each one's ids, and returning after an item whose block turned cooperative. */
    void (*run)(const struct standin_grid *grid, long first, long end);
    const void *job; /* what run runs */
    long blocks, block_size, repeats;
} standin_grid;

/* A grid's run for a standin_body job. */
void standin_run_body_items(const standin_grid *grid, long first, long end);

/* Runs every block of the grid on the calling thread, one after another; false, with a complaint
 * that names the kernel, when the threads of a block did not all reach the same barriers (the
 * launch stops there). */
bool standin_run_grid(const standin_grid *grid);

#endif
