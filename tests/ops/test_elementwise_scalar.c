/* Ops of a tensor and a scalar type the scalar as PyTorch types a Python number: an integer
 * tensor plus, minus or times an integral scalar keeps its dtype (bool gives int64) and wraps;
 * other pairings with integer and bool tensors give float32; floating tensors keep their dtype
 * (the scalar rounded to it); comparisons give bool. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>

#include "ops/elementwise_check.h"

typedef ct_tensor *(*scalar_fn)(const ct_tensor *, double);

typedef enum scalar_kind { ADD, SUB, MUL, DIV, POW, EQ, NE, LT, LE, GT, GE, SCALAR_COUNT } scalar_kind;

static const struct {
    const char *name;
    scalar_fn fn;
} ops[SCALAR_COUNT] = {
    [ADD] = {"ct_add_scalar", ct_add_scalar}, [SUB] = {"ct_sub_scalar", ct_sub_scalar},
    [MUL] = {"ct_mul_scalar", ct_mul_scalar}, [DIV] = {"ct_div_scalar", ct_div_scalar},
    [POW] = {"ct_pow_scalar", ct_pow_scalar}, [EQ] = {"ct_eq_scalar", ct_eq_scalar},
    [NE] = {"ct_ne_scalar", ct_ne_scalar},    [LT] = {"ct_lt_scalar", ct_lt_scalar},
    [LE] = {"ct_le_scalar", ct_le_scalar},    [GT] = {"ct_gt_scalar", ct_gt_scalar},
    [GE] = {"ct_ge_scalar", ct_ge_scalar},
};

static bool floating(ct_dtype dtype) { return dtype == CT_F32 || dtype == CT_F64; }
/* PyTorch's int64 + 1 is int64: an integral scalar is a Python int. */
static bool keeps_integer(scalar_kind op, ct_dtype dtype, double s)
{
    return (op == ADD || op == SUB || op == MUL) && !floating(dtype) && s == trunc(s);
}
static ct_dtype compute_dtype(scalar_kind op, ct_dtype dtype, double s)
{
    if (keeps_integer(op, dtype, s)) return dtype == CT_BOOL ? CT_I64 : dtype;
    return dtype == CT_F64 ? CT_F64 : CT_F32;
}
static ct_dtype result_dtype(scalar_kind op, ct_dtype dtype, double s)
{
    return op >= EQ ? CT_BOOL : compute_dtype(op, dtype, s);
}

/* x op s in an integer dtype (the test's values are small: only uint8 wraps). */
static double integer_reference(scalar_kind op, ct_dtype t, double x, double s)
{
    double r = op == ADD ? x + s : op == SUB ? x - s : x * s;
    if (t == CT_U8) r = fmod(fmod(r, 256) + 256, 256);
    return r;
}

/* x op s in t, with both rounded to t first. */
static double reference(scalar_kind op, ct_dtype t, double x, double s)
{
    if (t == CT_F32) {
        float fx = (float)x, fs = (float)s;
        switch (op) {
        case ADD: return fx + fs;
        case SUB: return fx - fs;
        case MUL: return fx * fs;
        case DIV: return fx / fs;
        case POW: return powf(fx, fs);
        case EQ: return fx == fs;
        case NE: return fx != fs;
        case LT: return fx < fs;
        case LE: return fx <= fs;
        case GT: return fx > fs;
        default: return fx >= fs;
        }
    }
    switch (op) {
    case ADD: return x + s;
    case SUB: return x - s;
    case MUL: return x * s;
    case DIV: return x / s;
    case POW: return pow(x, s);
    case EQ: return x == s;
    case NE: return x != s;
    case LT: return x < s;
    case LE: return x <= s;
    case GT: return x > s;
    default: return x >= s;
    }
}

static const double *input_values(ct_dtype dtype)
{
    static const double f[6] = {-2.5, -1.0, 0.0, 0.5, 1.5, 3.0};
    static const double i[6] = {-3, -1, 0, 1, 2, 4};
    static const double u[6] = {0, 1, 2, 3, 5, 200};
    static const double b[6] = {0, 1, 1, 0, 1, 0};
    return dtype == CT_F32 || dtype == CT_F64 ? f : dtype == CT_U8 ? u : dtype == CT_BOOL ? b : i;
}

static void check_op(scalar_kind op, const ct_tensor *a, const double *values, double s)
{
    ct_dtype dtype = ct_tensor_dtype(a);
    ct_tensor *out = ops[op].fn(a, s);
    if (!out) fail_msg("%s(%s, %g) failed: %s", ops[op].name, ct_dtype_name(dtype), s, ct_last_error_message());
    ct_dtype compute = compute_dtype(op, dtype, s);
    assert_geometry(out, result_dtype(op, dtype, s), ct_tensor_shape(a), ct_tensor_ndim(a));
    int64_t n = ct_numel(out);
    double *got = values_of(out);
    double *want = calloc((size_t)(n > 0 ? n : 1), sizeof *want);
    for (int64_t k = 0; k < n; k++)
        want[k] = floating(compute) ? reference(op, compute, check_round(dtype, values[k]), s)
                                    : integer_reference(op, compute, values[k], s);
    char what[96];
    snprintf(what, sizeof what, "%s(%s, %g)", ops[op].name, ct_dtype_name(dtype), s);
    assert_values(what, got, want, n, result_dtype(op, dtype, s));
    free(got);
    free(want);
    ct_release(out);
}

static void every_scalar_op_matches_the_reference_for_every_dtype(void **state)
{
    (void)state;
    int64_t shape[2] = {2, 3};
    const double scalars[4] = {1.5, -2.0, 0.0, 0.1};
    for (int op = 0; op < SCALAR_COUNT; op++)
        for (int i = 0; i < CHECK_DTYPE_COUNT; i++) {
            ct_dtype dtype = check_all_dtypes[i];
            if (op == SUB && dtype == CT_BOOL) continue;
            ct_tensor *a = tensor_of(dtype, shape, 2, input_values(dtype));
            for (int k = 0; k < 4; k++) check_op((scalar_kind)op, a, input_values(dtype), scalars[k]);
            ct_release(a);
        }
}

static void scalar_ops_work_on_views_zero_dim_and_empty_tensors(void **state)
{
    (void)state;
    int64_t empty[2] = {3, 0};
    for (int op = 0; op < SCALAR_COUNT; op++)
        for (int i = 0; i < CHECK_DTYPE_COUNT; i++) {
            ct_dtype dtype = check_all_dtypes[i];
            if (op == SUB && dtype == CT_BOOL) continue;
            const double *values = input_values(dtype);
            ct_tensor *inputs[4] = {transposed_of(dtype, 2, 3, values), sliced_of(dtype, 2, 3, values),
                                    tensor_of(dtype, NULL, 0, values + 5), tensor_of(dtype, empty, 2, values)};
            const double *logical[4] = {values, values, values + 5, values};
            for (int k = 0; k < 4; k++) {
                check_op((scalar_kind)op, inputs[k], logical[k], 2.0);
                ct_release(inputs[k]);
            }
        }
}

static double single(scalar_fn fn, ct_dtype dtype, double x, double s, ct_dtype want_dtype)
{
    int64_t shape[1] = {1};
    ct_tensor *a = tensor_of(dtype, shape, 1, &x);
    ct_tensor *out = fn(a, s);
    assert_geometry(out, want_dtype, shape, 1);
    double *v = values_of(out), result = v[0];
    free(v);
    ct_release(out);
    ct_release(a);
    return result;
}

static void the_scalar_acts_as_a_python_number(void **state)
{
    (void)state;
    /* a non-integral scalar is a Python float: the default float dtype */
    assert_true(single(ct_add_scalar, CT_I32, 2, 0.5, CT_F32) == 2.5);
    assert_true(single(ct_div_scalar, CT_I64, 7, 2, CT_F32) == 3.5);
    assert_true(single(ct_mul_scalar, CT_BOOL, 1, 2.5, CT_F32) == 2.5);
    assert_true(single(ct_pow_scalar, CT_I32, 3, 2, CT_F32) == 9);
    /* an integral one is a Python int: torch.tensor([1]) + 1 is int64, and integers wrap */
    assert_true(single(ct_add_scalar, CT_I64, 1, 1, CT_I64) == 2);
    assert_true(single(ct_add_scalar, CT_I64, 9007199254740000.0, 1, CT_I64) == 9007199254740001.0);
    assert_true(single(ct_mul_scalar, CT_I32, 3, -4, CT_I32) == -12);
    assert_true(single(ct_sub_scalar, CT_U8, 0, 1, CT_U8) == 255);
    assert_true(single(ct_add_scalar, CT_U8, 1, -1, CT_U8) == 0);
    assert_true(single(ct_add_scalar, CT_BOOL, 1, 1, CT_I64) == 2);
    assert_true(single(ct_mul_scalar, CT_BOOL, 1, 3, CT_I64) == 3);
    assert_true(single(ct_add_scalar, CT_F64, 0.1, 0.2, CT_F64) == 0.1 + 0.2);
    /* a float32 tensor rounds the scalar to float32: 0.1f == 0.1 there, as in PyTorch */
    assert_true(single(ct_eq_scalar, CT_F32, 0.1, 0.1, CT_BOOL) == 1);
    assert_true(single(ct_eq_scalar, CT_F64, (float)0.1, 0.1, CT_BOOL) == 0);
    /* integers compare in float32: 16777217 becomes 16777216 */
    assert_true(single(ct_eq_scalar, CT_I32, 16777217, 16777216, CT_BOOL) == 1);
    assert_true(single(ct_lt_scalar, CT_BOOL, 1, 1.5, CT_BOOL) == 1);
    assert_true(single(ct_ge_scalar, CT_U8, 200, 200, CT_BOOL) == 1);
}

/* PyTorch casts an int scalar into the tensor's dtype, wrapping: torch.tensor([1], dtype=
 * torch.int32) + 2**40 is [1]. A value beyond int64 acts as a float (torch.tensor([1]) + 2.0**70
 * is float32). */
static void an_integral_scalar_wraps_into_the_dtype(void **state)
{
    (void)state;
    assert_true(single(ct_add_scalar, CT_I32, 1, 1099511627776.0, CT_I32) == 1);         /* 2^40 */
    assert_true(single(ct_mul_scalar, CT_I32, 3, 4294967298.0, CT_I32) == 6);            /* 2^32 + 2 */
    assert_true(single(ct_add_scalar, CT_U8, 1, 511, CT_U8) == 0);
    assert_true(single(ct_sub_scalar, CT_I64, 0, -9007199254740992.0, CT_I64) == 9007199254740992.0);
    assert_true(single(ct_add_scalar, CT_I64, 1, 0x1p70, CT_F32) == (double)(float)0x1p70);
}

static void eq_scalar_zero_inverts_a_mask(void **state)
{
    (void)state;
    double mask[4] = {1, 0, 0, 1};
    int64_t shape[1] = {4};
    ct_tensor *m = tensor_of(CT_BOOL, shape, 1, mask);
    ct_tensor *inverted = ct_eq_scalar(m, 0);
    double *v = values_of(inverted);
    assert_true(v[0] == 0 && v[1] == 1 && v[2] == 1 && v[3] == 0);
    free(v);
    ct_release(inverted);
    ct_release(m);
}

static void large_scalar_ops_match_on_the_parallel_path(void **state)
{
    (void)state;
    const int64_t n = 150000;
    double *values = malloc((size_t)n * sizeof *values);
    for (int64_t k = 0; k < n; k++) values[k] = (double)(k % 977) * 0.01 - 3;
    int64_t shape[1] = {n};
    ct_tensor *a = tensor_of(CT_F32, shape, 1, values);
    for (int op = 0; op < SCALAR_COUNT; op++) check_op((scalar_kind)op, a, values, 1.25);
    ct_release(a);
    free(values);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_scalar_op_matches_the_reference_for_every_dtype),
        cmocka_unit_test(scalar_ops_work_on_views_zero_dim_and_empty_tensors),
        cmocka_unit_test(the_scalar_acts_as_a_python_number),
        cmocka_unit_test(an_integral_scalar_wraps_into_the_dtype),
        cmocka_unit_test(eq_scalar_zero_inverts_a_mask),
        cmocka_unit_test(large_scalar_ops_match_on_the_parallel_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
