/* The elementwise ops on float16 and bfloat16 tensors, on the CPU and on each OpenCL device:
 * results keep the 16-bit dtype (a scalar acts as a Python float and does not widen it), mixed
 * dtypes promote as in PyTorch, values are the float64 result rounded once (arithmetic happens in
 * float32 inside the kernels), and gradients arrive in each leaf's own dtype, within a few units
 * of the 16-bit format of the float32 gradients. The conformance suite covers every op and view;
 * this file shows the dtypes end to end, autograd included. */
#include <math.h>

#include "support/devices.h"
#include "test_common.h"

enum { N = 37 }; /* not a multiple of a device's vector width: a last partial vector */

/* The format's eps (the distance from 1 to the next value). */
static double eps_of(ct_dtype dtype)
{
    return dtype == CT_F16 ? 0x1p-10 : 0x1p-7;
}

/* A tensor of dtype on device holding values in [lo, hi), rounded to dtype; the rounded values,
 * as doubles, in rounded[N]. */
static ct_tensor *values_in(double lo, double hi, unsigned seed, ct_dtype dtype, ct_device device,
                            double *rounded)
{
    float source[N], back[N];
    for (int i = 0; i < N; i++) {
        seed = seed * 1103515245u + 12345u;
        source[i] = (float)(lo + (hi - lo) * ((seed >> 8) & 0xffff) / 65536.0);
    }
    const int64_t shape[1] = {N};
    ct_tensor *wide = ct_tensor_from_data(source, CT_F32, shape, 1, device);
    ct_tensor *t = ct_to_dtype(wide, dtype);
    ct_tensor *back_wide = ct_to_dtype(t, CT_F32);
    assert_non_null(back_wide);
    assert_int_equal(ct_tensor_to_array(back_wide, back, sizeof back), CT_OK);
    for (int i = 0; i < N; i++) rounded[i] = back[i];
    ct_release(back_wide);
    ct_release(wide);
    return t;
}

/* t's N values as doubles. */
static void read_values(const ct_tensor *t, double *out)
{
    float values[N];
    ct_tensor *wide = ct_to_dtype(t, CT_F32);
    assert_non_null(wide);
    assert_int_equal(ct_tensor_to_array(wide, values, sizeof values), CT_OK);
    for (int i = 0; i < N; i++) out[i] = values[i];
    ct_release(wide);
}

/* got is want rounded to the format: within half a unit in the last place (an eps of slack
 * for float32's arithmetic and libm inside the kernel) relative to max(1, |want|). */
static void assert_rounded_from(const char *what, ct_dtype dtype, const ct_tensor *t,
                                const double *want)
{
    assert_int_equal(ct_tensor_dtype(t), dtype);
    double got[N];
    read_values(t, got);
    for (int i = 0; i < N; i++) {
        double scale = fmax(1.0, fabs(want[i]));
        if (!(fabs(got[i] - want[i]) <= eps_of(dtype) * scale))
            fail_msg("%s in %s, element %d: %.9g, float64 gives %.9g", what, ct_dtype_name(dtype), i,
                     got[i], want[i]);
    }
}

static void forward_is_the_float64_result_rounded_once(void **state)
{
    (void)state;
    ct_device devices[8];
    int count = ct_test_devices(devices);
    for (int d = 0; d < count; d++) {
        for (int format = 0; format < 2; format++) {
            ct_dtype dtype = format ? CT_BF16 : CT_F16;
            ct_scope_push();
            double x[N], y[N], want[N];
            ct_tensor *a = values_in(-3, 3, 1u, dtype, devices[d], x);
            ct_tensor *b = values_in(0.25, 4, 2u, dtype, devices[d], y);
            for (int i = 0; i < N; i++) want[i] = x[i] * y[i];
            assert_rounded_from("mul", dtype, ct_mul(a, b), want);
            for (int i = 0; i < N; i++) want[i] = x[i] / y[i];
            assert_rounded_from("div", dtype, ct_div(a, b), want);
            for (int i = 0; i < N; i++) want[i] = pow(y[i], x[i]);
            assert_rounded_from("pow", dtype, ct_pow(b, a), want);
            for (int i = 0; i < N; i++) want[i] = x[i] - 0.1;
            assert_rounded_from("sub_scalar", dtype, ct_sub_scalar(a, 0.1), want);
            for (int i = 0; i < N; i++) want[i] = exp(x[i]);
            assert_rounded_from("exp", dtype, ct_exp(a), want);
            for (int i = 0; i < N; i++) want[i] = log(y[i]);
            assert_rounded_from("log", dtype, ct_log(b), want);
            for (int i = 0; i < N; i++) want[i] = 1 / (1 + exp(-x[i]));
            assert_rounded_from("sigmoid", dtype, ct_sigmoid(a), want);
            for (int i = 0; i < N; i++) want[i] = x[i] * 0.5 * (1 + erf(x[i] / sqrt(2.0)));
            assert_rounded_from("gelu", dtype, ct_gelu(a), want);
            for (int i = 0; i < N; i++) want[i] = fmin(fmax(x[i], -1.3), 2.2);
            assert_rounded_from("clamp", dtype, ct_clamp(a, -1.3, 2.2), want);
            ct_tensor *above = ct_gt_scalar(a, 0.5);
            assert_int_equal(ct_tensor_dtype(above), CT_BOOL);
            for (int i = 0; i < N; i++) want[i] = x[i] > 0.5 ? x[i] : y[i];
            assert_rounded_from("where", dtype, ct_where(above, a, b), want);
            assert_int_equal(ct_scope_pop(), CT_OK);
        }
    }
}

static void mixed_dtypes_promote_as_in_pytorch(void **state)
{
    (void)state;
    ct_scope_push();
    double x[N], y[N];
    ct_tensor *h = values_in(-2, 2, 3u, CT_F16, CT_DEVICE_CPU, x);
    ct_tensor *bh = values_in(-2, 2, 4u, CT_BF16, CT_DEVICE_CPU, y);
    ct_tensor *f = ct_to_dtype(h, CT_F32), *i = ct_to_dtype(ct_mul_scalar(h, 4), CT_I32);
    assert_int_equal(ct_tensor_dtype(ct_add(h, f)), CT_F32);
    assert_int_equal(ct_tensor_dtype(ct_add(bh, f)), CT_F32);
    assert_int_equal(ct_tensor_dtype(ct_mul(h, bh)), CT_F32);
    assert_int_equal(ct_tensor_dtype(ct_mul(bh, h)), CT_F32);
    assert_int_equal(ct_tensor_dtype(ct_add(i, h)), CT_F16);
    assert_int_equal(ct_tensor_dtype(ct_div(i, bh)), CT_BF16);
    assert_int_equal(ct_tensor_dtype(ct_add_scalar(bh, 1e10)), CT_BF16);
    assert_int_equal(ct_tensor_dtype(ct_ge(h, bh)), CT_BOOL);
    assert_int_equal(ct_tensor_dtype(ct_where(ct_lt(h, bh), h, bh)), CT_F32);
    /* bfloat16 * float16 is exact in float32 (8 by 11 significant bits) */
    double product[N];
    read_values(ct_mul(bh, h), product);
    for (int k = 0; k < N; k++) assert_true(product[k] == x[k] * y[k]);
    /* float16 overflows to infinity past 65504, as it does in PyTorch; bfloat16 does not */
    double big[N];
    read_values(ct_mul_scalar(ct_add_scalar(ct_mul_scalar(h, 0), 300), 300), big);
    assert_true(isinf(big[0]) && big[0] > 0);
    read_values(ct_mul_scalar(ct_add_scalar(ct_mul_scalar(bh, 0), 300), 300), big);
    assert_true(big[0] == 90112); /* 90000 rounded to bfloat16's 8 significant bits */
    assert_int_equal(ct_scope_pop(), CT_OK);
}

/* x, y -> gelu(x) * sigmoid(y) + tanh(x * y) - relu(x) / (y * y + 1) + exp(y) ** 0.5 * x, then
 * backpropagated with upstream 1: every op of the family that has a backward on the way. */
static ct_tensor *composite(ct_tensor *x, ct_tensor *y)
{
    ct_tensor *first = ct_mul(ct_gelu(x), ct_sigmoid(y));
    ct_tensor *second = ct_tanh(ct_mul(x, y));
    ct_tensor *third = ct_div(ct_relu(x), ct_add_scalar(ct_mul(y, y), 1));
    ct_tensor *fourth = ct_mul(ct_pow_scalar(ct_exp(y), 0.5), x);
    ct_tensor *kept = ct_maximum(ct_clamp(x, -1.5, 1.5), ct_neg(ct_abs(y)));
    return ct_add(ct_sub(ct_add(first, second), third), ct_add(fourth, kept));
}

/* The gradients of x and y (float64 values), after a backward through composite on leaves of
 * dtype dx and dy holding the values x and y; checks the gradients' dtypes. */
static void gradients_of(const ct_tensor *x16, const ct_tensor *y16, ct_dtype dx, ct_dtype dy,
                         double *gx, double *gy)
{
    ct_tensor *x = ct_detach(ct_to_dtype(x16, dx)), *y = ct_detach(ct_to_dtype(y16, dy));
    assert_int_equal(ct_requires_grad_(x, true), CT_OK);
    assert_int_equal(ct_requires_grad_(y, true), CT_OK);
    ct_tensor *out = composite(x, y);
    assert_non_null(out);
    ct_tensor *ones = ct_add_scalar(ct_mul_scalar(out, 0), 1);
    assert_int_equal(ct_backward_with(out, ct_detach(ones), false), CT_OK);
    ct_tensor *grad_x = ct_grad(x), *grad_y = ct_grad(y);
    assert_non_null(grad_x);
    assert_non_null(grad_y);
    assert_int_equal(ct_tensor_dtype(grad_x), dx);
    assert_int_equal(ct_tensor_dtype(grad_y), dy);
    read_values(grad_x, gx);
    read_values(grad_y, gy);
}

static void assert_close_gradients(const char *what, ct_dtype dtype, const double *got,
                                   const double *want)
{
    /* each of the ~20 ops on the way rounds to the 16-bit format once */
    for (int i = 0; i < N; i++)
        if (!(fabs(got[i] - want[i]) <= 16 * eps_of(dtype) * fmax(1.0, fabs(want[i]))))
            fail_msg("%s gradient in %s, element %d: %.6g, in float32 %.6g", what,
                     ct_dtype_name(dtype), i, got[i], want[i]);
}

static void gradients_arrive_in_each_leafs_dtype(void **state)
{
    (void)state;
    ct_device devices[8];
    int count = ct_test_devices(devices);
    for (int d = 0; d < count; d++) {
        for (int format = 0; format < 2; format++) {
            ct_dtype dtype = format ? CT_BF16 : CT_F16;
            ct_scope_push();
            double x[N], y[N], gx[N], gy[N], wx[N], wy[N];
            ct_tensor *a = values_in(-2, 2, 5u, dtype, devices[d], x);
            ct_tensor *b = values_in(-2, 2, 6u, dtype, devices[d], y);
            gradients_of(a, b, CT_F32, CT_F32, wx, wy);
            gradients_of(a, b, dtype, dtype, gx, gy);
            assert_close_gradients("x", dtype, gx, wx);
            assert_close_gradients("y", dtype, gy, wy);
            /* a 16-bit leaf beside a float32 one: the mixed ops compute in float32, and each
             * gradient is cast back to its leaf's dtype */
            gradients_of(a, b, dtype, CT_F32, gx, gy);
            assert_close_gradients("x (beside float32)", dtype, gx, wx);
            assert_close_gradients("y (float32, beside a 16-bit x)", dtype, gy, wy);
            assert_int_equal(ct_scope_pop(), CT_OK);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(forward_is_the_float64_result_rounded_once),
        cmocka_unit_test(mixed_dtypes_promote_as_in_pytorch),
        cmocka_unit_test(gradients_arrive_in_each_leafs_dtype),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
