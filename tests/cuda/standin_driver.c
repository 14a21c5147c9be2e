/* The stand-in CUDA driver: the driver calls ctorch makes (CT_CUDA_DRIVER_FUNCTIONS of
 * src/backend/cuda/cuda_libraries.h), under the real library's symbol names, over host memory.
 * Built only for the tests (see standin.h for its environment); never installed.
 *
 * What it simulates:
 * - devices: a count, CUDA_VISIBLE_DEVICES as the driver reads it, names, compute capability 8.0,
 *   attributes, and a memory size that cuMemAlloc enforces (cuMemGetInfo: free and total);
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
 *   8.0), its ".entry" names are the functions, each mapped by name to the C build of the same
 *   kernel of src/kernels/; cuLaunchKernel checks the launch configuration as a GPU does, copies
 *   the arguments (4 device pointers and the ct_kparams block) and runs every thread of the grid:
 *   item blockIdx.x * blockDim.x + threadIdx.x, the kernel checking its own bound;
 * - cuGetErrorName and cuGetErrorString with the driver's names and texts.
 * What it does not: timing, concurrency inside a kernel (its items run one after another),
 * peer access from kernels (a kernel given another device's memory fails at launch), faults
 * reported later (what a GPU would report as an illegal address at the next synchronisation is
 * an error of the launch here, with a line on stderr), contexts other than primary ones. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "standin.h"
#include "standin_kernels.h"

#define MAX_DEVICES 16
#define DEVICE_NAME "ctorch stand-in GPU"
#define DEVICE_BIT ((uintptr_t)1 << 63)
#define MAX_THREADS_PER_BLOCK 1024
#define MAX_SHARED_PER_BLOCK 49152

static void complain(const char *format, ...) __attribute__((format(printf, 1, 2)));
static void complain(const char *format, ...)
{
    va_list args;
    va_start(args, format);
    fprintf(stderr, "ctorch CUDA stand-in: ");
    vfprintf(stderr, format, args);
    fprintf(stderr, "\n");
    va_end(args);
}

/* ---- state: one lock for all of it; `changed` is broadcast whenever work completes or is
 * queued, and every waiter rechecks its own condition ---- */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static ctorch_standin_counts counts;

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

typedef enum { OP_MARKER, OP_COPY, OP_KERNEL, OP_HOST_FUNCTION, OP_CALL } op_kind;

typedef struct op {
    struct op *next;
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
            ctorch_standin_runner run;
            void *buffers[CT_KERNEL_MAX_BUFFERS];
            ct_kparams params;
            long items, repeats;
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

struct CUctx_st {
    int device;
    int refs;            /* primary context retains */
    unsigned generation; /* one more at every activation: handles of an older one are dead */
    bool active;
    CUstream null_stream;
};

struct CUstream_st {
    CUcontext ctx;
    unsigned generation;
    bool is_null, blocking, destroyed;
    timeline *line;
    op *head, *tail;
    struct CUstream_st *next; /* every stream still running, destroyed ones until drained */
    struct CUstream_st *next_unserved;
};

struct CUevent_st {
    CUcontext ctx;
    unsigned generation;
    timeline *line; /* NULL until recorded */
    uint64_t seq;
    struct CUevent_st *next;
};

struct CUfunc_st {
    CUmodule module;
    int kernel;
    char name[128];
};

struct CUmod_st {
    CUcontext ctx;
    unsigned generation;
    int entry_count;
    char (*entries)[128];
    CUfunction *functions; /* per entry, made on first lookup */
    struct CUmod_st *next;
};

typedef struct allocation {
    uintptr_t base; /* the pointer the caller sees: host address | DEVICE_BIT for device memory */
    size_t bytes;
    void *host;
    int device; /* -1: pinned host memory */
} allocation;

typedef struct device {
    int physical;
    size_t total, used;
    struct CUctx_st primary;
} device;

static bool init_done;
static CUresult init_result = CUDA_ERROR_NOT_INITIALIZED;
static int device_count;
static device devices[MAX_DEVICES];
static long delay_us;
static bool peer_access = true;

static CUstream streams;
static CUevent events;
static CUmodule modules;
static allocation *allocations; /* sorted by base */
static size_t allocation_count, allocation_capacity;

static ctorch_standin_kernel kernels[CT_KERNEL_COUNT];

/* Per thread: the current context, and whether a host function is running. In pthread keys, not
 * _Thread_local: a dlopen'ed library's _Thread_local is dynamic TLS, which LeakSanitizer's check
 * at exit misreads in threads that never touched it (and crashes). */
static pthread_key_t current_key, host_function_key;
static pthread_once_t keys_once = PTHREAD_ONCE_INIT;
static void make_keys(void)
{
    pthread_key_create(&current_key, NULL);
    pthread_key_create(&host_function_key, NULL);
}
static CUcontext current_context(void)
{
    pthread_once(&keys_once, make_keys);
    return pthread_getspecific(current_key);
}
static void set_current_context(CUcontext ctx)
{
    pthread_once(&keys_once, make_keys);
    pthread_setspecific(current_key, ctx);
}
static bool in_host_function(void)
{
    pthread_once(&keys_once, make_keys);
    return pthread_getspecific(host_function_key) != NULL;
}
static void set_in_host_function(bool yes)
{
    pthread_once(&keys_once, make_keys);
    pthread_setspecific(host_function_key, yes ? (void *)1 : NULL);
}

/* ---- small helpers ---- */

static void *checked_calloc(size_t count, size_t size)
{
    void *p = calloc(count, size);
    if (!p) {
        complain("host out of memory");
        abort();
    }
    return p;
}

static timeline *timeline_new(void)
{
    timeline *t = checked_calloc(1, sizeof *t);
    t->refs = 1;
    return t;
}
static timeline *timeline_ref(timeline *t)
{
    t->refs++;
    return t;
}
static void timeline_unref(timeline *t)
{
    if (t && --t->refs == 0) free(t);
}

static bool context_live(CUcontext ctx, unsigned generation)
{
    return ctx && ctx->active && ctx->generation == generation;
}

/* The current context when it is live; NULL otherwise. */
static CUcontext live_current(void)
{
    CUcontext current = current_context();
    return current && current->active ? current : NULL;
}

static bool stream_live(CUstream s)
{
    for (CUstream t = streams; t; t = t->next)
        if (t == s) return !s->destroyed && context_live(s->ctx, s->generation);
    return false;
}

/* The stream a handle names in ctx (NULL and the legacy handle: ctx's NULL stream). */
static CUresult resolve_stream(CUstream handle, CUcontext ctx, CUstream *out)
{
    if (handle == NULL || handle == CU_STREAM_LEGACY || handle == CU_STREAM_PER_THREAD) {
        if (!ctx) return CUDA_ERROR_INVALID_CONTEXT;
        *out = ctx->null_stream;
        return CUDA_SUCCESS;
    }
    if (!stream_live(handle)) return CUDA_ERROR_INVALID_HANDLE;
    *out = handle;
    return CUDA_SUCCESS;
}

/* Index of the first allocation whose base is above address. */
static size_t allocation_upper(uintptr_t address)
{
    size_t lo = 0, hi = allocation_count;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (allocations[mid].base <= address)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The allocation holding [address, address + bytes), or NULL. */
static allocation *find_allocation(uintptr_t address, size_t bytes)
{
    size_t i = allocation_upper(address);
    if (i == 0) return NULL;
    allocation *a = &allocations[i - 1];
    if (address - a->base > a->bytes || bytes > a->bytes - (address - a->base)) return NULL;
    if (bytes == 0 && address - a->base == a->bytes && a->bytes > 0) return NULL;
    return a;
}

static void add_allocation(allocation a)
{
    if (allocation_count == allocation_capacity) {
        allocation_capacity = allocation_capacity ? 2 * allocation_capacity : 64;
        allocation *grown = realloc(allocations, allocation_capacity * sizeof *allocations);
        if (!grown) {
            complain("host out of memory");
            abort();
        }
        allocations = grown;
    }
    size_t i = allocation_upper(a.base);
    memmove(&allocations[i + 1], &allocations[i], (allocation_count - i) * sizeof *allocations);
    allocations[i] = a;
    allocation_count++;
}

static void remove_allocation(allocation *a)
{
    size_t i = (size_t)(a - allocations);
    memmove(&allocations[i], &allocations[i + 1], (allocation_count - i - 1) * sizeof *allocations);
    allocation_count--;
}

static void *host_of(const allocation *a, uintptr_t address)
{
    return (char *)a->host + (address - a->base);
}

/* Device memory (or pinned host memory) holding [pointer, pointer + bytes) as a host address;
 * NULL with a complaint naming `what` otherwise. */
static void *device_range(CUdeviceptr pointer, size_t bytes, const char *what, int *device_out)
{
    allocation *a = find_allocation((uintptr_t)pointer, bytes);
    if (!a) {
        complain("%s: [0x%llx, +%zu bytes) is not in any live device allocation", what,
                 (unsigned long long)pointer, bytes);
        return NULL;
    }
    if (device_out) *device_out = a->device;
    return host_of(a, (uintptr_t)pointer);
}

/* A host pointer that is not one of the stand-in's device pointers (the host cannot read those). */
static bool host_pointer(const void *p, const char *what)
{
    if (!p) return false;
    if ((uintptr_t)p & DEVICE_BIT) {
        complain("%s: %p is a device pointer, given where the host's memory belongs", what, p);
        return false;
    }
    return true;
}

static bool pinned_range(const void *host, size_t bytes)
{
    allocation *a = find_allocation((uintptr_t)host, bytes);
    return a && a->device < 0;
}

/* ---- operations and the workers that run them ---- */

static op *op_new(op_kind kind)
{
    op *o = checked_calloc(1, sizeof *o);
    o->kind = kind;
    return o;
}

static void op_wait(op *o, timeline *line, uint64_t seq)
{
    if (line->completed >= seq) return;
    if (o->wait_count == o->wait_capacity) {
        o->wait_capacity = o->wait_capacity ? 2 * o->wait_capacity : 4;
        wait_on *grown = realloc(o->waits, (size_t)o->wait_capacity * sizeof *o->waits);
        if (!grown) {
            complain("host out of memory");
            abort();
        }
        o->waits = grown;
    }
    o->waits[o->wait_count++] = (wait_on){timeline_ref(line), seq};
}

static void op_free(op *o)
{
    for (int i = 0; i < o->wait_count; i++) timeline_unref(o->waits[i].line);
    free(o->waits);
    if (o->kind == OP_COPY) free(o->u.copy.staging);
    free(o);
}

static void op_execute(op *o)
{
    switch (o->kind) {
    case OP_MARKER: break;
    case OP_COPY:
        if (o->u.copy.bytes) memmove(o->u.copy.dst, o->u.copy.src, o->u.copy.bytes);
        break;
    case OP_KERNEL:
        for (long r = 0; r < o->u.kernel.repeats; r++)
            o->u.kernel.run(0, o->u.kernel.items, o->u.kernel.buffers, &o->u.kernel.params);
        break;
    case OP_HOST_FUNCTION:
        set_in_host_function(true);
        o->u.host.fn(o->u.host.data);
        set_in_host_function(false);
        break;
    case OP_CALL:
        o->u.call.run(o->u.call.arg);
        if (o->u.call.finish) o->u.call.finish(o->u.call.arg);
        break;
    }
}

static bool op_ready(const op *o)
{
    for (int i = 0; i < o->wait_count; i++)
        if (o->waits[i].line->completed < o->waits[i].seq) return false;
    return true;
}

/* Runs s's operations in order, each once what it waits for has completed, until s is destroyed
 * and drained; then frees s. Called with the lock held. */
static void serve(CUstream s)
{
    for (;;) {
        while (!s->head && !s->destroyed) pthread_cond_wait(&changed, &lock);
        if (!s->head) break;
        op *o = s->head;
        while (!op_ready(o)) pthread_cond_wait(&changed, &lock);
        long delay = delay_us;
        pthread_mutex_unlock(&lock);
        if (delay > 0) {
            struct timespec pause = {delay / 1000000, (delay % 1000000) * 1000};
            nanosleep(&pause, NULL);
        }
        op_execute(o);
        pthread_mutex_lock(&lock);
        s->head = o->next;
        if (!s->head) s->tail = NULL;
        s->line->completed = o->seq;
        op_free(o);
        pthread_cond_broadcast(&changed);
    }
    for (CUstream *link = &streams; *link; link = &(*link)->next)
        if (*link == s) {
            *link = s->next;
            break;
        }
    timeline_unref(s->line);
    free(s);
    pthread_cond_broadcast(&changed);
}

/* Worker threads: one per live stream, kept (idle) once their stream is gone and given the next
 * new stream, so that no thread ends while the process runs (LeakSanitizer's check at exit
 * fails when a thread ends under it). Detached. */
static CUstream unserved;     /* new streams waiting for a worker (linked by next_unserved) */
static int idle_workers;      /* workers waiting for a stream, not yet promised to one */

static void *stream_worker(void *unused)
{
    (void)unused;
    pthread_mutex_lock(&lock);
    for (;;) {
        while (!unserved) pthread_cond_wait(&changed, &lock);
        CUstream s = unserved;
        unserved = s->next_unserved;
        serve(s);
        idle_workers++;
    }
    return NULL;
}

static CUstream stream_new(CUcontext ctx, bool is_null, bool blocking)
{
    if (idle_workers > 0) {
        idle_workers--; /* promised to this stream */
    } else {
        pthread_t thread;
        pthread_attr_t attributes;
        pthread_attr_init(&attributes);
        pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
        int failed = pthread_create(&thread, &attributes, stream_worker, NULL);
        pthread_attr_destroy(&attributes);
        if (failed) return NULL;
    }
    CUstream s = checked_calloc(1, sizeof *s);
    s->ctx = ctx;
    s->generation = ctx->generation;
    s->is_null = is_null;
    s->blocking = blocking;
    s->line = timeline_new();
    s->next = streams;
    streams = s;
    s->next_unserved = unserved;
    unserved = s;
    pthread_cond_broadcast(&changed);
    return s;
}

/* Queues o on s after the legacy default stream's implicit order: an operation of the NULL stream
 * waits for the earlier work of the context's blocking streams, and one of a blocking stream for
 * the NULL stream's earlier work. Returns o's number in s. */
static uint64_t enqueue(CUstream s, op *o)
{
    CUcontext ctx = s->ctx;
    if (s->is_null) {
        for (CUstream t = streams; t; t = t->next)
            if (t != s && t->ctx == ctx && t->blocking) op_wait(o, t->line, t->line->queued);
    } else if (s->blocking && ctx->null_stream) {
        op_wait(o, ctx->null_stream->line, ctx->null_stream->line->queued);
    }
    o->seq = ++s->line->queued;
    if (s->tail)
        s->tail->next = o;
    else
        s->head = o;
    s->tail = o;
    pthread_cond_broadcast(&changed);
    return o->seq;
}

static void wait_for(timeline *line, uint64_t seq)
{
    while (line->completed < seq) pthread_cond_wait(&changed, &lock);
}

/* Waits until every stream of ctx has finished what was queued so far. */
static void drain_context(CUcontext ctx)
{
    for (;;) {
        bool busy = false;
        for (CUstream t = streams; t && !busy; t = t->next)
            if (t->ctx == ctx && t->line->completed < t->line->queued) busy = true;
        if (!busy) return;
        pthread_cond_wait(&changed, &lock);
    }
}

static void drain_all(void)
{
    for (int d = 0; d < device_count; d++) drain_context(&devices[d].primary);
}

/* ---- entry: every call takes the lock; the checks most calls share ---- */

#define ENTER()                                                                                  \
    do {                                                                                         \
        pthread_mutex_lock(&lock);                                                               \
        if (in_host_function()) {                                                                \
            complain("%s called from a host function (cuLaunchHostFunc): not permitted",        \
                     __func__);                                                                  \
            return leave(CUDA_ERROR_NOT_PERMITTED);                                              \
        }                                                                                        \
        if (!init_done || init_result != CUDA_SUCCESS) return leave(CUDA_ERROR_NOT_INITIALIZED);  \
    } while (0)

/* Calls that work in the current context. */
#define ENTER_CONTEXT(ctx_var)                                                                   \
    ENTER();                                                                                     \
    CUcontext ctx_var = live_current();                                                          \
    if (!ctx_var) {                                                                              \
        complain("%s without a current context on this thread", __func__);                     \
        return leave(CUDA_ERROR_INVALID_CONTEXT);                                                \
    }

static CUresult leave(CUresult result)
{
    pthread_mutex_unlock(&lock);
    return result;
}

/* ---- initialisation and devices ---- */

/* CUDA_VISIBLE_DEVICES: indices in order; an entry that is not an index of a device (or repeats
 * one) ends the list. */
static int parse_visible(const char *text, int physical_count, int *order)
{
    int count = 0;
    const char *entry = text;
    while (*entry && count < MAX_DEVICES) {
        const char *comma = strchr(entry, ',');
        const char *end = comma ? comma : entry + strlen(entry);
        const char *begin = entry;
        while (begin < end && *begin == ' ') begin++;
        while (end > begin && end[-1] == ' ') end--;
        long index = -1;
        if (begin < end && end - begin < 9) {
            index = 0;
            for (const char *c = begin; c < end; c++) {
                if (*c < '0' || *c > '9') {
                    index = -1;
                    break;
                }
                index = index * 10 + (*c - '0');
            }
        }
        if (index < 0 || index >= physical_count) break;
        for (int i = 0; i < count; i++)
            if (order[i] == index) return count;
        order[count++] = (int)index;
        if (!comma) break;
        entry = comma + 1;
    }
    return count;
}

static long env_long(const char *name, long fallback)
{
    const char *text = getenv(name);
    if (!text || !*text) return fallback;
    char *end;
    errno = 0;
    long value = strtol(text, &end, 10);
    if (errno || *end || value < 0) {
        complain("%s=%s is not a count; using %ld", name, text, fallback);
        return fallback;
    }
    return value;
}

/* Memory of physical device i in MiB: CTORCH_CUDA_STANDIN_MEMORY_MB, one value or a list. */
static size_t physical_memory(int i)
{
    const char *text = getenv("CTORCH_CUDA_STANDIN_MEMORY_MB");
    long mb = 512;
    if (text && *text) {
        const char *at = text;
        for (int k = 0; k < i && strchr(at, ','); k++) at = strchr(at, ',') + 1;
        char *end;
        long value = strtol(at, &end, 10);
        if (value > 0) mb = value;
    }
    return (size_t)mb << 20;
}

static void register_kernels(void)
{
#define CTORCH_STANDIN_CALL_REGISTER(family) ctorch_standin_register_##family(kernels);
    CT_KERNEL_SOURCES(CTORCH_STANDIN_CALL_REGISTER)
#undef CTORCH_STANDIN_CALL_REGISTER
}

CUresult cuInit(unsigned int flags)
{
    pthread_mutex_lock(&lock);
    if (flags != 0) return leave(CUDA_ERROR_INVALID_VALUE);
    if (init_done) return leave(init_result);
    init_done = true;
    register_kernels();
    long physical = env_long("CTORCH_CUDA_STANDIN_DEVICES", 1);
    if (physical > MAX_DEVICES) physical = MAX_DEVICES;
    delay_us = env_long("CTORCH_CUDA_STANDIN_DELAY_US", 0);
    peer_access = env_long("CTORCH_CUDA_STANDIN_PEER", 1) != 0;
    int order[MAX_DEVICES];
    const char *visible = getenv("CUDA_VISIBLE_DEVICES");
    if (visible) {
        device_count = parse_visible(visible, (int)physical, order);
    } else {
        device_count = (int)physical;
        for (int i = 0; i < device_count; i++) order[i] = i;
    }
    for (int i = 0; i < device_count; i++) {
        devices[i].physical = order[i];
        devices[i].total = physical_memory(order[i]);
        devices[i].primary.device = i;
    }
    init_result = device_count > 0 ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE;
    return leave(init_result);
}

CUresult cuDriverGetVersion(int *version)
{
    if (!version) return CUDA_ERROR_INVALID_VALUE;
    *version = CUDA_VERSION;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count)
{
    ENTER();
    if (!count) return leave(CUDA_ERROR_INVALID_VALUE);
    *count = device_count;
    return leave(CUDA_SUCCESS);
}

CUresult cuDeviceGet(CUdevice *dev, int ordinal)
{
    ENTER();
    if (!dev) return leave(CUDA_ERROR_INVALID_VALUE);
    if (ordinal < 0 || ordinal >= device_count) return leave(CUDA_ERROR_INVALID_DEVICE);
    *dev = ordinal;
    return leave(CUDA_SUCCESS);
}

static bool valid_device(CUdevice dev)
{
    return dev >= 0 && dev < device_count;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    ENTER();
    if (!name || len <= 0) return leave(CUDA_ERROR_INVALID_VALUE);
    if (!valid_device(dev)) return leave(CUDA_ERROR_INVALID_DEVICE);
    snprintf(name, (size_t)len, "%s", DEVICE_NAME);
    return leave(CUDA_SUCCESS);
}

CUresult cuDeviceTotalMem(size_t *bytes, CUdevice dev)
{
    ENTER();
    if (!bytes) return leave(CUDA_ERROR_INVALID_VALUE);
    if (!valid_device(dev)) return leave(CUDA_ERROR_INVALID_DEVICE);
    *bytes = devices[dev].total;
    return leave(CUDA_SUCCESS);
}

CUresult cuDeviceGetAttribute(int *value, CUdevice_attribute attribute, CUdevice dev)
{
    ENTER();
    if (!value) return leave(CUDA_ERROR_INVALID_VALUE);
    if (!valid_device(dev)) return leave(CUDA_ERROR_INVALID_DEVICE);
    int v;
    switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: v = 8; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: v = 0; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: v = 4; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: v = MAX_THREADS_PER_BLOCK; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: v = 64; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: v = 2147483647; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: v = 65535; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: v = 65535; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: v = MAX_SHARED_PER_BLOCK; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: v = 166912; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: v = 167936; break;
    case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: v = 65536; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: v = 32; break;
    case CU_DEVICE_ATTRIBUTE_MAX_PITCH: v = 2147483647; break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: v = 65536; break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: v = 65536; break;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: v = 1410000; break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: v = 1215000; break;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: v = 5120; break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: v = 41943040; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: v = 2048; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: v = 32; break;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT: v = 512; break;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: v = 2; break;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: v = 0; break;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: v = 0; break;
    case CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT: v = 0; break;
    case CU_DEVICE_ATTRIBUTE_INTEGRATED: v = 0; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE: v = CU_COMPUTEMODE_DEFAULT; break;
    case CU_DEVICE_ATTRIBUTE_ECC_ENABLED: v = 0; break;
    case CU_DEVICE_ATTRIBUTE_TCC_DRIVER: v = 0; break;
    case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD: v = 0; break;
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: v = 0; break;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: v = 0x10 + devices[dev].physical; break;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: v = 0; break;
    default:
        complain("cuDeviceGetAttribute: attribute %d is not modelled", (int)attribute);
        return leave(CUDA_ERROR_INVALID_VALUE);
    }
    *value = v;
    return leave(CUDA_SUCCESS);
}

/* ---- contexts ---- */

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    ENTER();
    if (!pctx) return leave(CUDA_ERROR_INVALID_VALUE);
    if (!valid_device(dev)) return leave(CUDA_ERROR_INVALID_DEVICE);
    CUcontext ctx = &devices[dev].primary;
    if (ctx->refs == 0) {
        ctx->generation++;
        ctx->active = true;
        ctx->null_stream = stream_new(ctx, true, true);
        if (!ctx->null_stream) {
            ctx->active = false;
            return leave(CUDA_ERROR_OUT_OF_MEMORY);
        }
    }
    ctx->refs++;
    *pctx = ctx;
    return leave(CUDA_SUCCESS);
}

CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
    ENTER();
    if (!valid_device(dev)) return leave(CUDA_ERROR_INVALID_DEVICE);
    CUcontext ctx = &devices[dev].primary;
    if (ctx->refs == 0) return leave(CUDA_ERROR_INVALID_CONTEXT);
    if (--ctx->refs > 0) return leave(CUDA_SUCCESS);
    /* The last release destroys the context: its work finishes, its memory is freed, and every
     * handle made in it is dead. */
    drain_context(ctx);
    for (size_t i = allocation_count; i-- > 0;)
        if (allocations[i].device == dev) {
            devices[dev].used = 0;
            free(allocations[i].host);
            remove_allocation(&allocations[i]);
        }
    ctx->active = false;
    for (CUstream s = streams; s; s = s->next)
        if (s->ctx == ctx) s->destroyed = true;
    ctx->null_stream = NULL;
    pthread_cond_broadcast(&changed);
    return leave(CUDA_SUCCESS);
}

CUresult cuCtxSetCurrent(CUcontext ctx)
{
    ENTER();
    if (ctx && !ctx->active) return leave(CUDA_ERROR_INVALID_CONTEXT);
    set_current_context(ctx);
    return leave(CUDA_SUCCESS);
}

CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    ENTER();
    if (!pctx) return leave(CUDA_ERROR_INVALID_VALUE);
    *pctx = live_current();
    return leave(CUDA_SUCCESS);
}

CUresult cuCtxSynchronize(void)
{
    ENTER_CONTEXT(ctx);
    counts.synchronizes++;
    drain_context(ctx);
    return leave(CUDA_SUCCESS);
}

/* ---- memory ---- */

CUresult cuMemGetInfo(size_t *free_bytes, size_t *total_bytes)
{
    ENTER_CONTEXT(ctx);
    if (!free_bytes || !total_bytes) return leave(CUDA_ERROR_INVALID_VALUE);
    device *d = &devices[ctx->device];
    *free_bytes = d->total - d->used;
    *total_bytes = d->total;
    return leave(CUDA_SUCCESS);
}

/* What an allocation takes from the device: rounded up as the driver's pages are. */
static size_t charged(size_t bytes)
{
    return (bytes + 511) & ~(size_t)511;
}

CUresult cuMemAlloc(CUdeviceptr *dptr, size_t bytes)
{
    ENTER_CONTEXT(ctx);
    counts.mem_alloc++;
    if (!dptr || bytes == 0) return leave(CUDA_ERROR_INVALID_VALUE);
    device *d = &devices[ctx->device];
    if (bytes > d->total - d->used || charged(bytes) > d->total - d->used)
        return leave(CUDA_ERROR_OUT_OF_MEMORY);
    void *host = NULL;
    if (posix_memalign(&host, 256, bytes) != 0) return leave(CUDA_ERROR_OUT_OF_MEMORY);
    memset(host, 0xff, bytes);
    d->used += charged(bytes);
    allocation a = {(uintptr_t)host | DEVICE_BIT, bytes, host, ctx->device};
    add_allocation(a);
    *dptr = (CUdeviceptr)a.base;
    return leave(CUDA_SUCCESS);
}

CUresult cuMemFree(CUdeviceptr dptr)
{
    ENTER_CONTEXT(ctx);
    (void)ctx;
    counts.mem_free++;
    if (dptr == 0) return leave(CUDA_SUCCESS);
    allocation *a = find_allocation((uintptr_t)dptr, 0);
    if (!a || a->base != (uintptr_t)dptr || a->device < 0) {
        complain("cuMemFree(0x%llx): not the start of a live device allocation",
                 (unsigned long long)dptr);
        return leave(CUDA_ERROR_INVALID_VALUE);
    }
    /* cuMemFree waits for the device's work, which may still use the memory. */
    int dev = a->device;
    uintptr_t base = a->base;
    drain_context(&devices[dev].primary);
    a = find_allocation(base, 0);
    if (!a || a->base != base) return leave(CUDA_ERROR_INVALID_VALUE); /* freed meanwhile */
    devices[dev].used -= charged(a->bytes);
    free(a->host);
    remove_allocation(a);
    return leave(CUDA_SUCCESS);
}

CUresult cuMemHostAlloc(void **pp, size_t bytes, unsigned int flags)
{
    ENTER_CONTEXT(ctx);
    (void)ctx;
    counts.mem_host_alloc++;
    const unsigned known = CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED;
    if (!pp || bytes == 0 || (flags & ~known)) return leave(CUDA_ERROR_INVALID_VALUE);
    void *host = NULL;
    if (posix_memalign(&host, 4096, bytes) != 0) return leave(CUDA_ERROR_OUT_OF_MEMORY);
    add_allocation((allocation){(uintptr_t)host, bytes, host, -1});
    *pp = host;
    return leave(CUDA_SUCCESS);
}

CUresult cuMemFreeHost(void *p)
{
    ENTER_CONTEXT(ctx);
    (void)ctx;
    counts.mem_free_host++;
    allocation *a = find_allocation((uintptr_t)p, 0);
    if (!p || !a || a->base != (uintptr_t)p || a->device >= 0) {
        complain("cuMemFreeHost(%p): not the start of a live cuMemHostAlloc allocation", p);
        return leave(CUDA_ERROR_INVALID_VALUE);
    }
    /* Waits for the work that may still copy from or to it. */
    drain_all();
    a = find_allocation((uintptr_t)p, 0);
    if (!a || a->base != (uintptr_t)p) return leave(CUDA_ERROR_INVALID_VALUE);
    free(a->host);
    remove_allocation(a);
    return leave(CUDA_SUCCESS);
}

/* ---- copies ---- */

/* Queues a copy on s; with `wait`, returns once it has run. */
static void queue_copy(CUstream s, void *dst, const void *src, size_t bytes, void *staging, bool wait)
{
    op *o = op_new(OP_COPY);
    o->u.copy.dst = dst;
    o->u.copy.src = src;
    o->u.copy.bytes = bytes;
    o->u.copy.staging = staging;
    timeline *line = timeline_ref(s->line);
    uint64_t seq = enqueue(s, o);
    if (wait) wait_for(line, seq);
    timeline_unref(line);
}

/* A copy of [src, src + bytes) made now: the staging buffer of a copy from pageable memory. */
static void *stage(const void *src, size_t bytes)
{
    void *staging = malloc(bytes ? bytes : 1);
    if (!staging) {
        complain("host out of memory");
        abort();
    }
    if (bytes) memcpy(staging, src, bytes);
    return staging;
}

CUresult cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t bytes)
{
    ENTER_CONTEXT(ctx);
    counts.memcpy_sync++;
    if (bytes == 0) return leave(CUDA_SUCCESS);
    void *to = device_range(dst, bytes, "cuMemcpyHtoD destination", NULL);
    if (!to || !host_pointer(src, "cuMemcpyHtoD source")) return leave(CUDA_ERROR_INVALID_VALUE);
    queue_copy(ctx->null_stream, to, src, bytes, NULL, true);
    return leave(CUDA_SUCCESS);
}

CUresult cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t bytes)
{
    ENTER_CONTEXT(ctx);
    counts.memcpy_sync++;
    if (bytes == 0) return leave(CUDA_SUCCESS);
    void *from = device_range(src, bytes, "cuMemcpyDtoH source", NULL);
    if (!from || !host_pointer(dst, "cuMemcpyDtoH destination")) return leave(CUDA_ERROR_INVALID_VALUE);
    queue_copy(ctx->null_stream, dst, from, bytes, NULL, true);
    return leave(CUDA_SUCCESS);
}

/* Device to device: no host synchronisation (the copy is queued on the NULL stream). */
CUresult cuMemcpyDtoD(CUdeviceptr dst, CUdeviceptr src, size_t bytes)
{
    ENTER_CONTEXT(ctx);
    counts.memcpy_sync++;
    if (bytes == 0) return leave(CUDA_SUCCESS);
    void *to = device_range(dst, bytes, "cuMemcpyDtoD destination", NULL);
    void *from = device_range(src, bytes, "cuMemcpyDtoD source", NULL);
    if (!to || !from) return leave(CUDA_ERROR_INVALID_VALUE);
    queue_copy(ctx->null_stream, to, from, bytes, NULL, false);
    return leave(CUDA_SUCCESS);
}

CUresult cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src, size_t bytes, CUstream handle)
{
    ENTER_CONTEXT(ctx);
    counts.memcpy_async++;
    CUstream s;
    CUresult r = resolve_stream(handle, ctx, &s);
    if (r != CUDA_SUCCESS) return leave(r);
    if (bytes == 0) return leave(CUDA_SUCCESS);
    void *to = device_range(dst, bytes, "cuMemcpyHtoDAsync destination", NULL);
    if (!to || !host_pointer(src, "cuMemcpyHtoDAsync source")) return leave(CUDA_ERROR_INVALID_VALUE);
    /* From pageable memory the source is staged at once and the caller may reuse it. */
    if (pinned_range(src, bytes))
        queue_copy(s, to, src, bytes, NULL, false);
    else {
        void *staging = stage(src, bytes);
        queue_copy(s, to, staging, bytes, staging, false);
    }
    return leave(CUDA_SUCCESS);
}

CUresult cuMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t bytes, CUstream handle)
{
    ENTER_CONTEXT(ctx);
    counts.memcpy_async++;
    CUstream s;
    CUresult r = resolve_stream(handle, ctx, &s);
    if (r != CUDA_SUCCESS) return leave(r);
    if (bytes == 0) return leave(CUDA_SUCCESS);
    void *from = device_range(src, bytes, "cuMemcpyDtoHAsync source", NULL);
    if (!from || !host_pointer(dst, "cuMemcpyDtoHAsync destination")) return leave(CUDA_ERROR_INVALID_VALUE);
    /* To pageable memory the call returns once the copy is done. */
    queue_copy(s, dst, from, bytes, NULL, !pinned_range(dst, bytes));
    return leave(CUDA_SUCCESS);
}

CUresult cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream handle)
{
    ENTER_CONTEXT(ctx);
    counts.memcpy_async++;
    CUstream s;
    CUresult r = resolve_stream(handle, ctx, &s);
    if (r != CUDA_SUCCESS) return leave(r);
    if (bytes == 0) return leave(CUDA_SUCCESS);
    void *to = device_range(dst, bytes, "cuMemcpyDtoDAsync destination", NULL);
    void *from = device_range(src, bytes, "cuMemcpyDtoDAsync source", NULL);
    if (!to || !from) return leave(CUDA_ERROR_INVALID_VALUE);
    queue_copy(s, to, from, bytes, NULL, false);
    return leave(CUDA_SUCCESS);
}

/* Between contexts: serialised with all earlier and later work of the current, source and
 * destination contexts (here: after all of it has finished, and done before returning). */
CUresult cuMemcpyPeer(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx,
                      size_t bytes)
{
    ENTER();
    counts.memcpy_peer++;
    if (!dst_ctx || !src_ctx || !dst_ctx->active || !src_ctx->active)
        return leave(CUDA_ERROR_INVALID_CONTEXT);
    if (bytes == 0) return leave(CUDA_SUCCESS);
    int dst_device = -1, src_device = -1;
    void *to = device_range(dst, bytes, "cuMemcpyPeer destination", &dst_device);
    void *from = device_range(src, bytes, "cuMemcpyPeer source", &src_device);
    if (!to || !from) return leave(CUDA_ERROR_INVALID_VALUE);
    if ((dst_device >= 0 && dst_device != dst_ctx->device) ||
        (src_device >= 0 && src_device != src_ctx->device)) {
        complain("cuMemcpyPeer: memory of device %d/%d given with contexts of devices %d/%d",
                 dst_device, src_device, dst_ctx->device, src_ctx->device);
        return leave(CUDA_ERROR_INVALID_VALUE);
    }
    CUcontext ctx = live_current();
    if (ctx) drain_context(ctx);
    drain_context(dst_ctx);
    drain_context(src_ctx);
    memmove(to, from, bytes);
    return leave(CUDA_SUCCESS);
}

CUresult cuDeviceCanAccessPeer(int *can, CUdevice dev, CUdevice peer)
{
    ENTER();
    if (!can) return leave(CUDA_ERROR_INVALID_VALUE);
    if (!valid_device(dev) || !valid_device(peer)) return leave(CUDA_ERROR_INVALID_DEVICE);
    *can = peer_access && dev != peer;
    return leave(CUDA_SUCCESS);
}

/* ---- streams, host functions, events ---- */

CUresult cuStreamCreate(CUstream *phStream, unsigned int flags)
{
    ENTER_CONTEXT(ctx);
    counts.stream_creates++;
    if (!phStream || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING)) return leave(CUDA_ERROR_INVALID_VALUE);
    CUstream s = stream_new(ctx, false, !(flags & CU_STREAM_NON_BLOCKING));
    if (!s) return leave(CUDA_ERROR_OUT_OF_MEMORY);
    *phStream = s;
    return leave(CUDA_SUCCESS);
}

/* Returns at once; the stream's queued work still runs, then its worker ends. */
CUresult cuStreamDestroy(CUstream handle)
{
    ENTER();
    if (!handle || !stream_live(handle)) return leave(CUDA_ERROR_INVALID_HANDLE);
    handle->destroyed = true;
    pthread_cond_broadcast(&changed);
    return leave(CUDA_SUCCESS);
}

CUresult cuStreamSynchronize(CUstream handle)
{
    ENTER();
    counts.synchronizes++;
    CUstream s;
    CUresult r = resolve_stream(handle, live_current(), &s);
    if (r != CUDA_SUCCESS) {
        if (r == CUDA_ERROR_INVALID_CONTEXT) complain("cuStreamSynchronize(NULL) without a current context");
        return leave(r);
    }
    timeline *line = timeline_ref(s->line);
    if (s->is_null) {
        /* The NULL stream's point after the blocking streams' work, as a marker there. */
        enqueue(s, op_new(OP_MARKER));
    }
    wait_for(line, line->queued);
    timeline_unref(line);
    return leave(CUDA_SUCCESS);
}

CUresult cuStreamWaitEvent(CUstream handle, CUevent event, unsigned int flags)
{
    ENTER();
    counts.stream_waits++;
    if (flags != 0) return leave(CUDA_ERROR_INVALID_VALUE);
    CUstream s;
    CUresult r = resolve_stream(handle, live_current(), &s);
    if (r != CUDA_SUCCESS) return leave(r);
    bool found = false;
    for (CUevent e = events; e; e = e->next) found = found || e == event;
    if (!found || !context_live(event->ctx, event->generation)) return leave(CUDA_ERROR_INVALID_HANDLE);
    op *o = op_new(OP_MARKER);
    if (event->line) op_wait(o, event->line, event->seq); /* the event may be another device's */
    enqueue(s, o);
    return leave(CUDA_SUCCESS);
}

CUresult cuLaunchHostFunc(CUstream handle, CUhostFn fn, void *userData)
{
    ENTER();
    counts.host_funcs++;
    if (!fn) return leave(CUDA_ERROR_INVALID_VALUE);
    CUstream s;
    CUresult r = resolve_stream(handle, live_current(), &s);
    if (r != CUDA_SUCCESS) return leave(r);
    op *o = op_new(OP_HOST_FUNCTION);
    o->u.host.fn = fn;
    o->u.host.data = userData;
    enqueue(s, o);
    return leave(CUDA_SUCCESS);
}

static bool event_live(CUevent event)
{
    for (CUevent e = events; e; e = e->next)
        if (e == event) return context_live(event->ctx, event->generation);
    return false;
}

CUresult cuEventCreate(CUevent *phEvent, unsigned int flags)
{
    ENTER_CONTEXT(ctx);
    const unsigned known = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
    if (!phEvent || (flags & ~known)) return leave(CUDA_ERROR_INVALID_VALUE);
    if (flags & CU_EVENT_INTERPROCESS) return leave(CUDA_ERROR_NOT_SUPPORTED);
    CUevent e = checked_calloc(1, sizeof *e);
    e->ctx = ctx;
    e->generation = ctx->generation;
    e->next = events;
    events = e;
    *phEvent = e;
    return leave(CUDA_SUCCESS);
}

/* Returns at once, recorded work pending or not. */
CUresult cuEventDestroy(CUevent event)
{
    ENTER();
    for (CUevent *link = &events; *link; link = &(*link)->next)
        if (*link == event) {
            *link = event->next;
            timeline_unref(event->line);
            free(event);
            return leave(CUDA_SUCCESS);
        }
    return leave(CUDA_ERROR_INVALID_HANDLE);
}

CUresult cuEventRecord(CUevent event, CUstream handle)
{
    ENTER();
    counts.event_records++;
    if (!event_live(event)) return leave(CUDA_ERROR_INVALID_HANDLE);
    CUstream s;
    CUresult r = resolve_stream(handle, live_current(), &s);
    if (r != CUDA_SUCCESS) return leave(r);
    if (s->ctx != event->ctx) {
        complain("cuEventRecord: an event of device %d recorded on a stream of device %d",
                 event->ctx->device, s->ctx->device);
        return leave(CUDA_ERROR_INVALID_HANDLE);
    }
    uint64_t seq = enqueue(s, op_new(OP_MARKER));
    timeline_unref(event->line);
    event->line = timeline_ref(s->line);
    event->seq = seq;
    return leave(CUDA_SUCCESS);
}

CUresult cuEventQuery(CUevent event)
{
    ENTER();
    if (!event_live(event)) return leave(CUDA_ERROR_INVALID_HANDLE);
    bool done = !event->line || event->line->completed >= event->seq;
    return leave(done ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY);
}

CUresult cuEventSynchronize(CUevent event)
{
    ENTER();
    counts.synchronizes++;
    if (!event_live(event)) return leave(CUDA_ERROR_INVALID_HANDLE);
    if (event->line) {
        timeline *line = timeline_ref(event->line);
        wait_for(line, event->seq);
        timeline_unref(line);
    }
    return leave(CUDA_SUCCESS);
}

/* ---- modules and kernels ---- */

static bool module_live(CUmodule module)
{
    for (CUmodule m = modules; m; m = m->next)
        if (m == module) return context_live(m->ctx, m->generation);
    return false;
}

static bool identifier_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '$';
}

/* The PTX directive `directive` followed by white space, as a whole word. */
static const char *find_directive(const char *text, const char *directive)
{
    size_t n = strlen(directive);
    for (const char *at = strstr(text, directive); at; at = strstr(at + 1, directive))
        if ((at == text || !identifier_char(at[-1])) && (at[n] == ' ' || at[n] == '\t')) return at;
    return NULL;
}

CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
    ENTER_CONTEXT(ctx);
    counts.module_loads++;
    if (!module || !image) return leave(CUDA_ERROR_INVALID_VALUE);
    const char *text = image;
    if (memcmp(text, "\177ELF", 4) == 0) {
        complain("cuModuleLoadData: a cubin or fatbin; the stand-in loads PTX text only");
        return leave(CUDA_ERROR_INVALID_IMAGE);
    }
    const char *version = find_directive(text, ".version");
    const char *target = find_directive(text, ".target");
    if (!version || !target) {
        complain("cuModuleLoadData: not PTX (no .version or .target directive)");
        return leave(CUDA_ERROR_INVALID_IMAGE);
    }
    int sm = 0;
    if (sscanf(target + strlen(".target"), " sm_%d", &sm) != 1) {
        complain("cuModuleLoadData: .target names no sm_XY architecture");
        return leave(CUDA_ERROR_INVALID_PTX);
    }
    if (sm > 80) {
        complain("cuModuleLoadData: PTX for sm_%d cannot be compiled for a device of compute "
                 "capability 8.0", sm);
        return leave(CUDA_ERROR_INVALID_PTX);
    }
    CUmodule m = checked_calloc(1, sizeof *m);
    int capacity = 0;
    for (const char *at = find_directive(text, ".entry"); at; at = find_directive(at + 1, ".entry")) {
        const char *name = at + strlen(".entry");
        while (*name == ' ' || *name == '\t') name++;
        size_t n = 0;
        while (identifier_char(name[n])) n++;
        if (n == 0 || n >= sizeof m->entries[0]) continue;
        if (m->entry_count == capacity) {
            capacity = capacity ? 2 * capacity : 64;
            void *grown = realloc(m->entries, (size_t)capacity * sizeof m->entries[0]);
            if (!grown) abort();
            m->entries = grown;
        }
        memcpy(m->entries[m->entry_count], name, n);
        m->entries[m->entry_count][n] = '\0';
        m->entry_count++;
    }
    m->functions = checked_calloc((size_t)(m->entry_count ? m->entry_count : 1), sizeof *m->functions);
    m->ctx = ctx;
    m->generation = ctx->generation;
    m->next = modules;
    modules = m;
    *module = m;
    return leave(CUDA_SUCCESS);
}

CUresult cuModuleUnload(CUmodule module)
{
    ENTER();
    for (CUmodule *link = &modules; *link; link = &(*link)->next)
        if (*link == module) {
            /* Launches of its functions may still be queued. */
            if (module->ctx->active) drain_context(module->ctx);
            *link = module->next;
            for (int i = 0; i < module->entry_count; i++) free(module->functions[i]);
            free(module->functions);
            free(module->entries);
            free(module);
            return leave(CUDA_SUCCESS);
        }
    return leave(CUDA_ERROR_INVALID_HANDLE);
}

CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule module, const char *name)
{
    ENTER();
    if (!hfunc || !name) return leave(CUDA_ERROR_INVALID_VALUE);
    if (!module_live(module)) return leave(CUDA_ERROR_INVALID_HANDLE);
    for (int i = 0; i < module->entry_count; i++) {
        if (strcmp(module->entries[i], name) != 0) continue;
        if (!module->functions[i]) {
            int kernel = CT_K_NONE;
            for (int k = CT_K_NONE + 1; k < CT_KERNEL_COUNT; k++)
                if (kernels[k].name && strcmp(kernels[k].name, name) == 0) kernel = k;
            if (kernel == CT_K_NONE) {
                complain("cuModuleGetFunction: the PTX has %s but src/kernels has no C kernel "
                         "of that name", name);
                return leave(CUDA_ERROR_NOT_FOUND);
            }
            CUfunction f = checked_calloc(1, sizeof *f);
            f->module = module;
            f->kernel = kernel;
            snprintf(f->name, sizeof f->name, "%s", name);
            module->functions[i] = f;
        }
        *hfunc = module->functions[i];
        return leave(CUDA_SUCCESS);
    }
    return leave(CUDA_ERROR_NOT_FOUND);
}

static bool function_live(CUfunction f)
{
    for (CUmodule m = modules; m; m = m->next)
        for (int i = 0; i < m->entry_count; i++)
            if (m->functions[i] == f && f) return context_live(m->ctx, m->generation);
    return false;
}

CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                        unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                        unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream handle,
                        void **kernelParams, void **extra)
{
    ENTER_CONTEXT(ctx);
    counts.launches++;
    if (!function_live(f)) return leave(CUDA_ERROR_INVALID_HANDLE);
    if (f->module->ctx != ctx) {
        complain("cuLaunchKernel(%s): a function of device %d launched with device %d's context "
                 "current", f->name, f->module->ctx->device, ctx->device);
        return leave(CUDA_ERROR_INVALID_HANDLE);
    }
    CUstream s;
    CUresult r = resolve_stream(handle, ctx, &s);
    if (r != CUDA_SUCCESS) return leave(r);
    if (s->ctx != ctx) {
        complain("cuLaunchKernel(%s): a stream of device %d with device %d's context current",
                 f->name, s->ctx->device, ctx->device);
        return leave(CUDA_ERROR_INVALID_HANDLE);
    }
    if (!gridDimX || !gridDimY || !gridDimZ || !blockDimX || !blockDimY || !blockDimZ ||
        blockDimX > 1024 || blockDimY > 1024 || blockDimZ > 64 || gridDimY > 65535 ||
        gridDimZ > 65535 || gridDimX > 2147483647u ||
        (unsigned long)blockDimX * blockDimY * blockDimZ > MAX_THREADS_PER_BLOCK ||
        sharedMemBytes > MAX_SHARED_PER_BLOCK) {
        complain("cuLaunchKernel(%s): invalid configuration: grid (%u, %u, %u), block (%u, %u, %u), "
                 "%u bytes of shared memory", f->name, gridDimX, gridDimY, gridDimZ, blockDimX,
                 blockDimY, blockDimZ, sharedMemBytes);
        return leave(CUDA_ERROR_INVALID_VALUE);
    }
    if (extra) {
        complain("cuLaunchKernel(%s): arguments through `extra`: not modelled", f->name);
        return leave(CUDA_ERROR_NOT_SUPPORTED);
    }
    if (!kernelParams) return leave(CUDA_ERROR_INVALID_VALUE);
    op *o = op_new(OP_KERNEL);
    o->u.kernel.run = kernels[f->kernel].run;
    for (int k = 0; k < CT_KERNEL_MAX_BUFFERS; k++) {
        if (!kernelParams[k]) {
            op_free(o);
            return leave(CUDA_ERROR_INVALID_VALUE);
        }
        CUdeviceptr pointer = *(const CUdeviceptr *)kernelParams[k];
        if (pointer == 0) continue;
        allocation *a = find_allocation((uintptr_t)pointer, 0);
        if (!a || (a->device >= 0 && a->device != ctx->device)) {
            if (a)
                complain("cuLaunchKernel(%s): buffer %d is memory of device %d, launched on device "
                         "%d (no peer access)", f->name, k, a->device, ctx->device);
            else
                complain("cuLaunchKernel(%s): buffer %d (0x%llx) is not device memory", f->name, k,
                         (unsigned long long)pointer);
            op_free(o);
            return leave(CUDA_ERROR_INVALID_VALUE);
        }
        o->u.kernel.buffers[k] = host_of(a, (uintptr_t)pointer);
    }
    if (!kernelParams[CT_KERNEL_MAX_BUFFERS]) {
        op_free(o);
        return leave(CUDA_ERROR_INVALID_VALUE);
    }
    memcpy(&o->u.kernel.params, kernelParams[CT_KERNEL_MAX_BUFFERS], sizeof o->u.kernel.params);
    o->u.kernel.items = (long)gridDimX * (long)blockDimX;
    o->u.kernel.repeats = (long)gridDimY * gridDimZ * blockDimY * blockDimZ;
    enqueue(s, o);
    return leave(CUDA_SUCCESS);
}

/* ---- errors: the driver's names, generated from cuda.h, and its texts ---- */

#include "standin_error_names.h"

static const struct {
    CUresult code;
    const char *text;
} error_texts[] = {
    {CUDA_SUCCESS, "no error"},
    {CUDA_ERROR_INVALID_VALUE, "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "initialization error"},
    {CUDA_ERROR_DEINITIALIZED, "driver shutting down"},
    {CUDA_ERROR_PROFILER_DISABLED, "profiler disabled while using external profiling tool"},
    {CUDA_ERROR_STUB_LIBRARY, "CUDA driver is a stub library"},
    {CUDA_ERROR_DEVICE_UNAVAILABLE, "CUDA-capable device(s) is/are busy or unavailable"},
    {CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"},
    {CUDA_ERROR_DEVICE_NOT_LICENSED, "device doesn't have valid Grid license"},
    {CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid"},
    {CUDA_ERROR_INVALID_CONTEXT, "invalid device context"},
    {CUDA_ERROR_MAP_FAILED, "mapping of buffer object failed"},
    {CUDA_ERROR_UNMAP_FAILED, "unmapping of buffer object failed"},
    {CUDA_ERROR_ARRAY_IS_MAPPED, "array is mapped"},
    {CUDA_ERROR_ALREADY_MAPPED, "resource already mapped"},
    {CUDA_ERROR_NO_BINARY_FOR_GPU, "no kernel image is available for execution on the device"},
    {CUDA_ERROR_ALREADY_ACQUIRED, "resource already acquired"},
    {CUDA_ERROR_NOT_MAPPED, "resource not mapped"},
    {CUDA_ERROR_ECC_UNCORRECTABLE, "uncorrectable ECC error encountered"},
    {CUDA_ERROR_UNSUPPORTED_LIMIT, "limit is not supported on this architecture"},
    {CUDA_ERROR_CONTEXT_ALREADY_IN_USE, "exclusive-thread device already in use by a different thread"},
    {CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, "peer access is not supported between these two devices"},
    {CUDA_ERROR_INVALID_PTX, "a PTX JIT compilation failed"},
    {CUDA_ERROR_INVALID_GRAPHICS_CONTEXT, "invalid OpenGL or DirectX context"},
    {CUDA_ERROR_NVLINK_UNCORRECTABLE, "uncorrectable NVLink error detected during the execution"},
    {CUDA_ERROR_JIT_COMPILER_NOT_FOUND, "PTX JIT compiler library not found"},
    {CUDA_ERROR_UNSUPPORTED_PTX_VERSION, "the provided PTX was compiled with an unsupported toolchain."},
    {CUDA_ERROR_INVALID_SOURCE, "device kernel image is invalid"},
    {CUDA_ERROR_FILE_NOT_FOUND, "file not found"},
    {CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND, "shared object symbol not found"},
    {CUDA_ERROR_SHARED_OBJECT_INIT_FAILED, "shared object initialization failed"},
    {CUDA_ERROR_OPERATING_SYSTEM, "OS call failed or operation not supported on this OS"},
    {CUDA_ERROR_INVALID_HANDLE, "invalid resource handle"},
    {CUDA_ERROR_ILLEGAL_STATE, "the operation cannot be performed in the present state"},
    {CUDA_ERROR_NOT_FOUND, "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "device not ready"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered"},
    {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "too many resources requested for launch"},
    {CUDA_ERROR_LAUNCH_TIMEOUT, "the launch timed out and was terminated"},
    {CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING, "launch uses incompatible texturing mode"},
    {CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, "peer access is already enabled"},
    {CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, "peer access has not been enabled"},
    {CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE, "cannot set while device is active in this process"},
    {CUDA_ERROR_CONTEXT_IS_DESTROYED, "context is destroyed"},
    {CUDA_ERROR_ASSERT, "device-side assert triggered"},
    {CUDA_ERROR_TOO_MANY_PEERS, "peer mapping resources exhausted"},
    {CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "part or all of the requested memory range is already mapped"},
    {CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "pointer does not correspond to a registered memory region"},
    {CUDA_ERROR_HARDWARE_STACK_ERROR, "hardware stack error"},
    {CUDA_ERROR_ILLEGAL_INSTRUCTION, "an illegal instruction was encountered"},
    {CUDA_ERROR_MISALIGNED_ADDRESS, "misaligned address"},
    {CUDA_ERROR_INVALID_ADDRESS_SPACE, "operation not supported on global/shared address space"},
    {CUDA_ERROR_INVALID_PC, "invalid program counter"},
    {CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure"},
    {CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, "too many blocks in cooperative launch"},
    {CUDA_ERROR_NOT_PERMITTED, "operation not permitted"},
    {CUDA_ERROR_NOT_SUPPORTED, "operation not supported"},
    {CUDA_ERROR_SYSTEM_NOT_READY, "system not yet initialized"},
    {CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, "system has unsupported display driver / cuda driver combination"},
    {CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE, "forward compatibility was attempted on non supported HW"},
    {CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "operation not permitted when stream is capturing"},
    {CUDA_ERROR_UNKNOWN, "unknown error"},
};

static const char *error_name(CUresult code)
{
    for (size_t i = 0; i < sizeof error_names / sizeof error_names[0]; i++)
        if (error_names[i].code == code) return error_names[i].name;
    return NULL;
}

CUresult cuGetErrorName(CUresult error, const char **pStr)
{
    if (!pStr) return CUDA_ERROR_INVALID_VALUE;
    *pStr = error_name(error);
    return *pStr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* The driver's text; codes whose text the stand-in does not know give their name. */
CUresult cuGetErrorString(CUresult error, const char **pStr)
{
    if (!pStr) return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < sizeof error_texts / sizeof error_texts[0]; i++)
        if (error_texts[i].code == error) {
            *pStr = error_texts[i].text;
            return CUDA_SUCCESS;
        }
    *pStr = error_name(error);
    return *pStr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ---- what the tests and the stand-in cuBLAS use ---- */

void ctorch_standin_get_counts(ctorch_standin_counts *out)
{
    pthread_mutex_lock(&lock);
    *out = counts;
    pthread_mutex_unlock(&lock);
}

void *ctorch_standin_host_address(CUdeviceptr pointer, size_t bytes, int *device_out)
{
    pthread_mutex_lock(&lock);
    allocation *a = find_allocation((uintptr_t)pointer, bytes);
    void *host = a ? host_of(a, (uintptr_t)pointer) : NULL;
    if (a && device_out) *device_out = a->device;
    pthread_mutex_unlock(&lock);
    return host;
}

CUresult ctorch_standin_enqueue(CUstream handle, void (*run)(void *), void (*finish)(void *), void *arg)
{
    pthread_mutex_lock(&lock);
    counts.gemms++;
    CUcontext ctx = live_current();
    CUstream s;
    CUresult r = ctx ? resolve_stream(handle, ctx, &s) : CUDA_ERROR_INVALID_CONTEXT;
    if (r == CUDA_SUCCESS && s->ctx != ctx) r = CUDA_ERROR_INVALID_HANDLE;
    if (r != CUDA_SUCCESS) {
        pthread_mutex_unlock(&lock);
        if (finish) finish(arg);
        return r;
    }
    op *o = op_new(OP_CALL);
    o->u.call.run = run;
    o->u.call.finish = finish;
    o->u.call.arg = arg;
    enqueue(s, o);
    return leave(CUDA_SUCCESS);
}

int ctorch_standin_current_device(void)
{
    pthread_mutex_lock(&lock);
    CUcontext ctx = live_current();
    int device = ctx ? ctx->device : -1;
    pthread_mutex_unlock(&lock);
    return device;
}

int ctorch_standin_stream_device(CUstream handle)
{
    pthread_mutex_lock(&lock);
    CUstream s;
    int device = resolve_stream(handle, live_current(), &s) == CUDA_SUCCESS ? s->ctx->device : -1;
    pthread_mutex_unlock(&lock);
    return device;
}
