/* float16 and bfloat16 in the reductions, softmax and gathering, on the CPU and each OpenCL
 * device. Sums accumulate in float32 and round once, as PyTorch's: 50000 ones sum to 49984 in
 * float16 (50000 rounded; a 16-bit accumulator would stop at 2048) and 2^20 ones to inf (past
 * 65504), while their mean is 1; bfloat16 holds 2^20. Results match the same op in float64 from
 * the same values within the 16-bit format's rounding, argmax gives int64, and gradients arrive
 * in the input's dtype and match float32's within a 16-bit tolerance. */
#include <math.h>

#include "support/devices.h"
#include "test_common.h"

static const ct_dtype halves[2] = {CT_F16, CT_BF16};

/* One unit in the last place at 1. */
static double eps_of(ct_dtype dtype) { return dtype == CT_F16 ? 0x1p-10 : 0x1p-7; }

/* t's elements as doubles, read on the CPU (t is released). */
static double *take_doubles(ct_tensor *t)
{
    if (!t) fail_msg("the op failed: %s", ct_last_error_message());
    ct_tensor *wide = ct_to_dtype(t, CT_F64);
    ct_tensor *host = wide ? ct_to(wide, CT_DEVICE_CPU) : NULL;
    assert_non_null(host);
    int64_t n = ct_numel(host);
    double *values = malloc((size_t)(n > 0 ? n : 1) * sizeof *values);
    assert_int_equal(ct_tensor_to_array(host, values, (size_t)n * sizeof *values), CT_OK);
    ct_release(host), ct_release(wide), ct_release(t);
    return values;
}

/* values in [-4, 4) from a fixed sequence, as a tensor of dtype on device. */
static ct_tensor *drawn(const int64_t *shape, int ndim, ct_dtype dtype, ct_device device, uint32_t seed)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    float *values = malloc((size_t)n * sizeof *values);
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        values[i] = (float)(seed >> 8) * 0x1p-24f * 8.0f - 4.0f;
    }
    ct_tensor *wide = ct_tensor_from_data(values, CT_F32, shape, ndim, CT_DEVICE_CPU);
    ct_tensor *narrow = wide ? ct_to_dtype(wide, dtype) : NULL;
    ct_tensor *there = narrow ? ct_to(narrow, device) : NULL;
    assert_non_null(there);
    ct_release(narrow), ct_release(wide);
    free(values);
    return there;
}

static void sums_accumulate_in_float32_and_round_once(void **state)
{
    (void)state;
    ct_device devices[8];
    int count = ct_test_devices(devices);
    for (int d = 0; d < count; d++) {
        for (int h = 0; h < 2; h++) {
            ct_dtype dtype = halves[h];
            bool f16 = dtype == CT_F16;
            const int64_t some[1] = {50000}, many[1] = {1 << 20}, columns[2] = {50000, 3};
            ct_tensor *ones = ct_ones(some, 1, dtype, devices[d]);
            ct_tensor *sum = ct_sum(ones, NULL, 0, false);
            assert_non_null(sum);
            assert_int_equal(ct_tensor_dtype(sum), dtype);
            double *value = take_doubles(sum);
            assert_true(value[0] == (f16 ? 49984.0 : 49920.0));
            free(value);
            ct_release(ones);

            const int dim0[1] = {0};
            ones = ct_ones(columns, 2, dtype, devices[d]);
            value = take_doubles(ct_sum(ones, dim0, 1, false)); /* the column (tile) kernels */
            for (int k = 0; k < 3; k++) assert_true(value[k] == (f16 ? 49984.0 : 49920.0));
            free(value);
            ct_release(ones);

            ones = ct_ones(many, 1, dtype, devices[d]);
            value = take_doubles(ct_sum(ones, NULL, 0, false)); /* two passes, float partials */
            if (f16) assert_true(isinf(value[0]) && value[0] > 0);
            else assert_true(value[0] == 1048576.0);
            free(value);
            value = take_doubles(ct_mean(ones, NULL, 0, false));
            assert_true(value[0] == 1.0);
            free(value);
            ct_release(ones);
        }
    }
}

/* op(x) against op of x's values in float64, elementwise within units ulps of the 16-bit
 * format, scaled by max(1, |reference|, magnitude) (magnitude: the sum of |x| for sums). */
typedef ct_tensor *(*unary_op)(const ct_tensor *x);
static const int last_dim[1] = {1};
static ct_tensor *sum_rows(const ct_tensor *x) { return ct_sum(x, last_dim, 1, false); }
static ct_tensor *mean_rows(const ct_tensor *x) { return ct_mean(x, last_dim, 1, false); }
static ct_tensor *max_rows(const ct_tensor *x) { return ct_max(x, last_dim, 1, false); }
static ct_tensor *min_columns(const ct_tensor *x) { return ct_min(x, (const int[]){0}, 1, true); }
static ct_tensor *var_rows(const ct_tensor *x) { return ct_var(x, last_dim, 1, 1, false); }
static ct_tensor *std_columns(const ct_tensor *x) { return ct_std(x, (const int[]){0}, 1, 0, false); }
static ct_tensor *softmax_rows(const ct_tensor *x) { return ct_softmax(x, 1); }
static ct_tensor *softmax_columns(const ct_tensor *x) { return ct_softmax(x, 0); }
static ct_tensor *log_softmax_rows(const ct_tensor *x) { return ct_log_softmax(x, 1); }

static void forward_results_match_float64(void **state)
{
    (void)state;
    struct {
        const char *name;
        unary_op op;
        bool is_sum;
    } ops[] = {{"sum", sum_rows, true},         {"mean", mean_rows, true},
               {"max", max_rows, false},        {"min", min_columns, false},
               {"var", var_rows, false},        {"std", std_columns, false},
               {"softmax", softmax_rows, false}, {"softmax of columns", softmax_columns, false},
               {"log_softmax", log_softmax_rows, false}};
    const int64_t shape[2] = {6, 5000};
    ct_device devices[8];
    int count = ct_test_devices(devices);
    for (int d = 0; d < count; d++) {
        for (int h = 0; h < 2; h++) {
            ct_dtype dtype = halves[h];
            ct_tensor *x = drawn(shape, 2, dtype, devices[d], 11);
            ct_tensor *narrow_host = ct_to(x, CT_DEVICE_CPU);
            ct_tensor *x64 = ct_to_dtype(narrow_host, CT_F64);
            ct_tensor *abs64 = ct_abs(x64);
            for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
                ct_tensor *got = ops[k].op(x);
                if (!got) fail_msg("%s of %s failed: %s", ops[k].name, ct_dtype_name(dtype),
                                   ct_last_error_message());
                assert_int_equal(ct_tensor_dtype(got), dtype);
                int64_t n = ct_numel(got);
                double *y = take_doubles(got), *want = take_doubles(ops[k].op(x64));
                double *magnitude = ops[k].is_sum ? take_doubles(ops[k].op(abs64)) : NULL;
                for (int64_t i = 0; i < n; i++) {
                    double scale = fmax(1.0, fmax(fabs(want[i]), magnitude ? magnitude[i] : 0.0));
                    if (fabs(y[i] - want[i]) > 2 * eps_of(dtype) * scale)
                        fail_msg("%s of %s on device %d, element %lld: %.9g, float64 gives %.9g",
                                 ops[k].name, ct_dtype_name(dtype), d, (long long)i, y[i], want[i]);
                }
                free(y), free(want), free(magnitude);
            }
            ct_tensor *arg = ct_argmax(x, 1, false), *arg64 = ct_argmax(x64, 1, false);
            assert_int_equal(ct_tensor_dtype(arg), CT_I64);
            double *at = take_doubles(arg), *at64 = take_doubles(arg64);
            for (int i = 0; i < 6; i++) assert_true(at[i] == at64[i]);
            free(at), free(at64);
            ct_release(abs64), ct_release(x64), ct_release(narrow_host), ct_release(x);
        }
    }
}

/* ---- gradients: in the input's dtype, against float32 from the same values ---- */

typedef ct_tensor *(*grad_op)(const ct_tensor *x, const ct_tensor *index);
static ct_tensor *g_sum(const ct_tensor *x, const ct_tensor *i) { return (void)i, sum_rows(x); }
static ct_tensor *g_mean(const ct_tensor *x, const ct_tensor *i) { return (void)i, mean_rows(x); }
static ct_tensor *g_max(const ct_tensor *x, const ct_tensor *i) { return (void)i, max_rows(x); }
static ct_tensor *g_var(const ct_tensor *x, const ct_tensor *i) { return (void)i, var_rows(x); }
static ct_tensor *g_std(const ct_tensor *x, const ct_tensor *i) { return (void)i, std_columns(x); }
static ct_tensor *g_softmax(const ct_tensor *x, const ct_tensor *i) { return (void)i, softmax_rows(x); }
static ct_tensor *g_softmax_columns(const ct_tensor *x, const ct_tensor *i)
{
    return (void)i, softmax_columns(x);
}
static ct_tensor *g_log_softmax(const ct_tensor *x, const ct_tensor *i)
{
    return (void)i, log_softmax_rows(x);
}
static ct_tensor *g_gather(const ct_tensor *x, const ct_tensor *i) { return ct_gather(x, 1, i); }
static ct_tensor *g_index_select(const ct_tensor *x, const ct_tensor *i)
{
    ct_tensor *column = ct_select(i, 0, 0);
    ct_tensor *out = ct_index_select(x, 1, column);
    ct_release(column);
    return out;
}

/* x's gradient through op for an upstream gradient drawn from seed in dtype (then converted to
 * the output's dtype, so that the float32 run sees the same values); *n is its size. */
static double *gradient_of(grad_op op, const ct_tensor *x, const ct_tensor *index, uint32_t seed,
                           ct_dtype dtype, int64_t *n)
{
    ct_tensor *leaf = ct_detach(x);
    assert_int_equal(ct_requires_grad_(leaf, true), CT_OK);
    ct_tensor *out = op(leaf, index);
    if (!out) fail_msg("the op failed: %s", ct_last_error_message());
    ct_device device = ct_tensor_device(out);
    ct_tensor *up = drawn(ct_tensor_shape(out), ct_tensor_ndim(out), dtype, CT_DEVICE_CPU, seed);
    ct_tensor *up_here = ct_to(up, device);
    ct_tensor *up_typed = ct_to_dtype(up_here, ct_tensor_dtype(out));
    if (ct_backward_with(out, up_typed, false) != CT_OK)
        fail_msg("backward failed: %s", ct_last_error_message());
    ct_tensor *grad = ct_grad(leaf);
    assert_non_null(grad);
    assert_int_equal(ct_tensor_dtype(grad), ct_tensor_dtype(x));
    *n = ct_numel(grad);
    double *values = take_doubles(grad);
    ct_release(up_typed), ct_release(up_here), ct_release(up), ct_release(out), ct_release(leaf);
    return values;
}

static void gradients_arrive_in_the_dtype_and_match_float32(void **state)
{
    (void)state;
    /* units of the 16-bit format: 2 where the gradient is one rounded result; 16 where a saved
     * 16-bit output enters the formula (softmax's y, log_softmax's exp(y) times a row sum of
     * 40 terms, std's divisor) */
    struct {
        const char *name;
        grad_op op;
        double units;
    } ops[] = {{"sum", g_sum, 2},          {"mean", g_mean, 2},
               {"max", g_max, 2},          {"var", g_var, 2},
               {"std", g_std, 16},         {"softmax", g_softmax, 16},
               {"softmax of columns", g_softmax_columns, 16},
               {"log_softmax", g_log_softmax, 16},
               {"gather", g_gather, 2},    {"index_select", g_index_select, 2}};
    const int64_t shape[2] = {5, 40}, index_shape[2] = {5, 60};
    int64_t positions[5 * 60];
    for (int i = 0; i < 5 * 60; i++) positions[i] = (i * 7 + i / 60) % 40; /* repeats */
    ct_device devices[8];
    int count = ct_test_devices(devices);
    for (int d = 0; d < count; d++) {
        ct_tensor *index_host = ct_tensor_from_data(positions, CT_I64, index_shape, 2, CT_DEVICE_CPU);
        ct_tensor *index = ct_to(index_host, devices[d]);
        for (int h = 0; h < 2; h++) {
            ct_dtype dtype = halves[h];
            ct_tensor *x = drawn(shape, 2, dtype, devices[d], 5);
            ct_tensor *x32 = ct_to_dtype(x, CT_F32);
            for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
                int64_t n = 0, n32 = 0;
                double *g = gradient_of(ops[k].op, x, index, 23, dtype, &n);
                double *g32 = gradient_of(ops[k].op, x32, index, 23, dtype, &n32);
                assert_int_equal(n, n32);
                for (int64_t i = 0; i < n; i++) {
                    double tolerance = ops[k].units * eps_of(dtype) * fmax(1.0, fabs(g32[i]));
                    if (!(fabs(g[i] - g32[i]) <= tolerance))
                        fail_msg("gradient of %s in %s on device %d, element %lld: %.9g, float32 "
                                 "gives %.9g", ops[k].name, ct_dtype_name(dtype), d, (long long)i,
                                 g[i], g32[i]);
                }
                free(g), free(g32);
            }
            ct_release(x32), ct_release(x);
        }
        ct_release(index), ct_release(index_host);
    }
}

static void argmax_of_bool_and_mean_of_integers_still_refuse(void **state)
{
    (void)state;
    const int64_t shape[1] = {4};
    ct_tensor *flags = ct_ones(shape, 1, CT_BOOL, CT_DEVICE_CPU);
    assert_null(ct_argmax(flags, 0, false));
    assert_error(CT_ERR_DTYPE, "argmax is not defined for bool");
    ct_tensor *integers = ct_ones(shape, 1, CT_I32, CT_DEVICE_CPU);
    assert_null(ct_mean(integers, NULL, 0, false));
    assert_error(CT_ERR_DTYPE, "needs a floating dtype (float32, float64, float16 or bfloat16)");
    assert_null(ct_softmax(integers, 0));
    assert_error(CT_ERR_DTYPE, "needs a floating dtype (float32, float64, float16 or bfloat16)");
    ct_release(integers), ct_release(flags);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sums_accumulate_in_float32_and_round_once),
        cmocka_unit_test(forward_results_match_float64),
        cmocka_unit_test(gradients_arrive_in_the_dtype_and_match_float32),
        cmocka_unit_test(argmax_of_bool_and_mean_of_integers_still_refuse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
