/* Where the OpenBLAS in use has cblas_sbgemm / cblas_shgemm, bfloat16 / float16 products on the
 * CPU go to them (one call per matrix of a batch, float32 C rounded once, beta C added for
 * Linear's bias), and the results are the same as the float32 path's. Debian's OpenBLAS has
 * neither, so this program defines both itself, as an OpenBLAS built with BUILD_BFLOAT16 and
 * BUILD_HFLOAT16 would (float32 copies and cblas_sgemm, with the same signature), and exports
 * them (ENABLE_EXPORTS): ctorch looks them up at run time and finds these. Each call is counted. */
#include <cblas.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "ctorch.h"
#include "backend/cpu/cpu_engine_choice.h"
#include "ops/nn_internal.h"
#include "support/tensors.h"

void cblas_shgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE trans_a, enum CBLAS_TRANSPOSE trans_b,
                  blasint m, blasint n, blasint k, float alpha, const uint16_t *a, blasint lda,
                  const uint16_t *b, blasint ldb, float beta, float *c, blasint ldc);

static int calls[2]; /* sbgemm, shgemm */
static float last_beta;

/* A row-major rows x cols 16-bit matrix (leading dim ld) as float32 (leading dim ld). */
static float *widen(const uint16_t *from, long rows, long cols, long ld, bool bf16)
{
    float *to = malloc(sizeof(float) * (size_t)(ld * (rows - 1) + cols));
    for (long i = 0; i < rows; i++)
        for (long j = 0; j < cols; j++)
            to[i * ld + j] = bf16 ? ct_bf16_to_float(from[i * ld + j]) : ct_f16_to_float(from[i * ld + j]);
    return to;
}

static void half_gemm(bool bf16, enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE trans_a,
                      enum CBLAS_TRANSPOSE trans_b, blasint m, blasint n, blasint k, float alpha,
                      const uint16_t *a, blasint lda, const uint16_t *b, blasint ldb, float beta,
                      float *c, blasint ldc)
{
    assert_int_equal(order, CblasRowMajor); /* all ctorch asks for */
    calls[bf16 ? 0 : 1]++;
    last_beta = beta;
    bool ta = trans_a != CblasNoTrans, tb = trans_b != CblasNoTrans;
    float *a32 = widen(a, ta ? k : m, ta ? m : k, lda, bf16);
    float *b32 = widen(b, tb ? n : k, tb ? k : n, ldb, bf16);
    cblas_sgemm(order, trans_a, trans_b, m, n, k, alpha, a32, lda, b32, ldb, beta, c, ldc);
    free(b32);
    free(a32);
}

void cblas_sbgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE trans_a, enum CBLAS_TRANSPOSE trans_b,
                  blasint m, blasint n, blasint k, float alpha, const bfloat16 *a, blasint lda,
                  const bfloat16 *b, blasint ldb, float beta, float *c, blasint ldc)
{
    half_gemm(true, order, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void cblas_shgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE trans_a, enum CBLAS_TRANSPOSE trans_b,
                  blasint m, blasint n, blasint k, float alpha, const uint16_t *a, blasint lda,
                  const uint16_t *b, blasint ldb, float beta, float *c, blasint ldc)
{
    half_gemm(false, order, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

/* Small integers of dtype on the CPU. */
static ct_tensor *integers(const int64_t *shape, int ndim, ct_dtype dtype, int seed)
{
    return ct_test_small_integers(shape, ndim, dtype, seed, CT_DEVICE_CPU);
}

/* t (16-bit) equals the float32 path's result `want`, rounded to t's dtype. */
static void expect_rounded(const ct_tensor *t, const ct_tensor *want)
{
    assert_non_null(t);
    assert_non_null(want);
    ct_tensor *rounded = ct_to_dtype(want, ct_tensor_dtype(t));
    size_t n = (size_t)ct_numel(t);
    float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    assert_int_equal(ct_tensor_to_array(ct_to_dtype(t, CT_F32), a, n * sizeof *a), CT_OK);
    assert_int_equal(ct_tensor_to_array(ct_to_dtype(rounded, CT_F32), b, n * sizeof *b), CT_OK);
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i]) fail_msg("element %zu is %g, the float32 product rounded is %g", i, (double)a[i], (double)b[i]);
    free(b);
    free(a);
}

static void test_half_products_go_to_openblas_sbgemm_and_shgemm(void **state)
{
    (void)state;
    static const ct_dtype dtypes[2] = {CT_BF16, CT_F16};
    for (int d = 0; d < 2; d++) {
        ct_scope_push();
        ct_dtype dtype = dtypes[d];
        calls[d] = 0;
        ct_tensor *a = integers((int64_t[]){3, 6, 40}, 3, dtype, 1);
        ct_tensor *b = integers((int64_t[]){40, 5}, 2, dtype, 2);
        expect_rounded(ct_matmul(a, b), ct_matmul(ct_to_dtype(a, CT_F32), ct_to_dtype(b, CT_F32)));
        assert_int_equal(calls[d], 3); /* one per matrix of the batch */
        assert_true(last_beta == 0.0f);

        /* Linear: the bias copied into C, then C = x W^T + 1 * C (W read transposed) */
        ct_tensor *x = integers((int64_t[]){7, 40}, 2, dtype, 3);
        ct_tensor *w = integers((int64_t[]){5, 40}, 2, dtype, 4);
        ct_tensor *bias = integers((int64_t[]){5}, 1, dtype, 5);
        ct_tensor *x32 = ct_to_dtype(x, CT_F32), *w32 = ct_to_dtype(w, CT_F32), *b32 = ct_to_dtype(bias, CT_F32);
        /* ct_linear_apply is internal: its results enter no scope, so they are released here */
        ct_tensor *y = ct_linear_apply("test", x, w, bias), *y32 = ct_linear_apply("test", x32, w32, b32);
        expect_rounded(y, y32);
        ct_release(y), ct_release(y32);
        assert_int_equal(calls[d], 4);
        assert_true(last_beta == 1.0f);
        ct_scope_pop();
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_half_products_go_to_openblas_sbgemm_and_shgemm),
    };
    /* OpenBLAS's 16-bit products are what this shows: not oneDNN's, which a CPU with AVX512-BF16
     * or AMX would run instead. */
    ct_cpu_engine_set_for_testing("openblas");
    return cmocka_run_group_tests(tests, NULL, NULL);
}
