/* The current device is per thread and per type; the guard restores it; the best device is
 * chosen from what is there and CTORCH_DEVICE overrides it. */
#include <pthread.h>

#include "support/fake_device.h"
#include "test_common.h"

static void set_device_changes_the_current_device_of_its_type(void **state)
{
    (void)state;
    assert_int_equal(ct_current_device(CT_OPENCL).index, 0);
    assert_int_equal(ct_set_device((ct_device){CT_OPENCL, 1}), CT_OK);
    assert_int_equal(ct_current_device(CT_OPENCL).index, 1);
    /* "opencl" without an index now means opencl:1 */
    ct_device resolved;
    assert_int_equal(ct_device_resolve((ct_device){CT_OPENCL, -1}, &resolved), CT_OK);
    assert_int_equal(resolved.index, 1);
    assert_int_equal(ct_set_device((ct_device){CT_OPENCL, 2}), CT_ERR_DEVICE);
    ct_clear_error();
    assert_int_equal(ct_current_device(CT_OPENCL).index, 1);
    ct_set_device((ct_device){CT_OPENCL, 0});
}

static void the_guard_sets_and_restores(void **state)
{
    (void)state;
    ct_device_guard guard;
    assert_int_equal(ct_device_guard_enter(&guard, (ct_device){CT_OPENCL, 1}), CT_OK);
    assert_int_equal(ct_current_device(CT_OPENCL).index, 1);
    int64_t shape[1] = {2};
    ct_tensor *t = ct_zeros(shape, 1, CT_F32, (ct_device){CT_OPENCL, -1});
    assert_non_null(t);
    assert_int_equal(ct_tensor_device(t).index, 1); /* created on the guarded device */
    ct_release(t);
    ct_device_guard_exit(&guard);
    assert_int_equal(ct_current_device(CT_OPENCL).index, 0);
    ct_device_guard_exit(&guard); /* a second exit does nothing */
    assert_int_equal(ct_current_device(CT_OPENCL).index, 0);
    /* a failed enter leaves the current device alone and its exit does nothing */
    assert_int_equal(ct_device_guard_enter(&guard, (ct_device){CT_OPENCL, 9}), CT_ERR_DEVICE);
    ct_clear_error();
    ct_device_guard_exit(&guard);
    assert_int_equal(ct_current_device(CT_OPENCL).index, 0);
}

static void *current_in_new_thread(void *out)
{
    *(int *)out = ct_current_device(CT_OPENCL).index;
    return NULL;
}

static void a_new_thread_starts_on_device_zero(void **state)
{
    (void)state;
    ct_set_device((ct_device){CT_OPENCL, 1});
    int seen = -1;
    pthread_t thread;
    pthread_create(&thread, NULL, current_in_new_thread, &seen);
    pthread_join(thread, NULL);
    assert_int_equal(seen, 0); /* workers must set their device themselves */
    ct_set_device((ct_device){CT_OPENCL, 0});
}

static void the_best_device_is_a_gpu_and_the_variable_overrides_it(void **state)
{
    (void)state;
    ct_device best;
    unsetenv("CTORCH_DEVICE");
    assert_int_equal(ct_best_device(&best), CT_OK);
    /* A CUDA GPU comes first (on a machine that has one); the fake devices report themselves as
     * GPUs. */
    assert_int_equal(best.type, ct_device_count(CT_CUDA) > 0 ? CT_CUDA : CT_OPENCL);
    assert_int_equal(best.index, 0);
    setenv("CTORCH_DEVICE", "cpu", 1);
    assert_int_equal(ct_best_device(&best), CT_OK);
    assert_int_equal(best.type, CT_CPU);
    setenv("CTORCH_DEVICE", "opencl:1", 1);
    assert_int_equal(ct_best_device(&best), CT_OK);
    assert_true(ct_device_equal(best, (ct_device){CT_OPENCL, 1}));
    setenv("CTORCH_DEVICE", "gpu", 1);
    assert_int_equal(ct_best_device(&best), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "CTORCH_DEVICE='gpu' is not usable here");
    if (!ct_is_available(CT_CUDA)) {
        /* not compiled in, or compiled in without a driver or a GPU here */
        ct_status expected = ct_backend_is_compiled(CT_CUDA) ? CT_ERR_UNAVAILABLE : CT_ERR_NOT_COMPILED;
        setenv("CTORCH_DEVICE", "cuda", 1);
        assert_int_equal(ct_best_device(&best), expected);
        assert_error(expected, "CTORCH_DEVICE='cuda'");
    }
    unsetenv("CTORCH_DEVICE");
}

int main(void)
{
    ct_test_install_fake_opencl();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(set_device_changes_the_current_device_of_its_type),
        cmocka_unit_test(the_guard_sets_and_restores),
        cmocka_unit_test(a_new_thread_starts_on_device_zero),
        cmocka_unit_test(the_best_device_is_a_gpu_and_the_variable_overrides_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
