/* Matrix products on the CPU through OpenBLAS (cblas), one call per matrix of a batch. */
#include <cblas.h>

#include "backend/cpu/cpu_backend.h"
#include "core/core_internal.h"

/* OpenBLAS runs a product of fewer multiply-adds than this on the calling thread (its
 * threshold is 65536 * GEMM_MULTITHREAD_THRESHOLD(4)); a batch of such small matrices is spread
 * over OpenMP threads instead, one matrix per call, once there is enough work to pay for waking
 * the team. */
#define CT_GEMM_SINGLE_THREAD_WORK (65536L * 4)
#define CT_GEMM_PARALLEL_BATCH_MIN_WORK (1L << 17)

static void gemm_one(const ct_gemm_args *g, long i)
{
    CBLAS_TRANSPOSE ta = g->trans_a ? CblasTrans : CblasNoTrans;
    CBLAS_TRANSPOSE tb = g->trans_b ? CblasTrans : CblasNoTrans;
    if (g->dtype == CT_F32) {
        const float *a = (const float *)g->a + g->a_offset + i * g->a_batch_stride;
        const float *b = (const float *)g->b + g->b_offset + i * g->b_batch_stride;
        float *c = (float *)g->c + g->c_offset + i * g->c_batch_stride;
        cblas_sgemm(CblasRowMajor, ta, tb, (int)g->m, (int)g->n, (int)g->k, (float)g->alpha, a,
                    (int)g->lda, b, (int)g->ldb, (float)g->beta, c, (int)g->ldc);
    } else {
        const double *a = (const double *)g->a + g->a_offset + i * g->a_batch_stride;
        const double *b = (const double *)g->b + g->b_offset + i * g->b_batch_stride;
        double *c = (double *)g->c + g->c_offset + i * g->c_batch_stride;
        cblas_dgemm(CblasRowMajor, ta, tb, (int)g->m, (int)g->n, (int)g->k, g->alpha, a,
                    (int)g->lda, b, (int)g->ldb, g->beta, c, (int)g->ldc);
    }
}

ct_status ct_cpu_gemm(int index, const ct_gemm_args *g)
{
    (void)index;
    if (g->dtype != CT_F32 && g->dtype != CT_F64)
        return ct_error(CT_ERR_DTYPE, "cpu gemm: dtype %s has no BLAS routine",
                        ct_dtype_name(g->dtype));
    long work = g->m * g->n * (g->k > 0 ? g->k : 1);
    /* Parallel only when every call writes its own C (a batch stride of 0 would race). */
    if (g->batch > 1 && g->c_batch_stride != 0 && work < CT_GEMM_SINGLE_THREAD_WORK &&
        g->batch * work >= CT_GEMM_PARALLEL_BATCH_MIN_WORK) {
#pragma omp parallel for schedule(static)
        for (long i = 0; i < g->batch; i++) gemm_one(g, i);
    } else {
        for (long i = 0; i < g->batch; i++) gemm_one(g, i);
    }
    return CT_OK;
}
