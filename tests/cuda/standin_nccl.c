/* The stand-in NCCL: the NCCL calls ctorch makes (CT_NCCL_FUNCTIONS of
 * src/distributed/nccl_backend.c) over MPI, on the stand-in driver's device memory and streams.
 * Built only for the tests, beside the stand-in driver and cuBLAS; ctorch opens it through
 * CTORCH_CUDA_NCCL. What it models of NCCL:
 * - a communicator is made by every rank at once from rank 0's unique id (ctorch broadcasts it),
 *   on the device whose context is current, and checks that the ranks and the id agree;
 * - a collective is queued on the stream it is given (NULL: the NULL stream of the current
 *   context) and runs in order with the stream's other work, so the result is there for the
 *   stream's next kernel and not before: a missing wait shows as a wrong value, as on a GPU;
 * - buffers must lie in live device memory of the communicator's device; ncclAvg of integers is
 *   the sum divided, rounded toward zero;
 * - an error inside a queued collective is kept and returned by ncclCommGetAsyncError.
 * CTORCH_NCCL_STANDIN_FAIL=init makes ncclCommInitRank fail on every rank, as the real library
 * does where its CUDA runtime finds no device (ncclUnhandledCudaError).
 * MPI must be initialised with MPI_THREAD_MULTIPLE (ctorch does): queued collectives run on the
 * stream's worker thread. Below that, a collective waits for its stream and runs at the call. */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>
#include <nccl.h>

#include "standin.h"

#define STANDIN_ID_TAG "ctorch-standin-nccl"

struct ncclComm {
    MPI_Comm comm;
    int rank, ranks, device;
    _Atomic ncclResult_t async_error;
};

ncclResult_t ncclGetVersion(int *version)
{
    if (!version) return ncclInvalidArgument;
    *version = NCCL_VERSION_CODE;
    return ncclSuccess;
}

const char *ncclGetErrorString(ncclResult_t result)
{
    switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (stand-in)";
    case ncclSystemError: return "unhandled system error (stand-in: an MPI call failed)";
    case ncclInternalError: return "internal error (stand-in)";
    case ncclInvalidArgument: return "invalid argument (stand-in)";
    case ncclInvalidUsage: return "invalid usage (stand-in)";
    default: return "unknown result code (stand-in)";
    }
}

/* The tag, then the process id and a counter: ids differ between calls and processes. */
ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
    static _Atomic int made = 0;
    if (!id) return ncclInvalidArgument;
    memset(id, 0, sizeof *id);
    snprintf(id->internal, sizeof id->internal, "%s %ld %d", STANDIN_ID_TAG, (long)getpid(), ++made);
    return ncclSuccess;
}

static bool fail_requested(const char *what)
{
    const char *fail = getenv("CTORCH_NCCL_STANDIN_FAIL");
    return fail && strcmp(fail, what) == 0;
}

ncclResult_t ncclCommInitRank(ncclComm_t *out, int ranks, ncclUniqueId id, int rank)
{
    if (!out || ranks < 1 || rank < 0 || rank >= ranks) return ncclInvalidArgument;
    if (strncmp(id.internal, STANDIN_ID_TAG, strlen(STANDIN_ID_TAG)) != 0) {
        fprintf(stderr, "ctorch NCCL stand-in: ncclCommInitRank: the unique id was not made by "
                "ncclGetUniqueId (was it broadcast from rank 0?)\n");
        return ncclInvalidArgument;
    }
    if (fail_requested("init")) return ncclUnhandledCudaError;
    int initialized = 0, world = 0, world_rank = -1;
    MPI_Initialized(&initialized);
    if (!initialized) {
        fprintf(stderr, "ctorch NCCL stand-in: ncclCommInitRank before MPI_Init\n");
        return ncclInvalidUsage;
    }
    int device = ctorch_standin_current_device();
    if (device < 0) {
        fprintf(stderr, "ctorch NCCL stand-in: ncclCommInitRank without a current context\n");
        return ncclUnhandledCudaError;
    }
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    if (world != ranks || world_rank != rank) {
        fprintf(stderr, "ctorch NCCL stand-in: ncclCommInitRank(%d ranks, rank %d) in an MPI world of %d "
                "where this process is rank %d: the stand-in spans MPI_COMM_WORLD only\n",
                ranks, rank, world, world_rank);
        return ncclInvalidUsage;
    }
    /* Every rank must have been given the same id. */
    ncclUniqueId root_id = id;
    MPI_Bcast(&root_id, (int)sizeof root_id, MPI_BYTE, 0, MPI_COMM_WORLD);
    int same = memcmp(&root_id, &id, sizeof id) == 0;
    MPI_Allreduce(MPI_IN_PLACE, &same, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!same) {
        fprintf(stderr, "ctorch NCCL stand-in: ncclCommInitRank: the ranks were given different ids\n");
        return ncclInvalidUsage;
    }
    ncclComm_t comm = calloc(1, sizeof *comm);
    if (!comm) return ncclSystemError;
    if (MPI_Comm_dup(MPI_COMM_WORLD, &comm->comm) != MPI_SUCCESS) {
        free(comm);
        return ncclSystemError;
    }
    comm->rank = rank;
    comm->ranks = ranks;
    comm->device = device;
    atomic_init(&comm->async_error, ncclSuccess);
    *out = comm;
    return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
    if (!comm) return ncclInvalidArgument;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm->comm);
    free(comm);
    return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *error)
{
    if (!comm || !error) return ncclInvalidArgument;
    *error = atomic_load(&comm->async_error);
    return ncclSuccess;
}

/* ---- the collectives ---- */

typedef enum { ALL_REDUCE, BROADCAST, ALL_GATHER, REDUCE_SCATTER } collective_kind;

typedef struct collective {
    collective_kind kind;
    ncclComm_t comm;
    void *send, *recv; /* host addresses; send == recv: in place */
    size_t count;      /* elements per rank (all_gather: sent; reduce_scatter: received) */
    ncclDataType_t type;
    ncclRedOp_t op;
    int root;
} collective;

static MPI_Datatype mpi_type_of(ncclDataType_t type, size_t *size)
{
    switch (type) {
    case ncclInt8: *size = 1; return MPI_INT8_T;
    case ncclUint8: *size = 1; return MPI_UINT8_T;
    case ncclInt32: *size = 4; return MPI_INT32_T;
    case ncclUint32: *size = 4; return MPI_UINT32_T;
    case ncclInt64: *size = 8; return MPI_INT64_T;
    case ncclUint64: *size = 8; return MPI_UINT64_T;
    case ncclFloat32: *size = 4; return MPI_FLOAT;
    case ncclFloat64: *size = 8; return MPI_DOUBLE;
    default: *size = 0; return MPI_DATATYPE_NULL;
    }
}

static MPI_Op mpi_op_of(ncclRedOp_t op)
{
    switch (op) {
    case ncclSum:
    case ncclAvg: return MPI_SUM;
    case ncclProd: return MPI_PROD;
    case ncclMax: return MPI_MAX;
    case ncclMin: return MPI_MIN;
    default: return MPI_OP_NULL;
    }
}

/* ncclAvg: the sum divided by the ranks, in the element type. */
static void divide(void *data, size_t count, ncclDataType_t type, int ranks)
{
    for (size_t i = 0; i < count; i++) {
        switch (type) {
        case ncclInt8: ((int8_t *)data)[i] = (int8_t)(((int8_t *)data)[i] / ranks); break;
        case ncclUint8: ((uint8_t *)data)[i] = (uint8_t)(((uint8_t *)data)[i] / ranks); break;
        case ncclInt32: ((int32_t *)data)[i] /= ranks; break;
        case ncclUint32: ((uint32_t *)data)[i] /= (uint32_t)ranks; break;
        case ncclInt64: ((int64_t *)data)[i] /= ranks; break;
        case ncclUint64: ((uint64_t *)data)[i] /= (uint64_t)ranks; break;
        case ncclFloat32: ((float *)data)[i] /= (float)ranks; break;
        case ncclFloat64: ((double *)data)[i] /= ranks; break;
        default: break;
        }
    }
}

static void run_collective(void *arg)
{
    collective *c = arg;
    size_t size = 0;
    MPI_Datatype type = mpi_type_of(c->type, &size);
    int count = (int)c->count, code = MPI_SUCCESS;
    bool in_place = c->send == c->recv;
    switch (c->kind) {
    case ALL_REDUCE:
        code = MPI_Allreduce(in_place ? MPI_IN_PLACE : c->send, c->recv, count, type, mpi_op_of(c->op),
                             c->comm->comm);
        if (code == MPI_SUCCESS && c->op == ncclAvg) divide(c->recv, c->count, c->type, c->comm->ranks);
        break;
    case BROADCAST:
        if (!in_place && c->comm->rank == c->root) memcpy(c->recv, c->send, c->count * size);
        code = MPI_Bcast(c->recv, count, type, c->root, c->comm->comm);
        break;
    case ALL_GATHER:
        /* In place when send is this rank's block of recv, as NCCL defines it. */
        in_place = (char *)c->send == (char *)c->recv + (size_t)c->comm->rank * c->count * size;
        code = MPI_Allgather(in_place ? MPI_IN_PLACE : c->send, count, type, c->recv, count, type,
                             c->comm->comm);
        break;
    case REDUCE_SCATTER:
        code = MPI_Reduce_scatter_block(c->send, c->recv, count, type, mpi_op_of(c->op), c->comm->comm);
        if (code == MPI_SUCCESS && c->op == ncclAvg) divide(c->recv, c->count, c->type, c->comm->ranks);
        break;
    }
    if (code != MPI_SUCCESS) {
        fprintf(stderr, "ctorch NCCL stand-in: an MPI collective failed (code %d)\n", code);
        atomic_store(&c->comm->async_error, ncclSystemError);
    }
}

/* The host address of a buffer of the communicator's device, or NULL with a line on stderr. */
static void *device_buffer(const char *call, const char *which, ncclComm_t comm, const void *pointer, size_t bytes)
{
    if (bytes == 0) return (void *)pointer;
    int device = -2;
    void *host = ctorch_standin_host_address((CUdeviceptr)(uintptr_t)pointer, bytes, &device);
    if (!host || device != comm->device) {
        fprintf(stderr, "ctorch NCCL stand-in: %s: %s (%p, %zu bytes) is not in live memory of device %d, "
                "the communicator's\n", call, which, pointer, bytes, comm->device);
        return NULL;
    }
    return host;
}

/* Checks and queues c. send and recv hold c.count elements, or c.count per rank where
 * send_per_rank or recv_per_rank says so (all_gather receives, reduce_scatter sends, a block per
 * rank). */
static ncclResult_t start(const char *call, collective c, const void *send, bool send_per_rank, void *recv,
                          bool recv_per_rank, cudaStream_t stream)
{
    size_t size = 0;
    if (!c.comm) return ncclInvalidArgument;
    if (mpi_type_of(c.type, &size) == MPI_DATATYPE_NULL || c.count > INT32_MAX) return ncclInvalidArgument;
    if ((c.kind == ALL_REDUCE || c.kind == REDUCE_SCATTER) && mpi_op_of(c.op) == MPI_OP_NULL)
        return ncclInvalidArgument;
    if (ctorch_standin_current_device() != c.comm->device) {
        fprintf(stderr, "ctorch NCCL stand-in: %s with device %d's context not current\n", call, c.comm->device);
        return ncclInvalidUsage;
    }
    size_t bytes = c.count * size, all_ranks = bytes * (size_t)c.comm->ranks;
    if (c.count == 0) return ncclSuccess;
    c.send = send ? device_buffer(call, "sendbuff", c.comm, send, send_per_rank ? all_ranks : bytes) : NULL;
    c.recv = device_buffer(call, "recvbuff", c.comm, recv, recv_per_rank ? all_ranks : bytes);
    if ((send && !c.send) || !c.recv) return ncclInvalidArgument;
    collective *queued = malloc(sizeof *queued);
    if (!queued) return ncclSystemError;
    *queued = c;
    int level = MPI_THREAD_SINGLE;
    MPI_Query_thread(&level);
    if (level < MPI_THREAD_MULTIPLE) {
        /* MPI only from this thread: wait for the stream, then run here. */
        CUresult r = stream ? cuStreamSynchronize((CUstream)stream) : cuCtxSynchronize();
        if (r == CUDA_SUCCESS) run_collective(queued);
        free(queued);
        return r == CUDA_SUCCESS ? ncclSuccess : ncclUnhandledCudaError;
    }
    return ctorch_standin_enqueue((CUstream)stream, run_collective, free, queued) == CUDA_SUCCESS
               ? ncclSuccess
               : ncclUnhandledCudaError;
}

ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream)
{
    collective c = {.kind = ALL_REDUCE, .comm = comm, .count = count, .type = type, .op = op};
    return start("ncclAllReduce", c, send, false, recv, false, stream);
}

ncclResult_t ncclBroadcast(const void *send, void *recv, size_t count, ncclDataType_t type, int root,
                           ncclComm_t comm, cudaStream_t stream)
{
    if (comm && (root < 0 || root >= comm->ranks)) return ncclInvalidArgument;
    collective c = {.kind = BROADCAST, .comm = comm, .count = count, .type = type, .root = root};
    /* sendbuff is read on the root only. */
    bool is_root = comm && comm->rank == root;
    return start("ncclBroadcast", c, is_root ? send : NULL, false, recv, false, stream);
}

ncclResult_t ncclAllGather(const void *send, void *recv, size_t count, ncclDataType_t type, ncclComm_t comm,
                           cudaStream_t stream)
{
    collective c = {.kind = ALL_GATHER, .comm = comm, .count = count, .type = type};
    return start("ncclAllGather", c, send, false, recv, true, stream);
}

ncclResult_t ncclReduceScatter(const void *send, void *recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
                               ncclComm_t comm, cudaStream_t stream)
{
    collective c = {.kind = REDUCE_SCATTER, .comm = comm, .count = count, .type = type, .op = op};
    return start("ncclReduceScatter", c, send, true, recv, false, stream);
}
