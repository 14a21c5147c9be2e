/* Views share storage with their input and show the right elements: reshape/view, flatten,
 * transpose, permute, squeeze/unsqueeze, expand, and chains of them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ctorch.h"
#include "support/fake_device.h"

/* 0, 1, ..., n-1 as int64 in the given shape. */
static ct_tensor *counting(const int64_t *shape, int ndim)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    ct_tensor *flat = ct_arange(0, (double)n, 1, CT_I64, CT_DEVICE_CPU);
    ct_tensor *t = ct_reshape(flat, shape, ndim);
    ct_release(flat);
    assert_non_null(t);
    return t;
}

/* The elements of t, row-major, must be expected[0..n). */
static void assert_values(const ct_tensor *t, const int64_t *expected, int64_t n)
{
    assert_int_equal(ct_numel(t), n);
    int64_t *values = calloc((size_t)n + 1, sizeof *values);
    assert_int_equal(ct_tensor_to_array(t, values, (size_t)(n + 1) * sizeof *values), CT_OK);
    for (int64_t i = 0; i < n; i++) assert_int_equal(values[i], expected[i]);
    free(values);
}

static void assert_shape(const ct_tensor *t, const int64_t *shape, int ndim)
{
    assert_non_null(t);
    assert_int_equal(ct_tensor_ndim(t), ndim);
    for (int d = 0; d < ndim; d++) assert_int_equal(ct_tensor_shape(t)[d], shape[d]);
}

static void reshape_of_a_contiguous_tensor_is_a_view_with_the_same_values(void **state)
{
    (void)state;
    ct_tensor *t = counting((const int64_t[]){2, 3, 4}, 3);
    ct_tensor *r = ct_reshape(t, (const int64_t[]){4, -1}, 2);
    assert_shape(r, (const int64_t[]){4, 6}, 2);
    assert_true(ct_tensor_shares_storage(r, t));
    assert_true(ct_is_contiguous(r));
    int64_t expected[24];
    for (int i = 0; i < 24; i++) expected[i] = i;
    assert_values(r, expected, 24);
    ct_tensor *v = ct_view(t, (const int64_t[]){24}, 1);
    assert_true(ct_tensor_shares_storage(v, t));
    assert_values(v, expected, 24);
    ct_scope_push(); /* releases the intermediate views of chains */
    ct_tensor *scalar = ct_scope_keep(ct_reshape(ct_narrow(v, 0, 5, 1), NULL, 0));
    ct_scope_pop();
    assert_shape(scalar, NULL, 0);
    int64_t value = 0;
    assert_int_equal(ct_item_int64(scalar, &value), CT_OK);
    assert_int_equal(value, 5);
    ct_tensor *back = ct_reshape(scalar, (const int64_t[]){1, 1, -1}, 3);
    assert_shape(back, (const int64_t[]){1, 1, 1}, 3);
    assert_true(ct_tensor_shares_storage(back, t));
    ct_release(back);
    ct_release(scalar);
    ct_release(v);
    ct_release(r);
    ct_release(t);
}

static void writes_through_one_view_are_read_through_another(void **state)
{
    (void)state;
    ct_tensor *t = ct_zeros((const int64_t[]){3, 4}, 2, CT_I64, CT_DEVICE_CPU);
    ct_tensor *column = ct_select(t, -1, 2); /* t[:, 2] */
    ct_tensor *sevens = ct_full((const int64_t[]){3}, 1, 7, CT_I64, CT_DEVICE_CPU);
    assert_int_equal(ct_copy_(column, sevens), CT_OK);
    ct_scope_push();
    ct_tensor *row = ct_scope_keep(ct_narrow(ct_transpose(t, 0, 1), 0, 3, 1)); /* t.T[3:4] */
    ct_scope_pop();
    ct_tensor *nines = ct_full((const int64_t[]){1, 3}, 2, 9, CT_I64, CT_DEVICE_CPU);
    assert_int_equal(ct_copy_(row, nines), CT_OK);
    ct_tensor *flat = ct_flatten(t, 0, -1);
    assert_true(ct_tensor_shares_storage(flat, t));
    const int64_t expected[12] = {0, 0, 7, 9, 0, 0, 7, 9, 0, 0, 7, 9};
    assert_values(flat, expected, 12);
    ct_release(flat);
    ct_release(nines);
    ct_release(row);
    ct_release(sevens);
    ct_release(column);
    ct_release(t);
}

static void reshape_of_a_non_contiguous_tensor_views_when_strides_allow_and_copies_otherwise(void **state)
{
    (void)state;
    ct_tensor *t = counting((const int64_t[]){4, 6}, 2);
    ct_tensor *half = ct_narrow(t, 1, 3, 3); /* shape [4, 3], strides [6, 1] */
    assert_false(ct_is_contiguous(half));
    /* Splitting dim 0 keeps each row contiguous: a view. */
    ct_tensor *split_rows = ct_view(half, (const int64_t[]){2, 2, 3}, 3);
    assert_non_null(split_rows);
    assert_true(ct_tensor_shares_storage(split_rows, t));
    assert_int_equal(ct_tensor_strides(split_rows)[0], 12);
    assert_int_equal(ct_tensor_strides(split_rows)[1], 6);
    assert_int_equal(ct_tensor_strides(split_rows)[2], 1);
    const int64_t expected[12] = {3, 4, 5, 9, 10, 11, 15, 16, 17, 21, 22, 23};
    assert_values(split_rows, expected, 12);
    /* Merging rows that are not adjacent in memory: reshape copies. */
    ct_tensor *flat = ct_reshape(half, (const int64_t[]){-1}, 1);
    assert_non_null(flat);
    assert_false(ct_tensor_shares_storage(flat, t));
    assert_true(ct_is_contiguous(flat));
    assert_values(flat, expected, 12);
    /* A transpose merged back copies, and keeps the transposed order. */
    ct_tensor *tt = ct_transpose(t, 0, 1);
    ct_tensor *tflat = ct_reshape(tt, (const int64_t[]){2, 12}, 2);
    assert_false(ct_tensor_shares_storage(tflat, t));
    int64_t texpected[24];
    for (int i = 0; i < 24; i++) texpected[i] = (i % 4) * 6 + i / 4;
    assert_values(tflat, texpected, 24);
    /* Adding and removing size-1 dims of a transpose stays a view. */
    ct_tensor *with_ones = ct_reshape(tt, (const int64_t[]){1, 6, 1, 4}, 4);
    assert_true(ct_tensor_shares_storage(with_ones, t));
    assert_values(with_ones, texpected, 24);
    ct_release(with_ones);
    ct_release(tflat);
    ct_release(tt);
    ct_release(flat);
    ct_release(split_rows);
    ct_release(half);
    ct_release(t);
}

static void reshape_of_empty_tensors_follows_pytorch(void **state)
{
    (void)state;
    ct_tensor *t = ct_zeros((const int64_t[]){0, 3}, 2, CT_F32, CT_DEVICE_CPU);
    ct_tensor *r = ct_reshape(t, (const int64_t[]){3, 0, 5}, 3);
    assert_shape(r, (const int64_t[]){3, 0, 5}, 3);
    ct_tensor *inferred = ct_reshape(t, (const int64_t[]){-1, 3}, 2);
    assert_shape(inferred, (const int64_t[]){0, 3}, 2);
    assert_true(ct_tensor_shares_storage(inferred, t));
    ct_release(inferred);
    ct_release(r);
    ct_release(t);
}

static void empty_tensors_are_contiguous_whatever_their_views(void **state)
{
    (void)state;
    /* dims whose product overflows int64 are allowed when another dim is 0 */
    const int64_t huge = INT64_MAX / 4;
    ct_tensor *t = ct_empty((const int64_t[]){0, huge, huge}, 3, CT_F32, CT_DEVICE_CPU);
    assert_non_null(t);
    assert_int_equal(ct_numel(t), 0);
    assert_true(ct_is_contiguous(t));
    ct_tensor *transposed = ct_transpose(t, 0, 2);
    assert_non_null(transposed);
    assert_true(ct_is_contiguous(transposed));
    ct_tensor *copy = ct_contiguous(transposed);
    assert_non_null(copy);
    assert_int_equal(ct_numel(copy), 0);
    ct_release(copy);
    ct_release(transposed);
    ct_release(t);
}

static void flatten_merges_the_given_dims(void **state)
{
    (void)state;
    ct_tensor *t = counting((const int64_t[]){2, 3, 4, 5}, 4);
    ct_tensor *middle = ct_flatten(t, 1, -2);
    assert_shape(middle, (const int64_t[]){2, 12, 5}, 3);
    assert_true(ct_tensor_shares_storage(middle, t));
    ct_tensor *same = ct_flatten(t, -1, -1);
    assert_shape(same, (const int64_t[]){2, 3, 4, 5}, 4);
    ct_scope_push();
    ct_tensor *scalar = ct_scope_keep(ct_reshape(ct_select(ct_flatten(t, 0, 3), 0, 7), NULL, 0));
    ct_scope_pop();
    ct_tensor *one = ct_flatten(scalar, 0, -1);
    assert_shape(one, (const int64_t[]){1}, 1);
    assert_values(one, (const int64_t[]){7}, 1);
    /* A transposed tensor cannot merge its dims without a copy; flatten copies like reshape. */
    ct_tensor *tt = ct_transpose(t, 0, 3);
    ct_tensor *copied = ct_flatten(tt, 0, 1);
    assert_shape(copied, (const int64_t[]){15, 4, 2}, 3);
    assert_false(ct_tensor_shares_storage(copied, t));
    int64_t first[2] = {0, 60}; /* copied[0][0] = t[:, 0, 0, 0] */
    ct_scope_push();
    ct_tensor *row = ct_scope_keep(ct_select(ct_select(copied, 0, 0), 0, 0));
    ct_scope_pop();
    assert_values(row, first, 2);
    ct_release(row);
    ct_release(copied);
    ct_release(tt);
    ct_release(one);
    ct_release(scalar);
    ct_release(same);
    ct_release(middle);
    ct_release(t);
}

static void transpose_and_permute_reorder_dims_with_negative_dims(void **state)
{
    (void)state;
    ct_tensor *t = counting((const int64_t[]){2, 3, 4}, 3);
    ct_tensor *tt = ct_transpose(t, -1, 0); /* [4, 3, 2] */
    assert_shape(tt, (const int64_t[]){4, 3, 2}, 3);
    assert_true(ct_tensor_shares_storage(tt, t));
    int64_t expected[24];
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 3; b++)
            for (int c = 0; c < 2; c++) expected[(a * 3 + b) * 2 + c] = c * 12 + b * 4 + a;
    assert_values(tt, expected, 24);
    ct_tensor *p = ct_permute(t, (const int[]){1, -1, 0}, 3); /* [3, 4, 2] */
    assert_shape(p, (const int64_t[]){3, 4, 2}, 3);
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 4; b++)
            for (int c = 0; c < 2; c++) expected[(a * 4 + b) * 2 + c] = c * 12 + a * 4 + b;
    assert_values(p, expected, 24);
    ct_tensor *identity = ct_permute(t, (const int[]){0, 1, 2}, 3);
    assert_true(ct_is_contiguous(identity));
    ct_release(identity);
    ct_release(p);
    ct_release(tt);
    ct_release(t);
}

static void squeeze_and_unsqueeze_remove_and_insert_size_one_dims(void **state)
{
    (void)state;
    ct_tensor *t = counting((const int64_t[]){1, 3, 1, 2}, 4);
    ct_tensor *all = ct_squeeze(t);
    assert_shape(all, (const int64_t[]){3, 2}, 2);
    ct_tensor *one = ct_squeeze_dim(t, -2);
    assert_shape(one, (const int64_t[]){1, 3, 2}, 3);
    ct_tensor *kept = ct_squeeze_dim(t, 1); /* size 3: unchanged */
    assert_shape(kept, (const int64_t[]){1, 3, 1, 2}, 4);
    ct_tensor *front = ct_unsqueeze(all, 0);
    assert_shape(front, (const int64_t[]){1, 3, 2}, 3);
    ct_tensor *back = ct_unsqueeze(all, -1);
    assert_shape(back, (const int64_t[]){3, 2, 1}, 3);
    ct_tensor *middle = ct_unsqueeze(all, -2);
    assert_shape(middle, (const int64_t[]){3, 1, 2}, 3);
    const int64_t expected[6] = {0, 1, 2, 3, 4, 5};
    assert_values(middle, expected, 6);
    assert_true(ct_tensor_shares_storage(middle, t));
    assert_true(ct_is_contiguous(middle));
    ct_release(middle);
    ct_release(back);
    ct_release(front);
    ct_release(kept);
    ct_release(one);
    ct_release(all);
    ct_release(t);
}

static void expand_repeats_size_one_dims_with_stride_zero(void **state)
{
    (void)state;
    ct_tensor *t = counting((const int64_t[]){3, 1}, 2);
    ct_tensor *e = ct_expand(t, (const int64_t[]){2, -1, 4}, 3);
    assert_shape(e, (const int64_t[]){2, 3, 4}, 3);
    assert_true(ct_tensor_shares_storage(e, t));
    assert_int_equal(ct_tensor_strides(e)[0], 0);
    assert_int_equal(ct_tensor_strides(e)[2], 0);
    int64_t expected[24];
    for (int i = 0; i < 24; i++) expected[i] = (i / 4) % 3;
    assert_values(e, expected, 24);
    ct_tensor *same = ct_expand(t, (const int64_t[]){3, 1}, 2);
    assert_shape(same, (const int64_t[]){3, 1}, 2);
    ct_tensor *to_empty = ct_expand(t, (const int64_t[]){3, 0}, 2);
    assert_shape(to_empty, (const int64_t[]){3, 0}, 2);
    ct_release(to_empty);
    ct_release(same);
    ct_release(e);
    ct_release(t);
}

static void a_chain_of_views_matches_plain_indexing(void **state)
{
    (void)state;
    /* t[b][r][c] = 100 b + 10 r + c; chain: transpose(0, 2) -> slice dim 1 [1::2] -> select dim 0 2 */
    int64_t data[2 * 5 * 4];
    for (int b = 0; b < 2; b++)
        for (int r = 0; r < 5; r++)
            for (int c = 0; c < 4; c++) data[(b * 5 + r) * 4 + c] = 100 * b + 10 * r + c;
    ct_tensor *t = ct_tensor_from_data(data, CT_I64, (const int64_t[]){2, 5, 4}, 3, CT_DEVICE_CPU);
    ct_tensor *tt = ct_transpose(t, 0, 2);             /* [4, 5, 2]: tt[c][r][b] */
    ct_tensor *odd_rows = ct_slice(tt, 1, 1, 100, 2);  /* [4, 2, 2]: r = 1, 3 */
    ct_tensor *c2 = ct_select(odd_rows, 0, -2);        /* [2, 2]: c = 2 */
    assert_shape(c2, (const int64_t[]){2, 2}, 2);
    assert_true(ct_tensor_shares_storage(c2, t));
    const int64_t expected[4] = {12, 112, 32, 132};
    assert_values(c2, expected, 4);
    /* The same chain over a tensor on another device keeps that device and dtype. */
    ct_device fake = {CT_OPENCL, 0};
    ct_tensor *moved = ct_to(t, fake);
    ct_scope_push();
    ct_tensor *chain = ct_scope_keep(ct_select(ct_slice(ct_transpose(moved, 0, 2), 1, 1, 100, 2), 0, -2));
    ct_scope_pop();
    assert_non_null(chain);
    assert_true(ct_device_equal(ct_tensor_device(chain), fake));
    assert_int_equal(ct_tensor_dtype(chain), CT_I64);
    assert_values(chain, expected, 4);
    ct_release(chain);
    ct_release(moved);
    ct_release(c2);
    ct_release(odd_rows);
    ct_release(tt);
    ct_release(t);
}

/* torch.Tensor.data_ptr(): a view's pointer is its first element's, in the base's memory. */
static void data_ptr_of_a_view_points_at_its_first_element(void **state)
{
    (void)state;
    int64_t values[12];
    for (int i = 0; i < 12; i++) values[i] = 10 * i;
    ct_tensor *t = ct_tensor_from_data(values, CT_I64, (int64_t[]){3, 4}, 2, CT_DEVICE_CPU);
    ct_tensor *row = ct_select(t, 0, 2), *column = ct_select(t, 1, 1);
    const int64_t *base = ct_data_ptr(t), *in_row = ct_data_ptr(row), *in_column = ct_data_ptr(column);
    assert_int_equal(base[5], 50);
    assert_ptr_equal(in_row, base + 8);
    assert_int_equal(in_column[ct_tensor_strides(column)[0]], 50);
    ct_tensor *moved = ct_to(t, (ct_device){CT_OPENCL, 0});
    assert_non_null(moved);
    assert_null(ct_data_ptr(moved));
    assert_int_equal(ct_last_error(), CT_ERR_DEVICE);
    assert_non_null(strstr(ct_last_error_message(), "the host cannot address"));
    ct_clear_error();
    assert_null(ct_data_ptr(NULL));
    assert_int_equal(ct_last_error(), CT_ERR_NULL_ARGUMENT);
    ct_clear_error();
    ct_tensor *list[] = {t, row, column, moved};
    for (int i = 0; i < 4; i++) ct_release(list[i]);
}

static void views_inside_a_scope_are_released_by_the_pop(void **state)
{
    (void)state;
    ct_tensor *t = counting((const int64_t[]){4, 4}, 2);
    ct_scope_push();
    ct_tensor *kept = ct_scope_keep(ct_select(ct_transpose(ct_reshape(t, (const int64_t[]){2, 8}, 2), 0, 1), 0, 3));
    assert_int_equal(ct_scope_pop(), CT_OK);
    assert_values(kept, (const int64_t[]){3, 11}, 2);
    assert_int_equal(ct_refcount(kept), 1);
    ct_release(kept);
    ct_release(t);
}

int main(void)
{
    ct_test_install_fake_opencl();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reshape_of_a_contiguous_tensor_is_a_view_with_the_same_values),
        cmocka_unit_test(writes_through_one_view_are_read_through_another),
        cmocka_unit_test(reshape_of_a_non_contiguous_tensor_views_when_strides_allow_and_copies_otherwise),
        cmocka_unit_test(reshape_of_empty_tensors_follows_pytorch),
        cmocka_unit_test(empty_tensors_are_contiguous_whatever_their_views),
        cmocka_unit_test(flatten_merges_the_given_dims),
        cmocka_unit_test(transpose_and_permute_reorder_dims_with_negative_dims),
        cmocka_unit_test(squeeze_and_unsqueeze_remove_and_insert_size_one_dims),
        cmocka_unit_test(expand_repeats_size_one_dims_with_stride_zero),
        cmocka_unit_test(data_ptr_of_a_view_points_at_its_first_element),
        cmocka_unit_test(a_chain_of_views_matches_plain_indexing),
        cmocka_unit_test(views_inside_a_scope_are_released_by_the_pop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
