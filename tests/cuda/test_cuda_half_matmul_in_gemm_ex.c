/* float16 and bfloat16 products on cuda:0 go to cublasGemmEx (one matrix) and
 * cublasGemmStridedBatchedEx (a batch) with 16-bit A, B and C and CUBLAS_COMPUTE_32F, in the
 * default math whatever the float32 precision allows (TF32 is a float32 matter), and give the
 * CPU's values: matmul, a batched matmul; and a Linear module's forward and backward go there too. Seen through
 * the stand-in cuBLAS's gemm log, which records each product's call, data type and compute type;
 * the stand-in multiplies in float32 and rounds once, as a GPU's tensor cores do. The operands
 * hold small integers, whose products and sums every path computes exactly. */
#include <string.h>

#include "standin_test.h"
#include "support/tensors.h"

#include <cublas_api.h>

enum { LOG = CTORCH_STANDIN_GEMM_LOG_CAPACITY };

static void clear_log(void)
{
    void *clear = standin_cublas_function("ctorch_standin_cublas_gemm_log_clear");
    ((ctorch_standin_cublas_gemm_log_clear_fn)clear)();
}

/* Every product logged since the last clear was a GemmEx call (batched when `batched` is 1, any
 * when -1) in `type`, accumulated in float32, in the default math; at least one was logged. */
static void expect_gemm_ex(cudaDataType type, int batched, const char *what)
{
    assert_int_equal(ct_synchronize(CUDA0), CT_OK);
    static ctorch_standin_gemm log[LOG];
    void *read = standin_cublas_function("ctorch_standin_cublas_gemm_log");
    size_t held = ((ctorch_standin_cublas_gemm_log_fn)read)(log, LOG);
    if (held == 0) fail_msg("%s: no product was logged", what);
    for (size_t i = 0; i < held; i++) {
        bool strided = strcmp(log[i].call, "cublasGemmStridedBatchedEx") == 0;
        bool single = strcmp(log[i].call, "cublasGemmEx") == 0;
        if (!(strided || single) || (batched == 1 && !strided) || (batched == 0 && !single) ||
            log[i].data_type != (int)type || log[i].compute_type != CUBLAS_COMPUTE_32F ||
            log[i].math_mode != CUBLAS_DEFAULT_MATH)
            fail_msg("%s: product %zu of %zu was %s, data type %d (want %d), compute type %d (want "
                     "%d), math mode %d (want the default)", what, i, held, log[i].call,
                     log[i].data_type, (int)type, log[i].compute_type, CUBLAS_COMPUTE_32F,
                     log[i].math_mode);
    }
    clear_log();
}

/* t (any device, 16-bit) equals u (the CPU's), element by element. */
static void expect_equal(const ct_tensor *t, const ct_tensor *u, const char *what)
{
    assert_non_null(t);
    assert_non_null(u);
    assert_int_equal(ct_tensor_dtype(t), ct_tensor_dtype(u));
    size_t n = (size_t)ct_numel(u);
    float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    read_floats(ct_to_dtype(ct_to(t, CT_DEVICE_CPU), CT_F32), a, n);
    read_floats(ct_to_dtype(u, CT_F32), b, n);
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i]) fail_msg("%s: element %zu is %g on cuda:0, %g on the CPU", what, i, (double)a[i], (double)b[i]);
    free(b);
    free(a);
}

static void products_of(ct_dtype dtype, cudaDataType type)
{
    ct_scope_push();
    const char *name = ct_dtype_name(dtype);
    ct_tensor *a = ct_test_small_integers((int64_t[]){33, 17}, 2, dtype, 1, CT_DEVICE_CPU);
    ct_tensor *b = ct_test_small_integers((int64_t[]){17, 9}, 2, dtype, 2, CT_DEVICE_CPU);
    expect_equal(ct_matmul(ct_to(a, CUDA0), ct_to(b, CUDA0)), ct_matmul(a, b), name);
    expect_gemm_ex(type, 0, "a 16-bit matmul");

    ct_tensor *batch_a = ct_test_small_integers((int64_t[]){4, 8, 5}, 3, dtype, 3, CT_DEVICE_CPU);
    ct_tensor *batch_b = ct_test_small_integers((int64_t[]){4, 5, 6}, 3, dtype, 4, CT_DEVICE_CPU);
    expect_equal(ct_matmul(ct_to(batch_a, CUDA0), ct_to(batch_b, CUDA0)), ct_matmul(batch_a, batch_b), name);
    expect_gemm_ex(type, 1, "a batched 16-bit matmul");

    /* Linear forward with a bias (added in the product, beta 1), and backward without one (the
     * bias's gradient is a sum, another family's kernel) */
    ct_tensor *x = ct_test_small_integers((int64_t[]){6, 12}, 2, dtype, 5, CUDA0);
    for (int with_bias = 1; with_bias >= 0; with_bias--) {
        ct_module *linear = ct_linear(12, 7, with_bias);
        assert_int_equal(ct_module_to_dtype(linear, dtype), CT_OK);
        assert_int_equal(ct_module_to(linear, CUDA0), CT_OK);
        assert_int_equal(ct_requires_grad_(x, !with_bias), CT_OK);
        ct_tensor *y = ct_module_forward(linear, x);
        assert_non_null(y);
        assert_int_equal(ct_tensor_dtype(y), dtype);
        if (!with_bias) {
            ct_status backward = ct_backward_with(y, ct_test_small_integers((int64_t[]){6, 7}, 2, dtype, 6, CUDA0), false);
            if (backward != CT_OK) fail_msg("%s Linear backward: %s", name, ct_last_error_message());
            assert_int_equal(ct_tensor_dtype(ct_grad(x)), dtype);
            assert_int_equal(ct_tensor_dtype(ct_grad(ct_module_parameter(linear, "weight"))), dtype);
        }
        expect_gemm_ex(type, 0, with_bias ? "a 16-bit Linear forward with a bias"
                                          : "a 16-bit Linear forward and backward");
        ct_module_release(linear);
    }
    ct_scope_pop();
}

static void test_half_products_run_in_gemm_ex(void **state)
{
    (void)state;
    REQUIRE_CUDA_DEVICES(1);
    clear_log();
    products_of(CT_F16, CUDA_R_16F);
    products_of(CT_BF16, CUDA_R_16BF);
    /* TF32 allowed for float32 leaves 16-bit products in the default math */
    assert_int_equal(ct_set_float32_matmul_precision("high"), CT_OK);
    products_of(CT_BF16, CUDA_R_16BF);
    assert_int_equal(ct_set_float32_matmul_precision("highest"), CT_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_half_products_run_in_gemm_ex),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
