/* ct_max / ct_min (amax / amin) and ct_argmax / ct_argmin (first occurrence, int64) match a
 * plain-C reference exactly over dtypes, dims, keepdim, non-contiguous views and rows longer
 * than one chunk; a NaN wins, as in PyTorch. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "reduce_reference.h"

static const ct_dtype every_dtype[] = {CT_F32, CT_F64, CT_I32, CT_I64, CT_U8, CT_BOOL};
static const ct_dtype numeric_dtypes[] = {CT_F32, CT_F64, CT_I32, CT_I64, CT_U8};
static const dims_case common_cases[] = {REDUCE_COMMON_CASES};
static const dims_case long_cases[] = {REDUCE_LONG_CASES};
/* Empty outputs whose reduced dims are not empty. */
static const dims_case empty_output_cases[] = {{2, {0, 3}, 1, {1}}, {3, {2, 0, 4}, 1, {-1}}};
/* One dim (or ndims 0, over everything) for argmax / argmin. */
static const dims_case arg_cases[] = {
    {2, {5, 7}, 1, {0}}, {2, {5, 7}, 1, {1}}, {2, {5, 7}, 1, {-2}}, {2, {5, 7}, 0, {0}},
    {3, {3, 4, 5}, 1, {1}}, {3, {3, 4, 5}, 1, {-1}}, {3, {3, 4, 5}, 0, {0}}, {4, {2, 3, 1, 5}, 1, {2}},
    {1, {100}, 1, {0}}, {1, {100}, 0, {0}}, {0, {0}, 1, {0}}, {0, {0}, 0, {0}},
    {2, {3, 9000}, 1, {1}}, {2, {9000, 3}, 1, {0}}, {1, {70000}, 0, {0}}, {2, {0, 3}, 1, {1}},
    {2, {3000, 40}, 1, {0}}, {3, {30, 20, 40}, 1, {1}}};

static void max_and_min_match_reference_for_every_dtype_and_dims(void **state)
{
    (void)state;
    run_cases(REF_MAX, every_dtype, 6, common_cases, (int)CT_ARRAY_LEN(common_cases), 0);
    run_cases(REF_MIN, every_dtype, 6, common_cases, (int)CT_ARRAY_LEN(common_cases), 0);
    run_cases(REF_MAX, every_dtype, 6, empty_output_cases, (int)CT_ARRAY_LEN(empty_output_cases), 0);
}

static void max_and_min_match_reference_over_rows_longer_than_a_chunk(void **state)
{
    (void)state;
    run_cases(REF_MAX, every_dtype, 6, long_cases, (int)CT_ARRAY_LEN(long_cases), 0);
    run_cases(REF_MIN, every_dtype, 6, long_cases, (int)CT_ARRAY_LEN(long_cases), 0);
}

static void argmax_and_argmin_match_reference_for_numeric_dtypes(void **state)
{
    (void)state;
    run_cases(REF_ARGMAX, numeric_dtypes, 5, arg_cases, (int)CT_ARRAY_LEN(arg_cases), 0);
    run_cases(REF_ARGMIN, numeric_dtypes, 5, arg_cases, (int)CT_ARRAY_LEN(arg_cases), 0);
}

static void argmax_and_argmin_give_the_first_of_equal_extremes(void **state)
{
    (void)state;
    int32_t data[8] = {1, 7, 7, -3, 2, -3, 7, -3};
    int64_t shape[1] = {8};
    ct_tensor *t = ct_tensor_from_data(data, CT_I32, shape, 1, CT_DEVICE_CPU);
    ct_tensor *hi = ct_argmax(t, 0, false), *lo = ct_argmin_all(t);
    int64_t index = -1;
    assert_int_equal(ct_item_int64(hi, &index), CT_OK);
    assert_int_equal(index, 1);
    assert_int_equal(ct_item_int64(lo, &index), CT_OK);
    assert_int_equal(index, 3);
    ct_release(lo);
    ct_release(hi);
    ct_release(t);
}

/* A row of n values with NaN at the given positions, in both passes' reach. */
static void nan_wins_in_max_min_and_argmax(ct_dtype dtype, int64_t n, const int64_t *nans, int count)
{
    double *values = malloc((size_t)n * sizeof *values);
    for (int64_t i = 0; i < n; i++) values[i] = (double)((i * 37) % 1001) - 500.0;
    for (int j = 0; j < count; j++) values[nans[j]] = NAN;
    const test_layout layouts[2] = {LAYOUT_CONTIGUOUS, LAYOUT_STRIDED};
    for (int l = 0; l < 2; l++) {
        test_layout layout = layouts[l];
        int64_t shape[1] = {n};
        /* make_input_from takes the base storage's values: spread them out for a strided view */
        int64_t base_n = layout == LAYOUT_STRIDED ? 2 * n + 1 : n;
        double *base = calloc((size_t)base_n, sizeof *base);
        for (int64_t i = 0; i < n; i++) base[layout == LAYOUT_STRIDED ? 2 * i + 1 : i] = values[i];
        test_input in = make_input_from(dtype, shape, 1, layout, 0, base);
        check_against_reference(REF_MAX, &in, NULL, 0, false, 0);
        check_against_reference(REF_MIN, &in, NULL, 0, false, 0);
        check_against_reference(REF_ARGMAX, &in, NULL, 0, false, 0);
        check_against_reference(REF_ARGMIN, &in, NULL, 0, false, 0);
        ct_tensor *m = ct_max(in.t, NULL, 0, false);
        double value = 0;
        assert_int_equal(ct_item(m, &value), CT_OK);
        assert_true(isnan(value));
        ct_release(m);
        free_input(&in);
        free(base);
    }
    free(values);
}

static void nan_wins_in_max_min_argmax_argmin(void **state)
{
    (void)state;
    int64_t one[1] = {7000}, two[2] = {9000, 3}, first[1] = {0}, last[1] = {4};
    nan_wins_in_max_min_and_argmax(CT_F32, 20000, one, 1);
    nan_wins_in_max_min_and_argmax(CT_F64, 20000, two, 2);
    nan_wins_in_max_min_and_argmax(CT_F32, 5, first, 1);
    nan_wins_in_max_min_and_argmax(CT_F64, 5, last, 1);
}

/* A column reduction (the tile kernels) over [rows, 20] with NaN in column 3 at row 4000 and in
 * column 17 at rows 10 and 4500: those columns give NaN and the first NaN's row, the others
 * their extremes. */
static void nan_wins_in_column_reductions(void **state)
{
    (void)state;
    int64_t shape[2] = {5000, 20};
    const ct_dtype dtypes[2] = {CT_F32, CT_F64};
    for (int t = 0; t < 2; t++) {
        double *values = malloc(5000 * 20 * sizeof *values);
        for (int i = 0; i < 5000 * 20; i++) values[i] = (double)((i * 37) % 1001) - 500.0;
        values[4000 * 20 + 3] = NAN;
        values[10 * 20 + 17] = NAN;
        values[4500 * 20 + 17] = NAN;
        test_input in = make_input_from(dtypes[t], shape, 2, LAYOUT_CONTIGUOUS, 0, values);
        int dim = 0;
        check_against_reference(REF_MAX, &in, &dim, 1, false, 0);
        check_against_reference(REF_MIN, &in, &dim, 1, true, 0);
        check_against_reference(REF_ARGMAX, &in, &dim, 1, false, 0);
        check_against_reference(REF_ARGMIN, &in, &dim, 1, false, 0);
        ct_tensor *arg = ct_argmax(in.t, 0, false);
        int64_t rows[20];
        assert_int_equal(ct_tensor_to_array(arg, rows, sizeof rows), CT_OK);
        assert_int_equal(rows[3], 4000);
        assert_int_equal(rows[17], 10);
        ct_release(arg);
        free_input(&in);
        free(values);
    }
}

static void max_of_bool_is_any_and_min_is_all(void **state)
{
    (void)state;
    uint8_t flags[6] = {1, 0, 1, 1, 1, 1};
    int64_t shape[2] = {2, 3};
    ct_tensor *t = ct_tensor_from_data(flags, CT_BOOL, shape, 2, CT_DEVICE_CPU);
    int dim = 1;
    ct_tensor *any = ct_max(t, &dim, 1, false), *all = ct_min(t, &dim, 1, false);
    assert_int_equal(ct_tensor_dtype(any), CT_BOOL);
    uint8_t got[2];
    assert_int_equal(ct_tensor_to_array(any, got, sizeof got), CT_OK);
    assert_int_equal(got[0], 1);
    assert_int_equal(got[1], 1);
    assert_int_equal(ct_tensor_to_array(all, got, sizeof got), CT_OK);
    assert_int_equal(got[0], 0);
    assert_int_equal(got[1], 1);
    ct_release(all);
    ct_release(any);
    ct_release(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(max_and_min_match_reference_for_every_dtype_and_dims),
        cmocka_unit_test(max_and_min_match_reference_over_rows_longer_than_a_chunk),
        cmocka_unit_test(argmax_and_argmin_match_reference_for_numeric_dtypes),
        cmocka_unit_test(argmax_and_argmin_give_the_first_of_equal_extremes),
        cmocka_unit_test(nan_wins_in_max_min_argmax_argmin),
        cmocka_unit_test(nan_wins_in_column_reductions),
        cmocka_unit_test(max_of_bool_is_any_and_min_is_all),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
