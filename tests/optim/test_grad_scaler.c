/* The gradient scaler, as torch.amp.GradScaler: a scaled loss trains exactly as the unscaled one
 * (scales are powers of 2); a step whose gradients hold inf or NaN is skipped and the scale backs
 * off; after growth_interval good steps the scale grows; unscaling 8 gradients takes two launches
 * and gives the bits of ct_mul_scalar; misuse and bad options are errors. */
#include <float.h>
#include <math.h>

#include "support/devices.h"
#include "test_common.h"

/* loss = sum(p * x) for a parameter p of 4 elements: the gradient of p is x. */
static ct_tensor *loss_of(ct_tensor *p, const float x[4])
{
    ct_tensor *xs = ct_tensor_from_data(x, CT_F32, (int64_t[]){4}, 1, ct_tensor_device(p));
    ct_tensor *product = ct_mul(p, xs);
    ct_tensor *loss = ct_sum(product, NULL, 0, false);
    ct_release(product);
    ct_release(xs);
    return loss;
}

static ct_tensor *parameter(void)
{
    const float init[4] = {0.5f, -1.0f, 2.0f, 0.25f};
    ct_tensor *p = ct_tensor_from_data(init, CT_F32, (int64_t[]){4}, 1, CT_DEVICE_CPU);
    ct_requires_grad_(p, true);
    return p;
}

static void read4(const ct_tensor *t, float out[4]) { assert_int_equal(ct_tensor_to_array(t, out, 16), CT_OK); }

static void scaled_steps_equal_unscaled_steps(void **state)
{
    (void)state;
    const float x[4] = {0.3f, -7.0f, 1e-6f, 3.0f};
    ct_tensor *plain = parameter(), *scaled = parameter();
    ct_sgd_options sgd = ct_sgd_options_default(0.1);
    sgd.momentum = 0.9;
    ct_optimizer *plain_opt = ct_optim_sgd_params(&plain, 1, &sgd);
    ct_optimizer *scaled_opt = ct_optim_sgd_params(&scaled, 1, &sgd);
    ct_grad_scaler *scaler = ct_grad_scaler_new(NULL);
    assert_non_null(scaler);
    assert_true(ct_grad_scaler_get_scale(scaler) == 65536.0);
    for (int step = 0; step < 3; step++) {
        ct_tensor *loss = loss_of(plain, x);
        assert_int_equal(ct_backward(loss), CT_OK);
        assert_int_equal(ct_optimizer_step(plain_opt), CT_OK);
        ct_optimizer_zero_grad(plain_opt);
        ct_release(loss);

        loss = loss_of(scaled, x);
        ct_tensor *big = ct_grad_scaler_scale(scaler, loss);
        double value = 0, big_value = 0;
        assert_int_equal(ct_item(loss, &value), CT_OK);
        assert_int_equal(ct_item(big, &big_value), CT_OK);
        assert_true(big_value == value * 65536.0);
        assert_int_equal(ct_backward(big), CT_OK);
        bool stepped = false;
        assert_int_equal(ct_grad_scaler_step(scaler, scaled_opt, &stepped), CT_OK);
        assert_true(stepped);
        assert_int_equal(ct_grad_scaler_update(scaler), CT_OK);
        ct_optimizer_zero_grad(scaled_opt);
        ct_release(big), ct_release(loss);
    }
    float a[4], b[4];
    read4(plain, a), read4(scaled, b);
    assert_memory_equal(a, b, sizeof a); /* dividing by a power of 2 is exact */
    assert_int_equal(ct_grad_scaler_skipped_steps(scaler), 0);
    ct_grad_scaler_free(scaler);
    ct_optimizer_free(plain_opt), ct_optimizer_free(scaled_opt);
    ct_release(plain), ct_release(scaled);
}

static void overflowing_gradients_skip_the_step_and_back_off(void **state)
{
    (void)state;
    ct_tensor *p = parameter();
    ct_optimizer *opt = ct_optim_sgd_params(&p, 1, &(ct_sgd_options){.lr = 0.1});
    ct_grad_scaler_options o = ct_grad_scaler_options_default();
    o.init_scale = 1024, o.growth_interval = 2;
    ct_grad_scaler *scaler = ct_grad_scaler_new(&o);
    float before[4], after[4];
    read4(p, before);
    const float overflowing[4] = {1.0f, 1e36f, 0.0f, 1.0f}, not_a_number[4] = {NAN, 1, 1, 1};
    const float *inputs[2] = {overflowing, not_a_number};
    for (int k = 0; k < 2; k++) {
        ct_tensor *loss = loss_of(p, inputs[k]);
        ct_tensor *big = ct_grad_scaler_scale(scaler, loss);
        assert_int_equal(ct_backward(big), CT_OK);
        bool stepped = true;
        assert_int_equal(ct_grad_scaler_step(scaler, opt, &stepped), CT_OK);
        assert_false(stepped);
        assert_int_equal(ct_grad_scaler_update(scaler), CT_OK);
        ct_optimizer_zero_grad(opt);
        ct_release(big), ct_release(loss);
    }
    read4(p, after);
    assert_memory_equal(before, after, sizeof before); /* both steps skipped */
    assert_true(ct_grad_scaler_get_scale(scaler) == 256.0);
    assert_int_equal(ct_grad_scaler_skipped_steps(scaler), 2);

    /* two good steps in a row grow the scale back */
    const float fine[4] = {1, 2, 3, 4};
    for (int k = 0; k < 2; k++) {
        ct_tensor *loss = loss_of(p, fine);
        ct_tensor *big = ct_grad_scaler_scale(scaler, loss);
        assert_int_equal(ct_backward(big), CT_OK);
        assert_int_equal(ct_grad_scaler_unscale_(scaler, opt), CT_OK);
        ct_tensor *g = ct_grad(p);
        float grad[4];
        read4(g, grad);
        assert_true(grad[0] == 1 && grad[3] == 4); /* unscaled in place */
        ct_release(g);
        assert_int_equal(ct_grad_scaler_step(scaler, opt, NULL), CT_OK);
        assert_int_equal(ct_grad_scaler_update(scaler), CT_OK);
        ct_optimizer_zero_grad(opt);
        ct_release(big), ct_release(loss);
    }
    assert_true(ct_grad_scaler_get_scale(scaler) == 512.0);
    double scale = 0;
    int64_t tracker = -1;
    assert_int_equal(ct_grad_scaler_state(scaler, &scale, &tracker), CT_OK);
    assert_true(scale == 512.0 && tracker == 0);
    ct_grad_scaler_free(scaler);
    ct_optimizer_free(opt);
    ct_release(p);
}

/* Sustained overflow (issue 26): the scale backs off to CT_GRAD_SCALER_MIN_SCALE and stays,
 * the steps (on both paths) go on being skipped without an error, and a loaded scale below it
 * (5e-324) is refused. */
static void the_scale_is_floored_under_sustained_overflow(void **state)
{
    (void)state;
    ct_tensor *p = parameter();
    ct_optimizer *opt = ct_optim_sgd_params(&p, 1, &(ct_sgd_options){.lr = 0.1});
    ct_grad_scaler *scaler = ct_grad_scaler_new(NULL);
    const float not_a_number[4] = {NAN, 1, 1, 1};
    for (int k = 0; k < 200; k++) {
        ct_tensor *loss = loss_of(p, not_a_number);
        ct_tensor *big = ct_grad_scaler_scale(scaler, loss);
        assert_non_null(big);
        assert_int_equal(ct_backward(big), CT_OK);
        if (k % 2) assert_int_equal(ct_grad_scaler_unscale_(scaler, opt), CT_OK);
        bool stepped = true;
        if (ct_grad_scaler_step(scaler, opt, &stepped) != CT_OK) fail_msg("step %d: %s", k, ct_last_error_message());
        assert_false(stepped);
        assert_int_equal(ct_grad_scaler_update(scaler), CT_OK);
        ct_optimizer_zero_grad(opt);
        ct_release(big), ct_release(loss);
    }
    assert_true(ct_grad_scaler_get_scale(scaler) == CT_GRAD_SCALER_MIN_SCALE);
    assert_true(ct_grad_scaler_get_scale(scaler) == (double)FLT_MIN);
    assert_int_equal(ct_grad_scaler_skipped_steps(scaler), 200);
    assert_int_equal(ct_grad_scaler_load_state(scaler, 5e-324, 0), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "scale 4.94066e-324");
    assert_int_equal(ct_grad_scaler_load_state(scaler, INFINITY, 0), CT_ERR_INVALID_ARGUMENT);
    assert_int_equal(ct_grad_scaler_load_state(scaler, 1e300, 0), CT_ERR_INVALID_ARGUMENT);
    assert_int_equal(ct_grad_scaler_load_state(scaler, NAN, 0), CT_ERR_INVALID_ARGUMENT);
    assert_true(ct_grad_scaler_get_scale(scaler) == CT_GRAD_SCALER_MIN_SCALE); /* unchanged */
    assert_int_equal(ct_grad_scaler_load_state(scaler, 8.0, 0), CT_OK);
    assert_null(ct_grad_scaler_new(&(ct_grad_scaler_options){.init_scale = 1e-40, .growth_factor = 2,
                                                             .backoff_factor = 0.5, .growth_interval = 1}));
    assert_error(CT_ERR_INVALID_ARGUMENT, "init_scale 1e-40");
    ct_grad_scaler_free(scaler);
    ct_optimizer_free(opt);
    ct_release(p);
}

static void misuse_and_bad_options_are_errors(void **state)
{
    (void)state;
    ct_clear_error();
    ct_grad_scaler_options o = ct_grad_scaler_options_default();
    o.backoff_factor = 1.5;
    assert_null(ct_grad_scaler_new(&o));
    assert_error(CT_ERR_INVALID_ARGUMENT, "backoff_factor 1.5 must be between 0 and 1");
    o = ct_grad_scaler_options_default();
    o.init_scale = INFINITY;
    assert_null(ct_grad_scaler_new(&o));
    assert_error(CT_ERR_INVALID_ARGUMENT, "init_scale inf must be a normal float32");
    o = ct_grad_scaler_options_default();
    o.growth_interval = 0;
    assert_null(ct_grad_scaler_new(&o));
    assert_error(CT_ERR_INVALID_ARGUMENT, "growth_interval 0 must be at least 1");

    ct_tensor *p = parameter();
    ct_optimizer *opt = ct_optim_sgd_params(&p, 1, &(ct_sgd_options){.lr = 0.1});
    ct_grad_scaler *scaler = ct_grad_scaler_new(NULL);
    assert_int_equal(ct_grad_scaler_update(scaler), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "no step was unscaled since the last update");
    const float x[4] = {1, 1, 1, 1};
    ct_tensor *loss = loss_of(p, x);
    ct_tensor *big = ct_grad_scaler_scale(scaler, loss);
    assert_int_equal(ct_backward(big), CT_OK);
    assert_int_equal(ct_grad_scaler_unscale_(scaler, opt), CT_OK);
    assert_int_equal(ct_grad_scaler_unscale_(scaler, opt), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "already called since the last ct_grad_scaler_update");
    assert_int_equal(ct_grad_scaler_step(scaler, opt, NULL), CT_OK);
    assert_int_equal(ct_grad_scaler_step(scaler, opt, NULL), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "call update after each step");
    assert_int_equal(ct_grad_scaler_update(scaler), CT_OK);
    assert_int_equal(ct_grad_scaler_load_state(scaler, -1, 0), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "the scale must be from FLT_MIN");
    ct_release(big), ct_release(loss);

    /* disabled: scale 1, the loss itself, steps always taken */
    o = ct_grad_scaler_options_default();
    o.enabled = false;
    ct_grad_scaler *off = ct_grad_scaler_new(&o);
    assert_true(ct_grad_scaler_get_scale(off) == 1.0);
    ct_tensor *same = ct_grad_scaler_scale(off, p);
    assert_ptr_equal(same, p);
    ct_release(same);
    ct_grad_scaler_free(off);
    ct_grad_scaler_free(scaler);
    ct_optimizer_free(opt);
    ct_release(p);
}

/* 8 parameters of different sizes with gradients g: ct_grad_scaler_unscale_ makes them g * (1/scale)
 * with ct_mul_scalar's bits, in one launch of the inf check and one of the unscaling (as PyTorch's
 * _amp_foreach_non_finite_check_and_unscale_), on every device. */
static void unscaling_takes_two_launches_for_eight_gradients(void **state)
{
    (void)state;
    ct_device devices[8];
    int count = ct_test_devices(devices);
    for (int d = 0; d < count; d++) {
        ct_tensor *params[8], *expected[8];
        ct_manual_seed(3);
        for (int i = 0; i < 8; i++) {
            params[i] = ct_zeros((int64_t[]){5 + 37 * i}, 1, CT_F32, devices[d]);
            ct_requires_grad_(params[i], true);
            ct_tensor *g = ct_randn((int64_t[]){5 + 37 * i}, 1, CT_F32, devices[d]);
            ct_tensor *product = ct_mul(params[i], g);
            ct_tensor *loss = ct_sum(product, NULL, 0, false);
            assert_int_equal(ct_backward(loss), CT_OK); /* the gradient is g */
            expected[i] = ct_mul_scalar(g, 1.0 / 3.0);
            ct_release(loss), ct_release(product), ct_release(g);
        }
        ct_optimizer *opt = ct_optim_sgd_params(params, 8, &(ct_sgd_options){.lr = 0.1});
        ct_grad_scaler_options o = ct_grad_scaler_options_default();
        o.init_scale = 3.0; /* 1/3 is not exact: the bits show how it was multiplied */
        ct_grad_scaler *scaler = ct_grad_scaler_new(&o);
        uint64_t before = 0, after = 0;
        assert_int_equal(ct_synchronize(devices[d]), CT_OK);
        assert_int_equal(ct_device_kernel_launches(devices[d], &before), CT_OK);
        assert_int_equal(ct_grad_scaler_unscale_(scaler, opt), CT_OK);
        assert_int_equal(ct_device_kernel_launches(devices[d], &after), CT_OK);
        assert_int_equal(after - before, 2);
        for (int i = 0; i < 8; i++) {
            float got[300], want[300];
            size_t bytes = sizeof(float) * (size_t)(5 + 37 * i);
            ct_tensor *g = ct_grad(params[i]);
            assert_int_equal(ct_tensor_to_array(g, got, bytes), CT_OK);
            assert_int_equal(ct_tensor_to_array(expected[i], want, bytes), CT_OK);
            assert_memory_equal(got, want, bytes);
            ct_release(g), ct_release(expected[i]), ct_release(params[i]);
        }
        ct_grad_scaler_free(scaler);
        ct_optimizer_free(opt);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(scaled_steps_equal_unscaled_steps),
        cmocka_unit_test(overflowing_gradients_skip_the_step_and_back_off),
        cmocka_unit_test(unscaling_takes_two_launches_for_eight_gradients),
        cmocka_unit_test(the_scale_is_floored_under_sustained_overflow),
        cmocka_unit_test(misuse_and_bad_options_are_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
