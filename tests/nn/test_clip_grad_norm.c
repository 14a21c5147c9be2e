/* ct_clip_grad_norm_ as torch.nn.utils.clip_grad_norm_: the total norm of several gradients
 * (2, 1, 3 and infinity norms) against a float64 reference, the gradients scaled by
 * max_norm / (total + 1e-6) when it is larger, untouched bit for bit when it is not, on the cpu
 * and every OpenCL device (PoCL), also with gradients spread over devices; parameters without a
 * gradient are skipped; a NaN gradient gives a NaN total (as PyTorch); bad arguments refused. */
#include "nn/nn_test.h"

#include <string.h>

enum { A = 5, B = 3 };

static double grad_a(int i) { return 0.3 * i - 0.7 + 0.01 * i * i; }
static double grad_b(int i) { return 1.5 - 0.9 * i; }

/* A parameter of n elements on device whose gradient is values (the backward of sum(p * c)). */
static ct_tensor *param_with_grad(const double *values, int n, ct_dtype dtype, ct_device device)
{
    int64_t shape[1] = {n};
    ct_tensor *p = ct_zeros(shape, 1, dtype, device);
    ct_tensor *c = tensor_of(values, shape, 1, dtype, device);
    assert_int_equal(ct_requires_grad_(p, true), CT_OK);
    ct_tensor *loss = ct_sum(ct_mul(p, c), NULL, 0, false);
    assert_non_null(loss);
    assert_int_equal(ct_backward(loss), CT_OK);
    ct_release(c);
    return p;
}

/* The float64 reference: (sum |g|^p)^(1/p), or max |g|. */
static double reference_norm(const double *a, const double *b, double p)
{
    double total = 0.0;
    for (int i = 0; i < A + B; i++) {
        double g = fabs(i < A ? a[i] : b[i - A]);
        total = isinf(p) ? fmax(total, g) : total + pow(g, p);
    }
    return isinf(p) ? total : pow(total, 1.0 / p);
}

static void check_on(ct_device da, ct_device db, ct_dtype dtype)
{
    double a[A], b[B];
    for (int i = 0; i < A; i++) a[i] = grad_a(i);
    for (int i = 0; i < B; i++) b[i] = grad_b(i);
    const double norms[] = {2.0, 1.0, 3.0, INFINITY};
    double rtol = dtype == CT_F32 ? 2e-6 : 1e-13;
    for (size_t k = 0; k < sizeof norms / sizeof *norms; k++) {
        double want = reference_norm(a, b, norms[k]);
        /* Clipping to half the norm: every gradient times max_norm / (total + 1e-6). */
        ct_scope_push();
        ct_tensor *params[3] = {param_with_grad(a, A, dtype, da), ct_zeros((int64_t[]){2}, 1, dtype, da),
                                param_with_grad(b, B, dtype, db)};
        ct_requires_grad_(params[1], true); /* no gradient: skipped */
        double total = -1;
        assert_int_equal(ct_clip_grad_norm_(params, 3, want / 2, norms[k], &total), CT_OK);
        if (!(fabs(total - want) <= rtol * want)) fail_msg("norm %g: total %.17g, want %.17g", norms[k], total, want);
        double coef = (want / 2) / (want + 1e-6), got[A], expect[A];
        values_of(ct_grad(params[0]), got, A);
        for (int i = 0; i < A; i++) expect[i] = a[i] * coef;
        assert_close_array(got, expect, A, rtol, 1e-12, "clipped a");
        values_of(ct_grad(params[2]), got, B);
        for (int i = 0; i < B; i++) expect[i] = b[i] * coef;
        assert_close_array(got, expect, B, rtol, 1e-12, "clipped b");
        assert_null(ct_grad(params[1]));

        /* A larger max_norm leaves every bit as it was. */
        double before[A], after[A];
        values_of(ct_grad(params[0]), before, A);
        assert_int_equal(ct_clip_grad_norm_(params, 3, 1e6, norms[k], NULL), CT_OK);
        values_of(ct_grad(params[0]), after, A);
        assert_memory_equal(before, after, sizeof before);
        for (int i = 0; i < 3; i++) ct_release(params[i]);
        ct_scope_pop();
    }
}

static void the_total_norm_and_the_clipped_gradients_match_a_float64_reference(void **state)
{
    (void)state;
    check_on(CT_DEVICE_CPU, CT_DEVICE_CPU, CT_F32);
    check_on(CT_DEVICE_CPU, CT_DEVICE_CPU, CT_F64);
    int count = ct_device_count(CT_OPENCL);
    for (int d = 0; d < count; d++) {
        ct_device device = {CT_OPENCL, d};
        check_on(device, device, CT_F32);
        check_on(device, CT_DEVICE_CPU, CT_F32); /* gradients on two devices */
    }
    if (count == 0) print_message("no OpenCL device: checked on the cpu only\n");
}

static void no_gradients_give_a_zero_total(void **state)
{
    (void)state;
    ct_tensor *p = ct_zeros((int64_t[]){4}, 1, CT_F32, CT_DEVICE_CPU);
    double total = -1;
    assert_int_equal(ct_clip_grad_norm_(&p, 1, 1.0, 2.0, &total), CT_OK);
    assert_true(total == 0.0);
    assert_int_equal(ct_clip_grad_norm_(NULL, 0, 1.0, 2.0, &total), CT_OK);
    assert_true(total == 0.0);
    ct_release(p);
}

static void a_nan_gradient_gives_a_nan_total(void **state)
{
    (void)state;
    double values[3] = {1.0, NAN, 2.0};
    ct_tensor *p = param_with_grad(values, 3, CT_F32, CT_DEVICE_CPU);
    double total = 0, got[3];
    assert_int_equal(ct_clip_grad_norm_(&p, 1, 1.0, 2.0, &total), CT_OK);
    assert_true(isnan(total));
    values_of(ct_grad(p), got, 3);
    for (int i = 0; i < 3; i++) assert_true(isnan(got[i])); /* PyTorch: grads * nan */
    ct_release(p);
}

/* float32 gradients near 1e30 (issue 26): their squares overflow float32, but the sums are taken
 * in float64 on every device, so the total is finite and the gradients are scaled, not zeroed;
 * on one device (the record, nothing read back) and spread over two (the host's sum). */
static void huge_float32_gradients_are_clipped_not_zeroed(void **state)
{
    (void)state;
    ct_device devices[3] = {CT_DEVICE_CPU, OPENCL0, {CT_OPENCL, 1}};
    int count = 1 + (ct_device_count(CT_OPENCL) > 0) + (ct_device_count(CT_OPENCL) > 1);
    for (int d = 0; d < count; d++)
        for (int spread = 0; spread < 2; spread++) {
            double a[A], b[B];
            for (int i = 0; i < A; i++) a[i] = 1e30 * (i + 1);
            for (int i = 0; i < B; i++) b[i] = -2e30;
            ct_tensor *pa = param_with_grad(a, A, CT_F32, devices[d]);
            ct_tensor *pb = param_with_grad(b, B, CT_F32, spread ? CT_DEVICE_CPU : devices[d]);
            float fa[A], fb[B];
            double fa64[A], fb64[B];
            ct_tensor *ga = ct_grad(pa), *gb = ct_grad(pb);
            values_of(ga, fa64, A);
            values_of(gb, fb64, B);
            for (int i = 0; i < A; i++) fa64[i] = (double)(float)fa64[i];
            for (int i = 0; i < B; i++) fb64[i] = (double)(float)fb64[i];
            double want = reference_norm(fa64, fb64, 2.0), total = 0.0;
            ct_tensor *params[2] = {pa, pb};
            if (spread && d == 0) { /* both on the CPU: one kind; "spread" then tests nothing new */
                ct_release(ga), ct_release(gb), ct_release(pa), ct_release(pb);
                continue;
            }
            assert_int_equal(ct_clip_grad_norm_(params, 2, 1.0, 2.0, &total), CT_OK);
            if (!(fabs(total - want) <= 1e-6 * want)) fail_msg("device %d spread %d: total %g, want %g", d, spread, total, want);
            double got[A];
            values_of(ga, got, A);
            for (int i = 0; i < A; i++) {
                fa[i] = (float)got[i];
                double expect = fa64[i] * (1.0 / (want + 1e-6));
                if (!(fabs(fa[i] - expect) <= 1e-5 * fabs(expect)) || fa[i] == 0.0f)
                    fail_msg("device %d spread %d: gradient %d is %g, want %g", d, spread, i, fa[i], expect);
            }
            values_of(gb, got, B);
            for (int i = 0; i < B; i++) fb[i] = (float)got[i];
            assert_true(fb[0] != 0.0f && fabs(fb[0] - fb64[0] / want) <= 1e-5 * fabs(fb64[0] / want));
            ct_release(ga), ct_release(gb), ct_release(pa), ct_release(pb);
        }
}

/* ct_clip_grad_norm_module: every parameter of a module, as clip_grad_norm_(model.parameters()),
 * on the CPU and every OpenCL device. */
static void a_module_is_clipped_whole(void **state)
{
    (void)state;
    int devices = 1 + ct_device_count(CT_OPENCL);
    for (int d = 0; d < devices; d++) {
        ct_device device = d == 0 ? CT_DEVICE_CPU : (ct_device){CT_OPENCL, d - 1};
        ct_manual_seed(3);
        ct_module *m = ct_linear(4, 3, true);
        assert_int_equal(ct_module_to(m, device), CT_OK);
        ct_tensor *x = ct_full((int64_t[]){2, 4}, 2, 1.5, CT_F32, device);
        ct_tensor *y = ct_module_forward(m, x);
        ct_tensor *loss = ct_sum(y, NULL, 0, false);
        assert_int_equal(ct_backward(loss), CT_OK);
        ct_named_tensors *list = ct_module_named_parameters(m);
        assert_int_equal(list->count, 2);
        double before[16], total2 = 0.0;
        int n = 0;
        for (int64_t i = 0; i < list->count; i++) {
            ct_tensor *g = ct_grad(list->tensors[i]);
            int64_t k = ct_numel(g);
            values_of(g, before + n, k);
            for (int64_t j = 0; j < k; j++) total2 += before[n + j] * before[n + j];
            n += (int)k;
            ct_release(g);
        }
        double total = 0.0;
        assert_int_equal(ct_clip_grad_norm_module(m, 0.5, 2.0, &total), CT_OK);
        assert_true(fabs(total - sqrt(total2)) <= 1e-6 * sqrt(total2));
        n = 0;
        for (int64_t i = 0; i < list->count; i++) {
            ct_tensor *g = ct_grad(list->tensors[i]);
            double after[16];
            int64_t k = ct_numel(g);
            values_of(g, after, k);
            for (int64_t j = 0; j < k; j++) {
                double want = before[n + j] * (0.5 / (total + 1e-6));
                if (!(fabs(after[j] - want) <= 1e-6 * (1.0 + fabs(want))))
                    fail_msg("device %d: gradient %d is %g, want %g", d, n + (int)j, after[j], want);
            }
            n += (int)k;
            ct_release(g);
        }
        ct_named_tensors_free(list);
        ct_release(loss), ct_release(y), ct_release(x);
        ct_module_free(m);
    }
    assert_int_equal(ct_clip_grad_norm_module(NULL, 1.0, 2.0, NULL), CT_ERR_NULL_ARGUMENT);
    assert_error(CT_ERR_NULL_ARGUMENT, "module");
}

static void bad_arguments_are_refused(void **state)
{
    (void)state;
    double values[2] = {3.0, 4.0};
    ct_tensor *p = param_with_grad(values, 2, CT_F32, CT_DEVICE_CPU);
    double total = -1;
    assert_int_equal(ct_clip_grad_norm_(&p, 1, -1.0, 2.0, &total), CT_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(ct_last_error_message(), "max_norm is -1"));
    assert_true(total == 0.0);
    assert_int_equal(ct_clip_grad_norm_(&p, 1, NAN, 2.0, NULL), CT_ERR_INVALID_ARGUMENT);
    assert_int_equal(ct_clip_grad_norm_(&p, 1, 1.0, 0.5, NULL), CT_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(ct_last_error_message(), "norm_type is 0.5"));
    assert_int_equal(ct_clip_grad_norm_(&p, -1, 1.0, 2.0, NULL), CT_ERR_INVALID_ARGUMENT);
    assert_int_equal(ct_clip_grad_norm_(NULL, 1, 1.0, 2.0, NULL), CT_ERR_NULL_ARGUMENT);
    ct_tensor *with_null[2] = {p, NULL};
    assert_int_equal(ct_clip_grad_norm_(with_null, 2, 1.0, 2.0, NULL), CT_ERR_NULL_ARGUMENT);
    assert_non_null(strstr(ct_last_error_message(), "params[1] is NULL"));
    /* Nothing refused changed the gradient: 3-4-5 clips to 1 now. */
    assert_int_equal(ct_clip_grad_norm_(&p, 1, 1.0, 2.0, &total), CT_OK);
    assert_true(fabs(total - 5.0) < 1e-6);
    double got[2];
    values_of(ct_grad(p), got, 2);
    assert_true(fabs(got[0] - 0.6) < 1e-6 && fabs(got[1] - 0.8) < 1e-6);
    ct_release(p);
}

/* 30 gradients of 1 to 700 elements (partial sums over several items) on a and b alternately:
 * the total against float64, the gradients clipped, and the cost per device: a launch per 8
 * gradients for the norm and as many for the scaling (and on one device the fold of the partials
 * into the norm there), and one wait of the host (on an accelerator, where ct_transfer_stats counts
 * them; on one device only to read the total asked for), where a reduction and a read per
 * gradient cost 30. */
static void check_many(ct_device a, ct_device b, double norm_type)
{
    enum { N = 30 };
    ct_tensor *params[N];
    double *values[N], sum = 0.0, largest = 0.0;
    int sizes[N];
    for (int k = 0; k < N; k++) {
        sizes[k] = 1 + (k * 97) % 700;
        values[k] = malloc(sizeof(double) * (size_t)sizes[k]);
        for (int i = 0; i < sizes[k]; i++) {
            values[k][i] = (double)(float)sin(0.1 * i + k);
            sum += pow(fabs(values[k][i]), norm_type == 2.0 ? 2.0 : 1.0);
            largest = fmax(largest, fabs(values[k][i]));
        }
        params[k] = param_with_grad(values[k], sizes[k], CT_F32, k % 2 ? b : a);
    }
    double want = isinf(norm_type) ? largest : norm_type == 2.0 ? sqrt(sum) : sum;
    uint64_t launches[2][2];
    ct_transfer_stats syncs[2][2];
    ct_device devices[2] = {a, b};
    for (int d = 0; d < 2; d++) {
        assert_int_equal(ct_device_kernel_launches(devices[d], &launches[d][0]), CT_OK);
        assert_int_equal(ct_transfer_stats_get(devices[d], &syncs[d][0]), CT_OK);
    }
    double total = 0.0;
    assert_int_equal(ct_clip_grad_norm_(params, N, want / 4, norm_type, &total), CT_OK);
    for (int d = 0; d < 2; d++) {
        assert_int_equal(ct_device_kernel_launches(devices[d], &launches[d][1]), CT_OK);
        assert_int_equal(ct_transfer_stats_get(devices[d], &syncs[d][1]), CT_OK);
        bool one = ct_device_equal(a, b);
        uint64_t per_device = one ? 2 * ((N + 7) / 8) + 1 : 2 * ((N / 2 + 7) / 8);
        if (launches[d][1] - launches[d][0] != per_device)
            fail_msg("norm %g: %llu launches on device %d, expected %llu", norm_type,
                     (unsigned long long)(launches[d][1] - launches[d][0]), d, (unsigned long long)per_device);
        if (devices[d].type != CT_CPU && !(one && d == 1))
            assert_int_equal(syncs[d][1].host_syncs - syncs[d][0].host_syncs, 1);
    }
    if (!(fabs(total - want) <= 1e-5 * want)) fail_msg("norm %g: total %.17g, want %.17g", norm_type, total, want);
    double coef = (want / 4) / (total + 1e-6), got[700], expect[700];
    for (int k = 0; k < N; k++) {
        values_of(ct_grad(params[k]), got, sizes[k]);
        for (int i = 0; i < sizes[k]; i++) expect[i] = (double)((float)values[k][i] * (float)coef);
        assert_close_array(got, expect, sizes[k], 0.0, 0.0, "clipped");
        ct_release(params[k]);
        free(values[k]);
    }
}

static void many_gradients_cost_a_launch_per_8_and_one_wait_per_device(void **state)
{
    (void)state;
    const double norms[] = {2.0, 1.0, INFINITY};
    int count = ct_device_count(CT_OPENCL);
    for (size_t k = 0; k < sizeof norms / sizeof *norms; k++) {
        check_many(CT_DEVICE_CPU, CT_DEVICE_CPU, norms[k]);
        if (count == 0) continue;
        ct_device opencl = {CT_OPENCL, 0};
        check_many(opencl, opencl, norms[k]);
        check_many(CT_DEVICE_CPU, opencl, norms[k]);
        if (count > 1) check_many(opencl, (ct_device){CT_OPENCL, 1}, norms[k]);
    }
}

/* Gradients of one device and dtype are clipped on the device (as PyTorch does): the host waits
 * for nothing unless it asks for the total, and the clipped gradients and the total are the same
 * bits on the CPU and every OpenCL device (the partials folded in a fixed order in float64, over
 * two levels here: the first gradient alone has 300 partials), and the total is float64's. */
static void clipping_on_one_device_waits_for_nothing_with_the_same_bits_everywhere(void **state)
{
    (void)state;
    enum { N = 12, SIZE = 300 * 256 };
    static double values[N][SIZE], clipped[2][N][SIZE];
    double sums[3] = {0, 0, 0};
    for (int k = 0; k < N; k++)
        for (int i = 0; i < (k ? 900 - 61 * k : SIZE); i++) {
            double v = values[k][i] = (double)(float)(cos(0.37 * i + k) * (1 + k));
            sums[0] += v * v, sums[1] += fabs(v), sums[2] = fmax(sums[2], fabs(v));
        }
    const double wants[3] = {sqrt(sums[0]), sums[1], sums[2]};
    const double norms[] = {2.0, 1.0, INFINITY};
    ct_device devices[3] = {CT_DEVICE_CPU, OPENCL0, {CT_OPENCL, 1}};
    int count = 1 + (ct_device_count(CT_OPENCL) < 2 ? ct_device_count(CT_OPENCL) : 2);
    ct_clear_error();
    for (size_t n = 0; n < sizeof norms / sizeof *norms; n++) {
        double cpu_total = 0;
        for (int d = 0; d < count; d++) {
            ct_tensor *params[N];
            for (int k = 0; k < N; k++) params[k] = param_with_grad(values[k], k ? 900 - 61 * k : SIZE, CT_F32, devices[d]);
            double total = 0;
            assert_int_equal(ct_clip_grad_norm_(params, N, 1e30, norms[n], &total), CT_OK); /* changes nothing */
            ct_transfer_stats before, after;
            assert_int_equal(ct_transfer_stats_get(devices[d], &before), CT_OK);
            assert_int_equal(ct_clip_grad_norm_(params, N, 3.0, norms[n], NULL), CT_OK);
            assert_int_equal(ct_transfer_stats_get(devices[d], &after), CT_OK);
            assert_int_equal(after.host_syncs, before.host_syncs);
            if (!(fabs(total - wants[n]) <= 1e-6 * wants[n]))
                fail_msg("norm %g: total %.17g, want %.17g", norms[n], total, wants[n]);
            if (d == 0) cpu_total = total;
            else if (memcmp(&total, &cpu_total, sizeof total) != 0)
                fail_msg("norm %g: total %.17g on device %d, %.17g on the cpu", norms[n], total, d, cpu_total);
            for (int k = 0; k < N; k++) {
                int size = k ? 900 - 61 * k : SIZE;
                values_of(ct_grad(params[k]), clipped[d > 0][k], size);
                if (d > 0 && memcmp(clipped[0][k], clipped[1][k], sizeof(double) * (size_t)size) != 0)
                    fail_msg("norm %g: gradient %d clipped on device %d differs from the cpu's", norms[n], k, d);
                ct_release(params[k]);
            }
        }
    }
}

/* Every test in a scope: what the checks' calls return is released with it. */
static int push(void **state)
{
    (void)state;
    ct_scope_push();
    return 0;
}

static int pop(void **state)
{
    (void)state;
    ct_scope_pop();
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(the_total_norm_and_the_clipped_gradients_match_a_float64_reference, push, pop),
        cmocka_unit_test_setup_teardown(no_gradients_give_a_zero_total, push, pop),
        cmocka_unit_test_setup_teardown(a_nan_gradient_gives_a_nan_total, push, pop),
        cmocka_unit_test_setup_teardown(bad_arguments_are_refused, push, pop),
        cmocka_unit_test_setup_teardown(huge_float32_gradients_are_clipped_not_zeroed, push, pop),
        cmocka_unit_test_setup_teardown(a_module_is_clipped_whole, push, pop),
        cmocka_unit_test_setup_teardown(many_gradients_cost_a_launch_per_8_and_one_wait_per_device, push, pop),
        cmocka_unit_test_setup_teardown(clipping_on_one_device_waits_for_nothing_with_the_same_bits_everywhere,
                                        push, pop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
