/* Finite-difference checks (float64) of ct_conv2d's backward for input, weight and bias, on the
 * CPU and every OpenCL device: stride, padding, dilation, groups, no bias, a non-contiguous
 * input, only some inputs requiring grad, and a batch run in im2col chunks. */
#include "support/gradcheck.h"
#include "test_common.h"
#include "ops/nn_reference.h"
#include "ops/nn_internal.h"

typedef struct conv_args {
    int64_t stride[2], padding[2], dilation[2], groups;
} conv_args;

static ct_tensor *f_conv(ct_tensor *const *x, void *context)
{
    const conv_args *a = context;
    return ct_conv2d(x[0], x[1], x[2], a->stride, a->padding, a->dilation, a->groups);
}

static ct_tensor *f_conv_no_bias(ct_tensor *const *x, void *context)
{
    const conv_args *a = context;
    return ct_conv2d(x[0], x[1], NULL, a->stride, a->padding, a->dilation, a->groups);
}

static ct_tensor *values(const int64_t *shape, int ndim, uint64_t seed, ct_device device)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    double *v = ref_values(n, seed, -1, 1);
    ct_tensor *t = ref_tensor(v, shape, ndim, CT_F64, device);
    free(v);
    return t;
}

/* input [n, c, h, w], weight [o, c / groups, kh, kw], bias [o]. */
static void check(const char *what, ct_device device, const int64_t xs[4], const int64_t ws[4],
                  const conv_args *args, const bool *constant)
{
    ct_scope_push();
    ct_tensor *inputs[3] = {values(xs, 4, 11, device), values(ws, 4, 12, device),
                            values(&ws[0], 1, 13, device)};
    ct_gradcheck(what, f_conv, inputs, constant, 3, (void *)args);
    ct_scope_pop();
}

static void check_on(ct_device device)
{
    const int64_t x1[4] = {2, 2, 5, 5}, w1[4] = {3, 2, 3, 3};
    check("3x3, padding 1", device, x1, w1, &(conv_args){{1, 1}, {1, 1}, {1, 1}, 1}, NULL);
    const int64_t x2[4] = {1, 2, 7, 6}, w2[4] = {2, 2, 3, 2};
    check("stride [2, 3], padding [1, 0]", device, x2, w2, &(conv_args){{2, 3}, {1, 0}, {1, 1}, 1}, NULL);
    const int64_t x3[4] = {1, 1, 7, 7}, w3[4] = {2, 1, 3, 3};
    check("dilation 2, stride 2", device, x3, w3, &(conv_args){{2, 2}, {2, 1}, {2, 2}, 1}, NULL);
    const int64_t x4[4] = {2, 4, 4, 4}, w4[4] = {2, 2, 2, 2};
    check("groups 2", device, x4, w4, &(conv_args){{1, 1}, {0, 0}, {1, 1}, 2}, NULL);
    const int64_t x5[4] = {1, 3, 4, 5}, w5[4] = {3, 1, 3, 3};
    check("depthwise", device, x5, w5, &(conv_args){{1, 1}, {1, 1}, {1, 1}, 3}, NULL);
    bool only_weight[3] = {true, false, true}, only_input[3] = {false, true, true};
    check("weight alone", device, x1, w1, &(conv_args){{1, 1}, {1, 1}, {1, 1}, 1}, only_weight);
    check("input alone", device, x2, w2, &(conv_args){{2, 1}, {1, 1}, {1, 2}, 1}, only_input);

    ct_scope_push();
    conv_args plain = {{1, 1}, {0, 1}, {1, 1}, 1};
    const int64_t xt[4] = {2, 2, 5, 4}, wn[4] = {2, 2, 2, 3};
    ct_tensor *no_bias[2] = {values(x1, 4, 21, device), values(wn, 4, 22, device)};
    ct_gradcheck("no bias", f_conv_no_bias, no_bias, NULL, 2, &plain);
    /* a [2, 2, 4, 5] tensor transposed to [2, 2, 5, 4] */
    ct_tensor *viewed[3] = {ct_transpose(values((int64_t[]){2, 2, 4, 5}, 4, 23, device), 2, 3),
                            values(wn, 4, 24, device), values(&wn[0], 1, 25, device)};
    assert_false(ct_is_contiguous(viewed[0]));
    assert_memory_equal(ct_tensor_shape(viewed[0]), xt, sizeof xt);
    ct_gradcheck("a transposed input", f_conv, viewed, NULL, 3, &plain);
    ct_scope_pop();
}

static void gradients_on_the_cpu(void **state)
{
    (void)state;
    check_on(CT_DEVICE_CPU);
}

static void gradients_on_opencl(void **state)
{
    (void)state;
    if (ct_device_count(CT_OPENCL) == 0) skip();
    for (int i = 0; i < ct_device_count(CT_OPENCL); i++) check_on((ct_device){CT_OPENCL, i});
}

/* The weight's gradient sums over chunks and the input's is folded per chunk. */
static void gradients_in_im2col_chunks(void **state)
{
    (void)state;
    ct_conv2d_set_col_limit_for_testing(1); /* one sample per chunk */
    const int64_t xs[4] = {3, 2, 4, 4}, ws[4] = {4, 1, 3, 3};
    conv_args args = {{1, 2}, {1, 1}, {1, 1}, 2};
    check("chunks of one sample, cpu", CT_DEVICE_CPU, xs, ws, &args, NULL);
    if (ct_device_count(CT_OPENCL) > 0)
        check("chunks of one sample, opencl:0", (ct_device){CT_OPENCL, 0}, xs, ws, &args, NULL);
    ct_conv2d_set_col_limit_for_testing(0);
}

/* The node is named as PyTorch names it, and integer inputs never reach the backward. */
static void the_graph_records_a_convolution_node(void **state)
{
    (void)state;
    ct_scope_push();
    int64_t xs[4] = {1, 1, 3, 3}, ws[4] = {1, 1, 2, 2};
    ct_tensor *x = ct_ones(xs, 4, CT_F32, CT_DEVICE_CPU), *w = ct_ones(ws, 4, CT_F32, CT_DEVICE_CPU);
    ct_requires_grad_(w, true);
    ct_tensor *out = ct_conv2d(x, w, NULL, NULL, NULL, NULL, 1);
    assert_string_equal(ct_grad_fn_name(out), "ConvolutionBackward");
    assert_int_equal(ct_backward(ct_sum(out, NULL, 0, false)), CT_OK);
    double g[4];
    assert_int_equal(ct_tensor_to_array(ct_to_dtype(ct_grad(w), CT_F64), g, sizeof g), CT_OK);
    for (int i = 0; i < 4; i++) assert_float_equal(g[i], 4.0, 1e-6); /* 4 windows, each sees a 1 */
    ct_no_grad_push();
    assert_null(ct_grad_fn_name(ct_conv2d(x, w, NULL, NULL, NULL, NULL, 1)));
    ct_no_grad_pop();
    ct_scope_pop();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gradients_on_the_cpu),
        cmocka_unit_test(gradients_on_opencl),
        cmocka_unit_test(gradients_in_im2col_chunks),
        cmocka_unit_test(the_graph_records_a_convolution_node),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
