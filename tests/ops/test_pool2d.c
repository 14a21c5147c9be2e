/* ct_max_pool2d (with its indices) and ct_avg_pool2d against plain-C pooling, on the CPU and
 * every OpenCL device: kernel, stride and padding cases, count_include_pad both ways, float32
 * and float64, NaN, a non-contiguous input, the default stride and an empty batch. */
#include "test_common.h"
#include "ops/nn_reference.h"

typedef struct pool_case {
    const char *what;
    int64_t n, c;
    ref_pool p; /* planes is filled from n * c */
} pool_case;

static const pool_case cases[] = {
    {"2x2, stride 2", 2, 3, {0, 6, 6, 2, 2, 2, 2, 0, 0}},
    {"3x3, stride 1, padding 1", 1, 2, {0, 5, 6, 3, 3, 1, 1, 1, 1}},
    {"3x3, stride 2, padding 1", 2, 2, {0, 7, 7, 3, 3, 2, 2, 1, 1}},
    {"odd size, 2x2 stride 2 (drops the last row)", 1, 2, {0, 5, 7, 2, 2, 2, 2, 0, 0}},
    {"2x3 kernel, stride [1, 2], padding [1, 1]", 2, 1, {0, 6, 8, 2, 3, 1, 2, 1, 1}},
    {"4x4 kernel, stride 3, padding 2", 1, 3, {0, 9, 8, 4, 4, 3, 3, 2, 2}},
    {"the whole plane", 2, 2, {0, 4, 3, 4, 3, 1, 1, 0, 0}},
};

static void check_case(const pool_case *pc, ct_dtype dtype, ct_device device, bool transposed)
{
    ref_pool p = pc->p;
    p.planes = pc->n * pc->c;
    int64_t oh = ref_pool_out_h(&p), ow = ref_pool_out_w(&p);
    int64_t nx = p.planes * p.h * p.w, nout = p.planes * oh * ow;
    double *x = ref_values(nx, 7, -2, 2);
    if (dtype == CT_F32)
        for (int64_t i = 0; i < nx; i++) x[i] = (float)x[i];
    double *want_max = malloc(sizeof(double) * (size_t)nout), *want_avg = malloc(sizeof(double) * (size_t)nout);
    double *want_avg_inside = malloc(sizeof(double) * (size_t)nout);
    int64_t *want_index = malloc(sizeof(int64_t) * (size_t)nout);
    ref_max_pool2d(&p, x, want_max, want_index);
    ref_avg_pool2d(&p, x, true, want_avg);
    ref_avg_pool2d(&p, x, false, want_avg_inside);

    ct_scope_push();
    ct_tensor *input;
    if (transposed) {
        double *xt = malloc(sizeof(double) * (size_t)nx);
        for (int64_t q = 0; q < p.planes; q++)
            for (int64_t h = 0; h < p.h; h++)
                for (int64_t w = 0; w < p.w; w++) xt[(q * p.w + w) * p.h + h] = x[(q * p.h + h) * p.w + w];
        int64_t ts[4] = {pc->n, pc->c, p.w, p.h};
        input = ct_transpose(ref_tensor(xt, ts, 4, dtype, device), 2, 3);
        free(xt);
    } else {
        int64_t xs[4] = {pc->n, pc->c, p.h, p.w};
        input = ref_tensor(x, xs, 4, dtype, device);
    }
    int64_t kernel[2] = {p.kh, p.kw}, stride[2] = {p.sh, p.sw}, padding[2] = {p.ph, p.pw};
    ct_tensor *indices = NULL;
    ct_tensor *max = ct_max_pool2d_with_indices(input, kernel, stride, padding, &indices);
    ct_tensor *avg = ct_avg_pool2d(input, kernel, stride, padding, true);
    ct_tensor *avg_inside = ct_avg_pool2d(input, kernel, stride, padding, false);
    ct_tensor *max_only = ct_max_pool2d(input, kernel, stride, padding);
    if (!max || !avg || !avg_inside || !max_only) fail_msg("%s: %s", pc->what, ct_last_error_message());
    int64_t shape[4] = {pc->n, pc->c, oh, ow};
    assert_memory_equal(ct_tensor_shape(max), shape, sizeof shape);
    assert_memory_equal(ct_tensor_shape(avg), shape, sizeof shape);
    assert_memory_equal(ct_tensor_shape(indices), shape, sizeof shape);
    assert_int_equal(ct_tensor_dtype(max), dtype);
    assert_int_equal(ct_tensor_dtype(indices), CT_I64);
    double tol = dtype == CT_F32 ? 1e-6 : 1e-13;
    double *got = ref_read(max);
    ref_compare(pc->what, got, want_max, nout, 0);
    free(got);
    got = ref_read(max_only);
    ref_compare(pc->what, got, want_max, nout, 0);
    free(got);
    int64_t *got_index = malloc(sizeof(int64_t) * (size_t)nout);
    assert_int_equal(ct_tensor_to_array(indices, got_index, sizeof(int64_t) * (size_t)nout), CT_OK);
    for (int64_t i = 0; i < nout; i++)
        if (got_index[i] != want_index[i])
            fail_msg("%s: index %lld is %lld, expected %lld", pc->what, (long long)i,
                     (long long)got_index[i], (long long)want_index[i]);
    free(got_index);
    got = ref_read(avg);
    ref_compare(pc->what, got, want_avg, nout, tol);
    free(got);
    got = ref_read(avg_inside);
    ref_compare(pc->what, got, want_avg_inside, nout, tol);
    free(got);
    ct_scope_pop();
    free(x);
    free(want_max);
    free(want_avg);
    free(want_avg_inside);
    free(want_index);
}

static void check_on(ct_device device)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        check_case(&cases[i], CT_F32, device, false);
        check_case(&cases[i], CT_F64, device, false);
    }
    check_case(&cases[2], CT_F32, device, true);
    check_case(&cases[4], CT_F64, device, true);
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

/* NaN wins a max window (the last NaN, as PyTorch's kernel); ties go to the first maximum;
 * a window that is mostly padding takes the input element it covers. */
static void nan_ties_and_padding(void **state)
{
    (void)state;
    int device_count = 1 + (ct_device_count(CT_OPENCL) > 0 ? 1 : 0);
    ct_device devices[2] = {CT_DEVICE_CPU, {CT_OPENCL, 0}};
    for (int d = 0; d < device_count; d++) {
        ct_scope_push();
        double x[16] = {1, NAN, 3, 3,  NAN, 0, 3, 2,  -5, -7, -1, -1,  -9, -8, -1, -2};
        int64_t xs[4] = {1, 1, 4, 4};
        ct_tensor *input = ref_tensor(x, xs, 4, CT_F32, devices[d]);
        ct_tensor *indices;
        ct_tensor *out = ct_max_pool2d_with_indices(input, (int64_t[]){2, 2}, NULL, NULL, &indices);
        double want[4] = {NAN, 3, -5, -1};
        int64_t want_index[4] = {4, 2, 8, 10}, got_index[4];
        double *got = ref_read(out);
        ref_compare("NaN and ties", got, want, 4, 0);
        free(got);
        assert_int_equal(ct_tensor_to_array(indices, got_index, sizeof got_index), CT_OK);
        assert_memory_equal(got_index, want_index, sizeof want_index);
        /* kernel 2, padding 1, stride 1: the corner window holds x[0] only */
        ct_tensor *padded = ct_max_pool2d(ref_tensor((double[]){-3, -4, -6, -2}, (int64_t[]){1, 1, 2, 2}, 4,
                                                     CT_F64, devices[d]),
                                          (int64_t[]){2, 2}, (int64_t[]){1, 1}, (int64_t[]){1, 1});
        double want_padded[9] = {-3, -3, -4, -3, -2, -2, -6, -2, -2};
        got = ref_read(padded);
        ref_compare("padding is -inf", got, want_padded, 9, 0);
        free(got);
        ct_scope_pop();
    }
}

/* The default stride is the kernel size; an empty batch gives an empty output. */
static void default_stride_and_empty_batches(void **state)
{
    (void)state;
    ct_scope_push();
    int64_t xs[4] = {1, 1, 4, 6};
    double *x = ref_values(24, 3, 0, 1);
    ct_tensor *input = ref_tensor(x, xs, 4, CT_F64, CT_DEVICE_CPU);
    ct_tensor *a = ct_avg_pool2d(input, (int64_t[]){2, 3}, NULL, NULL, true);
    int64_t want_shape[4] = {1, 1, 2, 2};
    assert_memory_equal(ct_tensor_shape(a), want_shape, sizeof want_shape);
    double got[4];
    assert_int_equal(ct_tensor_to_array(a, got, sizeof got), CT_OK);
    for (int oh = 0; oh < 2; oh++)
        for (int ow = 0; ow < 2; ow++) {
            double sum = 0;
            for (int h = 0; h < 2; h++)
                for (int w = 0; w < 3; w++) sum += x[(oh * 2 + h) * 6 + ow * 3 + w];
            assert_float_equal(got[oh * 2 + ow], sum / 6, 1e-12);
        }
    free(x);
    int64_t empty[4] = {0, 2, 4, 4};
    for (int d = 0; d < 1 + (ct_device_count(CT_OPENCL) > 0); d++) {
        ct_device device = d ? (ct_device){CT_OPENCL, 0} : CT_DEVICE_CPU;
        ct_tensor *e = ct_zeros(empty, 4, CT_F32, device);
        ct_tensor *m = ct_max_pool2d(e, (int64_t[]){2, 2}, NULL, NULL);
        ct_tensor *v = ct_avg_pool2d(e, (int64_t[]){2, 2}, NULL, NULL, false);
        assert_non_null(m);
        assert_non_null(v);
        int64_t want[4] = {0, 2, 2, 2};
        assert_memory_equal(ct_tensor_shape(m), want, sizeof want);
        assert_memory_equal(ct_tensor_shape(v), want, sizeof want);
    }
    ct_scope_pop();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(matches_the_reference_on_the_cpu),
        cmocka_unit_test(matches_the_reference_on_opencl),
        cmocka_unit_test(nan_ties_and_padding),
        cmocka_unit_test(default_stride_and_empty_batches),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
