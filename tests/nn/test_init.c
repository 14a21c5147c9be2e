/* torch.nn.init: the fans and gains as PyTorch computes them, the bounds and moments of every
 * random fill, the same values from one seed on every device, nothing recorded (a parameter
 * stays a leaf), 16-bit tensors, and the errors; and the *_like constructors. */
#include <stdlib.h>
#include <string.h>

#include "nn/nn_test.h"
#include "support/devices.h"

static void fans_and_gains_as_pytorch(void **state)
{
    (void)state;
    ct_tensor *w = ct_empty((int64_t[]){16, 8, 3, 5}, 4, CT_F32, CT_DEVICE_CPU);
    int64_t in = 0, out = 0;
    assert_int_equal(ct_calculate_fan_in_and_fan_out(w, &in, &out), CT_OK);
    assert_int_equal(in, 8 * 15);
    assert_int_equal(out, 16 * 15);
    /* nn.init.calculate_gain's values */
    const struct { const char *name; double param, want; } gains[] = {
        {"linear", NAN, 1.0}, {"conv2d", NAN, 1.0}, {"sigmoid", NAN, 1.0},
        {"tanh", NAN, 5.0 / 3.0}, {"relu", NAN, 1.4142135623730951}, {"selu", NAN, 0.75},
        {"leaky_relu", NAN, 1.4141428569978354}, {"leaky_relu", 0.2, 1.3867504905630728}};
    for (size_t k = 0; k < sizeof gains / sizeof gains[0]; k++) {
        double g = 0;
        assert_int_equal(ct_calculate_gain(gains[k].name, gains[k].param, &g), CT_OK);
        if (fabs(g - gains[k].want) > 1e-15) fail_msg("gain of %s: %.17g", gains[k].name, g);
    }
    double g = 0;
    assert_int_equal(ct_calculate_gain("softmax", NAN, &g), CT_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(ct_last_error_message(), "\"softmax\""));
    ct_tensor *v = ct_empty((int64_t[]){5}, 1, CT_F32, CT_DEVICE_CPU);
    assert_int_equal(ct_init_xavier_uniform_(v, 1.0), CT_ERR_SHAPE);
    assert_non_null(strstr(ct_last_error_message(), "fewer than 2 dims"));
    ct_tensor *ints = ct_zeros((int64_t[]){4, 4}, 2, CT_I64, CT_DEVICE_CPU);
    assert_int_equal(ct_init_normal_(ints, 0, 1), CT_ERR_DTYPE);
    assert_int_equal(ct_init_ones_(ints), CT_OK); /* constants fill any dtype */
    assert_int_equal(ct_init_uniform_(w, 1.0, -1.0), CT_ERR_INVALID_ARGUMENT);
    assert_int_equal(ct_init_trunc_normal_(w, 0, 1, 2, -2), CT_ERR_INVALID_ARGUMENT);
    assert_int_equal(ct_init_kaiming_normal_(w, 0, (ct_fan_mode)7, NULL), CT_ERR_INVALID_ARGUMENT);
    ct_clear_error();
    ct_release(ints);
    ct_release(v);
    ct_release(w);
}

/* The mean and variance of t's values, and its smallest and largest. */
static void moments(const ct_tensor *t, double *mean, double *var, double *lo, double *hi)
{
    int64_t n = ct_numel(t);
    double *v = malloc(sizeof(double) * (size_t)n);
    values_of(t, v, n);
    double sum = 0, sq = 0;
    *lo = INFINITY, *hi = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
        sum += v[i];
        *lo = fmin(*lo, v[i]), *hi = fmax(*hi, v[i]);
    }
    *mean = sum / (double)n;
    for (int64_t i = 0; i < n; i++) sq += (v[i] - *mean) * (v[i] - *mean);
    *var = sq / (double)n;
    free(v);
}

/* mean and standard deviation within 5 standard errors of the 4096 draws, values within [lo, hi] */
static void expect(const char *what, const ct_tensor *t, double mean, double std, double lo, double hi)
{
    double m, var, min, max;
    moments(t, &m, &var, &min, &max);
    double n = (double)ct_numel(t);
    if (fabs(m - mean) > 5 * std / sqrt(n) || fabs(sqrt(var) - std) > 5 * std / sqrt(2 * n) ||
        min < lo || max > hi)
        fail_msg("%s: mean %g (want %g), std %g (want %g), range [%g, %g] (want within [%g, %g])",
                 what, m, mean, sqrt(var), std, min, max, lo, hi);
}

static void random_fills_on(ct_device device, ct_dtype dtype)
{
    ct_scope_push();
    int64_t shape[4] = {64, 16, 2, 2}; /* fan_in 64, fan_out 256 */
    ct_tensor *w = ct_zeros(shape, 4, dtype, device);
    assert_int_equal(ct_requires_grad_(w, true), CT_OK);
    double slack = dtype == CT_F32 || dtype == CT_F64 ? 0 : 0.01; /* 16-bit rounding at the bounds */
    assert_int_equal(ct_init_uniform_(w, -0.5, 1.5), CT_OK);
    expect("uniform_", w, 0.5, 2 / sqrt(12.0), -0.5 - slack, 1.5 + slack);
    assert_int_equal(ct_init_normal_(w, 2.0, 0.5), CT_OK);
    expect("normal_", w, 2.0, 0.5, -INFINITY, INFINITY);
    double b = sqrt(6.0 / (64 + 256));
    assert_int_equal(ct_init_xavier_uniform_(w, 1.0), CT_OK);
    expect("xavier_uniform_", w, 0, b / sqrt(3.0), -b - slack, b + slack);
    assert_int_equal(ct_init_xavier_normal_(w, 2.0), CT_OK);
    expect("xavier_normal_", w, 0, 2.0 * sqrt(2.0 / (64 + 256)), -INFINITY, INFINITY);
    /* fan_in, leaky_relu with a = 0: gain sqrt(2) */
    b = sqrt(3.0) * sqrt(2.0) / sqrt(64.0);
    assert_int_equal(ct_init_kaiming_uniform_(w, 0.0, CT_FAN_IN, NULL), CT_OK);
    expect("kaiming_uniform_", w, 0, b / sqrt(3.0), -b - slack, b + slack);
    assert_int_equal(ct_init_kaiming_normal_(w, 0.0, CT_FAN_OUT, "relu"), CT_OK);
    expect("kaiming_normal_", w, 0, sqrt(2.0) / sqrt(256.0), -INFINITY, INFINITY);
    /* N(0, 1) cut to [-1, 2]: its mean and standard deviation from the normal's density */
    assert_int_equal(ct_init_trunc_normal_(w, 0.0, 1.0, -1.0, 2.0), CT_OK);
    expect("trunc_normal_", w, 0.22963717909132897, 0.7209455868590458, -1.0, 2.0);
    assert_int_equal(ct_init_constant_(w, 0.25), CT_OK);
    expect("constant_", w, 0.25, 0.0, 0.25, 0.25);
    /* nothing recorded: still a leaf that requires grad, without a gradient */
    assert_true(ct_is_leaf(w) && ct_requires_grad(w));
    assert_null(ct_grad(w));
    ct_scope_pop();
}

static void random_fills_have_their_moments_and_bounds(void **state)
{
    (void)state;
    ct_device devices[8];
    int count = ct_test_devices(devices);
    ct_manual_seed(7);
    for (int d = 0; d < count; d++) {
        random_fills_on(devices[d], CT_F32);
        random_fills_on(devices[d], CT_F64);
    }
    random_fills_on(CT_DEVICE_CPU, CT_BF16);
}

static void one_seed_gives_the_same_values_on_every_device(void **state)
{
    (void)state;
    ct_device devices[8];
    int count = ct_test_devices(devices);
    double first[96], got[96];
    for (int d = 0; d < count; d++) {
        ct_tensor *w = ct_empty((int64_t[]){8, 12}, 2, CT_F32, devices[d]);
        ct_manual_seed(123);
        assert_int_equal(ct_init_kaiming_uniform_(w, 0.1, CT_FAN_IN, "leaky_relu"), CT_OK);
        values_of(w, d == 0 ? first : got, 96);
        if (d > 0) assert_close_array(got, first, 96, 1e-6, 1e-7, "kaiming_uniform_ across devices");
        ct_release(w);
    }
}

static void like_constructors_keep_shape_dtype_and_device(void **state)
{
    (void)state;
    ct_device devices[8];
    int count = ct_test_devices(devices);
    for (int d = 0; d < count; d++) {
        ct_scope_push();
        /* a transposed view: the result is contiguous, of the view's shape */
        ct_tensor *t = ct_transpose(ct_zeros((int64_t[]){3, 2}, 2, CT_F64, devices[d]), 0, 1);
        ct_tensor *made[6] = {ct_empty_like(t), ct_zeros_like(t), ct_ones_like(t), ct_full_like(t, -2.5),
                              ct_rand_like(t), ct_randn_like(t)};
        for (int k = 0; k < 6; k++) {
            assert_non_null(made[k]);
            assert_int_equal(ct_tensor_dtype(made[k]), CT_F64);
            assert_true(ct_device_equal(ct_tensor_device(made[k]), devices[d]));
            assert_int_equal(ct_tensor_ndim(made[k]), 2);
            assert_int_equal(ct_tensor_shape(made[k])[0], 2);
            assert_int_equal(ct_tensor_shape(made[k])[1], 3);
            assert_true(ct_is_contiguous(made[k]));
        }
        double v[6];
        values_of(made[3], v, 6);
        for (int i = 0; i < 6; i++) assert_true(v[i] == -2.5);
        values_of(made[4], v, 6);
        for (int i = 0; i < 6; i++) assert_true(v[i] >= 0 && v[i] < 1);
        ct_tensor *ints = ct_zeros((int64_t[]){4}, 1, CT_I32, devices[d]);
        ct_tensor *ones = ct_ones_like(ints);
        assert_int_equal(ct_tensor_dtype(ones), CT_I32);
        assert_null(ct_randn_like(ints));
        assert_int_equal(ct_last_error(), CT_ERR_DTYPE);
        ct_clear_error();
        assert_null(ct_zeros_like(NULL));
        ct_clear_error();
        ct_scope_pop();
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fans_and_gains_as_pytorch),
        cmocka_unit_test(random_fills_have_their_moments_and_bounds),
        cmocka_unit_test(one_seed_gives_the_same_values_on_every_device),
        cmocka_unit_test(like_constructors_keep_shape_dtype_and_device),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
