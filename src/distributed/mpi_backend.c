/* The MPI backend: collectives on contiguous host buffers, mapped onto MPI's own calls (blocking:
 * every rank has arrived by now, and a transfer that outlasts the time limit is ended by the
 * watchdog, transfer_watchdog.c). MPI counts are ints, so all-reduce and broadcast go in pieces
 * of at most 2^30 elements; AVG is a sum followed by a division, as MPI has no average. */
#include <limits.h>

#include "distributed/dist_internal.h"

#define PIECE ((int64_t)1 << 30)

static MPI_Datatype datatype_of(ct_dtype dtype)
{
    switch (dtype) {
    case CT_F32: return MPI_FLOAT;
    case CT_F64: return MPI_DOUBLE;
    case CT_I32: return MPI_INT32_T;
    case CT_I64: return MPI_INT64_T;
    case CT_U8: return MPI_UINT8_T;
    case CT_BOOL: return MPI_UINT8_T; /* one byte, 0 or 1: max is "or", min is "and" */
    default: return MPI_DATATYPE_NULL;
    }
}

static MPI_Op op_of(ct_reduce_op op, ct_dtype dtype)
{
    switch (op) {
    case CT_REDUCE_SUM: return dtype == CT_BOOL ? MPI_MAX : MPI_SUM;
    case CT_REDUCE_AVG: return MPI_SUM;
    case CT_REDUCE_MAX: return MPI_MAX;
    case CT_REDUCE_MIN: return MPI_MIN;
    }
    return MPI_OP_NULL;
}

/* data[i] /= divisor: C's division, so integers round toward zero (NCCL's ncclAvg). */
#define DIVIDE(type)                                                                               \
    do {                                                                                           \
        type *x = data;                                                                            \
        _Pragma("omp parallel for simd if (count > 65536)")                                        \
        for (int64_t i = 0; i < count; i++) x[i] = (type)(x[i] / (type)divisor);                   \
    } while (0)

static void divide(void *data, int64_t count, ct_dtype dtype, int divisor)
{
    switch (dtype) {
    case CT_F32: DIVIDE(float); break;
    case CT_F64: DIVIDE(double); break;
    case CT_I32: DIVIDE(int32_t); break;
    case CT_I64: DIVIDE(int64_t); break;
    case CT_U8: DIVIDE(uint8_t); break;
    default: break; /* bool has no average: the front end refuses it */
    }
}

static int world_size(void) { return ct_dist_group_state.world_size; }
static MPI_Comm comm(void) { return ct_dist_group_state.comm; }
static void transfer_begin(void) { ct_dist_transfer_begin(&ct_dist_group_state); }

static ct_status mpi_all_reduce(void *data, int64_t count, ct_dtype dtype, ct_reduce_op op)
{
    size_t element = ct_dtype_size(dtype);
    for (int64_t done = 0; done < count; done += PIECE) {
        int piece = (int)(count - done < PIECE ? count - done : PIECE);
        transfer_begin();
        int code = MPI_Allreduce(MPI_IN_PLACE, (char *)data + (size_t)done * element, piece,
                                 datatype_of(dtype), op_of(op, dtype), comm());
        ct_dist_transfer_end();
        if (code != MPI_SUCCESS) return ct_dist_mpi_fail("ct_dist_all_reduce", "MPI_Allreduce", code);
    }
    if (op == CT_REDUCE_AVG) divide(data, count, dtype, world_size());
    return CT_OK;
}

static ct_status mpi_broadcast(void *data, int64_t count, ct_dtype dtype, int root)
{
    size_t element = ct_dtype_size(dtype);
    for (int64_t done = 0; done < count; done += PIECE) {
        int piece = (int)(count - done < PIECE ? count - done : PIECE);
        transfer_begin();
        int code = MPI_Bcast((char *)data + (size_t)done * element, piece, datatype_of(dtype), root, comm());
        ct_dist_transfer_end();
        if (code != MPI_SUCCESS) return ct_dist_mpi_fail("ct_dist_broadcast", "MPI_Bcast", code);
    }
    return CT_OK;
}

static ct_status mpi_all_gather(const void *send, void *recv, int64_t count, ct_dtype dtype)
{
    MPI_Datatype type = datatype_of(dtype);
    transfer_begin();
    int code = MPI_Allgather(send ? send : MPI_IN_PLACE, send ? (int)count : 0, type, recv, (int)count,
                             type, comm());
    ct_dist_transfer_end();
    return code == MPI_SUCCESS ? CT_OK : ct_dist_mpi_fail("ct_dist_all_gather", "MPI_Allgather", code);
}

static ct_status mpi_reduce_scatter(const void *send, void *recv, int64_t count, ct_dtype dtype,
                                    ct_reduce_op op)
{
    transfer_begin();
    int code = MPI_Reduce_scatter_block(send ? send : MPI_IN_PLACE, recv, (int)count, datatype_of(dtype),
                                        op_of(op, dtype), comm());
    ct_dist_transfer_end();
    if (code != MPI_SUCCESS) return ct_dist_mpi_fail("ct_dist_reduce_scatter", "MPI_Reduce_scatter_block", code);
    if (op == CT_REDUCE_AVG) divide(recv, count, dtype, world_size());
    return CT_OK;
}

const ct_dist_backend ct_dist_mpi_backend = {
    .name = "mpi",
    .max_block_count = INT_MAX,
    .all_reduce = mpi_all_reduce,
    .broadcast = mpi_broadcast,
    .all_gather = mpi_all_gather,
    .reduce_scatter = mpi_reduce_scatter,
};
