/* float16 and bfloat16 products (matmul, batched, transposed, Linear's x W^T + b) accumulate in
 * float32 and round once to the 16-bit dtype, on the CPU and on every OpenCL device, as PyTorch's
 * do; and their gradients arrive in the 16-bit dtype. The operands hold dyadic values with few
 * bits, whose products and sums float32 holds exactly, so the expected result is the exact sum
 * rounded to nearest even: a product that accumulated in 16 bits loses the small terms (1 + 256
 * terms of 2^-9 stays 1 in bfloat16) and differs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "ctorch.h"
#include "ops/nn_internal.h"
#include "support/tensors.h"

enum { K = 257 };

static const ct_dtype half_dtypes[2] = {CT_F16, CT_BF16};

/* The devices at hand: the CPU, then every OpenCL device. */
static int devices_at_hand(ct_device *devices)
{
    int count = 0;
    devices[count++] = CT_DEVICE_CPU;
    int opencl = ct_is_available(CT_OPENCL) ? ct_device_count(CT_OPENCL) : 0;
    for (int i = 0; i < opencl && count < 4; i++) devices[count++] = (ct_device){CT_OPENCL, i};
    ct_clear_error();
    return count;
}

/* x rounded to the dtype (nearest even), as a float. */
static float rounded(double x, ct_dtype dtype)
{
    return dtype == CT_BF16 ? ct_bf16_to_float(ct_float_to_bf16((float)x))
                            : ct_f16_to_float(ct_float_to_f16((float)x));
}

/* A tensor of `values` (each exact in the dtype) of dtype on device. */
static ct_tensor *tensor_of(const float *values, const int64_t *shape, int ndim, ct_dtype dtype,
                            ct_device device)
{
    return ct_test_tensor_from(values, CT_F32, shape, ndim, dtype, device);
}

/* t's values as floats (malloc'ed), checking t's dtype. */
static float *floats_of(const ct_tensor *t, ct_dtype dtype)
{
    assert_non_null(t);
    assert_int_equal(ct_tensor_dtype(t), dtype);
    ct_tensor *f = ct_to_dtype(t, CT_F32);
    ct_tensor *cpu = ct_to(f, CT_DEVICE_CPU);
    float *v = malloc(sizeof(float) * (size_t)ct_numel(t));
    assert_int_equal(ct_tensor_to_array(cpu, v, sizeof(float) * (size_t)ct_numel(t)), CT_OK);
    ct_release(cpu);
    ct_release(f);
    return v;
}

/* Row i of A [rows, K]: a large first term, then small ones (multiples of the smallest step
 * the dtype loses when added to 1 in 16 bits: 2^-9 for bfloat16, 2^-12 for float16). */
static void fill_a(float *a, int rows, ct_dtype dtype)
{
    float small = dtype == CT_BF16 ? 0x1p-9f : 0x1p-12f;
    for (int i = 0; i < rows; i++)
        for (int k = 0; k < K; k++)
            a[i * K + k] = k == 0 ? (float)(1 + i) : (float)((k + i) % 5 - 1) * small;
}

/* B [K, cols] with small integers. */
static void fill_b(float *b, int cols)
{
    for (int k = 0; k < K; k++)
        for (int j = 0; j < cols; j++) b[k * cols + j] = (float)((k * 3 + j) % 4 + 1);
}

static void expect_product(const float *got, const float *a, const float *b, int rows, int cols,
                           ct_dtype dtype, const char *what)
{
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++) {
            double exact = 0;
            for (int k = 0; k < K; k++) exact += (double)a[i * K + k] * b[k * cols + j];
            float want = rounded(exact, dtype);
            if (got[i * cols + j] != want)
                fail_msg("%s (%s): [%d, %d] is %.9g, want %.9g (the exact %.12g rounded once)", what,
                         ct_dtype_name(dtype), i, j, (double)got[i * cols + j], (double)want, exact);
        }
}

static void test_half_products_accumulate_in_float32_and_round_once(void **state)
{
    (void)state;
    enum { ROWS = 5, COLS = 3 };
    ct_device devices[4];
    int device_count = devices_at_hand(devices);
    float a[ROWS * K], b[K * COLS], b_t[COLS * K];
    fill_b(b, COLS);
    for (int k = 0; k < K; k++)
        for (int j = 0; j < COLS; j++) b_t[j * K + k] = b[k * COLS + j];
    for (int d = 0; d < 2; d++) {
        ct_dtype dtype = half_dtypes[d];
        fill_a(a, ROWS, dtype);
        for (int v = 0; v < device_count; v++) {
            ct_scope_push();
            ct_tensor *at = tensor_of(a, (int64_t[]){ROWS, K}, 2, dtype, devices[v]);
            ct_tensor *bt = tensor_of(b, (int64_t[]){K, COLS}, 2, dtype, devices[v]);
            float *got = floats_of(ct_matmul(at, bt), dtype);
            expect_product(got, a, b, ROWS, COLS, dtype, "a @ b");
            free(got);

            /* b stored transposed (as Linear's weight): BLAS reads it with the transpose flag */
            ct_tensor *b_stored = tensor_of(b_t, (int64_t[]){COLS, K}, 2, dtype, devices[v]);
            got = floats_of(ct_matmul(at, ct_transpose(b_stored, 0, 1)), dtype);
            expect_product(got, a, b, ROWS, COLS, dtype, "a @ b^T stored");
            free(got);

            /* a batch of 3 (a strided-batched product) against one b */
            ct_tensor *batch = ct_stack((const ct_tensor *[]){at, at, at}, 3, 0);
            got = floats_of(ct_matmul(batch, bt), dtype);
            for (int i = 0; i < 3; i++) expect_product(got + i * ROWS * COLS, a, b, ROWS, COLS, dtype, "batch @ b");
            free(got);
            ct_scope_pop();
        }
    }
}

/* y = x W^T + b: the bias is added in float32 before the one rounding. */
static void test_half_linear_adds_the_bias_before_rounding(void **state)
{
    (void)state;
    enum { ROWS = 4, OUT = 3 };
    ct_device devices[4];
    int device_count = devices_at_hand(devices);
    float x[ROWS * K], w[OUT * K], w_t[K * OUT], bias[OUT];
    fill_b(w_t, OUT);
    for (int k = 0; k < K; k++)
        for (int j = 0; j < OUT; j++) w[j * K + k] = w_t[k * OUT + j];
    for (int d = 0; d < 2; d++) {
        ct_dtype dtype = half_dtypes[d];
        fill_a(x, ROWS, dtype);
        /* a bias that only the small terms' float32 sum carries past a 16-bit rounding */
        for (int j = 0; j < OUT; j++) bias[j] = (dtype == CT_BF16 ? 0x1p-9f : 0x1p-12f) * (float)(j + 1);
        for (int v = 0; v < device_count; v++) {
            ct_scope_push();
            ct_tensor *xt = tensor_of(x, (int64_t[]){ROWS, K}, 2, dtype, devices[v]);
            ct_tensor *wt = tensor_of(w, (int64_t[]){OUT, K}, 2, dtype, devices[v]);
            ct_tensor *bt = tensor_of(bias, (int64_t[]){OUT}, 1, dtype, devices[v]);
            /* ct_linear_apply is internal: its result enters no scope, so it is released here */
            ct_tensor *y = ct_linear_apply("test", xt, wt, bt);
            float *got = floats_of(y, dtype);
            ct_release(y);
            for (int i = 0; i < ROWS; i++)
                for (int j = 0; j < OUT; j++) {
                    double exact = bias[j];
                    for (int k = 0; k < K; k++) exact += (double)x[i * K + k] * w_t[k * OUT + j];
                    if (got[i * OUT + j] != rounded(exact, dtype))
                        fail_msg("linear (%s): [%d, %d] is %.9g, want %.9g", ct_dtype_name(dtype), i,
                                 j, (double)got[i * OUT + j], (double)rounded(exact, dtype));
                }
            free(got);
            ct_scope_pop();
        }
    }
}

/* matmul's backward on 16-bit leaves: grad_a = g @ b^T and grad_b = a^T @ g, in the leaves' dtype. */
static void test_half_matmul_gradients_arrive_in_the_16_bit_dtype(void **state)
{
    (void)state;
    enum { M = 3, N = 2 };
    ct_device devices[4];
    int device_count = devices_at_hand(devices);
    float a[M * K], b[K * N], g[M * N];
    fill_b(b, N);
    for (int i = 0; i < M * N; i++) g[i] = (float)(i % 3) - 1.0f;
    for (int d = 0; d < 2; d++) {
        ct_dtype dtype = half_dtypes[d];
        fill_a(a, M, dtype);
        for (int v = 0; v < device_count; v++) {
            ct_scope_push();
            ct_tensor *at = tensor_of(a, (int64_t[]){M, K}, 2, dtype, devices[v]);
            ct_tensor *bt = tensor_of(b, (int64_t[]){K, N}, 2, dtype, devices[v]);
            ct_tensor *gt = tensor_of(g, (int64_t[]){M, N}, 2, dtype, devices[v]);
            assert_int_equal(ct_requires_grad_(at, true), CT_OK);
            assert_int_equal(ct_requires_grad_(bt, true), CT_OK);
            ct_tensor *out = ct_matmul(at, bt);
            assert_non_null(out);
            assert_int_equal(ct_backward_with(out, gt, false), CT_OK);
            float *grad_a = floats_of(ct_grad(at), dtype), *grad_b = floats_of(ct_grad(bt), dtype);
            for (int i = 0; i < M; i++)
                for (int k = 0; k < K; k++) {
                    double exact = 0;
                    for (int j = 0; j < N; j++) exact += (double)g[i * N + j] * b[k * N + j];
                    assert_true(grad_a[i * K + k] == rounded(exact, dtype));
                }
            for (int k = 0; k < K; k++)
                for (int j = 0; j < N; j++) {
                    double exact = 0;
                    for (int i = 0; i < M; i++) exact += (double)a[i * K + k] * g[i * N + j];
                    assert_true(grad_b[k * N + j] == rounded(exact, dtype));
                }
            free(grad_b);
            free(grad_a);
            ct_scope_pop();
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_half_products_accumulate_in_float32_and_round_once),
        cmocka_unit_test(test_half_linear_adds_the_bias_before_rounding),
        cmocka_unit_test(test_half_matmul_gradients_arrive_in_the_16_bit_dtype),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
