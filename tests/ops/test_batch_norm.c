/* ct_batch_norm against plain-C batch normalisation, on the CPU and every OpenCL device:
 * training (batch statistics, running statistics moved by momentum with the unbiased variance)
 * and evaluation (running statistics, left alone), [N, C], [N, C, L] and [N, C, H, W], with and
 * without weight and bias, float32 and float64, non-contiguous inputs and running statistics,
 * empty batches, and channels long enough to be reduced in several chunks (forward and backward
 * against a closed-form reference). */
#include "test_common.h"
#include "ops/nn_reference.h"

typedef struct bn_case {
    const char *what;
    int ndim;
    int64_t shape[4];
    bool affine;
} bn_case;

static const bn_case cases[] = {
    {"[N, C]", 2, {6, 3}, true},
    {"[N, C] without weight and bias", 2, {5, 4}, false},
    {"[N, C, L]", 3, {3, 2, 5}, true},
    {"[N, C, H, W]", 4, {4, 3, 3, 5}, true},
    {"[N, C, H, W] without weight and bias", 4, {2, 2, 4, 4}, false},
    {"[1, C, H, W]", 4, {1, 3, 2, 3}, true},
};

static void check_case(const bn_case *bc, ct_dtype dtype, ct_device device, bool training)
{
    int64_t n = bc->shape[0], c = bc->shape[1], inner = 1;
    for (int d = 2; d < bc->ndim; d++) inner *= bc->shape[d];
    int64_t total = n * c * inner;
    double *x = ref_values(total, 17, -3, 5), *w = ref_values(c, 18, 0.5, 1.5), *b = ref_values(c, 19, -1, 1);
    double *rm = ref_values(c, 20, -0.5, 0.5), *rv = ref_values(c, 21, 0.5, 2);
    if (dtype == CT_F32) {
        for (int64_t i = 0; i < total; i++) x[i] = (float)x[i];
        for (int64_t i = 0; i < c; i++) {
            w[i] = (float)w[i];
            b[i] = (float)b[i];
            rm[i] = (float)rm[i];
            rv[i] = (float)rv[i];
        }
    }
    const double momentum = 0.25, eps = 1e-3;
    double *want = malloc(sizeof(double) * (size_t)total), *mean = malloc(sizeof(double) * (size_t)c);
    double *var = malloc(sizeof(double) * (size_t)c);
    ref_batch_norm(x, n, c, inner, bc->affine ? w : NULL, bc->affine ? b : NULL, training, rm, rv, eps,
                   want, mean, var);

    ct_scope_push();
    ct_tensor *input = ref_tensor(x, bc->shape, bc->ndim, dtype, device);
    ct_tensor *weight = bc->affine ? ref_tensor(w, &c, 1, dtype, device) : NULL;
    ct_tensor *bias = bc->affine ? ref_tensor(b, &c, 1, dtype, device) : NULL;
    ct_tensor *running_mean = ref_tensor(rm, &c, 1, dtype, device);
    ct_tensor *running_var = ref_tensor(rv, &c, 1, dtype, device);
    ct_tensor *out = ct_batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps);
    if (!out) fail_msg("%s: %s", bc->what, ct_last_error_message());
    assert_int_equal(ct_tensor_ndim(out), bc->ndim);
    assert_memory_equal(ct_tensor_shape(out), bc->shape, sizeof(int64_t) * (size_t)bc->ndim);
    assert_int_equal(ct_tensor_dtype(out), dtype);
    double tol = dtype == CT_F32 ? 2e-5 : 1e-12;
    double *got = ref_read(out);
    ref_compare(bc->what, got, want, total, tol);
    free(got);

    /* the running statistics: moved towards the batch's (unbiased variance) or left alone */
    double m = (double)(n * inner);
    for (int64_t i = 0; i < c && training; i++) {
        rm[i] = (1 - momentum) * rm[i] + momentum * mean[i];
        rv[i] = (1 - momentum) * rv[i] + momentum * var[i] * m / (m - 1);
    }
    got = ref_read(running_mean);
    ref_compare("running_mean", got, rm, c, tol);
    free(got);
    got = ref_read(running_var);
    ref_compare("running_var", got, rv, c, tol);
    free(got);
    ct_scope_pop();
    free(x);
    free(w);
    free(b);
    free(rm);
    free(rv);
    free(want);
    free(mean);
    free(var);
}

static void check_on(ct_device device)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int training = 0; training < 2; training++) {
            check_case(&cases[i], CT_F32, device, training);
            check_case(&cases[i], CT_F64, device, training);
        }
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

/* A transposed input, running statistics that are every other element of a buffer, and
 * training without running statistics. */
static void views_and_missing_running_statistics(void **state)
{
    (void)state;
    int device_count = 1 + (ct_device_count(CT_OPENCL) > 0 ? 1 : 0);
    ct_device devices[2] = {CT_DEVICE_CPU, {CT_OPENCL, 0}};
    for (int d = 0; d < device_count; d++) {
        ct_scope_push();
        /* x [4, 3] as the transpose of a [3, 4] tensor */
        double xt[12], x[12];
        double *v = ref_values(12, 5, -1, 1);
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 3; j++) {
                x[i * 3 + j] = v[i * 3 + j];
                xt[j * 4 + i] = v[i * 3 + j];
            }
        free(v);
        ct_tensor *input = ct_transpose(ref_tensor(xt, (int64_t[]){3, 4}, 2, CT_F64, devices[d]), 0, 1);
        assert_false(ct_is_contiguous(input));
        double buffer[6] = {0.1, -7, 0.2, -7, 0.3, -7}, vbuffer[6] = {1, -7, 2, -7, 3, -7};
        ct_tensor *rm_storage = ref_tensor(buffer, (int64_t[]){6}, 1, CT_F64, devices[d]);
        ct_tensor *rv_storage = ref_tensor(vbuffer, (int64_t[]){6}, 1, CT_F64, devices[d]);
        ct_tensor *rm = ct_slice(rm_storage, 0, 0, 6, 2), *rv = ct_slice(rv_storage, 0, 0, 6, 2);
        ct_tensor *out = ct_batch_norm(input, rm, rv, NULL, NULL, true, 0.5, 1e-5);
        double want[12], mean[3], var[3];
        ref_batch_norm(x, 4, 3, 1, NULL, NULL, true, NULL, NULL, 1e-5, want, mean, var);
        double *got = ref_read(out);
        ref_compare("transposed input", got, want, 12, 1e-12);
        free(got);
        double *stored = ref_read(rm_storage), *vstored = ref_read(rv_storage);
        for (int j = 0; j < 3; j++) {
            assert_float_equal(stored[2 * j], 0.5 * buffer[2 * j] + 0.5 * mean[j], 1e-12);
            assert_float_equal(vstored[2 * j], 0.5 * vbuffer[2 * j] + 0.5 * var[j] * 4 / 3, 1e-12);
            assert_float_equal(stored[2 * j + 1], -7, 0); /* between the strided elements: untouched */
            assert_float_equal(vstored[2 * j + 1], -7, 0);
        }
        free(stored);
        free(vstored);
        ct_tensor *alone = ct_batch_norm(input, NULL, NULL, NULL, NULL, true, 0.1, 1e-5);
        got = ref_read(alone);
        ref_compare("no running statistics", got, want, 12, 1e-12);
        free(got);
        ct_scope_pop();
    }
}

/* The training backward in closed form, from the forward's batch statistics: with
 * xhat = (x - mean) * invstd and dy = grad_out * weight, M = n * inner,
 * grad_in = invstd * (dy - sum dy / M - xhat * sum dy xhat / M), grad_weight = sum grad_out xhat,
 * grad_bias = sum grad_out. */
static void ref_batch_norm_backward(const double *x, const double *gy, int64_t n, int64_t c, int64_t inner,
                                    const double *weight, const double *mean, const double *var, double eps,
                                    double *gx, double *gw, double *gb)
{
    double m = (double)(n * inner);
    for (int64_t ch = 0; ch < c; ch++) {
        double invstd = 1 / sqrt(var[ch] + eps), sum_dy = 0, sum_dy_xhat = 0;
        gw[ch] = gb[ch] = 0;
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < inner; j++) {
                int64_t at = (i * c + ch) * inner + j;
                double xhat = (x[at] - mean[ch]) * invstd;
                gw[ch] += gy[at] * xhat;
                gb[ch] += gy[at];
                sum_dy += gy[at] * weight[ch];
                sum_dy_xhat += gy[at] * weight[ch] * xhat;
            }
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < inner; j++) {
                int64_t at = (i * c + ch) * inner + j;
                double xhat = (x[at] - mean[ch]) * invstd;
                gx[at] = invstd * (gy[at] * weight[ch] - sum_dy / m - xhat * sum_dy_xhat / m);
            }
    }
}

/* Channels long enough that the statistics and the backward's sums take several chunks per
 * channel (then a combine pass) on the CPU and on OpenCL: the forward, the running statistics
 * and the gradients against the references, [N, C, H, W] and [N, C] (a channel strided by C),
 * float64 and float32, and float32 values far from zero (a mean of 1000, a spread of 1). */
static void long_channels_in_several_chunks(void **state)
{
    (void)state;
    typedef struct {
        const char *what;
        int ndim;
        int64_t shape[4];
        ct_dtype dtype;
        double offset, tol;
    } long_case;
    const long_case cases[] = {
        {"[2, 3, 160, 150] float64", 4, {2, 3, 160, 150}, CT_F64, 0, 1e-10},
        {"[30000, 2] float64", 2, {30000, 2}, CT_F64, 0, 1e-10},
        {"[2, 3, 160, 150] float32", 4, {2, 3, 160, 150}, CT_F32, 0, 1e-4},
        {"[2, 3, 160, 150] float32 near 1000", 4, {2, 3, 160, 150}, CT_F32, 1000, 2e-3},
    };
    int device_count = 1 + ct_device_count(CT_OPENCL);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const long_case *lc = &cases[k];
        int64_t n = lc->shape[0], c = lc->shape[1], inner = 1;
        for (int d = 2; d < lc->ndim; d++) inner *= lc->shape[d];
        int64_t total = n * c * inner;
        double *x = ref_values(total, 31, lc->offset - 1, lc->offset + 1), *gy = ref_values(total, 32, -1, 1);
        double *w = ref_values(c, 33, 0.5, 1.5), *b = ref_values(c, 34, -1, 1);
        for (int64_t i = 0; i < total && lc->dtype == CT_F32; i++) {
            x[i] = (float)x[i];
            gy[i] = (float)gy[i];
        }
        for (int64_t i = 0; i < c && lc->dtype == CT_F32; i++) {
            w[i] = (float)w[i];
            b[i] = (float)b[i];
        }
        const double eps = 1e-5, momentum = 0.5;
        double *want = malloc(sizeof(double) * (size_t)total), *gx = malloc(sizeof(double) * (size_t)total);
        double mean[4], var[4], gw[4], gb[4], rm[4], rv[4];
        ref_batch_norm(x, n, c, inner, w, b, true, NULL, NULL, eps, want, mean, var);
        ref_batch_norm_backward(x, gy, n, c, inner, w, mean, var, eps, gx, gw, gb);
        for (int64_t i = 0; i < c; i++) {
            rm[i] = momentum * mean[i];
            rv[i] = (1 - momentum) + momentum * var[i] * (double)(n * inner) / (double)(n * inner - 1);
        }
        for (int d = 0; d < device_count; d++) {
            ct_device device = d == 0 ? CT_DEVICE_CPU : (ct_device){CT_OPENCL, d - 1};
            ct_scope_push();
            ct_tensor *input = ref_tensor(x, lc->shape, lc->ndim, lc->dtype, device);
            ct_tensor *weight = ref_tensor(w, &c, 1, lc->dtype, device);
            ct_tensor *bias = ref_tensor(b, &c, 1, lc->dtype, device);
            ct_tensor *grad_out = ref_tensor(gy, lc->shape, lc->ndim, lc->dtype, device);
            ct_tensor *running_mean = ct_zeros(&c, 1, lc->dtype, device);
            ct_tensor *running_var = ct_ones(&c, 1, lc->dtype, device);
            assert_int_equal(ct_requires_grad_(input, true), CT_OK);
            assert_int_equal(ct_requires_grad_(weight, true), CT_OK);
            assert_int_equal(ct_requires_grad_(bias, true), CT_OK);
            ct_tensor *out = ct_batch_norm(input, running_mean, running_var, weight, bias, true, momentum, eps);
            if (!out) fail_msg("%s: %s", lc->what, ct_last_error_message());
            assert_int_equal(ct_backward(ct_sum(ct_mul(out, grad_out), NULL, 0, false)), CT_OK);
            const ct_tensor *got_tensors[6] = {out, running_mean, running_var, ct_grad(input), ct_grad(weight),
                                               ct_grad(bias)};
            const double *wanted[6] = {want, rm, rv, gx, gw, gb};
            const char *names[6] = {"output", "running_mean", "running_var", "grad_input", "grad_weight",
                                    "grad_bias"};
            for (int r = 0; r < 6; r++) {
                double *got = ref_read(got_tensors[r]);
                char what[160];
                snprintf(what, sizeof what, "%s on %s: %s", lc->what, d == 0 ? "cpu" : "opencl", names[r]);
                /* the weight's and bias's gradients are sums of M terms */
                double tol = r >= 4 ? lc->tol * sqrt((double)(n * inner)) : lc->tol;
                ref_compare(what, got, wanted[r], r == 0 || r == 3 ? total : c, tol);
                free(got);
            }
            ct_scope_pop();
        }
        free(x);
        free(gy);
        free(w);
        free(b);
        free(want);
        free(gx);
    }
}

/* An empty batch gives an empty output and leaves the running statistics alone. */
static void empty_batches(void **state)
{
    (void)state;
    ct_scope_push();
    int64_t c = 3, shape[4] = {0, 3, 2, 2};
    ct_tensor *rm = ct_zeros(&c, 1, CT_F32, CT_DEVICE_CPU), *rv = ct_ones(&c, 1, CT_F32, CT_DEVICE_CPU);
    ct_tensor *out = ct_batch_norm(ct_zeros(shape, 4, CT_F32, CT_DEVICE_CPU), rm, rv, NULL, NULL, true, 0.1, 1e-5);
    assert_non_null(out);
    assert_int_equal(ct_numel(out), 0);
    double *got = ref_read(rv);
    for (int i = 0; i < 3; i++) assert_float_equal(got[i], 1, 0);
    free(got);
    ct_scope_pop();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(matches_the_reference_on_the_cpu),
        cmocka_unit_test(matches_the_reference_on_opencl),
        cmocka_unit_test(views_and_missing_running_statistics),
        cmocka_unit_test(empty_batches),
        cmocka_unit_test(long_channels_in_several_chunks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
