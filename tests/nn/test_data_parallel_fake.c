/* DataParallel on the fake two-device backend (host memory, the CPU's kernels, copies that really
 * are deferred until needed): the same equivalences as on PoCL, where the devices' copies and
 * kernels are plain C, so a worker that used the wrong device or stream, or read a copy before
 * it landed, would show. */
#include "nn/data_parallel_test.h"
#include "support/fake_device.h"

static int install_fake(void **state)
{
    (void)state;
    ct_test_install_fake_opencl();
    return ct_device_count(CT_OPENCL) == CT_FAKE_DEVICE_COUNT ? 0 : -1;
}

static void gradients_on_two_fake_devices_match_one(void **state)
{
    (void)state;
    dp_check_gradients_match(dp_make_mlp, 8, false);
    dp_check_gradients_match(dp_make_mlp, 5, false);
    dp_check_gradients_match(dp_make_warm_batch_norm_model, 9, true);
}

static void twenty_steps_on_two_fake_devices_match_one(void **state)
{
    (void)state;
    dp_check_training_matches(dp_make_mlp, 20, false);
    dp_check_training_matches(dp_make_warm_batch_norm_model, 20, true);
}

/* Seed 003's FooNet: a batch of 16 over the two devices is seen as 8 rows by each. */
static void each_fake_device_sees_half_the_batch(void **state)
{
    (void)state;
    ct_module *model = dp_make_noting_mlp(1, DEVICE0);
    ct_module *dp = ct_data_parallel(model, NULL, 0, (ct_device){CT_OPENCL, -1});
    assert_non_null(dp);
    ct_tensor *x = ct_randn((int64_t[]){16, DP_IN}, 2, CT_F32, CT_DEVICE_CPU);
    dp_reset_seen();
    ct_tensor *y = ct_module_forward(dp, x);
    assert_non_null(y);
    assert_int_equal(atomic_load(&dp_rows_seen[0]), 8);
    assert_int_equal(atomic_load(&dp_rows_seen[1]), 8);
    assert_int_equal(atomic_load(&dp_forwards_seen[0]), 1);
    assert_int_equal(atomic_load(&dp_forwards_seen[1]), 1);
    assert_int_equal(ct_tensor_size(y, 0), 16);
    ct_release(y);
    ct_release(x);
    ct_module_release(dp);
    ct_module_release(model);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gradients_on_two_fake_devices_match_one),
        cmocka_unit_test(twenty_steps_on_two_fake_devices_match_one),
        cmocka_unit_test(each_fake_device_sees_half_the_batch),
    };
    return cmocka_run_group_tests(tests, install_fake, NULL);
}
