/* Matrix products on OpenCL through CLBlast's C API, queued on a stream's queue:
 * one strided-batched call for a batch at constant strides, single calls otherwise. float16 runs
 * in CLBlast's Hgemm on a device with cl_khr_fp16 (elsewhere, and for bfloat16, which CLBlast
 * does not have, the ops layer multiplies in float32: src/ops/gemm_any.c). CLBlast
 * compiles its kernels on its first call per device and process (seconds with a cold driver
 * cache, a tenth of a second with a warm one).
 *
 * One CLBlast call at a time in the process: CLBlast 1.5 (Debian 12 has 1.5.3) corrupts its
 * caches when threads call it at once (CNugteren/CLBlast#486, fixed upstream in 2023), which
 * DataParallel's threads, one per device, did on their first products (a crash in about 1 run in
 * 20). A call only queues work, so holding the lock costs little once the kernels are built. */
#include <pthread.h>
#include <stdio.h>

#include "backend/opencl/opencl_internal.h" /* before clblast_c.h: it sets the OpenCL target */
#include <clblast_c.h>
#include "core/core_internal.h"

/* The CLBlast-specific codes; the others are OpenCL status codes. */
static const char *clblast_status_name(CLBlastStatusCode status)
{
    switch (status) {
    case CLBlastNotImplemented: return "CLBlastNotImplemented";
    case CLBlastInvalidMatrixA: return "CLBlastInvalidMatrixA";
    case CLBlastInvalidMatrixB: return "CLBlastInvalidMatrixB";
    case CLBlastInvalidMatrixC: return "CLBlastInvalidMatrixC";
    case CLBlastInvalidDimension: return "CLBlastInvalidDimension";
    case CLBlastInvalidLeadDimA: return "CLBlastInvalidLeadDimA";
    case CLBlastInvalidLeadDimB: return "CLBlastInvalidLeadDimB";
    case CLBlastInvalidLeadDimC: return "CLBlastInvalidLeadDimC";
    case CLBlastInsufficientMemoryA: return "CLBlastInsufficientMemoryA";
    case CLBlastInsufficientMemoryB: return "CLBlastInsufficientMemoryB";
    case CLBlastInsufficientMemoryC: return "CLBlastInsufficientMemoryC";
    case CLBlastInsufficientMemoryTemp: return "CLBlastInsufficientMemoryTemp";
    case CLBlastInvalidBatchCount: return "CLBlastInvalidBatchCount";
    case CLBlastInvalidLocalMemUsage: return "CLBlastInvalidLocalMemUsage";
    case CLBlastNoDoublePrecision: return "CLBlastNoDoublePrecision";
    case CLBlastDatabaseError: return "CLBlastDatabaseError";
    case CLBlastUnknownError: return "CLBlastUnknownError";
    case CLBlastUnexpectedError: return "CLBlastUnexpectedError";
    default: return ct_opencl_status_name((cl_int)status);
    }
}

/* One CLBlast call: `count` matrices from matrix `first` of the batch. */
static CLBlastStatusCode gemm_call(cl_command_queue *queue, const ct_gemm_args *g, long first,
                                   long count)
{
    CLBlastTranspose ta = g->trans_a ? CLBlastTransposeYes : CLBlastTransposeNo;
    CLBlastTranspose tb = g->trans_b ? CLBlastTransposeYes : CLBlastTransposeNo;
    size_t a_offset = (size_t)(g->a_offset + first * g->a_batch_stride);
    size_t b_offset = (size_t)(g->b_offset + first * g->b_batch_stride);
    size_t c_offset = (size_t)(g->c_offset + first * g->c_batch_stride);
    size_t m = (size_t)g->m, n = (size_t)g->n, k = (size_t)g->k;
    cl_mem a = (cl_mem)g->a, b = (cl_mem)g->b, c = (cl_mem)g->c;
    if (g->dtype == CT_F16) {
        cl_half alpha = ct_float_to_f16((float)g->alpha), beta = ct_float_to_f16((float)g->beta);
        if (count == 1)
            return CLBlastHgemm(CLBlastLayoutRowMajor, ta, tb, m, n, k, alpha, a, a_offset,
                                (size_t)g->lda, b, b_offset, (size_t)g->ldb, beta, c, c_offset,
                                (size_t)g->ldc, queue, NULL);
        return CLBlastHgemmStridedBatched(CLBlastLayoutRowMajor, ta, tb, m, n, k, alpha, a, a_offset,
                                          (size_t)g->lda, (size_t)g->a_batch_stride, b, b_offset,
                                          (size_t)g->ldb, (size_t)g->b_batch_stride, beta, c,
                                          c_offset, (size_t)g->ldc, (size_t)g->c_batch_stride,
                                          (size_t)count, queue, NULL);
    }
    if (g->dtype == CT_F32 && count == 1)
        return CLBlastSgemm(CLBlastLayoutRowMajor, ta, tb, m, n, k, (float)g->alpha, a, a_offset,
                            (size_t)g->lda, b, b_offset, (size_t)g->ldb, (float)g->beta, c,
                            c_offset, (size_t)g->ldc, queue, NULL);
    if (g->dtype == CT_F32)
        return CLBlastSgemmStridedBatched(CLBlastLayoutRowMajor, ta, tb, m, n, k, (float)g->alpha,
                                          a, a_offset, (size_t)g->lda, (size_t)g->a_batch_stride,
                                          b, b_offset, (size_t)g->ldb, (size_t)g->b_batch_stride,
                                          (float)g->beta, c, c_offset, (size_t)g->ldc,
                                          (size_t)g->c_batch_stride, (size_t)count, queue, NULL);
    if (count == 1)
        return CLBlastDgemm(CLBlastLayoutRowMajor, ta, tb, m, n, k, g->alpha, a, a_offset,
                            (size_t)g->lda, b, b_offset, (size_t)g->ldb, g->beta, c, c_offset,
                            (size_t)g->ldc, queue, NULL);
    return CLBlastDgemmStridedBatched(CLBlastLayoutRowMajor, ta, tb, m, n, k, g->alpha, a, a_offset,
                                      (size_t)g->lda, (size_t)g->a_batch_stride, b, b_offset,
                                      (size_t)g->ldb, (size_t)g->b_batch_stride, g->beta, c,
                                      c_offset, (size_t)g->ldc, (size_t)g->c_batch_stride,
                                      (size_t)count, queue, NULL);
}

bool ct_opencl_gemm_takes(int index, ct_dtype dtype)
{
    return dtype == CT_F32 || dtype == CT_F64 ||
           (dtype == CT_F16 && ct_opencl_devices[index].has_fp16);
}

/* "Sgemm", "HgemmStridedBatched": the CLBlast routine of a call, for messages. */
static const char *routine_name(ct_dtype dtype, bool strided_batched)
{
    static const char *const names[2][3] = {{"Sgemm", "Dgemm", "Hgemm"},
                                            {"SgemmStridedBatched", "DgemmStridedBatched",
                                             "HgemmStridedBatched"}};
    return names[strided_batched][dtype == CT_F32 ? 0 : dtype == CT_F64 ? 1 : 2];
}

ct_status ct_opencl_gemm(int index, void *stream, const ct_gemm_args *g)
{
    if (!ct_opencl_gemm_takes(index, g->dtype))
        return ct_error(CT_ERR_DTYPE, "opencl:%d gemm: dtype %s has no CLBlast routine on %s%s",
                        index, ct_dtype_name(g->dtype), ct_opencl_devices[index].name,
                        g->dtype == CT_F16 ? " (it has no cl_khr_fp16)" : "");
    /* ct_backend_gemm has refused negative offsets and sizes above int, and skipped empty outputs */
    if (g->k <= 0) /* CLBlast refuses it; the ops layer fills an empty sum itself */
        return ct_error(CT_ERR_INVALID_ARGUMENT, "opencl gemm: k is %ld; an empty sum has no "
                        "product to compute", g->k);
    cl_command_queue queue = ct_opencl_queue(index, stream);
    /* Batch matrices that all write one C would race in a batched call: run them in turn. */
    bool batched = g->batch == 1 || g->c_batch_stride != 0;
    long per_call = batched ? g->batch : 1;
    static pthread_mutex_t clblast_lock = PTHREAD_MUTEX_INITIALIZER;
    for (long first = 0; first < g->batch; first += per_call) {
        pthread_mutex_lock(&clblast_lock);
        CLBlastStatusCode status = gemm_call(&queue, g, first, per_call);
        pthread_mutex_unlock(&clblast_lock);
        if (status != CLBlastSuccess)
            return ct_error(CT_ERR_BACKEND, "opencl:%d: CLBlast %s (%ld x %ld x %ld, batch %ld) "
                            "failed: %s (%d)", index,
                            routine_name(g->dtype, batched && per_call > 1),
                            g->m, g->n, g->k, g->batch, clblast_status_name(status), (int)status);
    }
    /* CLBlast's kernels compile on paths of their own: each dtype's first product on a device */
    static atomic_bool first_gemm_waited[CT_OPENCL_MAX_DEVICES][CT_DTYPE_COUNT];
    ct_opencl_guard_exit(queue, &first_gemm_waited[index][g->dtype]);
    return CT_OK;
}
