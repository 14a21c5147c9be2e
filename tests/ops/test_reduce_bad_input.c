/* Bad input to the reductions gives the documented status and a message that names the call,
 * the input and what would be right; a NULL input keeps the first error of a chain. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ctorch.h"

/* Asserts that `result` is NULL with status and a message containing each of the substrings. */
static void assert_error(ct_tensor *result, ct_status status, const char *part1, const char *part2)
{
    if (result) fail_msg("expected an error (%s), got a tensor", ct_status_name(status));
    if (ct_last_error() != status)
        fail_msg("expected %s, got %s: %s", ct_status_name(status), ct_status_name(ct_last_error()),
                 ct_last_error_message());
    if (part1 && !strstr(ct_last_error_message(), part1))
        fail_msg("message \"%s\" lacks \"%s\"", ct_last_error_message(), part1);
    if (part2 && !strstr(ct_last_error_message(), part2))
        fail_msg("message \"%s\" lacks \"%s\"", ct_last_error_message(), part2);
    ct_clear_error();
}

static void dim_out_of_range_is_an_index_error_that_gives_the_range(void **state)
{
    (void)state;
    int64_t shape[2] = {2, 3};
    ct_tensor *t = ct_zeros(shape, 2, CT_F32, CT_DEVICE_CPU);
    int two = 2, minus_three = -3, dims[2] = {0, 7};
    ct_clear_error();
    assert_error(ct_sum(t, &two, 1, false), CT_ERR_INDEX, "ct_sum: dim 2", "use -2 to 1");
    assert_error(ct_mean(t, &minus_three, 1, true), CT_ERR_INDEX, "ct_mean: dim -3", "use -2 to 1");
    assert_error(ct_max(t, dims, 2, false), CT_ERR_INDEX, "ct_max: dim 7", "use -2 to 1");
    assert_error(ct_min(t, &two, 1, false), CT_ERR_INDEX, "ct_min", "use -2 to 1");
    assert_error(ct_var(t, &two, 1, 1, false), CT_ERR_INDEX, "ct_var", "use -2 to 1");
    assert_error(ct_std(t, &minus_three, 1, 1, false), CT_ERR_INDEX, "ct_std", "use -2 to 1");
    assert_error(ct_argmax(t, 2, false), CT_ERR_INDEX, "ct_argmax: dim 2", "use -2 to 1");
    assert_error(ct_argmin(t, -3, true), CT_ERR_INDEX, "ct_argmin: dim -3", "use -2 to 1");
    ct_release(t);

    double v = 1.0;
    ct_tensor *scalar = ct_tensor_from_data(&v, CT_F64, NULL, 0, CT_DEVICE_CPU);
    int one = 1;
    assert_error(ct_sum(scalar, &one, 1, false), CT_ERR_INDEX, "ct_sum: dim 1", "use -1 to 0");
    ct_release(scalar);
}

static void repeated_dims_are_an_error(void **state)
{
    (void)state;
    int64_t shape[3] = {2, 3, 4};
    ct_tensor *t = ct_zeros(shape, 3, CT_F32, CT_DEVICE_CPU);
    int same[2] = {1, 1}, aliased[3] = {0, 2, -1};
    ct_clear_error();
    assert_error(ct_sum(t, same, 2, false), CT_ERR_INVALID_ARGUMENT, "ct_sum: dim 1 appears more than once",
                 "list each dim once");
    assert_error(ct_var(t, aliased, 3, 1, true), CT_ERR_INVALID_ARGUMENT,
                 "ct_var: dim 2 appears more than once", "given as 2 and -1");
    ct_release(t);
}

static void bad_dims_lists_are_errors(void **state)
{
    (void)state;
    int64_t shape[1] = {3};
    ct_tensor *t = ct_zeros(shape, 1, CT_F32, CT_DEVICE_CPU);
    int dim = 0;
    ct_clear_error();
    assert_error(ct_sum(t, &dim, -1, false), CT_ERR_INVALID_ARGUMENT, "ct_sum: ndims is -1", NULL);
    assert_error(ct_max(t, NULL, 1, false), CT_ERR_NULL_ARGUMENT, "ct_max", "dims");
    ct_release(t);
}

static void integer_inputs_to_mean_var_std_are_dtype_errors(void **state)
{
    (void)state;
    int64_t shape[2] = {2, 3};
    ct_tensor *ints = ct_zeros(shape, 2, CT_I32, CT_DEVICE_CPU);
    ct_tensor *flags = ct_zeros(shape, 2, CT_BOOL, CT_DEVICE_CPU);
    ct_clear_error();
    assert_error(ct_mean(ints, NULL, 0, false), CT_ERR_DTYPE, "ct_mean: could not infer output dtype",
                 "int32");
    assert_error(ct_mean(flags, NULL, 0, false), CT_ERR_DTYPE, "bool", "ct_to_dtype");
    assert_error(ct_var(ints, NULL, 0, 1, false), CT_ERR_DTYPE, "ct_var", "ct_to_dtype");
    assert_error(ct_std(ints, NULL, 0, 1, false), CT_ERR_DTYPE, "ct_std", "floating");
    assert_error(ct_argmax(flags, 0, false), CT_ERR_DTYPE, "ct_argmax", "bool");
    assert_error(ct_argmin_all(flags), CT_ERR_DTYPE, "ct_argmin_all", "bool");
    ct_release(flags);
    ct_release(ints);
}

static void null_input_is_an_error_that_keeps_the_first_error(void **state)
{
    (void)state;
    ct_clear_error();
    assert_error(ct_sum(NULL, NULL, 0, false), CT_ERR_NULL_ARGUMENT, "ct_sum", "a");
    assert_error(ct_argmax_all(NULL), CT_ERR_NULL_ARGUMENT, "ct_argmax_all", NULL);
    assert_error(ct_std(NULL, NULL, 0, 1, false), CT_ERR_NULL_ARGUMENT, "ct_std", NULL);

    int64_t shape[2] = {2, 3};
    ct_tensor *t = ct_zeros(shape, 2, CT_F32, CT_DEVICE_CPU);
    int bad = 9;
    /* The chain fails in ct_sum; ct_mean of its NULL keeps ct_sum's error. */
    assert_error(ct_mean(ct_sum(t, &bad, 1, false), NULL, 0, false), CT_ERR_INDEX, "ct_sum: dim 9", NULL);
    assert_error(ct_argmin(ct_max(t, &bad, 1, false), 0, false), CT_ERR_INDEX, "ct_max: dim 9", NULL);
    ct_release(t);
}

static void max_min_and_argmax_of_an_empty_dim_are_shape_errors(void **state)
{
    (void)state;
    int64_t shape[2] = {3, 0};
    ct_tensor *t = ct_zeros(shape, 2, CT_F32, CT_DEVICE_CPU);
    int one = 1;
    ct_clear_error();
    assert_error(ct_max(t, &one, 1, false), CT_ERR_SHAPE, "ct_max: cannot compute max of an empty dim",
                 "dim 1 of the input of shape [3, 0]");
    assert_error(ct_min(t, NULL, 0, true), CT_ERR_SHAPE, "cannot compute min of an empty dim", "[3, 0]");
    assert_error(ct_argmax(t, -1, false), CT_ERR_SHAPE, "ct_argmax: cannot compute argmax of an empty dim",
                 NULL);
    assert_error(ct_argmin_all(t), CT_ERR_SHAPE, "cannot compute argmin of an empty dim", NULL);

    /* Reducing the non-empty dim of an empty tensor is fine: the output is empty. */
    int zero = 0;
    ct_tensor *out = ct_max(t, &zero, 1, false);
    assert_non_null(out);
    assert_int_equal(ct_numel(out), 0);
    ct_release(out);
    ct_release(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(dim_out_of_range_is_an_index_error_that_gives_the_range),
        cmocka_unit_test(repeated_dims_are_an_error),
        cmocka_unit_test(bad_dims_lists_are_errors),
        cmocka_unit_test(integer_inputs_to_mean_var_std_are_dtype_errors),
        cmocka_unit_test(null_input_is_an_error_that_keeps_the_first_error),
        cmocka_unit_test(max_min_and_argmax_of_an_empty_dim_are_shape_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
