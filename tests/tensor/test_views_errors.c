/* Every bad argument to a view gives a precise error (status and message) and no tensor. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "ctorch.h"

static ct_tensor *matrix(void) /* [2, 3] float32 */
{
    ct_tensor *t = ct_zeros((const int64_t[]){2, 3}, 2, CT_F32, CT_DEVICE_CPU);
    assert_non_null(t);
    return t;
}

/* result must be NULL, with status and a message holding every fragment given. */
static void expect_error(ct_tensor *result, ct_status status, const char *fragment, const char *fragment2)
{
    assert_null(result);
    assert_int_equal(ct_last_error(), status);
    const char *message = ct_last_error_message();
    if (!strstr(message, fragment) || (fragment2 && !strstr(message, fragment2)))
        fail_msg("message \"%s\" lacks \"%s\"%s%s", message, fragment, fragment2 ? " or " : "",
                 fragment2 ? fragment2 : "");
    ct_clear_error();
}

static void expect_status(ct_status got, ct_status status, const char *fragment)
{
    assert_int_equal(got, status);
    assert_int_equal(ct_last_error(), status);
    if (!strstr(ct_last_error_message(), fragment))
        fail_msg("message \"%s\" lacks \"%s\"", ct_last_error_message(), fragment);
    ct_clear_error();
}

static void incompatible_reshape_names_both_shapes_and_the_element_counts(void **state)
{
    (void)state;
    ct_tensor *t = matrix();
    expect_error(ct_reshape(t, (const int64_t[]){4, 2}, 2), CT_ERR_SHAPE, "shape [4, 2] is invalid for an input of shape [2, 3]",
                 "it holds 8 elements, the input has 6");
    expect_error(ct_view(t, (const int64_t[]){-1, 4}, 2), CT_ERR_SHAPE, "[-1, 4]", "a multiple of 4");
    expect_error(ct_reshape(t, (const int64_t[]){-1, -1}, 2), CT_ERR_SHAPE, "only one dimension can be inferred", NULL);
    expect_error(ct_reshape(t, (const int64_t[]){-2, -3}, 2), CT_ERR_SHAPE, "invalid size -2 in dim 0", NULL);
    expect_error(ct_reshape(t, (const int64_t[]){1, 1, 1, 1, 1, 1, 1, 1, 6}, 9), CT_ERR_SHAPE, "9 dims", "0 to 8");
    expect_error(ct_reshape(t, (const int64_t[]){-1, 0}, 2), CT_ERR_SHAPE, "[-1, 0]", "input has 6");
    expect_error(ct_reshape(t, NULL, 2), CT_ERR_NULL_ARGUMENT, "shape", NULL);
    ct_tensor *empty = ct_zeros((const int64_t[]){0, 3}, 2, CT_F32, CT_DEVICE_CPU);
    expect_error(ct_reshape(empty, (const int64_t[]){-1, 0}, 2), CT_ERR_SHAPE, "ambiguous", NULL);
    ct_release(empty);
    ct_release(t);
}

static void view_of_strides_that_cannot_merge_is_an_error_pointing_to_reshape(void **state)
{
    (void)state;
    ct_tensor *t = matrix();
    ct_tensor *tt = ct_transpose(t, 0, 1);
    expect_error(ct_view(tt, (const int64_t[]){6}, 1), CT_ERR_SHAPE,
                 "view size [6] is not compatible with input tensor's size [3, 2] and stride [1, 3]", "use ct_reshape");
    ct_release(tt);
    ct_release(t);
}

static void dims_out_of_range_name_the_valid_range(void **state)
{
    (void)state;
    ct_tensor *t = matrix();
    expect_error(ct_transpose(t, 0, 2), CT_ERR_INDEX, "ct_transpose: dim 2 is out of range", "use -2 to 1");
    expect_error(ct_transpose(t, -3, 0), CT_ERR_INDEX, "dim -3", "use -2 to 1");
    expect_error(ct_narrow(t, 5, 0, 1), CT_ERR_INDEX, "ct_narrow: dim 5", "use -2 to 1");
    expect_error(ct_slice(t, -3, 0, 1, 1), CT_ERR_INDEX, "ct_slice: dim -3", "use -2 to 1");
    expect_error(ct_select(t, 2, 0), CT_ERR_INDEX, "ct_select: dim 2", NULL);
    expect_error(ct_squeeze_dim(t, 2), CT_ERR_INDEX, "ct_squeeze_dim: dim 2", NULL);
    expect_error(ct_unsqueeze(t, 3), CT_ERR_INDEX, "ct_unsqueeze: dim 3", "use -3 to 2");
    expect_error(ct_unsqueeze(t, -4), CT_ERR_INDEX, "dim -4", "use -3 to 2");
    expect_error(ct_flatten(t, 0, 2), CT_ERR_INDEX, "ct_flatten: dim 2", NULL);
    expect_error(ct_flatten(t, 1, 0), CT_ERR_INDEX, "start_dim must not come after end_dim", NULL);
    ct_tensor *parts[4];
    int count = 7;
    expect_status(ct_chunk(t, 2, 2, parts, 4, &count), CT_ERR_INDEX, "ct_chunk: dim 2");
    assert_int_equal(count, 0);
    expect_status(ct_split(t, 1, -3, parts, 4, &count), CT_ERR_INDEX, "ct_split: dim -3");
    ct_release(t);
}

static void permute_must_be_a_permutation(void **state)
{
    (void)state;
    ct_tensor *t = matrix();
    expect_error(ct_permute(t, (const int[]){0}, 1), CT_ERR_SHAPE, "1 dims given for a 2-d tensor", NULL);
    expect_error(ct_permute(t, (const int[]){1, -1}, 2), CT_ERR_INDEX, "dim 1 appears more than once", NULL);
    expect_error(ct_permute(t, (const int[]){0, 2}, 2), CT_ERR_INDEX, "dim 2 is out of range", NULL);
    expect_error(ct_permute(t, NULL, 2), CT_ERR_NULL_ARGUMENT, "dims", NULL);
    ct_release(t);
}

static void parts_out_of_range_are_index_errors(void **state)
{
    (void)state;
    ct_tensor *t = matrix();
    expect_error(ct_select(t, 1, 3), CT_ERR_INDEX, "index 3 is out of range for dim 1 of size 3", "use -3 to 2");
    expect_error(ct_select(t, 0, -3), CT_ERR_INDEX, "index -3", "use -2 to 1");
    expect_error(ct_narrow(t, 1, 4, 0), CT_ERR_INDEX, "start 4 is out of range for dim 1 of size 3", NULL);
    expect_error(ct_narrow(t, 1, 2, 2), CT_ERR_INDEX, "start 2 + length 2 exceeds the size 3", NULL);
    expect_error(ct_narrow(t, 1, 0, -1), CT_ERR_SHAPE, "length -1 is negative", NULL);
    expect_error(ct_slice(t, 1, 0, 3, 0), CT_ERR_INVALID_ARGUMENT, "step 0 is not positive", NULL);
    expect_error(ct_slice(t, 1, 3, 0, -1), CT_ERR_INVALID_ARGUMENT, "step -1", NULL);
    ct_release(t);
}

static void zero_dim_tensors_have_no_dim_to_take_parts_of(void **state)
{
    (void)state;
    ct_tensor *s = ct_full(NULL, 0, 1.5, CT_F32, CT_DEVICE_CPU);
    expect_error(ct_select(s, 0, 0), CT_ERR_INDEX, "0-d tensor", NULL);
    expect_error(ct_narrow(s, 0, 0, 1), CT_ERR_INDEX, "0-d tensor", NULL);
    expect_error(ct_slice(s, 0, 0, 1, 1), CT_ERR_INDEX, "0-d tensor", NULL);
    ct_tensor *parts[2];
    int count = 0;
    expect_status(ct_chunk(s, 2, 0, parts, 2, &count), CT_ERR_SHAPE, "at least a 1-d tensor");
    expect_status(ct_split(s, 1, 0, parts, 2, &count), CT_ERR_SHAPE, "at least a 1-d tensor");
    /* What does work on 0-d tensors, as in PyTorch. */
    ct_tensor *same = ct_squeeze_dim(s, -1);
    assert_int_equal(ct_tensor_ndim(same), 0);
    ct_tensor *transposed = ct_transpose(s, 0, -1);
    assert_int_equal(ct_tensor_ndim(transposed), 0);
    ct_release(transposed);
    ct_release(same);
    ct_release(s);
}

static void expand_only_grows_size_one_dims(void **state)
{
    (void)state;
    ct_tensor *t = matrix();
    expect_error(ct_expand(t, (const int64_t[]){3}, 1), CT_ERR_SHAPE, "1 sizes given for a 2-d tensor of shape [2, 3]", NULL);
    expect_error(ct_expand(t, (const int64_t[]){2, 4}, 2), CT_ERR_SHAPE, "expanded size 4 must match the existing size 3",
                 "target sizes [2, 4], tensor sizes [2, 3]");
    expect_error(ct_expand(t, (const int64_t[]){-1, 2, 3}, 3), CT_ERR_SHAPE, "-1", "new leading dim 0");
    expect_error(ct_expand(t, (const int64_t[]){2, -2}, 2), CT_ERR_SHAPE, "size -2 in dim 1", "negative");
    expect_error(ct_expand(t, (const int64_t[]){1, 1, 1, 1, 1, 1, 1, 2, 3}, 9), CT_ERR_SHAPE, "9 sizes", "2 to 8");
    ct_tensor *max = ct_zeros((const int64_t[]){1, 1, 1, 1, 1, 1, 1, 1}, 8, CT_F32, CT_DEVICE_CPU);
    expect_error(ct_unsqueeze(max, 0), CT_ERR_SHAPE, "already has 8 dims", NULL);
    ct_release(max);
    ct_release(t);
}

static void chunk_and_split_check_their_counts_and_room(void **state)
{
    (void)state;
    ct_tensor *t = matrix();
    ct_tensor *parts[2] = {NULL, NULL};
    int count = 0;
    expect_status(ct_chunk(t, 0, 1, parts, 2, &count), CT_ERR_INVALID_ARGUMENT, "chunks must be > 0, got 0");
    expect_status(ct_chunk(t, 3, 1, parts, 2, &count), CT_ERR_INVALID_ARGUMENT, "the result has 3 tensors but out has room for 2");
    assert_null(parts[0]);
    expect_status(ct_split(t, -1, 1, parts, 2, &count), CT_ERR_INVALID_ARGUMENT, "split_size -1 is negative");
    expect_status(ct_split(t, 0, 1, parts, 2, &count), CT_ERR_INVALID_ARGUMENT, "split_size 0 is only allowed");
    expect_status(ct_split(t, 1, 1, NULL, 2, &count), CT_ERR_NULL_ARGUMENT, "out");
    expect_status(ct_chunk(t, 1, 1, parts, 2, NULL), CT_ERR_NULL_ARGUMENT, "count");
    ct_release(t);
}

static void null_tensors_are_errors_that_keep_the_first_error(void **state)
{
    (void)state;
    expect_error(ct_reshape(NULL, (const int64_t[]){1}, 1), CT_ERR_NULL_ARGUMENT, "ct_reshape", NULL);
    expect_error(ct_view(NULL, (const int64_t[]){1}, 1), CT_ERR_NULL_ARGUMENT, "ct_view", NULL);
    expect_error(ct_transpose(NULL, 0, 1), CT_ERR_NULL_ARGUMENT, "ct_transpose", NULL);
    expect_error(ct_permute(NULL, (const int[]){0}, 1), CT_ERR_NULL_ARGUMENT, "ct_permute", NULL);
    expect_error(ct_narrow(NULL, 0, 0, 1), CT_ERR_NULL_ARGUMENT, "ct_narrow", NULL);
    expect_error(ct_slice(NULL, 0, 0, 1, 1), CT_ERR_NULL_ARGUMENT, "ct_slice", NULL);
    expect_error(ct_select(NULL, 0, 0), CT_ERR_NULL_ARGUMENT, "ct_select", NULL);
    expect_error(ct_squeeze(NULL), CT_ERR_NULL_ARGUMENT, "ct_squeeze", NULL);
    expect_error(ct_squeeze_dim(NULL, 0), CT_ERR_NULL_ARGUMENT, "ct_squeeze_dim", NULL);
    expect_error(ct_unsqueeze(NULL, 0), CT_ERR_NULL_ARGUMENT, "ct_unsqueeze", NULL);
    expect_error(ct_expand(NULL, (const int64_t[]){1}, 1), CT_ERR_NULL_ARGUMENT, "ct_expand", NULL);
    expect_error(ct_flatten(NULL, 0, -1), CT_ERR_NULL_ARGUMENT, "ct_flatten", NULL);
    ct_tensor *parts[1];
    int count = 0;
    expect_status(ct_chunk(NULL, 1, 0, parts, 1, &count), CT_ERR_NULL_ARGUMENT, "ct_chunk");
    expect_status(ct_split(NULL, 1, 0, parts, 1, &count), CT_ERR_NULL_ARGUMENT, "ct_split");
    /* A chain reports its first failure. */
    ct_tensor *t = matrix();
    ct_scope_push();
    ct_tensor *chain = ct_flatten(ct_unsqueeze(ct_transpose(t, 0, 7), 0), 0, -1);
    ct_scope_pop();
    expect_error(chain, CT_ERR_INDEX, "ct_transpose: dim 7", NULL);
    ct_release(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(incompatible_reshape_names_both_shapes_and_the_element_counts),
        cmocka_unit_test(view_of_strides_that_cannot_merge_is_an_error_pointing_to_reshape),
        cmocka_unit_test(dims_out_of_range_name_the_valid_range),
        cmocka_unit_test(permute_must_be_a_permutation),
        cmocka_unit_test(parts_out_of_range_are_index_errors),
        cmocka_unit_test(zero_dim_tensors_have_no_dim_to_take_parts_of),
        cmocka_unit_test(expand_only_grows_size_one_dims),
        cmocka_unit_test(chunk_and_split_check_their_counts_and_room),
        cmocka_unit_test(null_tensors_are_errors_that_keep_the_first_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
