/* ct_var and ct_std match a plain-C two-pass reference in double over float dtypes, dims,
 * keepdim, corrections, non-contiguous views and rows longer than one chunk (the chunks then
 * combine by Chan's formula); tolerances are those of reduce_reference.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "reduce_reference.h"

static const ct_dtype floating_dtypes[] = {CT_F32, CT_F64};
static const dims_case common_cases[] = {REDUCE_COMMON_CASES};
static const dims_case long_cases[] = {REDUCE_LONG_CASES};
static const dims_case empty_cases[] = {{2, {0, 3}, 1, {0}}, {2, {0, 3}, 1, {1}}, {2, {0, 3}, 0, {0}}};

static void var_and_std_match_reference_with_corrections_0_1_2(void **state)
{
    (void)state;
    for (int64_t correction = 0; correction <= 2; correction++) {
        run_cases(REF_VAR, floating_dtypes, 2, common_cases, (int)CT_ARRAY_LEN(common_cases), correction);
        run_cases(REF_STD, floating_dtypes, 2, common_cases, (int)CT_ARRAY_LEN(common_cases), correction);
    }
}

static void var_and_std_match_reference_over_rows_longer_than_a_chunk(void **state)
{
    (void)state;
    run_cases(REF_VAR, floating_dtypes, 2, long_cases, (int)CT_ARRAY_LEN(long_cases), 1);
    run_cases(REF_STD, floating_dtypes, 2, long_cases, (int)CT_ARRAY_LEN(long_cases), 0);
}

static void var_of_an_empty_dim_is_nan(void **state)
{
    (void)state;
    run_cases(REF_VAR, floating_dtypes, 2, empty_cases, (int)CT_ARRAY_LEN(empty_cases), 1);
}

static void var_is_accurate_far_from_zero(void **state)
{
    (void)state;
    /* 1e6 + {0, 1, 2, 3} repeated: a one-pass sum of squares would lose the spread. */
    int64_t shape[1] = {40000};
    double *values = malloc(40000 * sizeof *values);
    for (int i = 0; i < 40000; i++) values[i] = 1e6 + (double)(i % 4);
    ct_tensor *t = ct_tensor_from_data(values, CT_F64, shape, 1, CT_DEVICE_CPU);
    ct_tensor *var = ct_var(t, NULL, 0, 0, false);
    double got = 0;
    assert_int_equal(ct_item(var, &got), CT_OK);
    assert_true(fabs(got - 1.25) < 1e-9);
    ct_release(var);
    ct_release(t);
    free(values);
}

static void correction_at_or_above_the_count_gives_nan_or_inf(void **state)
{
    (void)state;
    float one[1] = {3.0f}, two[2] = {1.0f, 2.0f};
    int64_t shape1[1] = {1}, shape2[1] = {2};
    ct_tensor *a = ct_tensor_from_data(one, CT_F32, shape1, 1, CT_DEVICE_CPU);
    ct_tensor *b = ct_tensor_from_data(two, CT_F32, shape2, 1, CT_DEVICE_CPU);
    ct_tensor *var_a = ct_var(a, NULL, 0, 1, false);  /* 0 / 0 */
    ct_tensor *var_b = ct_var(b, NULL, 0, 5, false);  /* 0.5 / max(0, 2 - 5) */
    ct_tensor *std_b = ct_std(b, NULL, 0, 2, false);  /* sqrt(0.5 / 0) */
    double value = 0;
    assert_int_equal(ct_item(var_a, &value), CT_OK);
    assert_true(isnan(value));
    assert_int_equal(ct_item(var_b, &value), CT_OK);
    assert_true(isinf(value) && value > 0);
    assert_int_equal(ct_item(std_b, &value), CT_OK);
    assert_true(isinf(value) && value > 0);
    ct_release(std_b);
    ct_release(var_b);
    ct_release(var_a);
    ct_release(b);
    ct_release(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(var_and_std_match_reference_with_corrections_0_1_2),
        cmocka_unit_test(var_and_std_match_reference_over_rows_longer_than_a_chunk),
        cmocka_unit_test(var_of_an_empty_dim_is_nan),
        cmocka_unit_test(var_is_accurate_far_from_zero),
        cmocka_unit_test(correction_at_or_above_the_count_gives_nan_or_inf),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
