/* Matrix products on the CPU: to oneDNN or OpenBLAS as cpu_engine_choice.c decides; through
 * OpenBLAS (cblas), one call per matrix of a batch (float16 and bfloat16 in cpu_blas_half.c). */
#include <cblas.h>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_blas_threads.h"
#include "backend/cpu/cpu_blas_workspace.h"
#include "backend/cpu/cpu_engine_choice.h"
#include "core/core_internal.h"

ct_status ct_cpu_gemm(int index, void *stream, const ct_gemm_args *g)
{
    (void)index;
    (void)stream;
    CBLAS_TRANSPOSE ta = g->trans_a ? CblasTrans : CblasNoTrans;
    CBLAS_TRANSPOSE tb = g->trans_b ? CblasTrans : CblasNoTrans;
#ifdef CTORCH_HAVE_ONEDNN
    ct_cpu_engine engine = ct_cpu_gemm_engine(g);
    if (engine == CT_CPU_ENGINE_ONEDNN) return ct_onednn_gemm(g);
    if (engine == CT_CPU_ENGINE_ONEDNN_SGEMM) return ct_onednn_sgemm(g);
#endif
    if (g->dtype == CT_F16 || g->dtype == CT_BF16) return ct_cpu_half_gemm(g);
    if (g->dtype != CT_F32 && g->dtype != CT_F64)
        return ct_error(CT_ERR_DTYPE, "cpu gemm: dtype %s has no BLAS routine", ct_dtype_name(g->dtype));
    /* OpenBLAS hangs when it cannot map its work buffer: fail before calling it instead. */
    ct_status status = ct_cpu_blas_workspace_enter();
    if (status != CT_OK) return status;
    ct_cpu_blas_threads_for((int64_t)g->m * g->n * g->k);
    for (long i = 0; i < g->batch; i++) {
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
    ct_cpu_blas_workspace_leave();
    return CT_OK;
}
