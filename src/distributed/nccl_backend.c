/* NCCL for CUDA tensors, under the same collectives as every other device (torch.distributed's
 * NCCL backend). The library is opened at run time (dlopen), so that one binary runs where there
 * is no NCCL and no GPU: CUDA tensors then go through MPI with host staging, as they would
 * without NCCL built in, and the reason is logged once.
 *
 * One communicator per process group, on this rank's CUDA device, made on the first collective
 * that every rank agreed to run through NCCL (collectives.c): rank 0 makes the unique id and
 * broadcasts it over MPI (as llm.c does), every rank joins with ncclCommInitRank. Collectives run
 * on the tensors' device memory, in place, on this thread's current stream of that device: they
 * are queued, as every op on a CUDA tensor is, and whatever the stream runs next sees the result.
 * The CUDA backend's objects (context, stream, device address) are reached through nccl_cuda.c
 * only. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nccl.h>

#include "core/files.h"
#include "distributed/dist_internal.h"
#include "distributed/nccl_cuda.h"

/* ---- the library ---- */

/* The whole of what ctorch calls in NCCL (a stand-in library would implement exactly these). */
#define CT_NCCL_FUNCTIONS(X)                                                                       \
    X(ncclGetVersion) X(ncclGetErrorString) X(ncclGetUniqueId) X(ncclCommInitRank)                 \
    X(ncclCommDestroy) X(ncclCommGetAsyncError) X(ncclAllReduce) X(ncclBroadcast) X(ncclAllGather) \
    X(ncclReduceScatter)

#define CT_NCCL_MEMBER(f) __typeof__(&f) f;
typedef struct nccl_api {
    CT_NCCL_FUNCTIONS(CT_NCCL_MEMBER)
} nccl_api;

/* ncclAvg came with NCCL 2.10. */
#define CT_NCCL_MIN_VERSION 21000

#define REASON_MAX 512

static struct {
    pthread_once_t once;
    bool loaded;
    int version;
    char reason[REASON_MAX];
    nccl_api fn;
} library = {.once = PTHREAD_ONCE_INIT};

/* Opens name and reads every function; false with the reason in library.reason. */
static bool open_library(const char *name)
{
    /* a FIFO would block dlopen (a name without a slash is searched for, not a path) */
    const char *kind = strchr(name, '/') ? ct_path_not_regular(name) : NULL;
    if (kind) {
        snprintf(library.reason, sizeof library.reason, "cannot open the NCCL library %s: it is %s, not a "
                 "library file", name, kind);
        return false;
    }
    void *handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char *why = dlerror();
        snprintf(library.reason, sizeof library.reason, "cannot open the NCCL library %s: %s", name,
                 why ? why : "unknown error");
        return false;
    }
#define CT_NCCL_LOAD(f)                                                                            \
    library.fn.f = (__typeof__(library.fn.f))dlsym(handle, #f);                                    \
    if (!library.fn.f) {                                                                           \
        snprintf(library.reason, sizeof library.reason, "the NCCL library %s has no %s", name, #f); \
        dlclose(handle);                                                                           \
        return false;                                                                              \
    }
    CT_NCCL_FUNCTIONS(CT_NCCL_LOAD)
#undef CT_NCCL_LOAD
    return true;
}

static void load_library(void)
{
    const char *chosen = getenv("CTORCH_CUDA_NCCL");
    bool opened = false;
    if (chosen && *chosen) {
        opened = open_library(chosen); /* exactly the file asked for */
    } else {
        char first_reason[REASON_MAX] = "";
        static const char *const names[] = {"libnccl.so.2", "libnccl.so"};
        for (size_t i = 0; i < sizeof names / sizeof names[0] && !opened; i++) {
            opened = open_library(names[i]);
            if (!opened && !first_reason[0]) snprintf(first_reason, sizeof first_reason, "%s", library.reason);
        }
#ifdef CTORCH_NCCL_LIBDIR
        if (!opened) opened = open_library(CTORCH_NCCL_LIBDIR "/libnccl.so.2");
#endif
        if (!opened) snprintf(library.reason, sizeof library.reason, "%s", first_reason);
    }
    if (!opened) return;
    ncclResult_t result = library.fn.ncclGetVersion(&library.version);
    if (result != ncclSuccess) {
        snprintf(library.reason, sizeof library.reason, "ncclGetVersion failed: %s",
                 library.fn.ncclGetErrorString(result));
        return;
    }
    if (library.version < CT_NCCL_MIN_VERSION) {
        snprintf(library.reason, sizeof library.reason, "NCCL %d.%d.%d is older than 2.10, which ctorch "
                 "needs (ncclAvg)", library.version / 10000, library.version / 100 % 100, library.version % 100);
        return;
    }
    library.loaded = true;
    library.reason[0] = '\0';
}

bool ct_dist_nccl_library_load(int *version, char *reason, size_t reason_size)
{
    pthread_once(&library.once, load_library);
    if (version) *version = library.loaded ? library.version : 0;
    if (reason && reason_size) snprintf(reason, reason_size, "%s", library.reason);
    return library.loaded;
}

/* ---- whether CUDA tensors go through NCCL here ---- */

static struct {
    pthread_once_t once;
    pthread_mutex_t lock;
    bool usable;
    char reason[REASON_MAX + 128];
} choice = {.once = PTHREAD_ONCE_INIT, .lock = PTHREAD_MUTEX_INITIALIZER};

static void decide(void)
{
    int version = 0;
    char why[REASON_MAX];
    if (!ct_is_available(CT_CUDA)) {
        snprintf(choice.reason, sizeof choice.reason, "the CUDA backend is not available (%s)",
                 ct_backend_unavailable_reason(CT_CUDA));
        /* Without CUDA there are no CUDA tensors to carry: nothing to warn about. */
        ct_log_message(CT_LOG_INFO, "ct_dist: CUDA tensors' collectives go through MPI with host staging, "
                       "not NCCL: %s", choice.reason);
        return;
    }
    if (!ct_dist_nccl_library_load(&version, why, sizeof why)) {
        snprintf(choice.reason, sizeof choice.reason, "%s", why);
        ct_log_message(CT_LOG_WARN, "ct_dist: CUDA tensors' collectives go through MPI with host staging, "
                       "not NCCL: %s (CTORCH_CUDA_NCCL names the library to use)", choice.reason);
        return;
    }
    choice.usable = true;
    ct_log_message(CT_LOG_INFO, "ct_dist: CUDA tensors' collectives go through NCCL %d.%d.%d",
                   version / 10000, version / 100 % 100, version % 100);
}

bool ct_dist_nccl_usable(char *reason, size_t reason_size)
{
    pthread_once(&choice.once, decide);
    pthread_mutex_lock(&choice.lock);
    bool usable = choice.usable;
    if (reason && reason_size) snprintf(reason, reason_size, "%s", usable ? "" : choice.reason);
    pthread_mutex_unlock(&choice.lock);
    return usable;
}

/* No NCCL for the rest of the run (a communicator could not be made). */
static void give_up(const char *why)
{
    pthread_mutex_lock(&choice.lock);
    choice.usable = false;
    snprintf(choice.reason, sizeof choice.reason, "%s", why);
    pthread_mutex_unlock(&choice.lock);
    ct_log_message(CT_LOG_WARN, "ct_dist: CUDA tensors' collectives go through MPI with host staging from "
                   "now on: %s", why);
}

/* ---- the communicator (used under the process group's lock: one collective at a time) ---- */

static struct {
    ncclComm_t comm; /* NULL until made */
    int device;      /* its CUDA device's index */
} communicator;

static ct_status nccl_fail(const char *function, const char *call, ncclResult_t result)
{
    return ct_error(CT_ERR_BACKEND, "%s: %s failed: %s", function, call, library.fn.ncclGetErrorString(result));
}

static bool nccl_accepts(ct_device device)
{
    if (device.type != CT_CUDA || !ct_dist_nccl_usable(NULL, 0)) return false;
    return !communicator.comm || communicator.device == device.index;
}

/* Every rank at once (they all agreed on NCCL): the same answer on every rank. */
static ct_status nccl_prepare(ct_device device)
{
    static const char *FN = "ct_dist (NCCL communicator)";
    if (communicator.comm) return CT_OK;
    /* A failure here comes back as CT_ERR_UNAVAILABLE: the collective goes through MPI. */
    ct_dist_group *group = &ct_dist_group_state;
    char why[REASON_MAX] = "";
    /* Rank 0's unique id, and whether rank 0 could make it, to every rank. */
    struct {
        int ok;
        ncclUniqueId id;
    } root = {0};
    bool ready = ct_nccl_cuda_make_current(device.index) == CT_OK;
    if (!ready) snprintf(why, sizeof why, "%s", ct_last_error_message());
    if (group->rank == 0 && ready) {
        ncclResult_t result = library.fn.ncclGetUniqueId(&root.id);
        root.ok = result == ncclSuccess;
        if (!root.ok) snprintf(why, sizeof why, "ncclGetUniqueId failed: %s", library.fn.ncclGetErrorString(result));
    }
    MPI_Request request;
    int code = MPI_Ibcast(&root, (int)sizeof root, MPI_BYTE, 0, group->comm, &request);
    if (code != MPI_SUCCESS) return ct_dist_mpi_fail(FN, "MPI_Ibcast", code);
    if (ct_dist_wait(group, &request, "MPI_Ibcast") != CT_OK) return ct_last_error();
    /* No rank joins unless every rank can: a rank waiting in ncclCommInitRank for one that never
     * comes would hang. */
    int all_ready = ready && root.ok;
    code = MPI_Iallreduce(MPI_IN_PLACE, &all_ready, 1, MPI_INT, MPI_MIN, group->comm, &request);
    if (code != MPI_SUCCESS) return ct_dist_mpi_fail(FN, "MPI_Iallreduce", code);
    if (ct_dist_wait(group, &request, "MPI_Iallreduce") != CT_OK) return ct_last_error();
    int made = 0;
    if (all_ready) {
        ncclComm_t comm = NULL;
        ncclResult_t result = library.fn.ncclCommInitRank(&comm, group->world_size, root.id, group->rank);
        made = result == ncclSuccess;
        if (made) {
            communicator.comm = comm;
            communicator.device = device.index;
        } else {
            snprintf(why, sizeof why, "ncclCommInitRank failed: %s", library.fn.ncclGetErrorString(result));
        }
        code = MPI_Iallreduce(MPI_IN_PLACE, &made, 1, MPI_INT, MPI_MIN, group->comm, &request);
        if (code != MPI_SUCCESS) return ct_dist_mpi_fail(FN, "MPI_Iallreduce", code);
        if (ct_dist_wait(group, &request, "MPI_Iallreduce") != CT_OK) return ct_last_error();
    }
    if (made) {
        ct_log_message(CT_LOG_DEBUG, "ct_dist: NCCL communicator of %d ranks on cuda:%d", group->world_size,
                       device.index);
        return CT_OK;
    }
    if (communicator.comm) library.fn.ncclCommDestroy(communicator.comm);
    communicator.comm = NULL;
    char message[REASON_MAX + 64];
    snprintf(message, sizeof message, "the NCCL communicator could not be made: %s",
             why[0] ? why : "another rank could not take part");
    give_up(message);
    return CT_ERR_UNAVAILABLE;
}

void ct_dist_nccl_finalize(void)
{
    if (!communicator.comm) return;
    ct_nccl_cuda_make_current(communicator.device);
    library.fn.ncclCommDestroy(communicator.comm);
    communicator.comm = NULL;
}

/* ---- the collectives: device buffers, in place, on the current stream ---- */

static ncclDataType_t type_of(ct_dtype dtype)
{
    switch (dtype) {
    case CT_F32: return ncclFloat32;
    case CT_F64: return ncclFloat64;
    case CT_I32: return ncclInt32;
    case CT_I64: return ncclInt64;
    case CT_U8: return ncclUint8;
    case CT_BOOL: return ncclUint8; /* one byte, 0 or 1: max is "or", min is "and" */
    default: return ncclUint8;
    }
}

static ncclRedOp_t op_of(ct_reduce_op op, ct_dtype dtype)
{
    switch (op) {
    case CT_REDUCE_SUM: return dtype == CT_BOOL ? ncclMax : ncclSum;
    case CT_REDUCE_AVG: return ncclAvg; /* integers: the sum divided, rounded toward zero */
    case CT_REDUCE_MAX: return ncclMax;
    case CT_REDUCE_MIN: return ncclMin;
    }
    return ncclSum;
}

/* The device made current and the stream to queue on. */
static ct_status begin(CUstream *stream)
{
    ct_status status = ct_nccl_cuda_make_current(communicator.device);
    *stream = ct_nccl_cuda_stream(communicator.device);
    return status;
}

/* result of a call, then any error NCCL met asynchronously (a peer that failed). */
static ct_status finish(const char *function, const char *call, ncclResult_t result)
{
    if (result != ncclSuccess) return nccl_fail(function, call, result);
    ncclResult_t async = ncclSuccess;
    result = library.fn.ncclCommGetAsyncError(communicator.comm, &async);
    if (result != ncclSuccess) return nccl_fail(function, "ncclCommGetAsyncError", result);
    return async == ncclSuccess ? CT_OK : nccl_fail(function, call, async);
}

static ct_status nccl_all_reduce(void *data, int64_t count, ct_dtype dtype, ct_reduce_op op)
{
    static const char *FN = "ct_dist_all_reduce";
    CUstream stream;
    ct_status status = begin(&stream);
    if (status != CT_OK) return status;
    return finish(FN, "ncclAllReduce", library.fn.ncclAllReduce(data, data, (size_t)count, type_of(dtype),
                                                                op_of(op, dtype), communicator.comm, stream));
}

static ct_status nccl_broadcast(void *data, int64_t count, ct_dtype dtype, int root)
{
    static const char *FN = "ct_dist_broadcast";
    CUstream stream;
    ct_status status = begin(&stream);
    if (status != CT_OK) return status;
    return finish(FN, "ncclBroadcast", library.fn.ncclBroadcast(data, data, (size_t)count, type_of(dtype), root,
                                                                communicator.comm, stream));
}

static ct_status nccl_all_gather(const void *send, void *recv, int64_t count, ct_dtype dtype)
{
    static const char *FN = "ct_dist_all_gather";
    CUstream stream;
    ct_status status = begin(&stream);
    if (status != CT_OK) return status;
    /* In place, as NCCL defines it: this rank's block of recv is the send buffer. */
    if (send == CT_DIST_IN_PLACE)
        send = (const char *)recv + (size_t)ct_dist_group_state.rank * (size_t)count * ct_dtype_size(dtype);
    return finish(FN, "ncclAllGather", library.fn.ncclAllGather(send, recv, (size_t)count, type_of(dtype),
                                                                communicator.comm, stream));
}

static ct_status nccl_reduce_scatter(const void *send, void *recv, int64_t count, ct_dtype dtype, ct_reduce_op op)
{
    static const char *FN = "ct_dist_reduce_scatter";
    if (send == CT_DIST_IN_PLACE)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: the NCCL backend takes separate send and receive "
                        "buffers", FN);
    CUstream stream;
    ct_status status = begin(&stream);
    if (status != CT_OK) return status;
    return finish(FN, "ncclReduceScatter",
                  library.fn.ncclReduceScatter(send, recv, (size_t)count, type_of(dtype), op_of(op, dtype),
                                               communicator.comm, stream));
}

static void *nccl_data_of(const ct_tensor *t) { return (void *)(uintptr_t)ct_nccl_cuda_data(t); }

const ct_dist_backend ct_dist_nccl_backend = {
    .name = "nccl",
    .max_block_count = INT64_MAX,
    .all_reduce = nccl_all_reduce,
    .broadcast = nccl_broadcast,
    .all_gather = nccl_all_gather,
    .reduce_scatter = nccl_reduce_scatter,
    .device_memory = true,
    .accepts = nccl_accepts,
    .prepare = nccl_prepare,
    .data_of = nccl_data_of,
};
