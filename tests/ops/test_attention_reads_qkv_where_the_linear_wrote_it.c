/* Causal self-attention straight from one Linear's qkv [B, T, 3C] (ops/attention_packed.c: the
 * device's fused attention reads q, k and v in place and writes the heads joined) gives what the
 * composed path gives: split, [B, H, T, D] views, ct_scaled_dot_product_attention, heads joined;
 * its gradient d(qkv) is the composed one's, and float64 central differences agree with it. On
 * the CPU (the one device whose fused attention takes strided operands), float32 and float64,
 * with T past one tile of 128 rows and heads of odd width. The module uses it when it can
 * (nn/attention_layer.c), and keeps the composed path with dropout. */
#include <math.h>

#include "ops/attention_internal.h"
#include "support/gradcheck.h"
#include "test_common.h"

/* ct_attention_packed as a public call: its result joins the caller's scope (the library's own
 * callers release it themselves). */
static ct_tensor *packed_attention(const ct_tensor *qkv, int64_t heads)
{
    ct_api_enter();
    return ct_api_return(ct_attention_packed(qkv, heads));
}

static ct_tensor *composed(const ct_tensor *qkv, int64_t heads)
{
    int64_t b = qkv->shape[0], t = qkv->shape[1], c = qkv->shape[2] / 3;
    ct_tensor *parts[3] = {NULL, NULL, NULL}, *views[3] = {NULL, NULL, NULL};
    int count = 0;
    if (ct_split(qkv, c, 2, parts, 3, &count) != CT_OK) return NULL;
    for (int i = 0; i < 3; i++) {
        ct_tensor *split = ct_reshape(parts[i], (int64_t[]){b, t, heads, c / heads}, 4);
        views[i] = ct_transpose(split, 1, 2);
        ct_release(split);
    }
    ct_tensor *y = ct_scaled_dot_product_attention(views[0], views[1], views[2], NULL, 0.0, true, 0.0);
    ct_tensor *joined = ct_transpose(y, 1, 2);
    ct_tensor *out = ct_reshape(joined, (int64_t[]){b, t, c}, 3);
    for (int i = 0; i < 3; i++) ct_release(parts[i]), ct_release(views[i]);
    ct_release(y);
    ct_release(joined);
    return out;
}

/* The largest |a - b| over tol(b) = atol + rtol * |b|, as a fraction: below 1 is within. */
static double worst(const ct_tensor *a, const ct_tensor *b, double atol, double rtol)
{
    ct_tensor *a64 = ct_to_dtype(a, CT_F64), *b64 = ct_to_dtype(b, CT_F64);
    assert_non_null(a64);
    assert_non_null(b64);
    const double *x = ct_data_ptr(a64), *y = ct_data_ptr(b64);
    double w = 0;
    for (int64_t i = 0; i < ct_numel(a64); i++) {
        double r = fabs(x[i] - y[i]) / (atol + rtol * fabs(y[i]));
        if (!(r <= w)) w = r; /* NaN wins */
    }
    ct_release(a64);
    ct_release(b64);
    return w;
}

static void matches_the_composed_path(ct_dtype dtype, int64_t b, int64_t t, int64_t heads, int64_t d)
{
    ct_scope_push();
    ct_manual_seed(5);
    int64_t shape[3] = {b, t, 3 * heads * d};
    ct_tensor *qkv = ct_to_dtype(ct_randn(shape, 3, CT_F64, CT_DEVICE_CPU), dtype);
    ct_tensor *w = ct_to_dtype(ct_randn((int64_t[]){b, t, heads * d}, 3, CT_F64, CT_DEVICE_CPU), dtype);
    assert_int_equal(ct_requires_grad_(qkv, true), CT_OK);
    assert_true(ct_attention_packed_takes(qkv, heads));

    ct_tensor *packed = packed_attention(qkv, heads);
    assert_non_null(packed);
    assert_int_equal(ct_backward(ct_sum(ct_mul(packed, w), NULL, 0, false)), CT_OK);
    ct_tensor *packed_grad = ct_retain(ct_grad(qkv));
    ct_zero_grad(qkv);
    ct_tensor *reference = composed(qkv, heads);
    assert_non_null(reference);
    assert_int_equal(ct_backward(ct_sum(ct_mul(reference, w), NULL, 0, false)), CT_OK);

    double tol = dtype == CT_F64 ? 1e-12 : 2e-5;
    double out_off = worst(packed, reference, tol, tol), grad_off = worst(packed_grad, ct_grad(qkv), tol, tol);
    if (out_off > 1 || grad_off > 1)
        fail_msg("%s B %lld T %lld H %lld D %lld: output %.3g, d(qkv) %.3g of the tolerance %g from "
                 "the composed path", ct_dtype_name(dtype), (long long)b, (long long)t,
                 (long long)heads, (long long)d, out_off, grad_off, tol);
    ct_release(packed_grad);
    ct_scope_pop();
}

static void outputs_and_gradients_match_the_composed_path(void **state)
{
    (void)state;
    matches_the_composed_path(CT_F32, 2, 64, 4, 32); /* the benchmark's block, smaller */
    matches_the_composed_path(CT_F32, 1, 200, 3, 5); /* two query tiles, odd head width */
    matches_the_composed_path(CT_F64, 2, 131, 2, 8);
}

static ct_tensor *f_packed(ct_tensor *const *x, void *context)
{
    return packed_attention(x[0], *(const int64_t *)context);
}

static void gradients_match_central_differences(void **state)
{
    (void)state;
    ct_scope_push();
    ct_manual_seed(9);
    ct_tensor *qkv = ct_randn((int64_t[]){2, 5, 12}, 3, CT_F64, CT_DEVICE_CPU);
    int64_t heads = 2;
    ct_gradcheck("attention from packed qkv", f_packed, &qkv, NULL, 1, &heads);
    ct_scope_pop();
}

static void what_it_does_not_take_is_left_to_the_composed_path(void **state)
{
    (void)state;
    ct_scope_push();
    ct_tensor *qkv = ct_randn((int64_t[]){2, 4, 12}, 3, CT_F32, CT_DEVICE_CPU);
    assert_true(ct_attention_packed_takes(qkv, 2));
    assert_false(ct_attention_packed_takes(qkv, 5)); /* 12 is not 3 x 5 x D */
    assert_false(ct_attention_packed_takes(ct_transpose(qkv, 0, 1), 2)); /* not contiguous */
    assert_false(ct_attention_packed_takes(ct_to_dtype(qkv, CT_BF16), 2)); /* no fused bfloat16 */
    assert_false(ct_attention_packed_takes(ct_reshape(qkv, (int64_t[]){8, 12}, 2), 2));
    assert_null(packed_attention(qkv, 5));
    assert_int_equal(ct_last_error(), CT_ERR_INTERNAL);
    ct_scope_pop();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(outputs_and_gradients_match_the_composed_path),
        cmocka_unit_test(gradients_match_central_differences),
        cmocka_unit_test(what_it_does_not_take_is_left_to_the_composed_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
