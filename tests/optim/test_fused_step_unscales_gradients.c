/* ct_optimizer_step_unscaled, loss scaling joined into the fused step, on the CPU and every
 * OpenCL device (see optim/unscaled_steps.h), and its refusals. */
#include "optim/unscaled_steps.h"

static void each_device(void (*check)(ct_device))
{
    check(CT_DEVICE_CPU);
    for (int i = 0; i < ct_device_count(CT_OPENCL); i++) check((ct_device){CT_OPENCL, i});
}

static void unscaled_steps_give_the_bits_of_plain_steps(void **state)
{
    (void)state;
    each_device(unscaled_check_same_bits);
}

static void an_inf_or_nan_skips_the_step(void **state)
{
    (void)state;
    each_device(unscaled_check_skips);
}

static void the_check_costs_a_launch_per_8_gradients_and_one_wait(void **state)
{
    (void)state;
    each_device(unscaled_check_launches);
}

static void bad_arguments_are_refused(void **state)
{
    (void)state;
    ct_tensor *p = fused_make_param(0, CT_DEVICE_CPU, true);
    ct_sgd_options sgd = ct_sgd_options_default(0.1);
    ct_optimizer *o = ct_optim_sgd_params(&p, 1, &sgd);
    bool found = true;
    assert_int_equal(ct_optimizer_step_unscaled(o, 1.0, NULL), CT_ERR_NULL_ARGUMENT);
    assert_error(CT_ERR_NULL_ARGUMENT, "found_inf");
    const double refused[] = {0.0, -1.0, NAN, INFINITY};
    for (size_t k = 0; k < sizeof refused / sizeof *refused; k++) {
        assert_int_equal(ct_optimizer_step_unscaled(o, refused[k], &found), CT_ERR_INVALID_ARGUMENT);
        assert_error(CT_ERR_INVALID_ARGUMENT, "inv_scale is");
    }
    assert_int_equal(ct_optimizer_step_unscaled(o, 1.0, &found), CT_OK); /* no gradient: nothing */
    assert_false(found);
    ct_optimizer_free(o);
    ct_release(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(unscaled_steps_give_the_bits_of_plain_steps),
        cmocka_unit_test(an_inf_or_nan_skips_the_step),
        cmocka_unit_test(the_check_costs_a_launch_per_8_gradients_and_one_wait),
        cmocka_unit_test(bad_arguments_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
