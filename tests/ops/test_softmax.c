/* ct_softmax and ct_log_softmax match a reference computed in double (float32 within 1e-6
 * absolute + 1e-5 relative, float64 within 1e-13 + 1e-12 relative) over dims (the innermost one,
 * and others whose rows lie side by side: the tile kernels), non-contiguous views and empty
 * tensors; rows sum to 1, inputs of 1000 do not overflow, and log_softmax is log(softmax). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "reduce_reference.h"

typedef struct softmax_case {
    int ndim;
    int64_t shape[4];
    int dim;
} softmax_case;

static const softmax_case cases[] = {
    {2, {5, 7}, 1},       {2, {5, 7}, 0},  {2, {5, 7}, -1},     {3, {3, 4, 5}, 1}, {3, {3, 4, 5}, -3},
    {4, {2, 3, 4, 5}, 2}, {1, {100}, 0},   {2, {4, 1}, 1},      {0, {0}, 0},       {0, {0}, -1},
    {2, {2, 5000}, 1},    {2, {5000, 3}, 0}, {2, {0, 3}, 1},    {2, {3, 0}, 1},    {3, {2, 0, 4}, 0},
    {3, {2, 50, 40}, 1},  {2, {30, 20}, 0},  {4, {2, 3, 16, 2}, 1}};

static double tolerance(ct_dtype dtype, double want)
{
    return dtype == CT_F32 ? 1e-6 + 1e-5 * fabs(want) : 1e-13 + 1e-12 * fabs(want);
}

/* softmax (or log_softmax) of `in` along dim, against the reference row by row. */
static void check_softmax(const test_input *in, int dim, bool take_log)
{
    ct_dtype dtype = ct_tensor_dtype(in->t);
    ct_tensor *out = take_log ? ct_log_softmax(in->t, dim) : ct_softmax(in->t, dim);
    if (!out) fail_msg("softmax failed: %s", ct_last_error_message());
    assert_int_equal(ct_tensor_dtype(out), dtype);
    assert_int_equal(ct_tensor_ndim(out), in->ndim);
    for (int d = 0; d < in->ndim; d++) assert_int_equal(ct_tensor_shape(out)[d], in->shape[d]);
    double *got = read_doubles(out);
    assert_non_null(got);
    int reduce_dim = in->ndim ? (dim + in->ndim) % in->ndim : 0;
    ref_plan r = ref_plan_make(in, &reduce_dim, in->ndim ? 1 : 0, true);
    double *row = calloc((size_t)(r.count > 0 ? r.count : 1), sizeof(double));
    /* element k of row m sits at the row-major index of its coordinates */
    int64_t stride = 1;
    for (int d = in->ndim - 1; d > reduce_dim; d--) stride *= in->shape[d];
    for (int64_t m = 0; m < r.outputs; m++) {
        ref_row(&r, in->values, m, row);
        double top = row[0], sum = 0;
        for (int64_t k = 0; k < r.count; k++) top = row[k] > top ? row[k] : top;
        for (int64_t k = 0; k < r.count; k++) sum += exp(row[k] - top);
        int64_t outer = m / stride, inner = m % stride;
        for (int64_t k = 0; k < r.count; k++) {
            double want = take_log ? row[k] - top - log(sum) : exp(row[k] - top) / sum;
            double value = got[(outer * r.count + k) * stride + inner];
            if (!(fabs(value - want) <= tolerance(dtype, want)))
                fail_msg("%s %s row %lld element %lld: expected %.17g, got %.17g", take_log ? "log_softmax" : "softmax",
                         ct_dtype_name(dtype), (long long)m, (long long)k, want, value);
        }
    }
    free(row);
    free(got);
    ct_release(out);
}

static void softmax_and_log_softmax_match_reference(void **state)
{
    (void)state;
    const ct_dtype dtypes[2] = {CT_F32, CT_F64};
    unsigned seed = 1;
    for (int t = 0; t < 2; t++)
        for (size_t c = 0; c < CT_ARRAY_LEN(cases); c++)
            for (int layout = 0; layout < LAYOUT_COUNT; layout++) {
                test_input in = make_input(dtypes[t], cases[c].shape, cases[c].ndim, (test_layout)layout, seed++);
                check_softmax(&in, cases[c].dim, false);
                check_softmax(&in, cases[c].dim, true);
                free_input(&in);
            }
}

static void softmax_rows_sum_to_one(void **state)
{
    (void)state;
    int64_t shape[3] = {4, 300, 6};
    test_input in = make_input(CT_F32, shape, 3, LAYOUT_TRANSPOSED, 7);
    ct_tensor *p = ct_softmax(in.t, 1);
    int dim = 1;
    ct_tensor *sums = ct_sum(p, &dim, 1, false);
    double *got = read_doubles(sums);
    for (int i = 0; i < 24; i++) assert_true(fabs(got[i] - 1.0) < 1e-5);
    free(got);
    ct_release(sums);
    ct_release(p);
    free_input(&in);
}

static void large_inputs_do_not_overflow(void **state)
{
    (void)state;
    float data[4] = {1000.0f, 999.0f, 0.0f, -1000.0f};
    int64_t shape[1] = {4};
    ct_tensor *t = ct_tensor_from_data(data, CT_F32, shape, 1, CT_DEVICE_CPU);
    ct_tensor *p = ct_softmax(t, 0), *lp = ct_log_softmax(t, 0);
    float got[4], log_got[4];
    assert_int_equal(ct_tensor_to_array(p, got, sizeof got), CT_OK);
    assert_int_equal(ct_tensor_to_array(lp, log_got, sizeof log_got), CT_OK);
    double sum = 1.0 + exp(-1.0);
    assert_true(fabs(got[0] - 1.0 / sum) < 1e-6);
    assert_true(fabs(got[1] - exp(-1.0) / sum) < 1e-6);
    assert_true(got[2] == 0.0f && got[3] == 0.0f);
    assert_true(fabs(log_got[0] - -log(sum)) < 1e-5);
    assert_true(fabs(log_got[2] - (-1000.0 - log(sum))) < 1e-3);
    assert_true(fabs(log_got[3] - (-2000.0 - log(sum))) < 1e-3);
    ct_release(lp);
    ct_release(p);
    ct_release(t);
}

static void log_softmax_is_log_of_softmax(void **state)
{
    (void)state;
    int64_t shape[2] = {6, 50};
    test_input in = make_input(CT_F64, shape, 2, LAYOUT_STRIDED, 3);
    ct_tensor *p = ct_softmax(in.t, -1), *lp = ct_log_softmax(in.t, -1);
    double *probs = read_doubles(p), *logs = read_doubles(lp);
    for (int i = 0; i < 300; i++) assert_true(fabs(log(probs[i]) - logs[i]) < 1e-12 * (1 + fabs(logs[i])));
    free(probs);
    free(logs);
    ct_release(lp);
    ct_release(p);
    free_input(&in);
}

static void softmax_of_a_scalar_is_one(void **state)
{
    (void)state;
    double v = 42.0;
    ct_tensor *t = ct_tensor_from_data(&v, CT_F64, NULL, 0, CT_DEVICE_CPU);
    ct_tensor *p = ct_softmax(t, 0), *lp = ct_log_softmax(t, -1);
    double value = 0;
    assert_int_equal(ct_item(p, &value), CT_OK);
    assert_true(value == 1.0);
    assert_int_equal(ct_item(lp, &value), CT_OK);
    assert_true(value == 0.0);
    ct_release(lp);
    ct_release(p);
    ct_release(t);
}

static void bad_softmax_inputs_are_errors(void **state)
{
    (void)state;
    int64_t shape[2] = {2, 3};
    ct_tensor *ints = ct_zeros(shape, 2, CT_I64, CT_DEVICE_CPU);
    ct_tensor *floats = ct_zeros(shape, 2, CT_F32, CT_DEVICE_CPU);

    ct_clear_error();
    assert_null(ct_softmax(ints, 1));
    assert_int_equal(ct_last_error(), CT_ERR_DTYPE);
    assert_non_null(strstr(ct_last_error_message(), "ct_softmax"));
    assert_non_null(strstr(ct_last_error_message(), "int64"));
    assert_non_null(strstr(ct_last_error_message(), "ct_to_dtype"));

    ct_clear_error();
    assert_null(ct_log_softmax(ints, 0));
    assert_int_equal(ct_last_error(), CT_ERR_DTYPE);
    assert_non_null(strstr(ct_last_error_message(), "log_softmax"));

    ct_clear_error();
    assert_null(ct_softmax(floats, 2));
    assert_int_equal(ct_last_error(), CT_ERR_INDEX);
    assert_non_null(strstr(ct_last_error_message(), "use -2 to 1"));

    ct_clear_error();
    assert_null(ct_log_softmax(floats, -3));
    assert_int_equal(ct_last_error(), CT_ERR_INDEX);
    assert_non_null(strstr(ct_last_error_message(), "ct_log_softmax"));

    ct_clear_error();
    assert_null(ct_softmax(NULL, 0));
    assert_int_equal(ct_last_error(), CT_ERR_NULL_ARGUMENT);
    assert_non_null(strstr(ct_last_error_message(), "ct_softmax"));

    /* a NULL from an earlier failure keeps that failure */
    ct_clear_error();
    assert_null(ct_log_softmax(ct_softmax(floats, 5), 0));
    assert_int_equal(ct_last_error(), CT_ERR_INDEX);
    assert_non_null(strstr(ct_last_error_message(), "ct_softmax: dim 5"));

    ct_clear_error();
    ct_release(floats);
    ct_release(ints);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(softmax_and_log_softmax_match_reference),
        cmocka_unit_test(softmax_rows_sum_to_one),
        cmocka_unit_test(large_inputs_do_not_overflow),
        cmocka_unit_test(log_softmax_is_log_of_softmax),
        cmocka_unit_test(softmax_of_a_scalar_is_one),
        cmocka_unit_test(bad_softmax_inputs_are_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
