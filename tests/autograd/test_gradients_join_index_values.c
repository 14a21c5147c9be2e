/* The gradients of cat, stack, index_select and gather against plain C: float32 sums of
 * repeated indices (the same bits on every run and every device), gather's index smaller than
 * its input, cat's promotion (each input gets its own dtype back), inputs that do not require
 * grad, empty inputs and indices, and the graph's names. */
#include "test_common.h"

static ct_tensor *requiring(ct_tensor *t)
{
    ct_requires_grad_(t, true);
    return t;
}

/* A float32 tensor of the shape with values from a fixed pseudo-random sequence in [-1, 1). */
static ct_tensor *values_f32(const int64_t *shape, int ndim, ct_device device, float *host, unsigned seed)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        host[i] = (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f;
    }
    return ct_tensor_from_data(host, CT_F32, shape, ndim, device);
}

/* t's gradient read back (n floats); fails when it has none or another dtype. */
static void read_grad(const ct_tensor *t, float *out, int64_t n)
{
    ct_tensor *g = ct_grad(t);
    assert_non_null(g);
    assert_int_equal(ct_tensor_dtype(g), CT_F32);
    assert_int_equal(ct_numel(g), n);
    assert_int_equal(ct_tensor_to_array(g, out, sizeof(float) * (size_t)n), CT_OK);
    ct_release(g);
}

/* index_select of a [rows, cols] float32 along dim 0 with `count` repeated indices: the
 * gradient against C sums taken in index order, bit for bit, twice. Large enough to run in
 * parallel on the CPU. */
static void index_select_sums_on(ct_device device)
{
    enum { ROWS = 300, COLS = 64, COUNT = 2000 };
    ct_scope_push();
    float *a_host = malloc(sizeof(float) * ROWS * COLS), *g_host = malloc(sizeof(float) * COUNT * COLS);
    float *want = calloc(ROWS * COLS, sizeof(float)), *got = malloc(sizeof(float) * ROWS * COLS);
    int64_t *index_host = malloc(sizeof(int64_t) * COUNT);
    for (int k = 0; k < COUNT; k++) index_host[k] = (k * 7919) % 251; /* rows 251.. get nothing */
    ct_tensor *a = requiring(values_f32((int64_t[]){ROWS, COLS}, 2, device, a_host, 1));
    ct_tensor *g = values_f32((int64_t[]){COUNT, COLS}, 2, device, g_host, 2);
    ct_tensor *index = ct_tensor_from_data(index_host, CT_I64, (int64_t[]){COUNT}, 1, device);
    for (int k = 0; k < COUNT; k++)
        for (int c = 0; c < COLS; c++) want[index_host[k] * COLS + c] += g_host[k * COLS + c];
    for (int run = 0; run < 2; run++) {
        ct_tensor *out = ct_index_select(a, 0, index);
        assert_string_equal(ct_grad_fn_name(out), "IndexSelectBackward");
        assert_int_equal(ct_backward_with(out, g, false), CT_OK);
        read_grad(a, got, ROWS * COLS);
        assert_memory_equal(got, want, sizeof(float) * ROWS * COLS);
        ct_zero_grad(a);
    }
    assert_false(ct_requires_grad(index));
    free(a_host);
    free(g_host);
    free(want);
    free(got);
    free(index_host);
    ct_scope_pop();
}

/* gather along dim 1 of a [4, 5] with a [3, 6] int32 index (smaller in dim 0): row 3 gets no
 * gradient, the others the sums of their picks. */
static void gather_sums_on(ct_device device)
{
    ct_scope_push();
    float a_host[20], g_host[18], want[20] = {0}, got[20];
    const int32_t index_host[18] = {4, 4, 0, 1, 4, 2, 0, 0, 0, 3, 3, 1, 2, 4, 2, 2, 0, 4};
    ct_tensor *a = requiring(values_f32((int64_t[]){4, 5}, 2, device, a_host, 3));
    ct_tensor *g = values_f32((int64_t[]){3, 6}, 2, device, g_host, 4);
    ct_tensor *index = ct_tensor_from_data(index_host, CT_I32, (int64_t[]){3, 6}, 2, device);
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 6; k++) want[r * 5 + index_host[r * 6 + k]] += g_host[r * 6 + k];
    ct_tensor *out = ct_gather(a, 1, index);
    assert_string_equal(ct_grad_fn_name(out), "GatherBackward");
    assert_int_equal(ct_backward_with(out, g, false), CT_OK);
    read_grad(a, got, 20);
    assert_memory_equal(got, want, sizeof want);
    ct_scope_pop();
}

static void index_gradients_sum_repeated_indices_on_the_cpu(void **state)
{
    (void)state;
    index_select_sums_on(CT_DEVICE_CPU);
    gather_sums_on(CT_DEVICE_CPU);
}

static void index_gradients_sum_repeated_indices_on_opencl(void **state)
{
    (void)state;
    if (ct_device_count(CT_OPENCL) == 0) skip();
    for (int i = 0; i < ct_device_count(CT_OPENCL); i++) {
        index_select_sums_on((ct_device){CT_OPENCL, i});
        gather_sums_on((ct_device){CT_OPENCL, i});
    }
}

static void empty_indices_give_zero_gradients(void **state)
{
    (void)state;
    ct_scope_push();
    float a_host[6], got[6];
    ct_tensor *a = requiring(values_f32((int64_t[]){2, 3}, 2, CT_DEVICE_CPU, a_host, 5));
    ct_tensor *none = ct_zeros((int64_t[]){0}, 1, CT_I64, CT_DEVICE_CPU);
    ct_tensor *selected = ct_index_select(a, 1, none);
    assert_int_equal(ct_numel(selected), 0);
    assert_int_equal(ct_backward(ct_sum(selected, NULL, 0, false)), CT_OK);
    read_grad(a, got, 6);
    for (int i = 0; i < 6; i++) assert_true(got[i] == 0.0f);
    ct_zero_grad(a);
    ct_tensor *none2 = ct_zeros((int64_t[]){2, 0}, 2, CT_I64, CT_DEVICE_CPU);
    assert_int_equal(ct_backward(ct_sum(ct_gather(a, 1, none2), NULL, 0, false)), CT_OK);
    read_grad(a, got, 6);
    for (int i = 0; i < 6; i++) assert_true(got[i] == 0.0f);
    ct_scope_pop();
}

static void cat_gives_each_input_its_slice_in_its_own_dtype(void **state)
{
    (void)state;
    ct_scope_push();
    /* cat([a f32 [2, 2], b f64 [2, 1], c int64 [2, 1]], dim 1) is float64 [2, 4]. */
    const float a_host[4] = {1, 2, 3, 4};
    const double b_host[2] = {5, 6};
    const int64_t c_host[2] = {7, 8};
    ct_tensor *a = requiring(ct_tensor_from_data(a_host, CT_F32, (int64_t[]){2, 2}, 2, CT_DEVICE_CPU));
    ct_tensor *b = requiring(ct_tensor_from_data(b_host, CT_F64, (int64_t[]){2, 1}, 2, CT_DEVICE_CPU));
    ct_tensor *c = ct_tensor_from_data(c_host, CT_I64, (int64_t[]){2, 1}, 2, CT_DEVICE_CPU);
    const ct_tensor *parts[3] = {a, b, c};
    ct_tensor *out = ct_cat(parts, 3, -1);
    assert_int_equal(ct_tensor_dtype(out), CT_F64);
    assert_string_equal(ct_grad_fn_name(out), "CatBackward");
    const double g_host[8] = {10, 11, 12, 13, 14, 15, 16, 17};
    ct_tensor *g = ct_tensor_from_data(g_host, CT_F64, (int64_t[]){2, 4}, 2, CT_DEVICE_CPU);
    assert_int_equal(ct_backward_with(out, g, false), CT_OK);
    float a_grad[4];
    read_grad(a, a_grad, 4);
    const float a_want[4] = {10, 11, 14, 15};
    assert_memory_equal(a_grad, a_want, sizeof a_want);
    ct_tensor *b_grad = ct_grad(b);
    assert_int_equal(ct_tensor_dtype(b_grad), CT_F64);
    double b_got[2];
    assert_int_equal(ct_tensor_to_array(b_grad, b_got, sizeof b_got), CT_OK);
    assert_true(b_got[0] == 12 && b_got[1] == 16);
    ct_release(b_grad);
    ct_tensor *c_grad = ct_grad(c);
    assert_null(c_grad);
    ct_scope_pop();
}

static void cat_skips_empty_1d_inputs_and_still_gives_them_a_gradient(void **state)
{
    (void)state;
    ct_scope_push();
    float a_host[6], got[6];
    ct_tensor *a = requiring(values_f32((int64_t[]){2, 3}, 2, CT_DEVICE_CPU, a_host, 6));
    ct_tensor *empty = requiring(ct_zeros((int64_t[]){0}, 1, CT_F32, CT_DEVICE_CPU));
    const ct_tensor *parts[3] = {empty, a, empty};
    ct_tensor *out = ct_cat(parts, 3, 0);
    assert_int_equal(ct_tensor_size(out, 0), 2);
    assert_int_equal(ct_backward(ct_sum(out, NULL, 0, false)), CT_OK);
    read_grad(a, got, 6);
    for (int i = 0; i < 6; i++) assert_true(got[i] == 1.0f);
    ct_tensor *empty_grad = ct_grad(empty);
    assert_non_null(empty_grad);
    assert_int_equal(ct_tensor_ndim(empty_grad), 1);
    assert_int_equal(ct_tensor_size(empty_grad, 0), 0);
    ct_release(empty_grad);
    ct_scope_pop();
}

static void stack_gives_each_input_its_select(void **state)
{
    (void)state;
    ct_scope_push();
    float x_host[6], y_host[6], got[6];
    ct_tensor *x = requiring(values_f32((int64_t[]){2, 3}, 2, CT_DEVICE_CPU, x_host, 7));
    ct_tensor *y = requiring(values_f32((int64_t[]){2, 3}, 2, CT_DEVICE_CPU, y_host, 8));
    const ct_tensor *parts[2] = {x, y};
    ct_tensor *out = ct_stack(parts, 2, 1); /* [2, 2, 3]: out[i][0] = x[i], out[i][1] = y[i] */
    assert_string_equal(ct_grad_fn_name(out), "StackBackward");
    ct_tensor *g = ct_reshape(ct_arange(0, 12, 1, CT_F32, CT_DEVICE_CPU), (int64_t[]){2, 2, 3}, 3);
    assert_int_equal(ct_backward_with(out, g, false), CT_OK);
    read_grad(x, got, 6);
    for (int i = 0; i < 2; i++)
        for (int c = 0; c < 3; c++) assert_true(got[i * 3 + c] == (float)(i * 6 + c));
    read_grad(y, got, 6);
    for (int i = 0; i < 2; i++)
        for (int c = 0; c < 3; c++) assert_true(got[i * 3 + c] == (float)(i * 6 + 3 + c));
    ct_scope_pop();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(index_gradients_sum_repeated_indices_on_the_cpu),
        cmocka_unit_test(index_gradients_sum_repeated_indices_on_opencl),
        cmocka_unit_test(empty_indices_give_zero_gradients),
        cmocka_unit_test(cat_gives_each_input_its_slice_in_its_own_dtype),
        cmocka_unit_test(cat_skips_empty_1d_inputs_and_still_gives_them_a_gradient),
        cmocka_unit_test(stack_gives_each_input_its_select),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
