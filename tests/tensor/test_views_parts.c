/* Views of parts along one dim: narrow, slice (Python's rules), select, chunk and split. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "ctorch.h"

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

static void assert_values(const ct_tensor *t, const int64_t *expected, int64_t n)
{
    assert_non_null(t);
    assert_int_equal(ct_numel(t), n);
    int64_t *values = calloc((size_t)n + 1, sizeof *values);
    assert_int_equal(ct_tensor_to_array(t, values, (size_t)(n + 1) * sizeof *values), CT_OK);
    for (int64_t i = 0; i < n; i++) assert_int_equal(values[i], expected[i]);
    free(values);
}

/* Python's range(start, end, step) over 0..n-1 after slice clamping, as a reference. */
static int64_t python_slice(int64_t n, int64_t start, int64_t end, int64_t step, int64_t *out)
{
    if (start < 0) start += n;
    if (start < 0) start = 0;
    if (start > n) start = n;
    if (end < 0) end += n;
    if (end < 0) end = 0;
    if (end > n) end = n;
    int64_t count = 0;
    for (int64_t i = start; i < end; i += step) out[count++] = i;
    return count;
}

static void slice_follows_python_slicing_for_every_bound(void **state)
{
    (void)state;
    const int64_t n = 7;
    ct_tensor *t = counting(&n, 1);
    const int64_t bounds[] = {-100, -8, -7, -3, -1, 0, 1, 3, 6, 7, 8, 100, INT64_MAX, INT64_MIN};
    const int64_t steps[] = {1, 2, 3, 10};
    for (size_t a = 0; a < sizeof bounds / sizeof *bounds; a++)
        for (size_t b = 0; b < sizeof bounds / sizeof *bounds; b++)
            for (size_t s = 0; s < sizeof steps / sizeof *steps; s++) {
                int64_t expected[8];
                int64_t count = python_slice(n, bounds[a], bounds[b], steps[s], expected);
                ct_tensor *part = ct_slice(t, -1, bounds[a], bounds[b], steps[s]);
                assert_true(ct_tensor_shares_storage(part, t));
                assert_int_equal(ct_tensor_shape(part)[0], count);
                assert_values(part, expected, count);
                ct_release(part);
            }
    ct_release(t);
}

static void slice_of_a_matrix_steps_through_rows_and_columns(void **state)
{
    (void)state;
    ct_tensor *t = counting((const int64_t[]){4, 5}, 2);
    ct_scope_push();
    ct_tensor *part = ct_scope_keep(ct_slice(ct_slice(t, 0, 1, 4, 2), 1, -4, -1, 2)); /* t[1:4:2, -4:-1:2] */
    ct_scope_pop();
    assert_int_equal(ct_tensor_shape(part)[0], 2);
    assert_int_equal(ct_tensor_shape(part)[1], 2);
    assert_values(part, (const int64_t[]){6, 8, 16, 18}, 4);
    ct_release(part);
    ct_release(t);
}

static void narrow_takes_length_elements_from_start(void **state)
{
    (void)state;
    ct_tensor *t = counting((const int64_t[]){3, 4}, 2);
    ct_tensor *cols = ct_narrow(t, -1, 1, 2);
    assert_values(cols, (const int64_t[]){1, 2, 5, 6, 9, 10}, 6);
    ct_tensor *from_end = ct_narrow(t, 0, -1, 1);
    assert_values(from_end, (const int64_t[]){8, 9, 10, 11}, 4);
    ct_tensor *none = ct_narrow(t, 0, 3, 0);
    assert_int_equal(ct_numel(none), 0);
    assert_true(ct_tensor_shares_storage(none, t));
    ct_release(none);
    ct_release(from_end);
    ct_release(cols);
    ct_release(t);
}

static void select_drops_the_dim_and_accepts_negative_indices(void **state)
{
    (void)state;
    ct_tensor *t = counting((const int64_t[]){2, 3, 4}, 3);
    ct_tensor *last_row = ct_select(t, 1, -1);
    assert_int_equal(ct_tensor_ndim(last_row), 2);
    assert_values(last_row, (const int64_t[]){8, 9, 10, 11, 20, 21, 22, 23}, 8);
    ct_tensor *second = ct_select(t, -3, 1);
    assert_int_equal(ct_tensor_offset(second), 12);
    ct_scope_push();
    ct_tensor *element = ct_scope_keep(ct_select(ct_select(second, 0, 2), 0, 3));
    ct_scope_pop();
    assert_int_equal(ct_tensor_ndim(element), 0);
    int64_t value = 0;
    assert_int_equal(ct_item_int64(element, &value), CT_OK);
    assert_int_equal(value, 23);
    ct_release(element);
    ct_release(second);
    ct_release(last_row);
    ct_release(t);
}

static void chunk_gives_parts_of_ceil_size_and_fewer_when_needed(void **state)
{
    (void)state;
    const int64_t n = 10;
    ct_tensor *t = counting(&n, 1);
    ct_tensor *parts[8];
    int count = -1;
    /* ceil(10 / 4) = 3: sizes 3, 3, 3, 1 */
    assert_int_equal(ct_chunk(t, 4, 0, parts, 8, &count), CT_OK);
    assert_int_equal(count, 4);
    assert_values(parts[0], (const int64_t[]){0, 1, 2}, 3);
    assert_values(parts[2], (const int64_t[]){6, 7, 8}, 3);
    assert_values(parts[3], (const int64_t[]){9}, 1);
    for (int i = 0; i < count; i++) ct_release(parts[i]);
    /* ceil(10 / 6) = 2: only 5 chunks, as torch.chunk */
    assert_int_equal(ct_chunk(t, 6, -1, parts, 8, &count), CT_OK);
    assert_int_equal(count, 5);
    assert_values(parts[4], (const int64_t[]){8, 9}, 2);
    assert_true(ct_tensor_shares_storage(parts[4], t));
    for (int i = 0; i < count; i++) ct_release(parts[i]);
    ct_release(t);
    /* An empty dim still gives the asked number of empty chunks. */
    ct_tensor *empty = ct_zeros((const int64_t[]){2, 0}, 2, CT_F32, CT_DEVICE_CPU);
    assert_int_equal(ct_chunk(empty, 3, 1, parts, 8, &count), CT_OK);
    assert_int_equal(count, 3);
    for (int i = 0; i < count; i++) {
        assert_int_equal(ct_numel(parts[i]), 0);
        ct_release(parts[i]);
    }
    ct_release(empty);
}

static void split_gives_parts_of_split_size_with_a_smaller_last(void **state)
{
    (void)state;
    ct_tensor *t = counting((const int64_t[]){2, 5}, 2);
    ct_tensor *parts[4];
    int count = 0;
    assert_int_equal(ct_split(t, 2, 1, parts, 4, &count), CT_OK);
    assert_int_equal(count, 3);
    assert_values(parts[0], (const int64_t[]){0, 1, 5, 6}, 4);
    assert_values(parts[1], (const int64_t[]){2, 3, 7, 8}, 4);
    assert_values(parts[2], (const int64_t[]){4, 9}, 2);
    for (int i = 0; i < count; i++) ct_release(parts[i]);
    /* A split size past the size gives the whole tensor once. */
    assert_int_equal(ct_split(t, 7, 0, parts, 4, &count), CT_OK);
    assert_int_equal(count, 1);
    assert_int_equal(ct_tensor_shape(parts[0])[0], 2);
    ct_release(parts[0]);
    ct_release(t);
}

static void chunk_results_are_recorded_in_the_scope(void **state)
{
    (void)state;
    const int64_t n = 6;
    ct_tensor *t = counting(&n, 1);
    ct_tensor *parts[3];
    int count = 0;
    ct_scope_push();
    assert_int_equal(ct_chunk(t, 3, 0, parts, 3, &count), CT_OK);
    ct_tensor *kept = ct_scope_keep(parts[1]);
    assert_int_equal(ct_scope_pop(), CT_OK); /* releases parts 0 and 2 */
    assert_values(kept, (const int64_t[]){2, 3}, 2);
    ct_release(kept);
    assert_int_equal(ct_refcount(t), 1);
    ct_release(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(slice_follows_python_slicing_for_every_bound),
        cmocka_unit_test(slice_of_a_matrix_steps_through_rows_and_columns),
        cmocka_unit_test(narrow_takes_length_elements_from_start),
        cmocka_unit_test(select_drops_the_dim_and_accepts_negative_indices),
        cmocka_unit_test(chunk_gives_parts_of_ceil_size_and_fewer_when_needed),
        cmocka_unit_test(split_gives_parts_of_split_size_with_a_smaller_last),
        cmocka_unit_test(chunk_results_are_recorded_in_the_scope),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
