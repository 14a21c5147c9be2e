/* ct_conv2d's forward against a direct plain-C convolution, on the CPU and every OpenCL device:
 * stride, padding, dilation, groups, with and without bias, float32 and float64, a
 * non-contiguous input, batches split into im2col chunks, empty batches and the defaults. */
#include "test_common.h"
#include "ops/nn_reference.h"
#include "ops/nn_internal.h"

typedef struct conv_case {
    const char *what;
    ref_conv p;
    bool bias;
} conv_case;

static const conv_case cases[] = {
    {"3x3, no padding", {2, 3, 6, 7, 4, 3, 3, 1, 1, 0, 0, 1, 1, 1}, true},
    {"3x3, padding 1 (same size)", {2, 2, 5, 5, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1}, true},
    {"stride 2, padding [1, 2]", {1, 3, 7, 8, 2, 3, 3, 2, 2, 1, 2, 1, 1, 1}, false},
    {"stride [3, 1], 2x4 kernel", {2, 2, 9, 6, 3, 2, 4, 3, 1, 0, 1, 1, 1, 1}, true},
    {"dilation 2", {1, 2, 8, 8, 2, 3, 3, 1, 1, 2, 2, 2, 2, 1}, true},
    {"dilation [1, 3], stride 2", {2, 1, 7, 9, 2, 2, 3, 2, 2, 0, 1, 1, 3, 1}, false},
    {"groups 2", {2, 4, 5, 5, 6, 3, 3, 1, 1, 1, 1, 1, 1, 2}, true},
    {"depthwise (groups = channels)", {2, 3, 6, 6, 3, 3, 3, 1, 1, 1, 1, 1, 1, 3}, true},
    {"groups 3, 6 outputs, stride 2", {1, 6, 7, 7, 6, 2, 2, 2, 2, 0, 0, 1, 1, 3}, false},
    {"1x1 kernel", {3, 4, 3, 5, 5, 1, 1, 1, 1, 0, 0, 1, 1, 1}, true},
    {"kernel as large as the input", {2, 2, 3, 3, 2, 3, 3, 1, 1, 0, 0, 1, 1, 1}, true},
};

/* Runs one case in dtype on device against the reference; the input is contiguous, or a
 * transposed view holding the same values. */
static void check_case(const conv_case *cc, ct_dtype dtype, ct_device device, bool transposed_input)
{
    const ref_conv *p = &cc->p;
    int64_t oh = ref_conv_out_h(p), ow = ref_conv_out_w(p);
    int64_t xs[4] = {p->n, p->c, p->h, p->w}, ws[4] = {p->o, p->c / p->groups, p->kh, p->kw};
    int64_t nx = p->n * p->c * p->h * p->w, nw = ws[0] * ws[1] * ws[2] * ws[3], nout = p->n * p->o * oh * ow;
    double *x = ref_values(nx, 1, -1, 1), *w = ref_values(nw, 2, -1, 1), *b = ref_values(p->o, 3, -1, 1);
    if (dtype == CT_F32) /* the reference sees the values the float32 tensors hold */
        for (int64_t i = 0; i < nx + nw + p->o; i++) {
            double *v = i < nx ? &x[i] : i < nx + nw ? &w[i - nx] : &b[i - nx - nw];
            *v = (float)*v;
        }
    double *want = malloc(sizeof(double) * (size_t)nout);
    ref_conv2d(p, x, w, cc->bias ? b : NULL, want);

    ct_scope_push();
    ct_tensor *input;
    if (transposed_input) { /* the same values as a view of an [N, C, W, H] tensor */
        double *xt = malloc(sizeof(double) * (size_t)nx);
        for (int64_t nc = 0; nc < p->n * p->c; nc++)
            for (int64_t h = 0; h < p->h; h++)
                for (int64_t ww = 0; ww < p->w; ww++) xt[(nc * p->w + ww) * p->h + h] = x[(nc * p->h + h) * p->w + ww];
        int64_t ts[4] = {p->n, p->c, p->w, p->h};
        input = ct_transpose(ref_tensor(xt, ts, 4, dtype, device), 2, 3);
        assert_false(ct_is_contiguous(input));
        free(xt);
    } else {
        input = ref_tensor(x, xs, 4, dtype, device);
    }
    ct_tensor *weight = ref_tensor(w, ws, 4, dtype, device);
    ct_tensor *bias = cc->bias ? ref_tensor(b, &p->o, 1, dtype, device) : NULL;
    int64_t stride[2] = {p->sh, p->sw}, padding[2] = {p->ph, p->pw}, dilation[2] = {p->dh, p->dw};
    ct_tensor *out = ct_conv2d(input, weight, bias, stride, padding, dilation, p->groups);
    if (!out) fail_msg("%s: %s", cc->what, ct_last_error_message());
    assert_int_equal(ct_tensor_ndim(out), 4);
    int64_t expect_shape[4] = {p->n, p->o, oh, ow};
    assert_memory_equal(ct_tensor_shape(out), expect_shape, sizeof expect_shape);
    assert_int_equal(ct_tensor_dtype(out), dtype);
    assert_true(ct_device_equal(ct_tensor_device(out), device));
    double *got = ref_read(out);
    ref_compare(cc->what, got, want, nout, dtype == CT_F32 ? 1e-5 : 1e-12);
    free(got);
    ct_scope_pop();
    free(x);
    free(w);
    free(b);
    free(want);
}

static void check_on(ct_device device)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        check_case(&cases[i], CT_F32, device, false);
        check_case(&cases[i], CT_F64, device, false);
    }
    check_case(&cases[2], CT_F32, device, true);
    check_case(&cases[6], CT_F64, device, true);
}

static void matches_the_reference_on_the_cpu(void **state)
{
    (void)state;
    check_on(CT_DEVICE_CPU);
}

static void matches_the_reference_on_opencl(void **state)
{
    (void)state;
    if (ct_device_count(CT_OPENCL) == 0) skip();
    for (int i = 0; i < ct_device_count(CT_OPENCL); i++) check_on((ct_device){CT_OPENCL, i});
}

/* A batch whose im2col buffer is over the limit runs in chunks, the last one partial. */
static void large_batches_run_in_chunks(void **state)
{
    (void)state;
    const conv_case cc = {"5 samples in chunks of 2", {5, 2, 6, 6, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1}, true};
    const conv_case grouped = {"grouped, in chunks of 1", {3, 4, 5, 5, 4, 3, 3, 2, 2, 1, 1, 1, 1, 2}, true};
    /* 2 * 9 rows x 36 columns x 8 bytes per sample: room for 2 samples */
    ct_conv2d_set_col_limit_for_testing(2 * 2 * 9 * 36 * 8 + 8);
    check_case(&cc, CT_F64, CT_DEVICE_CPU, false);
    ct_conv2d_set_col_limit_for_testing(1);
    check_case(&grouped, CT_F32, CT_DEVICE_CPU, false);
    if (ct_device_count(CT_OPENCL) > 0) {
        check_case(&cc, CT_F32, (ct_device){CT_OPENCL, 0}, false);
        check_case(&grouped, CT_F64, (ct_device){CT_OPENCL, 0}, false);
    }
    ct_conv2d_set_col_limit_for_testing(0);
}

/* NULL stride, padding and dilation mean 1, 0 and 1. */
static void null_arguments_take_the_defaults(void **state)
{
    (void)state;
    ct_scope_push();
    const ref_conv p = {2, 3, 5, 6, 2, 3, 2, 1, 1, 0, 0, 1, 1, 1};
    double *x = ref_values(2 * 3 * 5 * 6, 4, -1, 1), *w = ref_values(2 * 3 * 3 * 2, 5, -1, 1);
    int64_t xs[4] = {2, 3, 5, 6}, ws[4] = {2, 3, 3, 2};
    ct_tensor *out = ct_conv2d(ref_tensor(x, xs, 4, CT_F64, CT_DEVICE_CPU),
                               ref_tensor(w, ws, 4, CT_F64, CT_DEVICE_CPU), NULL, NULL, NULL, NULL, 1);
    assert_non_null(out);
    int64_t n = ct_numel(out);
    assert_int_equal(n, 2 * 2 * 3 * 5);
    double *want = malloc(sizeof(double) * (size_t)n), *got = ref_read(out);
    ref_conv2d(&p, x, w, NULL, want);
    ref_compare("defaults", got, want, n, 1e-12);
    free(want);
    free(got);
    free(x);
    free(w);
    ct_scope_pop();
}

/* An empty batch gives an empty output; no output channels likewise. */
static void empty_batches_give_empty_outputs(void **state)
{
    (void)state;
    ct_device devices[2] = {CT_DEVICE_CPU, {CT_OPENCL, 0}};
    for (int d = 0; d < (ct_device_count(CT_OPENCL) > 0 ? 2 : 1); d++) {
        ct_scope_push();
        int64_t xs[4] = {0, 2, 5, 5}, ws[4] = {3, 2, 3, 3}, bs[1] = {3};
        ct_tensor *out = ct_conv2d(ct_zeros(xs, 4, CT_F32, devices[d]), ct_ones(ws, 4, CT_F32, devices[d]),
                                   ct_ones(bs, 1, CT_F32, devices[d]), NULL, (int64_t[]){1, 1}, NULL, 1);
        assert_non_null(out);
        int64_t want[4] = {0, 3, 5, 5};
        assert_memory_equal(ct_tensor_shape(out), want, sizeof want);
        int64_t xs2[4] = {2, 2, 4, 4}, ws2[4] = {0, 2, 3, 3};
        ct_tensor *none = ct_conv2d(ct_ones(xs2, 4, CT_F32, devices[d]), ct_ones(ws2, 4, CT_F32, devices[d]),
                                    NULL, NULL, NULL, NULL, 1);
        assert_non_null(none);
        assert_int_equal(ct_numel(none), 0);
        ct_scope_pop();
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(matches_the_reference_on_the_cpu),
        cmocka_unit_test(matches_the_reference_on_opencl),
        cmocka_unit_test(large_batches_run_in_chunks),
        cmocka_unit_test(null_arguments_take_the_defaults),
        cmocka_unit_test(empty_batches_give_empty_outputs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
