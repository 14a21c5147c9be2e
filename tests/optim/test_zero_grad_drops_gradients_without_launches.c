/* ct_optimizer_zero_grad and ct_module_zero_grad drop every gradient (PyTorch's default,
 * set_to_none=True): no kernel launch on any device, whatever the parameter count, and the next
 * backward starts from no gradient (its result is the gradient, nothing added to old values). */
#include "test_common.h"

static uint64_t launches_of(ct_device device)
{
    uint64_t n = 0;
    assert_int_equal(ct_device_kernel_launches(device, &n), CT_OK);
    return n;
}

static void expect_no_launches_and_fresh_gradients(ct_device device)
{
    int64_t in_shape[2] = {4, 6};
    ct_module *model = ct_sequential((ct_module *[]){ct_linear(6, 5, true), ct_relu_module(),
                                                     ct_linear(5, 3, true)}, 3);
    assert_int_equal(ct_module_to(model, device), CT_OK);
    ct_adam_options options = ct_adam_options_default(1e-3);
    ct_optimizer *optimizer = ct_optim_adam(model, &options);
    assert_non_null(optimizer);
    ct_tensor *x = ct_full(in_shape, 2, 0.25, CT_F32, device);
    double first = 0.0;
    for (int round = 0; round < 3; round++) {
        ct_scope_push();
        ct_tensor *loss = ct_sum(ct_module_forward(model, x), NULL, 0, false);
        assert_int_equal(ct_backward(loss), CT_OK);
        ct_tensor *w = ct_optimizer_param(optimizer, 0), *g = ct_grad(w);
        double value = 0.0;
        assert_int_equal(ct_item(ct_sum(g, NULL, 0, false), &value), CT_OK);
        if (round == 0) first = value;
        if (value != first) fail_msg("round %d: gradient sum %g, the first round gave %g", round, value, first);
        uint64_t before = launches_of(device);
        if (round % 2 == 0) ct_optimizer_zero_grad(optimizer);
        else ct_module_zero_grad(model);
        assert_int_equal(launches_of(device), before);
        for (int64_t k = 0; k < ct_optimizer_param_count(optimizer); k++) {
            ct_tensor *p = ct_optimizer_param(optimizer, k), *pg = ct_grad(p);
            assert_null(pg);
            assert_non_null(p);
        }
        ct_scope_pop(); /* releases what was made in the round */
    }
    ct_release(x);
    ct_optimizer_free(optimizer);
    ct_module_free(model);
}

static void on_the_cpu(void **state)
{
    (void)state;
    expect_no_launches_and_fresh_gradients(CT_DEVICE_CPU);
}

static void on_opencl(void **state)
{
    (void)state;
    if (ct_device_count(CT_OPENCL) == 0) skip();
    expect_no_launches_and_fresh_gradients((ct_device){CT_OPENCL, 0});
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(on_the_cpu),
        cmocka_unit_test(on_opencl),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
