/* An int64 sum wraps around on overflow, as in PyTorch (torch.tensor([2**63 - 1, 1]).sum() is
 * -2**63), on every path of the sum: one pass, two passes (rows longer than a chunk), column
 * tiles. Under UBSan this also shows that no signed overflow happens inside the kernels. */
#include "test_common.h"

/* The sum over dims of an int64 tensor of shape, filled with value at every element. */
static int64_t sum_of_constant(const int64_t *shape, int ndim, const int *dims, int ndims,
                               int64_t value, int64_t *second)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    int64_t *data = malloc((size_t)n * sizeof *data);
    assert_non_null(data);
    for (int64_t i = 0; i < n; i++) data[i] = value;
    ct_tensor *filled = ct_tensor_from_data(data, CT_I64, shape, ndim, CT_DEVICE_CPU);
    free(data);
    ct_tensor *sum = ct_sum(filled, dims, ndims, false);
    assert_non_null(sum);
    int64_t out[2] = {0, 0};
    assert_true(ct_numel(sum) <= 2);
    assert_int_equal(ct_tensor_to_array(sum, out, sizeof out), CT_OK);
    if (second) *second = out[1];
    ct_release(sum);
    ct_release(filled);
    return out[0];
}

/* value * count modulo 2^64, as a signed number. */
static int64_t wrapped_product(int64_t value, int64_t count)
{
    return (int64_t)((uint64_t)value * (uint64_t)count);
}

static void an_int64_sum_past_the_maximum_wraps_to_the_minimum(void **state)
{
    (void)state;
    const int64_t data[2] = {INT64_MAX, 1};
    const int64_t shape[1] = {2};
    ct_tensor *t = ct_tensor_from_data(data, CT_I64, shape, 1, CT_DEVICE_CPU);
    ct_tensor *sum = ct_sum(t, NULL, 0, false);
    int64_t value = 0;
    assert_int_equal(ct_item_int64(sum, &value), CT_OK);
    assert_true(value == INT64_MIN);
    ct_release(sum);
    ct_release(t);
}

static void an_int64_sum_wraps_in_one_pass_in_two_passes_and_in_column_tiles(void **state)
{
    (void)state;
    const int64_t big = INT64_MAX / 3;
    /* 7 elements: one pass */
    const int64_t row[1] = {7};
    assert_true(sum_of_constant(row, 1, NULL, 0, big, NULL) == wrapped_product(big, 7));
    /* 20000 elements: chunks of at least 4096, combined in a second pass */
    const int64_t long_row[1] = {20000};
    assert_true(sum_of_constant(long_row, 1, NULL, 0, INT64_MIN, NULL) == wrapped_product(INT64_MIN, 20000));
    assert_true(sum_of_constant(long_row, 1, NULL, 0, big, NULL) == wrapped_product(big, 20000));
    /* columns of 3000: tiles over chunks of 1024 rows, then the combine pass */
    const int64_t columns[2] = {3000, 2};
    const int dim0[1] = {0};
    int64_t second = 0;
    assert_true(sum_of_constant(columns, 2, dim0, 1, -big, &second) == wrapped_product(-big, 3000));
    assert_true(second == wrapped_product(-big, 3000));
}

static void an_int32_sum_is_int64_and_does_not_wrap_at_the_int32_maximum(void **state)
{
    (void)state;
    const int32_t data[3] = {INT32_MAX, INT32_MAX, INT32_MAX};
    const int64_t shape[1] = {3};
    ct_tensor *t = ct_tensor_from_data(data, CT_I32, shape, 1, CT_DEVICE_CPU);
    ct_tensor *sum = ct_sum(t, NULL, 0, false);
    int64_t value = 0;
    assert_int_equal(ct_tensor_dtype(sum), CT_I64);
    assert_int_equal(ct_item_int64(sum, &value), CT_OK);
    assert_true(value == 3 * (int64_t)INT32_MAX);
    ct_release(sum);
    ct_release(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(an_int64_sum_past_the_maximum_wraps_to_the_minimum),
        cmocka_unit_test(an_int64_sum_wraps_in_one_pass_in_two_passes_and_in_column_tiles),
        cmocka_unit_test(an_int32_sum_is_int64_and_does_not_wrap_at_the_int32_maximum),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
