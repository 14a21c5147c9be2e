/* ct_sum and ct_mean match a plain-C reference over dtypes, dims (single, several, all,
 * negative), keepdim, non-contiguous views, empty tensors and rows longer than one chunk;
 * tolerances are those of reduce_reference.h (integers exact). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "reduce_reference.h"

static const ct_dtype every_dtype[] = {CT_F32, CT_F64, CT_I32, CT_I64, CT_U8, CT_BOOL};
static const ct_dtype floating_dtypes[] = {CT_F32, CT_F64};
static const dims_case common_cases[] = {REDUCE_COMMON_CASES};
static const dims_case long_cases[] = {REDUCE_LONG_CASES};
/* numel 0, with and without an empty reduced dim */
static const dims_case empty_cases[] = {{2, {0, 3}, 1, {0}}, {2, {0, 3}, 1, {1}}, {2, {0, 3}, 0, {0}},
                                        {3, {2, 0, 4}, 2, {0, 1}}, {3, {2, 0, 4}, 1, {-1}}};

static void sum_matches_reference_for_every_dtype_and_dims(void **state)
{
    (void)state;
    run_cases(REF_SUM, every_dtype, 6, common_cases, (int)CT_ARRAY_LEN(common_cases), 0);
}

static void sum_matches_reference_over_rows_longer_than_a_chunk(void **state)
{
    (void)state;
    run_cases(REF_SUM, every_dtype, 6, long_cases, (int)CT_ARRAY_LEN(long_cases), 0);
}

static void sum_of_empty_dims_is_zero_and_empty_outputs_are_empty(void **state)
{
    (void)state;
    run_cases(REF_SUM, every_dtype, 6, empty_cases, (int)CT_ARRAY_LEN(empty_cases), 0);
}

static void mean_matches_reference_for_floating_dtypes(void **state)
{
    (void)state;
    run_cases(REF_MEAN, floating_dtypes, 2, common_cases, (int)CT_ARRAY_LEN(common_cases), 0);
    run_cases(REF_MEAN, floating_dtypes, 2, long_cases, (int)CT_ARRAY_LEN(long_cases), 0);
}

static void mean_of_an_empty_dim_is_nan(void **state)
{
    (void)state;
    run_cases(REF_MEAN, floating_dtypes, 2, empty_cases, (int)CT_ARRAY_LEN(empty_cases), 0);
}

static void sum_of_a_million_float_ones_is_exactly_a_million(void **state)
{
    (void)state;
    int64_t shape[1] = {1000000};
    ct_tensor *ones = ct_ones(shape, 1, CT_F32, CT_DEVICE_CPU);
    ct_tensor *sum = ct_sum(ones, NULL, 0, false);
    ct_tensor *mean = ct_mean(ones, NULL, 0, false);
    double value = 0;
    assert_int_equal(ct_item(sum, &value), CT_OK);
    assert_true(value == 1000000.0);
    assert_int_equal(ct_item(mean, &value), CT_OK);
    assert_true(value == 1.0);
    ct_release(mean);
    ct_release(sum);
    ct_release(ones);
}

static void sum_of_int32_accumulates_in_int64_without_overflow(void **state)
{
    (void)state;
    int64_t shape[2] = {2, 1000000};
    ct_tensor *big = ct_full(shape, 2, 1073741824.0, CT_I32, CT_DEVICE_CPU); /* 2^30 */
    int dim = 1;
    ct_tensor *sum = ct_sum(big, &dim, 1, false);
    assert_int_equal(ct_tensor_dtype(sum), CT_I64);
    int64_t got[2] = {0};
    assert_int_equal(ct_tensor_to_array(sum, got, sizeof got), CT_OK);
    assert_true(got[0] == (int64_t)1000000 << 30);
    assert_true(got[1] == (int64_t)1000000 << 30);
    ct_release(sum);
    ct_release(big);
}

static void sum_of_bool_counts_the_true_values(void **state)
{
    (void)state;
    uint8_t flags[6] = {1, 0, 1, 1, 0, 1};
    int64_t shape[2] = {2, 3};
    ct_tensor *t = ct_tensor_from_data(flags, CT_BOOL, shape, 2, CT_DEVICE_CPU);
    int dim = -1;
    ct_tensor *count = ct_sum(t, &dim, 1, true);
    assert_int_equal(ct_tensor_dtype(count), CT_I64);
    assert_int_equal(ct_tensor_ndim(count), 2);
    assert_int_equal(ct_tensor_shape(count)[1], 1);
    int64_t got[2];
    assert_int_equal(ct_tensor_to_array(count, got, sizeof got), CT_OK);
    assert_int_equal(got[0], 2);
    assert_int_equal(got[1], 2);
    ct_release(count);
    ct_release(t);
}

static void sum_of_a_broadcast_view_with_zero_strides(void **state)
{
    (void)state;
    float row[4] = {1.5f, 2.0f, -1.0f, 0.25f};
    int64_t base_shape[1] = {4}, shape[2] = {1000, 4}, strides[2] = {0, 1};
    ct_tensor *base = ct_tensor_from_data(row, CT_F32, base_shape, 1, CT_DEVICE_CPU);
    ct_tensor *expanded = ct_tensor_view_of(base, 2, shape, strides, 0);
    int dim = 0;
    ct_tensor *sum = ct_sum(expanded, &dim, 1, false);
    float got[4];
    assert_int_equal(ct_tensor_to_array(sum, got, sizeof got), CT_OK);
    for (int i = 0; i < 4; i++) assert_true(got[i] == row[i] * 1000.0f);
    ct_release(sum);
    ct_release(expanded);
    ct_release(base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sum_matches_reference_for_every_dtype_and_dims),
        cmocka_unit_test(sum_matches_reference_over_rows_longer_than_a_chunk),
        cmocka_unit_test(sum_of_empty_dims_is_zero_and_empty_outputs_are_empty),
        cmocka_unit_test(mean_matches_reference_for_floating_dtypes),
        cmocka_unit_test(mean_of_an_empty_dim_is_nan),
        cmocka_unit_test(sum_of_a_million_float_ones_is_exactly_a_million),
        cmocka_unit_test(sum_of_int32_accumulates_in_int64_without_overflow),
        cmocka_unit_test(sum_of_bool_counts_the_true_values),
        cmocka_unit_test(sum_of_a_broadcast_view_with_zero_strides),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
