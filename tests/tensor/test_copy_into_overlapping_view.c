/* ct_copy_ refuses a destination whose elements overlap in memory (an expanded view: several
 * elements, one place), as PyTorch does: which source value would be left there depends on the
 * device's order of writes. Copying from such a view is fine. */
#include "test_common.h"

static void copying_into_an_expanded_view_is_refused(void **state)
{
    (void)state;
    ct_tensor *row = ct_zeros((const int64_t[]){1, 3}, 2, CT_F32, CT_DEVICE_CPU);
    ct_tensor *expanded = ct_expand(row, (const int64_t[]){4, 3}, 2);
    ct_tensor *source = ct_ones((const int64_t[]){4, 3}, 2, CT_F32, CT_DEVICE_CPU);
    assert_non_null(expanded);
    ct_clear_error();
    assert_int_equal(ct_copy_(expanded, source), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "ct_copy_: more than one element of the destination "
                 "(shape [4, 3], stride 0 in dim 0) refers to a single memory location");
    float values[3] = {7, 7, 7};
    assert_int_equal(ct_tensor_to_array(row, values, sizeof values), CT_OK);
    assert_true(values[0] == 0 && values[1] == 0 && values[2] == 0); /* untouched */

    /* the other way round, and a dim of one with stride 0, are fine */
    ct_tensor *target = ct_zeros((const int64_t[]){4, 3}, 2, CT_F32, CT_DEVICE_CPU);
    assert_int_equal(ct_copy_(target, expanded), CT_OK);
    ct_tensor *zero = ct_zeros((const int64_t[]){1}, 1, CT_F32, CT_DEVICE_CPU);
    ct_tensor *single = ct_expand(zero, (const int64_t[]){1}, 1);
    ct_tensor *one = ct_ones((const int64_t[]){1}, 1, CT_F32, CT_DEVICE_CPU);
    assert_int_equal(ct_copy_(single, one), CT_OK);
    ct_release(one);
    ct_release(single);
    ct_release(zero);
    ct_release(target);
    ct_release(source);
    ct_release(expanded);
    ct_release(row);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(copying_into_an_expanded_view_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
