/* Gradients of the reductions max, min (amax/amin: ties share the gradient), var and std (with
 * correction): finite differences over dims, negative dims, keepdim and strided views, on the CPU
 * and on every OpenCL device; ties, zero variance and empty tensors checked against hand values. */
#include <math.h>
#include <stdio.h>

#include "support/gradcheck.h"
#include "test_common.h"

static ct_tensor *f_max_dim1(ct_tensor *const *x, void *c) { (void)c; return ct_max(x[0], (int[]){1}, 1, false); }
static ct_tensor *f_max_all(ct_tensor *const *x, void *c) { (void)c; return ct_max(x[0], NULL, 0, false); }
static ct_tensor *f_max_neg_keep(ct_tensor *const *x, void *c) { (void)c; return ct_max(x[0], (int[]){0, -1}, 2, true); }
static ct_tensor *f_min_dim0(ct_tensor *const *x, void *c) { (void)c; return ct_min(x[0], (int[]){0}, 1, false); }
static ct_tensor *f_min_last_keep(ct_tensor *const *x, void *c) { (void)c; return ct_min(x[0], (int[]){-1}, 1, true); }
static ct_tensor *f_min_all(ct_tensor *const *x, void *c) { (void)c; return ct_min(x[0], NULL, 0, true); }

/* var / std with (dims, correction, keepdim) from the context. */
typedef struct spread_case {
    int dims[3];
    int ndims;
    int64_t correction;
    bool keepdim;
} spread_case;

static ct_tensor *f_var(ct_tensor *const *x, void *c)
{
    const spread_case *s = c;
    return ct_var(x[0], s->dims, s->ndims, s->correction, s->keepdim);
}

static ct_tensor *f_std(ct_tensor *const *x, void *c)
{
    const spread_case *s = c;
    return ct_std(x[0], s->dims, s->ndims, s->correction, s->keepdim);
}

/* A float64 tensor whose elements are distinct and at least 1/numel apart (no ties within the
 * finite-difference step), in a shuffled order. */
static ct_tensor *distinct(ct_device device, const int64_t *shape, int ndim)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    double values[64];
    assert_true(n <= 64);
    for (int64_t j = 0; j < n; j++) values[j] = 0.5 + (double)j / (double)n;
    uint32_t state = 12345;
    for (int64_t j = n - 1; j > 0; j--) {
        state = state * 1664525u + 1013904223u;
        int64_t k = (int64_t)(state >> 8) % (j + 1);
        double v = values[j];
        values[j] = values[k];
        values[k] = v;
    }
    return ct_tensor_from_data(values, CT_F64, shape, ndim, device);
}

static ct_tensor *random_input(ct_device device, const int64_t *shape, int ndim)
{
    ct_tensor *r = ct_randn(shape, ndim, CT_F64, CT_DEVICE_CPU);
    ct_tensor *out = ct_to(r, device);
    ct_release(r);
    return out;
}

static void check_max_min_on(ct_device device)
{
    ct_scope_push();
    int64_t s234[3] = {2, 3, 4};
    ct_tensor *t = distinct(device, s234, 3);
    ct_gradcheck("max over dim 1", f_max_dim1, &t, NULL, 1, NULL);
    ct_gradcheck("max of all", f_max_all, &t, NULL, 1, NULL);
    ct_gradcheck("max over 0 and -1, keepdim", f_max_neg_keep, &t, NULL, 1, NULL);
    ct_gradcheck("min over dim 0", f_min_dim0, &t, NULL, 1, NULL);
    ct_gradcheck("min over -1, keepdim", f_min_last_keep, &t, NULL, 1, NULL);
    ct_gradcheck("min of all, keepdim", f_min_all, &t, NULL, 1, NULL);
    ct_tensor *transposed = ct_detach(ct_transpose(t, 0, 2)); /* [4, 3, 2], a strided leaf */
    ct_gradcheck("max over dim 1 of a transposed view", f_max_dim1, &transposed, NULL, 1, NULL);
    ct_gradcheck("min over dim 0 of a transposed view", f_min_dim0, &transposed, NULL, 1, NULL);
    ct_tensor *every_other = ct_detach(ct_slice(t, 2, 0, 4, 2)); /* [2, 3, 2], a strided leaf */
    ct_gradcheck("max over 0 and -1 of a sliced view", f_max_neg_keep, &every_other, NULL, 1, NULL);
    ct_scope_pop();
}

static void check_var_std_on(ct_device device)
{
    ct_scope_push();
    ct_manual_seed(11);
    int64_t s234[3] = {2, 3, 4};
    ct_tensor *t = random_input(device, s234, 3);
    const spread_case cases[] = {
        {{1}, 1, 1, false},       /* the default: unbiased */
        {{0, -1}, 2, 0, true},    /* population, negative dim, keepdim */
        {{0}, 0, 1, false},       /* every dim */
        {{2}, 1, 2, true},        /* correction 2 */
        {{-2, 0}, 2, 1, false},
    };
    char what[96];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        spread_case c = cases[i];
        snprintf(what, sizeof what, "var case %zu", i);
        ct_gradcheck(what, f_var, &t, NULL, 1, &c);
        snprintf(what, sizeof what, "std case %zu", i);
        ct_gradcheck(what, f_std, &t, NULL, 1, &c);
    }
    ct_tensor *transposed = ct_detach(ct_transpose(t, 0, 2));
    spread_case over1 = {{1}, 1, 1, false};
    ct_gradcheck("var over dim 1 of a transposed view", f_var, &transposed, NULL, 1, &over1);
    ct_gradcheck("std over dim 1 of a transposed view", f_std, &transposed, NULL, 1, &over1);
    ct_scope_pop();
}

/* The gradient of sum(f(x)) for x given as float64 values on device, read back to the host. */
static void grad_of_sum(ct_device device, const double *values, const int64_t *shape, int ndim,
                        ct_tensor *(*f)(const ct_tensor *), double *grad, int64_t n, const char *name)
{
    ct_scope_push();
    ct_tensor *x = ct_tensor_from_data(values, CT_F64, shape, ndim, device);
    assert_int_equal(ct_requires_grad_(x, true), CT_OK);
    ct_tensor *y = f(x);
    assert_non_null(y);
    if (name) assert_string_equal(ct_grad_fn_name(y), name);
    assert_int_equal(ct_backward(ct_sum(y, NULL, 0, false)), CT_OK);
    ct_tensor *g = ct_grad(x);
    assert_non_null(g);
    assert_int_equal(ct_tensor_dtype(g), CT_F64);
    assert_true(ct_device_equal(ct_tensor_device(g), device));
    assert_int_equal(ct_tensor_to_array(g, grad, sizeof(double) * (size_t)n), CT_OK);
    ct_release(g);
    ct_scope_pop();
}

static ct_tensor *amax_rows(const ct_tensor *x) { return ct_max(x, (int[]){1}, 1, false); }
static ct_tensor *amin_rows_keep(const ct_tensor *x) { return ct_min(x, (int[]){-1}, 1, true); }
static ct_tensor *amax_all(const ct_tensor *x) { return ct_max(x, NULL, 0, false); }
static ct_tensor *std_rows(const ct_tensor *x) { return ct_std(x, (int[]){1}, 1, 1, false); }
static ct_tensor *var_rows_correction_3(const ct_tensor *x) { return ct_var(x, (int[]){1}, 1, 3, false); }
static ct_tensor *std_rows_correction_3(const ct_tensor *x) { return ct_std(x, (int[]){1}, 1, 3, false); }

static void check_ties_on(ct_device device)
{
    const double x[6] = {1, 3, 3, 2, 2, 2};
    const int64_t shape[2] = {2, 3};
    double g[6];
    grad_of_sum(device, x, shape, 2, amax_rows, g, 6, "AmaxBackward");
    const double max_expected[6] = {0, 0.5, 0.5, 1.0 / 3, 1.0 / 3, 1.0 / 3};
    for (int i = 0; i < 6; i++) assert_true(fabs(g[i] - max_expected[i]) < 1e-12);
    grad_of_sum(device, x, shape, 2, amin_rows_keep, g, 6, "AminBackward");
    const double min_expected[6] = {1, 0, 0, 1.0 / 3, 1.0 / 3, 1.0 / 3};
    for (int i = 0; i < 6; i++) assert_true(fabs(g[i] - min_expected[i]) < 1e-12);
    grad_of_sum(device, x, shape, 2, amax_all, g, 6, "AmaxBackward");
    const double all_expected[6] = {0, 0.5, 0.5, 0, 0, 0};
    for (int i = 0; i < 6; i++) assert_true(fabs(g[i] - all_expected[i]) < 1e-12);
}

static void check_degenerate_spreads_on(ct_device device)
{
    /* Row 0 constant (std 0): PyTorch's gradient is NaN there; row 1 is ordinary. */
    const double x[6] = {2, 2, 2, 1, 2, 4};
    const int64_t shape[2] = {2, 3};
    double g[6];
    grad_of_sum(device, x, shape, 2, std_rows, g, 6, "StdBackward");
    for (int i = 0; i < 3; i++) assert_true(isnan(g[i]));
    double mean = 7.0 / 3, std = sqrt(((1 - mean) * (1 - mean) + (2 - mean) * (2 - mean) + (4 - mean) * (4 - mean)) / 2);
    for (int i = 3; i < 6; i++) assert_true(fabs(g[i] - (x[i] - mean) / (2 * std)) < 1e-12);
    /* correction >= K: the divisor is 0, the forward inf, the gradient inf or NaN, no crash. */
    grad_of_sum(device, x, shape, 2, var_rows_correction_3, g, 6, "VarBackward");
    for (int i = 0; i < 6; i++) assert_false(isfinite(g[i]));
    grad_of_sum(device, x, shape, 2, std_rows_correction_3, g, 6, "StdBackward");
    for (int i = 0; i < 6; i++) assert_false(isfinite(g[i]));
}

/* Reductions of tensors with no elements record and backpropagate empty gradients. */
static void check_empty_on(ct_device device)
{
    ct_scope_push();
    int64_t s03[2] = {0, 3}, s20[2] = {2, 0};
    ct_tensor *rows = ct_zeros(s03, 2, CT_F64, device), *cols = ct_zeros(s20, 2, CT_F64, device);
    ct_requires_grad_(rows, true);
    ct_requires_grad_(cols, true);
    ct_tensor *outs[4] = {ct_max(rows, (int[]){1}, 1, false), ct_min(rows, (int[]){-1}, 1, true),
                          ct_var(rows, (int[]){1}, 1, 1, false), ct_std(cols, (int[]){1}, 1, 1, true)};
    for (int i = 0; i < 4; i++) {
        assert_non_null(outs[i]);
        assert_true(ct_requires_grad(outs[i]));
        assert_int_equal(ct_backward(ct_sum(outs[i], NULL, 0, false)), CT_OK);
    }
    ct_tensor *g_rows = ct_grad(rows), *g_cols = ct_grad(cols);
    assert_non_null(g_rows);
    assert_non_null(g_cols);
    assert_int_equal(ct_numel(g_rows), 0);
    assert_int_equal(ct_tensor_shape(g_rows)[1], 3);
    assert_int_equal(ct_tensor_shape(g_cols)[0], 2);
    ct_release(g_rows);
    ct_release(g_cols);
    ct_scope_pop();
}

static void for_each_device(void (*check)(ct_device), bool opencl)
{
    if (!opencl) {
        check(CT_DEVICE_CPU);
        return;
    }
    if (ct_device_count(CT_OPENCL) == 0) skip();
    for (int i = 0; i < ct_device_count(CT_OPENCL); i++) check((ct_device){CT_OPENCL, i});
}

static void max_and_min_gradients_on_the_cpu(void **state) { (void)state; for_each_device(check_max_min_on, false); }
static void max_and_min_gradients_on_opencl(void **state) { (void)state; for_each_device(check_max_min_on, true); }
static void var_and_std_gradients_on_the_cpu(void **state) { (void)state; for_each_device(check_var_std_on, false); }
static void var_and_std_gradients_on_opencl(void **state) { (void)state; for_each_device(check_var_std_on, true); }
static void tied_extremes_share_the_gradient_on_the_cpu(void **state) { (void)state; for_each_device(check_ties_on, false); }
static void tied_extremes_share_the_gradient_on_opencl(void **state) { (void)state; for_each_device(check_ties_on, true); }
static void zero_spread_gives_nan_or_inf_on_the_cpu(void **state) { (void)state; for_each_device(check_degenerate_spreads_on, false); }
static void zero_spread_gives_nan_or_inf_on_opencl(void **state) { (void)state; for_each_device(check_degenerate_spreads_on, true); }
static void empty_reductions_backpropagate_on_the_cpu(void **state) { (void)state; for_each_device(check_empty_on, false); }
static void empty_reductions_backpropagate_on_opencl(void **state) { (void)state; for_each_device(check_empty_on, true); }

static void float32_gradients_stay_float32(void **state)
{
    (void)state;
    ct_scope_push();
    const float x[4] = {1, 5, 2, 3};
    int64_t shape[1] = {4};
    ct_tensor *t = ct_tensor_from_data(x, CT_F32, shape, 1, CT_DEVICE_CPU);
    ct_requires_grad_(t, true);
    ct_tensor *y = ct_add(ct_max(t, NULL, 0, false), ct_var(t, NULL, 0, 0, false));
    assert_int_equal(ct_backward(y), CT_OK);
    ct_tensor *g = ct_grad(t);
    assert_int_equal(ct_tensor_dtype(g), CT_F32);
    float got[4];
    assert_int_equal(ct_tensor_to_array(g, got, sizeof got), CT_OK);
    /* d var / dx = 2 (x - 2.75) / 4, plus 1 at the max */
    const float expected[4] = {-0.875f, 2.125f, -0.375f, 0.125f};
    for (int i = 0; i < 4; i++) assert_true(fabsf(got[i] - expected[i]) < 1e-6f);
    ct_release(g);
    ct_scope_pop();
}

static void integer_reductions_record_nothing(void **state)
{
    (void)state;
    ct_scope_push();
    const int32_t x[4] = {1, 5, 2, 3};
    int64_t shape[1] = {4};
    ct_tensor *t = ct_tensor_from_data(x, CT_I32, shape, 1, CT_DEVICE_CPU);
    ct_tensor *m = ct_max(t, NULL, 0, false);
    assert_false(ct_requires_grad(m));
    assert_null(ct_grad_fn_name(m));
    ct_scope_pop();
}

static void no_grad_mode_records_no_reduction(void **state)
{
    (void)state;
    ct_scope_push();
    int64_t shape[2] = {2, 3};
    ct_tensor *t = distinct(CT_DEVICE_CPU, shape, 2);
    ct_requires_grad_(t, true);
    ct_no_grad_push();
    ct_tensor *outs[4] = {ct_max(t, NULL, 0, false), ct_min(t, (int[]){0}, 1, false),
                          ct_var(t, NULL, 0, 1, false), ct_std(t, (int[]){1}, 1, 1, true)};
    ct_no_grad_pop();
    for (int i = 0; i < 4; i++) assert_false(ct_requires_grad(outs[i]));
    ct_scope_pop();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(max_and_min_gradients_on_the_cpu),
        cmocka_unit_test(max_and_min_gradients_on_opencl),
        cmocka_unit_test(var_and_std_gradients_on_the_cpu),
        cmocka_unit_test(var_and_std_gradients_on_opencl),
        cmocka_unit_test(tied_extremes_share_the_gradient_on_the_cpu),
        cmocka_unit_test(tied_extremes_share_the_gradient_on_opencl),
        cmocka_unit_test(zero_spread_gives_nan_or_inf_on_the_cpu),
        cmocka_unit_test(zero_spread_gives_nan_or_inf_on_opencl),
        cmocka_unit_test(empty_reductions_backpropagate_on_the_cpu),
        cmocka_unit_test(empty_reductions_backpropagate_on_opencl),
        cmocka_unit_test(float32_gradients_stay_float32),
        cmocka_unit_test(integer_reductions_record_nothing),
        cmocka_unit_test(no_grad_mode_records_no_reduction),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
