/* Elementwise ops of one tensor match a plain-C reference over every dtype, strided views,
 * 0-d and empty tensors; integers and bool go to float32 where PyTorch does; clamp's bounds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ops/elementwise_check.h"

typedef ct_tensor *(*unary_fn)(const ct_tensor *);

typedef enum unary_kind { NEG, ABS, EXP, LOG, SQRT, RELU, SIGMOID, TANH, GELU, UNARY_COUNT } unary_kind;

static const struct {
    const char *name;
    unary_fn fn;
} ops[UNARY_COUNT] = {
    [NEG] = {"ct_neg", ct_neg}, [ABS] = {"ct_abs", ct_abs}, [EXP] = {"ct_exp", ct_exp},
    [LOG] = {"ct_log", ct_log}, [SQRT] = {"ct_sqrt", ct_sqrt}, [RELU] = {"ct_relu", ct_relu},
    [SIGMOID] = {"ct_sigmoid", ct_sigmoid}, [TANH] = {"ct_tanh", ct_tanh}, [GELU] = {"ct_gelu", ct_gelu},
};

/* neg, abs and relu keep the dtype and refuse bool; the others compute integers in float32. */
static bool keeps_dtype(unary_kind op) { return op == NEG || op == ABS || op == RELU; }
static bool supported(unary_kind op, ct_dtype dtype) { return !keeps_dtype(op) || dtype != CT_BOOL; }
static ct_dtype result_dtype(unary_kind op, ct_dtype dtype)
{
    return keeps_dtype(op) || dtype == CT_F32 || dtype == CT_F64 ? dtype : CT_F32;
}

static double reference(unary_kind op, ct_dtype t, double x)
{
    x = check_round(t, x);
    if (t == CT_F32) {
        float f = (float)x;
        switch (op) {
        case NEG: return -f;
        case ABS: return fabsf(f);
        case EXP: return expf(f);
        case LOG: return logf(f);
        case SQRT: return sqrtf(f);
        case RELU: return f < 0 ? 0.0f : f;
        case SIGMOID: return 1.0f / (1.0f + expf(-f));
        case TANH: return tanhf(f);
        default: return f * 0.5f * (1.0f + erff(f * (float)M_SQRT1_2));
        }
    }
    if (t == CT_F64) {
        switch (op) {
        case NEG: return -x;
        case ABS: return fabs(x);
        case EXP: return exp(x);
        case LOG: return log(x);
        case SQRT: return sqrt(x);
        case RELU: return x < 0 ? 0.0 : x;
        case SIGMOID: return 1.0 / (1.0 + exp(-x));
        case TANH: return tanh(x);
        default: return x * 0.5 * (1.0 + erf(x * M_SQRT1_2));
        }
    }
    int64_t v = (int64_t)x;
    int64_t r = op == NEG ? (int64_t)(0 - (uint64_t)v) : op == ABS ? (v < 0 ? (int64_t)(0 - (uint64_t)v) : v)
                                                               : (v < 0 ? 0 : v);
    return t == CT_U8 ? (double)(uint8_t)r : t == CT_I32 ? (double)(int32_t)r : (double)r;
}

static const double *input_values(ct_dtype dtype)
{
    static const double f[6] = {-2.5, -1.0, 0.0, 0.5, 1.5, 3.0};
    static const double i[6] = {-3, -1, 0, 1, 2, 4};
    static const double u[6] = {0, 1, 2, 3, 5, 200};
    static const double b[6] = {0, 1, 1, 0, 1, 0};
    return dtype == CT_F32 || dtype == CT_F64 ? f : dtype == CT_U8 ? u : dtype == CT_BOOL ? b : i;
}

/* Runs op on a (whose logical values are values) and checks dtype, shape and every value. */
static void check_op(unary_kind op, const ct_tensor *a, const double *values)
{
    ct_dtype dtype = ct_tensor_dtype(a);
    ct_tensor *out = ops[op].fn(a);
    if (!out) fail_msg("%s(%s) failed: %s", ops[op].name, ct_dtype_name(dtype), ct_last_error_message());
    ct_dtype want_dtype = result_dtype(op, dtype);
    assert_geometry(out, want_dtype, ct_tensor_shape(a), ct_tensor_ndim(a));
    int64_t n = ct_numel(out);
    double *got = values_of(out);
    double *want = calloc((size_t)(n > 0 ? n : 1), sizeof *want);
    for (int64_t k = 0; k < n; k++) want[k] = reference(op, want_dtype, check_round(dtype, values[k]));
    char what[64];
    snprintf(what, sizeof what, "%s(%s)", ops[op].name, ct_dtype_name(dtype));
    assert_values(what, got, want, n, want_dtype);
    free(got);
    free(want);
    ct_release(out);
}

static void every_op_matches_the_reference_for_every_dtype(void **state)
{
    (void)state;
    int64_t shape[2] = {2, 3};
    for (int op = 0; op < UNARY_COUNT; op++)
        for (int i = 0; i < CHECK_DTYPE_COUNT; i++) {
            ct_dtype dtype = check_all_dtypes[i];
            if (!supported((unary_kind)op, dtype)) continue;
            ct_tensor *a = tensor_of(dtype, shape, 2, input_values(dtype));
            check_op((unary_kind)op, a, input_values(dtype));
            ct_release(a);
        }
}

static void transposed_sliced_zero_dim_and_empty_inputs_work(void **state)
{
    (void)state;
    int64_t empty[2] = {0, 3};
    for (int op = 0; op < UNARY_COUNT; op++)
        for (int i = 0; i < CHECK_DTYPE_COUNT; i++) {
            ct_dtype dtype = check_all_dtypes[i];
            if (!supported((unary_kind)op, dtype)) continue;
            const double *values = input_values(dtype);
            ct_tensor *inputs[4] = {transposed_of(dtype, 2, 3, values), sliced_of(dtype, 2, 3, values),
                                    tensor_of(dtype, NULL, 0, values + 4), tensor_of(dtype, empty, 2, values)};
            const double *logical[4] = {values, values, values + 4, values};
            for (int k = 0; k < 4; k++) {
                check_op((unary_kind)op, inputs[k], logical[k]);
                ct_release(inputs[k]);
            }
        }
}

static void large_inputs_match_on_the_parallel_path(void **state)
{
    (void)state;
    const int64_t n = 200000;
    double *values = malloc((size_t)n * sizeof *values);
    for (int64_t k = 0; k < n; k++) values[k] = (double)(k % 2001) * 0.005 - 5.0;
    int64_t shape[1] = {n};
    ct_tensor *a = tensor_of(CT_F32, shape, 1, values);
    for (int op = 0; op < UNARY_COUNT; op++) check_op((unary_kind)op, a, values);
    ct_release(a);
    free(values);
}

static void gelu_is_the_exact_erf_form(void **state)
{
    (void)state;
    /* x * Phi(x) from Python's math.erf; the tanh approximation is off by ~1e-4 at x = 1 */
    double x[4] = {1.0, -0.5, 2.0, -3.0};
    double want[4] = {0.8413447460685429, -0.15426876936299344, 1.9544997361036416,
                      -0.00404969409489031};
    int64_t shape[1] = {4};
    ct_tensor *a = tensor_of(CT_F64, shape, 1, x);
    ct_tensor *out = ct_gelu(a);
    double *got = values_of(out);
    assert_values("ct_gelu", got, want, 4, CT_F64);
    free(got);
    ct_release(out);
    ct_release(a);
}

/* sign, floor and round keep the dtype; PyTorch's values at the edges (torch 2.15 CPU): sign(NaN)
 * 0, round half to even; the floating-only activations refuse integers, the others compute them
 * in float32; and values of the functions against the C library. */
static void rounding_signs_and_new_functions(void **state)
{
    (void)state;
    double x[8] = {NAN, -0.0, 0.0, 2.5, -2.5, 0.5, 1.5, INFINITY};
    double sign_want[8] = {0, 0, 0, 1, -1, 1, 1, 1};
    double round_want[8] = {NAN, -0.0, 0.0, 2, -2, 0, 2, INFINITY};
    double floor_want[8] = {NAN, -0.0, 0.0, 2, -3, 0, 1, INFINITY};
    int64_t shape[1] = {8};
    for (int f64 = 0; f64 < 2; f64++) {
        ct_dtype dtype = f64 ? CT_F64 : CT_F32;
        ct_tensor *a = tensor_of(dtype, shape, 1, x);
        ct_tensor *outs[3] = {ct_sign(a), ct_round(a), ct_floor(a)};
        const double *wants[3] = {sign_want, round_want, floor_want};
        for (int k = 0; k < 3; k++) {
            assert_geometry(outs[k], dtype, shape, 1);
            double *got = values_of(outs[k]);
            for (int i = 0; i < 8; i++)
                if (!(got[i] == wants[k][i] || (isnan(got[i]) && isnan(wants[k][i]))))
                    fail_msg("op %d, element %d: %g, want %g", k, i, got[i], wants[k][i]);
            free(got);
            ct_release(outs[k]);
        }
        ct_release(a);
    }
    double ints[4] = {-3, 0, 4, 7};
    int64_t four[1] = {4};
    ct_tensor *i64 = tensor_of(CT_I64, four, 1, ints);
    ct_tensor *s = ct_sign(i64), *f = ct_floor(i64), *r = ct_reciprocal(i64);
    assert_geometry(s, CT_I64, four, 1);
    assert_geometry(f, CT_I64, four, 1);
    assert_geometry(r, CT_F32, four, 1);
    double *sv = values_of(s);
    assert_true(sv[0] == -1 && sv[1] == 0 && sv[2] == 1 && sv[3] == 1);
    free(sv);
    assert_null(ct_leaky_relu(i64, 0.01));
    assert_int_equal(ct_last_error(), CT_ERR_DTYPE);
    ct_clear_error();
    assert_null(ct_silu(i64));
    ct_clear_error();
    ct_release(s);
    ct_release(f);
    ct_release(r);
    ct_release(i64);
    ct_scope_push(); /* releases the nested calls' intermediates */
    double v[5] = {-2.0, -0.3, 1e-10, 0.7, 3.0};
    int64_t five[1] = {5};
    ct_tensor *a = tensor_of(CT_F64, five, 1, v);
    ct_tensor *outs[6] = {ct_log1p(ct_abs(a)), ct_sin(a), ct_cos(a), ct_erf(a), ct_rsqrt(ct_abs(a)),
                          ct_softplus(a, 1.0, 20.0)};
    for (int k = 0; k < 6; k++) {
        double *got = values_of(outs[k]), want[5];
        for (int i = 0; i < 5; i++)
            want[i] = k == 0 ? log1p(fabs(v[i])) : k == 1 ? sin(v[i]) : k == 2 ? cos(v[i])
                      : k == 3 ? erf(v[i]) : k == 4 ? 1 / sqrt(fabs(v[i])) : log1p(exp(v[i]));
        assert_values("log1p, sin, cos, erf, rsqrt, softplus", got, want, 5, CT_F64);
        free(got);
    }
    ct_scope_pop();
}

static void sigmoid_and_exp_saturate_without_nan(void **state)
{
    (void)state;
    double x[4] = {-1000, 1000, -88, 89};
    int64_t shape[1] = {4};
    ct_tensor *a = tensor_of(CT_F32, shape, 1, x);
    ct_tensor *s = ct_sigmoid(a), *e = ct_exp(a);
    double *sv = values_of(s), *ev = values_of(e);
    assert_true(sv[0] == 0.0 && sv[1] == 1.0);
    assert_true(ev[0] == 0.0 && isinf(ev[1]) && isinf(ev[3]));
    free(sv);
    free(ev);
    ct_release(s);
    ct_release(e);
    ct_release(a);
}

static void integer_neg_and_abs_wrap_at_the_minimum(void **state)
{
    (void)state;
    int32_t v[3] = {INT32_MIN, -5, 7}, back[3];
    int64_t shape[1] = {3};
    ct_tensor *a = ct_tensor_from_data(v, CT_I32, shape, 1, CT_DEVICE_CPU);
    ct_tensor *n = ct_neg(a), *m = ct_abs(a);
    assert_int_equal(ct_tensor_to_array(n, back, sizeof back), CT_OK);
    assert_true(back[0] == INT32_MIN && back[1] == 5 && back[2] == -7);
    assert_int_equal(ct_tensor_to_array(m, back, sizeof back), CT_OK);
    assert_true(back[0] == INT32_MIN && back[1] == 5 && back[2] == 7);
    ct_release(n);
    ct_release(m);
    ct_release(a);
    uint8_t u[2] = {1, 0}, ub[2];
    int64_t shape2[1] = {2};
    ct_tensor *b = ct_tensor_from_data(u, CT_U8, shape2, 1, CT_DEVICE_CPU);
    ct_tensor *nb = ct_neg(b);
    assert_int_equal(ct_tensor_to_array(nb, ub, 2), CT_OK);
    assert_true(ub[0] == 255 && ub[1] == 0);
    ct_release(nb);
    ct_release(b);
}

/* Runs clamp-like fn and compares with want (same dtype as the input). */
static void check_clamp(ct_tensor *out, ct_dtype dtype, const double *want, int n)
{
    assert_non_null(out);
    assert_int_equal(ct_tensor_dtype(out), dtype);
    double *got = values_of(out);
    assert_values("clamp", got, want, n, dtype);
    free(got);
    ct_release(out);
}

static void clamp_bounds_floating_tensors_and_keeps_nan(void **state)
{
    (void)state;
    double x[6] = {-3, -1, 0.25, 1.5, 4, NAN};
    int64_t shape[1] = {6};
    for (int k = 0; k < 2; k++) {
        ct_dtype dtype = k ? CT_F64 : CT_F32;
        ct_tensor *a = tensor_of(dtype, shape, 1, x);
        check_clamp(ct_clamp(a, -1, 1.5), dtype, (double[6]){-1, -1, 0.25, 1.5, 1.5, NAN}, 6);
        check_clamp(ct_clamp_min(a, 0.5), dtype, (double[6]){0.5, 0.5, 0.5, 1.5, 4, NAN}, 6);
        check_clamp(ct_clamp_max(a, 0), dtype, (double[6]){-3, -1, 0, 0, 0, NAN}, 6);
        check_clamp(ct_relu(a), dtype, (double[6]){0, 0, 0.25, 1.5, 4, NAN}, 6);
        /* min above max gives max everywhere, as torch.clamp */
        check_clamp(ct_clamp(a, 2, 1), dtype, (double[6]){1, 1, 1, 1, 1, NAN}, 6);
        check_clamp(ct_clamp(a, NAN, 1), dtype, (double[6]){NAN, NAN, NAN, NAN, NAN, NAN}, 6);
        ct_release(a);
    }
}

static void clamp_keeps_integer_dtypes_and_uses_the_integers_inside_the_bounds(void **state)
{
    (void)state;
    double x[5] = {-3, -1, 0, 2, 4};
    int64_t shape[1] = {5};
    ct_dtype signed_types[2] = {CT_I32, CT_I64};
    for (int k = 0; k < 2; k++) {
        ct_tensor *a = tensor_of(signed_types[k], shape, 1, x);
        check_clamp(ct_clamp(a, -1.5, 2.5), signed_types[k], (double[5]){-1, -1, 0, 2, 2}, 5);
        check_clamp(ct_clamp_min(a, 0), signed_types[k], (double[5]){0, 0, 0, 2, 4}, 5);
        check_clamp(ct_clamp_max(a, -2), signed_types[k], (double[5]){-3, -2, -2, -2, -2}, 5);
        check_clamp(ct_clamp(a, -1e30, 1e30), signed_types[k], x, 5);
        check_clamp(ct_clamp(a, 3, 1), signed_types[k], (double[5]){1, 1, 1, 1, 1}, 5);
        ct_release(a);
    }
    double u[4] = {0, 7, 100, 255};
    int64_t ushape[1] = {4};
    ct_tensor *b = tensor_of(CT_U8, ushape, 1, u);
    check_clamp(ct_clamp_min(b, -5), CT_U8, u, 4);
    check_clamp(ct_clamp_min(b, 300), CT_U8, (double[4]){255, 255, 255, 255}, 4);
    check_clamp(ct_clamp(b, 6.5, 99.9), CT_U8, (double[4]){7, 7, 99, 99}, 4);
    check_clamp(ct_relu(b), CT_U8, u, 4);
    ct_release(b);
}

static void int64_clamp_saturates_bounds_without_losing_extreme_values(void **state)
{
    (void)state;
    int64_t v[3] = {INT64_MIN, 0, INT64_MAX}, back[3];
    int64_t shape[1] = {3};
    ct_tensor *a = ct_tensor_from_data(v, CT_I64, shape, 1, CT_DEVICE_CPU);
    ct_tensor *out = ct_clamp(a, -1e300, 1e300);
    assert_int_equal(ct_tensor_to_array(out, back, sizeof back), CT_OK);
    assert_true(back[0] == INT64_MIN && back[1] == 0 && back[2] == INT64_MAX);
    ct_release(out);
    out = ct_clamp(a, -INFINITY, INFINITY);
    assert_int_equal(ct_tensor_to_array(out, back, sizeof back), CT_OK);
    assert_true(back[0] == INT64_MIN && back[2] == INT64_MAX);
    ct_release(out);
    ct_release(a);
}

static void clamp_works_on_views_and_empty_tensors(void **state)
{
    (void)state;
    double x[6] = {-3, -1, 0, 1, 2, 4};
    ct_tensor *t = transposed_of(CT_I32, 2, 3, x), *s = sliced_of(CT_F32, 2, 3, x);
    check_clamp(ct_clamp(t, -1, 1), CT_I32, (double[6]){-1, -1, 0, 1, 1, 1}, 6);
    check_clamp(ct_clamp(s, -1, 1), CT_F32, (double[6]){-1, -1, 0, 1, 1, 1}, 6);
    ct_release(t);
    ct_release(s);
    int64_t empty[1] = {0};
    ct_tensor *e = tensor_of(CT_I64, empty, 1, x);
    ct_tensor *out = ct_clamp(e, 0, 1);
    assert_geometry(out, CT_I64, empty, 1);
    ct_release(out);
    ct_release(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_op_matches_the_reference_for_every_dtype),
        cmocka_unit_test(transposed_sliced_zero_dim_and_empty_inputs_work),
        cmocka_unit_test(large_inputs_match_on_the_parallel_path),
        cmocka_unit_test(gelu_is_the_exact_erf_form),
        cmocka_unit_test(sigmoid_and_exp_saturate_without_nan),
        cmocka_unit_test(rounding_signs_and_new_functions),
        cmocka_unit_test(integer_neg_and_abs_wrap_at_the_minimum),
        cmocka_unit_test(clamp_bounds_floating_tensors_and_keeps_nan),
        cmocka_unit_test(clamp_keeps_integer_dtypes_and_uses_the_integers_inside_the_bounds),
        cmocka_unit_test(int64_clamp_saturates_bounds_without_losing_extreme_values),
        cmocka_unit_test(clamp_works_on_views_and_empty_tensors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
