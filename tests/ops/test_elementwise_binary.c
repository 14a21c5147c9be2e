/* Elementwise ops of two tensors match a plain-C reference over every dtype pair, broadcasting,
 * 0-d operands, strided views and empty tensors, with PyTorch's type promotion. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ops/elementwise_check.h"

typedef ct_tensor *(*binary_fn)(const ct_tensor *, const ct_tensor *);

typedef enum op_kind { ADD, SUB, MUL, DIV, POW, MAXIMUM, MINIMUM, EQ, NE, LT, LE, GT, GE, OP_COUNT } op_kind;

static const struct {
    const char *name;
    binary_fn fn;
} ops[OP_COUNT] = {
    [ADD] = {"ct_add", ct_add}, [SUB] = {"ct_sub", ct_sub}, [MUL] = {"ct_mul", ct_mul},
    [DIV] = {"ct_div", ct_div}, [POW] = {"ct_pow", ct_pow}, [MAXIMUM] = {"ct_maximum", ct_maximum},
    [MINIMUM] = {"ct_minimum", ct_minimum}, [EQ] = {"ct_eq", ct_eq}, [NE] = {"ct_ne", ct_ne},
    [LT] = {"ct_lt", ct_lt}, [LE] = {"ct_le", ct_le}, [GT] = {"ct_gt", ct_gt}, [GE] = {"ct_ge", ct_ge},
};

static bool is_comparison(op_kind op) { return op >= EQ; }

/* PyTorch refuses bool in subtraction, and bool ** bool. */
static bool supported(op_kind op, ct_dtype a, ct_dtype b)
{
    if (op == SUB) return a != CT_BOOL && b != CT_BOOL;
    if (op == POW) return a != CT_BOOL || b != CT_BOOL;
    return true;
}

static ct_dtype compute_dtype(op_kind op, ct_dtype a, ct_dtype b)
{
    ct_dtype t = ct_promote_types(a, b);
    if (op == DIV && t != CT_F32 && t != CT_F64) t = CT_F32;
    return t;
}

static ct_dtype result_dtype(op_kind op, ct_dtype a, ct_dtype b)
{
    return is_comparison(op) ? CT_BOOL : compute_dtype(op, a, b);
}

/* Integer power by repeated multiplication, wrapping modulo 2^64; PyTorch's negative rule. */
static int64_t reference_ipow(int64_t base, int64_t exponent)
{
    if (exponent < 0) return base == 1 ? 1 : base == -1 ? (exponent % 2 ? -1 : 1) : 0;
    uint64_t r = 1;
    for (int64_t k = 0; k < exponent; k++) r *= (uint64_t)base;
    return (int64_t)r;
}

/* v in an integer dtype, wrapped around as the dtype's arithmetic does */
static double wrap(ct_dtype t, int64_t v)
{
    return t == CT_U8 ? (double)(uint8_t)v : t == CT_I32 ? (double)(int32_t)v : (double)v;
}

static double compare(op_kind op, double x, double y)
{
    switch (op) {
    case EQ: return x == y;
    case NE: return x != y;
    case LT: return x < y;
    case LE: return x <= y;
    case GT: return x > y;
    default: return x >= y;
    }
}

/* op on x and y in dtype t (each first rounded to t), as the result dtype holds it. */
static double reference(op_kind op, ct_dtype t, double x, double y)
{
    x = check_round(t, x);
    y = check_round(t, y);
    if (t == CT_F32) {
        float fx = (float)x, fy = (float)y;
        switch (op) {
        case ADD: return fx + fy;
        case SUB: return fx - fy;
        case MUL: return fx * fy;
        case DIV: return fx / fy;
        case POW: return powf(fx, fy);
        case MAXIMUM: return isnan(fx) || isnan(fy) ? NAN : fmaxf(fx, fy);
        case MINIMUM: return isnan(fx) || isnan(fy) ? NAN : fminf(fx, fy);
        default: return compare(op, fx, fy);
        }
    }
    if (t == CT_F64) {
        switch (op) {
        case ADD: return x + y;
        case SUB: return x - y;
        case MUL: return x * y;
        case DIV: return x / y;
        case POW: return pow(x, y);
        case MAXIMUM: return isnan(x) || isnan(y) ? NAN : fmax(x, y);
        case MINIMUM: return isnan(x) || isnan(y) ? NAN : fmin(x, y);
        default: return compare(op, x, y);
        }
    }
    int64_t ix = (int64_t)x, iy = (int64_t)y;
    uint64_t ux = (uint64_t)ix, uy = (uint64_t)iy;
    switch (op) {
    case ADD: return t == CT_BOOL ? (double)(ix | iy) : wrap(t, (int64_t)(ux + uy));
    case SUB: return wrap(t, (int64_t)(ux - uy));
    case MUL: return t == CT_BOOL ? (double)(ix & iy) : wrap(t, (int64_t)(ux * uy));
    case POW: return wrap(t, reference_ipow(ix, iy));
    case MAXIMUM: return ix > iy ? x : y;
    case MINIMUM: return ix < iy ? x : y;
    default: return compare(op, x, y);
    }
}

/* Values of a [2, 3] left operand and a [3] right operand, per dtype. */
static const double *left_values(ct_dtype dtype)
{
    static const double f[6] = {-2.5, -1.0, 0.0, 0.5, 1.5, 3.0};
    static const double i[6] = {-3, -1, 0, 1, 2, 4};
    static const double u[6] = {0, 1, 2, 3, 5, 200};
    static const double b[6] = {0, 1, 1, 0, 1, 0};
    return dtype == CT_F32 || dtype == CT_F64 ? f : dtype == CT_U8 ? u : dtype == CT_BOOL ? b : i;
}

static const double *right_values(ct_dtype dtype)
{
    static const double f[6] = {-1.5, 0.5, 2.0, 0.0, -0.25, 7.0};
    static const double i[6] = {-2, 1, 3, 0, 2, -1};
    static const double u[6] = {1, 2, 7, 0, 3, 9};
    static const double b[6] = {1, 0, 1, 1, 0, 0};
    return dtype == CT_F32 || dtype == CT_F64 ? f : dtype == CT_U8 ? u : dtype == CT_BOOL ? b : i;
}

/* Runs op on a and b (already made, with logical values av, bv and shapes sa, sb) and checks the
 * result's dtype, broadcast shape and every value. */
static void check_op(op_kind op, const ct_tensor *a, const double *av, const ct_tensor *b,
                     const double *bv)
{
    ct_dtype da = ct_tensor_dtype(a), db = ct_tensor_dtype(b);
    int na = ct_tensor_ndim(a), nb = ct_tensor_ndim(b), n = na > nb ? na : nb;
    const int64_t *sa = ct_tensor_shape(a), *sb = ct_tensor_shape(b);
    int64_t shape[CT_MAX_DIMS];
    for (int d = 0; d < n; d++) {
        int64_t x = d - n + na >= 0 ? sa[d - n + na] : 1, y = d - n + nb >= 0 ? sb[d - n + nb] : 1;
        shape[d] = x == 1 ? y : x;
    }
    ct_tensor *out = ops[op].fn(a, b);
    if (!out) fail_msg("%s(%s, %s) failed: %s", ops[op].name, ct_dtype_name(da), ct_dtype_name(db),
                       ct_last_error_message());
    assert_geometry(out, result_dtype(op, da, db), shape, n);
    int64_t count = ct_numel(out);
    double *got = values_of(out);
    double *want = calloc((size_t)(count > 0 ? count : 1), sizeof *want);
    ct_dtype t = compute_dtype(op, da, db);
    for (int64_t k = 0; k < count; k++)
        want[k] = reference(op, t, check_round(da, av[broadcast_index(k, shape, n, sa, na)]),
                            check_round(db, bv[broadcast_index(k, shape, n, sb, nb)]));
    char what[128];
    snprintf(what, sizeof what, "%s(%s, %s)", ops[op].name, ct_dtype_name(da), ct_dtype_name(db));
    assert_values(what, got, want, count, result_dtype(op, da, db));
    free(got);
    free(want);
    ct_release(out);
}

static void every_op_matches_the_reference_for_every_dtype_pair(void **state)
{
    (void)state;
    int64_t sa[2] = {2, 3}, sb[1] = {3};
    for (int op = 0; op < OP_COUNT; op++)
        for (int i = 0; i < CHECK_DTYPE_COUNT; i++)
            for (int j = 0; j < CHECK_DTYPE_COUNT; j++) {
                ct_dtype da = check_all_dtypes[i], db = check_all_dtypes[j];
                if (!supported((op_kind)op, da, db)) continue;
                ct_tensor *a = tensor_of(da, sa, 2, left_values(da));
                ct_tensor *b = tensor_of(db, sb, 1, right_values(db));
                check_op((op_kind)op, a, left_values(da), b, right_values(db));
                check_op((op_kind)op, b, right_values(db), a, left_values(da));
                ct_release(a);
                ct_release(b);
            }
}

static void column_and_row_broadcast_to_a_matrix(void **state)
{
    (void)state;
    int64_t sa[2] = {4, 1}, sb[2] = {1, 5};
    double av[4] = {-2, 0, 1, 3}, bv[5] = {-1, 0, 1, 2, 4};
    for (int op = 0; op < OP_COUNT; op++)
        for (int i = 0; i < CHECK_DTYPE_COUNT; i++) {
            ct_dtype dtype = check_all_dtypes[i];
            if (!supported((op_kind)op, dtype, dtype)) continue;
            ct_tensor *a = tensor_of(dtype, sa, 2, av), *b = tensor_of(dtype, sb, 2, bv);
            check_op((op_kind)op, a, av, b, bv);
            ct_release(a);
            ct_release(b);
        }
}

static void zero_dim_operands_broadcast_and_two_give_a_zero_dim_result(void **state)
{
    (void)state;
    int64_t sm[2] = {2, 3};
    double scalar_value[1] = {2};
    for (int op = 0; op < OP_COUNT; op++)
        for (int i = 0; i < CHECK_DTYPE_COUNT; i++) {
            ct_dtype dtype = check_all_dtypes[i];
            if (!supported((op_kind)op, dtype, dtype)) continue;
            ct_tensor *s = tensor_of(dtype, NULL, 0, scalar_value);
            ct_tensor *m = tensor_of(dtype, sm, 2, left_values(dtype));
            check_op((op_kind)op, s, scalar_value, m, left_values(dtype));
            check_op((op_kind)op, m, left_values(dtype), s, scalar_value);
            check_op((op_kind)op, s, scalar_value, s, scalar_value);
            ct_release(s);
            ct_release(m);
        }
}

static void transposed_and_sliced_views_give_the_values_they_show(void **state)
{
    (void)state;
    int64_t srow[1] = {3};
    for (int op = 0; op < OP_COUNT; op++)
        for (int i = 0; i < CHECK_DTYPE_COUNT; i++) {
            ct_dtype dtype = check_all_dtypes[i];
            if (!supported((op_kind)op, dtype, dtype)) continue;
            const double *av = left_values(dtype), *bv = right_values(dtype);
            ct_tensor *t = transposed_of(dtype, 2, 3, av);
            ct_tensor *s = sliced_of(dtype, 2, 3, bv);
            ct_tensor *row = tensor_of(dtype, srow, 1, bv);
            check_op((op_kind)op, t, av, s, bv);
            check_op((op_kind)op, s, bv, t, av);
            check_op((op_kind)op, s, bv, row, bv);
            ct_release(t);
            ct_release(s);
            ct_release(row);
        }
}

static void empty_tensors_give_empty_results_of_the_broadcast_shape(void **state)
{
    (void)state;
    int64_t s03[2] = {0, 3}, s3[1] = {3}, s20[2] = {2, 0}, s21[2] = {2, 1};
    double v[3] = {1, 2, 3};
    for (int op = 0; op < OP_COUNT; op++) {
        ct_tensor *a = tensor_of(CT_F32, s03, 2, v), *b = tensor_of(CT_I32, s3, 1, v);
        check_op((op_kind)op, a, v, b, v);
        ct_tensor *c = tensor_of(CT_I64, s20, 2, v), *d = tensor_of(CT_I64, s21, 2, v);
        check_op((op_kind)op, c, v, d, v);
        assert_int_equal(ct_numel(a), 0);
        ct_release(a);
        ct_release(b);
        ct_release(c);
        ct_release(d);
    }
}

/* Checks a op b for one-element operands of given dtypes: result dtype and value. */
static void check_promotion(binary_fn fn, ct_dtype da, double x, ct_dtype db, double y,
                            ct_dtype want_dtype, double want)
{
    int64_t shape[1] = {1};
    ct_tensor *a = tensor_of(da, shape, 1, &x), *b = tensor_of(db, shape, 1, &y);
    ct_tensor *out = fn(a, b);
    assert_geometry(out, want_dtype, shape, 1);
    double *got = values_of(out);
    if (!check_close(got[0], want, want_dtype))
        fail_msg("%s op %s gave %.17g, expected %.17g", ct_dtype_name(da), ct_dtype_name(db), got[0], want);
    free(got);
    ct_release(out);
    ct_release(a);
    ct_release(b);
}

static void mixed_dtypes_promote_as_in_pytorch(void **state)
{
    (void)state;
    check_promotion(ct_add, CT_I32, 2, CT_F32, 0.5, CT_F32, 2.5);
    check_promotion(ct_add, CT_U8, 200, CT_I64, 100, CT_I64, 300);
    check_promotion(ct_add, CT_BOOL, 1, CT_I32, 41, CT_I32, 42);
    check_promotion(ct_add, CT_F32, 0.1, CT_F64, 0.2, CT_F64, (double)0.1f + 0.2);
    check_promotion(ct_mul, CT_BOOL, 1, CT_F32, 2.5, CT_F32, 2.5);
    check_promotion(ct_div, CT_I32, 7, CT_I32, 2, CT_F32, 3.5);
    check_promotion(ct_div, CT_I64, -7, CT_U8, 2, CT_F32, -3.5);
    check_promotion(ct_div, CT_BOOL, 1, CT_BOOL, 0, CT_F32, INFINITY);
    check_promotion(ct_div, CT_F64, 1, CT_I32, 3, CT_F64, 1.0 / 3.0);
    check_promotion(ct_sub, CT_U8, 3, CT_I32, 5, CT_I32, -2);
    check_promotion(ct_pow, CT_BOOL, 1, CT_I32, 5, CT_I32, 1);
    check_promotion(ct_pow, CT_I32, 2, CT_F32, 0.5, CT_F32, sqrtf(2.0f));
    check_promotion(ct_maximum, CT_U8, 200, CT_I32, -5, CT_I32, 200);
    /* comparisons compute in the promoted dtype: 16777217 is 16777216 in float32 */
    check_promotion(ct_eq, CT_I32, 16777217, CT_F32, 16777216, CT_BOOL, 1);
    check_promotion(ct_eq, CT_I64, 16777217, CT_I32, 16777216, CT_BOOL, 0);
    check_promotion(ct_lt, CT_U8, 255, CT_I32, -1, CT_BOOL, 0);
}

static void bool_add_is_logical_or_and_bool_mul_logical_and(void **state)
{
    (void)state;
    check_promotion(ct_add, CT_BOOL, 1, CT_BOOL, 1, CT_BOOL, 1);
    check_promotion(ct_add, CT_BOOL, 0, CT_BOOL, 1, CT_BOOL, 1);
    check_promotion(ct_add, CT_BOOL, 0, CT_BOOL, 0, CT_BOOL, 0);
    check_promotion(ct_mul, CT_BOOL, 1, CT_BOOL, 1, CT_BOOL, 1);
    check_promotion(ct_mul, CT_BOOL, 1, CT_BOOL, 0, CT_BOOL, 0);
    check_promotion(ct_maximum, CT_BOOL, 0, CT_BOOL, 1, CT_BOOL, 1);
    check_promotion(ct_minimum, CT_BOOL, 0, CT_BOOL, 1, CT_BOOL, 0);
}

static void integer_arithmetic_wraps_around_as_in_pytorch(void **state)
{
    (void)state;
    check_promotion(ct_add, CT_I32, 2147483647, CT_I32, 1, CT_I32, -2147483648.0);
    check_promotion(ct_sub, CT_I32, -2147483648.0, CT_I32, 1, CT_I32, 2147483647);
    check_promotion(ct_mul, CT_I32, 65536, CT_I32, 65536, CT_I32, 0);
    check_promotion(ct_add, CT_U8, 250, CT_U8, 10, CT_U8, 4);
    check_promotion(ct_sub, CT_U8, 3, CT_U8, 5, CT_U8, 254);
    check_promotion(ct_mul, CT_U8, 16, CT_U8, 17, CT_U8, 16);
    check_promotion(ct_mul, CT_I64, 4294967296.0, CT_I64, 4294967296.0, CT_I64, 0);
}

static void integer_pow_is_exact_and_follows_pytorch_for_negative_exponents(void **state)
{
    (void)state;
    check_promotion(ct_pow, CT_I32, 3, CT_I32, 19, CT_I32, 1162261467);
    check_promotion(ct_pow, CT_I32, -2, CT_I32, 31, CT_I32, -2147483648.0);
    check_promotion(ct_pow, CT_U8, 2, CT_U8, 9, CT_U8, 0);
    check_promotion(ct_pow, CT_I32, 0, CT_I32, 0, CT_I32, 1);
    check_promotion(ct_pow, CT_I32, 2, CT_I32, -1, CT_I32, 0);
    check_promotion(ct_pow, CT_I32, 1, CT_I32, -5, CT_I32, 1);
    check_promotion(ct_pow, CT_I64, -1, CT_I64, -3, CT_I64, -1);
    check_promotion(ct_pow, CT_I64, -1, CT_I64, -4, CT_I64, 1);
}

static void maximum_and_minimum_propagate_nan(void **state)
{
    (void)state;
    check_promotion(ct_maximum, CT_F32, NAN, CT_F32, 1, CT_F32, NAN);
    check_promotion(ct_maximum, CT_F32, 1, CT_F32, NAN, CT_F32, NAN);
    check_promotion(ct_minimum, CT_F64, NAN, CT_F64, 1, CT_F64, NAN);
    check_promotion(ct_minimum, CT_F64, 1, CT_F64, NAN, CT_F64, NAN);
    check_promotion(ct_eq, CT_F32, NAN, CT_F32, NAN, CT_BOOL, 0);
    check_promotion(ct_ne, CT_F32, NAN, CT_F32, NAN, CT_BOOL, 1);
}

/* Large enough to run on every thread, through the contiguous fast path and a broadcast. */
static void large_tensors_match_on_the_parallel_path(void **state)
{
    (void)state;
    const int64_t n = 300000;
    double *av = malloc((size_t)n * sizeof *av), *bv = malloc((size_t)n * sizeof *bv);
    for (int64_t k = 0; k < n; k++) {
        av[k] = (double)(k % 1000) * 0.25 - 100;
        bv[k] = (double)(k % 7) + 1;
    }
    int64_t shape[1] = {n}, half[2] = {n / 1000, 1000}, row[1] = {1000};
    ct_tensor *a = tensor_of(CT_F32, shape, 1, av), *b = tensor_of(CT_F32, shape, 1, bv);
    ct_tensor *m = tensor_of(CT_I32, half, 2, av), *r = tensor_of(CT_I32, row, 1, bv);
    for (int op = 0; op < OP_COUNT; op++) {
        check_op((op_kind)op, a, av, b, bv);
        if (op != POW) check_op((op_kind)op, m, av, r, bv);
    }
    ct_release(a);
    ct_release(b);
    ct_release(m);
    ct_release(r);
    free(av);
    free(bv);
}

/* 3^39 does not fit a double exactly: the int64 kernel must multiply, not call pow. */
static void int64_pow_is_exact_beyond_double_precision(void **state)
{
    (void)state;
    int64_t shape[1] = {2};
    int64_t base[2] = {3, -7}, exponent[2] = {39, 21}, back[2];
    ct_tensor *a = ct_tensor_from_data(base, CT_I64, shape, 1, CT_DEVICE_CPU);
    ct_tensor *b = ct_tensor_from_data(exponent, CT_I64, shape, 1, CT_DEVICE_CPU);
    ct_tensor *out = ct_pow(a, b);
    assert_int_equal(ct_tensor_to_array(out, back, sizeof back), CT_OK);
    assert_true(back[0] == 4052555153018976267LL);
    assert_true(back[1] == -558545864083284007LL);
    ct_release(out);
    ct_release(a);
    ct_release(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_op_matches_the_reference_for_every_dtype_pair),
        cmocka_unit_test(column_and_row_broadcast_to_a_matrix),
        cmocka_unit_test(zero_dim_operands_broadcast_and_two_give_a_zero_dim_result),
        cmocka_unit_test(transposed_and_sliced_views_give_the_values_they_show),
        cmocka_unit_test(empty_tensors_give_empty_results_of_the_broadcast_shape),
        cmocka_unit_test(mixed_dtypes_promote_as_in_pytorch),
        cmocka_unit_test(bool_add_is_logical_or_and_bool_mul_logical_and),
        cmocka_unit_test(integer_arithmetic_wraps_around_as_in_pytorch),
        cmocka_unit_test(integer_pow_is_exact_and_follows_pytorch_for_negative_exponents),
        cmocka_unit_test(maximum_and_minimum_propagate_nan),
        cmocka_unit_test(large_tensors_match_on_the_parallel_path),
        cmocka_unit_test(int64_pow_is_exact_beyond_double_precision),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
