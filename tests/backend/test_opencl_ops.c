/* Every op family runs on opencl:0 from the same kernel source as on the CPU, and gives the
 * CPU's results: fills, copies and dtype conversions, every elementwise op (binary with
 * broadcasting, scalar, unary, where) over every dtype, on views and empty tensors, indexing,
 * joining and integer matmul. Integers and bools exactly; float32 within 1e-5 relative, float64
 * within 1e-12 (the devices' exp, log, tanh, erf may differ from glibc's in the last bits).
 * Errors must be the same on both devices. */
#include "opencl_test.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static const ct_dtype all_dtypes[] = {CT_F32, CT_F64, CT_I32, CT_I64, CT_U8, CT_BOOL};

/* A CPU tensor of dtype with small values of both signs (a pattern chosen by `salt`). */
static ct_tensor *pattern(ct_dtype dtype, const int64_t *shape, int ndim, int salt)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    double *values = malloc((size_t)(n ? n : 1) * sizeof *values);
    for (int64_t i = 0; i < n; i++) {
        int64_t k = (i * (salt * 2 + 3) + salt) % 9;
        double v = (double)k - 3.0;
        if (ct_dtype_is_floating(dtype)) v += 0.25 * (double)((i + salt) % 3);
        if (dtype == CT_U8) v = (double)k * 7;
        if (dtype == CT_BOOL) v = k % 2;
        values[i] = v;
    }
    ct_tensor *as_double = ct_tensor_from_data(values, CT_F64, shape, ndim, CT_DEVICE_CPU);
    ct_tensor *t = ct_to_dtype(as_double, dtype);
    ct_release(as_double);
    free(values);
    assert_non_null(t);
    return t;
}

static void tolerance_of(ct_dtype dtype, double *rel, double *abs_tolerance)
{
    *rel = dtype == CT_F32 ? 1e-5 : dtype == CT_F64 ? 1e-12 : 0.0;
    *abs_tolerance = dtype == CT_F32 ? 1e-6 : dtype == CT_F64 ? 1e-12 : 0.0;
}

/* cpu_result was computed on the CPU, device_result on opencl:0: both NULL with the same
 * status, or the same values. Releases both. */
static void compare(ct_tensor *device_result, ct_tensor *cpu_result, const char *what)
{
    if (!cpu_result) {
        if (device_result) fail_msg("%s: fails on the CPU but not on opencl:0", what);
        ct_clear_error();
        return;
    }
    if (!device_result) fail_msg("%s: fails on opencl:0: %s", what, ct_last_error_message());
    assert_true(ct_device_equal(ct_tensor_device(device_result), OPENCL0));
    double rel, abs_tolerance;
    tolerance_of(ct_tensor_dtype(cpu_result), &rel, &abs_tolerance);
    assert_same_values(device_result, cpu_result, rel, abs_tolerance, what);
    ct_release(device_result);
    ct_release(cpu_result);
}

/* Runs op on the CPU inputs and on their copies on opencl:0; the status of a failure on the CPU
 * must repeat on opencl:0. */
typedef ct_tensor *(*binary_op)(const ct_tensor *, const ct_tensor *);
typedef ct_tensor *(*unary_op)(const ct_tensor *);

static void check_binary(binary_op op, const ct_tensor *a, const ct_tensor *b, const char *what)
{
    ct_tensor *da = ct_to(a, OPENCL0), *db = ct_to(b, OPENCL0);
    ct_tensor *on_cpu = op(a, b);
    ct_status cpu_status = ct_last_error();
    ct_clear_error();
    ct_tensor *on_device = op(da, db);
    if (!on_cpu) assert_int_equal(ct_last_error(), cpu_status);
    compare(on_device, on_cpu, what);
    ct_release(da), ct_release(db);
}

static void check_unary(unary_op op, const ct_tensor *a, const char *what)
{
    ct_tensor *da = ct_to(a, OPENCL0);
    ct_tensor *on_cpu = op(a);
    ct_status cpu_status = ct_last_error();
    ct_clear_error();
    ct_tensor *on_device = op(da);
    if (!on_cpu) assert_int_equal(ct_last_error(), cpu_status);
    compare(on_device, on_cpu, what);
    ct_release(da);
}

static void fills_and_sequences_match_the_cpu(void **state)
{
    (void)state;
    REQUIRE_OPENCL_DEVICES(1);
    int64_t shape[2] = {7, 9};
    for (size_t i = 0; i < ARRAY_LEN(all_dtypes); i++) {
        ct_dtype dtype = all_dtypes[i];
        compare(ct_zeros(shape, 2, dtype, OPENCL0), ct_zeros(shape, 2, dtype, CT_DEVICE_CPU), "zeros");
        compare(ct_ones(shape, 2, dtype, OPENCL0), ct_ones(shape, 2, dtype, CT_DEVICE_CPU), "ones");
        compare(ct_full(shape, 2, 3.75, dtype, OPENCL0), ct_full(shape, 2, 3.75, dtype, CT_DEVICE_CPU), "full");
        if (dtype == CT_BOOL) continue;
        compare(ct_arange(-5, 40, 3, dtype, OPENCL0), ct_arange(-5, 40, 3, dtype, CT_DEVICE_CPU), "arange");
        compare(ct_linspace(-2, 100, 33, dtype, OPENCL0), ct_linspace(-2, 100, 33, dtype, CT_DEVICE_CPU),
                "linspace");
    }
}

static void conversions_and_strided_copies_match_the_cpu(void **state)
{
    (void)state;
    REQUIRE_OPENCL_DEVICES(1);
    int64_t shape[3] = {4, 5, 6};
    for (size_t s = 0; s < ARRAY_LEN(all_dtypes); s++) {
        ct_tensor *a = pattern(all_dtypes[s], shape, 3, 1);
        ct_tensor *da = ct_to(a, OPENCL0);
        ct_tensor *view = ct_transpose(a, 0, 2), *dview = ct_transpose(da, 0, 2);
        ct_tensor *part = ct_slice(view, 1, 1, 5, 2), *dpart = ct_slice(dview, 1, 1, 5, 2);
        compare(ct_contiguous(dpart), ct_contiguous(part), "contiguous of a strided view");
        compare(ct_clone(dview), ct_clone(view), "clone");
        for (size_t d = 0; d < ARRAY_LEN(all_dtypes); d++) {
            compare(ct_to_dtype(da, all_dtypes[d]), ct_to_dtype(a, all_dtypes[d]), "to_dtype");
            compare(ct_to_dtype(dpart, all_dtypes[d]), ct_to_dtype(part, all_dtypes[d]),
                    "to_dtype of a view");
        }
        ct_release(part), ct_release(dpart), ct_release(view), ct_release(dview);
        ct_release(a), ct_release(da);
    }
}

static const struct {
    const char *name;
    binary_op fn;
} binary_ops[] = {
    {"add", ct_add}, {"sub", ct_sub}, {"mul", ct_mul}, {"div", ct_div}, {"pow", ct_pow},
    {"maximum", ct_maximum}, {"minimum", ct_minimum}, {"eq", ct_eq}, {"ne", ct_ne},
    {"lt", ct_lt}, {"le", ct_le}, {"gt", ct_gt}, {"ge", ct_ge},
};

static void binary_ops_match_the_cpu_with_broadcasting_and_views(void **state)
{
    (void)state;
    REQUIRE_OPENCL_DEVICES(1);
    int64_t a_shape[3] = {3, 1, 5}, b_shape[2] = {4, 5}, square[2] = {6, 6}, empty[2] = {0, 5};
    for (size_t o = 0; o < ARRAY_LEN(binary_ops); o++) {
        for (size_t i = 0; i < ARRAY_LEN(all_dtypes); i++) {
            ct_dtype dtype = all_dtypes[i];
            char what[96];
            snprintf(what, sizeof what, "%s %s", binary_ops[o].name, ct_dtype_name(dtype));
            ct_tensor *a = pattern(dtype, a_shape, 3, 1), *b = pattern(dtype, b_shape, 2, 2);
            check_binary(binary_ops[o].fn, a, b, what);
            /* a transposed operand against a contiguous one of another dtype */
            ct_tensor *s = pattern(dtype, square, 2, 3), *t = ct_transpose(s, 0, 1);
            ct_tensor *other = pattern(all_dtypes[(i + 1) % ARRAY_LEN(all_dtypes)], square, 2, 4);
            check_binary(binary_ops[o].fn, t, other, what);
            ct_tensor *e1 = pattern(dtype, empty, 2, 0), *e2 = pattern(dtype, b_shape + 1, 1, 0);
            check_binary(binary_ops[o].fn, e1, e2, what);
            ct_release(a), ct_release(b), ct_release(s), ct_release(t), ct_release(other);
            ct_release(e1), ct_release(e2);
        }
    }
}

static const struct {
    const char *name;
    ct_tensor *(*fn)(const ct_tensor *, double);
    double value;
} scalar_ops[] = {
    {"add_scalar", ct_add_scalar, 2.5}, {"sub_scalar", ct_sub_scalar, -1.0},
    {"mul_scalar", ct_mul_scalar, 3.0}, {"div_scalar", ct_div_scalar, 4.0},
    {"pow_scalar", ct_pow_scalar, 2.0}, {"pow_scalar", ct_pow_scalar, 0.5},
    {"eq_scalar", ct_eq_scalar, 1.0}, {"ne_scalar", ct_ne_scalar, 1.0},
    {"lt_scalar", ct_lt_scalar, 0.5}, {"le_scalar", ct_le_scalar, 0.0},
    {"gt_scalar", ct_gt_scalar, -1.0}, {"ge_scalar", ct_ge_scalar, 2.0},
};

static ct_tensor *clamp_both(const ct_tensor *a) { return ct_clamp(a, -1.5, 2.0); }
static ct_tensor *clamp_low(const ct_tensor *a) { return ct_clamp_min(a, 0.5); }
static ct_tensor *clamp_high(const ct_tensor *a) { return ct_clamp_max(a, 1.0); }

static const struct {
    const char *name;
    unary_op fn;
} unary_ops[] = {
    {"neg", ct_neg}, {"abs", ct_abs}, {"exp", ct_exp}, {"log", ct_log}, {"sqrt", ct_sqrt},
    {"relu", ct_relu}, {"sigmoid", ct_sigmoid}, {"tanh", ct_tanh}, {"gelu", ct_gelu},
    {"clamp", clamp_both}, {"clamp_min", clamp_low}, {"clamp_max", clamp_high},
};

static void scalar_and_unary_ops_match_the_cpu(void **state)
{
    (void)state;
    REQUIRE_OPENCL_DEVICES(1);
    int64_t shape[2] = {5, 7};
    for (size_t i = 0; i < ARRAY_LEN(all_dtypes); i++) {
        ct_dtype dtype = all_dtypes[i];
        ct_tensor *a = pattern(dtype, shape, 2, 5), *view = ct_transpose(a, 0, 1);
        ct_tensor *da = ct_to(a, OPENCL0), *dview = ct_transpose(da, 0, 1);
        char what[96];
        for (size_t o = 0; o < ARRAY_LEN(scalar_ops); o++) {
            snprintf(what, sizeof what, "%s %s", scalar_ops[o].name, ct_dtype_name(dtype));
            compare(scalar_ops[o].fn(dview, scalar_ops[o].value),
                    scalar_ops[o].fn(view, scalar_ops[o].value), what);
        }
        for (size_t o = 0; o < ARRAY_LEN(unary_ops); o++) {
            snprintf(what, sizeof what, "%s %s", unary_ops[o].name, ct_dtype_name(dtype));
            check_unary(unary_ops[o].fn, a, what);
            check_unary(unary_ops[o].fn, view, what);
        }
        ct_release(a), ct_release(view), ct_release(da), ct_release(dview);
    }
}

static void where_matches_the_cpu(void **state)
{
    (void)state;
    REQUIRE_OPENCL_DEVICES(1);
    int64_t c_shape[2] = {4, 1}, a_shape[1] = {6}, b_shape[2] = {4, 6};
    for (size_t i = 0; i < ARRAY_LEN(all_dtypes); i++) {
        ct_tensor *cond = pattern(CT_BOOL, c_shape, 2, 1);
        ct_tensor *a = pattern(all_dtypes[i], a_shape, 1, 2), *b = pattern(all_dtypes[i], b_shape, 2, 3);
        ct_tensor *dc = ct_to(cond, OPENCL0), *da = ct_to(a, OPENCL0), *db = ct_to(b, OPENCL0);
        compare(ct_where(dc, da, db), ct_where(cond, a, b), "where");
        ct_release(cond), ct_release(a), ct_release(b), ct_release(dc), ct_release(da), ct_release(db);
    }
}

static void indexing_and_joining_match_the_cpu(void **state)
{
    (void)state;
    REQUIRE_OPENCL_DEVICES(1);
    int64_t shape[2] = {5, 6}, idx_shape[1] = {4}, gather_shape[2] = {5, 3};
    int64_t idx_values[4] = {4, 0, 2, 4}, gather_values[15] = {0, 5, 1, 2, 2, 3, 4, 0, 5, 1, 1, 1, 0, 3, 5};
    ct_tensor *idx = ct_tensor_from_data(idx_values, CT_I64, idx_shape, 1, CT_DEVICE_CPU);
    ct_tensor *gidx = ct_tensor_from_data(gather_values, CT_I64, gather_shape, 2, CT_DEVICE_CPU);
    ct_tensor *didx = ct_to(idx, OPENCL0), *dgidx = ct_to(gidx, OPENCL0);
    ct_tensor *idx32 = ct_to_dtype(didx, CT_I32), *cidx32 = ct_to_dtype(idx, CT_I32);
    for (size_t i = 0; i < ARRAY_LEN(all_dtypes); i++) {
        ct_tensor *a = pattern(all_dtypes[i], shape, 2, 7), *da = ct_to(a, OPENCL0);
        ct_tensor *b = pattern(all_dtypes[i], shape, 2, 8), *db = ct_to(b, OPENCL0);
        compare(ct_index_select(da, 0, didx), ct_index_select(a, 0, idx), "index_select dim 0");
        compare(ct_index_select(da, 1, idx32), ct_index_select(a, 1, cidx32), "index_select dim 1");
        compare(ct_gather(da, 1, dgidx), ct_gather(a, 1, gidx), "gather");
        const ct_tensor *pair[2] = {a, b}, *dpair[2] = {da, db};
        compare(ct_cat(dpair, 2, 1), ct_cat(pair, 2, 1), "cat");
        compare(ct_stack(dpair, 2, 0), ct_stack(pair, 2, 0), "stack");
        if (all_dtypes[i] == CT_I32 || all_dtypes[i] == CT_I64 || all_dtypes[i] == CT_U8) {
            ct_tensor *bt = ct_transpose(b, 0, 1), *dbt = ct_transpose(db, 0, 1);
            compare(ct_matmul(da, dbt), ct_matmul(a, bt), "integer matmul");
            ct_release(bt), ct_release(dbt);
        }
        ct_release(a), ct_release(da), ct_release(b), ct_release(db);
    }
    compare(ct_one_hot(didx, 6), ct_one_hot(idx, 6), "one_hot");
    compare(ct_one_hot(didx, -1), ct_one_hot(idx, -1), "one_hot with the classes counted");

    /* an index out of range is found on the device, with the same error as on the CPU */
    int64_t bad_values[3] = {1, 9, 0};
    int64_t three[1] = {3};
    ct_tensor *bad = ct_tensor_from_data(bad_values, CT_I64, three, 1, CT_DEVICE_CPU);
    ct_tensor *dbad = ct_to(bad, OPENCL0);
    ct_tensor *a = pattern(CT_F32, shape, 2, 1), *da = ct_to(a, OPENCL0);
    assert_null(ct_index_select(a, 0, bad));
    ct_status cpu_status = ct_last_error();
    char cpu_message[1024];
    snprintf(cpu_message, sizeof cpu_message, "%s", ct_last_error_message());
    ct_clear_error();
    assert_null(ct_index_select(da, 0, dbad));
    assert_int_equal(ct_last_error(), cpu_status);
    assert_string_equal(ct_last_error_message(), cpu_message);
    ct_clear_error();
    ct_release(a), ct_release(da), ct_release(bad), ct_release(dbad);
    ct_release(idx), ct_release(gidx), ct_release(didx), ct_release(dgidx), ct_release(idx32), ct_release(cidx32);
}

static void reductions_and_softmax_match_the_cpu(void **state)
{
    (void)state;
    REQUIRE_OPENCL_DEVICES(1);
    int64_t shape[3] = {6, 50, 7}, big[1] = {100003};
    const int dims_sets[4][2] = {{0, 0}, {1, 0}, {0, 2}, {2, 0}};
    const int dims_counts[4] = {0, 1, 2, 1}; /* all dims, dim 1, dims 0 and 2, dim 2 */
    for (size_t i = 0; i < ARRAY_LEN(all_dtypes); i++) {
        ct_dtype dtype = all_dtypes[i];
        ct_tensor *a = pattern(dtype, shape, 3, 3), *da = ct_to(a, OPENCL0);
        ct_tensor *view = ct_transpose(a, 0, 2), *dview = ct_transpose(da, 0, 2);
        for (int v = 0; v < 2; v++) {
            const ct_tensor *x = v ? view : a, *dx = v ? dview : da;
            for (int d = 0; d < 4; d++) {
                const int *dims = dims_sets[d];
                int count = dims_counts[d];
                bool keep = d % 2 == 1;
                compare(ct_sum(dx, dims, count, keep), ct_sum(x, dims, count, keep), "sum");
                compare(ct_mean(dx, dims, count, keep), ct_mean(x, dims, count, keep), "mean");
                compare(ct_max(dx, dims, count, keep), ct_max(x, dims, count, keep), "max");
                compare(ct_min(dx, dims, count, keep), ct_min(x, dims, count, keep), "min");
                compare(ct_var(dx, dims, count, 1, keep), ct_var(x, dims, count, 1, keep), "var");
                compare(ct_std(dx, dims, count, 0, keep), ct_std(x, dims, count, 0, keep), "std");
            }
            for (int dim = 0; dim < 3; dim++) {
                compare(ct_argmax(dx, dim, false), ct_argmax(x, dim, false), "argmax");
                compare(ct_argmin(dx, dim, true), ct_argmin(x, dim, true), "argmin");
                compare(ct_softmax(dx, dim), ct_softmax(x, dim), "softmax");
                compare(ct_log_softmax(dx, dim), ct_log_softmax(x, dim), "log_softmax");
            }
            compare(ct_argmax_all(dx), ct_argmax_all(x), "argmax_all");
            compare(ct_argmin_all(dx), ct_argmin_all(x), "argmin_all");
        }
        ct_release(view), ct_release(dview), ct_release(a), ct_release(da);
    }
    /* a long reduction over several chunks */
    ct_tensor *a = pattern(CT_F64, big, 1, 4), *da = ct_to(a, OPENCL0);
    compare(ct_sum(da, NULL, 0, false), ct_sum(a, NULL, 0, false), "sum of 100003");
    compare(ct_argmax_all(da), ct_argmax_all(a), "argmax of 100003");
    ct_release(a), ct_release(da);
}

static void a_large_launch_with_a_prime_size_is_complete(void **state)
{
    (void)state;
    REQUIRE_OPENCL_DEVICES(1);
    int64_t n = 1000003; /* prime: no work-group size divides it */
    ct_tensor *a = ct_arange(0, (double)n, 1, CT_F64, OPENCL0);
    ct_tensor *b = ct_add_scalar(a, 1);
    double *back = malloc((size_t)n * sizeof *back);
    assert_int_equal(ct_tensor_to_array(b, back, (size_t)n * sizeof *back), CT_OK);
    for (int64_t i = 0; i < n; i++)
        if (back[i] != (double)(i + 1)) fail_msg("element %lld is %g", (long long)i, back[i]);
    free(back);
    ct_release(a), ct_release(b);
}

int main(void)
{
    ct_scope_push();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fills_and_sequences_match_the_cpu),
        cmocka_unit_test(conversions_and_strided_copies_match_the_cpu),
        cmocka_unit_test(binary_ops_match_the_cpu_with_broadcasting_and_views),
        cmocka_unit_test(scalar_and_unary_ops_match_the_cpu),
        cmocka_unit_test(where_matches_the_cpu),
        cmocka_unit_test(indexing_and_joining_match_the_cpu),
        cmocka_unit_test(reductions_and_softmax_match_the_cpu),
        cmocka_unit_test(a_large_launch_with_a_prime_size_is_complete),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    ct_scope_pop();
    return failed;
}
