/* What the views record: their grad_fn names, nothing without requires_grad or grad mode, exact
 * float32 gradients of the input's shape and dtype, empty parts, 0-d inputs, and the parts of
 * chunk and split, which each lead back to the whole. */
#include "test_common.h"

/* A leaf holding 0, 1, 2, ... in the shape and dtype; it requires grad when dtype is floating. */
static ct_tensor *leaf(const int64_t *shape, int ndim, ct_dtype dtype)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    ct_tensor *values = ct_arange(0, (double)n, 1, dtype, CT_DEVICE_CPU);
    ct_tensor *out = ct_clone(ct_reshape(values, shape, ndim));
    if (dtype == CT_F32 || dtype == CT_F64) ct_requires_grad_(out, true);
    return out;
}

/* t's gradient as floats (at most 64), or fails when it has none or another shape/dtype. */
static void grad_values(const ct_tensor *t, float *out)
{
    ct_tensor *g = ct_grad(t);
    assert_non_null(g);
    assert_int_equal(ct_tensor_dtype(g), CT_F32);
    assert_int_equal(ct_tensor_ndim(g), ct_tensor_ndim(t));
    for (int d = 0; d < ct_tensor_ndim(t); d++) assert_int_equal(ct_tensor_size(g, d), ct_tensor_size(t, d));
    assert_int_equal(ct_tensor_to_array(g, out, sizeof(float) * (size_t)ct_numel(t)), CT_OK);
    ct_release(g);
}

static void views_name_their_backward(void **state)
{
    (void)state;
    ct_scope_push();
    ct_tensor *x = leaf((int64_t[]){2, 3, 4}, 3, CT_F32);
    ct_tensor *column = leaf((int64_t[]){3, 1}, 2, CT_F32);
    assert_string_equal(ct_grad_fn_name(ct_reshape(x, (int64_t[]){6, 4}, 2)), "ViewBackward");
    assert_string_equal(ct_grad_fn_name(ct_view(x, (int64_t[]){-1}, 1)), "ViewBackward");
    assert_string_equal(ct_grad_fn_name(ct_flatten(x, 0, 1)), "ViewBackward");
    /* A transposed tensor cannot be flattened by strides: the reshape copies. */
    ct_tensor *copied = ct_reshape(ct_transpose(x, 0, 2), (int64_t[]){-1}, 1);
    assert_false(ct_tensor_shares_storage(copied, x));
    assert_string_equal(ct_grad_fn_name(copied), "ReshapeBackward");
    assert_string_equal(ct_grad_fn_name(ct_squeeze(column)), "SqueezeBackward");
    assert_string_equal(ct_grad_fn_name(ct_squeeze_dim(column, 1)), "SqueezeBackward");
    assert_string_equal(ct_grad_fn_name(ct_unsqueeze(x, 0)), "UnsqueezeBackward");
    assert_string_equal(ct_grad_fn_name(ct_transpose(x, 0, 1)), "TransposeBackward");
    assert_string_equal(ct_grad_fn_name(ct_permute(x, (int[]){1, 2, 0}, 3)), "PermuteBackward");
    assert_string_equal(ct_grad_fn_name(ct_expand(column, (int64_t[]){3, 5}, 2)), "ExpandBackward");
    assert_string_equal(ct_grad_fn_name(ct_narrow(x, 1, 0, 2)), "NarrowBackward");
    assert_string_equal(ct_grad_fn_name(ct_slice(x, 2, 0, 4, 2)), "SliceBackward");
    assert_string_equal(ct_grad_fn_name(ct_select(x, 0, 1)), "SelectBackward");
    ct_tensor *parts[4];
    int count = 0;
    assert_int_equal(ct_chunk(x, 2, 2, parts, 4, &count), CT_OK);
    assert_int_equal(count, 2);
    for (int i = 0; i < count; i++) assert_string_equal(ct_grad_fn_name(parts[i]), "SplitBackward");
    assert_int_equal(ct_split(x, 2, 1, parts, 4, &count), CT_OK);
    assert_int_equal(count, 2);
    for (int i = 0; i < count; i++) assert_string_equal(ct_grad_fn_name(parts[i]), "SplitBackward");
    /* Views still share the input's storage. */
    assert_true(ct_tensor_shares_storage(ct_transpose(x, 0, 1), x));
    ct_scope_pop();
}

static void views_record_nothing_without_requires_grad_or_grad_mode(void **state)
{
    (void)state;
    ct_scope_push();
    ct_tensor *plain = ct_zeros((int64_t[]){2, 3}, 2, CT_F32, CT_DEVICE_CPU);
    ct_tensor *ints = leaf((int64_t[]){2, 3}, 2, CT_I64);
    ct_tensor *x = leaf((int64_t[]){2, 3}, 2, CT_F32);
    const ct_tensor *untracked[2] = {plain, ints};
    for (int i = 0; i < 2; i++) {
        const ct_tensor *t = untracked[i];
        assert_false(ct_requires_grad(ct_transpose(t, 0, 1)));
        assert_false(ct_requires_grad(ct_reshape(t, (int64_t[]){3, 2}, 2)));
        assert_null(ct_grad_fn_name(ct_narrow(t, 1, 1, 2)));
        assert_null(ct_grad_fn_name(ct_expand(t, (int64_t[]){4, 2, 3}, 3)));
    }
    ct_no_grad_push();
    ct_tensor *seen = ct_select(x, 0, 1);
    ct_tensor *parts[2];
    int count = 0;
    assert_int_equal(ct_chunk(x, 2, 0, parts, 2, &count), CT_OK);
    ct_no_grad_pop();
    assert_false(ct_requires_grad(seen));
    assert_true(ct_is_leaf(seen));
    for (int i = 0; i < count; i++) assert_false(ct_requires_grad(parts[i]));
    ct_scope_pop();
}

static void gradients_of_parts_are_exact_in_float32(void **state)
{
    (void)state;
    ct_scope_push();
    /* x [2, 3, 4]; y = x[:, :, 0:4:3] gets the gradient g = 1, 2, ... over its [2, 3, 2]. */
    ct_tensor *x = leaf((int64_t[]){2, 3, 4}, 3, CT_F32);
    ct_tensor *y = ct_slice(x, 2, 0, 4, 3);
    ct_tensor *g = ct_arange(1, 13, 1, CT_F32, CT_DEVICE_CPU);
    assert_int_equal(ct_backward_with(y, ct_reshape(g, (int64_t[]){2, 3, 2}, 3), false), CT_OK);
    float got[24];
    grad_values(x, got);
    for (int i = 0; i < 6; i++)
        for (int k = 0; k < 4; k++) {
            float want = k == 0 ? (float)(2 * i + 1) : k == 3 ? (float)(2 * i + 2) : 0.0f;
            assert_true(got[i * 4 + k] == want);
        }
    ct_zero_grad(x);

    /* select(x, 1, -1) gets 1..8 over [2, 4]: row 2 of each matrix. */
    y = ct_select(x, 1, -1);
    g = ct_arange(1, 9, 1, CT_F32, CT_DEVICE_CPU);
    assert_int_equal(ct_backward_with(y, ct_reshape(g, (int64_t[]){2, 4}, 2), false), CT_OK);
    grad_values(x, got);
    for (int b = 0; b < 2; b++)
        for (int r = 0; r < 3; r++)
            for (int k = 0; k < 4; k++)
                assert_true(got[(b * 3 + r) * 4 + k] == (r == 2 ? (float)(b * 4 + k + 1) : 0.0f));
    ct_scope_pop();
}

static void gradients_of_reorderings_and_expand_are_exact_in_float32(void **state)
{
    (void)state;
    ct_scope_push();
    /* permute(x, {2, 0, 1}) of [2, 3, 4] is [4, 2, 3]; its gradient g goes back to
     * x.grad[a][b][c] = g[c][a][b]. */
    ct_tensor *x = leaf((int64_t[]){2, 3, 4}, 3, CT_F32);
    ct_tensor *g = ct_reshape(ct_arange(0, 24, 1, CT_F32, CT_DEVICE_CPU), (int64_t[]){4, 2, 3}, 3);
    assert_int_equal(ct_backward_with(ct_permute(x, (int[]){2, 0, 1}, 3), g, false), CT_OK);
    float got[24];
    grad_values(x, got);
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 3; b++)
            for (int c = 0; c < 4; c++) assert_true(got[(a * 3 + b) * 4 + c] == (float)((c * 2 + a) * 3 + b));
    ct_zero_grad(x);

    /* transpose(x, 0, 2) is [4, 3, 2]: x.grad[a][b][c] = g[c][b][a]. */
    g = ct_reshape(ct_arange(0, 24, 1, CT_F32, CT_DEVICE_CPU), (int64_t[]){4, 3, 2}, 3);
    assert_int_equal(ct_backward_with(ct_transpose(x, 0, 2), g, false), CT_OK);
    grad_values(x, got);
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 3; b++)
            for (int c = 0; c < 4; c++) assert_true(got[(a * 3 + b) * 4 + c] == (float)((c * 3 + b) * 2 + a));

    /* expand [3, 1] -> [2, 3, 4]: each element's gradient is the sum over the 8 copies. */
    ct_tensor *column = leaf((int64_t[]){3, 1}, 2, CT_F32);
    g = ct_reshape(ct_arange(0, 24, 1, CT_F32, CT_DEVICE_CPU), (int64_t[]){2, 3, 4}, 3);
    assert_int_equal(ct_backward_with(ct_expand(column, (int64_t[]){2, 3, 4}, 3), g, false), CT_OK);
    grad_values(column, got);
    for (int r = 0; r < 3; r++) {
        float want = 0;
        for (int b = 0; b < 2; b++)
            for (int k = 0; k < 4; k++) want += (float)((b * 3 + r) * 4 + k);
        assert_true(got[r] == want);
    }
    ct_scope_pop();
}

static void empty_parts_and_0d_inputs_get_gradients_of_their_shape(void **state)
{
    (void)state;
    ct_scope_push();
    ct_tensor *x = leaf((int64_t[]){2, 3}, 2, CT_F32);
    ct_tensor *none = ct_narrow(x, 1, 1, 0);
    assert_int_equal(ct_numel(none), 0);
    assert_int_equal(ct_backward(ct_sum(none, NULL, 0, false)), CT_OK);
    float got[6];
    grad_values(x, got);
    for (int i = 0; i < 6; i++) assert_true(got[i] == 0.0f);
    ct_zero_grad(x);

    /* Expanding a [1, 3] to [0, 3]: nothing flows, the gradient is zeros of [1, 3]. */
    ct_tensor *row = leaf((int64_t[]){1, 3}, 2, CT_F32);
    assert_int_equal(ct_backward(ct_sum(ct_expand(row, (int64_t[]){0, 3}, 2), NULL, 0, false)), CT_OK);
    grad_values(row, got);
    for (int i = 0; i < 3; i++) assert_true(got[i] == 0.0f);

    /* chunk of an empty dim still gives its parts, each leading back to the input. */
    ct_tensor *empty = leaf((int64_t[]){0, 2}, 2, CT_F32);
    ct_tensor *parts[3];
    int count = 0;
    assert_int_equal(ct_chunk(empty, 3, 0, parts, 3, &count), CT_OK);
    assert_int_equal(count, 3);
    assert_int_equal(ct_backward(ct_sum(parts[1], NULL, 0, false)), CT_OK);
    ct_tensor *empty_grad = ct_grad(empty);
    assert_non_null(empty_grad);
    assert_int_equal(ct_tensor_size(empty_grad, 0), 0);
    assert_int_equal(ct_tensor_size(empty_grad, 1), 2);
    ct_release(empty_grad);

    /* A 0-d input through flatten, unsqueeze and squeeze. */
    float five = 5.0f;
    ct_tensor *scalar = ct_tensor_from_data(&five, CT_F32, NULL, 0, CT_DEVICE_CPU);
    ct_requires_grad_(scalar, true);
    ct_tensor *flat = ct_flatten(scalar, 0, -1);
    assert_int_equal(ct_tensor_ndim(flat), 1);
    ct_tensor *y = ct_squeeze(ct_unsqueeze(ct_mul(flat, flat), 0)); /* 25, d/dx = 2x */
    assert_int_equal(ct_backward(ct_sum(y, NULL, 0, false)), CT_OK);
    grad_values(scalar, got);
    assert_true(got[0] == 10.0f);
    ct_scope_pop();
}

static void every_part_of_chunk_and_split_leads_back_to_the_input(void **state)
{
    (void)state;
    ct_scope_push();
    /* split [7] by 3: parts [0:3], [3:6], [6:7]; part i gets the gradient i + 1. */
    ct_tensor *x = leaf((int64_t[]){7}, 1, CT_F32);
    ct_tensor *parts[3];
    int count = 0;
    assert_int_equal(ct_split(x, 3, 0, parts, 3, &count), CT_OK);
    assert_int_equal(count, 3);
    for (int i = 0; i < count; i++) {
        ct_tensor *g = ct_full(ct_tensor_shape(parts[i]), 1, i + 1.0, CT_F32, CT_DEVICE_CPU);
        assert_int_equal(ct_backward_with(parts[i], g, false), CT_OK);
    }
    float got[7];
    grad_values(x, got);
    const float want[7] = {1, 1, 1, 2, 2, 2, 3};
    for (int i = 0; i < 7; i++) assert_true(got[i] == want[i]);

    /* A part can outlive the scope it was made in and still lead back. */
    ct_zero_grad(x);
    ct_scope_push();
    assert_int_equal(ct_chunk(x, 2, -1, parts, 3, &count), CT_OK);
    ct_tensor *kept = ct_scope_keep(parts[1]);
    ct_scope_pop();
    assert_int_equal(ct_backward(ct_sum(kept, NULL, 0, false)), CT_OK);
    grad_values(x, got);
    for (int i = 0; i < 7; i++) assert_true(got[i] == (i >= 4 ? 1.0f : 0.0f));
    ct_scope_pop();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(views_name_their_backward),
        cmocka_unit_test(views_record_nothing_without_requires_grad_or_grad_mode),
        cmocka_unit_test(gradients_of_parts_are_exact_in_float32),
        cmocka_unit_test(gradients_of_reorderings_and_expand_are_exact_in_float32),
        cmocka_unit_test(empty_parts_and_0d_inputs_get_gradients_of_their_shape),
        cmocka_unit_test(every_part_of_chunk_and_split_leads_back_to_the_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
