/* float32 products on cuda:0 run in cuBLAS's TF32 math exactly when
 * ct_set_float32_matmul_precision allows it ("high", "medium"; CTORCH_ALLOW_TF32=1 at start),
 * and in the default math otherwise; float64 never. Seen through the stand-in cuBLAS's gemm log,
 * which records the handle's math mode at each product: matmul (single and strided-batched),
 * conv2d forward and backward, a Linear module's forward and backward; and a change between two
 * products takes effect at the next. The stand-in's arithmetic is exact float32 in every mode, so
 * the values still equal the CPU's; what a real GPU's TF32 rounds is not tested here.
 *
 * Run as `test_cuda_tf32_only_when_allowed environment` with CTORCH_ALLOW_TF32=1: the default is
 * "high" and products use TF32 from the first. */
#include <string.h>

#include "standin_test.h"

#include <cublas_api.h>

static const char *scenario = "";

enum { LOG = CTORCH_STANDIN_GEMM_LOG_CAPACITY };

static void clear_log(void)
{
    void *clear = standin_cublas_function("ctorch_standin_cublas_gemm_log_clear");
    ((ctorch_standin_cublas_gemm_log_clear_fn)clear)();
}

/* The products logged since the last clear; fails when there are none. */
static size_t read_log(ctorch_standin_gemm *out)
{
    void *read = standin_cublas_function("ctorch_standin_cublas_gemm_log");
    size_t held = ((ctorch_standin_cublas_gemm_log_fn)read)(out, LOG);
    assert_true(held > 0 && held <= LOG);
    return held;
}

/* Every product logged since the last clear was float32 (f64 0) or float64 (1) as asked, in TF32
 * math when tf32, else in the default math. */
static void expect_products(int f64, bool tf32, const char *what)
{
    assert_int_equal(ct_synchronize(CUDA0), CT_OK);
    static ctorch_standin_gemm log[LOG];
    size_t held = read_log(log);
    int want = tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH;
    for (size_t i = 0; i < held; i++)
        if (log[i].f64 != f64 || log[i].math_mode != want || log[i].device != 0)
            fail_msg("%s: product %zu of %zu (%s on device %d) ran in math mode %d, want %d (%s)",
                     what, i, held, log[i].call, log[i].device, log[i].math_mode, want,
                     tf32 ? "TF32" : "default");
    clear_log();
}

static ct_tensor *randn_on(const int64_t *shape, int ndim, ct_dtype dtype, uint64_t seed)
{
    ct_manual_seed(seed);
    ct_tensor *t = ct_randn(shape, ndim, dtype, CT_DEVICE_CPU);
    ct_tensor *on = ct_to(t, CUDA0);
    ct_release(t);
    assert_non_null(on);
    return on;
}

/* a @ b on cuda:0 equals the CPU's (the stand-in is exact float32 in every mode). */
static void matmul_equals_the_cpus(const int64_t *a_shape, const int64_t *b_shape, int ndim, ct_dtype dtype)
{
    ct_scope_push();
    ct_tensor *a = randn_on(a_shape, ndim, dtype, 1), *b = randn_on(b_shape, ndim, dtype, 2);
    ct_tensor *on_gpu = ct_to(ct_matmul(a, b), CT_DEVICE_CPU);
    ct_tensor *on_cpu = ct_matmul(ct_to(a, CT_DEVICE_CPU), ct_to(b, CT_DEVICE_CPU));
    assert_non_null(on_gpu);
    assert_non_null(on_cpu);
    ct_tensor *error = ct_max(ct_abs(ct_sub(on_gpu, on_cpu)), NULL, 0, false);
    double worst = 1;
    assert_int_equal(ct_item(error, &worst), CT_OK);
    assert_true(worst <= 1e-4);
    ct_scope_pop();
}

/* conv2d forward and backward, and a Linear module's, on cuda:0. */
static void conv2d_and_linear_forward_and_backward(void)
{
    ct_scope_push();
    ct_tensor *x = randn_on((int64_t[]){2, 3, 6, 6}, 4, CT_F32, 3);
    ct_tensor *w = randn_on((int64_t[]){4, 3, 3, 3}, 4, CT_F32, 4);
    assert_int_equal(ct_requires_grad_(x, true), CT_OK);
    assert_int_equal(ct_requires_grad_(w, true), CT_OK);
    ct_tensor *y = ct_conv2d(x, w, NULL, (int64_t[]){1, 1}, (int64_t[]){1, 1}, (int64_t[]){1, 1}, 1);
    assert_non_null(y);
    ct_module *linear = ct_linear(4 * 6 * 6, 5, true);
    assert_int_equal(ct_module_to(linear, CUDA0), CT_OK);
    ct_tensor *out = ct_module_forward(linear, ct_reshape(y, (int64_t[]){2, 4 * 6 * 6}, 2));
    assert_non_null(out);
    assert_int_equal(ct_backward(ct_sum(out, NULL, 0, false)), CT_OK);
    assert_non_null(ct_grad(w));
    ct_module_release(linear);
    ct_scope_pop();
}

static void test_products_use_tf32_exactly_when_allowed(void **state)
{
    (void)state;
    REQUIRE_CUDA_DEVICES(1);
    bool from_environment = strcmp(scenario, "environment") == 0;
    assert_string_equal(ct_get_float32_matmul_precision(), from_environment ? "high" : "highest");
    clear_log();

    /* the starting precision: the default math, or TF32 under CTORCH_ALLOW_TF32=1 */
    matmul_equals_the_cpus((int64_t[]){33, 17}, (int64_t[]){17, 9}, 2, CT_F32);
    expect_products(0, from_environment, "a float32 matmul at the starting precision");

    static const char *const allowing[] = {"high", "medium"};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(ct_set_float32_matmul_precision(allowing[i]), CT_OK);
        assert_string_equal(ct_get_float32_matmul_precision(), allowing[i]);
        matmul_equals_the_cpus((int64_t[]){33, 17}, (int64_t[]){17, 9}, 2, CT_F32);
        expect_products(0, true, "a float32 matmul allowed TF32");
        matmul_equals_the_cpus((int64_t[]){4, 8, 5}, (int64_t[]){4, 5, 6}, 3, CT_F32); /* strided batch */
        expect_products(0, true, "a batched float32 matmul allowed TF32");
        conv2d_and_linear_forward_and_backward();
        expect_products(0, true, "conv2d and Linear, forward and backward, allowed TF32");
        matmul_equals_the_cpus((int64_t[]){33, 17}, (int64_t[]){17, 9}, 2, CT_F64);
        expect_products(1, false, "a float64 matmul with TF32 allowed for float32");
    }

    /* back to "highest": the next product is exact float32 again */
    assert_int_equal(ct_set_float32_matmul_precision("highest"), CT_OK);
    matmul_equals_the_cpus((int64_t[]){4, 8, 5}, (int64_t[]){4, 5, 6}, 3, CT_F32);
    expect_products(0, false, "a batched float32 matmul after switching back to highest");
    conv2d_and_linear_forward_and_backward();
    expect_products(0, false, "conv2d and Linear after switching back to highest");
}

int main(int argc, char **argv)
{
    scenario = argc > 1 ? argv[1] : "";
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_products_use_tf32_exactly_when_allowed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
