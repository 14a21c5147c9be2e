/* float16 and bfloat16 products on the CPU in OpenBLAS's cblas_shgemm / cblas_sbgemm (16-bit A
 * and B, float32 accumulation and C), where the OpenBLAS in use has them. They are looked up at
 * run time: Debian's OpenBLAS 0.3.21 declares cblas_sbgemm in its header but is built without it
 * (BUILD_BFLOAT16 off), and cblas_shgemm came later still (BUILD_HFLOAT16), so the same binary uses
 * them once an OpenBLAS that has them is installed. Without them the ops layer multiplies in
 * float32 (src/ops/gemm_any.c). The float32 C is rounded once to the 16-bit dtype. */
#include <cblas.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_blas_threads.h"
#include "backend/cpu/cpu_blas_workspace.h"
#include "backend/cpu/cpu_engine_choice.h"
#include "core/core_internal.h"

/* cblas_sbgemm's and cblas_shgemm's signature, with the 16-bit elements as their bits. */
typedef void (*half_gemm_fn)(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE trans_a,
                             enum CBLAS_TRANSPOSE trans_b, blasint m, blasint n, blasint k, float alpha,
                             const uint16_t *a, blasint lda, const uint16_t *b, blasint ldb,
                             float beta, float *c, blasint ldc);

static half_gemm_fn sbgemm, shgemm;

/* The process's definition first (the OpenBLAS linked in, or a program's own), then the one in
 * the library that defines the cblas_sgemm ctorch calls (in case it was loaded locally). */
static void *find(const char *name)
{
    void *found = dlsym(RTLD_DEFAULT, name);
    Dl_info info;
    if (found || !dladdr((void *)cblas_sgemm, &info) || !info.dli_fname) return found;
    void *library = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
    if (!library) return NULL;
    found = dlsym(library, name);
    dlclose(library);
    return found;
}

static void look_up(void)
{
    *(void **)&sbgemm = find("cblas_sbgemm");
    *(void **)&shgemm = find("cblas_shgemm");
}

static half_gemm_fn half_gemm(ct_dtype dtype)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, look_up);
    return dtype == CT_BF16 ? sbgemm : dtype == CT_F16 ? shgemm : NULL;
}

bool ct_cpu_gemm_takes(int index, ct_dtype dtype)
{
    (void)index;
    if (ct_cpu_onednn_multiplies(dtype)) return true;
    return dtype == CT_F32 || dtype == CT_F64 || half_gemm(dtype) != NULL;
}

static float to_float(uint16_t bits, ct_dtype dtype)
{
    return dtype == CT_BF16 ? ct_bf16_to_float(bits) : ct_f16_to_float(bits);
}

static uint16_t from_float(float value, ct_dtype dtype)
{
    return dtype == CT_BF16 ? ct_float_to_bf16(value) : ct_float_to_f16(value);
}

ct_status ct_cpu_half_gemm(const ct_gemm_args *g)
{
    half_gemm_fn gemm = half_gemm(g->dtype);
    if (!gemm)
        return ct_error(CT_ERR_DTYPE, "cpu gemm: the OpenBLAS in use has no cblas_%s for %s",
                        g->dtype == CT_BF16 ? "sbgemm" : "shgemm", ct_dtype_name(g->dtype));
    float *c32 = malloc(sizeof(float) * (size_t)g->m * (size_t)g->n);
    if (!c32)
        return ct_error(CT_ERR_OUT_OF_MEMORY, "cpu gemm: out of memory for the float32 result of a "
                        "%ld x %ld %s product (%zu bytes)", g->m, g->n, ct_dtype_name(g->dtype),
                        sizeof(float) * (size_t)g->m * (size_t)g->n);
    ct_status status = ct_cpu_blas_workspace_enter();
    if (status == CT_OK) ct_cpu_blas_threads_for((int64_t)g->m * g->n * g->k);
    CBLAS_TRANSPOSE ta = g->trans_a ? CblasTrans : CblasNoTrans;
    CBLAS_TRANSPOSE tb = g->trans_b ? CblasTrans : CblasNoTrans;
    for (long i = 0; i < g->batch && status == CT_OK; i++) {
        const uint16_t *a = (const uint16_t *)g->a + g->a_offset + i * g->a_batch_stride;
        const uint16_t *b = (const uint16_t *)g->b + g->b_offset + i * g->b_batch_stride;
        uint16_t *c = (uint16_t *)g->c + g->c_offset + i * g->c_batch_stride;
        if (g->beta != 0.0)
#pragma omp parallel for if (g->m * g->n >= 65536)
            for (long r = 0; r < g->m; r++)
                for (long j = 0; j < g->n; j++) c32[r * g->n + j] = to_float(c[r * g->ldc + j], g->dtype);
        gemm(CblasRowMajor, ta, tb, (blasint)g->m, (blasint)g->n, (blasint)g->k, (float)g->alpha, a,
             (blasint)g->lda, b, (blasint)g->ldb, (float)g->beta, c32, (blasint)g->n);
#pragma omp parallel for if (g->m * g->n >= 65536)
        for (long r = 0; r < g->m; r++)
            for (long j = 0; j < g->n; j++) c[r * g->ldc + j] = from_float(c32[r * g->n + j], g->dtype);
    }
    if (status == CT_OK) ct_cpu_blas_workspace_leave();
    free(c32);
    return status;
}
